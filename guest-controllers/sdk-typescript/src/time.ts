/**
 * Time as the contract carries it. A plugin has no clock: `now` comes with each request
 * ({@link Request.now}), so that a reconcile is a function of its request and cache and a replay
 * gives the same answer. Owns the RFC 3339 text of Kubernetes timestamps; reads no clock.
 *
 * @module
 */

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

/** Two digits, or four for a year. */
function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

/**
 * A point in time, Unix seconds and nanoseconds (as `wasi:clocks/wall-clock`), as the host's
 * clock gives it in {@link Request.now}. Immutable.
 *
 * ```ts
 * const now = Instant.parse("2026-11-26T10:00:30Z");
 * now.seconds;                               // 1795687230
 * now.since("2026-11-26T10:00:00Z");         // 30000 (milliseconds)
 * now.toTime();                              // "2026-11-26T10:00:30Z", as status timestamps are written
 * ```
 */
export class Instant {
  /** Seconds since the Unix epoch. */
  readonly seconds: number;
  /** Nanoseconds within the second, below 1,000,000,000. */
  readonly nanoseconds: number;

  constructor(seconds: number, nanoseconds = 0) {
    if (!Number.isSafeInteger(seconds)) {
      throw new RangeError(`Instant: seconds must be a safe integer, not ${seconds}`);
    }
    if (!Number.isInteger(nanoseconds) || nanoseconds < 0 || nanoseconds >= 1e9) {
      throw new RangeError(`Instant: nanoseconds must be an integer in [0, 1e9), not ${nanoseconds}`);
    }
    this.seconds = seconds;
    this.nanoseconds = nanoseconds;
  }

  /**
   * From RFC 3339 text (`2026-11-26T10:00:00Z`, `2026-11-26T11:00:00.5+01:00`), as objects carry
   * times. Throws a `RangeError` naming the text otherwise.
   */
  static parse(text: string): Instant {
    const m = RFC3339.exec(text);
    if (!m) {
      throw new RangeError(`invalid RFC 3339 time ${JSON.stringify(text)}`);
    }
    const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
      throw new RangeError(`invalid RFC 3339 time ${JSON.stringify(text)}: a field is out of range`);
    }
    let seconds = Date.UTC(year, month - 1, day, hour, minute, second) / 1000;
    // Date.UTC rolls an impossible day (Feb 30) over into the next month; RFC 3339 does not.
    if (new Date(seconds * 1000).getUTCDate() !== day && second < 60) {
      throw new RangeError(`invalid RFC 3339 time ${JSON.stringify(text)}: no such day`);
    }
    const zone = m[8] as string;
    if (zone !== "Z" && zone !== "z") {
      const sign = zone.startsWith("-") ? -1 : 1;
      seconds -= sign * (Number(zone.slice(1, 3)) * 3600 + Number(zone.slice(4, 6)) * 60);
    }
    const nanoseconds = m[7] === undefined ? 0 : Number(m[7].padEnd(9, "0"));
    return new Instant(seconds, nanoseconds);
  }

  /** From milliseconds since the epoch (what a JS `Date` holds). */
  static fromMillis(millis: number): Instant {
    const seconds = Math.floor(millis / 1000);
    return new Instant(seconds, Math.round((millis - seconds * 1000) * 1e6));
  }

  /** Milliseconds since the epoch (sub-millisecond precision is dropped). */
  toMillis(): number {
    return this.seconds * 1000 + Math.floor(this.nanoseconds / 1e6);
  }

  /**
   * The Kubernetes timestamp of this instant (`metav1.Time`): RFC 3339 in UTC to the second,
   * as the API server writes `lastTransitionTime` and `creationTimestamp`.
   */
  toTime(): string {
    const d = new Date(this.seconds * 1000);
    return (
      `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}` +
      `T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}Z`
    );
  }

  /** RFC 3339 with the nanoseconds, when there are any (`metav1.MicroTime`-like, for logs). */
  toString(): string {
    if (this.nanoseconds === 0) {
      return this.toTime();
    }
    return `${this.toTime().slice(0, -1)}.${pad(this.nanoseconds, 9).replace(/0+$/, "")}Z`;
  }

  /** `this - t` in milliseconds, as Go's `time.Sub` (negative when `t` is later). */
  since(t: Instant | string): number {
    const other = typeof t === "string" ? Instant.parse(t) : t;
    return (this.seconds - other.seconds) * 1000 + (this.nanoseconds - other.nanoseconds) / 1e6;
  }

  /** This instant moved by `millis` (may be negative). */
  plusMillis(millis: number): Instant {
    const total = this.nanoseconds + Math.round(millis * 1e6);
    const carry = Math.floor(total / 1e9);
    return new Instant(this.seconds + carry, total - carry * 1e9);
  }

  /** Negative, zero or positive as this instant is before, at or after `other`. */
  compare(other: Instant): number {
    return this.seconds !== other.seconds ? this.seconds - other.seconds : this.nanoseconds - other.nanoseconds;
  }

  /** Whether both are the same instant. */
  equals(other: Instant): boolean {
    return this.compare(other) === 0;
  }
}
