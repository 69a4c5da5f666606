//! The host's way to the API, below everything that uses it: the clients built from the one
//! `kube::Config` the host is given (reads; writes, one per plugin, fenced; the Lease's), the
//! in-cluster credentials a pod runs with, discovery (kinds to the resources serving them,
//! shared by the informers, the writers and `plugins rbac`), and the token bucket that paces
//! clients and retries, and the fence that lets a write out only while this host holds the
//! Lease entitling it; and the probe that says whether the API server can be reached.
//!
//! It knows nothing of plugins, controllers or elections (those open and close the fence).

pub(crate) mod clients;
pub(crate) mod credentials;
pub(crate) mod discovery;
pub(crate) mod fence;
pub(crate) mod rate;
pub(crate) mod reach;
