//! What a resource's storage hooks reach of the server beyond the object they are given: the
//! store, the time and randomness, and the registry of served types. Upstream hands a
//! resource's REST storage these as dependencies (a Service's IP allocators, the CRD
//! registration); here they are one trait that [`State`](crate::state::State) implements, so
//! that the strategies that name the hooks sit below the state in the layering.
//!
//! Owns nothing: the behaviour is the strategies' and the state's.

use serde_json::Value;

use crate::storage::store::Store;

/// The server as a strategy's hooks see it.
pub(crate) trait Cluster {
    fn store(&self) -> &Store;
    /// Now in whole seconds, RFC 3339, as objects are stamped.
    fn now_rfc3339(&self) -> String;
    /// Random bytes, or the next ones of an offline run's seeded sequence.
    fn fill(&self, buf: &mut [u8]);
    /// Serves a CustomResourceDefinition's types as it now says (`present`: it is still
    /// stored), or stops serving them.
    fn serve_crd(&self, crd: &Value, present: bool);
    /// The control plane's crdregistration: an APIService per served custom group-version.
    fn register_crd_groups(&self);
}
