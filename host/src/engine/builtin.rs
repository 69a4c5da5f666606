//! The plugins that ship inside the host binary, built from `guest-controllers/` by the
//! build script.

/// (name, component bytes) of each built-in plugin.
pub const BUILTINS: &[(&str, &[u8])] = &[
    ("replicaset", include_bytes!(concat!(env!("WASMCM_GUEST_DIR"), "/wasmcm_replicaset.wasm"))),
    ("deployment", include_bytes!(concat!(env!("WASMCM_GUEST_DIR"), "/wasmcm_deployment_plugin.wasm"))),
    ("rollback", include_bytes!(concat!(env!("WASMCM_GUEST_DIR"), "/wasmcm_rollback.wasm"))),
    ("job", include_bytes!(concat!(env!("WASMCM_GUEST_DIR"), "/wasmcm_job_plugin.wasm"))),
    ("cronjob", include_bytes!(concat!(env!("WASMCM_GUEST_DIR"), "/wasmcm_cronjob_plugin.wasm"))),
    ("ttlafterfinished", include_bytes!(concat!(env!("WASMCM_GUEST_DIR"), "/wasmcm_ttlafterfinished.wasm"))),
];

pub fn get(name: &str) -> Option<&'static [u8]> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|(n, _)| *n)
}
