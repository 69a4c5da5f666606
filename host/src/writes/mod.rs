//! Every write the host makes for a plugin: the writer checks an outcome's intents against what
//! the plugin declared, runs its batches and records expectations and PodControl's events; the
//! kube API performs them on a live cluster (the offline server does for `simulate`).

pub(crate) mod kube;
pub(crate) mod scope;
pub(crate) mod writer;
