//! List and watch queries: label and field selectors as the API accepts them in `?labelSelector=`
//! and `?fieldSelector=`, the shard selector of `?shardSelector=` (KEP-5866, whose hashing is
//! `wasmcm_core`'s, shared with the host), and the filter a list or watch applies.
//!
//! Matching reads the object's JSON in place: a filter is tested against every event a watch
//! of its type sees and every object a scan passes, so it allocates nothing for string fields
//! and labels. The terms the store's label index can answer are named here too
//! ([`Filter::index_terms`]), so what the index selects and what `matches` accepts stay one
//! definition.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use wasmcm_core::{Operator, Selector, ShardSelector};

use crate::storage::change::{Event, EventType, Key};

/// A boolean query parameter (`watch`, `allowWatchBookmarks`, `force`, …) as upstream's
/// parameter codec decodes it (`Convert_Slice_string_To_bool`): absent is false, `0` and `false`
/// in any case are false, anything else, the empty string included, is true. Authorization and
/// serving both read it here, so a request is served as the verb it was authorized as.
pub(crate) fn query_bool(query: &HashMap<String, String>, name: &str) -> bool {
    query.get(name).is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FieldRequirement {
    pub field: String,
    pub value: String,
    pub equal: bool,
}

/// `fields.ParseSelector` restricted to the fields a type supports, as the API server does:
/// `stored_field` is its strategy's (`Strategy::parse_field_selector`).
pub(crate) fn parse_field_selector(
    s: &str,
    stored_field: impl Fn(&str) -> Option<String>,
) -> Result<Vec<FieldRequirement>, String> {
    let mut reqs = Vec::new();
    for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (field, value, equal) = if let Some((f, v)) = term.split_once("!=") {
            (f, v, false)
        } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            (f, v, true)
        } else {
            return Err(format!("invalid selector: '{term}'; can't understand '{term}'"));
        };
        let label = field.trim();
        let field = stored_field(label).ok_or_else(|| format!("field label not supported: {label}"))?;
        reqs.push(FieldRequirement { field, value: value.trim().into(), equal });
    }
    Ok(reqs)
}

/// Selectable fields that are Go booleans: kube-apiserver compares `fmt.Sprint` of the field,
/// so an unset one reads `false`.
const BOOLEAN_FIELDS: &[&str] = &["spec.unschedulable", "spec.hostNetwork"];

/// Selectable fields that are Go integers, read with `strconv.Itoa`: an unset one reads `0`.
const INTEGER_FIELDS: &[&str] = &["status.replicas", "status.successful"];

/// Whether the field reads as `wanted`: a missing field or null reads as "" (as `false` for a
/// boolean field, `0` for an integer one), a string as itself, anything else as its JSON.
fn field_is(object: &Value, field: &str, wanted: &str) -> bool {
    let unset = if BOOLEAN_FIELDS.contains(&field) {
        "false"
    } else if INTEGER_FIELDS.contains(&field) {
        "0"
    } else {
        ""
    };
    // A Job's selectable `status.successful` is its `status.succeeded` (JobToSelectableFields).
    let field = if field == "status.successful" { "status.succeeded" } else { field };
    // An Event's `source` is its source's component, or the reporting controller of one written
    // through events.k8s.io (the Event registry's ToSelectableFields).
    if field == "source" {
        let component = object.pointer("/source/component").and_then(Value::as_str).filter(|c| !c.is_empty());
        let source = component.or_else(|| object.get("reportingComponent").and_then(Value::as_str));
        return source.unwrap_or("") == wanted;
    }
    let mut v = object;
    for part in field.split('.') {
        match v.get(part) {
            Some(next) => v = next,
            None => return wanted == unset,
        }
    }
    match v {
        Value::String(s) => s == wanted,
        Value::Null => wanted == unset,
        // As its JSON text (`Value == &str` would only ever match a string).
        other => {
            let text = other.to_string();
            text == wanted
        }
    }
}

/// The labels an object is selected by. Labels are a `map[string]string`: an object whose
/// labels do not decode as one (a restored object is not validated) has none.
pub(crate) fn labels_of(object: &Value) -> Option<&Map<String, Value>> {
    let labels = object.pointer("/metadata/labels")?.as_object()?;
    labels.values().all(Value::is_string).then_some(labels)
}

/// `Selector::matches` over the labels as stored, without decoding them.
fn selector_matches(selector: &Selector, labels: Option<&Map<String, Value>>) -> bool {
    let get = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
    selector.match_labels.iter().all(|(k, v)| get(k) == Some(v.as_str()))
        && selector.match_expressions.iter().all(|r| {
            let value = get(&r.key);
            let listed = |v: &str| r.values.iter().any(|x| x == v);
            match r.operator {
                Operator::In => value.is_some_and(listed),
                Operator::NotIn => value.is_none_or(|v| !listed(v)),
                Operator::Exists => value.is_some(),
                Operator::DoesNotExist => value.is_none(),
            }
        })
}

/// What a list or a watch selects.
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    pub id: String,
    pub namespace: Option<String>,
    pub labels: Selector,
    pub fields: Vec<FieldRequirement>,
    /// `?shardSelector=` (KEP-5866): the hash ranges of namespace or uid selected.
    pub shards: Option<ShardSelector>,
}

impl Filter {
    pub(crate) fn for_type(id: &str) -> Self {
        Filter { id: id.into(), ..Default::default() }
    }

    pub(crate) fn matches_key(&self, key: &Key) -> bool {
        key.id == self.id && self.namespace.as_ref().is_none_or(|ns| *ns == key.namespace)
    }

    pub(crate) fn matches(&self, object: &Value) -> bool {
        (self.labels.is_empty() || selector_matches(&self.labels, labels_of(object)))
            && self.fields.iter().all(|r| field_is(object, &r.field, &r.value) == r.equal)
            && self.shards.as_ref().is_none_or(|s| {
                let meta = |field: &str| object.pointer(field).and_then(Value::as_str).unwrap_or("");
                s.matches(meta("/metadata/namespace"), meta("/metadata/uid"))
            })
    }

    /// The label terms an object must satisfy that a label index can answer: each is a key
    /// and the values it may have (`k=v`, `k==v`, `k in (..)`, matchLabels). Every object
    /// the filter matches carries, for each term, one of its values.
    pub(crate) fn index_terms(&self) -> Vec<(&str, Vec<&str>)> {
        let labels = self.labels.match_labels.iter().map(|(k, v)| (k.as_str(), vec![v.as_str()]));
        let expressions = self
            .labels
            .match_expressions
            .iter()
            .filter(|r| r.operator == Operator::In)
            .map(|r| (r.key.as_str(), r.values.iter().map(String::as_str).collect()));
        labels.chain(expressions).collect()
    }

    /// The one name a `metadata.name=` field selector allows.
    pub(crate) fn name(&self) -> Option<&str> {
        self.fields.iter().find(|r| r.equal && r.field == "metadata.name").map(|r| r.value.as_str())
    }

    /// The event as this watcher must see it: an object entering the selection is ADDED, one
    /// leaving it is DELETED, as the API server's watch cache does.
    pub(crate) fn view(&self, event: &Arc<Event>) -> Option<Arc<Event>> {
        if !self.matches_key(&event.key) {
            return None;
        }
        let now = self.matches(&event.object);
        let before = event.prev.as_ref().is_some_and(|p| self.matches(p));
        let event_type = match (event.event_type, before, now) {
            (EventType::Modified, false, true) => EventType::Added,
            (EventType::Modified, true, false) => EventType::Deleted,
            (EventType::Modified, false, false) => return None,
            (EventType::Deleted, _, _) if !now && !before => return None,
            (EventType::Added, _, false) => return None,
            (t, _, _) => t,
        };
        if event_type == event.event_type {
            return Some(event.clone());
        }
        Some(Arc::new(Event {
            event_type,
            key: event.key.clone(),
            object: event.object.clone(),
            prev: event.prev.clone(),
            rv: event.rv,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn watchers_see_objects_enter_and_leave_their_selection() {
        let f = Filter { id: "/pods".into(), labels: Selector::parse("app=web").unwrap(), ..Default::default() };
        let key = Key { id: "/pods".into(), namespace: "d".into(), name: "p".into() };
        let web = Arc::new(json!({"metadata": {"labels": {"app": "web"}}}));
        let db = Arc::new(json!({"metadata": {"labels": {"app": "db"}}}));
        let ev = |t, o: &Arc<Value>, p: Option<&Arc<Value>>| {
            Arc::new(Event { event_type: t, key: key.clone(), object: o.clone(), prev: p.cloned(), rv: 1 })
        };
        assert_eq!(f.view(&ev(EventType::Modified, &db, Some(&web))).unwrap().event_type, EventType::Deleted);
        assert_eq!(f.view(&ev(EventType::Modified, &web, Some(&db))).unwrap().event_type, EventType::Added);
        assert!(f.view(&ev(EventType::Modified, &db, Some(&db))).is_none());
        assert!(f.view(&ev(EventType::Added, &db, None)).is_none());
        assert_eq!(f.view(&ev(EventType::Modified, &web, Some(&web))).unwrap().event_type, EventType::Modified);
    }

    #[test]
    fn matching_in_place_agrees_with_the_selector_on_decoded_labels() {
        use std::collections::BTreeMap;
        let selectors = ["", "a=1", "a!=1", "a in (1,2),b", "!b", "a notin (2),b=3", "a,b,c=1"];
        let label_sets = [
            json!({}),
            json!({"a": "1"}),
            json!({"a": "2", "b": "3"}),
            json!({"a": "1", "b": "x", "c": "1"}),
            json!({"b": "3"}),
            json!(null),
            json!({"a": "1", "b": 3}),
        ];
        for s in selectors {
            let selector = Selector::parse(s).unwrap();
            let f = Filter { labels: selector.clone(), ..Default::default() };
            for labels in &label_sets {
                let object = json!({"metadata": {"labels": labels}});
                let decoded: BTreeMap<String, String> = serde_json::from_value(labels.clone()).unwrap_or_default();
                assert_eq!(f.matches(&object), selector.matches(&decoded), "{s:?} on {labels}");
            }
        }
    }
}
