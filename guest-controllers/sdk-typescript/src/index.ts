/**
 * The SDK for writing Kubernetes controllers as wasmcm plugins in TypeScript: the contract
 * (`wit/reconciler.wit`, {@link CONTRACT_VERSION}) as plain TypeScript, the read-only
 * {@link Cache} a controller reads the cluster through (and {@link MemoryCache} for unit tests),
 * and Kubernetes helpers ({@link ownership}, {@link conditions}, {@link finalizer}, {@link json}).
 * `exportPlugin` (from `@wasmcm/guest/component`) makes a {@link Controller} a component. The
 * README builds a first plugin; guide.md explains the model it runs in.
 *
 * @module
 */

export {
  CONTRACT_VERSION,
  Changes,
  Intent,
  Outcome,
  Patch,
  ReconcileError,
  describeIntent,
  intentObject,
  kind,
  kindGroup,
  kindName,
  request,
  sameKind,
} from "./contract.js";
export type {
  Controller,
  Event,
  EventType,
  Kind,
  ObjectRef,
  PatchType,
  PluginInfo,
  Propagation,
  Request,
  Watch,
} from "./contract.js";
export { Cache, Cached, MemoryCache, controllerUid, resource } from "./cache.js";
export type { Resource } from "./cache.js";
export type { Condition, KubeObject, ObjectMeta, OwnerReference } from "./meta.js";
export { Selector } from "./selector.js";
export type { LabelSelector, Operator, Requirement } from "./selector.js";
export { Instant } from "./time.js";
export { log } from "./log.js";
export type { Level } from "./log.js";
export { SandboxError } from "./sandbox.js";
export * as conditions from "./conditions.js";
export * as finalizer from "./finalizer.js";
export * as json from "./json.js";
export * as ownership from "./ownership.js";
