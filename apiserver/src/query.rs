//! List and watch queries: label and field selectors as the API accepts them in `?labelSelector=`
//! and `?fieldSelector=`, and the filter a list or watch applies.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use wasmcm_core::Selector;

use super::change::{Event, EventType, Key};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FieldRequirement {
    pub field: String,
    pub value: String,
    pub equal: bool,
}

/// Fields a kind can be selected by, beyond metadata.name and metadata.namespace.
fn selectable_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "Pod" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        "Event" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "regarding.kind",
            "regarding.name",
            "regarding.namespace",
            "regarding.uid",
        ],
        "Namespace" => &["status.phase"],
        "Secret" => &["type"],
        "Node" => &["spec.unschedulable"],
        "ReplicaSet" => &["status.replicas"],
        _ => &[],
    }
}

/// `fields.ParseSelector` restricted to the fields `kind` supports, as the API server does.
pub(crate) fn parse_field_selector(s: &str, kind: &str) -> Result<Vec<FieldRequirement>, String> {
    let mut reqs = Vec::new();
    for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (field, value, equal) = if let Some((f, v)) = term.split_once("!=") {
            (f, v, false)
        } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            (f, v, true)
        } else {
            return Err(format!("invalid selector: '{term}'; can't understand '{term}'"));
        };
        let field = field.trim();
        if !matches!(field, "metadata.name" | "metadata.namespace") && !selectable_fields(kind).contains(&field) {
            return Err(format!("field label not supported: {field}"));
        }
        reqs.push(FieldRequirement { field: field.into(), value: value.trim().into(), equal });
    }
    Ok(reqs)
}

fn field_value(object: &Value, field: &str) -> String {
    let mut v = object;
    for part in field.split('.') {
        match v.get(part) {
            Some(next) => v = next,
            None => return String::new(),
        }
    }
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// What a list or a watch selects.
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    pub id: String,
    pub namespace: Option<String>,
    pub labels: Selector,
    pub fields: Vec<FieldRequirement>,
}

impl Filter {
    pub(crate) fn for_type(id: &str) -> Self {
        Filter { id: id.into(), ..Default::default() }
    }

    pub(crate) fn matches_key(&self, key: &Key) -> bool {
        key.id == self.id && self.namespace.as_ref().is_none_or(|ns| *ns == key.namespace)
    }

    pub(crate) fn matches(&self, object: &Value) -> bool {
        let labels: BTreeMap<String, String> =
            object.pointer("/metadata/labels").and_then(|l| serde_json::from_value(l.clone()).ok()).unwrap_or_default();
        self.labels.matches(&labels)
            && self.fields.iter().all(|r| (field_value(object, &r.field) == r.value) == r.equal)
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
    fn field_selectors_are_checked_against_the_kind() {
        let reqs = parse_field_selector("status.phase=Running,spec.nodeName!=n1", "Pod").unwrap();
        let f = Filter { fields: reqs, ..Default::default() };
        assert!(f.matches(&json!({"spec": {"nodeName": "n2"}, "status": {"phase": "Running"}})));
        assert!(!f.matches(&json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})));
        assert!(parse_field_selector("metadata.name=x", "Deployment").is_ok());
        assert_eq!(
            parse_field_selector("spec.replicas=1", "Deployment").unwrap_err(),
            "field label not supported: spec.replicas"
        );
    }

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
}
