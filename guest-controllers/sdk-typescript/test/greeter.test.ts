// The README's first plugin, tested as a plugin's unit tests are: against a MemoryCache.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Instant, MemoryCache, ReconcileError, intentObject, request } from "@wasmcm/guest";

import { Greeter } from "./greeter.js";

const now = Instant.parse("2026-11-26T10:00:00Z");
const hello = {
  apiVersion: "example.com/v1",
  kind: "Greeting",
  metadata: { name: "hello", namespace: "demo", uid: "u1", generation: 1 },
  spec: { message: "Hi!" },
};

test("the first plugin creates its ConfigMap, then its status, then nothing", () => {
  const cache = new MemoryCache([hello]);
  const req = request("demo", "hello", now);

  // First the ConfigMap, controlled by the Greeting; then, in a batch of its own, the status.
  let outcome = Greeter.reconcile(req, cache);
  assert.equal(outcome.batches.length, 2);
  const created = intentObject(outcome.batches[0]![0]!);
  assert.equal(outcome.batches[0]![0]!.type, "create");
  assert.equal(created.metadata.name, "hello-greeting");
  assert.equal(created.data.message, "Hi!");
  assert.equal(created.metadata.ownerReferences[0].uid, "u1");
  assert.equal(outcome.batches[1]![0]!.type, "update-status");

  // The host performed both writes and its cache shows them: nothing is left to do.
  cache.insert({ ...created, metadata: { ...created.metadata, uid: "c1" } });
  const observed = { ...hello, status: { observedGeneration: 1 } };
  cache.insert(observed);
  assert.ok(Greeter.reconcile(req, cache).isEmpty());

  // A new message (generation 2): the ConfigMap is updated, then the status.
  cache.insert({ ...observed, metadata: { ...observed.metadata, generation: 2 }, spec: { message: "Hello!" } });
  outcome = Greeter.reconcile(req, cache);
  assert.equal(outcome.batches[0]![0]!.type, "update");
  assert.equal(intentObject(outcome.batches[0]![0]!).data.message, "Hello!");
  assert.equal(outcome.batches.length, 2);

  // A Greeting without a message is refused for good; a deleted one needs nothing.
  cache.insert({ apiVersion: "example.com/v1", kind: "Greeting", metadata: { name: "mute", namespace: "demo", uid: "u2" } });
  assert.throws(
    () => Greeter.reconcile(request("demo", "mute", now), cache),
    (e: unknown) => e instanceof ReconcileError && !e.retryable && e.message.includes("spec.message"),
  );
  assert.ok(Greeter.reconcile(request("demo", "gone", now), cache).isEmpty());
});
