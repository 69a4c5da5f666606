//! Which plugin versions run, from where, and how one replaces another: manifests (what to
//! run), Plugin objects (the same, served by the cluster), the loader (bytes to a checked,
//! compiled version), a plugin's rollout (live, shadow, previous, revert), the reloader (file,
//! ConfigMap and object watches that add, swap and remove plugins) and the record of what
//! failed to load.
//! It decides versions; running them is the runtime's.

pub(crate) mod failures;
pub(crate) mod loader;
pub(crate) mod manifest;
pub(crate) mod objects;
pub(crate) mod oci;
pub(crate) mod reload;
pub(crate) mod rollout;
