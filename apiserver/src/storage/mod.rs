//! Storage, as etcd and the watch cache are upstream's: the objects by key with their
//! resourceVersions and change history (`store`), the change events watchers get (`change`),
//! and what a list or watch selects by (`query`). Knows nothing of kinds: what an object means
//! is the registry's.

pub(crate) mod change;
pub(crate) mod query;
pub(crate) mod store;
