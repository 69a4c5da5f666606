//! The TTL-after-finished controller natively: upstream's TestTimeLeft table, and the reconcile.

mod ttl;
