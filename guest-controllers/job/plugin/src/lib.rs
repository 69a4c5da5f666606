//! The Job controller as a component. The controller is the `wasmcm-job` library (natively
//! tested, and linked by the reconcile bench); exporting it here keeps the library free of
//! exports.

#[cfg(target_arch = "wasm32")]
wasmcm_guest::export_plugin!(wasmcm_job::JobController);
