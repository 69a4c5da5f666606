/// <reference path="./interfaces/wasmcm-reconciler-cache.d.ts" />
/// <reference path="./interfaces/wasmcm-reconciler-controller.d.ts" />
/// <reference path="./interfaces/wasmcm-reconciler-log.d.ts" />
/// <reference path="./interfaces/wasmcm-reconciler-types.d.ts" />
declare module 'wasmcm:reconciler/plugin@0.4.0' {
  export type * as WasmcmReconcilerCache040 from 'wasmcm:reconciler/cache@0.4.0'; // import wasmcm:reconciler/cache@0.4.0
  export type * as WasmcmReconcilerLog040 from 'wasmcm:reconciler/log@0.4.0'; // import wasmcm:reconciler/log@0.4.0
  export type * as WasmcmReconcilerTypes040 from 'wasmcm:reconciler/types@0.4.0'; // import wasmcm:reconciler/types@0.4.0
  export * as controller from 'wasmcm:reconciler/controller@0.4.0'; // export wasmcm:reconciler/controller@0.4.0
}
