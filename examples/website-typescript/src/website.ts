/**
 * The custom resource as this plugin reads it: types per the CRD's schema
 * (`examples/website/deploy/crd.yaml`), and a decoder that applies the CRD's defaults and refuses
 * what the Rust plugin's serde types refuse, so both read a Website alike.
 *
 * @module
 */

import { Instant, resource, type Condition, type ObjectMeta } from "@wasmcm/guest";
import type { ConfigMap } from "kubernetes-types/core/v1.js";

/** `spec`: the CRD requires `image` and defaults `replicas` to 1 and `content` to "". */
export interface WebsiteSpec {
  /** An image serving `/usr/share/nginx/html`, such as nginx. */
  image: string;
  /** How many pods serve the site. */
  replicas: number;
  /** The page, served as `index.html`. */
  content: string;
}

/** `status`, written through the status subresource. */
export interface WebsiteStatus {
  /** The `metadata.generation` this status describes. */
  observedGeneration?: number;
  /** Pods of the site's Deployment. */
  replicas: number;
  /** Of them, those ready (the `Ready` printer column). */
  readyReplicas: number;
  /** Of them, those running the current spec. */
  updatedReplicas: number;
  /** `Ready` and `Progressing`. */
  conditions: Condition[];
}

/** A static site: `kubectl get websites` lists them. */
export interface Website {
  apiVersion: string;
  kind: string;
  /** Name, namespace, uid, generation, finalizers, deletionTimestamp. */
  metadata: ObjectMeta;
  /** What the user asks for. */
  spec: WebsiteSpec;
  /** What the plugin reports; absent until its first status write. */
  status?: WebsiteStatus;
}

function isObject(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function int(v: unknown, field: string, fallback?: number): number {
  if (v === undefined || v === null) {
    if (fallback === undefined) throw new TypeError(`missing field \`${field}\``);
    return fallback;
  }
  if (typeof v !== "number" || !Number.isInteger(v)) throw new TypeError(`${field}: expected an integer, found ${JSON.stringify(v)}`);
  return v;
}

function str(v: unknown, field: string, fallback?: string): string {
  if (v === undefined || v === null) {
    if (fallback === undefined) throw new TypeError(`missing field \`${field}\``);
    return fallback;
  }
  if (typeof v !== "string") throw new TypeError(`${field}: expected a string, found ${JSON.stringify(v)}`);
  return v;
}

/**
 * A status condition as `metav1.Condition` reads it: `lastTransitionTime` required (and
 * written back to the second, in UTC), the other texts `""` when absent.
 */
function condition(c: unknown): Condition {
  if (!isObject(c)) throw new TypeError(`status.conditions: expected an object, found ${JSON.stringify(c)}`);
  const time = str(c["lastTransitionTime"], "lastTransitionTime");
  let lastTransitionTime: string;
  try {
    lastTransitionTime = Instant.parse(time).toTime();
  } catch (e) {
    throw new TypeError(`lastTransitionTime: ${(e as Error).message}`);
  }
  const out: Condition = {
    type: str(c["type"], "type", ""),
    status: str(c["status"], "status", ""),
    lastTransitionTime,
    reason: str(c["reason"], "reason", ""),
    message: str(c["message"], "message", ""),
  };
  if (c["observedGeneration"] !== undefined && c["observedGeneration"] !== null) {
    out.observedGeneration = int(c["observedGeneration"], "observedGeneration");
  }
  return out;
}

/** `status` with the Rust type's defaults: counts 0, no conditions. */
function status(s: unknown): WebsiteStatus | undefined {
  if (s === undefined || s === null) return undefined;
  if (!isObject(s)) throw new TypeError(`status: expected an object, found ${JSON.stringify(s)}`);
  const out: WebsiteStatus = {
    replicas: int(s["replicas"], "status.replicas", 0),
    readyReplicas: int(s["readyReplicas"], "status.readyReplicas", 0),
    updatedReplicas: int(s["updatedReplicas"], "status.updatedReplicas", 0),
    conditions: (s["conditions"] ?? []).map(condition),
  };
  if (s["observedGeneration"] !== undefined && s["observedGeneration"] !== null) {
    out.observedGeneration = int(s["observedGeneration"], "status.observedGeneration");
  }
  return out;
}

/** A Website from its JSON, the CRD's defaults applied. */
export function decodeWebsite(o: any): Website {
  if (!isObject(o["metadata"])) throw new TypeError("missing field `metadata`");
  if (!isObject(o["spec"])) throw new TypeError("missing field `spec`");
  const spec = o["spec"];
  const site: Website = {
    apiVersion: o["apiVersion"],
    kind: o["kind"],
    metadata: o["metadata"],
    spec: {
      image: str(spec["image"], "image"),
      replicas: int(spec["replicas"], "spec.replicas", 1),
      content: str(spec["content"], "spec.content", ""),
    },
  };
  const s = status(o["status"]);
  if (s !== undefined) site.status = s;
  return site;
}

/** Websites, readable from the cache and declared in `describe()`. */
export const Websites = resource<Website>("example.wasmcm.dev/v1", "Website", decodeWebsite);

/** ConfigMaps, whose `data` must map strings to strings. */
export const ConfigMaps = resource<ConfigMap>("v1", "ConfigMap", (o) => {
  const data = o?.data;
  if (data !== undefined && data !== null && (!isObject(data) || Object.values(data).some((v) => typeof v !== "string"))) {
    throw new TypeError("data: expected a map of strings");
  }
  return o as ConfigMap;
});
