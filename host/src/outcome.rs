//! An outcome as JSON and where two outcomes differ: the one form in which a recording stores
//! what a plugin returned, `simulate` prints it, and shadow rollouts and replays compare two
//! (objects as JSON values, so field order and formatting do not count).
//!
//! It only converts and compares; it neither calls plugins nor writes.

use serde_json::{Value, json};
use wasmcm_guest::{DeleteTarget, Event, EventType, Intent, Kind, ObjectRef, Outcome, Patch, PatchType, Propagation};

/// `{"batches": [[intent, …], …], "requeueAfterMs": n|null}`; each intent one of
/// `{"create"|"update"|"updateStatus": object}`, `{"delete": {apiVersion, kind, namespace, name,
/// uid, propagationPolicy}}`, `{"patch": {apiVersion, kind, namespace, name, type: json|merge|
/// strategic, patch, resourceVersion, status}}`, `{"event": {regarding: {apiVersion, kind,
/// namespace, name}, type, reason, message}}`. An object or patch that is not JSON of its shape
/// stays the string the plugin returned, so it reads back unchanged.
pub(crate) fn outcome_json(outcome: &Outcome) -> Value {
    json!({
        "batches": outcome.batches.iter().map(|b| b.iter().map(intent_json).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "requeueAfterMs": outcome.requeue_after_ms,
    })
}

/// Reads back what [`outcome_json`] wrote; the error names the path of what is wrong.
pub(crate) fn outcome_from_json(v: &Value) -> Result<Outcome, String> {
    let batches = v.get("batches").and_then(Value::as_array).ok_or("batches: a list of batches is required")?;
    let batches = batches
        .iter()
        .enumerate()
        .map(|(b, batch)| {
            let batch = batch.as_array().ok_or_else(|| format!("batches[{b}]: not a list"))?;
            batch
                .iter()
                .enumerate()
                .map(|(i, intent)| intent_from_json(intent).map_err(|e| format!("batches[{b}][{i}]: {e}")))
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let requeue_after_ms = match v.get("requeueAfterMs") {
        None | Some(Value::Null) => None,
        Some(n) => Some(n.as_u64().ok_or("requeueAfterMs: not a whole number of milliseconds")?),
    };
    Ok(Outcome { batches, requeue_after_ms })
}

fn object_json(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::String(text.to_string()),
    }
}

/// A patch document as JSON: a JSON patch's list, another's object; anything else as text.
fn patch_json(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
        _ => Value::String(text.to_string()),
    }
}

fn patch_type_str(t: PatchType) -> &'static str {
    match t {
        PatchType::Json => "json",
        PatchType::Merge => "merge",
        PatchType::Strategic => "strategic",
    }
}

fn object_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn ref_json(r: &ObjectRef) -> Value {
    json!({"apiVersion": r.kind.api_version, "kind": r.kind.kind, "namespace": r.namespace, "name": r.name})
}

fn ref_from_json(v: &Value) -> Result<ObjectRef, String> {
    let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string).ok_or(format!("{k} is missing"));
    Ok(ObjectRef {
        kind: Kind { api_version: field("apiVersion")?, kind: field("kind")? },
        namespace: v.get("namespace").and_then(Value::as_str).unwrap_or("").to_string(),
        name: field("name")?,
    })
}

fn intent_json(i: &Intent) -> Value {
    match i {
        Intent::Create(o) => json!({"create": object_json(o)}),
        Intent::Update(o) => json!({"update": object_json(o)}),
        Intent::UpdateStatus(o) => json!({"updateStatus": object_json(o)}),
        Intent::Delete(d) => {
            let mut target = ref_json(&d.target);
            target["uid"] = json!(d.uid);
            target["propagationPolicy"] = json!(d.propagation.map(Propagation::as_str));
            json!({"delete": target})
        }
        Intent::Patch(p) => {
            let mut target = ref_json(&p.target);
            target["type"] = json!(patch_type_str(p.patch_type));
            target["patch"] = patch_json(&p.body);
            target["resourceVersion"] = json!(p.resource_version);
            target["status"] = json!(p.status);
            json!({"patch": target})
        }
        Intent::Event(e) => json!({"event": {
            "regarding": ref_json(&e.regarding),
            "type": match e.event_type { EventType::Normal => "Normal", EventType::Warning => "Warning" },
            "reason": e.reason,
            "message": e.message,
        }}),
    }
}

fn intent_from_json(v: &Value) -> Result<Intent, String> {
    let Some((verb, body)) = v.as_object().filter(|o| o.len() == 1).and_then(|o| o.iter().next()) else {
        return Err("an intent is an object with one of create, update, updateStatus, delete, patch, event".into());
    };
    let text =
        |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string).ok_or(format!("{verb}.{k} is missing"));
    match verb.as_str() {
        "create" => Ok(Intent::Create(object_text(body))),
        "update" => Ok(Intent::Update(object_text(body))),
        "updateStatus" => Ok(Intent::UpdateStatus(object_text(body))),
        "delete" => Ok(Intent::Delete(DeleteTarget {
            target: ref_from_json(body).map_err(|e| format!("delete.{e}"))?,
            uid: body.get("uid").and_then(Value::as_str).map(str::to_string),
            propagation: match body.get("propagationPolicy") {
                None | Some(Value::Null) => None,
                Some(p) => Some(match p.as_str() {
                    Some("Orphan") => Propagation::Orphan,
                    Some("Background") => Propagation::Background,
                    Some("Foreground") => Propagation::Foreground,
                    _ => return Err(format!("delete.propagationPolicy {p}: Orphan, Background or Foreground")),
                }),
            },
        })),
        "patch" => Ok(Intent::Patch(Patch {
            target: ref_from_json(body).map_err(|e| format!("patch.{e}"))?,
            patch_type: match text("type")?.as_str() {
                "json" => PatchType::Json,
                "merge" => PatchType::Merge,
                "strategic" => PatchType::Strategic,
                other => return Err(format!("patch.type {other:?}: json, merge or strategic")),
            },
            body: body.get("patch").map(object_text).ok_or("patch.patch is missing")?,
            resource_version: body.get("resourceVersion").and_then(Value::as_str).map(str::to_string),
            status: body.get("status").and_then(Value::as_bool).unwrap_or(false),
        })),
        "event" => Ok(Intent::Event(Event {
            regarding: ref_from_json(body.get("regarding").unwrap_or(&Value::Null))
                .map_err(|e| format!("event.regarding.{e}"))?,
            event_type: match text("type")?.as_str() {
                "Normal" => EventType::Normal,
                "Warning" => EventType::Warning,
                other => return Err(format!("event.type {other:?}: Normal or Warning")),
            },
            reason: text("reason")?,
            message: text("message")?,
        })),
        other => Err(format!("unknown intent {other:?}: create, update, updateStatus, delete, patch or event")),
    }
}

/// Differences listed at most, so a wholly different outcome stays one readable line.
const MAX_DIFFERENCES: usize = 5;

/// Where two outcomes differ (`a` the reference: the live version's, or the recorded one);
/// `None` when they agree.
pub(crate) fn outcome_diff(a: &Outcome, b: &Outcome) -> Option<String> {
    if a.requeue_after_ms != b.requeue_after_ms {
        return Some(format!("requeue after {:?} ms vs {:?} ms", a.requeue_after_ms, b.requeue_after_ms));
    }
    let (x, y): (Vec<_>, Vec<_>) = (a.intents().collect(), b.intents().collect());
    if x.len() != y.len() || a.batches.len() != b.batches.len() {
        return Some(format!(
            "{} intents in {} batches vs {} in {}",
            x.len(),
            a.batches.len(),
            y.len(),
            b.batches.len()
        ));
    }
    let differences: Vec<String> = x
        .iter()
        .zip(&y)
        .enumerate()
        .filter_map(|(i, (p, q))| {
            let paths = json_diff(&intent_json(p), &intent_json(q));
            (!paths.is_empty()).then(|| format!("intent {i} ({}): {}", intent_label(p), paths.join(", ")))
        })
        .take(MAX_DIFFERENCES)
        .collect();
    (!differences.is_empty()).then(|| differences.join("; "))
}

/// "update ConfigMap d/x", for messages.
pub(crate) fn intent_label(i: &Intent) -> String {
    let object = |o: &str| {
        let v = object_json(o);
        let m = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
        format!("{} {}/{}", m("/kind"), m("/metadata/namespace"), m("/metadata/name"))
    };
    match i {
        Intent::Create(o) => format!("create {}", object(o)),
        Intent::Update(o) => format!("update {}", object(o)),
        Intent::UpdateStatus(o) => format!("update status {}", object(o)),
        Intent::Delete(d) => format!("delete {} {}/{}", d.target.kind, d.target.namespace, d.target.name),
        Intent::Patch(p) => format!(
            "patch {}{} {}/{}",
            if p.status { "status " } else { "" },
            p.target.kind,
            p.target.namespace,
            p.target.name
        ),
        Intent::Event(e) => format!("event {}", e.reason),
    }
}

/// Where `a` and `b` differ, as JSON pointers with both values, from json-patch's diff; at
/// most 5.
fn json_diff(a: &Value, b: &Value) -> Vec<String> {
    let show = |v: Option<&Value>| {
        let mut s = v.map_or_else(|| "null".to_string(), Value::to_string);
        if s.len() > 80 {
            s.truncate(s.char_indices().take_while(|(i, _)| *i < 80).last().map_or(0, |(i, c)| i + c.len_utf8()));
            s.push('…');
        }
        s
    };
    json_patch::diff(a, b)
        .iter()
        .take(MAX_DIFFERENCES)
        .map(|op| {
            let (path, new) = match op {
                json_patch::PatchOperation::Add(o) => (&o.path, Some(&o.value)),
                json_patch::PatchOperation::Replace(o) => (&o.path, Some(&o.value)),
                json_patch::PatchOperation::Remove(o) => (&o.path, None),
                json_patch::PatchOperation::Move(o) => (&o.path, a.pointer(o.from.as_str())),
                json_patch::PatchOperation::Copy(o) => (&o.path, a.pointer(o.from.as_str())),
                json_patch::PatchOperation::Test(o) => (&o.path, Some(&o.value)),
            };
            let path = path.as_str();
            format!("{}: {} → {}", if path.is_empty() { "/" } else { path }, show(a.pointer(path)), show(new))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(json: &str) -> Outcome {
        Outcome { batches: vec![vec![Intent::Update(json.into())]], requeue_after_ms: None }
    }

    #[test]
    fn outcomes_compare_as_json() {
        let a = update(r#"{"kind":"ConfigMap","metadata":{"name":"x","namespace":"d"},"data":{"stamp":"v1","n":"1"}}"#);
        let same =
            update(r#"{"data":{"n":"1","stamp":"v1"},"metadata":{"namespace":"d","name":"x"},"kind":"ConfigMap"}"#);
        let other =
            update(r#"{"kind":"ConfigMap","metadata":{"name":"x","namespace":"d"},"data":{"stamp":"v2","n":"1"}}"#);
        assert_eq!(outcome_diff(&a, &same), None);
        assert_eq!(
            outcome_diff(&a, &other).as_deref(),
            Some(r#"intent 0 (update ConfigMap d/x): /update/data/stamp: "v1" → "v2""#)
        );
        assert_eq!(outcome_diff(&a, &Outcome::default()).as_deref(), Some("1 intents in 1 batches vs 0 in 0"));
    }

    #[test]
    fn every_intent_reads_back_as_written() {
        let target = ObjectRef { kind: Kind::new("v1", "Pod"), namespace: "d".into(), name: "p".into() };
        let outcome = Outcome {
            batches: vec![
                vec![
                    Intent::Create(r#"{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"p-"}}"#.into()),
                    Intent::Create("not json".into()),
                    Intent::Create(r#""a JSON string""#.into()),
                ],
                vec![
                    Intent::Update(r#"{"kind":"ConfigMap"}"#.into()),
                    Intent::UpdateStatus(r#"{"kind":"ReplicaSet","status":{"replicas":3}}"#.into()),
                    Intent::Delete(DeleteTarget::new(target.clone(), Some("u1".into()))),
                    Intent::Delete(DeleteTarget {
                        propagation: Some(Propagation::Foreground),
                        ..DeleteTarget::new(target.clone(), None)
                    }),
                    Intent::Patch(wasmcm_guest::finalizer::remove_patch(target.clone(), "x.io/y")),
                    Intent::Patch(
                        Patch::json(target.clone(), &json!([{"op": "remove", "path": "/metadata/labels/a"}]))
                            .with_resource_version("7")
                            .to_status(),
                    ),
                    Intent::Patch(Patch { body: "not json".into(), ..Patch::merge(target.clone(), &json!({})) }),
                    Intent::Event(Event {
                        regarding: target,
                        event_type: EventType::Warning,
                        reason: "Failed".into(),
                        message: "why".into(),
                    }),
                ],
            ],
            requeue_after_ms: Some(1500),
        };
        let text = serde_json::to_string(&outcome_json(&outcome)).unwrap();
        let back = outcome_from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(outcome_diff(&outcome, &back), None);
        assert_eq!(back.batches[0][1], Intent::Create("not json".into()));
        assert_eq!(back.batches[0][2], Intent::Create(r#""a JSON string""#.into()));
        assert_eq!(back.batches[1][2..], outcome.batches[1][2..]);
        assert_eq!(intent_json(&outcome.batches[1][5])["patch"]["patch"][0]["op"], "remove", "a JSON patch as JSON");
        assert_eq!(back.requeue_after_ms, Some(1500));
    }

    #[test]
    fn a_broken_outcome_is_named_by_its_path() {
        let bad = serde_json::json!({"batches": [[{"create": {}}], [{"explode": 1}]]});
        assert_eq!(
            outcome_from_json(&bad).unwrap_err(),
            r#"batches[1][0]: unknown intent "explode": create, update, updateStatus, delete, patch or event"#
        );
        let bad = serde_json::json!({"batches": [[{"delete": {"kind": "Pod"}}]]});
        assert_eq!(outcome_from_json(&bad).unwrap_err(), "batches[0][0]: delete.apiVersion is missing");
        assert!(outcome_from_json(&serde_json::json!({})).unwrap_err().starts_with("batches"));
    }
}
