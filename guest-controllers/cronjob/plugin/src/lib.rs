//! The CronJob controller as a component. The controller is the `wasmcm-cronjob` library
//! (natively tested and benchmarked); exporting it here keeps the library free of exports.

#[cfg(target_arch = "wasm32")]
wasmcm_guest::export_plugin!(wasmcm_cronjob::CronJobController);
