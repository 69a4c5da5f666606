//! Which plugin versions run, from where, and how one replaces another: manifests (what to
//! run), the loader (bytes to a checked, compiled version), a plugin's rollout (live, shadow,
//! previous, revert) and the reloader (file and ConfigMap watches that offer new versions).
//! It decides versions; running them is the runtime's.

pub(crate) mod loader;
pub(crate) mod manifest;
pub(crate) mod reload;
pub(crate) mod rollout;
