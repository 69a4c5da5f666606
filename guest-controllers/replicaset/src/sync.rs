//! One sync of a ReplicaSet: upstream `syncReplicaSet` and `manageReplicas`.
//!
//! Expectations are not here: the host holds back a key until it has observed the creates
//! and deletes it made for it, for every plugin alike.

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;
use wasmcm_guest::ownership::{self, Claim};
use wasmcm_guest::{
    Cache, CacheExt, DeleteTarget, Error, Intent, Kind, Level, Object, ObjectRef, Outcome, Request, Selector, log, pod,
};

use crate::ranking;
use crate::status::{self, ManageFailure};

/// Most pods created or deleted in one sync (`BurstReplicas`).
pub const BURST_REPLICAS: usize = 500;
/// The first slow-start batch; each next one doubles.
pub const SLOW_START_INITIAL_BATCH_SIZE: usize = 1;

pub fn sync(req: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
    let Some(rs_obj) = cache.get_as::<ReplicaSet>(&req.namespace, &req.name)? else {
        log(Level::Debug, &format!("ReplicaSet {}/{} has been deleted", req.namespace, req.name));
        return Ok(Outcome::default());
    };
    let rs = &rs_obj.value;
    let key = format!("{}/{}", req.namespace, req.name);
    let selector = Selector::from_label_selector(&rs.spec.selector)
        .map_err(|e| Error::permanent(format!("ReplicaSet {key} has an invalid selector: {e}")))?;
    if selector.is_empty() {
        // An empty selector would claim every pod in the namespace; the API refuses it, so
        // one that got here is reported, never acted on.
        return Err(Error::permanent(format!("ReplicaSet {key} has an empty selector, which selects no pods")));
    }

    // `FilterPodsByOwner`: the pods it controls and the orphans it might adopt, from the
    // controller-UID index; never the whole namespace.
    let uid = rs.metadata.uid.as_deref().unwrap_or("");
    let all_pods = cache.list_controlled_as::<Pod>(&req.namespace, uid, true)?;
    let mut outcome = Outcome::default();
    let claimed = claim_pods(&rs_obj, &selector, &all_pods, &mut outcome)?;

    let rs_raw = rs_obj.raw()?;
    let replicas = rs.spec.replicas.unwrap_or(1).max(0) as usize;
    let diff = claimed.len() as i64 - replicas as i64;
    let mut template_error = None;
    let mut managed = Outcome::default();
    if rs.metadata.deletion_timestamp.is_none()
        && let Err(e) = manage_replicas(req, rs, &rs_raw, &claimed, cache, &mut managed)
    {
        template_error = Some(e.message);
    }

    // A failure of the previous sync's creates or deletes (reported by the host) or of this
    // one's pod template is the `manageReplicasErr` of upstream.
    let failure_message = template_error.as_deref().or(if diff != 0 { req.previous_failure.as_deref() } else { None });
    let failure = failure_message
        .map(|message| ManageFailure { reason: if diff < 0 { "FailedCreate" } else { "FailedDelete" }, message });
    let manage_ok = failure.is_none();
    let current_status = rs_raw.get("status").cloned().unwrap_or(Value::Null);
    let mut new_status = status::calculate(rs, &current_status, &claimed, failure, req.now);
    let mut status_write = Vec::new();
    if status::needs_update(rs, &current_status, &new_status) {
        new_status["observedGeneration"] = rs.metadata.generation.unwrap_or(0).into();
        let mut updated = rs_raw;
        updated["status"] = new_status.clone();
        status_write.push(Intent::UpdateStatus(updated.to_string()));
    }
    // Upstream writes the status after `manageReplicas` whether it failed or not; the host stops
    // an outcome at its first failing batch. A status reporting a failure therefore goes first:
    // creates that failed last time may fail again, and ReplicaFailure must not wait for them.
    if manage_ok {
        outcome.batches.extend(managed.batches);
        outcome.push_batch(status_write);
    } else {
        outcome.push_batch(status_write);
        outcome.batches.extend(managed.batches);
    }

    // Pods turn available minReadySeconds after they turn ready: look again then.
    let min_ready = rs.spec.min_ready_seconds.unwrap_or(0);
    let count = |f: &str| new_status.get(f).and_then(Value::as_u64).unwrap_or(0) as usize;
    if manage_ok && min_ready > 0 && count("readyReplicas") == replicas && count("availableReplicas") != replicas {
        outcome.requeue_after_ms = Some(min_ready as u64 * 1000);
    }
    Ok(outcome)
}

/// `claimPods`: adopt matching orphans, release owned pods that no longer match; the first
/// batch of the outcome holds those writes. Returns the active pods this ReplicaSet controls.
fn claim_pods<'a>(
    rs: &Object<ReplicaSet>,
    selector: &Selector,
    pods: &'a [Object<Pod>],
    outcome: &mut Outcome,
) -> Result<Vec<&'a Pod>, Error> {
    let meta = &rs.value.metadata;
    let controller_ref = ownership::new_controller_ref("apps/v1", "ReplicaSet", meta);
    let mut claimed = Vec::new();
    let mut writes = Vec::new();
    for p in pods.iter().filter(|p| pod::is_active(&p.value)) {
        let matches = selector.matches_opt(p.value.metadata.labels.as_ref());
        match ownership::claim(meta, &p.value.metadata, matches) {
            Claim::Owned => claimed.push(&p.value),
            Claim::Adopt => {
                writes.push(Intent::Update(ownership::with_owner_ref(p.raw()?, &controller_ref)?.to_string()));
                claimed.push(&p.value);
            }
            Claim::Release => {
                writes.push(Intent::Update(ownership::without_owner_ref(p.raw()?, &controller_ref.uid)?.to_string()))
            }
            Claim::Ignore => {}
        }
    }
    outcome.push_batch(writes);
    Ok(claimed)
}

fn manage_replicas(
    req: &Request,
    rs: &ReplicaSet,
    rs_raw: &Value,
    claimed: &[&Pod],
    cache: &dyn Cache,
    outcome: &mut Outcome,
) -> Result<(), Error> {
    let replicas = rs.spec.replicas.unwrap_or(1).max(0) as usize;
    if claimed.len() < replicas {
        let count = (replicas - claimed.len()).min(BURST_REPLICAS);
        let controller_ref = ownership::new_controller_ref("apps/v1", "ReplicaSet", &rs.metadata);
        let template = rs_raw.pointer("/spec/template").cloned().unwrap_or(Value::Null);
        let pod = pod::pod_from_template(&template, &req.namespace, &req.name, &controller_ref)?.to_string();
        // Slow start: 1, 2, 4, … so that a failing create (quota, admission) costs one call,
        // not hundreds; the host stops at the first failing batch.
        let mut remaining = count;
        let mut size = remaining.min(SLOW_START_INITIAL_BATCH_SIZE);
        while size > 0 {
            outcome.push_batch(vec![Intent::Create(pod.clone()); size]);
            remaining -= size;
            size = (2 * size).min(remaining);
        }
    } else if claimed.len() > replicas {
        let count = (claimed.len() - replicas).min(BURST_REPLICAS);
        let related = related_pods(rs, cache)?;
        let related: Vec<&Pod> = related.iter().collect();
        let victims = ranking::pods_to_delete(claimed, &related, count, req.now);
        outcome.push_batch(
            victims
                .into_iter()
                .map(|p| {
                    Intent::Delete(DeleteTarget {
                        target: ObjectRef {
                            kind: Kind::of::<Pod>(),
                            namespace: req.namespace.clone(),
                            name: p.metadata.name.clone().unwrap_or_default(),
                        },
                        uid: p.metadata.uid.clone(),
                        propagation: None,
                    })
                })
                .collect(),
        );
    }
    Ok(())
}

/// `getIndirectlyRelatedPods`: the pods matching the selector of any ReplicaSet controlled by
/// the same owner as this one (a Deployment's old and new ReplicaSets), each once. Only a
/// scale-down asks, as upstream: the siblings come from the controller-UID index, their pods
/// from a selector list of the namespace, as upstream's pod lister gives them.
fn related_pods(rs: &ReplicaSet, cache: &dyn Cache) -> Result<Vec<Pod>, Error> {
    let Some(owner) = ownership::controller_of(&rs.metadata) else { return Ok(Vec::new()) };
    let namespace = rs.metadata.namespace.as_deref().unwrap_or("");
    let mut seen = std::collections::HashSet::new();
    let mut related = Vec::new();
    for sibling in cache.list_controlled_as::<ReplicaSet>(namespace, &owner.uid, false)? {
        let Ok(selector) = Selector::from_label_selector(&sibling.value.spec.selector) else { continue };
        for p in cache.list_as::<Pod>(namespace, &selector)? {
            if seen.insert(p.value.metadata.uid.clone()) {
                related.push(p.value);
            }
        }
    }
    Ok(related)
}
