//! The Deployment controller natively, one test binary: a module per area (`cargo test -p
//! wasmcm-deployment --test it sync::` runs one).

// Each module uses its own part of the world.
#[allow(dead_code)]
mod common;

mod progress;
mod rollout;
mod sync;
