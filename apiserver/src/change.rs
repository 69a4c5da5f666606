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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
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
