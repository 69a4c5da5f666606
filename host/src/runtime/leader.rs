//! Leader election on a coordination.k8s.io/v1 Lease, as client-go's `leaderelection`: acquire
//! when the lease is free or its holder has not renewed within the lease duration (judged by
//! when *we* saw the record last change, so clocks need not agree), renew every retry period,
//! and give up at once when a renewal has not succeeded within the renew deadline. Releasing on
//! shutdown empties the holder so a standby takes over without waiting.
//!
//! Unlike client-go, it fences: the [`Fence`] (`client::fence`) says until when this process
//! may write, the start of its last successful renewal plus the renew deadline, and the write
//! clients check it immediately before each request is sent (`client::clients`). No lease call can outlast it:
//! each attempt is bounded by half the renew deadline (as KCM's leader-election client's
//! timeout) and by the fence, and the lease client never retries on its own. A standby takes
//! over no sooner than a lease duration after it last saw a renewal, which the renewal's start
//! precedes, so a write the fence lets out has the difference (15 s - 10 s with KCM's
//! defaults) to arrive before anyone else may lead.
//!
//! The Lease is also the replica group's anchor (`wasmcm_core::group`): a leader writes its shape
//! (`leader`) on it, and a candidate that finds it held by a sharded group reports that it
//! disagrees (`runtime::group`) and, while it does, keeps a member Lease of its own so that
//! `wasmcm shards` shows it. Only an anchor released, or not renewed for its duration, is taken:
//! a sharded group renews it in every round, so a leader and shards never write at once.
//!
//! It owns the Lease, opens and closes the fence, and owns a `leading` signal; what runs while
//! leading is the host's business.
//!
//! Written here because the kube-rs crates for it differ where it matters: kube-leader-election
//! and kube-lease-manager judge expiry from the timestamps in the record against the local
//! clock, and neither has a renew deadline after which a leader stops at once on its own.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::time::Instant;
use wasmcm_core::group::{self, Shape};

use crate::client::fence::Fence;
use crate::runtime::group::{Agreement, Standing};

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

/// What we last saw of a Lease's holder and renewal, and when: expiry is judged by when *we*
/// saw the record last change, so clocks need not agree.
pub(crate) struct Observed {
    holder: String,
    renew: Option<MicroTime>,
    at: Instant,
}

impl Observed {
    /// Notes `spec` as seen now, if it changed since it was last seen.
    pub(crate) fn see(seen: &mut Option<Observed>, spec: &LeaseSpec) {
        let holder = spec.holder_identity.clone().unwrap_or_default();
        if seen.as_ref().is_none_or(|o| o.holder != holder || o.renew != spec.renew_time) {
            *seen = Some(Observed { holder, renew: spec.renew_time.clone(), at: Instant::now() });
        }
    }

    /// Whether the holder we saw has renewed within `duration` of now.
    pub(crate) fn fresh(seen: &Option<Observed>, duration: Duration) -> bool {
        seen.as_ref().is_some_and(|o| o.at.elapsed() < duration)
    }
}

/// The spec that makes `identity` the holder of a Lease read as `spec`, or `None` while
/// another holder's renewal is fresh as we saw it (client-go's `tryAcquireOrRenew`).
pub(crate) fn claim(
    spec: &LeaseSpec,
    seen: &mut Option<Observed>,
    identity: &str,
    duration: Duration,
) -> Option<LeaseSpec> {
    Observed::see(seen, spec);
    let holder = spec.holder_identity.clone().unwrap_or_default();
    let term = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(15).max(1) as u64);
    if !holder.is_empty() && holder != identity && Observed::fresh(seen, term) {
        return None;
    }
    let now = now_micro();
    let mut new = spec.clone();
    if holder != identity {
        new.acquire_time = Some(now.clone());
        new.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + if holder.is_empty() { 0 } else { 1 });
    }
    new.holder_identity = Some(identity.into());
    new.lease_duration_seconds = Some(duration.as_secs() as i32);
    new.renew_time = Some(now);
    Some(new)
}

/// A new Lease held by `identity`.
pub(crate) fn new_lease(
    namespace: &str,
    name: &str,
    labels: BTreeMap<String, String>,
    identity: &str,
    duration: Duration,
) -> Lease {
    let now = now_micro();
    Lease {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            labels: Some(labels).filter(|l| !l.is_empty()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(identity.into()),
            lease_duration_seconds: Some(duration.as_secs() as i32),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    }
}

/// The shape `lease` declares (its annotation and duration).
pub(crate) fn shape_of(lease: &Lease) -> Result<Shape, String> {
    let annotation = lease.metadata.annotations.as_ref().and_then(|a| a.get(group::SHAPE_ANNOTATION));
    Shape::of_lease(annotation.map(String::as_str), lease.spec.as_ref().and_then(|s| s.lease_duration_seconds))
}

/// Marks `lease` as written under `shape`.
pub(crate) fn set_shape(lease: &mut Lease, shape: Shape) {
    lease.metadata.annotations.get_or_insert_default().insert(group::SHAPE_ANNOTATION.into(), shape.annotation());
}

/// The labels of a group's Lease of `role` (`group`, `member` or `shard`).
pub(crate) fn group_labels(prefix: &str, role: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(group::GROUP_LABEL.into(), prefix.into()), (group::ROLE_LABEL.into(), role.into())])
}

/// `spec` given up: no holder, so a candidate takes it at once.
pub(crate) fn released(spec: &LeaseSpec) -> LeaseSpec {
    LeaseSpec { holder_identity: None, lease_duration_seconds: Some(1), renew_time: Some(now_micro()), ..spec.clone() }
}

pub(crate) struct Elector {
    api: Api<Lease>,
    config: LeaderConfig,
    fence: Fence,
    leading: watch::Sender<bool>,
    observed: Option<Observed>,
    standing: Standing,
    /// The member Lease this candidate keeps while it disagrees with a sharded group (its
    /// resourceVersion, for the renewal's compare-and-swap).
    member: Option<Lease>,
}

pub(crate) fn now_micro() -> MicroTime {
    MicroTime(jiff::Timestamp::now())
}

impl Elector {
    /// `client` is for the Lease alone: no retries of its own (`client::clients`).
    pub(crate) fn new(client: kube::Client, config: LeaderConfig, fence: Fence) -> Self {
        Elector {
            api: Api::namespaced(client, &config.namespace),
            config,
            fence,
            leading: watch::channel(false).0,
            observed: None,
            standing: watch::channel(Agreement::Unknown).0,
            member: None,
        }
    }

    /// This candidate's standing in the group, as each attempt finds it.
    pub(crate) fn standing(&self) -> watch::Receiver<Agreement> {
        self.standing.subscribe()
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
                self.show_disagreement(false).await;
                return true;
            }
            if self.attempt().await {
                break;
            }
            let disagrees = matches!(*self.standing.borrow(), Agreement::Disagrees { .. });
            self.show_disagreement(disagrees).await;
            tokio::select! {
                _ = tokio::time::sleep(self.config.retry_period) => {}
                _ = stop.changed() => {}
            }
        }
        self.show_disagreement(false).await;
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
        let current = match self.api.get_opt(&c.name).await {
            Ok(l) => l,
            Err(e) => {
                tracing::debug!("reading lease {}: {e}", c.name);
                return false;
            }
        };
        let Some(mut lease) = current else {
            let mut lease = new_lease(&c.namespace, &c.name, BTreeMap::new(), &c.identity, c.lease_duration);
            set_shape(&mut lease, Shape::Leader);
            let created = self.api.create(&PostParams::default(), &lease).await.is_ok();
            if created {
                self.standing.send_replace(Agreement::Agrees(Shape::Leader));
            }
            return created;
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let Some(new_spec) = claim(&spec, &mut self.observed, &c.identity, c.lease_duration) else {
            // Held by another: a leader (a standby waits, as client-go's), or a sharded group
            // renewing it in every round, beside which this candidate must not lead.
            let standing = match shape_of(&lease) {
                Ok(Shape::Leader) => Agreement::Agrees(Shape::Leader),
                group => Agreement::Disagrees {
                    anchor: format!("{}/{}", c.namespace, c.name),
                    group,
                    holder: spec.holder_identity.clone().unwrap_or_default(),
                    mine: Shape::Leader,
                },
            };
            self.standing.send_replace(standing);
            return false;
        };
        lease.spec = Some(new_spec.clone());
        set_shape(&mut lease, Shape::Leader);
        // The resourceVersion makes this a compare-and-swap: of two candidates, one wins.
        match self.api.replace(&c.name, &PostParams::default(), &lease).await {
            Ok(_) => {
                Observed::see(&mut self.observed, &new_spec);
                self.standing.send_replace(Agreement::Agrees(Shape::Leader));
                true
            }
            Err(e) => {
                tracing::debug!("updating lease {}: {e}", c.name);
                false
            }
        }
    }

    /// Keeps (`shown`) or removes this candidate's member Lease, so that `wasmcm shards` lists
    /// a leader-elected replica waiting beside a sharded group. Best effort: without the right
    /// to create Leases (leader election alone needs only its own) the other reports remain.
    async fn show_disagreement(&mut self, shown: bool) {
        let c = &self.config;
        let name = group::member_lease(&c.name, &c.identity);
        let timeout = c.attempt_timeout();
        if !shown {
            if self.member.take().is_some() {
                let _ = tokio::time::timeout(timeout, self.api.delete(&name, &Default::default())).await;
            }
            return;
        }
        let mut lease = match self.member.take() {
            Some(mut lease) => {
                let spec = lease.spec.clone().unwrap_or_default();
                lease.spec = Some(LeaseSpec { renew_time: Some(now_micro()), ..spec });
                lease
            }
            None => new_lease(&c.namespace, &name, group_labels(&c.name, "member"), &c.identity, c.lease_duration),
        };
        set_shape(&mut lease, Shape::Leader);
        let written = match lease.metadata.resource_version {
            Some(_) => tokio::time::timeout(timeout, self.api.replace(&name, &PostParams::default(), &lease)).await,
            None => tokio::time::timeout(timeout, self.api.create(&PostParams::default(), &lease)).await,
        };
        match written {
            Ok(Ok(l)) => self.member = Some(l),
            Ok(Err(kube::Error::Api(e))) if e.code == 409 => {
                // Left by an earlier run of this identity: read it again for the next round.
                self.member = self.api.get_opt(&name).await.ok().flatten();
            }
            Ok(Err(e)) => tracing::debug!("member lease {name}: {e}"),
            Err(_) => tracing::debug!("member lease {name}: timed out"),
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
        *spec = released(spec);
        match self.api.replace(&self.config.name, &PostParams::default(), &lease).await {
            Ok(_) => tracing::info!(identity = %self.config.identity, "released the lease"),
            Err(e) => tracing::warn!("releasing the lease: {e}"),
        }
    }
}
