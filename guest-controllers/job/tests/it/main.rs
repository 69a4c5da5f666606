//! The Job controller natively, one test binary: a module per area of upstream's tests
//! (`cargo test -p wasmcm-job --test it sync::` runs one).

// Each module uses its own part of the world.
#[allow(dead_code)]
mod common;

mod backoff;
mod indexed;
mod job_controller;
mod pod_failure_policy;
mod policies;
mod success_policy;
mod sync;
