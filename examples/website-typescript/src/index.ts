/**
 * `website`: the example wasmcm plugin for a custom resource, in TypeScript. It behaves exactly
 * as the Rust one in examples/website (the same reads, the same writes, the same status, down to
 * each intent's JSON): `wasmcm simulate --expect` replays the Rust plugin's recorded reconciles
 * against this build and finds them identical.
 *
 * A `Website` (`example.wasmcm.dev/v1`) asks for a static site. The plugin reconciles each into
 *
 * - two owned children, controlled by the Website: a ConfigMap `<name>-content` holding the page
 *   and a Deployment `<name>` running the image with that ConfigMap mounted;
 * - its status: the Deployment's replica counts, `observedGeneration`, and the `Ready` and
 *   `Progressing` conditions;
 * - an entry in the namespace's registry, a ConfigMap (`website-registry`, or the manifest's
 *   `settings.registry`) shared by every Website of the namespace and owned by none, which a
 *   finalizer keeps until the plugin has removed the Website's entry.
 *
 * @module
 */

import {
  CONTRACT_VERSION,
  type Cache,
  type Cached,
  type Controller,
  Intent,
  Outcome,
  type PluginInfo,
  ReconcileError,
  type Request,
  controllerUid,
  finalizer,
  resource,
} from "@wasmcm/guest";
import type { Deployment } from "kubernetes-types/apps/v1.js";
import type { ConfigMap } from "kubernetes-types/core/v1.js";

import * as children from "./children.js";
import * as status from "./status.js";
import { VERSION } from "./version.js";
import { ConfigMaps, Websites, type Website } from "./website.js";

export { VERSION } from "./version.js";
export { Websites, type Website } from "./website.js";

/** Held by every Website until its registry entry is removed. */
export const FINALIZER = "example.wasmcm.dev/registry";

/** The registry ConfigMap's name when the manifest's settings name none. */
export const DEFAULT_REGISTRY = "website-registry";

const Deployments = resource<Deployment>("apps/v1", "Deployment");

/** The manifest's `settings` this plugin reads: `{"registry": "<name>"}`, all optional. */
function registryName(settings: string): string {
  const expected = `(expected {"registry": "<name>"})`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(settings);
  } catch (e) {
    throw ReconcileError.permanent(`settings: ${(e as Error).message} ${expected}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw ReconcileError.permanent(`settings: invalid type: expected a JSON object ${expected}`);
  }
  const registry = (parsed as Record<string, unknown>)["registry"];
  if (registry === undefined || registry === null) return DEFAULT_REGISTRY;
  if (typeof registry !== "string") {
    throw ReconcileError.permanent(`settings: invalid type: ${JSON.stringify(registry)}, expected a string ${expected}`);
  }
  return registry;
}

/**
 * The write that makes the registry hold `image` for this Website (`undefined`: no entry), if one
 * is needed. The registry is created by the first Website of a namespace and never deleted.
 */
function registryEntry(
  site: Cached<Website>,
  registry: Cached<ConfigMap> | undefined,
  name: string,
  image: string | undefined,
): Intent | undefined {
  const siteName = site.value.metadata.name ?? "";
  const data = registry?.value.data;
  const current = data !== undefined && data !== null && Object.hasOwn(data, siteName) ? data[siteName] : undefined;
  if (current === image) return undefined;
  if (registry === undefined) {
    return Intent.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name,
        namespace: site.value.metadata.namespace ?? "",
        labels: { "app.kubernetes.io/managed-by": "website" },
      },
      data: { [siteName]: image },
    });
  }
  const raw = registry.raw();
  if (raw.data === null || typeof raw.data !== "object" || Array.isArray(raw.data)) raw.data = {};
  if (image !== undefined) raw.data[siteName] = image;
  else delete raw.data[siteName];
  return Intent.update(raw);
}

/** One reconcile of the Website `request.namespace/request.name`. */
export function reconcile(request: Request, cache: Cache): Outcome {
  const outcome = new Outcome();
  const site = cache.getAs(Websites, request.namespace, request.name);
  if (site === undefined) {
    // Gone: its children go with it (ownerReferences), and the finalizer saw to the registry
    // before the API server let it go.
    return outcome;
  }
  const registryNamed = registryName(request.settings);
  const registry = cache.getAs(ConfigMaps, request.namespace, registryNamed);
  const meta = site.value.metadata;

  if (finalizer.isDeleting(meta)) {
    if (finalizer.has(meta, FINALIZER)) {
      // The entry first; the finalizer only once that write succeeded (a later batch).
      const entry = registryEntry(site, registry, registryNamed, undefined);
      outcome.pushBatch(entry === undefined ? [] : [entry]);
      const raw = site.raw();
      finalizer.remove(raw, FINALIZER);
      outcome.batch(Intent.update(raw));
    }
    return outcome;
  }
  if (!finalizer.has(meta, FINALIZER)) {
    // Nothing else this time: the update changes the resourceVersion that a status write would
    // be preconditioned on, and its watch event brings the Website back at once.
    const raw = site.raw();
    finalizer.add(raw, FINALIZER);
    return outcome.batch(Intent.update(raw));
  }

  const uid = meta.uid ?? "";
  const content = cache.getAs(ConfigMaps, request.namespace, children.contentName(request.name));
  const deployment = cache.getAs(Deployments, request.namespace, request.name);
  const problems: string[] = [];
  const childWrites: Intent[] = [];
  for (const [live, desired] of [
    [content?.json, children.content(site.value)],
    [deployment?.json, children.deployment(site.value)],
  ] as const) {
    if (live === undefined) {
      childWrites.push(Intent.create(desired));
      continue;
    }
    const current = JSON.parse(live);
    if (controllerUid(current?.metadata) !== uid) {
      // Never take over what someone else made: say so in status instead.
      problems.push(`${desired["kind"]} ${desired["metadata"]["name"]} exists and is not controlled by this Website`);
    } else if (children.converge(current, desired)) {
      childWrites.push(Intent.update(current));
    }
  }
  const pending = childWrites.length > 0;
  const registryWrite = registryEntry(site, registry, registryNamed, site.value.spec.image);
  outcome.pushBatch(registryWrite === undefined ? childWrites : [...childWrites, registryWrite]);

  // After the children's writes: a status write is not attempted when they fail.
  const next = status.compute(site.value, deployment?.value, pending, problems, request.now);
  if (next !== undefined) {
    const raw = site.raw();
    raw.status = next;
    outcome.batch(Intent.updateStatus(raw));
  }
  return outcome;
}

/** The plugin. */
export const WebsiteController: Controller = {
  describe(): PluginInfo {
    return {
      name: "website",
      version: VERSION,
      primary: Websites,
      // Their changes wake the Website that controls them; the registry ConfigMap has no
      // controller and wakes nothing.
      owns: [Deployments, ConfigMaps],
      watches: [],
      // Website: its finalizer and status; ConfigMap: content and registry.
      writes: [Websites, Deployments, ConfigMaps],
      contract: CONTRACT_VERSION,
    };
  },
  reconcile,
};

export default WebsiteController;
