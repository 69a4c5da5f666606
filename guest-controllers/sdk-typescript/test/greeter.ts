// The README's first plugin, verbatim (test/readme.test.ts checks the README still shows it).
import { CONTRACT_VERSION, type Cache, type Controller, Intent, Outcome, ReconcileError, type Request, ownership, resource } from "@wasmcm/guest";

/** A Greeting: `spec.message`, and the generation the plugin last acted on in its status. */
interface Greeting {
  metadata: { name: string; namespace: string; uid: string; generation?: number };
  spec?: { message?: string };
  status?: { observedGeneration?: number };
}

const Greetings = resource<Greeting>("example.com/v1", "Greeting");
const ConfigMaps = resource<{ data?: Record<string, string> }>("v1", "ConfigMap");

export const Greeter: Controller = {
  describe() {
    return {
      name: "greeter",
      version: "0.1.0",
      // Keys are Greetings; a change of one, or of a ConfigMap one controls, wakes it.
      primary: Greetings,
      owns: [ConfigMaps],
      watches: [],
      // Greeting for its status. The host refuses writes of any other kind.
      writes: [Greetings, ConfigMaps],
      contract: CONTRACT_VERSION,
    };
  },

  reconcile(request: Request, cache: Cache): Outcome {
    const outcome = new Outcome();
    // Deleted: the API server's garbage collector deletes what it controlled.
    const greeting = cache.getAs(Greetings, request.namespace, request.name);
    if (greeting === undefined) return outcome;
    const meta = greeting.value.metadata;
    // Retrying cannot fix a spec: the next change of the Greeting brings it back.
    const message = greeting.value.spec?.message;
    if (typeof message !== "string") throw ReconcileError.permanent("spec.message is required");

    const [child] = cache.listControlledAs(ConfigMaps, request.namespace, meta.uid, false);
    if (child === undefined) {
      const owner = ownership.newControllerRef(Greetings.apiVersion, Greetings.kind, meta);
      const configMap = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: `${request.name}-greeting`, namespace: request.namespace },
        data: { message },
      };
      outcome.batch(Intent.create(ownership.withOwnerRef(configMap, owner)));
    } else if (child.value.data?.["message"] !== message) {
      // Starting from the JSON as read keeps its resourceVersion: if the cache was stale, the
      // update fails with a conflict and is retried.
      const updated = child.raw();
      updated.data = { message };
      outcome.batch(Intent.update(updated));
    }
    // A later batch: the status is written only once the ConfigMap write succeeded.
    const generation = meta.generation ?? 0;
    if (greeting.value.status?.observedGeneration !== generation) {
      const withStatus = greeting.raw();
      withStatus.status = { observedGeneration: generation };
      outcome.batch(Intent.updateStatus(withStatus));
    }
    return outcome;
  },
};
