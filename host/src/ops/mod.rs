//! What operators see and do: `/metrics` (the metrics themselves are `metrics`, which every
//! layer records into), `/healthz` and `/readyz`, and the admin endpoint behind
//! `wasmcm plugins list|promote|abandon|record`, the status each replica writes of the Plugin
//! objects it runs, and the promotions and abandons those objects decide.

pub(crate) mod admin;
pub(crate) mod approvals;
pub(crate) mod status;
