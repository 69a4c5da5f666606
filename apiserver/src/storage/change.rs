//! What the store holds and tells: the key of a stored object and the change events watchers
//! receive. Shared by the store and the list/watch filters, which must not depend on each
//! other.

use std::sync::Arc;

use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Key {
    /// "group/resource", e.g. "apps/deployments", "/pods".
    pub id: String,
    pub namespace: String,
    pub name: String,
}

/// What a change did to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// A change as [`crate::Cluster::changes`] tells it.
#[derive(Clone, Debug)]
pub struct StoredChange {
    /// "group/resource": "apps/replicasets", "/pods".
    pub resource: String,
    pub event_type: EventType,
    /// The object after the change (as it was last, for a deletion).
    pub object: Arc<Value>,
    pub resource_version: u64,
}

#[derive(Debug)]
pub(crate) struct Event {
    pub event_type: EventType,
    pub key: Key,
    pub object: Arc<Value>,
    /// The object before this change, so a filtered watch can tell entering from leaving.
    pub prev: Option<Arc<Value>>,
    pub rv: u64,
}
