//! Expectations, as kube-controller-manager's `ControllerExpectations` and
//! `UIDTrackingControllerExpectations`, done once for every plugin: after the host creates or
//! deletes children for a key, that key is not reconciled again until the informers have
//! observed those creates and deletes, or the expectations expire (5 minutes). Without this a
//! reconcile that runs before the cache catches up would count too few pods and create
//! duplicates.
//!
//! Creates are counted (their generated names are known only once the API answers, possibly
//! after the watch event arrived); deletes are tracked by object identity. It holds no
//! objects and talks to nothing: the writer records expectations, informer events lower them.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::key::Key;

/// How long unobserved expectations hold a key back (upstream `ExpectationsTimeout`).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5 * 60);

struct Pending {
    creates: i64,
    deletes: HashSet<String>,
    since: Instant,
}

#[derive(Default)]
struct Inner {
    pending: HashMap<Key, Pending>,
    /// Which key expects each deletion, so an informer can report one by identity alone.
    deleting: HashMap<String, Key>,
}

pub struct Expectations {
    inner: Mutex<Inner>,
    timeout: Duration,
}

impl Default for Expectations {
    fn default() -> Self {
        Self::new(TIMEOUT)
    }
}

impl Expectations {
    pub fn new(timeout: Duration) -> Self {
        Expectations { inner: Mutex::new(Inner::default()), timeout }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn entry<'a>(map: &'a mut HashMap<Key, Pending>, key: &Key) -> &'a mut Pending {
        let p = map.entry(key.clone()).or_insert_with(|| Pending {
            creates: 0,
            deletes: HashSet::new(),
            since: Instant::now(),
        });
        p.since = Instant::now();
        p
    }

    /// Before creating `n` children for `key`.
    pub fn expect_creations(&self, key: &Key, n: usize) {
        let mut inner = self.lock();
        Self::entry(&mut inner.pending, key).creates += n as i64;
    }

    /// A child of `key` was seen created, or its create failed (it will never be seen).
    pub fn creation_observed(&self, key: &Key) {
        if let Some(p) = self.lock().pending.get_mut(key) {
            p.creates -= 1;
        }
    }

    /// Before deleting the children identified by `ids` (see `writer::deletion_id`).
    pub fn expect_deletions(&self, key: &Key, ids: impl IntoIterator<Item = String>) {
        let mut inner = self.lock();
        let ids: Vec<String> = ids.into_iter().collect();
        for id in &ids {
            inner.deleting.insert(id.clone(), key.clone());
        }
        Self::entry(&mut inner.pending, key).deletes.extend(ids);
    }

    /// An object was seen deleted, or its delete failed or found it already gone.
    pub fn deletion_observed(&self, id: &str) {
        let mut inner = self.lock();
        let Some(key) = inner.deleting.remove(id) else { return };
        if let Some(p) = inner.pending.get_mut(&key) {
            p.deletes.remove(id);
        }
    }

    /// Whether `key` may be reconciled: nothing outstanding, or waited long enough.
    pub fn satisfied(&self, key: &Key) -> bool {
        let mut inner = self.lock();
        let Some(p) = inner.pending.get(key) else { return true };
        let fulfilled = p.creates <= 0 && p.deletes.is_empty();
        let expired = p.since.elapsed() > self.timeout;
        if expired && !fulfilled {
            tracing::warn!(
                key = key.to_string(),
                creates = p.creates,
                deletes = p.deletes.len(),
                "expectations expired unobserved; reconciling anyway"
            );
        }
        if fulfilled || expired {
            Self::remove(&mut inner, key);
            return true;
        }
        false
    }

    fn remove(inner: &mut Inner, key: &Key) {
        if let Some(p) = inner.pending.remove(key) {
            for id in p.deletes {
                inner.deleting.remove(&id);
            }
        }
    }

    /// The key's object is gone: nothing to wait for.
    pub fn forget(&self, key: &Key) {
        Self::remove(&mut self.lock(), key);
    }

    /// Forgets every key `which` picks: a shard taken over anew expects nothing of what it
    /// expected when this replica last held it.
    pub fn forget_where(&self, which: impl Fn(&Key) -> bool) {
        let mut inner = self.lock();
        let keys: Vec<Key> = inner.pending.keys().filter(|k| which(k)).cloned().collect();
        for key in keys {
            Self::remove(&mut inner, &key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(text: &str) -> Key {
        Key::parse(text).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn creations_hold_the_key_until_observed() {
        let e = Expectations::default();
        assert!(e.satisfied(&k("ns/rs")));
        e.expect_creations(&k("ns/rs"), 3);
        assert!(!e.satisfied(&k("ns/rs")));
        e.creation_observed(&k("ns/rs"));
        e.creation_observed(&k("ns/rs"));
        assert!(!e.satisfied(&k("ns/rs")));
        e.creation_observed(&k("ns/rs"));
        assert!(e.satisfied(&k("ns/rs")));
        assert!(e.satisfied(&k("ns/other")), "keys are independent");
    }

    #[tokio::test(start_paused = true)]
    async fn deletions_are_matched_by_identity() {
        let e = Expectations::default();
        e.expect_deletions(&k("ns/rs"), ["ns/a".to_string(), "ns/b".to_string()]);
        e.deletion_observed("ns/zzz");
        e.deletion_observed("ns/a");
        e.deletion_observed("ns/a");
        assert!(!e.satisfied(&k("ns/rs")), "b is still expected");
        e.deletion_observed("ns/b");
        assert!(e.satisfied(&k("ns/rs")));
    }

    #[tokio::test(start_paused = true)]
    async fn unobserved_expectations_expire_and_forget_clears() {
        let e = Expectations::default();
        e.expect_creations(&k("ns/rs"), 1);
        tokio::time::advance(TIMEOUT - Duration::from_secs(1)).await;
        assert!(!e.satisfied(&k("ns/rs")));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(e.satisfied(&k("ns/rs")));
        e.expect_creations(&k("ns/x"), 2);
        e.forget(&k("ns/x"));
        assert!(e.satisfied(&k("ns/x")));
    }

    #[tokio::test(start_paused = true)]
    async fn new_expectations_restart_the_clock() {
        let e = Expectations::default();
        e.expect_creations(&k("k"), 1);
        tokio::time::advance(TIMEOUT - Duration::from_secs(10)).await;
        e.expect_deletions(&k("k"), ["x".to_string()]);
        tokio::time::advance(Duration::from_secs(20)).await;
        assert!(!e.satisfied(&k("k")), "refreshed by the later expectation");
    }
}
