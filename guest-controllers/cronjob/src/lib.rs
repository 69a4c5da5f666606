//! The CronJob controller of kube-controller-manager (`pkg/controller/cronjob`) for wasmcm: plain
//! Rust over a cache view, exported as a component by `plugin/`.
//!
//! Files follow upstream's: [`sync`] (`cronjob_controllerv2.go`: the reconcile, history cleanup,
//! the schedule decision, Replace and Forbid, status) and [`utils`] (`utils.go`: schedule times,
//! the "too many missed start times" rule, Job names and templates). Schedules are parsed and
//! stepped by `wasmcm_core::cron` (robfig/cron v3's rules), which the API server's validation
//! shares; time zones come from jiff's database, bundled into the component.

pub mod api;
#[doc(hidden)]
pub mod fixtures;
pub mod sync;
pub mod utils;

use api::{CronJob, Job};
use wasmcm_guest::{CONTRACT_VERSION, Cache, Controller, Error, Outcome, PluginInfo, Request, Resource};

pub struct CronJobController;

impl Controller for CronJobController {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "cronjob".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            primary: CronJob::kind(),
            // Every change of a Job it controls wakes it: a Job finishing frees a Forbid
            // schedule, moves lastSuccessfulTime and may pass a history limit.
            owns: vec![Job::kind()],
            watches: vec![],
            // CronJob for its status; the Jobs it creates and deletes.
            writes: vec![CronJob::kind(), Job::kind()],
            contract: CONTRACT_VERSION.into(),
        }
    }

    fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
        sync::sync(request, cache)
    }
}
