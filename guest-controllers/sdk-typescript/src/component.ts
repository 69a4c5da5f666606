/**
 * The component adapter: the contract's imports (`wasmcm:reconciler/cache`, `log`, typed by the
 * `jco guest-types` output in `src/wit/`) behind the SDK's {@link Cache} and `log`, and
 * {@link exportPlugin}, which turns a {@link Controller} into the `controller` export
 * componentize-js wires to the WIT. Imported only by a plugin's component entry
 * (`src/component.ts` of a plugin): Node cannot load the `wasmcm:` imports, so native tests
 * import the controller, never this.
 *
 * @module
 */

import * as host from "wasmcm:reconciler/cache@0.4.0";
import * as wit from "wasmcm:reconciler/controller@0.4.0";
import { log as hostLog } from "wasmcm:reconciler/log@0.4.0";
import type * as types from "wasmcm:reconciler/types@0.4.0";

import { Cache } from "./cache.js";
import { type Controller, type Intent, type Kind, type ObjectRef, Outcome, ReconcileError } from "./contract.js";
import { log, setLogSink } from "./log.js";
import { installSandbox } from "./sandbox.js";
import { Selector } from "./selector.js";
import { Instant } from "./time.js";

const OPERATORS = { In: "in", NotIn: "not-in", Exists: "exists", DoesNotExist: "does-not-exist" } as const;
const PROPAGATIONS = { Orphan: "orphan", Background: "background", Foreground: "foreground" } as const;

function kindToWit(k: Kind): types.Kind {
  return { apiVersion: k.apiVersion, kind: k.kind };
}

function refToWit(r: ObjectRef): types.ObjectRef {
  return { kind: kindToWit(r.kind), namespace: r.namespace, name: r.name };
}

/** The host's cache, seen through the SDK's {@link Cache}. */
class HostCache extends Cache {
  get(kind: Kind, namespace: string, name: string): string | undefined {
    return host.get(kindToWit(kind), namespace, name);
  }

  list(kind: Kind, namespace: string, selector: Selector = Selector.everything()): string[] {
    return host.list(kindToWit(kind), namespace, {
      matchLabels: selector.matchLabels.map(([k, v]) => [k, v]),
      matchExpressions: selector.matchExpressions.map((r) => ({
        key: r.key,
        operator: OPERATORS[r.operator],
        values: [...r.values],
      })),
    });
  }

  listControlled(kind: Kind, namespace: string, ownerUid: string, orphans: boolean): string[] {
    return host.listControlled(kindToWit(kind), namespace, ownerUid, orphans);
  }
}

function intentToWit(intent: Intent): wit.Intent {
  switch (intent.type) {
    case "create":
    case "update":
    case "update-status":
      return { tag: intent.type, val: intent.object };
    case "delete":
      return {
        tag: "delete",
        val: {
          target: refToWit(intent.target),
          uid: intent.uid,
          propagation: intent.propagation === undefined ? undefined : PROPAGATIONS[intent.propagation],
        },
      };
    case "patch":
      return {
        tag: "patch",
        val: {
          target: refToWit(intent.patch.target),
          patchType: intent.patch.patchType,
          body: intent.patch.body,
          resourceVersion: intent.patch.resourceVersion,
          status: intent.patch.status,
        },
      };
    case "event":
      return {
        tag: "event",
        val: {
          regarding: refToWit(intent.event.regarding),
          eventType: intent.event.type === "Warning" ? "warning" : "normal",
          reason: intent.event.reason,
          message: intent.event.message,
        },
      };
  }
}

/** What componentize-js lifts a `result<outcome, error>` from. */
type Result = { tag: "ok"; val: wit.Outcome } | { tag: "err"; val: wit.Error };

/** `TypeError: boom` and its stack, for the host's log. */
function describeThrown(e: unknown): { message: string; stack: string } {
  if (e instanceof Error) {
    return { message: `${e.name}: ${e.message}`, stack: e.stack ?? "" };
  }
  let text: string;
  try {
    text = JSON.stringify(e) ?? String(e);
  } catch {
    text = String(e);
  }
  return { message: `a non-Error value: ${text}`, stack: "" };
}

function reconcileWith(controller: Controller, request: wit.Request): Result {
  let outcome: unknown;
  try {
    outcome = controller.reconcile(
      {
        namespace: request.namespace,
        name: request.name,
        now: new Instant(Number(request.now.seconds), request.now.nanoseconds),
        previousFailure: request.previousFailure,
        settings: request.settings,
      },
      new HostCache(),
    );
  } catch (e) {
    if (e instanceof ReconcileError) {
      return { tag: "err", val: { message: e.message, retryable: e.retryable } };
    }
    // A bug, as a panic is in Rust: its message and where it was thrown go to the log, and the
    // key is retried with backoff as after a trap.
    const { message, stack } = describeThrown(e);
    log("error", stack === "" ? `uncaught ${message}` : `uncaught ${message}\n${stack}`);
    return { tag: "err", val: { message: `uncaught ${message} (its stack is in the host's log)`, retryable: true } };
  }
  if (!(outcome instanceof Outcome)) {
    const what = outcome instanceof Promise ? "a Promise (reconcile must be synchronous: the cache answers at once)" : typeof outcome;
    log("error", `reconcile returned ${what}, not an Outcome`);
    return { tag: "err", val: { message: `reconcile returned ${what}, not an Outcome`, retryable: true } };
  }
  return {
    tag: "ok",
    val: {
      batches: outcome.batches.map((batch) => batch.map(intentToWit)),
      requeueAfterMs: outcome.requeueAfterMs === undefined ? undefined : BigInt(outcome.requeueAfterMs),
    },
  };
}

/** The `controller` export of a plugin's component: the contract's `describe` and `reconcile`. */
export interface ControllerExport {
  describe(): unknown;
  reconcile(request: unknown): unknown;
}

/**
 * Exports `controller` as the component's `controller` interface, with the host's cache behind
 * the {@link Cache} it reads, `log` and `console` going to the host's log, what the sandbox lacks
 * replaced by functions that say so ({@link installSandbox}), and anything it throws but a
 * {@link ReconcileError} reported with its stack. A plugin's component entry is:
 *
 * ```ts
 * import { exportPlugin } from "@wasmcm/guest/component";
 * import { Greeter } from "./greeter.js";
 * export const controller = exportPlugin(Greeter);
 * ```
 */
export function exportPlugin(controller: Controller): ControllerExport {
  setLogSink((level, message) => hostLog(level, message));
  installSandbox(globalThis, log);
  const exported: typeof wit = {
    describe(): wit.PluginInfo {
      const info = controller.describe();
      return {
        name: info.name,
        version: info.version,
        primary: kindToWit(info.primary),
        owns: info.owns.map(kindToWit),
        watches: info.watches.map((w) => ({
          kind: kindToWit(w.kind),
          wakeOn: { created: w.wakeOn.created, updated: w.wakeOn.updated, deleted: w.wakeOn.deleted },
        })),
        writes: info.writes.map(kindToWit),
        contract: info.contract,
      };
    },
    // componentize-js takes a { tag, val } result as it is; the generated type says Outcome.
    reconcile: (request: wit.Request) => reconcileWith(controller, request) as unknown as wit.Outcome,
  };
  return exported;
}
