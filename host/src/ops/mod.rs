//! What operators see and do: Prometheus metrics, `/healthz` and `/readyz`, and the admin
//! endpoint behind `wasmcm plugins list|promote|abandon`.

pub(crate) mod admin;
pub(crate) mod metrics;
