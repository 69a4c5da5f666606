//! The Deployment controller as a component. The controller is the `wasmcm-deployment`
//! library, which the rollback plugin also builds on; exporting it here keeps the library free
//! of exports, which a component linking it would otherwise export too.

#[cfg(target_arch = "wasm32")]
wasmcm_guest::export_plugin!(wasmcm_deployment::DeploymentController);
