//! The API writer: turns a plugin's outcome into API calls. It checks every intent against
//! what the plugin declared it may write and against the namespace of the key, runs the
//! batches in order and stops after a failing one, and records the events KCM's PodControl
//! records for the pods it creates and deletes.
//!
//! It decides nothing about *what* to write (that is the plugin's) and knows nothing about
//! how the API is reached (that is the [`Api`] implementation's).

use serde_json::{Value, json};
use wasmcm_guest::{Event, EventType, Intent, Kind, ObjectRef, Outcome, PluginInfo};

pub use crate::status::ApiError;

/// The API as the writer needs it.
pub trait Api {
    /// Returns the object as stored (with its generated name).
    fn create(&mut self, object: Value) -> Result<Value, ApiError>;
    fn update(&mut self, object: Value) -> Result<Value, ApiError>;
    fn update_status(&mut self, object: Value) -> Result<Value, ApiError>;
    fn delete(&mut self, target: &ObjectRef, uid: Option<&str>) -> Result<(), ApiError>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Create,
    Update,
    UpdateStatus,
    Delete,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::UpdateStatus => "update-status",
            Verb::Delete => "delete",
        }
    }
}

/// One write the writer attempted.
#[derive(Clone, Debug)]
pub struct Action {
    pub verb: Verb,
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    pub error: Option<ApiError>,
}

/// An intent the writer refused to send, and why.
#[derive(Clone, Debug)]
pub struct Refusal {
    pub intent: String,
    pub reason: String,
}

#[derive(Debug, Default)]
pub struct Report {
    pub actions: Vec<Action>,
    pub events: Vec<Event>,
    pub refused: Vec<Refusal>,
    /// Why the outcome was not written in full; the next reconcile hears of it as
    /// `previous-failure`.
    pub failure: Option<String>,
}

/// Executes `outcome`, produced by `plugin` for the key `namespace/name`.
pub fn execute(api: &mut dyn Api, plugin: &PluginInfo, namespace: &str, name: &str, outcome: &Outcome) -> Report {
    let mut report = Report::default();
    let primary = ObjectRef { kind: plugin.primary.clone(), namespace: namespace.into(), name: name.into() };
    for batch in &outcome.batches {
        // The writes of a batch are independent: all are attempted, then a failure stops the
        // batches after it.
        let mut batch_failure = None;
        for intent in batch {
            if let Err(e) = execute_one(api, plugin, &primary, intent, &mut report) {
                batch_failure.get_or_insert(e);
            }
        }
        if let Some(failure) = batch_failure {
            report.failure = Some(failure);
            break;
        }
    }
    report
}

fn execute_one(
    api: &mut dyn Api,
    plugin: &PluginInfo,
    primary: &ObjectRef,
    intent: &Intent,
    report: &mut Report,
) -> Result<(), String> {
    let refuse = |report: &mut Report, what: String, reason: String| {
        tracing::warn!(plugin = %plugin.name, intent = %what, "refused: {reason}");
        report.refused.push(Refusal { intent: what.clone(), reason: reason.clone() });
        Err(format!("{what} refused: {reason}"))
    };
    let (verb, json) = match intent {
        Intent::Create(o) => (Verb::Create, o),
        Intent::Update(o) => (Verb::Update, o),
        Intent::UpdateStatus(o) => (Verb::UpdateStatus, o),
        Intent::Delete(d) => {
            let what = format!("delete {} {}/{}", d.target.kind, d.target.namespace, d.target.name);
            if let Err(reason) = check_target(plugin, primary, &d.target.kind, &d.target.namespace) {
                return refuse(report, what, reason);
            }
            let result = api.delete(&d.target, d.uid.as_deref());
            // Already gone is what a delete wants: no failure, and no event (as PodControl).
            if matches!(&result, Err(e) if e.code == 404) {
                return record(report, Verb::Delete, d.target.clone(), Ok(()));
            }
            pod_event(report, primary, &d.target.kind, Verb::Delete, &d.target.name, result.as_ref().err());
            return record(report, Verb::Delete, d.target.clone(), result);
        }
        Intent::Event(e) => {
            if e.regarding.namespace != primary.namespace && !primary.namespace.is_empty() {
                let reason = format!("events are confined to namespace {:?}", primary.namespace);
                return refuse(report, format!("event {}", e.reason), reason);
            }
            report.events.push(e.clone());
            return Ok(());
        }
    };
    let mut object: Value = match serde_json::from_str(json) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return refuse(report, verb.as_str().into(), "the object is not a JSON object".into()),
        Err(e) => return refuse(report, verb.as_str().into(), format!("invalid JSON: {e}")),
    };
    let kind = crate::snapshot::kind_of(&object);
    let ns = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").to_string();
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
    let what = format!("{} {kind} {ns}/{}", verb.as_str(), if name.is_empty() { "<generated>" } else { &name });
    if kind.kind.is_empty() || kind.api_version.is_empty() {
        return refuse(report, what, "the object has no apiVersion or kind".into());
    }
    if let Err(reason) = check_target(plugin, primary, &kind, &ns) {
        return refuse(report, what, reason);
    }
    if ns.is_empty() && !primary.namespace.is_empty() {
        object["metadata"]["namespace"] = json!(primary.namespace);
    }
    let target = |v: &Value, fallback: &str| ObjectRef {
        kind: kind.clone(),
        namespace: primary.namespace.clone(),
        name: v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or(fallback).to_string(),
    };
    match verb {
        Verb::Create => {
            let result = api.create(object);
            let created = result.as_ref().map(|v| target(v, "")).unwrap_or_else(|_| target(&Value::Null, &name));
            pod_event(report, primary, &kind, Verb::Create, &created.name, result.as_ref().err());
            record(report, verb, created, result.map(drop))
        }
        Verb::Update => record(report, verb, target(&object, &name), api.update(object.clone()).map(drop)),
        _ => record(report, verb, target(&object, &name), api.update_status(object.clone()).map(drop)),
    }
}

/// A plugin writes only the kinds it declared, only in the namespace of its key.
fn check_target(plugin: &PluginInfo, primary: &ObjectRef, kind: &Kind, namespace: &str) -> Result<(), String> {
    if !plugin.writes.contains(kind) {
        let declared: Vec<String> = plugin.writes.iter().map(Kind::to_string).collect();
        return Err(format!(
            "plugin {} may not write {kind} (it declared: {})",
            plugin.name,
            if declared.is_empty() { "nothing".into() } else { declared.join(", ") }
        ));
    }
    if !primary.namespace.is_empty() && !namespace.is_empty() && namespace != primary.namespace {
        return Err(format!("writes are confined to namespace {:?}, not {namespace:?}", primary.namespace));
    }
    Ok(())
}

fn record(report: &mut Report, verb: Verb, target: ObjectRef, result: Result<(), ApiError>) -> Result<(), String> {
    let error = result.err();
    let failure =
        error.as_ref().map(|e| format!("{} {} {}/{}: {e}", verb.as_str(), target.kind, target.namespace, target.name));
    report.actions.push(Action { verb, kind: target.kind, namespace: target.namespace, name: target.name, error });
    failure.map_or(Ok(()), Err)
}

/// The events `controller.RealPodControl` records on the owner of the pods it creates and
/// deletes (SuccessfulCreate, FailedCreate, SuccessfulDelete, FailedDelete).
fn pod_event(report: &mut Report, primary: &ObjectRef, kind: &Kind, verb: Verb, name: &str, error: Option<&ApiError>) {
    if kind.kind != "Pod" || kind.api_version != "v1" {
        return;
    }
    let (event_type, reason, message) = match (verb, error) {
        (Verb::Create, None) => (EventType::Normal, "SuccessfulCreate", format!("Created pod: {name}")),
        (Verb::Create, Some(e)) => (EventType::Warning, "FailedCreate", format!("Error creating: {e}")),
        (_, None) => (EventType::Normal, "SuccessfulDelete", format!("Deleted pod: {name}")),
        (_, Some(e)) => (EventType::Warning, "FailedDelete", format!("Error deleting: {e}")),
    };
    report.events.push(Event { regarding: primary.clone(), event_type, reason: reason.into(), message });
}
