//! Leader election on a coordination.k8s.io/v1 Lease, as client-go's `leaderelection`: acquire
//! when the lease is free or its holder has not renewed within the lease duration (judged by
//! when *we* saw the record last change, so clocks need not agree), renew every retry period,
//! and give up at once when a renewal has not succeeded within the renew deadline. Releasing on
//! shutdown empties the holder so a standby takes over without waiting.
//!
//! Unlike client-go, it fences: the [`Fence`] says until when this process may write, the start
//! of its last successful renewal plus the renew deadline, and the write clients check it
//! immediately before each request is sent (`runtime::clients`). No lease call can outlast it:
//! each attempt is bounded by half the renew deadline (as KCM's leader-election client's
//! timeout) and by the fence, and the lease client never retries on its own. A standby takes
//! over no sooner than a lease duration after it last saw a renewal, which the renewal's start
//! precedes, so a write the fence lets out has the difference (15 s - 10 s with KCM's
//! defaults) to arrive before anyone else may lead.
//!
//! It owns the Lease, the fence and a `leading` signal; what runs while leading is the host's
//! business.
//!
//! Written here because the kube-rs crates for it differ where it matters: kube-leader-election
//! and kube-lease-manager judge expiry from the timestamps in the record against the local
//! clock, and neither has a renew deadline after which a leader stops at once on its own.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, PostParams};
use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

#[derive(Clone, Debug)]
pub struct LeaderConfig {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

/// Who this host is in the Lease, in events and in its User-Agent: its pod's name (downward API
/// `POD_NAME`), else `wasmcm-` and a random suffix, so two processes never share an identity.
pub fn default_identity() -> String {
    if let Ok(pod) = std::env::var("POD_NAME")
        && !pod.is_empty()
    {
        return pod;
    }
    let mut suffix = [0u8; 4];
    let _ = getrandom::fill(&mut suffix);
    format!("wasmcm-{}", hex::encode(suffix))
}

impl LeaderConfig {
    /// kube-controller-manager's defaults: 15 s lease, 10 s renew deadline, 2 s retry.
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        LeaderConfig {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// How long one acquire-or-renew attempt may take, all its calls together.
    pub(crate) fn attempt_timeout(&self) -> Duration {
        self.renew_deadline / 2
    }
}

/// Until when this process may write: checked immediately before every write is sent.
#[derive(Clone, Debug)]
pub struct Fence {
    /// `None`: not leading.
    until: Arc<Mutex<Option<Instant>>>,
    /// Without election, always open.
    always: bool,
}

impl Fence {
    /// Open for good: a host that does not elect writes whenever it likes.
    pub fn open() -> Fence {
        Fence { until: Arc::default(), always: true }
    }

    /// Closed until an elector opens it.
    pub(crate) fn closed() -> Fence {
        Fence { until: Arc::default(), always: false }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.until.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a write may be sent now.
    pub fn holds(&self) -> bool {
        self.always || self.lock().is_some_and(|until| Instant::now() < until)
    }

    fn until(&self) -> Option<Instant> {
        *self.lock()
    }

    fn extend(&self, until: Instant) {
        *self.lock() = Some(until);
    }

    fn close(&self) {
        *self.lock() = None;
    }
}

/// What we last saw of the lease, and when.
struct Observed {
    holder: String,
    renew: Option<MicroTime>,
    at: Instant,
}

pub(crate) struct Elector {
    api: Api<Lease>,
    config: LeaderConfig,
    fence: Fence,
    leading: watch::Sender<bool>,
    observed: Option<Observed>,
}

fn now_micro() -> MicroTime {
    MicroTime(jiff::Timestamp::now())
}

impl Elector {
    /// `client` is for the Lease alone: no retries of its own (`runtime::clients`).
    pub(crate) fn new(client: kube::Client, config: LeaderConfig, fence: Fence) -> Self {
        Elector {
            api: Api::namespaced(client, &config.namespace),
            config,
            fence,
            leading: watch::channel(false).0,
            observed: None,
        }
    }

    /// True while this process holds the lease.
    pub(crate) fn leading(&self) -> watch::Receiver<bool> {
        self.leading.subscribe()
    }

    /// One acquire-or-renew attempt, bounded; on success the fence opens until the renew
    /// deadline after the attempt began.
    async fn attempt(&mut self) -> bool {
        let started = Instant::now();
        let bound = match self.fence.until() {
            Some(until) => until.min(started + self.config.attempt_timeout()),
            None => started + self.config.attempt_timeout(),
        };
        match tokio::time::timeout_at(bound, self.try_acquire_or_renew()).await {
            Ok(true) => {
                self.fence.extend(started + self.config.renew_deadline);
                true
            }
            Ok(false) => false,
            Err(_) => {
                tracing::debug!(lease = %self.config.name, "acquire or renew timed out");
                false
            }
        }
    }

    /// Campaigns until leading, then renews until `stop` fires (releasing the lease) or the
    /// fence expires without a renewal (leadership lost: returns false).
    pub(crate) async fn run(mut self, mut stop: watch::Receiver<bool>) -> bool {
        loop {
            if *stop.borrow() {
                return true;
            }
            if self.attempt().await {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(self.config.retry_period) => {}
                _ = stop.changed() => {}
            }
        }
        tracing::info!(identity = %self.config.identity, lease = %self.config.name, "became leader");
        self.leading.send_replace(true);
        loop {
            let until = self.fence.until().unwrap_or_else(Instant::now);
            tokio::select! {
                _ = tokio::time::sleep(self.config.retry_period) => {}
                _ = tokio::time::sleep_until(until) => {}
                _ = stop.changed() => {
                    self.fence.close();
                    self.leading.send_replace(false);
                    self.release().await;
                    return true;
                }
            }
            if !self.attempt().await && !self.fence.holds() {
                self.fence.close();
                tracing::error!(identity = %self.config.identity, "leadership lost: could not renew within {:?}", self.config.renew_deadline);
                self.leading.send_replace(false);
                return false;
            }
        }
    }

    async fn try_acquire_or_renew(&mut self) -> bool {
        let c = &self.config;
        let now = now_micro();
        let current = match self.api.get_opt(&c.name).await {
            Ok(l) => l,
            Err(e) => {
                tracing::debug!("reading lease {}: {e}", c.name);
                return false;
            }
        };
        let Some(mut lease) = current else {
            let lease: Lease = match serde_json::from_value(json!({
                "metadata": {"name": c.name, "namespace": c.namespace},
                "spec": {"holderIdentity": c.identity, "leaseDurationSeconds": c.lease_duration.as_secs(),
                         "acquireTime": now, "renewTime": now, "leaseTransitions": 0},
            })) {
                Ok(l) => l,
                Err(_) => return false,
            };
            return self.api.create(&PostParams::default(), &lease).await.is_ok();
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let changed = self.observed.as_ref().is_none_or(|o| o.holder != holder || o.renew != spec.renew_time);
        if changed {
            self.observed =
                Some(Observed { holder: holder.clone(), renew: spec.renew_time.clone(), at: Instant::now() });
        }
        let held_by_other = !holder.is_empty() && holder != c.identity;
        let duration = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(15).max(1) as u64);
        if held_by_other && self.observed.as_ref().is_some_and(|o| o.at.elapsed() < duration) {
            return false;
        }
        let mut new_spec = spec.clone();
        if holder != c.identity {
            new_spec.acquire_time = Some(now.clone());
            new_spec.lease_transitions =
                Some(spec.lease_transitions.unwrap_or(0) + if holder.is_empty() { 0 } else { 1 });
        }
        new_spec.holder_identity = Some(c.identity.clone());
        new_spec.lease_duration_seconds = Some(c.lease_duration.as_secs() as i32);
        new_spec.renew_time = Some(now);
        lease.spec = Some(new_spec.clone());
        // The resourceVersion makes this a compare-and-swap: of two candidates, one wins.
        match self.api.replace(&c.name, &PostParams::default(), &lease).await {
            Ok(_) => {
                self.observed =
                    Some(Observed { holder: c.identity.clone(), renew: new_spec.renew_time, at: Instant::now() });
                true
            }
            Err(e) => {
                tracing::debug!("updating lease {}: {e}", c.name);
                false
            }
        }
    }

    /// Gives the lease up so a standby need not wait for it to expire.
    async fn release(&self) {
        if tokio::time::timeout(self.config.attempt_timeout(), self.try_release()).await.is_err() {
            tracing::warn!("releasing the lease timed out; a standby takes over once it expires");
        }
    }

    async fn try_release(&self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.config.name).await else { return };
        let Some(spec) = lease.spec.as_mut() else { return };
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now_micro());
        match self.api.replace(&self.config.name, &PostParams::default(), &lease).await {
            Ok(_) => tracing::info!(identity = %self.config.identity, "released the lease"),
            Err(e) => tracing::warn!("releasing the lease: {e}"),
        }
    }
}
