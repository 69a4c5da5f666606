//! The TTL-after-finished controller of kube-controller-manager
//! (`pkg/controller/ttlafterfinished`) as a wasmcm plugin: a finished Job (`Complete` or
//! `Failed`) with `spec.ttlSecondsAfterFinished` is deleted, with its pods (foreground), that
//! many seconds after it finished. A plugin of its own beside the Job controller, as upstream
//! keeps it a controller of its own ("for separation of concerns, and because it will be
//! extended to handle other finishable resource types"); [`controller`] follows
//! `ttlafterfinished_controller.go`.

pub mod controller;

use controller::Job;
use wasmcm_guest::{CONTRACT_VERSION, Cache, Controller, Error, Outcome, PluginInfo, Request, Resource};

pub struct TtlAfterFinishedController;

impl Controller for TtlAfterFinishedController {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "ttlafterfinished".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            // Woken by every change of a Job (upstream: adds and updates); the TTL's expiry by
            // the requeue.
            primary: Job::kind(),
            owns: vec![],
            watches: vec![],
            // Deletes only.
            writes: vec![Job::kind()],
            contract: CONTRACT_VERSION.into(),
        }
    }

    fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
        controller::process_job(request, cache)
    }
}

#[cfg(target_arch = "wasm32")]
wasmcm_guest::export_plugin!(TtlAfterFinishedController);
