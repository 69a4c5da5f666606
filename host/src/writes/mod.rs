//! Every write the host makes for a plugin: the writer checks an outcome's intents against what
//! the plugin declared, runs its batches, records PodControl's events and raises the key's
//! expectations (what the informers must see of its writes before it is reconciled again); the
//! kube API performs them on a live cluster (the offline server does for `simulate`), its events
//! correlated as client-go's recorder correlates them.

pub(crate) mod events;
pub(crate) mod expectations;
pub(crate) mod kube;
pub(crate) mod scope;
pub(crate) mod writer;
