//! The work queue of one plugin, with client-go's semantics: a key is queued at most once,
//! never handed to two workers at once (a key added while being processed is queued again
//! when it is done), delayed adds coalesce to the earliest, and retries are paced by the
//! default controller rate limiter: the slower of a per-key exponential backoff (5 ms doubling
//! to 1000 s) and an overall token bucket (10 qps, burst 100).
//!
//! It owns ordering and pacing only; it knows nothing of plugins or the cluster.
//!
//! Written here because no crate has these semantics on its own: kube-runtime's scheduler
//! deduplicates and delays, but its per-key backoff lives in the `Controller` runner's error
//! policy and it has no overall retry bucket, and the general-purpose queue crates neither
//! coalesce keys nor hold back a key while a worker has it.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::client::rate::TokenBucket;
use crate::metrics::{Metrics, QueueLabels};

/// client-go's `DefaultControllerRateLimiter`.
#[derive(Clone, Debug)]
pub struct RateLimit {
    pub base_delay: Duration,
    pub max_delay: Duration,
    pub qps: f64,
    pub burst: u32,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit { base_delay: Duration::from_millis(5), max_delay: Duration::from_secs(1000), qps: 10.0, burst: 100 }
    }
}

struct State<K> {
    queue: VecDeque<K>,
    /// Queued or waiting to be queued again once its processing is done.
    dirty: HashSet<K>,
    processing: HashSet<K>,
    /// Delayed adds: each key once, at its earliest due time.
    /// A delayed key's entry in `by_due`, so that an earlier add replaces it in O(log n).
    delayed: HashMap<K, (Instant, u64)>,
    by_due: BTreeMap<(Instant, u64), K>,
    seq: u64,
    failures: HashMap<K, u32>,
    /// The overall limit on retries, shared by every key.
    bucket: TokenBucket,
    shutting_down: bool,
    /// When each queued key was added, and when each key in flight was handed out.
    added_at: HashMap<K, Instant>,
    started_at: HashMap<K, Instant>,
}

pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    limit: RateLimit,
    wake: Notify,
    idle: Notify,
    metrics: Option<(Arc<Metrics>, QueueLabels)>,
}

impl<K: Clone + Eq + Hash + Ord> WorkQueue<K> {
    pub fn new(limit: RateLimit) -> Self {
        WorkQueue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                delayed: HashMap::new(),
                by_due: BTreeMap::new(),
                seq: 0,
                failures: HashMap::new(),
                bucket: TokenBucket::new(limit.qps, limit.burst),
                shutting_down: false,
                added_at: HashMap::new(),
                started_at: HashMap::new(),
            }),
            limit,
            wake: Notify::new(),
            idle: Notify::new(),
            metrics: None,
        }
    }

    /// Reports client-go's workqueue metrics under `name="<name>"`.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>, name: &str) -> Self {
        let labels = QueueLabels { name: name.to_string() };
        // Every series exists from the start, at zero, as client-go exposes them.
        drop(metrics.queue_adds.get_or_create(&labels));
        drop(metrics.queue_retries.get_or_create(&labels));
        drop(metrics.queue_depth.get_or_create(&labels));
        drop(metrics.queue_duration.get_or_create(&labels));
        drop(metrics.work_duration.get_or_create(&labels));
        drop(metrics.unfinished_work.get_or_create(&labels));
        drop(metrics.longest_running.get_or_create(&labels));
        drop(metrics.keys_in_backoff.get_or_create(&labels));
        self.metrics = Some((metrics, labels));
        self
    }

    /// In-flight work: the total age and the oldest, for the gauges read at scrape time.
    pub fn refresh_metrics(&self) {
        let Some((m, labels)) = &self.metrics else { return };
        let s = self.lock();
        let ages = s.started_at.values().map(|t| t.elapsed().as_secs_f64());
        let (total, longest) = ages.fold((0.0, 0.0f64), |(t, l), a| (t + a, l.max(a)));
        m.unfinished_work.get_or_create(labels).set(total);
        m.longest_running.get_or_create(labels).set(longest);
        m.queue_depth.get_or_create(labels).set(s.queue.len() as i64);
        m.keys_in_backoff.get_or_create(labels).set(s.failures.len() as i64);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `key` now (no-op if already queued, or after shutdown).
    pub fn add(&self, key: K) {
        let mut s = self.lock();
        self.add_locked(&mut s, key);
        drop(s);
        self.wake.notify_one();
    }

    fn add_locked(&self, s: &mut State<K>, key: K) {
        if s.shutting_down || !s.dirty.insert(key.clone()) {
            return;
        }
        if let Some((m, labels)) = &self.metrics {
            m.queue_adds.get_or_create(labels).inc();
        }
        s.added_at.entry(key.clone()).or_insert_with(Instant::now);
        if !s.processing.contains(&key) {
            s.queue.push_back(key);
        }
        self.set_depth(s);
    }

    fn set_depth(&self, s: &State<K>) {
        if let Some((m, labels)) = &self.metrics {
            m.queue_depth.get_or_create(labels).set(s.queue.len() as i64);
        }
    }

    /// Queues `key` after `delay`; of several pending delays for one key the earliest wins.
    pub fn add_after(&self, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let due = Instant::now() + delay;
        let mut s = self.lock();
        if s.shutting_down {
            return;
        }
        if let Some(existing) = s.delayed.get(&key).copied() {
            if existing.0 <= due {
                return;
            }
            s.by_due.remove(&existing);
        }
        s.seq += 1;
        let seq = s.seq;
        s.delayed.insert(key.clone(), (due, seq));
        s.by_due.insert((due, seq), key);
        drop(s);
        // A sleeping worker may need to wake earlier than it planned.
        self.wake.notify_one();
    }

    /// Queues `key` after its rate-limited backoff, counting a failure.
    pub fn add_rate_limited(&self, key: K) {
        if let Some((m, labels)) = &self.metrics {
            m.queue_retries.get_or_create(labels).inc();
        }
        let delay = self.when(&key);
        self.add_after(key, delay);
    }

    /// The backoff for `key`'s next retry: the slower of its exponential backoff and the
    /// overall bucket.
    fn when(&self, key: &K) -> Duration {
        let mut s = self.lock();
        let failures = s.failures.entry(key.clone()).or_insert(0);
        let exp = self.limit.base_delay.as_secs_f64() * 2f64.powi((*failures).min(62) as i32);
        *failures = failures.saturating_add(1);
        let per_item = Duration::from_secs_f64(exp.min(self.limit.max_delay.as_secs_f64()));
        per_item.max(s.bucket.reserve())
    }

    /// Forgets `key`'s failures (after a success).
    pub fn forget(&self, key: &K) {
        self.lock().failures.remove(key);
    }

    pub fn num_requeues(&self, key: &K) -> u32 {
        self.lock().failures.get(key).copied().unwrap_or(0)
    }

    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// The keys waiting to be handed out, in order.
    pub fn queued(&self) -> Vec<K> {
        self.lock().queue.iter().cloned().collect()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Moves due delayed keys into the queue; returns when the next one is due.
    fn promote(&self, s: &mut State<K>, now: Instant) -> Option<Instant> {
        while let Some((&(due, seq), _)) = s.by_due.iter().next() {
            if due > now {
                return Some(due);
            }
            if let Some(key) = s.by_due.remove(&(due, seq)) {
                s.delayed.remove(&key);
                self.add_locked(s, key);
            }
        }
        None
    }

    /// The next key to process, marked as being processed until [`WorkQueue::done`]. `None`
    /// once the queue is shut down: nothing new starts, even if keys are still queued.
    pub async fn get(&self) -> Option<K> {
        loop {
            let wake = self.wake.notified();
            let next_due = {
                let mut s = self.lock();
                if s.shutting_down {
                    return None;
                }
                let next_due = self.promote(&mut s, Instant::now());
                if let Some(key) = s.queue.pop_front() {
                    s.dirty.remove(&key);
                    s.processing.insert(key.clone());
                    let now = Instant::now();
                    if let (Some((m, labels)), Some(added)) = (&self.metrics, s.added_at.remove(&key)) {
                        m.queue_duration.get_or_create(labels).observe(now.duration_since(added).as_secs_f64());
                    }
                    s.started_at.insert(key.clone(), now);
                    self.set_depth(&s);
                    // Others may be waiting on keys that are also ready.
                    if !s.queue.is_empty() {
                        self.wake.notify_one();
                    }
                    return Some(key);
                }
                next_due
            };
            match next_due {
                Some(due) => {
                    tokio::select! {
                        _ = wake => {}
                        _ = tokio::time::sleep_until(due) => {}
                    }
                }
                None => wake.await,
            }
        }
    }

    /// Marks `key` processed; if it was added meanwhile, it is queued again now.
    pub fn done(&self, key: &K) {
        let mut s = self.lock();
        s.processing.remove(key);
        if let (Some((m, labels)), Some(started)) = (&self.metrics, s.started_at.remove(key)) {
            m.work_duration.get_or_create(labels).observe(started.elapsed().as_secs_f64());
        }
        if s.dirty.contains(key) && !s.shutting_down {
            s.queue.push_back(key.clone());
            drop(s);
            self.wake.notify_one();
        } else if s.processing.is_empty() {
            drop(s);
            self.idle.notify_waiters();
        }
    }

    /// Stops handing out keys and waits for the ones in flight to be done.
    pub async fn shut_down_and_drain(&self) {
        self.lock().shutting_down = true;
        self.wake.notify_waiters();
        loop {
            let idle = self.idle.notified();
            if self.lock().processing.is_empty() {
                return;
            }
            idle.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn q() -> Arc<WorkQueue<&'static str>> {
        Arc::new(WorkQueue::new(RateLimit::default()))
    }

    #[tokio::test(start_paused = true)]
    async fn keys_are_deduplicated_and_served_in_order() {
        let q = q();
        for k in ["a", "b", "a", "c", "b"] {
            q.add(k);
        }
        assert_eq!(q.len(), 3);
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(q.get().await, Some("b"));
        assert_eq!(q.get().await, Some("c"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_is_never_processed_twice_at_once() {
        let q = q();
        q.add("a");
        let first = q.get().await.unwrap();
        q.add("a");
        q.add("b");
        // "a" is being processed: its new add waits, "b" is served.
        assert_eq!(q.get().await, Some("b"));
        assert!(q.is_empty());
        q.done(&first);
        assert_eq!(q.get().await, Some("a"), "re-queued once done");
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_adds_coalesce_to_the_earliest() {
        let q = q();
        let start = Instant::now();
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(3));
        q.add_after("a", Duration::from_secs(7));
        q.add_after("b", Duration::from_secs(5));
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        q.done(&"a");
        assert_eq!(q.get().await, Some("b"));
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        let nothing = tokio::time::timeout(Duration::from_secs(60), q.get()).await;
        assert!(nothing.is_err(), "the later delays of \"a\" were coalesced away");
    }

    #[tokio::test(start_paused = true)]
    async fn retries_back_off_exponentially_until_forgotten() {
        let q = q();
        let mut delays = Vec::new();
        for _ in 0..5 {
            let start = Instant::now();
            q.add_rate_limited("a");
            let k = q.get().await.unwrap();
            delays.push(start.elapsed().as_millis());
            q.done(&k);
        }
        assert_eq!(delays, vec![5, 10, 20, 40, 80]);
        assert_eq!(q.num_requeues(&"a"), 5);
        q.forget(&"a");
        let start = Instant::now();
        q.add_rate_limited("a");
        q.get().await.unwrap();
        assert_eq!(start.elapsed().as_millis(), 5);
    }

    #[test]
    fn the_per_key_backoff_is_capped_and_the_bucket_limits_bursts() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        rt.block_on(async {
            let q: WorkQueue<u32> = WorkQueue::new(RateLimit::default());
            for _ in 0..40 {
                q.when(&7);
            }
            assert_eq!(q.when(&7), Duration::from_secs(1000));
            // 100 first failures of distinct keys pass the bucket at once; then 10 per second.
            let q: WorkQueue<u32> = WorkQueue::new(RateLimit::default());
            let delays: Vec<Duration> = (0..102).map(|k| q.when(&k)).collect();
            assert!(delays[..100].iter().all(|d| *d == Duration::from_millis(5)));
            assert_eq!(delays[100], Duration::from_millis(100));
            assert_eq!(delays[101], Duration::from_millis(200));
        });
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_starts_nothing_new_and_waits_for_work_in_flight() {
        let q = q();
        q.add("a");
        q.add("b");
        let a = q.get().await.unwrap();
        let drained = {
            let q = q.clone();
            tokio::spawn(async move { q.shut_down_and_drain().await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!drained.is_finished(), "waits for \"a\" to be done");
        assert_eq!(q.get().await, None, "\"b\" is not started");
        q.add("c");
        q.done(&a);
        drained.await.unwrap();
        assert_eq!(q.get().await, None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_workers_see_each_key_once_per_add() {
        let q: Arc<WorkQueue<u32>> = Arc::new(WorkQueue::new(RateLimit::default()));
        let busy = Arc::new(Mutex::new(HashSet::new()));
        let seen = Arc::new(Mutex::new(0u32));
        let workers: Vec<_> = (0..5)
            .map(|_| {
                let (q, busy, seen) = (q.clone(), busy.clone(), seen.clone());
                tokio::spawn(async move {
                    while let Some(k) = q.get().await {
                        assert!(busy.lock().unwrap().insert(k), "key {k} processed twice at once");
                        tokio::task::yield_now().await;
                        busy.lock().unwrap().remove(&k);
                        *seen.lock().unwrap() += 1;
                        q.done(&k);
                    }
                })
            })
            .collect();
        for round in 0..50 {
            for k in 0..20 {
                q.add(k);
            }
            if round % 10 == 0 {
                tokio::task::yield_now().await;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        q.shut_down_and_drain().await;
        for w in workers {
            w.await.unwrap();
        }
        let n = *seen.lock().unwrap();
        assert!((20..=1000).contains(&n), "{n}");
    }
}
