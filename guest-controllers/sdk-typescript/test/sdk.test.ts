// The SDK's helpers natively: the cache, typed reads, selectors, time, conditions, finalizers,
// ownership, outcomes and JSON, each against the behaviour of the Rust SDK and apimachinery.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  Changes,
  Instant,
  Intent,
  MemoryCache,
  Outcome,
  Patch,
  ReconcileError,
  Selector,
  conditions,
  controllerUid,
  describeIntent,
  finalizer,
  intentObject,
  json,
  kind,
  kindGroup,
  ownership,
  resource,
  type Condition,
} from "@wasmcm/guest";

const Pods = resource("v1", "Pod");
const pod = (namespace: string, name: string, owner?: [string, boolean], labels?: Record<string, string>) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name,
    namespace,
    labels,
    ownerReferences: owner ? [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", uid: owner[0], controller: owner[1] }] : undefined,
  },
});
const names = (objects: { value: any }[]) => objects.map((o) => o.value.metadata.name);

test("a memory cache gets, lists by namespace and selector, ordered by namespace and name", () => {
  const cache = new MemoryCache([pod("x", "b", undefined, { app: "web" }), pod("x", "a"), pod("y", "c", undefined, { app: "web" })]);
  assert.equal(cache.size, 3);
  assert.deepEqual(names(cache.listAs(Pods, "x")), ["a", "b"]);
  assert.deepEqual(names(cache.listAs(Pods, "", Selector.parse("app=web"))), ["b", "c"]);
  assert.equal(cache.getAs(Pods, "x", "a")?.value.metadata?.name, "a");
  assert.equal(cache.getAs(Pods, "x", "zz"), undefined);
  assert.deepEqual(cache.list(kind("v1", "Secret"), ""), [], "an unknown kind is empty");
  // Inserting the same kind, namespace and name replaces; removing forgets.
  cache.insert({ ...pod("x", "a"), spec: { nodeName: "n1" } });
  assert.equal(cache.size, 3);
  assert.equal(cache.getAs(Pods, "x", "a")?.raw().spec.nodeName, "n1");
  cache.remove(Pods, "x", "a");
  assert.equal(cache.get(Pods, "x", "a"), undefined);
  assert.throws(() => cache.insert({ kind: "Pod", metadata: { name: "p" } }), /object has no apiVersion/);
  assert.throws(() => cache.insert({ apiVersion: "v1", kind: "Pod", metadata: {} }), /object has no metadata.name/);
});

test("list-controlled gives the controlled objects of one namespace by name, then the orphans", () => {
  const cache = new MemoryCache([
    pod("x", "b-mine", ["u1", true]),
    pod("x", "a-mine", ["u1", true]),
    pod("x", "theirs", ["u2", true]),
    pod("x", "z-orphan"),
    pod("x", "not-controller", ["u1", false]),
    pod("y", "elsewhere", ["u1", true]),
  ]);
  assert.deepEqual(names(cache.listControlledAs(Pods, "x", "u1", false)), ["a-mine", "b-mine"]);
  assert.deepEqual(names(cache.listControlledAs(Pods, "x", "u1", true)), ["a-mine", "b-mine", "not-controller", "z-orphan"]);
  assert.equal(controllerUid({ ownerReferences: [{ uid: "u0" }, { uid: "u1", controller: true }] }), "u1");
  assert.equal(controllerUid({}), undefined);
});

test("an object its decoder refuses is a retryable error naming it", () => {
  const Strict = resource<{ spec: { image: string } }>("v1", "Pod", (o) => {
    if (typeof o.spec?.image !== "string") throw new TypeError("spec.image: expected a string");
    return o;
  });
  const cache = new MemoryCache([pod("x", "bad")]);
  assert.throws(
    () => cache.listAs(Strict, "x"),
    (e: unknown) => e instanceof ReconcileError && e.retryable && e.message === "cannot decode Pod x/bad from the cache: spec.image: expected a string",
  );
});

test("selectors follow apimachinery: labels and expressions all hold, kubectl's syntax parses", () => {
  const s = Selector.fromLabelSelector({
    matchLabels: { app: "web" },
    matchExpressions: [
      { key: "tier", operator: "In", values: ["front", "edge"] },
      { key: "canary", operator: "DoesNotExist" },
      { key: "zone", operator: "NotIn", values: ["b"] },
      { key: "team", operator: "Exists" },
    ],
  });
  assert.ok(s.matches({ app: "web", tier: "edge", team: "x" }));
  assert.ok(!s.matches({ app: "web", tier: "edge", team: "x", canary: "1" }));
  assert.ok(!s.matches({ app: "web", tier: "edge", team: "x", zone: "b" }));
  assert.ok(!s.matches({ app: "web", tier: "back", team: "x" }));
  assert.ok(Selector.everything().matches({}) && Selector.everything().isEmpty());
  assert.throws(() => Selector.fromLabelSelector({ matchExpressions: [{ key: "a", operator: "in", values: ["x"] }] }), /"in" is not a valid label selector operator/);
  assert.throws(() => Selector.fromLabelSelector({ matchExpressions: [{ key: "a", operator: "In" }] }), /values set can't be empty/);

  const parsed = Selector.parse("app=web, tier in (front,edge),!canary,zone!=b,team,x==y");
  assert.deepEqual(
    parsed.matchExpressions.map((r) => `${r.key} ${r.operator} ${r.values.join("|")}`),
    ["app In web", "tier In front|edge", "canary DoesNotExist ", "zone NotIn b", "team Exists ", "x In y"],
  );
  assert.ok(parsed.matches({ app: "web", tier: "front", team: "t", x: "y" }));
  assert.throws(() => Selector.parse("app in (web"), /unbalanced parentheses/);
  assert.throws(() => Selector.parse("app=-bad-"), /invalid label value "-bad-"/);
  assert.throws(() => Selector.parse("a b (x)"), /unknown operator "b"/);
});

test("instants parse RFC 3339 and print Kubernetes timestamps to the second", () => {
  const t = Instant.parse("2026-11-26T10:00:30.5Z");
  assert.equal(t.seconds, 1_795_687_230);
  assert.equal(t.nanoseconds, 500_000_000);
  assert.equal(t.toTime(), "2026-11-26T10:00:30Z");
  assert.equal(t.toString(), "2026-11-26T10:00:30.5Z");
  assert.equal(Instant.parse("2026-11-26T11:00:30+01:00").toTime(), "2026-11-26T10:00:30Z");
  assert.equal(t.since("2026-11-26T10:00:00Z"), 30_500);
  assert.equal(t.plusMillis(600).toString(), "2026-11-26T10:00:31.1Z");
  assert.ok(Instant.parse("2026-11-26T10:00:00Z").compare(t) < 0);
  assert.equal(new Instant(0).toTime(), "1970-01-01T00:00:00Z");
  for (const bad of ["yesterday", "2026-02-30T00:00:00Z", "2026-11-26 10:00:00Z", "2026-11-26T25:00:00Z"]) {
    assert.throws(() => Instant.parse(bad), RangeError, bad);
  }
});

test("conditions are set as meta.SetStatusCondition sets them", () => {
  const at = (s: string) => Instant.parse(s).toTime();
  const progressing = (status: string, message: string, generation: number, now: string): Condition => ({
    type: "Progressing",
    status,
    reason: "RollingOut",
    message,
    observedGeneration: generation,
    lastTransitionTime: at(now),
  });
  const list = [progressing("True", "1/3 ready", 1, "2026-11-26T08:00:00Z")];
  // Same status, new message and generation: updated, the transition time kept.
  assert.ok(conditions.set(list, progressing("True", "2/3 ready", 2, "2026-11-26T08:01:00Z")));
  assert.deepEqual([list[0]!.message, list[0]!.observedGeneration, list[0]!.lastTransitionTime], ["2/3 ready", 2, "2026-11-26T08:00:00Z"]);
  assert.ok(!conditions.set(list, progressing("True", "2/3 ready", 2, "2026-11-26T08:05:00Z")), "nothing changed");
  // A new status: the transition time moves.
  assert.ok(conditions.set(list, progressing("False", "2/3 ready", 2, "2026-11-26T08:02:00Z")));
  assert.equal(list[0]!.lastTransitionTime, "2026-11-26T08:02:00Z");
  // Another type is appended, in order.
  assert.ok(conditions.set(list, { ...progressing("True", "", 2, "2026-11-26T08:03:00Z"), type: "Ready", reason: "Available" }));
  assert.deepEqual(list.map((c) => c.type), ["Progressing", "Ready"]);
  assert.ok(conditions.isTrue(list, "Ready") && !conditions.isTrue(list, "Progressing"));
  assert.equal(conditions.find(list, "Nope"), undefined);
});

test("finalizers are added once, removed keeping the others, and bad shapes refused", () => {
  const raw: any = { metadata: { name: "blog", finalizers: ["other.io/keep"] } };
  assert.ok(finalizer.add(raw, "example.wasmcm.dev/registry"));
  assert.ok(!finalizer.add(raw, "example.wasmcm.dev/registry"));
  assert.deepEqual(raw.metadata.finalizers, ["other.io/keep", "example.wasmcm.dev/registry"]);
  assert.ok(finalizer.has(raw.metadata, "example.wasmcm.dev/registry"));
  assert.ok(finalizer.remove(raw, "example.wasmcm.dev/registry"));
  assert.ok(!finalizer.remove(raw, "example.wasmcm.dev/registry"));
  assert.deepEqual(raw.metadata.finalizers, ["other.io/keep"]);
  assert.ok(finalizer.add({ metadata: { finalizers: null } }, "a.io/b"), "null is an empty list");
  assert.ok(finalizer.isDeleting({ deletionTimestamp: "2026-11-26T08:00:00Z" }) && !finalizer.isDeleting({}));
  assert.throws(() => finalizer.add({ kind: "NoMetadata" }, "x.io/y"), (e: unknown) => e instanceof ReconcileError && !e.retryable);
  assert.throws(() => finalizer.add({ metadata: { finalizers: "a.io/b" } }, "a.io/b"), /metadata.finalizers is not a list/);
});

test("a finalizer's remove patch is a strategic $deleteFromPrimitiveList of that finalizer", () => {
  const pod = { kind: kind("v1", "Pod"), namespace: "demo", name: "pi-x7k2q" };
  const patch = finalizer.removePatch(pod, "batch.kubernetes.io/job-tracking");
  assert.equal(patch.patchType, "strategic");
  assert.equal(patch.body, '{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking"]}}');
  assert.deepEqual([patch.target, patch.resourceVersion, patch.status], [pod, undefined, false]);
});

test("patches carry their type and JSON taken when made; preconditions and status make new ones", () => {
  const pod = { kind: kind("v1", "Pod"), namespace: "demo", name: "web-1" };
  const labels = { tier: "web" };
  const merge = Patch.merge(pod, { metadata: { labels } });
  labels.tier = "changed after";
  assert.deepEqual([merge.patchType, JSON.parse(merge.body)], ["merge", { metadata: { labels: { tier: "web" } } }]);
  const guarded = merge.withResourceVersion("42");
  assert.deepEqual([guarded.resourceVersion, guarded.status, guarded.body], ["42", false, merge.body]);
  assert.equal(merge.resourceVersion, undefined, "the patch it came from is unchanged");
  const status = Patch.strategic(pod, '{"status":{"phase":"Failed"}}').toStatus().withResourceVersion("7");
  assert.deepEqual([status.patchType, status.body, status.status, status.resourceVersion], ["strategic", '{"status":{"phase":"Failed"}}', true, "7"]);
  const ops = Patch.json(pod, [{ op: "remove", path: "/metadata/annotations/old" }]);
  assert.deepEqual([ops.patchType, ops.body], ["json", '[{"op":"remove","path":"/metadata/annotations/old"}]']);

  assert.deepEqual(Intent.patch(status), { type: "patch", patch: status });
  assert.equal(describeIntent(Intent.patch(merge)), "patch v1/Pod demo/web-1");
  assert.equal(describeIntent(Intent.patch(status)), "patch-status v1/Pod demo/web-1");
  assert.throws(() => intentObject(Intent.patch(merge)), /a patch intent carries no object/);
  const job = { kind: kind("batch/v1", "Job"), namespace: "demo", name: "nightly-29000" };
  assert.deepEqual(Intent.delete(job, undefined, "Background"), { type: "delete", target: job, uid: undefined, propagation: "Background" });
  assert.equal(describeIntent(Intent.delete(job, "u", "Foreground")), "delete batch/v1/Job demo/nightly-29000");
});

test("claims follow ControllerRefManager, and owner references are added and dropped in the JSON", () => {
  const meta = (uid: string, owner?: string, namespace = "ns") => ({
    uid,
    namespace,
    ownerReferences: owner ? [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "o", uid: owner, controller: true }] : undefined,
  });
  const owner = meta("rs");
  assert.equal(ownership.claim(owner, meta("p", "rs"), true), "Owned");
  assert.equal(ownership.claim(owner, meta("p", "rs"), false), "Release");
  assert.equal(ownership.claim(owner, meta("p", "other"), true), "Ignore");
  assert.equal(ownership.claim(owner, meta("p"), true), "Adopt");
  assert.equal(ownership.claim(owner, meta("p"), false), "Ignore");
  assert.equal(ownership.claim(owner, { ...meta("p"), deletionTimestamp: "t" }, true), "Ignore");
  assert.equal(ownership.claim({ ...owner, deletionTimestamp: "t" }, meta("p"), true), "Ignore");
  assert.equal(ownership.claim({ ...owner, deletionTimestamp: "t" }, meta("p", "rs"), false), "Ignore");
  assert.equal(ownership.claim(owner, meta("p", undefined, "other"), true), "Ignore");

  const ref = ownership.newControllerRef("apps/v1", "ReplicaSet", { name: "rs", uid: "u1" });
  assert.deepEqual(ref, { apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", uid: "u1", controller: true, blockOwnerDeletion: true });
  const adopted: any = ownership.withOwnerRef({ metadata: { name: "p", ownerReferences: [{ uid: "other" }] }, extra: 1 }, ref);
  assert.equal(adopted.metadata.ownerReferences[1].uid, "u1");
  assert.equal(adopted.extra, 1);
  assert.deepEqual(ownership.withoutOwnerRef(adopted, "u1").metadata.ownerReferences, [{ uid: "other" }]);
  assert.equal(ownership.controllerOf(adopted.metadata), undefined);
  assert.throws(() => ownership.withOwnerRef({}, ref), /object has no metadata/);
});

test("outcomes skip empty batches and take whole, non-negative requeues", () => {
  const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", namespace: "demo" } };
  const created = { ...cm, data: { k: "v" } };
  const outcome = new Outcome().batch(Intent.create(created)).batch().pushBatch([]).batch(Intent.updateStatus(cm)).requeueAfter(30_000);
  created.data.k = "changed after";
  assert.equal(outcome.batches.length, 2);
  assert.equal(outcome.intents().length, 2);
  assert.deepEqual(JSON.parse((outcome.batches[0]![0] as { object: string }).object).data, { k: "v" }, "taken when made");
  assert.equal(describeIntent(outcome.batches[1]![0]!), "update-status ConfigMap demo/a");
  assert.equal(outcome.requeueAfterMs, 30_000);
  assert.ok(new Outcome().isEmpty());
  assert.throws(() => new Outcome().requeueAfter(-1), RangeError);
  assert.throws(() => new Outcome().requeueAfter(1.5), RangeError);
  const target = { kind: kind("v1", "Pod"), namespace: "demo", name: "web-1" };
  assert.equal(describeIntent(Intent.delete(target, "u")), "delete v1/Pod demo/web-1");
  assert.equal(describeIntent(Intent.event(target, "Warning", "Invalid", "no")), "event Invalid");
  assert.deepEqual(Changes.DELETED, { created: false, updated: false, deleted: true });
  assert.equal(kindGroup(kind("apps/v1", "Deployment")), "apps");
  assert.equal(kindGroup(kind("v1", "Pod")), "");
  assert.deepEqual([ReconcileError.retryable("x").retryable, ReconcileError.permanent("y").retryable], [true, false]);
});

test("merge patches merge, replace and remove; JSON equality ignores key order", () => {
  const object = { metadata: { name: "a", labels: { x: "1", y: "2" } }, data: { k: "v" } };
  json.mergePatch(object, { metadata: { labels: { x: null, z: "3" } }, data: { k: "w" } });
  assert.deepEqual(object, { metadata: { name: "a", labels: { y: "2", z: "3" } }, data: { k: "w" } });
  assert.ok(json.jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }));
  assert.ok(json.jsonEqual({ a: 1, b: undefined }, { a: 1 }), "undefined is absent, as in JSON");
  assert.ok(!json.jsonEqual({ a: [1, 2] }, { a: [2, 1] }));
  assert.ok(!json.jsonEqual({ a: null }, { a: 0 }));
});
