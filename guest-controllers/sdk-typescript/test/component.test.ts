// The component adapter natively: exportPlugin over fake host imports (test/fixtures), in a
// child process because it replaces that process's clock, randomness and timers.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const child = fileURLToPath(new URL("./fixtures/adapter-child.js", import.meta.url));
const run = spawnSync(process.execPath, [child], { encoding: "utf8" });
const { answers, logs, reads } = JSON.parse(run.stdout || "{}") as { answers: Record<string, any>; logs: [string, string][]; reads: any[] };

test("the adapter ran", () => {
  assert.equal(run.status, 0, run.stderr);
});

test("describe and an outcome cross as the WIT's records and variants", () => {
  assert.deepEqual(answers["describe"].watches, [{ kind: { apiVersion: "v1", kind: "Pod" }, wakeOn: { created: false, updated: false, deleted: true } }]);
  const ok = answers["ok"];
  assert.equal(ok.tag, "ok");
  assert.equal(ok.val.requeueAfterMs, "5000n", "a u64, as a bigint");
  assert.deepEqual(ok.val.batches[0][0].tag, "create");
  assert.deepEqual(JSON.parse(ok.val.batches[0][0].val).metadata, { name: "ok", namespace: "demo" });
  assert.deepEqual(ok.val.batches[1][0], {
    tag: "delete",
    val: { target: { kind: { apiVersion: "v1", kind: "ConfigMap" }, namespace: "demo", name: "old" }, uid: "u1" },
  });
  assert.equal(ok.val.batches[1][1].val.eventType, "warning");
  assert.equal(ok.val.batches[1][1].val.message, "at 2026-11-26T10:00:30Z", "now arrives as an Instant");
  assert.deepEqual(reads[1][3], {
    matchLabels: [],
    matchExpressions: [
      { key: "app", operator: "in", values: ["web"] },
      { key: "tier", operator: "not-in", values: ["a"] },
    ],
  });
});

test("a patch and a delete's propagation cross as the WIT's records and enums", () => {
  const [[deleteJob], patches] = answers["patches"].val.batches;
  assert.deepEqual(deleteJob, {
    tag: "delete",
    val: { target: { kind: { apiVersion: "batch/v1", kind: "Job" }, namespace: "", name: "nightly" }, propagation: "background" },
  });
  const pod = { kind: { apiVersion: "v1", kind: "Pod" }, namespace: "", name: "web-1" };
  assert.deepEqual(patches, [
    {
      tag: "patch",
      val: {
        target: pod,
        patchType: "strategic",
        body: '{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking"]}}',
        status: false,
      },
    },
    { tag: "patch", val: { target: pod, patchType: "merge", body: '{"metadata":{"labels":{"tier":"web"}}}', resourceVersion: "42", status: false } },
    { tag: "patch", val: { target: pod, patchType: "json", body: '[{"op":"remove","path":"/status/message"}]', status: true } },
  ]);
});

test("a thrown exception is a failed reconcile with its message, and its stack in the log", () => {
  assert.deepEqual(answers["throws"], {
    tag: "err",
    val: { message: "uncaught TypeError: boom (its stack is in the host's log)", retryable: true },
  });
  const line = logs.find(([, m]) => m.startsWith("uncaught TypeError: boom"));
  assert.ok(line && line[0] === "error", JSON.stringify(logs));
  assert.match(line[1], /\n.*reconcile.*adapter-child\.js:\d+/, "the stack names where it was thrown");
  assert.deepEqual(answers["permanent"], { tag: "err", val: { message: "spec.message is required", retryable: false } });
});

test("what the sandbox lacks fails the reconcile saying what to use instead", () => {
  assert.match(answers["random"].val.message, /^uncaught SandboxError: Math.random\(\): the wasmcm sandbox has no randomness/);
  assert.match(answers["clock"].val.message, /^uncaught SandboxError: Date.now\(\): the wasmcm sandbox has no clock: use the request's `now`/);
  assert.match(answers["async"].val.message, /^reconcile returned a Promise \(reconcile must be synchronous/);
  assert.ok(logs.some(([level, m]) => level === "info" && m === "hello from console"), "console.log goes to the host's log");
});
