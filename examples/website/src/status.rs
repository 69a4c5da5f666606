//! The Website's status: the Deployment's replica counts and the `Ready` and `Progressing`
//! conditions, written only when they change.

use wasmcm_guest::k8s_openapi::api::apps::v1::Deployment;
use wasmcm_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use wasmcm_guest::{Instant, conditions};

use crate::{Website, WebsiteStatus};

/// The status `site` should have given its Deployment (`None`: not created yet), whether this
/// reconcile is writing its children (`pending`: what the cache shows is about to change), and
/// children it could not manage; `None` when the status already says all of it.
pub fn compute(
    site: &Website,
    deployment: Option<&Deployment>,
    pending: bool,
    problems: &[String],
    now: Instant,
) -> Option<WebsiteStatus> {
    let old = site.status.clone().unwrap_or_default();
    let generation = site.metadata.generation;
    let want = site.spec.replicas;
    let status = deployment.and_then(|d| d.status.clone()).unwrap_or_default();
    let (replicas, ready, updated) =
        (status.replicas.unwrap_or(0), status.ready_replicas.unwrap_or(0), status.updated_replicas.unwrap_or(0));
    // The deployment plugin has seen the Deployment's latest spec.
    let observed = deployment
        .is_some_and(|d| status.observed_generation.is_some() && status.observed_generation >= d.metadata.generation);
    let deadline_exceeded = status.conditions.iter().flatten().any(|c| {
        c.type_.as_deref() == Some("Progressing")
            && c.status.as_deref() == Some("False")
            && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
    });
    let complete = !pending && observed && replicas == want && updated == want && ready == want;

    let counts = format!("{ready}/{want} replicas ready");
    let (ready_status, ready_reason, ready_message) = match () {
        _ if !problems.is_empty() => ("False", "ChildConflict", problems.join("; ")),
        _ if complete => ("True", "Available", counts.clone()),
        _ => ("False", "Unavailable", counts.clone()),
    };
    let (progressing_status, progressing_reason, progressing_message) = match () {
        _ if !problems.is_empty() => ("False", "ChildConflict", problems.join("; ")),
        _ if deadline_exceeded => {
            ("False", "ProgressDeadlineExceeded", format!("the Deployment stopped progressing: {counts}"))
        }
        _ if complete => ("False", "Complete", counts),
        _ if deployment.is_none() => ("True", "Creating", "creating the Deployment".to_string()),
        _ => ("True", "RollingOut", format!("{updated}/{want} updated, {counts}")),
    };

    let mut new = WebsiteStatus {
        observed_generation: generation,
        replicas,
        ready_replicas: ready,
        updated_replicas: updated,
        conditions: old.conditions.clone(),
    };
    let condition = |type_: &str, status: &str, reason: &str, message: String| Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message,
        observed_generation: generation,
        last_transition_time: now.time(),
    };
    conditions::set(&mut new.conditions, condition("Ready", ready_status, ready_reason, ready_message));
    conditions::set(
        &mut new.conditions,
        condition("Progressing", progressing_status, progressing_reason, progressing_message),
    );
    (new != old).then_some(new)
}
