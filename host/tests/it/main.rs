//! The host's integration tests, one binary (each test binary links wasmtime, kube, hyper and
//! rustls; one link instead of twenty). A module per area: `cargo test -p wasmcm --test it
//! deployment::` runs one.

// Each module uses its own part of the shared setup.
#[allow(dead_code)]
mod common;

mod admin;
mod chaos;
mod cli;
mod cluster_files;
mod cronjob;
mod custom_resource;
mod deploy;
mod deployment;
mod docs;
mod engine;
mod ha;
mod host;
mod hostile_host;
mod image;
mod in_cluster;
mod informers;
mod job;
mod leader;
mod least_privilege;
mod lifecycle;
mod plugin_loading;
mod plugin_objects;
mod plugin_oci;
mod python;
mod readme;
mod record;
mod reproducible;
mod sandbox;
mod scaffold;
mod scaffold_python;
mod scaffold_typescript;
mod shards;
mod simulate_cli;
mod stall;
mod tenancy;
mod typescript;
