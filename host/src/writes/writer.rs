//! The API writer: turns a plugin's outcome into API calls. It checks every intent against
//! what the plugin declared it may write, the namespace of the key and the plugin's scope, and
//! refuses what no API call should carry: a name upstream's validation of the kind would refuse
//! (before it reaches a URL path), an update without `metadata.resourceVersion` (an
//! unconditional PUT overwrites whatever changed meanwhile), an object or patch carrying the
//! labels of the host's shard group, a patch that is not a patch document of its type. A
//! patch's resourceVersion precondition goes into the document as the API server reads one (a
//! merge patch's `metadata.resourceVersion`, a JSON patch's leading `test`). It runs each batch's writes concurrently and stops after a failing
//! batch, records the events KCM's PodControl records for the pods it creates and deletes, and
//! tells the expectations what the informers should see next.
//!
//! Events are confined to the key's scope: a namespaced primary's regard objects of its
//! namespace; a cluster-scoped primary's regard the primary itself, or objects in namespaces
//! the plugin may act in (never another cluster-scoped object).
//!
//! It decides nothing about *what* to write (that is the plugin's) and knows nothing about
//! how the API is reached (that is the [`WriteApi`] implementation's).

use std::future::Future;

use serde_json::{Value, json};
use wasmcm_core::group::{GROUP_LABEL as SHARD_GROUP_LABEL, ROLE_LABEL as SHARD_ROLE_LABEL};
use wasmcm_core::str_at;
use wasmcm_core::validation::{NameFormat, dns1123_label};
use wasmcm_guest::{Event, EventType, Intent, Kind, ObjectRef, Outcome, PatchType, PluginInfo, Propagation};

use crate::key::Key;
use crate::writes::expectations::Expectations;
use crate::writes::scope::Tenancy;

pub(crate) use wasmcm_core::ApiError;

/// The API as the writer needs it. `&self` and `Send` futures: the writes of a batch run
/// concurrently.
pub trait WriteApi: Sync {
    /// Returns the object as stored (with its generated name).
    fn create(&self, object: Value) -> impl Future<Output = Result<Value, ApiError>> + Send;
    fn update(&self, object: Value) -> impl Future<Output = Result<Value, ApiError>> + Send;
    fn update_status(&self, object: Value) -> impl Future<Output = Result<Value, ApiError>> + Send;
    fn delete(
        &self,
        target: &ObjectRef,
        uid: Option<&str>,
        propagation: Option<Propagation>,
    ) -> impl Future<Output = Result<(), ApiError>> + Send;
    /// PATCH of `target` (its status subresource when `status`); returns the object as stored.
    fn patch(
        &self,
        target: &ObjectRef,
        patch_type: PatchType,
        body: Value,
        status: bool,
    ) -> impl Future<Output = Result<Value, ApiError>> + Send;
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
    Patch,
    PatchStatus,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::UpdateStatus => "update-status",
            Verb::Delete => "delete",
            Verb::Patch => "patch",
            Verb::PatchStatus => "patch-status",
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
    Delete { target: ObjectRef, uid: Option<String>, propagation: Option<Propagation>, tracked: bool },
    Patch { target: ObjectRef, patch_type: PatchType, body: Value, status: bool },
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
    let key = Key::new(namespace, name);
    for batch in &outcome.batches {
        let mut failure: Option<String> = None;
        let mut ops = Vec::new();
        for intent in batch {
            let checked = match check(plugin, &primary, intent) {
                Ok(op) => match context.tenancy {
                    Some(t) => in_scope(api, t, &primary, op).await,
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
            check_target(plugin, primary, &d.target.kind, &d.target.namespace).map_err(|r| refusal(what.clone(), r))?;
            if d.target.name.is_empty() {
                return Err(refusal(what, "a delete names its target (metadata.name)".into()));
            }
            check_names(&d.target.kind, &d.target.namespace, &d.target.name, "").map_err(|r| refusal(what, r))?;
            let mut target = d.target.clone();
            if target.namespace.is_empty() {
                target.namespace = primary.namespace.clone();
            }
            let tracked = plugin.owns.contains(&target.kind);
            return Ok(Op::Delete { target, uid: d.uid.clone(), propagation: d.propagation, tracked });
        }
        Intent::Patch(p) => return check_patch(plugin, primary, p),
        Intent::Event(e) => {
            let what = || format!("event {}", e.reason);
            let r = &e.regarding;
            if !primary.namespace.is_empty() && r.namespace != primary.namespace {
                let reason = format!("events are confined to namespace {:?}", primary.namespace);
                return Err(refusal(what(), reason));
            }
            if primary.namespace.is_empty() && r.namespace.is_empty() && r != primary {
                let reason = format!(
                    "events of the cluster-scoped {} {} regard it or objects in namespaces the plugin may act in, not \
                     {} {}",
                    primary.kind, primary.name, r.kind, r.name
                );
                return Err(refusal(what(), reason));
            }
            // The event's own name and namespace are made of these.
            let bad = NameFormat::PathSegment.errors(&r.name, false);
            if r.name.is_empty() || !bad.is_empty() {
                return Err(refusal(what(), invalid("regarding.name", &r.name, &bad)));
            }
            if let bad @ [_, ..] = dns1123_label(&r.namespace).as_slice()
                && !r.namespace.is_empty()
            {
                return Err(refusal(what(), invalid("regarding.namespace", &r.namespace, bad)));
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
    check_target(plugin, primary, &kind, &ns).map_err(|r| refusal(what.clone(), r))?;
    check_names(&kind, &ns, &name, str_at(&object, "/metadata/generateName")).map_err(|r| refusal(what.clone(), r))?;
    if verb != Verb::Create {
        if name.is_empty() {
            return Err(refusal(what, format!("an {} names its object (metadata.name)", verb.as_str())));
        }
        if str_at(&object, "/metadata/resourceVersion").is_empty() {
            let reason = "no metadata.resourceVersion: an unconditional PUT would overwrite whatever changed since \
                          the object was read (start the object from the one read, which carries it)";
            return Err(refusal(what, reason.into()));
        }
    }
    let labels = object.pointer("/metadata/labels").and_then(Value::as_object);
    if let Some(label) =
        [SHARD_GROUP_LABEL, SHARD_ROLE_LABEL].into_iter().find(|l| labels.is_some_and(|m| m.contains_key(*l)))
    {
        let reason = format!("the label {label} marks the host's shard group, which no plugin writes");
        return Err(refusal(what, reason));
    }
    if ns.is_empty() && !primary.namespace.is_empty() {
        object["metadata"]["namespace"] = json!(primary.namespace);
    }
    // Only children the primary controls come back to its key through the informers.
    let counted = verb == Verb::Create && controlled_by(&object, primary);
    Ok(Op::Write { verb, kind, object, name, counted })
}

/// A patch intent, checked: its target as a delete's, its document of its type, the
/// resourceVersion precondition written into it, and no shard-group label named anywhere in it.
fn check_patch(plugin: &PluginInfo, primary: &ObjectRef, p: &wasmcm_guest::Patch) -> Result<Op, Refusal> {
    let t = &p.target;
    let what = format!("{} {} {}/{}", if p.status { "patch-status" } else { "patch" }, t.kind, t.namespace, t.name);
    let refuse = |reason: String| Refusal { intent: what.clone(), reason };
    check_target(plugin, primary, &t.kind, &t.namespace).map_err(refuse)?;
    if t.name.is_empty() {
        return Err(refuse("a patch names its target (metadata.name)".into()));
    }
    check_names(&t.kind, &t.namespace, &t.name, "").map_err(refuse)?;
    let mut body: Value = serde_json::from_str(&p.body).map_err(|e| refuse(format!("invalid JSON: {e}")))?;
    match (p.patch_type, &mut body) {
        (PatchType::Json, Value::Array(ops)) => {
            if let Some(rv) = &p.resource_version {
                ops.insert(0, json!({"op": "test", "path": "/metadata/resourceVersion", "value": rv}));
            }
        }
        (PatchType::Json, _) => return Err(refuse("a JSON patch is a list of operations".into())),
        (_, Value::Object(doc)) => {
            if let Some(rv) = &p.resource_version {
                let meta = doc.entry("metadata").or_insert_with(|| json!({}));
                let Some(meta) = meta.as_object_mut() else {
                    return Err(refuse("the patch's metadata is not an object".into()));
                };
                meta.insert("resourceVersion".into(), json!(rv));
            }
        }
        _ => return Err(refuse("a merge or strategic merge patch is a JSON object".into())),
    }
    if let Some(label) = [SHARD_GROUP_LABEL, SHARD_ROLE_LABEL].into_iter().find(|l| names(&body, l)) {
        return Err(refuse(format!("the label {label} marks the host's shard group, which no plugin writes")));
    }
    let mut target = t.clone();
    if target.namespace.is_empty() {
        target.namespace = primary.namespace.clone();
    }
    Ok(Op::Patch { target, patch_type: p.patch_type, body, status: p.status })
}

/// Whether `label` appears anywhere in `v`, as a key or in a string (a JSON patch names it in a
/// path, escaped as RFC 6901 does).
fn names(v: &Value, label: &str) -> bool {
    let escaped = label.replace('~', "~0").replace('/', "~1");
    let hit = |s: &str| s.contains(label) || s.contains(&escaped);
    match v {
        Value::String(s) => hit(s),
        Value::Array(items) => items.iter().any(|i| names(i, label)),
        Value::Object(map) => map.iter().any(|(k, v)| hit(k) || names(v, label)),
        _ => false,
    }
}

/// Upstream's `field.Invalid` message.
fn invalid(field: &str, value: &str, why: &[String]) -> String {
    let why = if why.is_empty() { "must not be empty".to_string() } else { why.join(", ") };
    format!("{field}: Invalid value: {value:?}: {why}")
}

/// A write's name, generateName and namespace, as upstream's validation of `kind` requires them
/// before any of them becomes part of a URL path.
fn check_names(kind: &Kind, namespace: &str, name: &str, generate_name: &str) -> Result<(), String> {
    let group = kind.api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let format = NameFormat::of(group, &kind.kind);
    for (field, value, prefix) in [("metadata.name", name, false), ("metadata.generateName", generate_name, true)] {
        if let bad @ [_, ..] = format.errors(value, prefix).as_slice()
            && !value.is_empty()
        {
            return Err(invalid(field, value, bad));
        }
    }
    if let bad @ [_, ..] = dns1123_label(namespace).as_slice()
        && !namespace.is_empty()
    {
        return Err(invalid("metadata.namespace", namespace, bad));
    }
    Ok(())
}

/// The tenancy's verdict on a checked write (the kind's scope learnt from discovery) or on an
/// event of a cluster-scoped primary.
async fn in_scope(api: &impl WriteApi, tenancy: Tenancy<'_>, primary: &ObjectRef, op: Op) -> Result<Op, Refusal> {
    let (verb, kind, namespace, name) = match &op {
        Op::Write { verb, kind, object, name, .. } => {
            (verb.as_str(), kind, str_at(object, "/metadata/namespace"), name)
        }
        Op::Delete { target, .. } => ("delete", &target.kind, target.namespace.as_str(), &target.name),
        Op::Patch { target, status, .. } => {
            (if *status { "patch-status" } else { "patch" }, &target.kind, target.namespace.as_str(), &target.name)
        }
        Op::Event(e) if primary.namespace.is_empty() => {
            return match tenancy.admits_event(primary, &e.regarding) {
                Ok(()) => Ok(op),
                Err(reason) => Err(Refusal { intent: format!("event {}", e.reason), reason }),
            };
        }
        Op::Event(_) => return Ok(op),
    };
    let what = format!("{verb} {kind} {namespace}/{}", if name.is_empty() { "<generated>" } else { name });
    let verdict = match api.namespaced(kind).await {
        Ok(namespaced) => tenancy.admits_write(kind, namespace, name, namespaced),
        Err(e) => Err(e.message),
    };
    let verdict = verdict.and_then(|()| match &op {
        Op::Write { verb: Verb::Create | Verb::Update, kind, object, .. } => tenancy.admits_pods(kind, object),
        // A Pod's status subresource takes its annotations too: status patches are held to it.
        Op::Patch { target, patch_type, body, .. } => {
            tenancy.admits_pod_patch(&target.kind, *patch_type == PatchType::Json, body)
        }
        _ => Ok(()),
    });
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
        Op::Delete { target, uid, propagation, .. } => {
            api.delete(target, uid.as_deref(), *propagation).await.map(|_| None)
        }
        Op::Patch { target, patch_type, body, status } => {
            api.patch(target, *patch_type, body.clone(), *status).await.map(|_| None)
        }
        Op::Event(_) => Ok(None),
    }
}

fn settle(
    report: &mut Report,
    primary: &ObjectRef,
    op: &Op,
    result: Sent,
    expectations: Option<&Expectations>,
    key: &Key,
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
        // PodControl records no event for a patch.
        Op::Patch { target, status, .. } => {
            let verb = if *status { Verb::PatchStatus } else { Verb::Patch };
            record(report, verb, target.clone(), result.map(drop))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writes::scope::{HostIdentity, Scope};
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// Records the calls it is asked for; cluster-scoped kinds are Namespaces.
    #[derive(Default)]
    struct Calls(Mutex<Vec<String>>);

    impl Calls {
        fn push(&self, call: String) {
            self.0.lock().unwrap().push(call);
        }

        fn taken(&self) -> Vec<String> {
            std::mem::take(&mut *self.0.lock().unwrap())
        }
    }

    impl WriteApi for Calls {
        async fn create(&self, object: Value) -> Result<Value, ApiError> {
            self.push(format!("create {}", str_at(&object, "/metadata/name")));
            Ok(object)
        }
        async fn update(&self, object: Value) -> Result<Value, ApiError> {
            self.push(format!("update {}", str_at(&object, "/metadata/name")));
            Ok(object)
        }
        async fn update_status(&self, object: Value) -> Result<Value, ApiError> {
            self.push(format!("update-status {}", str_at(&object, "/metadata/name")));
            Ok(object)
        }
        async fn delete(&self, target: &ObjectRef, _: Option<&str>, p: Option<Propagation>) -> Result<(), ApiError> {
            match p {
                Some(p) => self.push(format!("delete {} ({})", target.name, p.as_str())),
                None => self.push(format!("delete {}", target.name)),
            }
            Ok(())
        }
        async fn patch(&self, target: &ObjectRef, t: PatchType, body: Value, status: bool) -> Result<Value, ApiError> {
            let status = if status { " status" } else { "" };
            self.push(format!("patch{status} {} {t:?} {body}", target.name));
            Ok(json!({}))
        }
        async fn namespaced(&self, kind: &Kind) -> Result<bool, ApiError> {
            Ok(kind.kind != "Namespace")
        }
        async fn record_event(&self, event: &Event, _: Option<&str>) -> Result<(), ApiError> {
            self.push(format!("event {} {}/{}", event.reason, event.regarding.namespace, event.regarding.name));
            Ok(())
        }
    }

    fn plugin(primary: Kind) -> PluginInfo {
        PluginInfo {
            name: "p".into(),
            version: "1".into(),
            primary,
            owns: vec![],
            watches: vec![],
            writes: vec![
                Kind::new("v1", "ConfigMap"),
                Kind::new("v1", "Pod"),
                Kind::new("apps/v1", "Deployment"),
                Kind::new("coordination.k8s.io/v1", "Lease"),
                Kind::new("rbac.authorization.k8s.io/v1", "Role"),
            ],
            contract: "0".into(),
        }
    }

    fn no_labels(_: &str) -> Option<BTreeMap<String, String>> {
        None
    }

    /// What the writer sends and refuses of `intents`, for the key `namespace/name` of a
    /// `primary`, under the default scope of a host in namespace `wasmcm`.
    fn write(primary: Kind, namespace: &str, name: &str, intents: Vec<Intent>) -> (Vec<String>, Vec<String>) {
        let host =
            HostIdentity { namespace: Some("wasmcm".into()), lease: Some(("kube-system".into(), "wasmcm".into())) };
        let scope = Scope::default();
        let context = Context {
            tenancy: Some(Tenancy { scope: &scope, host: &host, namespace_labels: &no_labels }),
            ..Context::default()
        };
        let api = Calls::default();
        let outcome = Outcome { batches: intents.into_iter().map(|i| vec![i]).collect(), requeue_after_ms: None };
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let report = rt.block_on(write_outcome(&api, &plugin(primary), namespace, name, &outcome, context));
        (api.taken(), report.refused.into_iter().map(|r| format!("{}: {}", r.intent, r.reason)).collect())
    }

    fn event(kind: Kind, namespace: &str, name: &str) -> Intent {
        Intent::Event(Event {
            regarding: ObjectRef { kind, namespace: namespace.into(), name: name.into() },
            event_type: EventType::Normal,
            reason: "Seen".into(),
            message: "m".into(),
        })
    }

    #[test]
    fn events_stay_in_the_keys_scope() {
        let ns = Kind::new("v1", "Namespace");
        let cm = Kind::new("v1", "ConfigMap");
        // A cluster-scoped primary (a Namespace): about itself, or an object in a namespace in
        // scope; not a withheld namespace, not another cluster-scoped object.
        let (sent, refused) = write(ns.clone(), "", "team-a", vec![event(ns.clone(), "", "team-a")]);
        assert_eq!((sent, refused), (vec!["event Seen /team-a".to_string()], vec![]));
        let (sent, refused) = write(ns.clone(), "", "team-a", vec![event(cm.clone(), "team-a", "x")]);
        assert_eq!((sent, refused.len()), (vec!["event Seen team-a/x".to_string()], 0));
        let (sent, refused) = write(ns.clone(), "", "team-a", vec![event(cm.clone(), "kube-system", "x")]);
        assert!(sent.is_empty(), "{sent:?}");
        assert!(refused[0].starts_with("event Seen: namespace \"kube-system\" is a system namespace"), "{refused:?}");
        let (sent, refused) = write(ns.clone(), "", "team-a", vec![event(ns.clone(), "", "kube-system")]);
        assert!(sent.is_empty(), "{sent:?}");
        assert!(refused[0].contains("regard it or objects in namespaces the plugin may act in"), "{refused:?}");
        // A namespaced primary's: its namespace only.
        let (sent, refused) = write(cm.clone(), "team-a", "k", vec![event(cm.clone(), "team-b", "x")]);
        assert!(sent.is_empty() && refused[0].contains("events are confined to namespace \"team-a\""), "{refused:?}");
        // Names that would not stay one URL path segment.
        let (sent, refused) = write(cm.clone(), "team-a", "k", vec![event(cm, "team-a", "../x")]);
        assert!(sent.is_empty() && refused[0].contains("regarding.name: Invalid value: \"../x\": may not contain '/'"));
    }

    fn object(kind: &str, api_version: &str, metadata: Value) -> String {
        json!({"apiVersion": api_version, "kind": kind, "metadata": metadata}).to_string()
    }

    #[test]
    fn updates_without_a_resource_version_are_refused_before_sending() {
        let cm = Kind::new("v1", "ConfigMap");
        let update = |rv: Option<&str>| {
            let mut meta = json!({"name": "a", "namespace": "team-a"});
            if let Some(rv) = rv {
                meta["resourceVersion"] = json!(rv);
            }
            vec![
                Intent::Update(object("ConfigMap", "v1", meta.clone())),
                Intent::UpdateStatus(object("ConfigMap", "v1", meta)),
            ]
        };
        let (sent, refused) = write(cm.clone(), "team-a", "a", update(None));
        assert!(sent.is_empty(), "{sent:?}");
        assert_eq!(refused.len(), 1, "the first failing batch stops the outcome: {refused:?}");
        assert!(refused[0].starts_with("update v1/ConfigMap team-a/a: no metadata.resourceVersion"), "{refused:?}");
        let (sent, _) = write(cm.clone(), "team-a", "a", update(Some("7")));
        assert_eq!(sent, ["update a", "update-status a"]);
        let (_, refused) = write(
            cm.clone(),
            "team-a",
            "a",
            vec![Intent::UpdateStatus(object("ConfigMap", "v1", json!({"name": "a"})))],
        );
        assert!(refused[0].contains("no metadata.resourceVersion"), "{refused:?}");
    }

    #[test]
    fn names_are_validated_as_upstream_does_before_they_reach_a_path() {
        let cm = Kind::new("v1", "ConfigMap");
        for (intent, expected) in [
            (
                Intent::Create(object("ConfigMap", "v1", json!({"name": "a/status"}))),
                "metadata.name: Invalid value: \"a/status\": a lowercase RFC 1123 subdomain",
            ),
            (Intent::Create(object("ConfigMap", "v1", json!({"name": ".."}))), "metadata.name: Invalid value: \"..\""),
            (
                Intent::Create(object("ConfigMap", "v1", json!({"name": "a%2Fb"}))),
                "metadata.name: Invalid value: \"a%2Fb\"",
            ),
            (
                Intent::Create(object("ConfigMap", "v1", json!({"generateName": "x/"}))),
                "metadata.generateName: Invalid value: \"x/\"",
            ),
            (
                Intent::Create(object("Role", "rbac.authorization.k8s.io/v1", json!({"name": "a/b"}))),
                "metadata.name: Invalid value: \"a/b\": may not contain '/'",
            ),
            (
                Intent::Update(object(
                    "ConfigMap",
                    "v1",
                    json!({"name": "a", "namespace": "../kube-system", "resourceVersion": "1"}),
                )),
                // Another namespace than the key's is refused before its name is looked at.
                "writes are confined to namespace \"team-a\"",
            ),
            (
                Intent::Update(object("ConfigMap", "v1", json!({"resourceVersion": "1"}))),
                "an update names its object (metadata.name)",
            ),
            (
                Intent::Delete(wasmcm_guest::DeleteTarget {
                    target: ObjectRef { kind: cm.clone(), namespace: String::new(), name: "a/b".into() },
                    uid: None,
                    propagation: None,
                }),
                "metadata.name: Invalid value: \"a/b\"",
            ),
            (
                Intent::Delete(wasmcm_guest::DeleteTarget {
                    target: ObjectRef { kind: cm.clone(), namespace: String::new(), name: String::new() },
                    uid: None,
                    propagation: None,
                }),
                "a delete names its target",
            ),
        ] {
            let (sent, refused) = write(cm.clone(), "team-a", "k", vec![intent]);
            assert!(sent.is_empty(), "{expected}: {sent:?}");
            assert!(refused.first().is_some_and(|r| r.contains(expected)), "{expected}: {refused:?}");
        }
        // Names of the kind's own format pass: an RBAC name is a path segment, not a subdomain.
        let role = object("Role", "rbac.authorization.k8s.io/v1", json!({"name": "system:reader"}));
        assert_eq!(write(cm, "team-a", "k", vec![Intent::Create(role)]).0, ["create system:reader"]);
    }

    #[test]
    fn no_plugin_writes_the_shard_groups_labels() {
        let lease = Kind::new("coordination.k8s.io/v1", "Lease");
        for label in [SHARD_GROUP_LABEL, SHARD_ROLE_LABEL] {
            for kind in [("Lease", "coordination.k8s.io/v1"), ("ConfigMap", "v1")] {
                let meta = json!({"name": "forged", "resourceVersion": "1", "labels": {label: "wasmcm"}});
                let (sent, refused) =
                    write(lease.clone(), "team-a", "k", vec![Intent::Create(object(kind.0, kind.1, meta.clone()))]);
                assert!(sent.is_empty(), "{sent:?}");
                assert!(
                    refused[0]
                        .ends_with(&format!("the label {label} marks the host's shard group, which no plugin writes"))
                );
                let (sent, _) = write(lease.clone(), "team-a", "k", vec![Intent::Update(object(kind.0, kind.1, meta))]);
                assert!(sent.is_empty(), "{sent:?}");
            }
        }
    }

    #[test]
    fn pods_and_templates_are_held_to_the_manifest() {
        let cm = Kind::new("v1", "ConfigMap");
        let pod = |spec: Value| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}).to_string()
        };
        let c = |security: Value| json!([{"name": "c", "image": "nginx", "securityContext": security}]);
        let (sent, refused) =
            write(cm.clone(), "team-a", "k", vec![Intent::Create(pod(json!({"containers": c(json!({}))})))]);
        assert_eq!((sent, refused.len()), (vec!["create p".to_string(), "event SuccessfulCreate team-a/k".into()], 0));
        let foreign =
            pod(json!({"serviceAccountName": "clusterrole-aggregation-controller", "containers": c(json!({}))}));
        let (sent, refused) = write(cm.clone(), "team-a", "k", vec![Intent::Create(foreign)]);
        assert!(sent.is_empty());
        assert!(refused[0].contains("spec.serviceAccountName \"clusterrole-aggregation-controller\""), "{refused:?}");
        let privileged = pod(json!({"containers": c(json!({"privileged": true}))}));
        let (sent, refused) = write(cm.clone(), "team-a", "k", vec![Intent::Create(privileged)]);
        assert!(sent.is_empty());
        assert!(
            refused[0].contains("the pod violates PodSecurity \"baseline:latest\" (scope.podSecurity): privileged")
        );
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "resourceVersion": "3"},
            "spec": {"template": {"spec": {"serviceAccount": "admin", "containers": c(json!({}))}}}})
        .to_string();
        let (sent, refused) = write(cm, "team-a", "k", vec![Intent::Update(deployment)]);
        assert!(sent.is_empty());
        assert!(refused[0].contains("spec.template.spec.serviceAccount \"admin\""), "{refused:?}");
    }

    #[test]
    fn patches_carry_their_precondition_in_the_document_and_are_held_to_the_plugins_bounds() {
        use wasmcm_guest::Patch;
        let cm = Kind::new("v1", "ConfigMap");
        let target = |kind: &Kind, ns: &str, name: &str| ObjectRef {
            kind: kind.clone(),
            namespace: ns.into(),
            name: name.into(),
        };
        let pod = Kind::new("v1", "Pod");
        let intents = vec![
            Intent::Patch(wasmcm_guest::finalizer::remove_patch(
                target(&pod, "", "p1"),
                "batch.kubernetes.io/job-tracking",
            )),
            Intent::Patch(
                Patch::merge(target(&cm, "team-a", "c"), &json!({"data": {"k": "v"}})).with_resource_version("7"),
            ),
            Intent::Patch(
                Patch::json(target(&cm, "", "c"), &json!([{"op": "remove", "path": "/data/k"}]))
                    .with_resource_version("8")
                    .to_status(),
            ),
            Intent::Delete(wasmcm_guest::DeleteTarget {
                propagation: Some(Propagation::Background),
                ..wasmcm_guest::DeleteTarget::new(target(&cm, "", "old"), None)
            }),
        ];
        let (sent, refused) = write(cm.clone(), "team-a", "k", intents);
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(
            sent,
            [
                r#"patch p1 Strategic {"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.kubernetes.io/job-tracking"]}}"#,
                r#"patch c Merge {"data":{"k":"v"},"metadata":{"resourceVersion":"7"}}"#,
                r#"patch status c Json [{"op":"test","path":"/metadata/resourceVersion","value":"8"},{"op":"remove","path":"/data/k"}]"#,
                "delete old (Background)",
            ]
        );

        for (intent, expected) in [
            (
                Patch::json(target(&cm, "", "c"), &json!({"op": "remove"})),
                "patch v1/ConfigMap /c: a JSON patch is a list of operations",
            ),
            (Patch::merge(target(&cm, "", "c"), &json!([1])), "a merge or strategic merge patch is a JSON object"),
            (Patch { body: "{".into(), ..Patch::merge(target(&cm, "", "c"), &json!({})) }, "invalid JSON"),
            (Patch::merge(target(&cm, "", ""), &json!({})), "a patch names its target (metadata.name)"),
            (Patch::merge(target(&cm, "other", "c"), &json!({})), "writes are confined to namespace \"team-a\""),
            (Patch::merge(target(&Kind::new("v1", "Secret"), "", "s"), &json!({})), "may not write v1/Secret"),
            (Patch::merge(target(&cm, "", "a/b"), &json!({})), "metadata.name: Invalid value: \"a/b\""),
            (
                Patch::merge(target(&cm, "", "c"), &json!({"metadata": "x"})).with_resource_version("1"),
                "the patch's metadata is not an object",
            ),
            (
                Patch::merge(target(&cm, "", "c"), &json!({"metadata": {"labels": {SHARD_GROUP_LABEL: "g"}}})),
                "which no plugin writes",
            ),
            (
                Patch::json(
                    target(&cm, "", "c"),
                    &json!([{"op": "add", "path": format!("/metadata/labels/{}", SHARD_ROLE_LABEL.replace('/', "~1")), "value": "x"}]),
                ),
                "which no plugin writes",
            ),
            (
                Patch::strategic(target(&pod, "", "p"), &json!({"spec": {"serviceAccountName": "admin"}})),
                "the patch may change spec of the pods a v1/Pod runs",
            ),
        ] {
            let (sent, refused) = write(cm.clone(), "team-a", "k", vec![Intent::Patch(intent)]);
            assert!(sent.is_empty(), "{expected}: {sent:?}");
            assert!(refused.first().is_some_and(|r| r.contains(expected)), "{expected}: {refused:?}");
        }
    }
}
