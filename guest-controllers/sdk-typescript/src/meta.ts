/**
 * The shapes of Kubernetes JSON the SDK's helpers read and write: `metav1.ObjectMeta`,
 * `OwnerReference` and `Condition`, and a generic object. Structural, so the full types of a
 * package such as `kubernetes-types` fit them. Types only: no code.
 *
 * @module
 */

/** `metav1.OwnerReference`. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** The fields of `metav1.ObjectMeta` the SDK uses; objects carry more. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: { [key: string]: string };
  annotations?: { [key: string]: string };
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
}

/** Any Kubernetes object: `apiVersion`, `kind`, `metadata`, and whatever its kind has. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/** `metav1.Condition`, as status conditions are kept (`meta.SetStatusCondition`). */
export interface Condition {
  type: string;
  /** `True`, `False` or `Unknown`. */
  status: string;
  /** When `status` last changed: a Kubernetes timestamp (`Instant.toTime()`). */
  lastTransitionTime: string;
  /** UpperCamelCase. */
  reason: string;
  message: string;
  observedGeneration?: number;
}
