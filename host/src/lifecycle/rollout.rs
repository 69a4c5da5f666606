//! The versions of one running plugin and the moves between them: the live version, a shadow
//! candidate whose writes are compared with the live ones and never performed, the version the
//! live one replaced (kept while the new one is on probation, for auto-revert), and the digests
//! marked bad so the same bytes are not promoted again.
//!
//! It only decides. It does not call plugins, write to the cluster, or touch the queue, caches
//! or expectations: a swap is one pointer changing under a lock, so a reconcile that started on
//! the old version finishes on it and every key stays where it was in the queue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;
use wasmcm_guest::Outcome;

use crate::engine::CallError;
use crate::key::Key;
use crate::lifecycle::loader::Version;
use crate::lifecycle::manifest::RolloutStrategy;
use crate::metrics::{Metrics, PluginLabels, ShadowLabels};
use crate::outcome::outcome_diff;

pub struct Rollout {
    name: String,
    state: Mutex<State>,
    metrics: Arc<Metrics>,
    /// Refuse, instead of holding, a version that declares wider rights.
    strict: bool,
}

struct State {
    live: Arc<Version>,
    live_counts: Counts,
    /// The version `live` replaced, while `live` is on probation.
    previous: Option<Arc<Version>>,
    probation: Option<Probation>,
    shadow: Option<Shadow>,
    /// Digests that were reverted or abandoned, with why, and the version they claimed.
    bad: HashMap<String, (String, String)>,
}

#[derive(Clone, Copy, Default, Serialize)]
pub(crate) struct Counts {
    pub reconciles: u64,
    pub failures: u64,
}

struct Probation {
    reconciles: u64,
    failures: u64,
}

struct Shadow {
    candidate: Arc<Version>,
    started: Instant,
    agreements: u64,
    mismatches: u64,
    /// Why it waits for an operator's promote whatever its comparisons say (it declares more
    /// rights than the live version).
    held: Option<String>,
}

/// What offering a version did.
#[derive(Debug, PartialEq, Eq)]
pub enum Offered {
    /// Same bytes, same manifest entry: nothing to do.
    Unchanged,
    Promoted,
    Shadowing,
    /// It declares rights the live version does not have: it runs in shadow until promoted by
    /// hand.
    Held,
}

/// A newly promoted version that failed too often and was replaced by the one before it.
pub struct Reverted {
    pub from: Arc<Version>,
    pub to: Arc<Version>,
    pub failures: u64,
    pub reconciles: u64,
}

/// How a shadow comparison ended the shadow period, if it did.
#[derive(Debug, PartialEq, Eq)]
pub enum ShadowEnd {
    Promoted,
    Abandoned,
}

/// One version as `wasmcm plugins list` shows it.
#[derive(Serialize)]
pub struct VersionStatus {
    pub version: String,
    pub digest: String,
    /// live, shadow, previous, or failed.
    pub state: &'static str,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconciles: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreements: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mismatches: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Serialize)]
pub struct RolloutStatus {
    pub name: String,
    pub primary: String,
    pub versions: Vec<VersionStatus>,
}

fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

fn describe(v: &Version) -> String {
    format!("{} (sha256 {})", v.plugin.info().version, short(v.plugin.digest()))
}

/// A manifest's `serviceAccount`, as an operator wrote it.
fn account(service_account: &Option<(Option<String>, String)>) -> String {
    match service_account {
        None => "the host's own identity".into(),
        Some((Some(namespace), name)) => format!("ServiceAccount {namespace}/{name}"),
        Some((None, name)) => format!("ServiceAccount {name}"),
    }
}

impl Rollout {
    pub fn new(live: Version, metrics: Arc<Metrics>) -> Self {
        let name = live.name().to_string();
        let state = State {
            live: Arc::new(live),
            live_counts: Counts::default(),
            previous: None,
            probation: None,
            shadow: None,
            bad: HashMap::new(),
        };
        Rollout { name, state: Mutex::new(state), metrics, strict: false }
    }

    /// Under `--strict`, a new version declaring wider rights is refused rather than held.
    pub fn strict(self, strict: bool) -> Self {
        Rollout { strict, ..self }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent state (every update is one
        // assignment), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The version that reconciles now, and the shadow candidate if there is one.
    pub fn current(&self) -> (Arc<Version>, Option<Arc<Version>>) {
        let s = self.lock();
        (s.live.clone(), s.shadow.as_ref().map(|sh| sh.candidate.clone()))
    }

    pub fn live(&self) -> Arc<Version> {
        self.lock().live.clone()
    }

    /// Whether the live or shadow version already is these bytes run this way.
    pub fn is_current(&self, digest: &str, spec: &crate::lifecycle::manifest::PluginSpec) -> bool {
        let s = self.lock();
        let same = |v: &Version| v.plugin.digest() == digest && v.same_spec(spec);
        same(&s.live) || s.shadow.as_ref().is_some_and(|sh| same(&sh.candidate))
    }

    /// Takes a new version of this plugin: refused if its bytes were marked bad or it is not
    /// a version of the same controller; otherwise promoted or shadowed as its manifest says.
    pub fn offer(&self, candidate: Version) -> Result<Offered, String> {
        let mut s = self.lock();
        let digest = candidate.plugin.digest().to_string();
        if let Some((why, _)) = s.bad.get(&digest) {
            return Err(format!("sha256 {digest} was rejected before ({why}); the same bytes are not promoted again"));
        }
        if candidate.same_as(&s.live) || s.shadow.as_ref().is_some_and(|sh| candidate.same_as(&sh.candidate)) {
            return Ok(Offered::Unchanged);
        }
        let (old, new) = (s.live.plugin.info(), candidate.plugin.info());
        if old.primary != new.primary {
            return Err(format!(
                "{} reconciles {}, the running version {}: that is another controller, not a new version of this one",
                describe(&candidate),
                new.primary,
                old.primary
            ));
        }
        // The controller's write client was made for the running version's identity.
        if candidate.spec.service_account != s.live.spec.service_account {
            return Err(format!(
                "{} writes as {}, the running version as {}: a plugin's identity changes only when it is replaced (the reloader stops it and starts the new version)",
                describe(&candidate),
                account(&candidate.spec.service_account),
                account(&s.live.spec.service_account)
            ));
        }
        let changes = capability_changes(old, new);
        if !changes.is_empty() {
            tracing::info!(plugin = %self.name, "{} changes capabilities: {}", describe(&candidate), changes.join("; "));
        }
        let wider: Vec<&str> = changes.iter().map(String::as_str).filter(|c| c.contains(" +")).collect();
        let held = if wider.is_empty() {
            None
        } else if self.strict {
            let rights = wider.join(", ");
            return Err(format!("{} declares wider rights ({rights}); --strict refuses it", describe(&candidate)));
        } else {
            Some(format!("declares wider rights ({}): promote or abandon it by hand", wider.join(", ")))
        };
        if held.is_none() && candidate.spec.rollout == RolloutStrategy::Immediate {
            self.promote_locked(&mut s, Arc::new(candidate));
            return Ok(Offered::Promoted);
        }
        let (what, live) = (describe(&candidate), describe(&s.live));
        let offered = match &held {
            Some(why) => {
                tracing::warn!(plugin = %self.name, "{what} held in shadow beside {live}: {why}");
                Offered::Held
            }
            None => {
                tracing::info!(plugin = %self.name, "{what} runs in shadow beside {live}");
                Offered::Shadowing
            }
        };
        let started = Instant::now();
        s.shadow = Some(Shadow { candidate: Arc::new(candidate), started, agreements: 0, mismatches: 0, held });
        Ok(offered)
    }

    fn promote_locked(&self, s: &mut State, candidate: Arc<Version>) {
        tracing::info!(plugin = %self.name, "promoted {} (was {})", describe(&candidate), describe(&s.live));
        let revert = candidate.spec.revert;
        s.previous = Some(std::mem::replace(&mut s.live, candidate));
        s.live_counts = Counts::default();
        s.probation = (revert.window > 0).then_some(Probation { reconciles: 0, failures: 0 });
        s.shadow = None;
        self.metrics.plugin_swaps.get_or_create(&PluginLabels { plugin: self.name.clone() }).inc();
    }

    /// Promotes the shadow candidate now, whatever its comparisons say.
    pub fn promote(&self) -> Result<String, String> {
        let mut s = self.lock();
        let Some(shadow) = s.shadow.take() else { return Err(format!("plugin {} has no shadow candidate", self.name)) };
        let what = describe(&shadow.candidate);
        self.promote_locked(&mut s, shadow.candidate);
        Ok(format!("promoted {what}"))
    }

    /// Drops the shadow candidate.
    pub fn abandon(&self) -> Result<String, String> {
        let mut s = self.lock();
        let Some(shadow) = s.shadow.take() else { return Err(format!("plugin {} has no shadow candidate", self.name)) };
        tracing::info!(plugin = %self.name, "abandoned shadow candidate {}", describe(&shadow.candidate));
        Ok(format!("abandoned {}", describe(&shadow.candidate)))
    }

    /// Counts a reconcile of `version`; a live version on probation that fails too often is
    /// reverted. Reconciles of a version no longer live (started before a swap) count nowhere.
    pub fn record(&self, version: &Arc<Version>, failed: bool) -> Option<Reverted> {
        let mut s = self.lock();
        if !Arc::ptr_eq(version, &s.live) {
            return None;
        }
        s.live_counts.reconciles += 1;
        s.live_counts.failures += u64::from(failed);
        let revert = version.spec.revert;
        let p = s.probation.as_mut()?;
        p.reconciles += 1;
        p.failures += u64::from(failed);
        let (reconciles, failures) = (p.reconciles, p.failures);
        if failures > revert.max_failures
            && let Some(previous) = s.previous.take()
        {
            let from = std::mem::replace(&mut s.live, previous.clone());
            let why = format!("reverted after {failures} failures in its first {reconciles} reconciles");
            s.bad.insert(from.plugin.digest().to_string(), (why, from.plugin.info().version.clone()));
            s.probation = None;
            s.live_counts = Counts::default();
            self.metrics.plugin_reverts.get_or_create(&PluginLabels { plugin: self.name.clone() }).inc();
            tracing::error!(plugin = %self.name, "{} failed {failures} of its first {reconciles} reconciles; reverted to {}", describe(&from), describe(&previous));
            return Some(Reverted { from, to: previous, failures, reconciles });
        }
        if reconciles >= revert.window {
            // Trusted now: the old version is not needed any more.
            s.probation = None;
            s.previous = None;
        }
        None
    }

    /// Compares what the shadow `candidate` wanted with what the live version did on the same
    /// request; may promote or abandon it.
    pub fn compare(
        &self,
        candidate: &Arc<Version>,
        key: &Key,
        live: &Result<Outcome, CallError>,
        shadow: &Result<Outcome, CallError>,
    ) -> Option<ShadowEnd> {
        let mut s = self.lock();
        let sh = s.shadow.as_mut().filter(|sh| Arc::ptr_eq(&sh.candidate, candidate))?;
        let difference = match (live, shadow) {
            (Ok(a), Ok(b)) => outcome_diff(a, b),
            (Err(a), Err(b)) if a.to_string() == b.to_string() => None,
            (Ok(_), Err(e)) => Some(format!("the candidate failed where the live version did not: {e}")),
            (Err(e), Ok(_)) => Some(format!("the candidate succeeded where the live version failed ({e})")),
            (Err(a), Err(b)) => Some(format!("both failed, differently: live {a}; candidate {b}")),
        };
        let version = candidate.plugin.info().version.clone();
        let result = if difference.is_some() { "mismatch" } else { "agreement" };
        let labels = ShadowLabels { plugin: self.name.clone(), version, result: result.into() };
        self.metrics.shadow_comparisons.get_or_create(&labels).inc();
        let RolloutStrategy::Shadow { agreements, duration, abandon_on_mismatch } = candidate.spec.rollout else {
            return None;
        };
        match difference {
            Some(diff) => {
                sh.mismatches += 1;
                tracing::warn!(plugin = %self.name, key = key.to_string(), "shadow {} disagrees: {diff}", describe(candidate));
                if abandon_on_mismatch {
                    let why = format!("abandoned in shadow: disagreed on {key}: {diff}");
                    s.bad.insert(candidate.plugin.digest().to_string(), (why, candidate.plugin.info().version.clone()));
                    s.shadow = None;
                    tracing::warn!(plugin = %self.name, "abandoned shadow candidate {}", describe(candidate));
                    return Some(ShadowEnd::Abandoned);
                }
                None
            }
            None => {
                sh.agreements += 1;
                let enough = agreements.is_some_and(|n| sh.agreements >= n)
                    || duration.is_some_and(|d: Duration| sh.started.elapsed() >= d);
                if enough && sh.mismatches == 0 && sh.held.is_none() {
                    let candidate = candidate.clone();
                    self.promote_locked(&mut s, candidate);
                    return Some(ShadowEnd::Promoted);
                }
                None
            }
        }
    }

    pub fn status(&self) -> RolloutStatus {
        let s = self.lock();
        let entry = |v: &Version, state: &'static str| VersionStatus {
            version: v.plugin.info().version.clone(),
            digest: v.plugin.digest().to_string(),
            state,
            source: v.spec.source.to_string(),
            reconciles: None,
            failures: None,
            agreements: None,
            mismatches: None,
            reason: None,
        };
        let mut versions = vec![VersionStatus {
            reconciles: Some(s.live_counts.reconciles),
            failures: Some(s.live_counts.failures),
            ..entry(&s.live, "live")
        }];
        if let Some(sh) = &s.shadow {
            versions.push(VersionStatus {
                agreements: Some(sh.agreements),
                mismatches: Some(sh.mismatches),
                reason: sh.held.clone(),
                ..entry(&sh.candidate, if sh.held.is_some() { "held" } else { "shadow" })
            });
        }
        if let Some(p) = &s.previous {
            versions.push(entry(p, "previous"));
        }
        let mut bad: Vec<_> = s.bad.iter().collect();
        bad.sort();
        for (digest, (why, version)) in bad {
            versions.push(VersionStatus {
                version: version.clone(),
                digest: digest.clone(),
                state: "failed",
                source: String::new(),
                reconciles: None,
                failures: None,
                agreements: None,
                mismatches: None,
                reason: Some(why.clone()),
            });
        }
        RolloutStatus { name: self.name.clone(), primary: s.live.plugin.info().primary.to_string(), versions }
    }
}

fn capability_changes(old: &wasmcm_guest::PluginInfo, new: &wasmcm_guest::PluginInfo) -> Vec<String> {
    let mut out = Vec::new();
    let names = |ks: &[wasmcm_guest::Kind]| ks.iter().map(ToString::to_string).collect::<Vec<_>>();
    let watches = |ws: &[wasmcm_guest::Watch]| ws.iter().map(ToString::to_string).collect::<Vec<_>>();
    for (what, a, b) in [
        ("owns", names(&old.owns), names(&new.owns)),
        ("watches", watches(&old.watches), watches(&new.watches)),
        ("writes", names(&old.writes), names(&new.writes)),
    ] {
        for k in b.iter().filter(|k| !a.contains(k)) {
            out.push(format!("{what} +{k}"));
        }
        for k in a.iter().filter(|k| !b.contains(k)) {
            out.push(format!("{what} -{k}"));
        }
    }
    out
}
