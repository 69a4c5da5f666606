//! What operators see and do: `/metrics` (the metrics themselves are `metrics`, which every
//! layer records into), `/healthz` and `/readyz`, and the admin endpoint behind
//! `wasmcm plugins list|promote|abandon|record`.

pub(crate) mod admin;
