//! The API writer: turns a plugin's outcome into API calls. It checks every intent against
//! what the plugin declared it may write and against the namespace of the key, runs each
//! batch's writes concurrently and stops after a failing batch, records the events KCM's
//! PodControl records for the pods it creates and deletes, and tells the expectations what
//! the informers should see next.
//!
//! It decides nothing about *what* to write (that is the plugin's) and knows nothing about
//! how the API is reached (that is the [`WriteApi`] implementation's).

use std::future::Future;

use serde_json::{Value, json};
use wasmcm_core::str_at;
use wasmcm_guest::{Event, EventType, Intent, Kind, ObjectRef, Outcome, PluginInfo};

use crate::runtime::expectations::Expectations;
use crate::writes::scope::Tenancy;

pub(crate) use wasmcm_core::ApiError;

/// The API as the writer needs it. `&self` and `Send` futures: the writes of a batch run
/// concurrently.
pub trait WriteApi: Sync {
    /// Returns the object as stored (with its generated name).
    fn create(&self, object: Value) -> impl Future<Output = Result<Value, ApiError>> + Send;
    fn update(&self, object: Value) -> impl Future<Output = Result<Value, ApiError>> + Send;
    fn update_status(&self, object: Value) -> impl Future<Output = Result<Value, ApiError>> + Send;
    fn delete(&self, target: &ObjectRef, uid: Option<&str>) -> impl Future<Output = Result<(), ApiError>> + Send;
    /// Whether objects of `kind` live in namespaces (discovery's answer).
    fn namespaced(&self, kind: &Kind) -> impl Future<Output = Result<bool, ApiError>> + Send;
    /// `uid` is the regarding object's, when known (kubectl describe matches events by it).
    fn record_event(&self, event: &Event, uid: Option<&str>) -> impl Future<Output = Result<(), ApiError>> + Send;
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

impl Report {
    /// Whether the write that failed the outcome lost an optimistic-concurrency race (409),
    /// the normal price of concurrency.
    pub fn conflicted(&self) -> bool {
        self.actions.iter().find_map(|a| a.error.as_ref()).is_some_and(ApiError::is_conflict)
    }
}

/// The identity under which expectations track a deletion.
pub(crate) fn deletion_id(kind: &Kind, namespace: &str, name: &str) -> String {
    format!("{kind}/{namespace}/{name}")
}

/// A checked intent, ready to send.
enum Op {
    Write { verb: Verb, kind: Kind, object: Value, name: String, counted: bool },
    Delete { target: ObjectRef, uid: Option<String>, tracked: bool },
    Event(Event),
}

/// What the writer knows of the key an outcome is for.
#[derive(Clone, Copy, Default)]
pub struct Context<'a> {
    /// Counts creates of children the primary controls and tracks deletes of owned kinds
    /// before they are sent.
    pub expectations: Option<&'a Expectations>,
    /// The primary's uid, for the events about it.
    pub primary_uid: Option<&'a str>,
    /// The plugin's scope; `None` admits every namespace (simulate, tests).
    pub(crate) tenancy: Option<Tenancy<'a>>,
}

/// Executes `outcome`, produced by `plugin` for the key `namespace/name`.
pub async fn write_outcome(
    api: &impl WriteApi,
    plugin: &PluginInfo,
    namespace: &str,
    name: &str,
    outcome: &Outcome,
    context: Context<'_>,
) -> Report {
    let expectations = context.expectations;
    let mut report = Report::default();
    let primary = ObjectRef { kind: plugin.primary.clone(), namespace: namespace.into(), name: name.into() };
    let key = wasmcm_core::key(namespace, name);
    for batch in &outcome.batches {
        let mut failure: Option<String> = None;
        let mut ops = Vec::new();
        for intent in batch {
            let checked = match check(plugin, &primary, intent) {
                Ok(op) => match context.tenancy {
                    Some(t) => in_scope(api, t, op).await,
                    None => Ok(op),
                },
                Err(r) => Err(r),
            };
            match checked {
                Ok(op) => ops.push(op),
                Err(Refusal { intent, reason }) => {
                    failure.get_or_insert(format!("{intent} refused: {reason}"));
                    report.refused.push(Refusal { intent, reason });
                }
            }
        }
        if let Some(e) = expectations {
            let creates = ops.iter().filter(|o| matches!(o, Op::Write { counted: true, .. })).count();
            if creates > 0 {
                e.expect_creations(&key, creates);
            }
            let deletes: Vec<String> = ops
                .iter()
                .filter_map(|o| match o {
                    Op::Delete { target, tracked: true, .. } => {
                        Some(deletion_id(&target.kind, &target.namespace, &target.name))
                    }
                    _ => None,
                })
                .collect();
            if !deletes.is_empty() {
                e.expect_deletions(&key, deletes);
            }
        }
        // The writes of a batch are independent: all are attempted together; results are
        // recorded in intent order.
        let results = futures_util::future::join_all(ops.iter().map(|op| send(api, op))).await;
        for (op, result) in ops.iter().zip(results) {
            if let Err(e) = settle(&mut report, &primary, op, result, expectations, &key) {
                failure.get_or_insert(e);
            }
        }
        if let Some(f) = failure {
            report.failure = Some(f);
            break;
        }
    }
    for event in &report.events {
        let uid = if event.regarding == primary { context.primary_uid } else { None };
        if let Err(e) = api.record_event(event, uid).await {
            tracing::debug!(reason = %event.reason, "recording an event failed: {e}");
        }
    }
    report
}

fn check(plugin: &PluginInfo, primary: &ObjectRef, intent: &Intent) -> Result<Op, Refusal> {
    let refusal = |intent: String, reason: String| Refusal { intent, reason };
    let (verb, json) = match intent {
        Intent::Create(o) => (Verb::Create, o),
        Intent::Update(o) => (Verb::Update, o),
        Intent::UpdateStatus(o) => (Verb::UpdateStatus, o),
        Intent::Delete(d) => {
            let what = format!("delete {} {}/{}", d.target.kind, d.target.namespace, d.target.name);
            check_target(plugin, primary, &d.target.kind, &d.target.namespace).map_err(|r| refusal(what, r))?;
            let mut target = d.target.clone();
            if target.namespace.is_empty() {
                target.namespace = primary.namespace.clone();
            }
            let tracked = plugin.owns.contains(&target.kind);
            return Ok(Op::Delete { target, uid: d.uid.clone(), tracked });
        }
        Intent::Event(e) => {
            if e.regarding.namespace != primary.namespace && !primary.namespace.is_empty() {
                let reason = format!("events are confined to namespace {:?}", primary.namespace);
                return Err(refusal(format!("event {}", e.reason), reason));
            }
            return Ok(Op::Event(e.clone()));
        }
    };
    let mut object: Value = match serde_json::from_str(json) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return Err(refusal(verb.as_str().into(), "the object is not a JSON object".into())),
        Err(e) => return Err(refusal(verb.as_str().into(), format!("invalid JSON: {e}"))),
    };
    let kind = Kind::of_object(&object);
    let ns = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").to_string();
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
    let what = format!("{} {kind} {ns}/{}", verb.as_str(), if name.is_empty() { "<generated>" } else { &name });
    if kind.kind.is_empty() || kind.api_version.is_empty() {
        return Err(refusal(what, "the object has no apiVersion or kind".into()));
    }
    check_target(plugin, primary, &kind, &ns).map_err(|r| refusal(what, r))?;
    if ns.is_empty() && !primary.namespace.is_empty() {
        object["metadata"]["namespace"] = json!(primary.namespace);
    }
    // Only children the primary controls come back to its key through the informers.
    let counted = verb == Verb::Create && controlled_by(&object, primary);
    Ok(Op::Write { verb, kind, object, name, counted })
}

/// The tenancy's verdict on a checked write, the kind's scope learnt from discovery.
async fn in_scope(api: &impl WriteApi, tenancy: Tenancy<'_>, op: Op) -> Result<Op, Refusal> {
    let (verb, kind, namespace, name) = match &op {
        Op::Write { verb, kind, object, name, .. } => {
            (verb.as_str(), kind, str_at(object, "/metadata/namespace"), name)
        }
        Op::Delete { target, .. } => ("delete", &target.kind, target.namespace.as_str(), &target.name),
        Op::Event(_) => return Ok(op),
    };
    let what = format!("{verb} {kind} {namespace}/{}", if name.is_empty() { "<generated>" } else { name });
    let verdict = match api.namespaced(kind).await {
        Ok(namespaced) => tenancy.admits_write(kind, namespace, name, namespaced),
        Err(e) => Err(e.message),
    };
    verdict.map(|()| op).map_err(|reason| Refusal { intent: what, reason })
}

fn controlled_by(object: &Value, primary: &ObjectRef) -> bool {
    object.pointer("/metadata/ownerReferences").and_then(Value::as_array).is_some_and(|refs| {
        refs.iter().any(|r| {
            r.get("controller").and_then(Value::as_bool) == Some(true)
                && r.get("kind").and_then(Value::as_str) == Some(primary.kind.kind.as_str())
                && r.get("name").and_then(Value::as_str) == Some(primary.name.as_str())
        })
    })
}

/// What sending one op gave: the stored object's name for writes.
type Sent = Result<Option<String>, ApiError>;

async fn send(api: &impl WriteApi, op: &Op) -> Sent {
    let name_of = |v: Value| v.pointer("/metadata/name").and_then(Value::as_str).map(String::from);
    match op {
        Op::Write { verb: Verb::Create, object, .. } => api.create(object.clone()).await.map(name_of),
        Op::Write { verb: Verb::Update, object, .. } => api.update(object.clone()).await.map(name_of),
        Op::Write { object, .. } => api.update_status(object.clone()).await.map(name_of),
        Op::Delete { target, uid, .. } => api.delete(target, uid.as_deref()).await.map(|_| None),
        Op::Event(_) => Ok(None),
    }
}

fn settle(
    report: &mut Report,
    primary: &ObjectRef,
    op: &Op,
    result: Sent,
    expectations: Option<&Expectations>,
    key: &str,
) -> Result<(), String> {
    match op {
        Op::Event(e) => {
            report.events.push(e.clone());
            Ok(())
        }
        Op::Delete { target, tracked, .. } => {
            let result = result.map(drop);
            let gone = matches!(&result, Err(e) if e.code == 404);
            if let (Some(e), true) = (expectations, *tracked)
                && result.is_err()
            {
                // Never to be observed: already gone, or not deleted at all.
                e.deletion_observed(&deletion_id(&target.kind, &target.namespace, &target.name));
            }
            // Already gone is what a delete wants: no failure, and no event (as PodControl).
            if gone {
                return record(report, Verb::Delete, target.clone(), Ok(()));
            }
            pod_event(report, primary, &target.kind, Verb::Delete, &target.name, result.as_ref().err());
            record(report, Verb::Delete, target.clone(), result)
        }
        Op::Write { verb, kind, name, counted, .. } => {
            let target =
                |n: &str| ObjectRef { kind: kind.clone(), namespace: primary.namespace.clone(), name: n.to_string() };
            let stored = match &result {
                Ok(Some(n)) => n.clone(),
                _ => name.clone(),
            };
            if *verb == Verb::Create {
                if let (Some(e), true) = (expectations, *counted)
                    && result.is_err()
                {
                    e.creation_observed(key);
                }
                pod_event(report, primary, kind, Verb::Create, &stored, result.as_ref().err());
            }
            record(report, *verb, target(&stored), result.map(drop))
        }
    }
}
/// A plugin writes only the kinds it declared, only in the namespace of its key.
fn check_target(plugin: &PluginInfo, primary: &ObjectRef, kind: &Kind, namespace: &str) -> Result<(), String> {
    if !plugin.writes.contains(kind) {
        // Not the declared list: a refusal is repeated per intent, and a declaration is the
        // plugin's to make as long as it likes.
        return Err(format!(
            "plugin {} may not write {kind}: not among the kinds it declared ({})",
            plugin.name,
            plugin.writes.len()
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
