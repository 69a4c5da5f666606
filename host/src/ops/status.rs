//! What the host replicas say of the Plugin objects they run, in each object's status. Each
//! replica keeps its own entry of `status.replicas` (state, version and digest, since when,
//! reconciles and failures, the generation it acted on, why it is not ready) with server-side
//! apply under a field manager of its own, and removes it when it stops. The summary (version,
//! digest, state, ready, candidate, conditions, observedGeneration) is computed from every
//! replica's entry and applied under the manager all replicas share, so whichever writes last
//! writes what all of them see; each replica looks again every `COUNTERS_EVERY`, so a summary
//! written from an object that lacked another replica's latest entry does not stay. Written at
//! a bounded rate: a changed state at most every second, counters and the summary check at
//! most every `COUNTERS_EVERY` (a summary only when it differs). A plugin that fails to load is also
//! a Warning Event on its object, once per failure.
//!
//! Reads the running plugins, the load failures and the objects; writes Plugin status and
//! Events only, through a client of its own (any replica writes: status is not fenced).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::lifecycle::failures::LoadFailures;
use crate::lifecycle::objects::{PluginObjects, plugin_resource};
use crate::runtime::plugins::Plugins;

/// How often the status is looked at.
const TICK: Duration = Duration::from_secs(1);
/// How often counters alone are written.
const COUNTERS_EVERY: Duration = Duration::from_secs(10);
/// The field manager every replica writes the summary under.
const SUMMARY_MANAGER: &str = "wasmcm";

/// One replica's entry for one plugin, as written.
#[derive(Clone, Debug, PartialEq)]
struct Said {
    entry: Value,
    /// The entry without its counters: a change of it is written at once.
    state: Value,
    at: tokio::time::Instant,
}

pub struct StatusWriter {
    api: Api<DynamicObject>,
    events: Api<k8s_openapi::api::events::v1::Event>,
    identity: String,
    manager: String,
    objects: Arc<PluginObjects>,
    plugins: Arc<Plugins>,
    failures: Arc<LoadFailures>,
    /// What this replica last wrote, by plugin, and since when each runs its live digest.
    said: BTreeMap<String, Said>,
    since: BTreeMap<String, (String, String)>,
    /// Failures already told as an Event, by plugin.
    told: BTreeMap<String, String>,
}

impl StatusWriter {
    pub fn new(
        client: kube::Client,
        identity: &str,
        objects: Arc<PluginObjects>,
        plugins: Arc<Plugins>,
        failures: Arc<LoadFailures>,
    ) -> StatusWriter {
        // A field manager is at most 128 characters.
        let manager: String = format!("wasmcm-replica-{identity}").chars().take(128).collect();
        StatusWriter {
            api: Api::all_with(client.clone(), &plugin_resource()),
            events: Api::namespaced(client, "default"),
            identity: identity.into(),
            manager,
            objects,
            plugins,
            failures,
            said: BTreeMap::new(),
            since: BTreeMap::new(),
            told: BTreeMap::new(),
        }
    }

    /// Writes until `stop` turns true, then removes this replica's entries.
    pub async fn run(mut self, mut stop: tokio::sync::watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => self.write().await,
                _ = stop.changed() => break,
            }
        }
        let names: Vec<String> = self.said.keys().cloned().collect();
        for name in names {
            self.withdraw(&name).await;
        }
    }

    /// One look: each object's entry written if it changed (counters: if old enough), entries
    /// of objects this replica no longer has anything to say of withdrawn.
    async fn write(&mut self) {
        let (specs, invalid) = self.objects.specs();
        let mut now = BTreeMap::new();
        for spec in &specs {
            now.insert(spec.name.clone(), self.entry(&spec.name, spec.enabled));
        }
        for e in invalid.iter().filter_map(|e| e.plugin.clone()) {
            now.insert(e.clone(), self.entry(&e, true));
        }
        let gone: Vec<String> = self.said.keys().filter(|n| !now.contains_key(*n)).cloned().collect();
        for name in gone {
            self.withdraw(&name).await;
        }
        for (name, entry) in now {
            let state = without_counters(&entry);
            // Also every COUNTERS_EVERY unchanged: the summary another replica wrote from an
            // object that lacked this replica's last entry is put right (it is written only
            // when it differs).
            let due = match self.said.get(&name) {
                None => true,
                Some(s) if s.state != state => s.at.elapsed() >= TICK,
                Some(s) => s.at.elapsed() >= COUNTERS_EVERY,
            };
            if due && self.apply(&name, &entry).await {
                self.said.insert(name, Said { entry, state, at: tokio::time::Instant::now() });
            }
        }
    }

    /// This replica's entry for plugin `name`.
    fn entry(&mut self, name: &str, enabled: bool) -> Value {
        let generation = self.objects.get(name).map(|e| e.generation).unwrap_or(0);
        let mut entry = json!({"identity": self.identity, "observedGeneration": generation});
        let failed = self.failures.list().into_iter().find(|f| f.plugin == name);
        let running = self.plugins.get(name);
        match (running, failed) {
            (_, Some(f)) => {
                entry["state"] = "Failed".into();
                entry["reason"] = f.reason.as_str().into();
                entry["message"] = f.message.clone().into();
                self.tell(name, f.reason.as_str(), &f.message);
            }
            (Some(c), None) => {
                let status = c.rollout().status();
                let live = status.versions.iter().find(|v| v.state == "live");
                let candidate = status.versions.iter().find(|v| matches!(v.state, "shadow" | "held"));
                if let Some(live) = live {
                    let since = self.since.entry(name.to_string()).or_insert_with(|| (String::new(), String::new()));
                    if since.0 != live.digest {
                        *since = (live.digest.clone(), wasmcm_core::now_rfc3339());
                    }
                    entry["version"] = live.version.clone().into();
                    entry["digest"] = format!("sha256:{}", live.digest).into();
                    entry["since"] = since.1.clone().into();
                    entry["reconciles"] = live.reconciles.unwrap_or(0).into();
                    entry["failures"] = live.failures.unwrap_or(0).into();
                }
                entry["state"] = match (candidate, c.cache_status()) {
                    (Some(v), _) if v.state == "held" => {
                        entry["reason"] = "Held".into();
                        entry["message"] = v.reason.clone().unwrap_or_default().into();
                        "Progressing".into()
                    }
                    (Some(_), _) => {
                        entry["reason"] = "Shadowing".into();
                        "Progressing".into()
                    }
                    (None, Err(why)) => {
                        entry["reason"] = "NotSynced".into();
                        entry["message"] = why.into();
                        "Progressing".into()
                    }
                    (None, Ok(())) => {
                        entry["reason"] = "Synced".into();
                        "Ready".into()
                    }
                };
                if let Some(v) = candidate {
                    entry["candidate"] = json!({"version": v.version, "digest": format!("sha256:{}", v.digest)});
                }
            }
            (None, None) if !enabled => entry["state"] = "Disabled".into(),
            (None, None) => {
                entry["state"] = "Pending".into();
                entry["reason"] = "Loading".into();
            }
        }
        entry
    }

    /// Applies this replica's entry, then the summary of every replica's. False if it failed
    /// (tried again at the next look).
    async fn apply(&self, name: &str, entry: &Value) -> bool {
        let body = json!({
            "apiVersion": "wasmcm.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": name},
            "status": {"replicas": [entry]},
        });
        let own = PatchParams::apply(&self.manager).force();
        let object = match self.api.patch_status(name, &own, &Patch::Apply(&body)).await {
            Ok(o) => o,
            Err(e) => {
                tracing::debug!(plugin = %name, "writing its status: {e}");
                return false;
            }
        };
        self.summarize(name, &object).await;
        true
    }

    /// Removes this replica's entry (it stops, or has nothing more to say of the plugin).
    async fn withdraw(&mut self, name: &str) {
        self.said.remove(name);
        let body =
            json!({"apiVersion": "wasmcm.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": name}, "status": {}});
        match self.api.patch_status(name, &PatchParams::apply(&self.manager).force(), &Patch::Apply(&body)).await {
            Ok(object) => self.summarize(name, &object).await,
            Err(e) => tracing::debug!(plugin = %name, "removing its status entry: {e}"),
        }
    }

    /// Applies the summary of `object`'s replica entries.
    async fn summarize(&self, name: &str, object: &DynamicObject) {
        let status = object.data.get("status").cloned().unwrap_or_default();
        let summary = summary(
            &status,
            object.metadata.generation.unwrap_or(0),
            self.objects.get(name).is_some_and(|e| e.spec.is_ok()),
        );
        let source = self.objects.specs().0.into_iter().find(|s| s.name == name).map(|s| s.source.to_string());
        let mut summary = summary;
        summary["source"] = source.unwrap_or_default().into();
        let written = summary.as_object().is_some_and(|o| o.iter().all(|(k, v)| status.get(k) == Some(v)));
        if written {
            return;
        }
        let status = summary;
        let body = json!({"apiVersion": "wasmcm.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": name}, "status": status});
        let shared = PatchParams::apply(SUMMARY_MANAGER).force();
        if let Err(e) = self.api.patch_status(name, &shared, &Patch::Apply(&body)).await {
            tracing::debug!(plugin = %name, "writing its status summary: {e}");
        }
    }

    /// A Warning Event on Plugin `name`, once per distinct failure.
    fn tell(&mut self, name: &str, reason: &str, message: &str) {
        let said = format!("{reason}: {message}");
        if self.told.get(name) == Some(&said) {
            return;
        }
        self.told.insert(name.into(), said);
        let uid = self.objects.get(name).map(|e| e.uid).unwrap_or_default();
        let now = jiff::Timestamp::now();
        let mut suffix = [0u8; 8];
        let _ = getrandom::fill(&mut suffix);
        let event = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": format!("{name}.{}", hex::encode(suffix)), "namespace": "default"},
            "regarding": {"apiVersion": "wasmcm.dev/v1alpha1", "kind": "Plugin", "name": name, "uid": uid},
            "type": "Warning", "reason": reason, "note": format!("{}: {}", self.identity, message.chars().take(900).collect::<String>()),
            "action": "Load", "reportingController": "wasmcm.dev/host", "reportingInstance": self.identity,
            "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        });
        let (events, name) = (self.events.clone(), name.to_string());
        tokio::spawn(async move {
            let created = match serde_json::from_value(event) {
                Ok(e) => events.create(&Default::default(), &e).await.map(drop).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            if let Err(e) = created {
                tracing::debug!(plugin = %name, "recording a Warning event on it: {e}");
            }
        });
    }
}

/// An entry without what changes with every reconcile.
fn without_counters(entry: &Value) -> Value {
    let mut e = entry.clone();
    if let Some(o) = e.as_object_mut() {
        o.remove("reconciles");
        o.remove("failures");
    }
    e
}

/// The summary of `status.replicas`: what most replicas run, whether all are ready, the
/// conditions Kubernetes tools read, and the oldest generation any replica acted on.
fn summary(status: &Value, generation: i64, valid: bool) -> Value {
    let replicas = status.get("replicas").and_then(Value::as_array).cloned().unwrap_or_default();
    let state_of = |r: &Value| r.get("state").and_then(Value::as_str).unwrap_or("").to_string();
    let reporting: Vec<&Value> = replicas.iter().filter(|r| state_of(r) != "Disabled").collect();
    let ready = reporting.iter().filter(|r| state_of(r) == "Ready").count();
    let mut runs: BTreeMap<(String, String), usize> = BTreeMap::new();
    for r in &reporting {
        if let (Some(v), Some(d)) = (r.get("version").and_then(Value::as_str), r.get("digest").and_then(Value::as_str))
        {
            *runs.entry((v.to_string(), d.to_string())).or_default() += 1;
        }
    }
    // The most replicas; among as many, the first in order (the same on every replica).
    let most = runs.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map(|(k, _)| k.clone());
    let first =
        |reason: &str| reporting.iter().find(|r| r.get("reason").and_then(Value::as_str) == Some(reason)).copied();
    let failed = reporting.iter().find(|r| state_of(r) == "Failed").copied();
    // A replica still loading it (Pending) is not yet ready: the plugin is progressing.
    let progressing = reporting.iter().find(|r| matches!(state_of(r).as_str(), "Progressing" | "Pending")).copied();
    let disabled = !replicas.is_empty() && reporting.is_empty();
    let state = if disabled {
        "Disabled"
    } else if failed.is_some() || !valid {
        "Degraded"
    } else if progressing.is_some() || reporting.is_empty() {
        "Progressing"
    } else {
        "Ready"
    };
    let said =
        |r: Option<&Value>, key: &str| r.and_then(|r| r.get(key)).and_then(Value::as_str).unwrap_or("").to_string();
    let old = status.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let condition = |kind: &str, on: bool, reason: String, message: String| {
        let value = if on { "True" } else { "False" };
        // The transition time moves only when the status does.
        let since = old
            .iter()
            .find(|c| c["type"] == kind && c["status"] == value)
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| wasmcm_core::now_rfc3339().into());
        json!({"type": kind, "status": value, "reason": reason, "message": message,
               "observedGeneration": generation, "lastTransitionTime": since})
    };
    let all_ready = !reporting.is_empty() && ready == reporting.len();
    let ready_reason = if all_ready {
        "Loaded"
    } else if failed.is_some() {
        "LoadFailed"
    } else {
        "NotReady"
    };
    let candidate = reporting.iter().find_map(|r| r.get("candidate").cloned());
    let shadowing = first("Shadowing").or(first("Held"));
    let mut conditions = vec![
        condition("Ready", all_ready, ready_reason.into(), format!("{ready}/{} replicas ready", reporting.len())),
        condition(
            "Progressing",
            shadowing.is_some() || (progressing.is_some() && failed.is_none()),
            said(shadowing.or(progressing), "reason"),
            said(shadowing.or(progressing), "message"),
        ),
        condition("Degraded", failed.is_some(), said(failed, "reason"), said(failed, "message")),
    ];
    for c in &mut conditions {
        if c["reason"] == "" {
            c["reason"] = if c["status"] == "True" { "Unknown" } else { "AsExpected" }.into();
        }
    }
    let observed = reporting.iter().filter_map(|r| r.get("observedGeneration").and_then(Value::as_i64)).min();
    let (version, digest) = most.unwrap_or_default();
    json!({
        "observedGeneration": observed.unwrap_or(0),
        "version": version, "digest": digest, "state": state,
        "ready": format!("{ready}/{}", reporting.len()),
        "candidate": candidate.unwrap_or_else(|| json!({})),
        "conditions": conditions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica(identity: &str, state: &str, extra: Value) -> Value {
        let mut r = json!({"identity": identity, "state": state, "version": "1.0.0", "digest": "sha256:aa", "observedGeneration": 2});
        if let (Some(r), Some(extra)) = (r.as_object_mut(), extra.as_object()) {
            r.extend(extra.clone());
        }
        r
    }

    #[test]
    fn a_replica_still_loading_keeps_the_plugin_progressing() {
        let loading = json!({"replicas": [
            replica("a", "Ready", json!({})),
            json!({"identity": "b", "state": "Pending", "reason": "Loading", "observedGeneration": 2}),
        ]});
        let s = summary(&loading, 2, true);
        assert_eq!((s["state"].as_str(), s["ready"].as_str()), (Some("Progressing"), Some("1/2")), "{s:#}");
        assert_eq!(
            (s["conditions"][1]["status"].as_str(), s["conditions"][1]["reason"].as_str()),
            (Some("True"), Some("Loading"))
        );
    }

    #[test]
    fn the_summary_says_what_most_replicas_run_and_the_worst_condition() {
        let all = json!({"replicas": [replica("a", "Ready", json!({})), replica("b", "Ready", json!({}))]});
        let s = summary(&all, 2, true);
        assert_eq!(
            (s["state"].as_str(), s["ready"].as_str(), s["version"].as_str()),
            (Some("Ready"), Some("2/2"), Some("1.0.0"))
        );
        assert_eq!(s["conditions"][0]["status"], "True");
        assert_eq!(s["conditions"][0]["reason"], "Loaded");

        let failing = json!({"replicas": [
            replica("a", "Ready", json!({})),
            replica("b", "Failed", json!({"reason": "DigestMismatch", "message": "pinned aa, got bb", "observedGeneration": 1})),
        ]});
        let s = summary(&failing, 2, true);
        assert_eq!(s["state"], "Degraded");
        assert_eq!(s["ready"], "1/2");
        assert_eq!(s["observedGeneration"], 1, "the oldest generation any replica acted on");
        let degraded = &s["conditions"][2];
        assert_eq!((degraded["status"].as_str(), degraded["reason"].as_str()), (Some("True"), Some("DigestMismatch")));

        let shadowing = json!({"replicas": [replica("a", "Progressing", json!({"reason": "Shadowing", "candidate": {"version": "2.0.0"}}))]});
        let s = summary(&shadowing, 2, true);
        assert_eq!((s["state"].as_str(), s["candidate"]["version"].as_str()), (Some("Progressing"), Some("2.0.0")));
        assert_eq!(
            (s["conditions"][1]["status"].as_str(), s["conditions"][1]["reason"].as_str()),
            (Some("True"), Some("Shadowing"))
        );
    }

    #[test]
    fn a_condition_keeps_its_transition_time_while_its_status_holds() {
        let old = json!({"replicas": [replica("a", "Ready", json!({}))],
                         "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}]});
        assert_eq!(summary(&old, 1, true)["conditions"][0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        let flipped = json!({"replicas": [replica("a", "Failed", json!({}))], "conditions": old["conditions"].clone()});
        assert_ne!(summary(&flipped, 1, true)["conditions"][0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
    }
}
