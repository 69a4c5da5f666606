//! The ReplicaSet controller of kube-controller-manager (`pkg/controller/replicaset`) as a
//! wasmcm plugin: plain Rust over a cache view, exported as a component on wasm32.

#[doc(hidden)]
pub mod fixtures;
pub mod ranking;
pub mod status;
pub mod sync;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use wasmcm_guest::{CONTRACT_VERSION, Cache, Controller, Error, Kind, Outcome, PluginInfo, Request};

pub struct ReplicaSetController;

impl Controller for ReplicaSetController {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "replicaset".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            primary: Kind::of::<ReplicaSet>(),
            owns: vec![Kind::of::<Pod>()],
            watches: vec![],
            // ReplicaSet for its status; Pod for creates, deletes, adoption and release.
            writes: vec![Kind::of::<ReplicaSet>(), Kind::of::<Pod>()],
            contract: CONTRACT_VERSION.into(),
        }
    }

    fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
        sync::sync(request, cache)
    }
}

#[cfg(target_arch = "wasm32")]
wasmcm_guest::export_plugin!(ReplicaSetController);
