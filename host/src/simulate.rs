//! `wasmcm simulate`: one reconcile of one key against a snapshot, its writes applied by the
//! embedded API server's own write path ([`Offline`]: the same defaulting, validation, status
//! subresources and graceful deletion as `wasmcm cluster`, at the request's time, with seeded
//! names and uids), printed as one JSON document. The plugin author's offline test tool.
//!
//! The snapshot may be a [`Recording`] of a live reconcile: the plugin then reads exactly what
//! it read then, with the same request, and `expect` compares its outcome with the recorded
//! one, so a recorded misbehaviour replays offline and a fix shows its difference. A state is
//! read within the caps [`crate::record`] documents, a recording from anyone included.

use std::future::{Future, ready};
use std::sync::Arc;

use serde_json::{Value, json};
use wasmcm_apiserver::Offline;
use wasmcm_core::{ApiError, Kind};
use wasmcm_guest::{Cache, Event, EventType, Instant, MemoryCache, ObjectRef, PatchType, Propagation, Request};

use crate::engine::{CallError, Plugin};
use crate::key::Key;
use crate::outcome::outcome_json;
use crate::record::{Recording, request_json};
use crate::writes::writer::{self, WriteApi};

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

/// What `--state` holds: objects, or a recording (whose reads the plugin gets back exactly,
/// with its request: key, time, settings and previous failure).
pub enum Snapshot {
    Objects(Vec<Value>),
    Recording(Box<Recording>),
}

impl Snapshot {
    /// A recording (JSON or YAML), else a `List` or YAML stream of objects.
    pub fn parse(text: &str) -> Result<Snapshot, String> {
        let docs = parse_documents(text)?;
        if let [doc] = docs.as_slice()
            && Recording::is_recording(doc)
        {
            return Ok(Snapshot::Recording(Box::new(Recording::from_json(doc)?)));
        }
        items(docs).map(Snapshot::Objects)
    }
}

/// One simulated reconcile: the document to print, and whether its outcome differs from the
/// expected recording's.
pub struct Simulated {
    pub document: Value,
    pub differs: bool,
}

/// Runs one reconcile of `key` (`namespace/name`; a recording's own by default) against
/// `snapshot` at `now` (a recording's time, else the clock), and with `expect`, compares its
/// outcome with that recording's. `state_name` names the state in errors.
pub fn simulate(
    plugin: &Plugin,
    state_name: &str,
    snapshot: Snapshot,
    key: Option<&str>,
    now: Option<Instant>,
    expect: Option<&Recording>,
) -> Result<Simulated, SimulateError> {
    let input = |msg: String| SimulateError::Input(msg);
    let (items, cache, recorded): (_, Arc<dyn Cache + Send + Sync>, _) = match snapshot {
        Snapshot::Objects(items) => {
            let cache = MemoryCache::from_objects(&items).map_err(|e| input(format!("{state_name}: {e}")))?;
            (items, Arc::new(cache), None)
        }
        Snapshot::Recording(r) => {
            let items = r.objects().map_err(|e| input(format!("{state_name}: {e}")))?;
            let cache = r.replay_cache(&items).map_err(|e| input(format!("{state_name}: {e}")))?;
            (items, Arc::new(cache), Some(r.request.clone()))
        }
    };
    let summary = summary(&items);
    let now =
        now.or(recorded.as_ref().map(|r| r.now)).unwrap_or_else(|| Instant::from_timestamp(jiff::Timestamp::now()));
    let api = Offline::new(items, now.timestamp()).map_err(|e| input(format!("{state_name}: {e}")))?;

    let key = match (key, &recorded) {
        (Some(k), _) => k.to_string(),
        (None, Some(r)) => Key::new(&r.namespace, &r.name).to_string(),
        (None, None) => return Err(input(format!("--key is required: {state_name} is not a recording"))),
    };
    let Some(Key { namespace, name }) = Key::parse(&key) else {
        return Err(input(format!("invalid key {key:?}: expected <namespace>/<name>")));
    };
    let (namespace, name) = (namespace.as_str(), name.as_str());
    let info = plugin.info();
    if api.get(&info.primary, namespace, name).is_none() {
        return Err(input(format!("key {key}: no {} {key} in {state_name}, which holds {summary}", info.primary)));
    }

    let request = Request {
        namespace: namespace.into(),
        name: name.into(),
        now,
        ..recorded.unwrap_or_else(|| Request::new(namespace, name, now))
    };
    let result = plugin.reconcile(&request, cache);
    let expected = expect.map(|r| (r, r.compare(&result)));
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(e) if expected.is_none() => return Err(SimulateError::Plugin(e)),
        Err(e) => {
            let mut document = json!({
                "plugin": {"name": info.name, "version": info.version, "digest": plugin.digest()},
                "request": request_json(&request),
                "failure": e.to_string(),
            });
            return Ok(expectation(&mut document, plugin, expected));
        }
    };
    // The writer is async for live APIs; the offline server answers at once.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| SimulateError::Input(format!("cannot start a runtime: {e}")))?;
    let report = runtime.block_on(writer::write_outcome(&api, info, namespace, name, &outcome, Default::default()));

    let actions: Vec<Value> = report.actions.iter().map(action_json).collect();
    let events: Vec<Value> = report.events.iter().map(event_json).collect();
    let mut out = json!({
        "plugin": {"name": info.name, "version": info.version, "digest": plugin.digest()},
        "request": request_json(&request),
        "outcome": outcome_json(&outcome),
        "actions": actions,
        "events": events,
        "requeueAfterSeconds": outcome.requeue_after_ms.map(|ms| ms as f64 / 1000.0),
        "state": {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": api.objects()},
    });
    if !report.refused.is_empty() {
        out["refused"] = report.refused.iter().map(|r| json!({"intent": r.intent, "reason": r.reason})).collect();
    }
    if let Some(f) = &report.failure {
        out["failure"] = json!(f);
    }
    Ok(expectation(&mut out, plugin, expected))
}

/// One write the writer attempted, as `simulate` prints it.
fn action_json(a: &writer::Action) -> Value {
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
}

/// One event the writer recorded, as `simulate` prints it.
fn event_json(e: &Event) -> Value {
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
}

/// Adds `expected` (the recording compared with, and the difference) to `document`.
fn expectation(document: &mut Value, plugin: &Plugin, expected: Option<(&Recording, Option<String>)>) -> Simulated {
    let Some((recording, difference)) = expected else {
        return Simulated { document: document.take(), differs: false };
    };
    let r = &recording.plugin;
    document["expected"] = json!({
        "plugin": {"name": r.name, "version": r.version, "digest": r.digest},
        "samePlugin": r.digest == plugin.digest(),
        "identical": difference.is_none(),
        "difference": difference,
    });
    Simulated { document: document.take(), differs: difference.is_some() }
}

/// Reads a Kubernetes `List` (JSON or YAML) or a multi-document YAML stream of objects.
pub fn parse_objects(text: &str) -> Result<Vec<Value>, String> {
    items(parse_documents(text)?)
}

/// The documents of a JSON text or a YAML stream.
fn parse_documents(text: &str) -> Result<Vec<Value>, String> {
    crate::record::check_size(text)?;
    if text.trim_start().starts_with(['{', '[']) {
        Ok(vec![serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?])
    } else {
        serde_saphyr::from_multiple(text).map_err(|e| format!("invalid YAML: {e}"))
    }
}

/// The objects of `docs`: Lists' items, arrays' elements, and objects.
fn items(docs: Vec<Value>) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    for doc in docs {
        match doc {
            Value::Null => {}
            Value::Array(list) => items.extend(list),
            Value::Object(ref o) if o.get("kind").and_then(Value::as_str).is_some_and(|k| k.ends_with("List")) => {
                match o.get("items") {
                    Some(Value::Array(list)) => items.extend(list.iter().cloned()),
                    Some(Value::Null) | None => {}
                    Some(_) => return Err("a List's items must be a list".into()),
                }
            }
            other => items.push(other),
        }
    }
    for (i, item) in items.iter().enumerate() {
        let kind = item.get("kind").and_then(Value::as_str);
        let what = format!("item {} ({})", i + 1, kind.unwrap_or("no kind"));
        if !item.is_object() {
            return Err(format!("{what}: not an object"));
        }
        if item.get("apiVersion").and_then(Value::as_str).is_none() {
            return Err(format!("{what}: apiVersion is missing"));
        }
        if kind.is_none() {
            return Err(format!("{what}: kind is missing"));
        }
        if item.pointer("/metadata/name").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(format!("{what}: metadata.name is missing"));
        }
    }
    Ok(items)
}

/// What a snapshot holds, for messages: "apps/v1 ReplicaSet ×1, v1 Pod ×3".
fn summary(items: &[Value]) -> String {
    let mut counts: Vec<(Kind, usize)> = Vec::new();
    for item in items {
        let k = Kind::of_object(item);
        match counts.iter_mut().find(|(c, _)| *c == k) {
            Some((_, n)) => *n += 1,
            None => counts.push((k, 1)),
        }
    }
    if counts.is_empty() {
        return "no objects".into();
    }
    counts.iter().map(|(k, n)| format!("{} {} ×{n}", k.api_version, k.kind)).collect::<Vec<_>>().join(", ")
}

impl WriteApi for Offline {
    fn create(&self, object: Value) -> impl Future<Output = Result<Value, ApiError>> + Send {
        ready(Offline::create(self, object))
    }

    fn update(&self, object: Value) -> impl Future<Output = Result<Value, ApiError>> + Send {
        ready(Offline::update(self, object))
    }

    fn update_status(&self, object: Value) -> impl Future<Output = Result<Value, ApiError>> + Send {
        ready(Offline::update_status(self, object))
    }

    fn delete(
        &self,
        target: &ObjectRef,
        uid: Option<&str>,
        propagation: Option<Propagation>,
    ) -> impl Future<Output = Result<(), ApiError>> + Send {
        let propagation = propagation.map(Propagation::as_str);
        ready(Offline::delete(self, &target.kind, &target.namespace, &target.name, uid, propagation))
    }

    fn patch(
        &self,
        target: &ObjectRef,
        patch_type: PatchType,
        body: Value,
        status: bool,
    ) -> impl Future<Output = Result<Value, ApiError>> + Send {
        let content_type = match patch_type {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::Strategic => "application/strategic-merge-patch+json",
        };
        let (kind, namespace, name) = (&target.kind, &target.namespace, &target.name);
        ready(Offline::patch(self, kind, namespace, name, content_type, body.to_string().as_bytes(), status))
    }

    fn namespaced(&self, kind: &Kind) -> impl Future<Output = Result<bool, ApiError>> + Send {
        ready(Offline::namespaced(self, kind))
    }

    /// Events are not stored; the report lists them.
    fn record_event(&self, _event: &Event, _uid: Option<&str>) -> impl Future<Output = Result<(), ApiError>> + Send {
        ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_documents_parse_alike() {
        let list =
            r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}]}"#;
        assert_eq!(parse_objects(list).unwrap().len(), 1);
        let yaml_list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n";
        assert_eq!(parse_objects(yaml_list).unwrap(), parse_objects(list).unwrap());
        assert!(parse_objects("kind: Pod\nmetadata: {name: a}").unwrap_err().contains("apiVersion is missing"));
        assert!(parse_objects("{not json").unwrap_err().starts_with("invalid JSON"));
        assert!(parse_objects("a: [b").unwrap_err().starts_with("invalid YAML"));
    }
}
