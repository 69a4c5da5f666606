//! The controller runtime on a live API, as kube-controller-manager's: shared informers, one
//! controller per plugin with its work queue and the expectations its writes raise, leader
//! election or shards (and whether this replica agrees with its group's shape), and the host
//! that starts, leads and stops them. It reaches the cluster through `client` and writes through
//! `writes`.

pub(crate) mod controller;
pub(crate) mod group;
pub(crate) mod host;
pub(crate) mod informers;
pub(crate) mod leader;
pub(crate) mod plugins;
pub(crate) mod queue;
pub(crate) mod shards;
