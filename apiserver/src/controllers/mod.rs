//! The server's own loops, as kube-controller-manager's and the kubelet's that a real cluster
//! runs beside its API server: the simulated scheduler and kubelet (`kubelet`), the garbage
//! and namespace collector (`gc`), the disruption controller (`disruption`), and the control
//! plane's objects (`control_plane`: its namespaces, endpoints, APIServices). Each writes
//! through the registry's verbs, as any client.

pub(crate) mod control_plane;
pub(crate) mod disruption;
pub(crate) mod gc;
pub(crate) mod kubelet;
