/// <reference path="./wasmcm-reconciler-types.d.ts" />
declare module 'wasmcm:reconciler/cache@0.4.0' {
  /**
   * One object, if the cache holds it.
   */
  export function get(kind: Kind, namespace: string, name: string): Object | undefined;
  /**
   * Objects of `kind` in `namespace` (all namespaces if empty) matching `selector`. Costs
   * every object of the namespace: prefer `list-controlled` for what an owner controls.
   */
  export function list(kind: Kind, namespace: string, selector: Selector): Array<Object>;
  /**
   * Objects of `kind` in `namespace` whose controller ownerReference has `owner-uid`, then,
   * when `orphans`, those with no controller at all (candidates for adoption), each group
   * by name. Indexed as client-go's controller-UID index: costs what it returns. (0.3.0)
   */
  export function listControlled(kind: Kind, namespace: string, ownerUid: string, orphans: boolean): Array<Object>;
  export type Kind = import('wasmcm:reconciler/types@0.4.0').Kind;
  export type Object = import('wasmcm:reconciler/types@0.4.0').Object;
  export type Selector = import('wasmcm:reconciler/types@0.4.0').Selector;
}
