//! The Job controller of kube-controller-manager (`pkg/controller/job`) for wasmcm: plain Rust
//! over a cache view, exported as a component by `plugin/`.
//!
//! Files follow upstream's: [`sync`] (`job_controller.go`: syncJob, manageJob, status
//! tracking), [`backoff_utils`], [`indexed_job_utils`], [`pod_failure_policy`],
//! [`success_policy`], [`tracking_utils`] and [`util`] (`util/utils.go`).

pub mod backoff_utils;
#[doc(hidden)]
pub mod fixtures;
pub mod indexed_job_utils;
pub mod pod_failure_policy;
pub mod success_policy;
pub mod sync;
pub mod tracking_utils;
pub mod util;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use wasmcm_guest::{CONTRACT_VERSION, Cache, Controller, Error, Kind, Outcome, PluginInfo, Request};

pub struct JobController;

impl Controller for JobController {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "job".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            primary: Kind::of::<Job>(),
            // Every change of a pod it controls wakes its Job (upstream's addPod, updatePod,
            // deletePod); an orphan wakes the Jobs whose selector matches it, for adoption.
            owns: vec![Kind::of::<Pod>()],
            watches: vec![],
            // Job for its status; Pods it creates, patches (adoption, release, the tracking
            // finalizer) and deletes.
            writes: vec![Kind::of::<Job>(), Kind::of::<Pod>()],
            contract: CONTRACT_VERSION.into(),
        }
    }

    fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
        sync::sync(request, cache)
    }
}
