//! The ReplicaSet controller natively, one test binary, a module per area.

mod sync;
