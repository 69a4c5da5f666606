/**
 * Logging through the host, which tags each line with the plugin and the key being reconciled (at
 * most 100 lines or 64 KiB per call, 4096 bytes per line; the rest are dropped). Natively (unit
 * tests) warnings and errors go to stderr and the rest is dropped, so tests stay quiet. The
 * component adapter points {@link log} at the host; nothing else here knows the host.
 *
 * @module
 */

/** The level of a log line, as the host's `tracing` levels. */
export type Level = "trace" | "debug" | "info" | "warn" | "error";

// The SDK compiles without Node's or a browser's types: only this much of `console` is used.
declare const console: { error(...data: unknown[]): void };

type Sink = (level: Level, message: string) => void;

let sink: Sink = (level, message) => {
  if (level === "warn" || level === "error") {
    console.error(`[${level}] ${message}`);
  }
};

/** Logs `message` at `level`. */
export function log(level: Level, message: string): void {
  sink(level, message);
}

/** Where lines go: set by the component adapter to the host's `log` import. */
export function setLogSink(to: Sink): void {
  sink = to;
}
