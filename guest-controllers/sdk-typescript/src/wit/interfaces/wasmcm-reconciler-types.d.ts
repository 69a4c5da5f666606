declare module 'wasmcm:reconciler/types@0.4.0' {
  /**
   * A Kubernetes object as JSON (`{"apiVersion":..,"kind":..,"metadata":..}`).
   */
  export type Object = string;
  /**
   * A kind as the API names it: `apiVersion` ("v1", "apps/v1") and `kind` ("Pod").
   */
  export interface Kind {
    apiVersion: string,
    kind: string,
  }
  /**
   * One object by name; `namespace` is empty for cluster-scoped kinds.
   */
  export interface ObjectRef {
    kind: Kind,
    namespace: string,
    name: string,
  }
  /**
   * # Variants
   * 
   * ## `"in"`
   * 
   * ## `"not-in"`
   * 
   * ## `"exists"`
   * 
   * ## `"does-not-exist"`
   */
  export type Operator = 'in' | 'not-in' | 'exists' | 'does-not-exist';
  export interface Requirement {
    key: string,
    operator: Operator,
    values: Array<string>,
  }
  /**
   * A label selector, as metav1.LabelSelector. Empty (no labels, no expressions) selects
   * everything.
   */
  export interface Selector {
    matchLabels: Array<[string, string]>,
    matchExpressions: Array<Requirement>,
  }
  /**
   * A point in time, Unix seconds and nanoseconds (as wasi:clocks/wall-clock).
   */
  export interface Instant {
    seconds: bigint,
    nanoseconds: number,
  }
}
