//! The Deployment controller of kube-controller-manager (`pkg/controller/deployment`) for
//! wasmcm: plain Rust over a cache view, exported as a component by `plugin/`.
//!
//! Files follow upstream's: [`sync`] (syncDeployment, ReplicaSet discovery, scaling, cleanup,
//! status), [`rolling`], [`recreate`], [`progress`], [`rollback`] (revision bookkeeping the
//! rollback plugin builds on) and [`util`].

#[doc(hidden)]
pub mod fixtures;
pub mod progress;
pub mod recreate;
pub mod rollback;
pub mod rolling;
pub mod sync;
pub mod util;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use wasmcm_guest::{CONTRACT_VERSION, Cache, Changes, Controller, Error, Kind, Outcome, PluginInfo, Request, Watch};

pub struct DeploymentController;

impl Controller for DeploymentController {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "deployment".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            primary: Kind::of::<Deployment>(),
            owns: vec![Kind::of::<ReplicaSet>()],
            // Recreate waits until the old pods are gone: a pod's deletion wakes it, as it wakes
            // KCM's deployment controller; every other pod change reaches it as a change of
            // the ReplicaSet's status.
            watches: vec![Watch::new(Kind::of::<Pod>(), Changes::DELETED)],
            // Deployment for its status (and revision annotation); ReplicaSets it creates,
            // scales, adopts, releases and deletes.
            writes: vec![Kind::of::<Deployment>(), Kind::of::<ReplicaSet>()],
            contract: CONTRACT_VERSION.into(),
        }
    }

    fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
        sync::sync(request, cache)
    }
}
