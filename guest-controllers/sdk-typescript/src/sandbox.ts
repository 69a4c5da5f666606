/**
 * What the sandbox does not offer, said where a plugin reaches for it. A component built with
 * every componentize-js feature disabled imports no WASI, yet its JavaScript engine keeps the
 * web's globals: some would answer from the build's snapshot (`Math.random()` the same number
 * every call, `Date.now()` the build's time), others trap with a bare `unreachable`
 * (`performance.now()`, `setTimeout()`, `fetch()`). {@link installSandbox} replaces each with a
 * function that throws a {@link SandboxError} saying what the sandbox offers instead, and sends
 * `console` to the host's log. The component adapter installs it when the component is built
 * (its start-up is snapshotted); native tests never do, as Node's test runner needs the real ones.
 *
 * @module
 */

import type { Level } from "./log.js";

/** A call of something the sandbox does not offer. */
export class SandboxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SandboxError";
  }
}

/** What to use instead of a clock. */
export const NO_CLOCK =
  "the wasmcm sandbox has no clock: use the request's `now` (request.now, an Instant; request.now.toTime() for a Kubernetes timestamp), the host's time for this reconcile, which a replay repeats";
/** What to use instead of randomness. */
export const NO_RANDOMNESS =
  "the wasmcm sandbox has no randomness: a reconcile must give the same outcome for the same request and cache; name new objects with metadata.generateName (the API server completes it) and derive anything else from the request and the cache";
/** What to use instead of timers. */
export const NO_TIMERS =
  "the wasmcm sandbox has no timers: a reconcile returns at once; to come back later, return an outcome with requeueAfter(milliseconds)";
/** What to use instead of the network. */
export const NO_NETWORK =
  "the wasmcm sandbox has no network: read the cluster through the cache, and write it through the outcome's intents";

function refuse(what: string, why: string): () => never {
  return () => {
    throw new SandboxError(`${what}: ${why}`);
  };
}

/** Sets `name` on `target` whether or not it was writable there. */
function define(target: object, name: string | symbol, value: unknown): void {
  Object.defineProperty(target, name, { value, writable: true, configurable: true, enumerable: false });
}

/** A line of `console.log`'s arguments: strings as they are, anything else as JSON when it can be. */
function format(args: readonly unknown[]): string {
  return args
    .map((a) => {
      if (typeof a === "string") return a;
      // An Error of any realm: its stack starts with its name and message.
      if (a instanceof Error || (typeof a === "object" && a !== null && typeof (a as Error).stack === "string")) {
        return (a as Error).stack ?? `${(a as Error).name}: ${(a as Error).message}`;
      }
      try {
        return JSON.stringify(a) ?? String(a);
      } catch {
        return String(a);
      }
    })
    .join(" ");
}

/**
 * Replaces, on `global` (the component's `globalThis`), what the sandbox cannot offer with
 * functions that throw a {@link SandboxError} naming the alternative: `Date.now()`, `new Date()`
 * and `Date()` without arguments (a `Date` of a given time still works), `performance.now()`,
 * `Math.random()`, `crypto.getRandomValues()` and `crypto.randomUUID()`, `setTimeout()` and
 * `setInterval()`, `fetch()`. With `log`, `console`'s methods write to it (`console.log` and
 * `console.info` at info, `debug`, `warn`, `error`, `trace` at theirs).
 */
export function installSandbox(global: any, log?: (level: Level, message: string) => void): void {
  const RealDate = global.Date;
  define(RealDate, "now", refuse("Date.now()", NO_CLOCK));
  define(
    global,
    "Date",
    new Proxy(RealDate, {
      construct(target, args, newTarget) {
        if (args.length === 0) {
          throw new SandboxError(`new Date(): ${NO_CLOCK}`);
        }
        return Reflect.construct(target, args, newTarget);
      },
      apply() {
        throw new SandboxError(`Date(): ${NO_CLOCK}`);
      },
    }),
  );
  define(global.Math, "random", refuse("Math.random()", NO_RANDOMNESS));

  const performance = global.performance ?? {};
  define(performance, "now", refuse("performance.now()", NO_CLOCK));
  define(global, "performance", performance);

  const crypto = global.crypto ?? {};
  define(crypto, "getRandomValues", refuse("crypto.getRandomValues()", NO_RANDOMNESS));
  define(crypto, "randomUUID", refuse("crypto.randomUUID()", NO_RANDOMNESS));
  define(global, "crypto", crypto);

  define(global, "setTimeout", refuse("setTimeout()", NO_TIMERS));
  define(global, "setInterval", refuse("setInterval()", NO_TIMERS));
  define(global, "fetch", refuse("fetch()", NO_NETWORK));

  if (log !== undefined) {
    const console = global.console ?? {};
    const to = (level: Level) => (...args: unknown[]) => log(level, format(args));
    for (const [method, level] of [
      ["log", "info"],
      ["info", "info"],
      ["debug", "debug"],
      ["warn", "warn"],
      ["error", "error"],
      ["trace", "trace"],
    ] as const) {
      define(console, method, to(level));
    }
    define(global, "console", console);
  }
}
