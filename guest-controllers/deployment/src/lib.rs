//! The Deployment controller of kube-controller-manager (`pkg/controller/deployment`), being
//! ported as a wasmcm plugin. So far: `util.rs`, the revision, surge/unavailable, proportional
//! scaling, template-hash and condition helpers the sync, rolling, recreate, progress and
//! rollback logic are built on. It is not exported as a plugin until that logic lands.

pub mod util;
