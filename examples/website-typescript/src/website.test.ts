// The plugin's logic natively, against an in-memory cache: `npm test`. The Rust example's tests
// (examples/website/src/tests.rs), case for case.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Instant, type Intent, MemoryCache, type Outcome, ReconcileError, intentObject, request } from "@wasmcm/guest";

import * as children from "./children.js";
import { DEFAULT_REGISTRY, FINALIZER, VERSION, WebsiteController, reconcile } from "./index.js";
import { decodeWebsite } from "./website.js";

const UID = "5e1f0000-0000-4000-8000-000000000001";
const now = Instant.parse("2026-11-26T08:00:00Z");

function website(finalizers: string[]): any {
  return {
    apiVersion: "example.wasmcm.dev/v1",
    kind: "Website",
    metadata: { name: "blog", namespace: "web", uid: UID, generation: 1, resourceVersion: "10", finalizers },
    spec: { image: "nginx:1.27", replicas: 2, content: "<h1>Hello</h1>" },
  };
}

function run(objects: object[], settings = "{}"): Outcome {
  return reconcile(request("web", "blog", now, settings), new MemoryCache(objects));
}

/** Each batch as "verb Kind name". */
function summary(outcome: Outcome): string[][] {
  return outcome.batches.map((batch) =>
    batch.map((intent: Intent) => {
      const o = intentObject(intent);
      return `${intent.type} ${o["kind"]} ${o["metadata"]["name"]}`;
    }),
  );
}

function written(outcome: Outcome, kind: string, name: string): any {
  for (const intent of outcome.intents()) {
    const o = intentObject(intent);
    if (o["kind"] === kind && o["metadata"]["name"] === name) return o;
  }
  assert.fail(`no write of ${kind} ${name} in ${JSON.stringify(outcome)}`);
}

/** The children as the API server holds them after the plugin created them. */
function liveChildren(replicas: number, ready: number, image: string): any[] {
  const site = decodeWebsite(website([FINALIZER]));
  const content = children.content(site);
  content["metadata"]["resourceVersion"] = "11";
  const deployment = children.deployment(site);
  deployment["metadata"]["resourceVersion"] = "12";
  deployment["metadata"]["generation"] = 1;
  deployment["spec"]["template"]["spec"]["containers"][0]["image"] = image;
  deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "IfNotPresent";
  deployment["spec"]["strategy"] = { type: "RollingUpdate" };
  deployment["status"] = { observedGeneration: 1, replicas, readyReplicas: ready, updatedReplicas: replicas, availableReplicas: ready };
  const registry = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: DEFAULT_REGISTRY, namespace: "web", resourceVersion: "13" },
    data: { blog: "nginx:1.27", shop: "nginx:1.26" },
  };
  return [content, deployment, registry];
}

function withStatus(site: any, outcome: Outcome): any {
  return { ...site, status: written(outcome, "Website", "blog").status };
}

test("describes a plugin for websites", () => {
  const info = WebsiteController.describe();
  assert.deepEqual([info.primary.apiVersion, info.primary.kind], ["example.wasmcm.dev/v1", "Website"]);
  assert.equal(info.version, VERSION);
  assert.ok(info.writes.some((k) => k.kind === "Website"), "the finalizer and status are writes of the Website");
});

test("a new website gets the finalizer and nothing else", () => {
  const outcome = run([website([])]);
  assert.deepEqual(summary(outcome), [["update Website blog"]]);
  const site = written(outcome, "Website", "blog");
  assert.deepEqual(site.metadata.finalizers, [FINALIZER]);
  assert.equal(site.metadata.resourceVersion, "10", "the update is preconditioned on what was read");
});

test("then children and registry entry are created before status", () => {
  const outcome = run([website([FINALIZER])]);
  assert.deepEqual(summary(outcome), [
    ["create ConfigMap blog-content", "create Deployment blog", `create ConfigMap ${DEFAULT_REGISTRY}`],
    ["update-status Website blog"],
  ]);
  const deployment = written(outcome, "Deployment", "blog");
  const owner = deployment.metadata.ownerReferences[0];
  assert.deepEqual([owner.kind, owner.uid, owner.controller, owner.blockOwnerDeletion], ["Website", UID, true, true]);
  assert.equal(deployment.spec.replicas, 2);
  assert.equal(deployment.spec.template.spec.containers[0].image, "nginx:1.27");
  assert.equal(deployment.spec.template.spec.volumes[0].configMap.name, "blog-content");
  const content = written(outcome, "ConfigMap", "blog-content");
  assert.equal(content.metadata.ownerReferences[0].uid, UID);
  assert.ok(content.data["index.html"].startsWith("<h1>Hello</h1>"));
  const registry = written(outcome, "ConfigMap", DEFAULT_REGISTRY);
  assert.deepEqual(registry.data, { blog: "nginx:1.27" });
  assert.equal(registry.metadata.ownerReferences, undefined, "the registry is shared, owned by no Website");

  const status = written(outcome, "Website", "blog").status;
  assert.equal(status.observedGeneration, 1);
  const [ready, progressing] = status.conditions;
  assert.deepEqual([ready.type, ready.status], ["Ready", "False"]);
  assert.deepEqual([progressing.type, progressing.status, progressing.reason], ["Progressing", "True", "Creating"]);
  assert.equal(progressing.lastTransitionTime, "2026-11-26T08:00:00Z");
});

test("status follows the deployment and settles", () => {
  let site = website([FINALIZER]);
  const rolling = run([site, ...liveChildren(1, 0, "nginx:1.27")]);
  assert.deepEqual(summary(rolling), [["update-status Website blog"]], "no child needs a write");
  site = withStatus(site, rolling);
  assert.equal(site.status.conditions[1].reason, "RollingOut");
  assert.equal(site.status.conditions[0].message, "0/2 replicas ready");

  const ready = run([site, ...liveChildren(2, 2, "nginx:1.27")]);
  site = withStatus(site, ready);
  assert.equal(site.status.readyReplicas, 2);
  assert.deepEqual([site.status.conditions[0].status, site.status.conditions[0].reason], ["True", "Available"]);
  assert.equal(site.status.conditions[1].reason, "Complete");

  // Nothing changed: nothing to write, not even a status with a new time.
  assert.ok(run([site, ...liveChildren(2, 2, "nginx:1.27")]).isEmpty());
});

test("transition times move only when a status changes", () => {
  const site = website([FINALIZER]);
  site.status = {
    observedGeneration: 1,
    replicas: 1,
    readyReplicas: 0,
    updatedReplicas: 1,
    conditions: [
      { type: "Ready", status: "False", reason: "Unavailable", message: "0/2 replicas ready", observedGeneration: 1, lastTransitionTime: "2026-11-26T07:00:00Z" },
      {
        type: "Progressing",
        status: "True",
        reason: "RollingOut",
        message: "1/2 updated, 0/2 replicas ready",
        observedGeneration: 1,
        lastTransitionTime: "2026-11-26T07:00:00Z",
      },
    ],
  };
  const conditions = written(run([site, ...liveChildren(2, 1, "nginx:1.27")]), "Website", "blog").status.conditions;
  assert.equal(conditions[0].message, "1/2 replicas ready");
  assert.equal(conditions[0].lastTransitionTime, "2026-11-26T07:00:00Z", "still False");
});

test("a spec change updates only the fields the plugin owns", () => {
  const site = website([FINALIZER]);
  site.metadata.generation = 2;
  site.spec.image = "nginx:1.28";
  site.spec.replicas = 3;
  const outcome = run([site, ...liveChildren(2, 2, "nginx:1.27")]);
  assert.deepEqual(summary(outcome), [["update Deployment blog", `update ConfigMap ${DEFAULT_REGISTRY}`], ["update-status Website blog"]]);
  const deployment = written(outcome, "Deployment", "blog");
  assert.equal(deployment.spec.replicas, 3);
  const container = deployment.spec.template.spec.containers[0];
  assert.equal(container.image, "nginx:1.28");
  assert.equal(container.imagePullPolicy, "IfNotPresent", "the API server's defaults are kept");
  assert.equal(deployment.metadata.resourceVersion, "12");
  assert.deepEqual(written(outcome, "ConfigMap", DEFAULT_REGISTRY).data, { blog: "nginx:1.28", shop: "nginx:1.26" });
  const status = written(outcome, "Website", "blog").status;
  assert.equal(status.observedGeneration, 2);
  assert.equal(status.conditions[0].status, "False", "not ready while the new spec rolls out");
});

test("deletion removes the registry entry then the finalizer", () => {
  const site = website(["other.io/keep", FINALIZER]);
  site.metadata.deletionTimestamp = "2026-11-26T07:59:00Z";
  const outcome = run([site, ...liveChildren(2, 2, "nginx:1.27")]);
  assert.deepEqual(summary(outcome), [[`update ConfigMap ${DEFAULT_REGISTRY}`], ["update Website blog"]]);
  assert.deepEqual(written(outcome, "ConfigMap", DEFAULT_REGISTRY).data, { shop: "nginx:1.26" });
  assert.deepEqual(written(outcome, "Website", "blog").metadata.finalizers, ["other.io/keep"]);
});

test("deletion without an entry only removes the finalizer, and without it does nothing", () => {
  const site = website([FINALIZER]);
  site.metadata.deletionTimestamp = "2026-11-26T07:59:00Z";
  assert.deepEqual(summary(run([site])), [["update Website blog"]]);
  site.metadata.finalizers = ["other.io/keep"];
  assert.ok(run([site]).isEmpty());
});

test("a child of someone else is left alone and reported", () => {
  const objects = liveChildren(2, 2, "nginx:1.27");
  objects[1].metadata.ownerReferences = [];
  objects[1].spec.replicas = 9;
  const outcome = run([website([FINALIZER]), ...objects]);
  assert.deepEqual(summary(outcome), [["update-status Website blog"]]);
  const ready = written(outcome, "Website", "blog").status.conditions[0];
  assert.equal(ready.reason, "ChildConflict");
  assert.ok(ready.message.includes("Deployment blog exists"), ready.message);
});

test("the registry is named by the settings", () => {
  const outcome = run([website([FINALIZER])], '{"registry": "sites"}');
  assert.deepEqual(written(outcome, "ConfigMap", "sites").data, { blog: "nginx:1.27" });
  assert.throws(
    () => run([website([FINALIZER])], '{"registry": 7}'),
    (e: unknown) => e instanceof ReconcileError && !e.retryable && e.message.includes("settings"),
  );
});

test("every child names the release that wrote it", () => {
  const outcome = run([website([FINALIZER])]);
  for (const [kind, name] of [
    ["ConfigMap", "blog-content"],
    ["Deployment", "blog"],
  ] as const) {
    assert.equal(written(outcome, kind, name).metadata.annotations[children.VERSION_ANNOTATION], VERSION);
  }
});

test("a new release updates the children it wrote", () => {
  const objects = liveChildren(2, 2, "nginx:1.27");
  objects[0].metadata.annotations[children.VERSION_ANNOTATION] = "0.0.9";
  objects[1].metadata.annotations[children.VERSION_ANNOTATION] = "0.0.9";
  const outcome = run([website([FINALIZER]), ...objects]);
  assert.deepEqual(summary(outcome)[0], ["update ConfigMap blog-content", "update Deployment blog"]);
});

test("a Website its schema would refuse is a retryable error naming it", () => {
  const site = website([FINALIZER]);
  delete site.spec.image;
  assert.throws(
    () => run([site]),
    (e: unknown) => e instanceof ReconcileError && e.retryable && e.message === "cannot decode Website web/blog from the cache: missing field `image`",
  );
});
