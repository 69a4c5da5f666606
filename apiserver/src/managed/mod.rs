//! Field ownership (`metadata.managedFields`) and server-side apply, as kube-apiserver does
//! them with structured-merge-diff (`merge.Updater`):
//!
//! - every create, update and patch records which fields its manager set (operation `Update`),
//!   taking them over from the managers that had them;
//! - an apply (`application/apply-patch+yaml`) merges its configuration into the object by the
//!   schema (containers by name, ports by port and protocol, ...; a custom resource's lists by
//!   its CRD's `x-kubernetes-list-type` and keys), owns exactly the fields it sets (operation
//!   `Apply`), removes the fields it set last time and sets no more (unless someone else owns
//!   them), and is refused with 409 where it would change a field another manager owns to
//!   another value, unless forced (then it takes them over);
//! - a request that sets `managedFields` itself sets them as given (how kubectl moves ownership
//!   from client-side to server-side apply).
//!
//! Object metadata the server owns (name, uid, resourceVersion, ...) is nobody's, and status is
//! owned only through the status subresource, as kube-apiserver's reset fields.
//!
//! It decides ownership and merges; storing, defaulting and validating are `api`'s.

mod fields;
mod typed;

use serde_json::{Map, Value, json};
use wasmcm_core::{ApiError, Cause};

use fields::{Element, FieldSet};
pub(crate) use typed::Ty;

/// Who writes: the request's field manager, the group version it wrote in, the subresource
/// (`""` or `"status"`), and when.
#[derive(Clone, Debug)]
pub(crate) struct Writer {
    pub manager: String,
    pub api_version: String,
    pub subresource: &'static str,
    pub time: String,
}

impl Writer {
    /// The manager a request without `fieldManager` gets: its User-Agent up to the first `/`,
    /// as kube-apiserver derives it (`kubectl/v1.35.2 (linux/amd64) ...` → `kubectl`).
    pub(crate) fn default_manager(user_agent: &str) -> String {
        let name = user_agent.split('/').next().unwrap_or_default().trim();
        let name: String = name.chars().filter(|c| !c.is_control()).take(128).collect();
        if name.is_empty() { "unknown".into() } else { name }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operation {
    Apply,
    Update,
}

/// One `managedFields` entry.
#[derive(Clone, Debug)]
struct Entry {
    manager: String,
    operation: Operation,
    api_version: String,
    time: Option<String>,
    subresource: String,
    fields: FieldSet,
}

impl Entry {
    fn is(&self, writer: &Writer, operation: Operation) -> bool {
        self.manager == writer.manager && self.operation == operation && self.subresource == writer.subresource
    }

    fn to_json(&self) -> Value {
        let mut e = Map::new();
        e.insert("manager".into(), json!(self.manager));
        e.insert("operation".into(), json!(if self.operation == Operation::Apply { "Apply" } else { "Update" }));
        e.insert("apiVersion".into(), json!(self.api_version));
        if let Some(t) = &self.time {
            e.insert("time".into(), json!(t));
        }
        e.insert("fieldsType".into(), json!("FieldsV1"));
        e.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            e.insert("subresource".into(), json!(self.subresource));
        }
        Value::Object(e)
    }

    fn from_json(v: &Value) -> Result<Entry, String> {
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
        let operation = match text("operation").as_deref() {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            other => {
                return Err(format!(
                    "operation: Unsupported value: {other:?}: supported values: \"Apply\", \"Update\""
                ));
            }
        };
        if let Some(t) = text("fieldsType").filter(|t| t != "FieldsV1") {
            return Err(format!("fieldsType: Unsupported value: {t:?}: supported values: \"FieldsV1\""));
        }
        let fields = match v.get("fieldsV1") {
            Some(f) => FieldSet::from_fields_v1(f)?,
            None => FieldSet::default(),
        };
        Ok(Entry {
            manager: text("manager").unwrap_or_default(),
            operation,
            api_version: text("apiVersion").unwrap_or_default(),
            time: text("time"),
            subresource: text("subresource").unwrap_or_default(),
            fields,
        })
    }
}

fn entries(object: &Value) -> Result<Vec<Entry>, ApiError> {
    let Some(list) = object.pointer("/metadata/managedFields").and_then(Value::as_array) else { return Ok(Vec::new()) };
    list.iter()
        .map(Entry::from_json)
        .collect::<Result<_, _>>()
        .map_err(|why| ApiError::bad_request(format!("metadata.managedFields: {why}")))
}

fn set_entries(object: &mut Value, entries: &[Entry]) {
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else { return };
    if entries.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(entries.iter().map(Entry::to_json).collect()));
    }
}

/// What no manager owns: the metadata the server sets (exactly these paths, not what is under
/// them: `metadata` itself, but not its labels), as kube-apiserver's stripped fields.
fn server_owned() -> FieldSet {
    let mut set = FieldSet::default();
    let field = |name: &str| Element::Field(name.into());
    for top in ["apiVersion", "kind", "metadata"] {
        set.insert(&[field(top)]);
    }
    for name in
        ["name", "namespace", "creationTimestamp", "selfLink", "uid", "generation", "managedFields", "resourceVersion"]
    {
        set.insert(&[field("metadata"), field(name)]);
    }
    set
}

/// What a write through `subresource` neither owns nor changes, with all under it, as
/// kube-apiserver's reset fields: the status through the main resource (of a kind with a
/// status subresource); through the status subresource, everything but status and metadata.
fn reset(subresource: &str, has_status: bool, object: &Value) -> FieldSet {
    let mut set = FieldSet::default();
    match subresource {
        "status" => {
            let top: Vec<&String> = object.as_object().map(|o| o.keys().collect()).unwrap_or_default();
            for k in top.into_iter().filter(|k| !matches!(k.as_str(), "status" | "metadata" | "apiVersion" | "kind")) {
                set.insert(&[Element::Field(k.clone())]);
            }
        }
        _ if has_status => set.insert(&[Element::Field("status".into())]),
        _ => {}
    }
    set
}

/// A set without what no one owns.
fn owned_part(set: &FieldSet, reset: &FieldSet) -> FieldSet {
    set.difference(&server_owned()).recursive_difference(reset)
}

/// A comparison without what no one owns.
fn owned_changes(c: typed::Comparison, reset: &FieldSet) -> typed::Comparison {
    let strip = |s: FieldSet| owned_part(&s, reset);
    typed::Comparison { added: strip(c.added), removed: strip(c.removed), modified: strip(c.modified) }
}

/// Sets `new`'s managedFields after a create (`old` is `None`) or an update by `writer`: it owns
/// what it added or changed, which no one else owns any more, and no one owns what it removed.
/// A request that changed `managedFields` itself keeps them as it set them.
pub(crate) fn track_update(
    old: Option<&Value>,
    new: &mut Value,
    ty: Ty<'_>,
    writer: &Writer,
    has_status: bool,
) -> Result<(), ApiError> {
    let given = new.pointer("/metadata/managedFields").cloned();
    let previous = old.and_then(|o| o.pointer("/metadata/managedFields").cloned());
    if given.is_some() && given != previous {
        // Set by the request: `[{}]` clears them, as upstream.
        let cleared = given.as_ref().and_then(Value::as_array).is_some_and(|l| l.len() == 1 && l[0] == json!({}));
        let list = if cleared { Vec::new() } else { entries(new)? };
        set_entries(new, &list);
        return Ok(());
    }
    let mut list = match old {
        Some(o) => entries(o)?,
        None => Vec::new(),
    };
    let empty = json!({});
    let before = old.unwrap_or(&empty);
    let reset = reset(writer.subresource, has_status, new);
    let cmp = owned_changes(typed::compare(&strip(before), &strip(new), ty), &reset);
    if cmp.is_empty() {
        // Nothing of anyone's changed: the entries stay as they were, times included.
        set_entries(new, &list);
        return Ok(());
    }
    let changed = cmp.changed();
    for e in list.iter_mut().filter(|e| !e.is(writer, Operation::Update)) {
        e.fields = e.fields.difference(&changed).difference(&cmp.removed);
    }
    let mine = match list.iter().position(|e| e.is(writer, Operation::Update)) {
        Some(i) => list.remove(i).fields,
        None => FieldSet::default(),
    };
    let fields = owned_part(&mine.union(&changed).difference(&cmp.removed), &reset);
    list.retain(|e| !e.fields.is_empty());
    if !fields.is_empty() {
        list.push(Entry {
            manager: writer.manager.clone(),
            operation: Operation::Update,
            api_version: writer.api_version.clone(),
            time: Some(writer.time.clone()),
            subresource: writer.subresource.into(),
            fields,
        });
    }
    set_entries(new, &list);
    Ok(())
}

/// The object without its managedFields, for comparing.
fn strip(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    v
}

/// Applies `config` (an apply configuration, already parsed) by `writer` to `live` (`None`:
/// the object does not exist yet): the object to store, with its managedFields set.
pub(crate) fn apply(
    live: Option<&Value>,
    config: &Value,
    ty: Ty<'_>,
    writer: &Writer,
    force: bool,
    has_status: bool,
) -> Result<Value, ApiError> {
    let empty = json!({});
    let live_v = strip(live.unwrap_or(&empty));
    let mut list = match live {
        Some(l) => entries(l)?,
        None => Vec::new(),
    };
    // Status is applied through the status subresource only.
    let reset = reset(writer.subresource, has_status, config);
    let mut config = strip(config);
    if writer.subresource.is_empty()
        && has_status
        && let Some(o) = config.as_object_mut()
    {
        o.remove("status");
    }
    let merged = typed::merge(&live_v, &config, ty);
    let last = list.iter().position(|e| e.is(writer, Operation::Apply)).map(|i| list.remove(i).fields);
    let applied = owned_part(&typed::field_set(&config, ty), &reset);
    // What it set last time and sets no more goes, unless someone else (or it, now) owns it.
    let mut pruned = merged;
    if let Some(last) = &last {
        let owned = list.iter().fold(applied.clone(), |acc, e| acc.union(&e.fields));
        let gone = owned_part(&last.difference(&owned), &reset);
        pruned = typed::remove(&pruned, &gone, &owned, ty);
    }
    let cmp = owned_changes(typed::compare(&live_v, &pruned, ty), &reset);
    let changed = cmp.changed();
    let conflicts: Vec<(String, String)> = list
        .iter()
        .flat_map(|e| {
            let who = describe(e);
            e.fields.intersection(&changed).paths().into_iter().map(move |p| (who.clone(), p))
        })
        .collect();
    if !conflicts.is_empty() && !force {
        return Err(conflict(&conflicts));
    }
    for e in list.iter_mut() {
        e.fields = e.fields.difference(&changed).difference(&cmp.removed);
    }
    list.retain(|e| !e.fields.is_empty());
    list.push(Entry {
        manager: writer.manager.clone(),
        operation: Operation::Apply,
        api_version: writer.api_version.clone(),
        time: Some(writer.time.clone()),
        subresource: writer.subresource.into(),
        fields: applied,
    });
    let mut out = pruned;
    if let Some(meta) = live.and_then(|l| l.get("metadata")) {
        // The stored object's server-owned metadata stays (resourceVersion for the update).
        let target = out.as_object_mut().map(|o| o.entry("metadata").or_insert_with(|| json!({})));
        if let Some(Value::Object(m)) = target {
            for k in ["resourceVersion", "uid", "creationTimestamp", "generation"] {
                if let Some(v) = meta.get(k) {
                    m.insert(k.into(), v.clone());
                }
            }
        }
    }
    set_entries(&mut out, &list);
    Ok(out)
}

/// A manager as kube-apiserver names it in a conflict.
fn describe(e: &Entry) -> String {
    let mut name = format!("{:?}", e.manager);
    if !e.subresource.is_empty() {
        name = format!("{name} with subresource {:?}", e.subresource);
    }
    match (e.operation, &e.time) {
        (Operation::Apply, _) => name,
        (Operation::Update, Some(t)) => format!("{name} using {} at {t}", e.api_version),
        (Operation::Update, None) => format!("{name} using {}", e.api_version),
    }
}

/// 409 as kube-apiserver words an apply conflict, a cause per field.
fn conflict(conflicts: &[(String, String)]) -> ApiError {
    let message = match conflicts {
        [(who, path)] => format!("Apply failed with 1 conflict: conflict with {who}: {path}"),
        _ => {
            let mut by_manager: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
            for (who, path) in conflicts {
                by_manager.entry(who).or_default().push(path);
            }
            let lines: Vec<String> = by_manager
                .iter()
                .map(|(who, paths)| format!("conflicts with {who}:\n- {}", paths.join("\n- ")))
                .collect();
            format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
        }
    };
    let causes = conflicts
        .iter()
        .map(|(who, path)| Cause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {who}"),
            field: path.clone(),
        })
        .collect();
    ApiError::new(409, "Conflict", message).with_causes(causes)
}
