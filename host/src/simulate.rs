//! `wasmcm simulate`: one reconcile of one key against a snapshot, its writes applied as the
//! API server would, printed as one JSON document. The plugin author's offline test tool.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wasmcm_guest::{EventType, Instant, Request};

use crate::plugins::{CallError, Plugin};
use crate::snapshot::{self, Snapshot};
use crate::writer;

#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// The input (state file, key) is wrong: exit 2.
    #[error("{0}")]
    Input(String),
    /// The plugin failed: exit 3.
    #[error(transparent)]
    Plugin(#[from] CallError),
}

impl SimulateError {
    pub fn exit_code(&self) -> i32 {
        match self {
            SimulateError::Input(_) => 2,
            SimulateError::Plugin(_) => 3,
        }
    }
}

/// Runs one reconcile of `key` (`namespace/name`) with the objects of `state_text` cached.
/// `state_name` names the state in errors.
pub fn simulate(
    plugin: &Plugin,
    state_name: &str,
    state_text: &str,
    key: &str,
    now: Instant,
) -> Result<Value, SimulateError> {
    let input = |msg: String| SimulateError::Input(msg);
    let items = snapshot::parse_objects(state_text).map_err(|e| input(format!("{state_name}: {e}")))?;
    let snapshot = Snapshot::new(items, now);
    let cache = snapshot.cache().map_err(|e| input(format!("{state_name}: {e}")))?;

    let (namespace, name) = match key.split_once('/') {
        Some((ns, name)) if !name.is_empty() && !name.contains('/') => (ns, name),
        _ if !key.is_empty() && !key.contains('/') => ("", key),
        _ => return Err(input(format!("invalid key {key:?}: expected <namespace>/<name>"))),
    };
    let info = plugin.info();
    if snapshot.get(&info.primary, namespace, name).is_none() {
        return Err(input(format!(
            "key {key}: no {} {key} in {state_name}, which holds {}",
            info.primary,
            snapshot.summary()
        )));
    }

    let request = Request::new(namespace, name, now);
    let outcome = plugin.reconcile(&request, Arc::new(cache))?;
    let api = Mutex::new(snapshot);
    // The writer is async for live APIs; the snapshot answers at once.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| SimulateError::Input(format!("cannot start a runtime: {e}")))?;
    let report = runtime.block_on(writer::execute(&api, info, namespace, name, &outcome, Default::default()));
    let snapshot = api.into_inner().unwrap_or_else(|e| e.into_inner());

    let actions: Vec<Value> = report
        .actions
        .iter()
        .map(|a| {
            let mut v = json!({
                "verb": a.verb.as_str(),
                "apiVersion": a.kind.api_version,
                "kind": a.kind.kind,
                "namespace": a.namespace,
                "name": a.name,
            });
            if let Some(e) = &a.error {
                v["error"] = json!({"code": e.code, "reason": e.reason, "message": e.message});
            }
            v
        })
        .collect();
    let events: Vec<Value> = report
        .events
        .iter()
        .map(|e| {
            json!({
                "type": match e.event_type { EventType::Normal => "Normal", EventType::Warning => "Warning" },
                "reason": e.reason,
                "message": e.message,
                "regarding": {
                    "apiVersion": e.regarding.kind.api_version,
                    "kind": e.regarding.kind.kind,
                    "namespace": e.regarding.namespace,
                    "name": e.regarding.name,
                },
            })
        })
        .collect();
    let mut out = json!({
        "plugin": {"name": info.name, "version": info.version, "digest": plugin.digest()},
        "actions": actions,
        "events": events,
        "requeueAfterSeconds": outcome.requeue_after_ms.map(|ms| ms as f64 / 1000.0),
        "state": snapshot.to_list(),
    });
    if !report.refused.is_empty() {
        out["refused"] = report.refused.iter().map(|r| json!({"intent": r.intent, "reason": r.reason})).collect();
    }
    if let Some(f) = &report.failure {
        out["failure"] = json!(f);
    }
    Ok(out)
}
