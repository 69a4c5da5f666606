//! Deployment rollback as a wasmcm plugin, separate from the deployment controller.
//!
//! Two ways to go back to an earlier template, both built on the revision bookkeeping of
//! [`wasmcm_deployment::rollback`]:
//!
//! - **On request**, as upstream kube-controller-manager did for extensions/v1beta1's
//!   `spec.rollbackTo`: the annotation [`TO_REVISION_ANNOTATION`] (or upstream's round-trip
//!   annotation `deprecated.deployment.rollback.to`) names a revision, `0` for the previous one.
//!   The plugin copies that revision's template onto the deployment, removes the annotation and
//!   records `DeploymentRollback`, `DeploymentRollbackRevisionNotFound` or
//!   `DeploymentRollbackTemplateUnchanged`. A paused deployment keeps the annotation until it is
//!   resumed.
//! - **On failure**, opted into with [`ON_FAILURE_ANNOTATION`]` = "true"`: the plugin records the
//!   last revision that became fully available ([`LAST_AVAILABLE_REVISION_ANNOTATION`]) and, when
//!   a rollout exceeds its progress deadline, rolls back to it once, remembering the revision that
//!   failed ([`FAILED_REVISION_ANNOTATION`]) so that it never rolls back from it again.
//!
//! Every change is one update of the Deployment (the deployment controller then makes the
//! target ReplicaSet the new one); the event about it comes in a later batch, so it is only
//! recorded when the update went through.

pub mod sync;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use wasmcm_guest::{CONTRACT_VERSION, Cache, Changes, Controller, Error, Kind, Outcome, PluginInfo, Request, Watch};

/// Every annotation this plugin reads or writes starts with this.
pub const ANNOTATION_PREFIX: &str = "rollback.wasmcm.dev/";
/// `"<N>"`: roll back to revision N now (`"0"`: the previous revision). Removed once handled.
pub const TO_REVISION_ANNOTATION: &str = "rollback.wasmcm.dev/to-revision";
/// `"true"`: roll back automatically when a rollout exceeds its progress deadline.
pub const ON_FAILURE_ANNOTATION: &str = "rollback.wasmcm.dev/on-failure";
/// The revision of the last template that became fully available (automatic mode only).
pub const LAST_AVAILABLE_REVISION_ANNOTATION: &str = "rollback.wasmcm.dev/last-available-revision";
/// The newest revision whose progress-deadline failure has been handled (automatic mode only).
pub const FAILED_REVISION_ANNOTATION: &str = "rollback.wasmcm.dev/failed-revision";

pub struct RollbackController;

impl Controller for RollbackController {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "rollback".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            primary: Kind::of::<Deployment>(),
            owns: vec![],
            // Revisions and templates live on the ReplicaSets; the deployment controller owns
            // them. A request is a change of the Deployment, so no ReplicaSet change wakes it.
            watches: vec![Watch::new(Kind::of::<ReplicaSet>(), Changes::NONE)],
            // The template, the annotations and nothing else.
            writes: vec![Kind::of::<Deployment>()],
            contract: CONTRACT_VERSION.into(),
        }
    }

    fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
        sync::sync(request, cache)
    }
}

#[cfg(target_arch = "wasm32")]
wasmcm_guest::export_plugin!(RollbackController);
