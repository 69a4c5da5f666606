/**
 * JSON helpers for building and adjusting objects: RFC 7386 merge patches and structural
 * equality of JSON values (what the host compares outcomes by). Pure functions.
 *
 * @module
 */

function isObject(v: unknown): v is { [key: string]: unknown } {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * RFC 7386 JSON merge patch (what `kubectl patch --type=merge` sends), applied to `target` in
 * place and returned: objects merge key by key, `null` removes a key, anything else replaces.
 *
 * ```ts
 * mergePatch({ metadata: { labels: { x: "1", y: "2" } } }, { metadata: { labels: { x: null, z: "3" } } });
 * // { metadata: { labels: { y: "2", z: "3" } } }
 * ```
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) {
    return patch;
  }
  const out: { [key: string]: unknown } = isObject(target) ? target : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) {
      delete out[k];
    } else {
      out[k] = mergePatch(out[k], v);
    }
  }
  return out;
}

/**
 * Whether two JSON values are equal as JSON: the same keys (in any order) with equal values,
 * arrays element by element. `undefined` members count as absent, as `JSON.stringify` drops them.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = (o: { [key: string]: unknown }) => Object.keys(o).filter((k) => o[k] !== undefined);
    const [ka, kb] = [keys(a), keys(b)];
    return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}

/** A deep copy of a JSON value. */
export function clone<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}
