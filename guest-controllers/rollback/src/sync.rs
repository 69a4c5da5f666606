//! One reconcile of a Deployment by the rollback plugin: a requested rollback (upstream's
//! `rollbackTo`), or else the bookkeeping and the rollback of the automatic mode.
//!
//! Paused deployments are left alone (the request waits, as upstream syncs a paused deployment
//! without rolling it back), and so are deployments being deleted.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::Value;
use wasmcm_deployment::rollback::{Rollback, owned_replica_sets, plan, replica_set_that_ran, to_replica_set};
use wasmcm_deployment::util::{
    DEPLOYMENT_PROGRESSING, DEPRECATED_ROLLBACK_TO_ANNOTATION, NEW_RS_AVAILABLE_REASON, ROLLBACK_DONE,
    ROLLBACK_REVISION_NOT_FOUND, ROLLBACK_TEMPLATE_UNCHANGED, TIMED_OUT_REASON, deployment_complete,
    find_new_replica_set, get_deployment_condition, revision,
};
use wasmcm_guest::{
    Cache, CacheExt, Error, Event, EventType, Intent, Kind, Level, Object, ObjectRef, Outcome, Request, log,
};

use crate::{
    ANNOTATION_PREFIX, FAILED_REVISION_ANNOTATION, LAST_AVAILABLE_REVISION_ANNOTATION, ON_FAILURE_ANNOTATION,
    TO_REVISION_ANNOTATION,
};

/// The annotations that ask for a rollback, in the order they are honoured. Both are removed
/// by whatever handles one of them.
const TRIGGERS: [&str; 2] = [TO_REVISION_ANNOTATION, DEPRECATED_ROLLBACK_TO_ANNOTATION];

/// What one reconcile does to the deployment: one update, then maybe an event.
#[derive(Clone, Debug, PartialEq)]
struct Change {
    /// The template to give the deployment, when rolling back.
    template: Option<PodTemplateSpec>,
    /// All of the deployment's annotations afterwards.
    annotations: BTreeMap<String, String>,
    /// Recorded once the update went through.
    event: Option<(EventType, &'static str, String)>,
}

/// The reconcile entry point.
pub fn sync(req: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
    let Some(obj) = cache.get_as::<Deployment>(&req.namespace, &req.name)? else {
        log(Level::Debug, &format!("Deployment {}/{} has been deleted", req.namespace, req.name));
        return Ok(Outcome::default());
    };
    let d = &obj.value;
    if d.metadata.deletion_timestamp.is_some() || d.spec.paused == Some(true) {
        return Ok(Outcome::default());
    }
    let trigger = TRIGGERS.into_iter().find_map(|key| annotation(d, key).map(|value| (key, value)));
    let automatic = annotation(d, ON_FAILURE_ANNOTATION) == Some("true");
    if trigger.is_none() && !automatic {
        return Ok(Outcome::default());
    }
    let replica_sets: Vec<ReplicaSet> = cache
        .list_controlled_as::<ReplicaSet>(&req.namespace, d.metadata.uid.as_deref().unwrap_or(""), false)?
        .into_iter()
        .map(|o| o.value)
        .collect();
    let owned = owned_replica_sets(d, &replica_sets);
    // A request goes first; the automatic mode looks again once its update has been observed.
    let change = match trigger {
        Some((key, value)) => Some(on_request(d, &owned, key, value)),
        None => on_failure(d, &owned),
    };
    match change {
        Some(change) => outcome(req, &obj, change),
        None => Ok(Outcome::default()),
    }
}

/// Upstream `rollback`, for the revision the annotation `key` asks for.
fn on_request(d: &Deployment, owned: &[&ReplicaSet], key: &str, value: &str) -> Change {
    let Some(to_revision) = parse_revision(value) else {
        let message = format!("Invalid revision {value:?} in annotation {key}: not a non-negative integer");
        return Change {
            template: None,
            annotations: without_triggers(own_annotations(d)),
            event: Some((EventType::Warning, ROLLBACK_REVISION_NOT_FOUND, message)),
        };
    };
    let rollback = plan(d, owned, to_revision);
    let event = event_of(&rollback, name(d));
    let (template, annotations) = applied(d, rollback);
    Change { template, annotations: without_triggers(annotations), event: Some(event) }
}

/// The automatic mode: record a completed rollout, or roll back one that exceeded its deadline.
fn on_failure(d: &Deployment, owned: &[&ReplicaSet]) -> Option<Change> {
    let status = d.status.as_ref()?;
    // A condition about an older spec says nothing about the template the deployment has now.
    if status.observed_generation.unwrap_or(0) < d.metadata.generation.unwrap_or(0) {
        return None;
    }
    let progressing = get_deployment_condition(status, DEPLOYMENT_PROGRESSING)?;
    match (progressing.status.as_deref(), progressing.reason.as_deref()) {
        (Some("True"), Some(NEW_RS_AVAILABLE_REASON)) => record_available(d, status, owned),
        (Some("False"), Some(TIMED_OUT_REASON)) => roll_back_failure(d, progressing, owned),
        _ => None,
    }
}

/// [`LAST_AVAILABLE_REVISION_ANNOTATION`] := the new ReplicaSet's revision, once the rollout of
/// the current template is complete.
fn record_available(d: &Deployment, status: &DeploymentStatus, owned: &[&ReplicaSet]) -> Option<Change> {
    if !deployment_complete(d, status) {
        return None;
    }
    let new_rs = find_new_replica_set(d, owned)?;
    let available = revision(&new_rs.metadata);
    if available <= 0 {
        return None;
    }
    let value = available.to_string();
    if annotation(d, LAST_AVAILABLE_REVISION_ANNOTATION) == Some(value.as_str()) {
        return None;
    }
    let mut annotations = own_annotations(d);
    annotations.insert(LAST_AVAILABLE_REVISION_ANNOTATION.into(), value);
    Some(Change { template: None, annotations, event: None })
}

/// The new ReplicaSet exceeded its progress deadline: back to the last revision that was fully
/// available, once per failed revision, and never to the failing template itself.
fn roll_back_failure(d: &Deployment, condition: &DeploymentCondition, owned: &[&ReplicaSet]) -> Option<Change> {
    let name = name(d);
    let new_rs = find_new_replica_set(d, owned)?;
    let new_name = new_rs.metadata.name.as_deref().unwrap_or("");
    let failed_name = condition.message.as_deref().and_then(timed_out_replica_set).unwrap_or(new_name);
    if failed_name != new_name {
        // Written before the template changed (by a rollback, say): about a ReplicaSet that is
        // no longer rolling out.
        log(Level::Debug, &format!("the progress deadline of ReplicaSet {failed_name:?} is stale"));
        return None;
    }
    let failed_revision = revision(&new_rs.metadata);
    let handled = annotation(d, FAILED_REVISION_ANNOTATION).and_then(parse_revision);
    if handled.is_some_and(|handled| handled >= failed_revision) {
        return None;
    }
    let last_available = annotation(d, LAST_AVAILABLE_REVISION_ANNOTATION).and_then(parse_revision).filter(|r| *r > 0);
    let target = last_available.and_then(|r| replica_set_that_ran(owned, r));
    let warning = |reason, message| Some((EventType::Warning, reason, message));
    let (template, mut annotations, event) = match (last_available, target) {
        (None, _) => (
            None,
            own_annotations(d),
            warning(
                ROLLBACK_REVISION_NOT_FOUND,
                format!(
                    "no revision of deployment {name:?} has been fully available; \
                     not rolling back from revision {failed_revision}"
                ),
            ),
        ),
        (Some(available), None) => (
            None,
            own_annotations(d),
            warning(
                ROLLBACK_REVISION_NOT_FOUND,
                format!(
                    "revision {available}, the last fully available revision of deployment {name:?}, has no \
                     ReplicaSet left; not rolling back from revision {failed_revision}"
                ),
            ),
        ),
        (Some(available), Some(target)) if target.metadata.name.as_deref() == Some(new_name) => (
            None,
            own_annotations(d),
            warning(
                ROLLBACK_TEMPLATE_UNCHANGED,
                format!(
                    "revision {available}, the last fully available revision of deployment {name:?}, is the \
                     one failing: ReplicaSet {new_name:?} exceeded its progress deadline at revision \
                     {failed_revision}; not rolling back"
                ),
            ),
        ),
        (Some(available), Some(target)) => {
            let rollback = to_replica_set(d, target, available);
            let event = match &rollback {
                Rollback::To { .. } => (
                    EventType::Normal,
                    ROLLBACK_DONE,
                    format!(
                        "Rolled back deployment {name:?} from revision {failed_revision} to revision {available} \
                         because ReplicaSet {new_name:?} exceeded its progress deadline"
                    ),
                ),
                // Another ReplicaSet with the same template (an older hash, say).
                other => event_of(other, name),
            };
            let (template, annotations) = applied(d, rollback);
            (template, annotations, Some(event))
        }
    };
    annotations.insert(FAILED_REVISION_ANNOTATION.into(), failed_revision.to_string());
    if let Some((_, reason, message)) = &event {
        log(Level::Info, &format!("{reason}: {message}"));
    }
    Some(Change { template, annotations, event })
}

/// The template and annotations `rollback` gives the deployment: the plan's for
/// [`Rollback::To`], the current ones otherwise.
///
/// The plan's annotations are the deployment's controller-owned ones plus the target
/// ReplicaSet's copyable ones. The deployment controller copies every annotation it does not
/// own onto the new ReplicaSet, this plugin's included, so an old ReplicaSet can hold a stale
/// request (which taken back would roll back again) or stale bookkeeping (which would forget a
/// failure): this plugin's annotations always come from the deployment, never the ReplicaSet.
fn applied(d: &Deployment, rollback: Rollback) -> (Option<PodTemplateSpec>, BTreeMap<String, String>) {
    match rollback {
        Rollback::To { template, annotations, .. } => {
            let mut merged: BTreeMap<String, String> =
                annotations.into_iter().filter(|(k, _)| !k.starts_with(ANNOTATION_PREFIX)).collect();
            merged.extend(own_annotations(d).into_iter().filter(|(k, _)| k.starts_with(ANNOTATION_PREFIX)));
            (Some(*template), merged)
        }
        Rollback::NotFound { .. } | Rollback::Unchanged { .. } => (None, own_annotations(d)),
    }
}

fn event_of(rollback: &Rollback, deployment: &str) -> (EventType, &'static str, String) {
    let (warning, reason, message) = rollback.event(deployment);
    (if warning { EventType::Warning } else { EventType::Normal }, reason, message)
}

/// The single update of the deployment, then the event in a batch of its own.
fn outcome(req: &Request, obj: &Object<Deployment>, change: Change) -> Result<Outcome, Error> {
    let key = format!("{}/{}", req.namespace, req.name);
    let encode = |e: serde_json::Error| Error::permanent(format!("cannot encode Deployment {key}: {e}"));
    // The served JSON, so fields this build does not know survive the update.
    let mut raw = obj.raw()?;
    if let Some(template) = &change.template {
        let spec = raw
            .get_mut("spec")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| Error::permanent(format!("Deployment {key} has no spec")))?;
        spec.insert("template".into(), serde_json::to_value(template).map_err(encode)?);
    }
    let meta = raw
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| Error::permanent(format!("Deployment {key} has no metadata")))?;
    if change.annotations.is_empty() {
        meta.remove("annotations");
    } else {
        meta.insert("annotations".into(), serde_json::to_value(&change.annotations).map_err(encode)?);
    }
    let mut outcome = Outcome::default();
    outcome.push_batch(vec![Intent::Update(raw.to_string())]);
    if let Some((event_type, reason, message)) = change.event {
        let regarding =
            ObjectRef { kind: Kind::of::<Deployment>(), namespace: req.namespace.clone(), name: req.name.clone() };
        outcome.push_batch(vec![Intent::Event(Event { regarding, event_type, reason: reason.into(), message })]);
    }
    Ok(outcome)
}

/// The ReplicaSet named by upstream's `ReplicaSet "web-abc" has timed out progressing.`.
pub fn timed_out_replica_set(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once("ReplicaSet \"")?;
    let (name, _) = rest.split_once('"')?;
    (!name.is_empty()).then_some(name)
}

/// A revision as the annotations carry it: a non-negative integer.
fn parse_revision(value: &str) -> Option<i64> {
    value.parse::<i64>().ok().filter(|r| *r >= 0)
}

fn annotation<'a>(d: &'a Deployment, key: &str) -> Option<&'a str> {
    d.metadata.annotations.as_ref()?.get(key).map(String::as_str)
}

fn own_annotations(d: &Deployment) -> BTreeMap<String, String> {
    d.metadata.annotations.clone().unwrap_or_default()
}

fn without_triggers(mut annotations: BTreeMap<String, String>) -> BTreeMap<String, String> {
    for key in TRIGGERS {
        annotations.remove(key);
    }
    annotations
}

fn name(d: &Deployment) -> &str {
    d.metadata.name.as_deref().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_replica_set_from_the_condition_message() {
        let cases = [
            ("ReplicaSet \"web-abc\" has timed out progressing.", Some("web-abc")),
            ("Deployment \"web\" has timed out progressing.", None),
            ("ReplicaSet \"\" has timed out progressing.", None),
            ("ReplicaSet \"web-abc", None),
            ("", None),
        ];
        for (message, want) in cases {
            assert_eq!(timed_out_replica_set(message), want, "{message}");
        }
    }

    #[test]
    fn revisions_are_non_negative_integers() {
        let cases = [("0", Some(0)), ("12", Some(12)), ("+3", Some(3)), ("-1", None), ("", None), ("1.0", None)];
        for (value, want) in cases {
            assert_eq!(parse_revision(value), want, "{value:?}");
        }
    }
}
