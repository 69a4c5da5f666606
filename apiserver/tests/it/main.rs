//! The API server's integration tests, one binary (it links no wasmtime): kube-rs and the real
//! kubectl against a running server, and the protobuf schema its build generates. A module per
//! area: `cargo test -p wasmcm-apiserver --test it rbac::` runs one.

mod apply;
mod cluster;
mod crd;
mod kubectl;
mod limits;
mod misc;
mod protobuf;
mod rbac;
mod schema;
mod workloads;
