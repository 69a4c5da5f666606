/**
 * The read-only view of the cluster a reconcile gets: {@link Cache}, the contract's three reads
 * (JSON text, exactly as the API server served it) plus typed reads that decode it
 * ({@link Cache.getAs}, {@link Cache.listAs}, {@link Cache.listControlledAs}) for a
 * {@link Resource}; and {@link MemoryCache}, the cache of unit tests. The host's cache behind the
 * component is in `component.ts`; nothing here talks to the host.
 *
 * @module
 */

import { ReconcileError, kindName, type Kind } from "./contract.js";
import type { KubeObject } from "./meta.js";
import { Selector } from "./selector.js";

/**
 * A kind as a TypeScript type: what typed reads take. `decode` checks (and may convert) the
 * parsed JSON; a throw makes the read a retryable {@link ReconcileError} naming the object.
 *
 * ```ts
 * import type { ConfigMap } from "kubernetes-types/core/v1";
 * const ConfigMaps = resource<ConfigMap>("v1", "ConfigMap");
 * const Websites = resource<Website>("example.wasmcm.dev/v1", "Website", (o) => {
 *   if (typeof o.spec?.image !== "string") throw new TypeError("spec.image: expected a string");
 *   return o as Website;
 * });
 * ```
 */
export interface Resource<T> extends Kind {
  /** From the parsed JSON to `T`; throws what is wrong. Without one, the JSON is taken as `T`. */
  readonly decode?: ((object: any) => T) | undefined;
}

/** A {@link Resource} of `apiVersion` and `kind`. */
export function resource<T = KubeObject>(apiVersion: string, kind: string, decode?: (object: any) => T): Resource<T> {
  return { apiVersion, kind, decode };
}

/**
 * An object read from the cache: decoded for logic, with its JSON kept so that writes start from
 * exactly what the API served (fields this plugin does not know survive an update).
 */
export class Cached<T> {
  constructor(
    /** The object, decoded. */
    readonly value: T,
    /** The object's JSON as the cache holds it. */
    readonly json: string,
  ) {}

  /**
   * A fresh copy of the object as read, to change and send back as an update: it keeps the
   * fields `T` does not know, and the `resourceVersion` the update's precondition needs.
   */
  raw(): any {
    return JSON.parse(this.json);
  }
}

/** `namespace/name` of an object's JSON, for messages. */
function objectName(object: any): string {
  const meta = object?.metadata;
  return meta ? `${meta.namespace ?? ""}/${meta.name ?? ""}` : "<unnamed>";
}

function decodeAs<T>(r: Resource<T>, json: string): Cached<T> {
  let parsed: any;
  try {
    parsed = JSON.parse(json);
  } catch (e) {
    throw ReconcileError.retryable(`cannot decode ${r.kind} <unnamed> from the cache: ${(e as Error).message}`);
  }
  if (r.decode === undefined) {
    return new Cached(parsed as T, json);
  }
  try {
    return new Cached(r.decode(parsed), json);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    throw ReconcileError.retryable(`cannot decode ${r.kind} ${objectName(parsed)} from the cache: ${why}`);
  }
}

/**
 * The host's informer caches as a reconcile reads them: objects exactly as the API server served
 * them (each with `apiVersion` and `kind`), of the kinds the plugin declared (reading another
 * kind traps the call), in its scope. Eventually consistent: see the guide.
 */
export abstract class Cache {
  /** One object's JSON, if the cache holds it. */
  abstract get(kind: Kind, namespace: string, name: string): string | undefined;

  /**
   * The objects of `kind` in `namespace` (every namespace when empty) whose labels match
   * `selector`, in no promised order. Costs every object of the namespace: for the objects an
   * owner controls, {@link listControlled} costs only what it returns.
   */
  abstract list(kind: Kind, namespace: string, selector?: Selector): string[];

  /**
   * The objects of `kind` in `namespace` whose controller ownerReference has `ownerUid`, then,
   * with `orphans`, those with no controller at all (candidates for adoption), each group by
   * name. Served from an index: it costs what it returns.
   */
  abstract listControlled(kind: Kind, namespace: string, ownerUid: string, orphans: boolean): string[];

  /** {@link get} of `r`'s kind, decoded. */
  getAs<T>(r: Resource<T>, namespace: string, name: string): Cached<T> | undefined {
    const json = this.get(r, namespace, name);
    return json === undefined ? undefined : decodeAs(r, json);
  }

  /** {@link list} of `r`'s kind, decoded. */
  listAs<T>(r: Resource<T>, namespace: string, selector: Selector = Selector.everything()): Cached<T>[] {
    return this.list(r, namespace, selector).map((json) => decodeAs(r, json));
  }

  /** {@link listControlled} of `r`'s kind, decoded. */
  listControlledAs<T>(r: Resource<T>, namespace: string, ownerUid: string, orphans: boolean): Cached<T>[] {
    return this.listControlled(r, namespace, ownerUid, orphans).map((json) => decodeAs(r, json));
  }
}

/**
 * The uid of an object's controlling ownerReference (the one with `controller: true`), from its
 * `metadata`; `""` when that reference has no uid; `undefined` when there is none.
 */
export function controllerUid(metadata: any): string | undefined {
  const refs = metadata?.ownerReferences;
  if (!Array.isArray(refs)) return undefined;
  const controller = refs.find((r) => r?.controller === true);
  return controller === undefined ? undefined : typeof controller.uid === "string" ? controller.uid : "";
}

interface Entry {
  readonly namespace: string;
  readonly name: string;
  readonly labels: { [key: string]: string };
  /** The controller's uid; `undefined` for an orphan. */
  readonly controller: string | undefined;
  readonly json: string;
}

function byNamespaceAndName(a: Entry, b: Entry): number {
  const x = a.namespace === b.namespace ? a.name : a.namespace;
  const y = a.namespace === b.namespace ? b.name : b.namespace;
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * A cache over a fixed set of objects: what a plugin's unit tests reconcile against. Lists are
 * ordered by namespace and name. It answers reads and nothing more: unlike the host's cache view
 * it lets any kind be read (an undeclared kind is simply empty), applies no scope and no read
 * caps, and never lags. `wasmcm simulate` runs the built component in the real sandbox.
 *
 * ```ts
 * const cache = new MemoryCache([{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "demo" } }]);
 * cache.insert({ ...}); // adds or replaces (same kind, namespace and name): a test steps time this way
 * cache.remove(kind("v1", "ConfigMap"), "demo", "a");
 * ```
 */
export class MemoryCache extends Cache {
  /** `apiVersion/kind` → `namespace/name` → entry. */
  readonly #kinds = new Map<string, Map<string, Entry>>();

  constructor(objects: readonly object[] = []) {
    super();
    for (const o of objects) {
      this.insert(o);
    }
  }

  /**
   * Adds or replaces an object; it must carry `apiVersion`, `kind` and `metadata.name`
   * (`metadata.namespace` is empty for a cluster-scoped object). Throws a `TypeError` saying
   * which is missing.
   */
  insert(object: object): void {
    const o = object as any;
    const field = (value: unknown, what: string): string => {
      if (typeof value !== "string") throw new TypeError(`object has no ${what}`);
      return value;
    };
    const apiVersion = field(o.apiVersion, "apiVersion");
    const kindOf = field(o.kind, "kind");
    const name = field(o.metadata?.name, "metadata.name");
    const namespace = typeof o.metadata?.namespace === "string" ? o.metadata.namespace : "";
    const labels = o.metadata?.labels ?? {};
    if (typeof labels !== "object" || Object.values(labels).some((v) => typeof v !== "string")) {
      throw new TypeError(`${kindOf} ${namespace}/${name}: metadata.labels must map strings to strings`);
    }
    const entry: Entry = { namespace, name, labels, controller: controllerUid(o.metadata), json: JSON.stringify(o) };
    const key = `${apiVersion}/${kindOf}`;
    let objects = this.#kinds.get(key);
    if (objects === undefined) {
      objects = new Map();
      this.#kinds.set(key, objects);
    }
    objects.set(`${namespace}/${name}`, entry);
  }

  /** Removes an object, if held. */
  remove(kind: Kind, namespace: string, name: string): void {
    this.#kinds.get(kindName(kind))?.delete(`${namespace}/${name}`);
  }

  /** The number of objects held, over every kind. */
  get size(): number {
    let n = 0;
    for (const objects of this.#kinds.values()) n += objects.size;
    return n;
  }

  #entries(kind: Kind): Entry[] {
    return [...(this.#kinds.get(kindName(kind))?.values() ?? [])].sort(byNamespaceAndName);
  }

  get(kind: Kind, namespace: string, name: string): string | undefined {
    return this.#kinds.get(kindName(kind))?.get(`${namespace}/${name}`)?.json;
  }

  list(kind: Kind, namespace: string, selector: Selector = Selector.everything()): string[] {
    return this.#entries(kind)
      .filter((e) => (namespace === "" || e.namespace === namespace) && selector.matches(e.labels))
      .map((e) => e.json);
  }

  listControlled(kind: Kind, namespace: string, ownerUid: string, orphans: boolean): string[] {
    const entries = this.#entries(kind).filter((e) => e.namespace === namespace);
    const controlled = entries.filter((e) => e.controller === ownerUid);
    const found = orphans ? controlled.concat(entries.filter((e) => e.controller === undefined)) : controlled;
    return found.map((e) => e.json);
  }
}

