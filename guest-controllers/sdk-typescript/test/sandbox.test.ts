// What the sandbox lacks says so: installSandbox on a fresh global (a vm context, so this
// process's own clock and timers, which the test runner needs, stay).
import assert from "node:assert/strict";
import { test } from "node:test";
import vm from "node:vm";

import { NO_CLOCK, NO_NETWORK, NO_RANDOMNESS, NO_TIMERS, SandboxError, installSandbox } from "@wasmcm/guest/sandbox";

test("clocks, randomness, timers and the network throw a SandboxError naming what to use instead", () => {
  const context = vm.createContext({});
  const lines: [string, string][] = [];
  installSandbox(vm.runInContext("globalThis", context), (level, message) => lines.push([level, message]));
  const run = (code: string): unknown => {
    try {
      return vm.runInContext(code, context);
    } catch (e) {
      return e;
    }
  };
  for (const [code, message] of [
    ["Date.now()", `Date.now(): ${NO_CLOCK}`],
    ["new Date()", `new Date(): ${NO_CLOCK}`],
    ["Date()", `Date(): ${NO_CLOCK}`],
    ["performance.now()", `performance.now(): ${NO_CLOCK}`],
    ["Math.random()", `Math.random(): ${NO_RANDOMNESS}`],
    ["crypto.getRandomValues(new Uint8Array(4))", `crypto.getRandomValues(): ${NO_RANDOMNESS}`],
    ["crypto.randomUUID()", `crypto.randomUUID(): ${NO_RANDOMNESS}`],
    ["setTimeout(() => {}, 10)", `setTimeout(): ${NO_TIMERS}`],
    ["setInterval(() => {}, 10)", `setInterval(): ${NO_TIMERS}`],
    ["fetch('http://example.com')", `fetch(): ${NO_NETWORK}`],
  ]) {
    const thrown = run(code as string);
    assert.ok(thrown instanceof SandboxError, `${code} threw ${String(thrown)}`);
    assert.equal(thrown.message, message);
  }
  assert.ok(NO_CLOCK.includes("request.now"), "the alternative to a clock is the request's now");
  // Dates of a given time, and Date's statics, still work.
  assert.equal(run("new Date(0).toISOString()"), "1970-01-01T00:00:00.000Z");
  assert.equal(run("Date.UTC(2026, 10, 26)"), 1795651200000);
  assert.equal(run("new Date(0) instanceof Date"), true);
  // console goes to the log.
  run("console.log('hello', {a: 1}); console.error(new TypeError('boom'))");
  assert.deepEqual(lines[0], ["info", 'hello {"a":1}']);
  assert.equal(lines[1]![0], "error");
  assert.match(lines[1]![1], /^TypeError: boom/);
});
