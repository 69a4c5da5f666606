//! The fence: until when this process may write. A write client checks it immediately before
//! each request is sent (`client::clients`), so a host that no longer holds the Lease entitling
//! a write (the leader's, or its shard's), or could not renew it in time, sends nothing.
//!
//! A leader's fence is one deadline for every write, the start of its last successful renewal
//! plus the renew deadline (`runtime::leader`); a sharded host's is one per shard
//! (`runtime::shards`), and a write is judged by the shard of the key whose reconcile sends it
//! ([`Fence::for_key`]), else by the namespace in its path. A host without election writes
//! whenever it likes ([`Fence::open`]).
//!
//! It owns the deadlines only: the elector and the shard loop open, extend and close them.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

/// Until when this process may write: checked immediately before every write is sent.
///
/// A leader's fence is one deadline for every write; a sharded host's is one per shard, and a
/// write is judged by the shard of the namespace in its path (`runtime::shards`).
#[derive(Clone, Debug)]
pub struct Fence(Kind);

#[derive(Clone, Debug)]
enum Kind {
    /// Without election: always open.
    Open,
    /// `None`: not leading.
    Until(Arc<Mutex<Option<Instant>>>),
    /// One fence per shard, by `shard_of(namespace, len)`.
    Shards(Arc<[Fence]>),
}

impl Fence {
    /// Open for good: a host that does not elect writes whenever it likes.
    pub fn open() -> Fence {
        Fence(Kind::Open)
    }

    /// Closed until an elector opens it.
    pub(crate) fn closed() -> Fence {
        Fence(Kind::Until(Arc::default()))
    }

    /// A fence per shard, each closed until its shard's Lease is acquired.
    pub(crate) fn sharded(count: u32) -> Fence {
        Fence(Kind::Shards((0..count.max(1)).map(|_| Fence::closed()).collect()))
    }

    /// The fence of shard `index` of a sharded fence.
    pub(crate) fn shard(&self, index: u32) -> Option<&Fence> {
        match &self.0 {
            Kind::Shards(fences) => fences.get(index as usize),
            _ => None,
        }
    }

    fn lock(&self) -> Option<std::sync::MutexGuard<'_, Option<Instant>>> {
        match &self.0 {
            Kind::Until(until) => Some(until.lock().unwrap_or_else(|e| e.into_inner())),
            _ => None,
        }
    }

    /// Whether a write may be sent now: for a sharded fence, whether any shard is held.
    pub fn holds(&self) -> bool {
        match &self.0 {
            Kind::Open => true,
            Kind::Until(_) => self.lock().is_some_and(|until| until.is_some_and(|u| Instant::now() < u)),
            Kind::Shards(fences) => fences.iter().any(Fence::holds),
        }
    }

    /// The fence a request to `path` is judged by: for a sharded fence, that of the shard of
    /// the key whose reconcile sends it ([`Fence::for_key`]), else of the namespace the path
    /// names (`""` for cluster-scoped objects); else this one.
    pub(crate) fn for_path(&self, path: &str) -> Fence {
        match &self.0 {
            Kind::Shards(fences) => {
                let count = fences.len() as u32;
                let shard = KEY_NAMESPACE
                    .try_with(|namespace| wasmcm_core::shard_of(namespace, count))
                    .unwrap_or_else(|_| wasmcm_core::shard_of(namespace_of_path(path), count));
                fences.get(shard as usize).cloned().unwrap_or_else(Fence::closed)
            }
            _ => self.clone(),
        }
    }

    /// Runs `writes` as the writes of the key in `namespace`: a sharded fence judges each of
    /// them by the key's shard, the shard the replica took the key in, even where the object
    /// written lies elsewhere (a cluster-scoped one, an event).
    pub(crate) async fn for_key<F: std::future::Future>(namespace: &str, writes: F) -> F::Output {
        KEY_NAMESPACE.scope(namespace.to_string(), writes).await
    }

    pub(crate) fn until(&self) -> Option<Instant> {
        self.lock().and_then(|u| *u)
    }

    pub(crate) fn extend(&self, until: Instant) {
        if let Some(mut u) = self.lock() {
            *u = Some(until);
        }
    }

    pub(crate) fn close(&self) {
        if let Some(mut u) = self.lock() {
            *u = None;
        }
    }
}

tokio::task_local! {
    /// The namespace of the key whose reconcile is writing (`Fence::for_key`).
    static KEY_NAMESPACE: String;
}

/// The namespace a request path names: `/api/v1/namespaces/<ns>/…` or
/// `/apis/<group>/<version>/namespaces/<ns>/…`; `""` for cluster-scoped paths. A Namespace
/// object's own path names it too, so it falls in its own shard.
pub(crate) fn namespace_of_path(path: &str) -> &str {
    let mut parts = path.trim_start_matches('/').split('/');
    let skip = match parts.next() {
        Some("api") => 1,
        Some("apis") => 2,
        _ => return "",
    };
    let mut parts = parts.skip(skip);
    match (parts.next(), parts.next()) {
        (Some("namespaces"), Some(ns)) => ns,
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Two namespaces in different shards of 4.
    fn apart() -> (&'static str, &'static str) {
        let names = ["team-a", "team-b", "team-c", "team-d", "team-e", "team-f", "team-g", "team-h"];
        let shard = |ns: &str| wasmcm_core::shard_of(ns, 4);
        let held = names.iter().find(|n| shard(n) != shard("")).expect("eight names are not all in one shard");
        let other = names.iter().find(|n| shard(n) != shard(held) && shard(n) != shard(""));
        (held, other.expect("eight names span three shards of four"))
    }

    /// A write a key's reconcile causes is judged by the key's shard, wherever the object lies:
    /// a cluster-scoped object (`""`'s shard) or another namespace's event. Without the key it is
    /// judged by its path, as the host's own writes are.
    #[tokio::test]
    async fn a_keys_writes_are_fenced_by_the_keys_shard() {
        let (held, other) = apart();
        let fence = Fence::sharded(4);
        fence.shard(wasmcm_core::shard_of(held, 4)).unwrap().extend(Instant::now() + Duration::from_secs(60));
        let cluster_scoped = "/apis/rbac.authorization.k8s.io/v1/clusterroles/x";
        let elsewhere = format!("/api/v1/namespaces/{other}/events");
        assert!(!fence.for_path(cluster_scoped).holds(), "the shard of \"\" is not held");
        let judged = Fence::for_key(held, async {
            (fence.for_path(cluster_scoped).holds(), fence.for_path(&elsewhere).holds())
        })
        .await;
        assert_eq!(judged, (true, true), "the key's shard is held: its writes go");
        let judged =
            Fence::for_key(other, async { fence.for_path(&format!("/api/v1/namespaces/{held}/pods")).holds() }).await;
        assert!(!judged, "a key of a shard not held writes nothing, even into a held shard's namespace");
    }
}
