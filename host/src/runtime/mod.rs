//! The controller runtime on a live API, as kube-controller-manager's: shared informers (and
//! the discovery they and the writer resolve kinds with), one controller per plugin with its
//! work queue and expectations, leader election or shards (and whether this replica agrees with
//! its group's shape), and the host that starts, leads and stops them. Connecting to the cluster (in-cluster credentials) starts here too.

pub(crate) mod clients;
pub(crate) mod controller;
pub(crate) mod credentials;
pub(crate) mod discovery;
pub(crate) mod expectations;
pub(crate) mod group;
pub(crate) mod host;
pub(crate) mod informers;
pub(crate) mod leader;
pub(crate) mod queue;
pub(crate) mod rate;
pub(crate) mod shards;
