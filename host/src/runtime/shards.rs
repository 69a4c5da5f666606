//! Active-active replicas: the keys split into a fixed number of shards by a hash of their
//! namespace, each shard a coordination.k8s.io Lease that one replica at a time holds, as
//! kubernetes-controller-sharding assigns objects to shard leases. A Deployment, its
//! ReplicaSets and their pods share a namespace, so they always fall in one shard together
//! (a uid hash would scatter them, and a reconcile reads its owned objects), and KEP-5866's
//! `shardSelector` hashes the namespace the same way (`wasmcm_core::shard`), so a server can
//! hand each replica its shards' objects alone.
//!
//! **One shape per group.** The group's anchor is the leader-election Lease itself
//! (`wasmcm_core::group`): every member renews it in every round, marked with the group's shape
//! (the shard count; the lease duration is its `leaseDurationSeconds`). A replica that finds it
//! held in another shape — by a leader, or by members run with another `--shards` or lease
//! duration — takes nothing and says so (`runtime::group`); it takes the anchor over only once
//! it is released or has not been renewed for its duration. A member extends its fences only in
//! a round in which its own membership and anchor renewals succeeded, so once the anchor has
//! gone unrenewed for its duration, every writer of the old shape is fenced off: a leader and
//! shards, or two shard counts, never write at once, and the shard Leases the old shape left
//! are free to the new one at once.
//!
//! Every replica renews a membership Lease (`<prefix>-member-<identity>`) and, every retry
//! period, reads all the group's Leases in one list (and the anchor). Only the reserved names
//! count; a member is trusted for the group's own lease duration since it was last seen to
//! change, whatever duration its Lease declares. From the live members of its shape each
//! replica computes the same assignment — rendezvous hashing with bounded loads, so no replica
//! is given more than `ceil(shards / members)` and a member joining or leaving moves few shards
//! — and then, per shard:
//!
//! - assigned to it and free (no holder, a holder it has not seen renew within the lease
//!   duration, or a Lease of an earlier shape): it acquires the Lease by compare-and-swap, its
//!   fence for the shard opens, and once its informers hold a list begun after that moment the
//!   shard's keys are taken;
//! - held and still assigned: it renews, extending the shard's fence to the round's start plus
//!   the renew deadline (as the leader's: `runtime::leader`);
//! - held but assigned elsewhere: it stops taking the shard's keys, waits (renewing) until the
//!   reconciles of the shard in flight have finished, closes the fence and releases the Lease,
//!   so the next holder starts only after the last write of this one;
//! - held but not renewed within the renew deadline: the fence has already lapsed, and the
//!   shard is dropped (the process goes on with its other shards).
//!
//! Writes are fenced per shard: every write a key's reconcile causes is judged by the key's
//! shard (`client::clients`). A replica that leaves hands its shards back, and the last member
//! of its shape releases the anchor too, so a group of another shape waiting beside it starts at
//! once.
//!
//! It owns the shard, membership and (while sharded) anchor Leases, the per-shard fences and the
//! [`ShardGate`]; the controllers consult the gate, and the informers follow the held set.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;
use wasmcm_core::group::{self, Shape};

use crate::client::fence::Fence;
use crate::metrics::{Metrics, ShardLabels};
use crate::runtime::group::{Agreement, Standing};
use crate::runtime::leader::{
    LeaderConfig, Observed, claim, group_labels, new_lease, now_micro, released, set_shape, shape_of,
};

/// The label every Lease of a shard group carries (`wasmcm_core::group`'s), valued with the
/// group's prefix.
pub const SHARD_GROUP_LABEL: &str = group::GROUP_LABEL;
/// `group`, `member` or `shard`.
pub const SHARD_ROLE_LABEL: &str = group::ROLE_LABEL;

#[derive(Clone, Debug)]
pub struct ShardConfig {
    /// How many shards the keys split into; every replica must agree.
    pub count: u32,
    /// The Leases' namespace, this replica's identity and the timings (KCM's by default);
    /// `name` is the anchor's name and the prefix of the group's other Leases.
    pub lease: LeaderConfig,
}

impl ShardConfig {
    pub fn shard_lease(&self, index: u32) -> String {
        group::shard_lease(&self.lease.name, index)
    }

    /// The shape this replica is run as.
    pub fn shape(&self) -> Shape {
        Shape::Shards { count: self.count, lease_seconds: self.lease.lease_duration.as_secs() as u32 }
    }
}

/// Which member each shard goes to: rendezvous hashing with bounded loads. Shards in order
/// pick the member that ranks them highest (FNV-1a of `member/shard`) among those below
/// `ceil(count / members)`. Every replica with the same member set computes the same answer.
pub fn assign_shards(count: u32, members: &BTreeSet<String>) -> Vec<Option<String>> {
    if members.is_empty() {
        return vec![None; count as usize];
    }
    let capacity = (count as usize).div_ceil(members.len());
    let mut load: BTreeMap<&str, usize> = members.iter().map(|m| (m.as_str(), 0)).collect();
    (0..count)
        .map(|shard| {
            let mut ranked: Vec<&str> = members.iter().map(String::as_str).collect();
            ranked.sort_by_key(|m| (std::cmp::Reverse(wasmcm_core::shard_hash(&format!("{m}/{shard}"))), *m));
            let chosen = ranked.into_iter().find(|m| load.get(m).is_some_and(|l| *l < capacity))?;
            *load.entry(chosen).or_default() += 1;
            Some(chosen.to_string())
        })
        .collect()
}

/// The group as its Leases tell it, for `wasmcm shards`: the anchor's shape and holder, each
/// shard's holder and how long ago it renewed (shard Leases an earlier shape left are marked),
/// then each member with its shape and the shards it holds; a member whose shape is not the
/// group's is marked: it takes nothing. Holders are escaped for a terminal.
pub fn describe_shards(prefix: &str, anchor: Option<&Lease>, leases: &[Lease], now: jiff::Timestamp) -> String {
    // Whatever a Lease writer put in a holder reaches the operator's terminal escaped.
    let holder = |l: &Lease| {
        let h = l.spec.as_ref().and_then(|s| s.holder_identity.as_deref()).unwrap_or_default();
        crate::terminal::terminal_safe(h).into_owned()
    };
    let age = |l: &Lease| match l.spec.as_ref().and_then(|s| s.renew_time.as_ref()) {
        Some(t) => format!("{:.0}s ago", now.duration_since(t.0).as_secs_f64().max(0.0)),
        None => "never".into(),
    };
    let shape_text = |shape: &Result<Shape, String>| match shape {
        Ok(s) => s.to_string(),
        Err(text) => format!("unknown ({text:?})"),
    };
    let name = |l: &Lease| l.metadata.name.clone().unwrap_or_default();
    let group_shape = anchor.map(shape_of);
    let mut out = match (anchor, &group_shape) {
        (Some(a), Some(shape)) => {
            let h = holder(a);
            let h = if h.is_empty() { "<released>".to_string() } else { h };
            format!("GROUP {prefix}: {}, anchor held by {h}, renewed {}\n\n", shape_text(shape), age(a))
        }
        _ => format!("GROUP {prefix}: no anchor Lease (no replica has taken part yet)\n\n"),
    };
    let count = group_shape.as_ref().and_then(|s| s.as_ref().ok()).and_then(Shape::shards);
    let mut shards: Vec<(u32, &Lease)> =
        leases.iter().filter_map(|l| Some((group::shard_index(prefix, &name(l))?, l))).collect();
    shards.sort_by_key(|(i, _)| *i);
    let mut held: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    out += &format!("{:<6} {:<40} {}\n", "SHARD", "HOLDER", "RENEWED");
    for (i, l) in &shards {
        let h = holder(l);
        let shown = if h.is_empty() { "<none>".to_string() } else { h.clone() };
        let current = count.is_some_and(|c| *i < c) && shape_of(l) == group_shape.clone().unwrap_or(Ok(Shape::Leader));
        let note = if current { "" } else { "   (left by an earlier shape: not in use)" };
        out += &format!("{:<6} {:<40} {}{note}\n", i, shown, age(l));
        if !h.is_empty() && current {
            held.entry(h).or_default().push(*i);
        }
    }
    out += &format!("\n{:<40} {:<28} {:<10} {}\n", "MEMBER", "SHAPE", "RENEWED", "SHARDS");
    let mut members: Vec<(&str, &Lease)> =
        leases.iter().filter_map(|l| Some((group::member_identity(prefix, l.metadata.name.as_deref()?)?, l))).collect();
    members.sort_by_key(|(identity, _)| *identity);
    let mut disagreeing = Vec::new();
    for (identity, l) in members {
        let shape = shape_of(l);
        let mine =
            held.get(identity).map(|v| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")).unwrap_or_default();
        let agrees = group_shape.as_ref().is_none_or(|g| *g == shape);
        let note = if agrees { String::new() } else { "   DISAGREES: takes nothing".to_string() };
        if !agrees {
            disagreeing.push(identity.to_string());
        }
        out += &format!("{:<40} {:<28} {:<10} {}{note}\n", identity, shape_text(&shape), age(l), mine);
    }
    if !disagreeing.is_empty() {
        out += &format!(
            "\n{} replica(s) run in another shape than the group's and take nothing until its replicas have gone: {}\n",
            disagreeing.len(),
            disagreeing.join(", ")
        );
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not held.
    Off,
    /// Held; its keys wait for the informers to list afresh.
    Starting,
    /// Held; its keys are taken.
    On,
    /// Held, being handed over: no new keys, the ones in flight finish.
    Draining,
}

struct Slot {
    state: State,
    /// Bumped at each acquisition, so a late activation of an earlier one is ignored.
    generation: u64,
    in_flight: usize,
}

/// What the controllers ask before taking a key: whether its shard is held and running here,
/// and which reconciles of each shard are in flight (a shard is released only once none is).
pub(crate) struct ShardGate {
    slots: Vec<Mutex<Slot>>,
    idle: Notify,
    /// The shards this replica holds (starting, on or draining): what its informers list.
    held: watch::Sender<BTreeSet<u32>>,
    /// Shards acquired, to be started once the caches are fresh: (shard, generation, when).
    acquired: mpsc::UnboundedSender<(u32, u64, Instant)>,
}

/// One reconcile of a shard in flight; the shard is not released while it lives.
pub(crate) struct InFlight<'a> {
    gate: &'a ShardGate,
    shard: u32,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(mut slot) = self.gate.slot(self.shard) {
            slot.in_flight = slot.in_flight.saturating_sub(1);
        }
        self.gate.idle.notify_waiters();
    }
}

impl ShardGate {
    fn new(count: u32) -> (Arc<ShardGate>, mpsc::UnboundedReceiver<(u32, u64, Instant)>) {
        let (acquired, rx) = mpsc::unbounded_channel();
        let slots =
            (0..count.max(1)).map(|_| Mutex::new(Slot { state: State::Off, generation: 0, in_flight: 0 })).collect();
        let gate = ShardGate { slots, idle: Notify::new(), held: watch::channel(BTreeSet::new()).0, acquired };
        (Arc::new(gate), rx)
    }

    pub(crate) fn count(&self) -> u32 {
        self.slots.len() as u32
    }

    /// The shard of a key's namespace.
    pub(crate) fn shard_of(&self, namespace: &str) -> u32 {
        wasmcm_core::shard_of(namespace, self.count())
    }

    fn slot(&self, shard: u32) -> Option<std::sync::MutexGuard<'_, Slot>> {
        self.slots.get(shard as usize).map(|s| s.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn state(&self, shard: u32) -> State {
        self.slot(shard).map_or(State::Off, |s| s.state)
    }

    /// Whether keys of `namespace` are taken here now.
    pub(crate) fn admits(&self, namespace: &str) -> bool {
        self.state(self.shard_of(namespace)) == State::On
    }

    /// Counts a reconcile of a key in `namespace` in flight, if its shard is taken here; the
    /// check and the count are one step, so a handover never misses it.
    pub(crate) fn enter(&self, namespace: &str) -> Option<InFlight<'_>> {
        let shard = self.shard_of(namespace);
        let mut slot = self.slot(shard)?;
        if slot.state != State::On {
            return None;
        }
        slot.in_flight += 1;
        Some(InFlight { gate: self, shard })
    }

    /// The shards held here, and each change of them.
    pub(crate) fn held(&self) -> watch::Receiver<BTreeSet<u32>> {
        self.held.subscribe()
    }

    /// The shards whose keys are taken here now.
    pub(crate) fn active(&self) -> Vec<u32> {
        (0..self.count()).filter(|s| self.state(*s) == State::On).collect()
    }

    fn set_held(&self, shard: u32, held: bool) {
        self.held.send_if_modified(|set| if held { set.insert(shard) } else { set.remove(&shard) });
    }

    /// Acquired at `at`: held, its keys wait for [`ShardGate::activate`].
    fn start(&self, shard: u32, at: Instant) {
        let Some(mut slot) = self.slot(shard) else { return };
        slot.state = State::Starting;
        slot.generation += 1;
        let generation = slot.generation;
        drop(slot);
        self.set_held(shard, true);
        let _ = self.acquired.send((shard, generation, at));
    }

    /// Takes the shard's keys from now, if it is still the acquisition `generation`.
    pub(crate) fn activate(&self, shard: u32, generation: u64) -> bool {
        let Some(mut slot) = self.slot(shard) else { return false };
        if slot.state != State::Starting || slot.generation != generation {
            return false;
        }
        slot.state = State::On;
        true
    }

    /// Stops taking the shard's keys; true once none is in flight.
    fn drain(&self, shard: u32) -> bool {
        let Some(mut slot) = self.slot(shard) else { return true };
        if slot.state != State::Off {
            slot.state = State::Draining;
        }
        slot.in_flight == 0
    }

    /// Not held any more.
    fn off(&self, shard: u32) {
        if let Some(mut slot) = self.slot(shard) {
            slot.state = State::Off;
        }
        self.set_held(shard, false);
    }

    fn is_held(&self, shard: u32) -> bool {
        self.state(shard) != State::Off
    }

    /// Resolves once no reconcile of any shard is in flight.
    async fn all_idle(&self) {
        loop {
            let idle = self.idle.notified();
            if (0..self.count()).all(|s| self.slot(s).is_none_or(|slot| slot.in_flight == 0)) {
                return;
            }
            idle.await;
        }
    }
}

/// A Lease write decided in one round.
enum Write {
    Create(u32, Lease),
    Acquire(u32, Lease),
    Renew(u32, Lease),
    Release(u32, Lease),
}

pub(crate) struct Shards {
    api: Api<Lease>,
    config: ShardConfig,
    gate: Arc<ShardGate>,
    /// The sharded fence, one per shard.
    fence: Fence,
    /// What was last seen of each Lease of the group (the anchor's by its name), by name.
    seen: BTreeMap<String, Option<Observed>>,
    standing: Standing,
    /// What the leaving round found: the anchor, and whether other members of this shape live.
    parting: Option<(Option<Lease>, bool)>,
    metrics: Arc<Metrics>,
}

impl Shards {
    /// `client` is for Leases alone (no retries of its own: `client::clients`).
    pub(crate) fn new(
        client: kube::Client,
        config: ShardConfig,
        metrics: Arc<Metrics>,
    ) -> (Shards, Arc<ShardGate>, mpsc::UnboundedReceiver<(u32, u64, Instant)>) {
        let (gate, acquired) = ShardGate::new(config.count);
        for shard in 0..gate.count() {
            metrics.shard_held.get_or_create(&ShardLabels { shard: shard.to_string() }).set(0);
        }
        let shards = Shards {
            api: Api::namespaced(client, &config.lease.namespace),
            fence: Fence::sharded(config.count),
            config,
            gate: gate.clone(),
            seen: BTreeMap::new(),
            standing: watch::channel(Agreement::Unknown).0,
            parting: None,
            metrics,
        };
        (shards, gate, acquired)
    }

    pub(crate) fn fence(&self) -> Fence {
        self.fence.clone()
    }

    /// This replica's standing in the group, as each round finds it.
    pub(crate) fn standing(&self) -> watch::Receiver<Agreement> {
        self.standing.subscribe()
    }

    fn shard_fence(&self, shard: u32) -> Fence {
        self.fence.shard(shard).cloned().unwrap_or_else(Fence::closed)
    }

    /// Takes part until `stop` fires, then hands every shard back and leaves the group.
    pub(crate) async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let timeout = self.config.lease.attempt_timeout();
        loop {
            if *stop.borrow() {
                break;
            }
            let round = Instant::now();
            if tokio::time::timeout(timeout, self.round(round, false)).await.is_err() {
                tracing::debug!("shard round timed out");
            }
            self.expire();
            tokio::select! {
                _ = tokio::time::sleep(self.config.lease.retry_period) => {}
                _ = stop.changed() => {}
            }
        }
        self.leave().await;
    }

    /// Shards whose fence lapsed (no renewal within the renew deadline) are dropped.
    fn expire(&mut self) {
        for shard in 0..self.gate.count() {
            if self.gate.is_held(shard) && !self.shard_fence(shard).holds() {
                tracing::warn!(
                    identity = %self.config.lease.identity,
                    shard,
                    "shard lost: could not renew its lease within {:?}",
                    self.config.lease.renew_deadline
                );
                self.lost(shard, "lost");
            }
        }
    }

    fn lost(&self, shard: u32, how: &str) {
        self.shard_fence(shard).close();
        self.gate.off(shard);
        self.held_gauge(shard, false);
        self.handover(how);
    }

    fn held_gauge(&self, shard: u32, held: bool) {
        self.metrics.shard_held.get_or_create(&ShardLabels { shard: shard.to_string() }).set(held as i64);
    }

    fn handover(&self, how: &str) {
        self.metrics.shard_handovers.get_or_create(&crate::metrics::HandoverLabels { kind: how.into() }).inc();
    }

    /// The longest this replica trusts a Lease of the group to stand unrenewed: the duration it
    /// declares, but never more than the group's own (every writer of this shape uses it).
    fn trusted(&self, spec: &LeaseSpec) -> Duration {
        let declared = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(15).max(1) as u64);
        declared.min(self.config.lease.lease_duration)
    }

    /// One round: read the group, renew membership and the anchor, decide and perform each
    /// shard's write. `leaving` hands back every shard (once its reconciles in flight are done).
    async fn round(&mut self, round: Instant, leaving: bool) {
        let Some((by_name, anchor)) = self.read_group().await else { return };
        // A round extends fences only if this replica renewed its membership and the anchor in
        // it: then a group of another shape, which waits for the anchor to go unrenewed for its
        // duration, never starts while a fence of this one holds.
        let standing = !leaving && self.renew_membership(&by_name).await && self.hold_anchor(anchor.clone()).await;
        let members = self.members(&by_name, leaving);
        if leaving {
            self.parting = Some((anchor, !members.is_empty()));
        }
        let assignment = assign_shards(self.config.count, &members);
        let mut writes = Vec::new();
        for shard in 0..self.config.count {
            let wanted = assignment.get(shard as usize).and_then(Option::as_deref) == Some(&self.config.lease.identity);
            writes.extend(self.plan(shard, &by_name, wanted, standing, round));
        }
        if standing {
            self.remove_leftover_shards(&by_name);
        }
        self.send(writes, round).await;
    }

    /// The group's Leases by name (the reserved names only, the anchor apart), noted as seen.
    async fn read_group(&mut self) -> Option<(BTreeMap<String, Lease>, Option<Lease>)> {
        let prefix = self.config.lease.name.clone();
        let selector = format!("{}={prefix}", group::GROUP_LABEL);
        let params = ListParams::default().labels(&selector);
        let (listed, anchor) = tokio::join!(self.api.list(&params), self.api.get_opt(&prefix));
        let (leases, anchor) = match (listed, anchor) {
            (Ok(l), Ok(a)) => (l.items, a),
            (Err(e), _) | (_, Err(e)) => {
                tracing::debug!("reading the shard group's leases: {e}");
                return None;
            }
        };
        // Only the reserved names count, whatever else carries the group's labels.
        let by_name: BTreeMap<String, Lease> = leases
            .into_iter()
            .filter_map(|l| Some((l.metadata.name.clone()?, l)))
            .filter(|(name, _)| *name != prefix && group::is_reserved(&prefix, name))
            .collect();
        for (name, lease) in by_name.iter().chain(anchor.as_ref().map(|a| (&prefix, a))) {
            Observed::see(self.seen.entry(name.clone()).or_default(), &lease.spec.clone().unwrap_or_default());
        }
        self.seen.retain(|name, _| by_name.contains_key(name) || *name == prefix);
        Some((by_name, anchor))
    }

    /// This round's write of `shard`, if any: renew it, release it (assigned elsewhere, and
    /// idle), or acquire it (assigned here, and free); a shard held but found in another's
    /// name is dropped.
    fn plan(
        &mut self,
        shard: u32,
        by_name: &BTreeMap<String, Lease>,
        wanted: bool,
        standing: bool,
        round: Instant,
    ) -> Option<Write> {
        let c = self.config.clone();
        let (me, prefix, mine) = (c.lease.identity.as_str(), c.lease.name.as_str(), c.shape());
        let name = c.shard_lease(shard);
        let lease = by_name.get(&name);
        let holder = lease.and_then(|l| l.spec.as_ref()?.holder_identity.clone()).unwrap_or_default();
        if self.gate.is_held(shard) {
            if holder != me {
                tracing::warn!(shard, holder, "shard lost: its lease names another holder");
                self.lost(shard, "lost");
                return None;
            }
            let lease = lease?;
            if wanted && self.gate.state(shard) == State::Draining {
                // Given back to it before the handover finished: its keys start afresh.
                self.gate.start(shard, round);
            }
            let mut lease = lease.clone();
            let spec = lease.spec.clone().unwrap_or_default();
            if !wanted && self.gate.drain(shard) {
                // Nothing of the shard runs any more: close the fence, then let it go.
                self.shard_fence(shard).close();
                self.gate.off(shard);
                self.held_gauge(shard, false);
                lease.spec = Some(released(&spec));
                return Some(Write::Release(shard, lease));
            }
            if !standing {
                return None;
            }
            lease.spec = Some(claim(&spec, self.seen.entry(name).or_default(), me, c.lease.lease_duration)?);
            return Some(Write::Renew(shard, lease));
        }
        if !(wanted && standing) {
            return None;
        }
        let Some(lease) = lease else {
            let mut lease =
                new_lease(&c.lease.namespace, &name, group_labels(prefix, "shard"), me, c.lease.lease_duration);
            set_shape(&mut lease, mine);
            return Some(Write::Create(shard, lease));
        };
        let mut spec = lease.spec.clone().unwrap_or_default();
        if shape_of(lease) != Ok(mine) {
            // An earlier shape's: its writers were fenced off before the anchor
            // came to this shape, so nobody holds it any more.
            spec.holder_identity = None;
        }
        spec.lease_duration_seconds = Some(self.trusted(&spec).as_secs() as i32);
        let new = claim(&spec, self.seen.entry(name).or_default(), me, c.lease.lease_duration)?;
        let mut lease = lease.clone();
        lease.spec = Some(new);
        set_shape(&mut lease, mine);
        Some(Write::Acquire(shard, lease))
    }

    /// Sends this round's writes together; each one that lands extends, starts or ends its
    /// shard's hold.
    async fn send(&mut self, writes: Vec<Write>, round: Instant) {
        let api = &self.api;
        let sent = futures_util::future::join_all(writes.into_iter().map(|w| async move {
            let result = match &w {
                Write::Create(_, l) => api.create(&PostParams::default(), l).await,
                Write::Acquire(_, l) | Write::Renew(_, l) | Write::Release(_, l) => {
                    let name = l.metadata.name.clone().unwrap_or_default();
                    api.replace(&name, &PostParams::default(), l).await
                }
            };
            (w, result)
        }))
        .await;
        let (me, renew_deadline) = (self.config.lease.identity.clone(), self.config.lease.renew_deadline);
        for (write, result) in sent {
            let written = match result {
                Ok(l) => l,
                Err(e) => {
                    tracing::debug!("writing a shard lease: {e}");
                    continue;
                }
            };
            if let (Some(name), Some(spec)) = (written.metadata.name.clone(), written.spec.as_ref()) {
                Observed::see(self.seen.entry(name).or_default(), spec);
            }
            let until = round + renew_deadline;
            match write {
                Write::Renew(shard, _) => self.shard_fence(shard).extend(until),
                Write::Create(shard, _) | Write::Acquire(shard, _) => {
                    self.shard_fence(shard).extend(until);
                    self.gate.start(shard, round);
                    self.held_gauge(shard, true);
                    self.handover("acquired");
                    tracing::info!(identity = %me, shard, "acquired shard");
                }
                Write::Release(shard, _) => {
                    self.handover("released");
                    tracing::info!(identity = %me, shard, "released shard");
                }
            }
        }
    }

    /// Renews the anchor in this replica's shape, or takes it over once it is free (released,
    /// or not renewed for the duration its holder declared); true if this replica stands in
    /// the group now. Held in another shape, it drops every shard it holds and reports why.
    async fn hold_anchor(&mut self, mut anchor: Option<Lease>) -> bool {
        let c = self.config.clone();
        let (me, prefix, mine) = (c.lease.identity.as_str(), c.lease.name.as_str(), c.shape());
        // Every member renews it in every round: a second try is for the member that renewed
        // it between this round's read and write.
        for _ in 0..2 {
            let written = match anchor.take() {
                None => {
                    let mut lease = new_lease(
                        &c.lease.namespace,
                        prefix,
                        group_labels(prefix, "group"),
                        me,
                        c.lease.lease_duration,
                    );
                    set_shape(&mut lease, mine);
                    self.api.create(&PostParams::default(), &lease).await
                }
                Some(mut lease) => {
                    let spec = lease.spec.clone().unwrap_or_default();
                    let holder = spec.holder_identity.clone().unwrap_or_default();
                    let shape = shape_of(&lease);
                    let term = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(15).max(1) as u64);
                    let fresh = Observed::fresh(self.seen.get(prefix).unwrap_or(&None), term);
                    let ours = shape == Ok(mine);
                    if !ours && !holder.is_empty() && fresh {
                        self.disagree(shape, holder);
                        return false;
                    }
                    let now = now_micro();
                    let mut new = spec.clone();
                    if holder != me {
                        new.acquire_time = Some(now.clone());
                    }
                    if !ours {
                        new.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
                        tracing::info!(identity = %me, "the replica group takes the shape of this replica: {mine}");
                    }
                    new.holder_identity = Some(me.into());
                    new.lease_duration_seconds = Some(c.lease.lease_duration.as_secs() as i32);
                    new.renew_time = Some(now);
                    lease.spec = Some(new);
                    set_shape(&mut lease, mine);
                    lease.metadata.labels.get_or_insert_default().extend(group_labels(prefix, "group"));
                    self.api.replace(prefix, &PostParams::default(), &lease).await
                }
            };
            match written {
                Ok(lease) => {
                    if let Some(spec) = &lease.spec {
                        Observed::see(self.seen.entry(prefix.into()).or_default(), spec);
                    }
                    self.standing.send_replace(Agreement::Agrees(mine));
                    return true;
                }
                Err(kube::Error::Api(e)) if e.code == 409 => match self.api.get_opt(prefix).await {
                    Ok(Some(lease)) => {
                        Observed::see(
                            self.seen.entry(prefix.into()).or_default(),
                            &lease.spec.clone().unwrap_or_default(),
                        );
                        anchor = Some(lease);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::debug!("reading the group's anchor lease: {e}");
                        return false;
                    }
                },
                Err(e) => {
                    tracing::debug!("renewing the group's anchor lease: {e}");
                    return false;
                }
            }
        }
        false
    }

    /// The anchor is held in another shape: this replica takes nothing, and drops what it held
    /// (it could only hold something if its own renewals had failed for a lease duration, its
    /// fences long lapsed).
    fn disagree(&mut self, group: Result<Shape, String>, holder: String) {
        for shard in 0..self.gate.count() {
            if self.gate.is_held(shard) {
                self.lost(shard, "lost");
            }
        }
        let anchor = format!("{}/{}", self.config.lease.namespace, self.config.lease.name);
        self.standing.send_replace(Agreement::Disagrees { anchor, group, holder, mine: self.config.shape() });
    }

    /// Deletes the shard Leases an earlier, larger shape left beyond this one's count.
    fn remove_leftover_shards(&self, by_name: &BTreeMap<String, Lease>) {
        for (name, lease) in by_name {
            if group::shard_index(&self.config.lease.name, name).is_none_or(|i| i < self.config.count) {
                continue;
            }
            let (api, name) = (self.api.clone(), name.clone());
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: lease.metadata.uid.clone(),
                    resource_version: lease.metadata.resource_version.clone(),
                }),
                ..Default::default()
            };
            tokio::spawn(async move {
                if api.delete(&name, &params).await.is_ok() {
                    tracing::info!(lease = name, "removed a shard lease an earlier shape left");
                }
            });
        }
    }

    /// Creates or renews this replica's membership Lease, marked with its shape; true once
    /// renewed in this round.
    async fn renew_membership(&mut self, by_name: &BTreeMap<String, Lease>) -> bool {
        let c = &self.config;
        let name = group::member_lease(&c.lease.name, &c.lease.identity);
        let written = match by_name.get(&name) {
            None => {
                let mut lease = new_lease(
                    &c.lease.namespace,
                    &name,
                    group_labels(&c.lease.name, "member"),
                    &c.lease.identity,
                    c.lease.lease_duration,
                );
                set_shape(&mut lease, c.shape());
                self.api.create(&PostParams::default(), &lease).await
            }
            Some(lease) => {
                let mut lease = lease.clone();
                let spec = lease.spec.clone().unwrap_or_default();
                // Its own: always claimable.
                let Some(new) =
                    claim(&spec, self.seen.entry(name.clone()).or_default(), &c.lease.identity, c.lease.lease_duration)
                else {
                    return false;
                };
                lease.spec = Some(new);
                set_shape(&mut lease, c.shape());
                self.api.replace(&name, &PostParams::default(), &lease).await
            }
        };
        match written {
            Ok(l) => {
                if let Some(spec) = &l.spec {
                    Observed::see(self.seen.entry(name).or_default(), spec);
                }
                true
            }
            Err(e) => {
                tracing::debug!("renewing membership: {e}");
                false
            }
        }
    }

    /// The members of this replica's shape alive as it sees them (itself included unless
    /// leaving): a reserved member Lease whose holder is the identity its name carries, in this
    /// shape, seen renewed within the group's lease duration. Member Leases not renewed for
    /// many lease durations are deleted, so a crashed replica's does not linger.
    fn members(&self, by_name: &BTreeMap<String, Lease>, leaving: bool) -> BTreeSet<String> {
        let c = &self.config;
        let mut members = BTreeSet::new();
        let now = jiff::Timestamp::now();
        for (name, lease) in by_name {
            let Some(identity) = group::member_identity(&c.lease.name, name) else { continue };
            let Some(spec) = &lease.spec else { continue };
            if identity == c.lease.identity || spec.holder_identity.as_deref() != Some(identity) {
                continue;
            }
            let term = self.trusted(spec);
            // At first sight every record looks fresh; one whose own renewTime is long past
            // (by more than any clock skew) is a crashed replica's, not a live one.
            let stale_stamp = spec.renew_time.as_ref().is_some_and(|t| {
                now.duration_since(t.0).as_secs_f64() > (term * 2 + Duration::from_secs(30)).as_secs_f64()
            });
            let seen = self.seen.get(name).unwrap_or(&None);
            if Observed::fresh(seen, term) && !stale_stamp {
                if shape_of(lease) == Ok(c.shape()) {
                    members.insert(identity.to_string());
                }
            } else if stale_stamp || !Observed::fresh(seen, term * 4) {
                let (api, name, uid, rv) = (
                    self.api.clone(),
                    name.clone(),
                    lease.metadata.uid.clone(),
                    lease.metadata.resource_version.clone(),
                );
                tokio::spawn(async move {
                    let params = DeleteParams {
                        preconditions: Some(Preconditions { uid, resource_version: rv }),
                        ..Default::default()
                    };
                    if api.delete(&name, &params).await.is_ok() {
                        tracing::info!(lease = name, "removed a departed member's lease");
                    }
                });
            }
        }
        if !leaving {
            members.insert(c.lease.identity.clone());
        }
        members
    }

    /// Hands every shard back (each once its reconciles in flight are done, bounded by the
    /// attempt timeout), releases the anchor if it is the last member of its shape (so a group
    /// of another shape waiting beside it starts at once) and deletes the membership Lease.
    async fn leave(mut self) {
        let timeout = self.config.lease.attempt_timeout();
        let _ = tokio::time::timeout(timeout, self.gate.all_idle()).await;
        let round = Instant::now();
        if tokio::time::timeout(timeout, self.round(round, true)).await.is_err() {
            tracing::warn!("releasing shards timed out; the others take them once their leases expire");
        }
        for shard in 0..self.gate.count() {
            self.shard_fence(shard).close();
        }
        let (me, prefix) = (self.config.lease.identity.clone(), self.config.lease.name.clone());
        if let Some((Some(mut anchor), false)) = self.parting.take()
            && anchor.spec.as_ref().and_then(|s| s.holder_identity.as_deref()) == Some(me.as_str())
            && shape_of(&anchor) == Ok(self.config.shape())
            && let Some(spec) = anchor.spec.as_mut()
        {
            // A compare-and-swap: a member that renewed it since keeps it.
            *spec = released(spec);
            match tokio::time::timeout(timeout, self.api.replace(&prefix, &PostParams::default(), &anchor)).await {
                Ok(Ok(_)) => tracing::info!(identity = %me, "released the group's anchor lease: the last of its shape"),
                Ok(Err(e)) => tracing::debug!("releasing the anchor: {e}"),
                Err(_) => tracing::debug!("releasing the anchor timed out"),
            }
        }
        let name = group::member_lease(&prefix, &me);
        if let Err(e) = tokio::time::timeout(timeout, self.api.delete(&name, &DeleteParams::default())).await {
            tracing::debug!("leaving the shard group: {e}");
        }
        tracing::info!(identity = %me, "left the shard group");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn every_shard_goes_to_one_member_within_its_fair_share() {
        for n in 1..=6usize {
            let names: Vec<String> = (0..n).map(|i| format!("wasmcm-{i}")).collect();
            let set: BTreeSet<String> = names.iter().cloned().collect();
            let a = assign_shards(32, &set);
            assert!(a.iter().all(|m| m.as_ref().is_some_and(|m| set.contains(m))));
            for m in &names {
                let load = a.iter().filter(|x| x.as_ref() == Some(m)).count();
                assert!(load <= 32usize.div_ceil(n), "{m} holds {load} of 32 among {n}");
            }
            assert_eq!(a, assign_shards(32, &set), "the same members give the same answer");
        }
    }

    #[test]
    fn a_member_joining_moves_few_shards() {
        let before = assign_shards(32, &members(&["a", "b", "c"]));
        let after = assign_shards(32, &members(&["a", "b", "c", "d"]));
        let moved = before.iter().zip(&after).filter(|(x, y)| x != y).count();
        // d's fair share is 8; bounded loads may move a few more to keep everyone at 8.
        assert!((8..=16).contains(&moved), "{moved} shards moved");
    }

    #[test]
    fn a_reconcile_in_flight_holds_its_shard() {
        let (gate, mut acquired) = ShardGate::new(4);
        let ns = "team-a";
        let shard = gate.shard_of(ns);
        assert!(gate.enter(ns).is_none(), "not held");
        gate.start(shard, Instant::now());
        let (s, generation, _) = acquired.try_recv().unwrap();
        assert_eq!(s, shard);
        assert!(gate.enter(ns).is_none(), "held but not yet fresh");
        assert!(gate.activate(shard, generation));
        let running = gate.enter(ns).unwrap();
        assert!(!gate.drain(shard), "a reconcile is in flight");
        assert!(gate.enter(ns).is_none(), "draining takes no new key");
        drop(running);
        assert!(gate.drain(shard));
        gate.off(shard);
        assert!(!gate.activate(shard, generation), "a late activation of an old acquisition is ignored");
    }
}
