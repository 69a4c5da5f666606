/**
 * The Website's children as it wants them, and how a live child is brought back to that without
 * touching what others (the API server's defaults, other controllers, users) set.
 *
 * @module
 */

import { json, ownership } from "@wasmcm/guest";

import { VERSION } from "./version.js";
import { Websites, type Website } from "./website.js";

/** Marks every child with the release that last wrote it. */
export const VERSION_ANNOTATION = "example.wasmcm.dev/controller-version";

/** The container serving the site, in the Deployment's pod template. */
export const CONTAINER = "web";

/** The ConfigMap holding a Website's page. */
export function contentName(website: string): string {
  return `${website}-content`;
}

/** The page as served: the spec's content. */
export function page(site: Website): string {
  return site.spec.content;
}

/** The labels of the site's pods, which the Deployment selects by. */
function podLabels(name: string): Record<string, string> {
  return { "app.kubernetes.io/name": "website", "app.kubernetes.io/instance": name };
}

/** Metadata of a child: named after the site, in its namespace, controlled by it. */
function metadata(site: Website, name: string): Record<string, unknown> {
  const owner = ownership.newControllerRef(Websites.apiVersion, Websites.kind, site.metadata);
  const labels = { ...podLabels(site.metadata.name ?? ""), "app.kubernetes.io/managed-by": "website" };
  return {
    name,
    namespace: site.metadata.namespace ?? null,
    labels,
    annotations: { [VERSION_ANNOTATION]: VERSION },
    ownerReferences: [owner],
  };
}

/** The ConfigMap `<name>-content` with the page as `index.html`. */
export function content(site: Website): Record<string, any> {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: metadata(site, contentName(site.metadata.name ?? "")),
    data: { "index.html": page(site) },
  };
}

/** The Deployment `<name>`: `spec.replicas` pods of `spec.image` serving the content ConfigMap. */
export function deployment(site: Website): Record<string, any> {
  const name = site.metadata.name ?? "";
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: metadata(site, name),
    spec: {
      replicas: site.spec.replicas,
      selector: { matchLabels: podLabels(name) },
      template: {
        metadata: { labels: podLabels(name) },
        spec: {
          containers: [
            {
              name: CONTAINER,
              image: site.spec.image,
              ports: [{ name: "http", containerPort: 80 }],
              volumeMounts: [{ name: "content", mountPath: "/usr/share/nginx/html", readOnly: true }],
            },
          ],
          volumes: [{ name: "content", configMap: { name: contentName(name) } }],
        },
      },
    },
  };
}

function isObject(v: unknown): v is Record<string, any> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** `parent[key]`, made an object first when it is not one. */
function objectAt(parent: Record<string, any>, key: string): Record<string, any> {
  if (!isObject(parent[key])) parent[key] = {};
  return parent[key];
}

/**
 * Sets in `live` the fields this plugin owns, from `desired` (both of one kind); returns whether
 * anything changed, i.e. whether an update is needed. A comparison of whole objects would never
 * settle: the API server adds defaults and status, and others may add labels.
 */
export function converge(live: Record<string, any>, desired: Record<string, any>): boolean {
  const before = json.clone(live);
  for (const map of ["labels", "annotations"]) {
    const want = desired["metadata"]?.[map];
    if (isObject(want)) {
      const have = objectAt(objectAt(live, "metadata"), map);
      Object.assign(have, json.clone(want));
    }
  }
  switch (desired["kind"]) {
    case "ConfigMap":
      live["data"] = json.clone(desired["data"]);
      break;
    case "Deployment": {
      const spec = objectAt(live, "spec");
      spec["replicas"] = desired["spec"]["replicas"];
      const image = desired["spec"]["template"]["spec"]["containers"][0]["image"];
      const containers = live["spec"]?.["template"]?.["spec"]?.["containers"];
      const ours = Array.isArray(containers) ? containers.find((c) => isObject(c) && c["name"] === CONTAINER) : undefined;
      if (ours !== undefined) {
        ours["image"] = image;
      } else {
        // Someone removed ours: the template as this plugin makes it.
        spec["template"] = json.clone(desired["spec"]["template"]);
      }
      break;
    }
  }
  return !json.jsonEqual(live, before);
}
