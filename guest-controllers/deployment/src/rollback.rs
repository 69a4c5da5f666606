//! Rollback: the revision bookkeeping of upstream `rollback.go`, as pure functions the rollback
//! plugin (and anything else that wants to go back to a revision) builds on.
//!
//! A revision lives on the ReplicaSet that ran it (`deployment.kubernetes.io/revision`). Rolling
//! back copies that ReplicaSet's template onto the deployment (without `pod-template-hash`) and
//! its copyable annotations (such as `kubernetes.io/change-cause`); the deployment controller
//! then finds that ReplicaSet as the new one and gives it the next revision, keeping the old
//! number in `deployment.kubernetes.io/revision-history`. No ReplicaSet is created.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;

use crate::util::{
    DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, REVISION_HISTORY_ANNOTATION, ROLLBACK_DONE, ROLLBACK_REVISION_NOT_FOUND,
    ROLLBACK_TEMPLATE_UNCHANGED, deployment_annotations_for_rollback, equal_ignore_hash, last_revision, revision,
};

/// What rolling `d` back to a revision comes to.
#[derive(Clone, Debug, PartialEq)]
pub enum Rollback {
    /// Give the deployment this template and these annotations.
    To { revision: i64, template: Box<PodTemplateSpec>, annotations: BTreeMap<String, String> },
    /// Nothing to roll back to; the reason and message of the warning event.
    NotFound { message: String },
    /// The revision's template is the deployment's already.
    Unchanged { message: String },
}

impl Rollback {
    /// The event upstream records: (warning?, reason, message).
    pub fn event(&self, deployment: &str) -> (bool, &'static str, String) {
        match self {
            Rollback::To { revision, .. } => {
                (false, ROLLBACK_DONE, format!("Rolled back deployment {deployment:?} to revision {revision}"))
            }
            Rollback::NotFound { message } => (true, ROLLBACK_REVISION_NOT_FOUND, message.clone()),
            Rollback::Unchanged { message } => (true, ROLLBACK_TEMPLATE_UNCHANGED, message.clone()),
        }
    }
}

/// The ReplicaSets `d` controls.
pub fn owned_replica_sets<'a>(d: &Deployment, replica_sets: &'a [ReplicaSet]) -> Vec<&'a ReplicaSet> {
    let uid = d.metadata.uid.as_deref();
    replica_sets
        .iter()
        .filter(|rs| wasmcm_guest::ownership::controller_of(&rs.metadata).is_some_and(|r| Some(r.uid.as_str()) == uid))
        .collect()
}

/// The ReplicaSet whose current revision is `revision` (revisions start at 1; one without the
/// annotation has none).
pub fn replica_set_for_revision<'a>(replica_sets: &[&'a ReplicaSet], revision_number: i64) -> Option<&'a ReplicaSet> {
    if revision_number <= 0 {
        return None;
    }
    replica_sets.iter().copied().find(|rs| revision(&rs.metadata) == revision_number)
}

/// The ReplicaSet that ran `revision` at some point: its current revision, or one it had before
/// a rollback made it new again (`revision-history`).
pub fn replica_set_that_ran<'a>(replica_sets: &[&'a ReplicaSet], revision_number: i64) -> Option<&'a ReplicaSet> {
    let wanted = revision_number.to_string();
    replica_set_for_revision(replica_sets, revision_number).or_else(|| {
        replica_sets.iter().copied().find(|rs| {
            rs.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(REVISION_HISTORY_ANNOTATION))
                .is_some_and(|h| h.split(',').any(|r| r == wanted))
        })
    })
}

/// `SetFromReplicaSetTemplate`: the ReplicaSet's template without its `pod-template-hash`.
pub fn template_from_replica_set(rs: &ReplicaSet) -> PodTemplateSpec {
    let mut template = rs.spec.template.clone().unwrap_or_default();
    if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY);
    }
    template
}

/// Upstream `rollback`: `to_revision` 0 means the previous revision. `replica_sets` are the
/// deployment's own.
pub fn plan(d: &Deployment, replica_sets: &[&ReplicaSet], to_revision: i64) -> Rollback {
    let to_revision = if to_revision == 0 {
        match last_revision(replica_sets) {
            0 => return Rollback::NotFound { message: "Unable to find last revision.".into() },
            r => r,
        }
    } else {
        to_revision
    };
    let Some(rs) = replica_set_for_revision(replica_sets, to_revision) else {
        return Rollback::NotFound { message: "Unable to find the revision to rollback to.".into() };
    };
    to_replica_set(d, rs, to_revision)
}

/// `rollbackToTemplate`: `rs`'s template and annotations, unless the deployment has them already.
/// The annotations keep the deployment's controller-owned ones, `deprecated.deployment.rollback.to`
/// included: a caller acting on that request removes it.
pub fn to_replica_set(d: &Deployment, rs: &ReplicaSet, revision_number: i64) -> Rollback {
    let template = template_from_replica_set(rs);
    if equal_ignore_hash(&d.spec.template, &template) {
        let name = d.metadata.name.as_deref().unwrap_or("");
        return Rollback::Unchanged {
            message: format!("The rollback revision contains the same template as current deployment {name:?}"),
        };
    }
    // The deployment takes the ReplicaSet's annotations, so that the ReplicaSet does not get
    // the current change-cause copied over it when it becomes new again.
    let annotations = deployment_annotations_for_rollback(
        &d.metadata.annotations.clone().unwrap_or_default(),
        &rs.metadata.annotations.clone().unwrap_or_default(),
    );
    Rollback::To { revision: revision_number, template: Box::new(template), annotations }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::*;
    use serde_json::json;

    fn parse<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn previous_revision_and_explicit_revisions() {
        let d: Deployment = parse(deployment(
            3,
            json!({"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "nginx:2"}]}}}}),
        ));
        let rs1: ReplicaSet = parse(replica_set(
            "web-1",
            "nginx:1",
            1,
            0,
            json!({"metadata": {"annotations": {
            "kubernetes.io/change-cause": "first"}}}),
        ));
        let rs2: ReplicaSet = parse(replica_set("web-2", "nginx:2", 2, 3, json!({})));
        let rss = [&rs1, &rs2];
        let Rollback::To { revision, template, annotations } = plan(&d, &rss, 0) else { panic!("no rollback") };
        assert_eq!(revision, 1);
        assert_eq!(template.spec.unwrap().containers[0].image.as_deref(), Some("nginx:1"));
        assert!(!template.metadata.unwrap().labels.unwrap().contains_key("pod-template-hash"));
        assert_eq!(annotations.get("kubernetes.io/change-cause").map(String::as_str), Some("first"));
        assert!(matches!(plan(&d, &rss, 2), Rollback::Unchanged { .. }));
        assert!(matches!(plan(&d, &rss, 7), Rollback::NotFound { .. }));
        assert!(matches!(plan(&d, &[&rs2], 0), Rollback::NotFound { .. }));
        assert_eq!(plan(&d, &rss, 1).event("web").1, "DeploymentRollback");
    }

    #[test]
    fn a_reused_replica_set_still_answers_for_its_former_revisions() {
        let rs: ReplicaSet = parse(replica_set(
            "web-1",
            "nginx:1",
            3,
            0,
            json!({"metadata": {"annotations": {
            "deployment.kubernetes.io/revision-history": "1"}}}),
        ));
        assert!(replica_set_for_revision(&[&rs], 1).is_none());
        assert!(replica_set_that_ran(&[&rs], 1).is_some());
        assert!(replica_set_that_ran(&[&rs], 3).is_some());
        assert!(replica_set_that_ran(&[&rs], 2).is_none());
    }
}
