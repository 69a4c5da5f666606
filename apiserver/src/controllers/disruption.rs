//! Voluntary disruptions: the `pods/eviction` subresource (policy/v1 Eviction), answered as
//! upstream's eviction REST (`pkg/registry/core/pod/storage/eviction.go`) does, and the part of
//! the disruption controller (`pkg/controller/disruption`) that keeps PodDisruptionBudget
//! status current (expected, desired and current healthy pods, disruptions allowed, pods
//! disrupted but not yet gone, the DisruptionAllowed condition), which evictions rely on.
//!
//! The controller is a loop of the server, as the kubelet is: it follows pod, budget,
//! ReplicaSet and Deployment changes and recomputes the budgets of the namespaces touched.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use hyper::StatusCode;
use serde_json::{Map, Value, json};
use wasmcm_core::{ApiError, Cause, Operator, Requirement, Selector, str_at};

use crate::State;
use crate::api::{self, DeleteOptions, Ownership};
use crate::registry::resources::Target;
use crate::storage::change::Key;
use crate::storage::query::Filter;
use crate::storage::store::{Changes, Subscription};

const PDB_ID: &str = "policy/poddisruptionbudgets";

/// Upstream's `MaxDisruptedPodSize`: evictions approved but not yet seen by the controller.
const MAX_DISRUPTED_PODS: usize = 2000;

/// How long a pod an eviction was approved for is counted as going (upstream's
/// `DeletionTimeout`): if it is not deleted by then it counts again.
const DELETION_TIMEOUT: Duration = Duration::from_secs(120);

/// How many times an eviction retries a conflicting write (upstream's `EvictionsRetry`).
const RETRIES: usize = 20;

const STILL_PROCESSING: &str = " is still being processed by the server.";

const TOO_MANY: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// `metav1.LabelSelectorAsSelector` over the JSON form; an invalid selector is an error.
fn selector_of(ls: &Value) -> Result<Selector, String> {
    let mut selector = Selector::default();
    for (k, v) in ls.get("matchLabels").and_then(Value::as_object).into_iter().flatten() {
        selector.match_labels.push((k.clone(), v.as_str().unwrap_or("").to_string()));
    }
    for expr in ls.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = str_at(expr, "/key").to_string();
        let values: Vec<String> = expr
            .get("values")
            .and_then(Value::as_array)
            .map(|vs| vs.iter().filter_map(Value::as_str).map(String::from).collect())
            .unwrap_or_default();
        let name = str_at(expr, "/operator");
        let Some(operator) = Operator::parse(name) else {
            return Err(format!("{name:?} is not a valid label selector operator"));
        };
        selector.match_expressions.push(Requirement { key, operator, values });
    }
    Ok(selector)
}

fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect())
        .unwrap_or_default()
}

/// Whether a budget selects a pod: a budget with a nil, empty or invalid selector selects
/// nothing (not everything), as upstream.
fn selects(pdb: &Value, pod: &Value) -> bool {
    let Some(ls) = pdb.pointer("/spec/selector").filter(|s| s.is_object()) else { return false };
    match selector_of(ls) {
        Ok(selector) => !selector.is_empty() && selector.matches(&labels_of(pod)),
        Err(_) => false,
    }
}

fn deleting(object: &Value) -> bool {
    object.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
}

/// `podutil.IsPodReady`.
fn ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| str_at(c, "/type") == "Ready" && str_at(c, "/status") == "True"))
}

fn int(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn pdb_target(state: &State, namespace: &str, name: &str) -> Option<Target> {
    let rt = state.registry.lookup("policy", "v1", "poddisruptionbudgets")?;
    Some(Target { rt, namespace: namespace.into(), name: name.into() })
}

fn budgets_in(state: &State, namespace: &str) -> Vec<Arc<Value>> {
    let filter = Filter::for_type(PDB_ID);
    state.store.list(PDB_ID, Some(namespace), &filter).0
}

fn pods_in(state: &State, namespace: &str) -> Vec<Arc<Value>> {
    state.store.list("/pods", Some(namespace), &Filter::for_type("/pods")).0
}

// ---- the eviction subresource ----

fn too_many_requests(message: String) -> ApiError {
    ApiError::new(429, "TooManyRequests", TOO_MANY).with_causes(vec![Cause {
        reason: "DisruptionBudget".into(),
        field: String::new(),
        message,
    }])
}

/// `createTooManyRequestsError`: the budget's status is behind its spec, or the pod turned
/// ready meanwhile.
fn still_processing(pdb: &str) -> ApiError {
    too_many_requests(format!("The disruption budget {pdb}{STILL_PROCESSING}"))
}

fn pdb_forbidden(name: &str, why: &str) -> ApiError {
    ApiError::forbidden_on("policy", "poddisruptionbudget", name, why)
}

fn success() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

/// The DeleteOptions an Eviction carries, with the request's dryRun folded in
/// (`propagateDryRun`).
fn delete_options(eviction: &Value, query_dry_run: bool) -> Result<DeleteOptions, ApiError> {
    let opts = eviction.get("deleteOptions").filter(|o| o.is_object());
    let body_dry_run: Vec<&str> = opts
        .and_then(|o| o.get("dryRun"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if query_dry_run && !body_dry_run.is_empty() && body_dry_run != ["All"] {
        return Err(ApiError::bad_request(format!(
            "Non-matching dry-run options in request and content: [All] and {body_dry_run:?}"
        )));
    }
    let Some(o) = opts else { return Ok(DeleteOptions { dry_run: query_dry_run, ..Default::default() }) };
    let policy = match o.get("propagationPolicy").and_then(Value::as_str) {
        Some(p) if !matches!(p, "Background" | "Foreground" | "Orphan") => {
            return Err(ApiError::bad_request(format!("unsupported propagationPolicy {p:?}")));
        }
        Some(p) => Some(p.to_string()),
        None if o.get("orphanDependents").and_then(Value::as_bool) == Some(true) => Some("Orphan".into()),
        None => None,
    };
    Ok(DeleteOptions {
        grace_period_seconds: o.get("gracePeriodSeconds").and_then(Value::as_i64),
        propagation_policy: policy,
        precondition_uid: o.pointer("/preconditions/uid").and_then(Value::as_str).map(String::from),
        precondition_rv: o.pointer("/preconditions/resourceVersion").and_then(Value::as_str).map(String::from),
        dry_run: query_dry_run || body_dry_run.contains(&"All"),
    })
}

/// `POST .../pods/{name}/eviction`: deletes the pod if its disruption budget allows, as
/// upstream's EvictionREST.Create. The answer is a Status with its HTTP code: success, or
/// the failure upstream returns as an object (a pod with several budgets) rather than an
/// error.
pub(crate) fn evict(
    state: &State,
    namespace: &str,
    name: &str,
    eviction: Value,
    query_dry_run: bool,
) -> Result<(StatusCode, Value), ApiError> {
    match evict_pod(state, namespace, name, eviction, query_dry_run) {
        // Upstream suggests when to try again (`NewTooManyRequests(..., 10)`): the Status says
        // so, and the server's `Retry-After` header follows it.
        Err(e)
            if e.code == 429
                && e.details
                    .as_ref()
                    .is_some_and(|d| d.causes.iter().any(|c| c.message.ends_with(STILL_PROCESSING))) =>
        {
            let mut status = e.to_status();
            status["details"]["retryAfterSeconds"] = json!(10);
            Ok((StatusCode::TOO_MANY_REQUESTS, status))
        }
        other => other,
    }
}

/// The Eviction sent: of policy's kind and version (if it says), and for the pod of the URL.
fn check_eviction(eviction: &Value, name: &str) -> Result<(), ApiError> {
    let api_version = str_at(eviction, "/apiVersion");
    if !matches!(api_version, "" | "policy/v1" | "policy/v1beta1") {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version (policy/v1)"
        )));
    }
    let kind = str_at(eviction, "/kind");
    if !matches!(kind, "" | "Eviction") {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind (Eviction)"
        )));
    }
    if str_at(eviction, "/metadata/name") != name {
        return Err(ApiError::bad_request("name in URL does not match name in Eviction object"));
    }
    Ok(())
}

fn evict_pod(
    state: &State,
    namespace: &str,
    name: &str,
    eviction: Value,
    query_dry_run: bool,
) -> Result<(StatusCode, Value), ApiError> {
    check_eviction(&eviction, name)?;
    let original = delete_options(&eviction, query_dry_run)?;
    let pods_rt = state.registry.lookup("", "v1", "pods").ok_or_else(|| ApiError::internal("pods are not served"))?;
    let target = Target { rt: pods_rt, namespace: namespace.into(), name: name.into() };

    // A pod that is not running (or already going) has disrupted nothing further by going:
    // deleted without asking its budget, retrying conflicts unless the client set a version.
    let mut pod;
    let mut attempts = 0;
    loop {
        pod = api::get(state, &target)?;
        if !can_ignore_budget(&pod) {
            break;
        }
        let mut opts = original.clone();
        if enforce_version(&pod) && opts.precondition_rv.is_none() {
            opts.precondition_rv = Some(str_at(&pod, "/metadata/resourceVersion").into());
        }
        match mark_and_delete(state, &target, opts) {
            Ok(()) => return Ok((StatusCode::CREATED, success())),
            Err(e) if e.is_conflict() && original.precondition_rv.is_none() && attempts < RETRIES => attempts += 1,
            Err(e) => return Err(e),
        }
    }

    let budgets: Vec<Arc<Value>> = budgets_in(state, namespace).into_iter().filter(|b| selects(b, &pod)).collect();
    let mut pin_version = false;
    let mut budget_name = String::new();
    if budgets.len() > 1 {
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            "code": 500,
        });
        return Ok((StatusCode::CREATED, status));
    }
    if let Some(budget) = budgets.first() {
        budget_name = str_at(budget, "/metadata/name").to_string();
        let always_allow = str_at(budget, "/spec/unhealthyPodEvictionPolicy") == "AlwaysAllow";
        let (current, desired) = (int(budget, "/status/currentHealthy"), int(budget, "/status/desiredHealthy"));
        // An unready pod does not count as healthy: taking it away costs the budget nothing
        // when the application is not disrupted now (or the budget says unhealthy pods may go).
        if !ready(&pod) && (always_allow || (current >= desired && desired > 0)) {
            pin_version = true;
        } else {
            let mut budget = budget.clone();
            let mut attempts = 0;
            loop {
                match check_and_decrement(state, name, &budget, original.dry_run) {
                    Ok(()) => break,
                    Err(e) if e.is_conflict() && attempts < RETRIES => {
                        attempts += 1;
                        let Some(t) = pdb_target(state, namespace, &budget_name) else { return Err(e) };
                        budget = api::get(state, &t)?;
                    }
                    Err(e) if e.is_conflict() => {
                        let mut timeout = ApiError::new(
                            504,
                            "Timeout",
                            format!("couldn't update PodDisruptionBudget {budget_name:?} due to conflicts"),
                        );
                        timeout.details = None;
                        return Err(timeout);
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    let mut opts = original.clone();
    if pin_version {
        // The pod must not have turned ready since it was judged unready.
        opts.precondition_rv = Some(str_at(&pod, "/metadata/resourceVersion").into());
    }
    match mark_and_delete(state, &target, opts) {
        Ok(()) => Ok((StatusCode::CREATED, success())),
        Err(e) if e.is_conflict() && pin_version && original.precondition_rv.is_none() => {
            Err(still_processing(&budget_name))
        }
        Err(e) => Err(e),
    }
}

/// `canIgnorePDB`: terminal, pending or terminating pods.
fn can_ignore_budget(pod: &Value) -> bool {
    matches!(str_at(pod, "/status/phase"), "Succeeded" | "Failed" | "Pending" | "") || deleting(pod)
}

/// `shouldEnforceResourceVersion`: a pending pod could turn ready while it is deleted.
fn enforce_version(pod: &Value) -> bool {
    !matches!(str_at(pod, "/status/phase"), "Succeeded" | "Failed") && !deleting(pod)
}

/// `checkAndDecrement`: takes one disruption from the budget and records the pod as going.
fn check_and_decrement(state: &State, pod: &str, budget: &Value, dry_run: bool) -> Result<(), ApiError> {
    let name = str_at(budget, "/metadata/name");
    if int(budget, "/status/observedGeneration") < int(budget, "/metadata/generation") {
        return Err(still_processing(name));
    }
    let allowed = int(budget, "/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(pdb_forbidden(name, "pdb disruptions allowed is negative"));
    }
    if budget.pointer("/status/disruptedPods").and_then(Value::as_object).is_some_and(|m| m.len() > MAX_DISRUPTED_PODS)
    {
        return Err(pdb_forbidden(
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(too_many_requests(format!(
            "The disruption budget {name} needs {} healthy pods and has {} currently",
            int(budget, "/status/desiredHealthy"),
            int(budget, "/status/currentHealthy")
        )));
    }
    if dry_run {
        return Ok(());
    }
    let mut updated = budget.clone();
    updated["status"]["disruptionsAllowed"] = json!(allowed - 1);
    if allowed - 1 == 0 {
        set_allowed_condition(&mut updated, &state.now_rfc3339(), None);
    }
    let disrupted = &mut updated["status"]["disruptedPods"];
    if !disrupted.is_object() {
        *disrupted = json!({});
    }
    disrupted[pod] = json!(state.now_rfc3339());
    let target = pdb_target(state, str_at(budget, "/metadata/namespace"), name)
        .ok_or_else(|| ApiError::internal("poddisruptionbudgets are not served"))?;
    api::update_status(state, &target, updated, false, Ownership::Unrecorded).map(drop)
}

/// `addConditionAndDeletePod`: marks the pod with the DisruptionTarget condition (so its
/// controller knows why it goes), then deletes it.
fn mark_and_delete(state: &State, target: &Target, mut opts: DeleteOptions) -> Result<(), ApiError> {
    if !opts.dry_run {
        let now = state.now_rfc3339();
        // An empty precondition in an Eviction's options is none.
        let preconditions = DeleteOptions {
            precondition_uid: opts.precondition_uid.clone().filter(|uid| !uid.is_empty()),
            precondition_rv: opts.precondition_rv.clone().filter(|rv| !rv.is_empty()),
            ..DeleteOptions::default()
        };
        let precondition = |current: &Value| api::preconditions(target, &preconditions, current);
        let updated = state.store.update(
            &target.key(),
            || ApiError::not_found("", "pods", &target.name),
            |current| {
                precondition(current)?;
                let mut pod = current.clone();
                let changed = set_pod_condition(
                    &mut pod,
                    json!({"type": "DisruptionTarget", "status": "True", "lastProbeTime": null,
                           "lastTransitionTime": now, "reason": "EvictionByEvictionAPI",
                           "message": "Eviction API: evicting"}),
                );
                Ok(changed.then_some(pod))
            },
        )?;
        if opts.precondition_rv.is_some() {
            // This server made the newer version: the delete is preconditioned on it.
            opts.precondition_rv = Some(str_at(&updated, "/metadata/resourceVersion").into());
        }
    }
    api::delete(state, target, &opts).map(drop)
}

/// `podutil.UpdatePodCondition`: sets the condition, keeping its transition time when its
/// status does not change. True if anything changed.
fn set_pod_condition(pod: &mut Value, condition: Value) -> bool {
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    let conditions = &mut pod["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else { return false };
    match list.iter_mut().find(|c| c["type"] == condition["type"]) {
        Some(existing) => {
            let mut new = condition;
            if existing["status"] == new["status"] {
                new["lastTransitionTime"] = existing["lastTransitionTime"].clone();
            }
            let changed = *existing != new;
            *existing = new;
            changed
        }
        None => {
            list.push(condition);
            true
        }
    }
}

/// `pdbhelper.UpdateDisruptionAllowedCondition` (or, with an error, the failSafe condition),
/// with `apimeta.SetStatusCondition`'s transition-time rule.
fn set_allowed_condition(budget: &mut Value, now: &str, failure: Option<&str>) {
    let allowed = int(budget, "/status/disruptionsAllowed") > 0 && failure.is_none();
    let (status, reason) = match (failure, allowed) {
        (Some(_), _) => ("False", "SyncFailed"),
        (None, true) => ("True", "SufficientPods"),
        (None, false) => ("False", "InsufficientPods"),
    };
    let observed = int(budget, "/status/observedGeneration");
    let mut condition = json!({
        "type": "DisruptionAllowed", "status": status, "observedGeneration": observed,
        "lastTransitionTime": now, "reason": reason, "message": failure.unwrap_or(""),
    });
    let conditions = &mut budget["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else { return };
    match list.iter_mut().find(|c| str_at(c, "/type") == "DisruptionAllowed") {
        Some(existing) => {
            if existing["status"] == condition["status"] {
                condition["lastTransitionTime"] = existing["lastTransitionTime"].clone();
            }
            *existing = condition;
        }
        None => list.push(condition),
    }
}

// ---- the disruption controller's status loop ----

/// `GetScaledValueFromIntOrPercent(value, total, roundUp=true)`.
fn scaled(value: &Value, total: i64) -> Result<i64, String> {
    if let Some(n) = value.as_i64() {
        return Ok(n);
    }
    let s = value.as_str().unwrap_or("");
    let percent: i64 = s
        .strip_suffix('%')
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("invalid value for IntOrString: invalid value {s:?}"))?;
    Ok((percent * total + 99) / 100)
}

/// The controller of an object: its ownerReference marked `controller`.
fn controller_of(object: &Value) -> Option<&Value> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

/// The owner an ownerReference names, if it still exists with that uid.
fn owner(state: &State, namespace: &str, reference: &Value) -> Option<(String, Arc<Value>)> {
    let rt = state.registry.by_kind(str_at(reference, "/apiVersion"), str_at(reference, "/kind"))?;
    let key = Key { id: rt.id(), namespace: namespace.into(), name: str_at(reference, "/name").into() };
    let object = state.store.get(&key)?;
    (str_at(&object, "/metadata/uid") == str_at(reference, "/uid")).then(|| (rt.id(), object))
}

/// `getExpectedScale`: the replicas the pods' controllers want, each controller once (a
/// Deployment's, through its ReplicaSets). A pod with no controller counts for nothing; one
/// whose controller has no scale is an error.
fn expected_scale(state: &State, namespace: &str, pods: &[Arc<Value>]) -> Result<i64, String> {
    let mut scales: BTreeMap<String, i64> = BTreeMap::new();
    for pod in pods {
        let Some(reference) = controller_of(pod) else { continue };
        if scales.contains_key(str_at(reference, "/uid")) {
            continue;
        }
        let found = owner(state, namespace, reference).and_then(|(id, object)| {
            // A ReplicaSet a Deployment controls: the Deployment's scale is the one wanted.
            if id == "apps/replicasets"
                && let Some(parent) = controller_of(&object)
                && let Some((_, deployment)) =
                    owner(state, namespace, parent).filter(|(id, _)| id == "apps/deployments")
            {
                return Some((str_at(&deployment, "/metadata/uid").to_string(), int(&deployment, "/spec/replicas")));
            }
            let rt = state.registry.by_id(&id)?;
            rt.scale.then(|| (str_at(&object, "/metadata/uid").to_string(), int(&object, "/spec/replicas")))
        });
        let Some((uid, replicas)) = found else {
            return Err(format!("found no controllers for pod {:?}", str_at(pod, "/metadata/name")));
        };
        scales.insert(uid, replicas);
        scales.entry(str_at(reference, "/uid").to_string()).or_insert(0);
    }
    Ok(scales.values().sum())
}

/// The status a budget should have now, as the disruption controller's `trySync` computes
/// it, and the earliest time a pod it counts as disrupted stops being so.
fn desired_status(
    state: &State,
    budget: &Value,
    pods: &[Arc<Value>],
    now: jiff::Timestamp,
) -> (Value, Option<jiff::Timestamp>) {
    let namespace = str_at(budget, "/metadata/namespace");
    let pods: Vec<Arc<Value>> = pods.iter().filter(|p| selects(budget, p)).cloned().collect();
    let spec = budget.get("spec").cloned().unwrap_or(json!({}));
    let counts = if let Some(max_unavailable) = spec.get("maxUnavailable").filter(|v| !v.is_null()) {
        expected_scale(state, namespace, &pods)
            .and_then(|expected| Ok((expected, (expected - scaled(max_unavailable, expected)?).max(0))))
    } else if let Some(min_available) = spec.get("minAvailable").filter(|v| !v.is_null()) {
        if let Some(n) = min_available.as_i64() {
            Ok((pods.len() as i64, n))
        } else {
            expected_scale(state, namespace, &pods)
                .and_then(|expected| Ok((expected, scaled(min_available, expected)?)))
        }
    } else {
        Ok((0, 0))
    };
    let mut status = budget.get("status").cloned().filter(Value::is_object).unwrap_or(json!({}));
    let generation = int(budget, "/metadata/generation");
    let (expected, desired) = match counts {
        Ok(counts) => counts,
        Err(e) => {
            // failSafe: no disruption is allowed while the budget cannot be computed.
            let mut failed = budget.clone();
            failed["status"] = status;
            failed["status"]["disruptionsAllowed"] = json!(0);
            set_allowed_condition(&mut failed, &state.now_rfc3339(), Some(&e));
            return (failed["status"].take(), None);
        }
    };
    // Pods an eviction was approved for stay counted as going until they are deleted, or
    // until the deletion timeout says they will not be.
    let old_disrupted = status.get("disruptedPods").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut disrupted = Map::new();
    let mut next_expiry: Option<jiff::Timestamp> = None;
    for pod in &pods {
        let name = str_at(pod, "/metadata/name");
        if deleting(pod) {
            continue;
        }
        let Some(since) =
            old_disrupted.get(name).and_then(Value::as_str).and_then(|s| s.parse::<jiff::Timestamp>().ok())
        else {
            continue;
        };
        let expires = since.checked_add(DELETION_TIMEOUT).unwrap_or(since);
        if expires <= now {
            continue;
        }
        next_expiry = Some(next_expiry.map_or(expires, |t| t.min(expires)));
        disrupted.insert(name.to_string(), old_disrupted[name].clone());
    }
    let healthy = pods
        .iter()
        .filter(|p| !deleting(p) && !disrupted.contains_key(str_at(p, "/metadata/name")) && ready(p))
        .count() as i64;
    let allowed = if expected <= 0 { 0 } else { (healthy - desired).max(0) };
    status["currentHealthy"] = json!(healthy);
    status["desiredHealthy"] = json!(desired);
    status["expectedPods"] = json!(expected);
    status["disruptionsAllowed"] = json!(allowed);
    status["observedGeneration"] = json!(generation);
    if disrupted.is_empty() {
        if let Some(s) = status.as_object_mut() {
            s.remove("disruptedPods");
        }
    } else {
        status["disruptedPods"] = Value::Object(disrupted);
    }
    let mut updated = budget.clone();
    updated["status"] = status;
    set_allowed_condition(&mut updated, &state.now_rfc3339(), None);
    (updated["status"].take(), next_expiry)
}

/// Brings the status of every budget of `namespace` up to date; returns when to look again
/// (a disrupted pod's timeout), if ever.
fn sync_namespace(state: &State, namespace: &str) -> Option<jiff::Timestamp> {
    let budgets = budgets_in(state, namespace);
    if budgets.is_empty() {
        return None;
    }
    let pods = pods_in(state, namespace);
    let mut next = None;
    for budget in budgets {
        if deleting(&budget) {
            continue;
        }
        let (status, expiry) = desired_status(state, &budget, &pods, state.now());
        if let Some(at) = expiry {
            next = Some(next.map_or(at, |t: jiff::Timestamp| t.min(at)));
        }
        if budget.get("status") == Some(&status) {
            continue;
        }
        let mut updated = (*budget).clone();
        updated["status"] = status;
        let Some(target) = pdb_target(state, namespace, str_at(&budget, "/metadata/name")) else { continue };
        if let Err(e) = api::update_status(state, &target, updated, false, Ownership::Unrecorded) {
            // A conflict is a change that brings the namespace back.
            tracing::debug!(pdb = %target.name, "disruption: status update: {e}");
        }
    }
    next
}

/// The kinds whose changes can change a budget's status.
fn relevant(id: &str) -> bool {
    matches!(id, "/pods" | PDB_ID | "apps/replicasets" | "apps/deployments")
}

pub(crate) async fn run(state: Arc<State>) {
    let (mut changes, initial) = Subscription::start(&state.store, None);
    let mut dirty: BTreeSet<String> =
        initial.iter().filter(|e| relevant(&e.key.id)).map(|e| e.key.namespace.clone()).collect();
    let mut wake: BTreeMap<String, jiff::Timestamp> = BTreeMap::new();
    loop {
        let now = state.now();
        let due: Vec<String> = wake.iter().filter(|(_, at)| **at <= now).map(|(ns, _)| ns.clone()).collect();
        for ns in due {
            wake.remove(&ns);
            dirty.insert(ns);
        }
        for ns in std::mem::take(&mut dirty) {
            match sync_namespace(&state, &ns) {
                Some(at) => wake.insert(ns, at),
                None => wake.remove(&ns),
            };
        }
        let deadline = wake.values().min().map(|at| {
            let wait = at.duration_since(state.now()).unsigned_abs();
            tokio::time::Instant::now() + wait.min(DELETION_TIMEOUT)
        });
        match changes.next(deadline).await {
            Changes::Events(events) | Changes::Reset(events) => {
                dirty.extend(events.iter().filter(|e| relevant(&e.key.id)).map(|e| e.key.namespace.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::test_state;

    fn create(state: &State, resource: &str, object: Value) -> Arc<Value> {
        let (group, version) = match str_at(&object, "/apiVersion").split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), str_at(&object, "/apiVersion").to_string()),
        };
        let rt = state.registry.lookup(&group, &version, resource).unwrap();
        api::create(state, &rt, "default", object, false, Ownership::Unrecorded).unwrap()
    }

    fn workload(kind: &str, name: &str, replicas: i64, owner: Option<&Value>) -> Value {
        let mut object = json!({
            "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        });
        if let Some(owner) = owner {
            object["metadata"]["ownerReferences"] = json!([reference(owner)]);
        }
        object
    }

    fn reference(owner: &Value) -> Value {
        json!({"apiVersion": str_at(owner, "/apiVersion"), "kind": str_at(owner, "/kind"),
               "name": str_at(owner, "/metadata/name"), "uid": str_at(owner, "/metadata/uid"), "controller": true})
    }

    /// A pod as the lister sees it: ready, owned by `owner` if given.
    fn pod(name: &str, owner: Option<&Value>) -> Arc<Value> {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        });
        if let Some(owner) = owner {
            pod["metadata"]["ownerReferences"] = json!([reference(owner)]);
        }
        Arc::new(pod)
    }

    fn budget(spec: Value, status: Value) -> Value {
        let mut spec = spec;
        spec["selector"] = json!({"matchLabels": {"app": "web"}});
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": "web", "namespace": "default", "generation": 1}, "spec": spec, "status": status})
    }

    #[test]
    fn a_percentage_counts_against_the_deployment_above_the_replica_sets() {
        let state = test_state();
        let deployment = create(&state, "deployments", workload("Deployment", "web", 5, None));
        let old = create(&state, "replicasets", workload("ReplicaSet", "web-1", 1, Some(&deployment)));
        let new = create(&state, "replicasets", workload("ReplicaSet", "web-2", 4, Some(&deployment)));
        let pods = [pod("a", Some(&old)), pod("b", Some(&new)), pod("c", Some(&new)), pod("loose", None)];
        let pdb = budget(json!({"maxUnavailable": "40%"}), json!({}));
        let (status, _) = desired_status(&state, &pdb, &pods, state.now());
        // 5 expected (the Deployment, once), 2 may be unavailable (40% rounded up), 4 healthy
        // (the pod with no controller counts as healthy, not as expected).
        assert_eq!(
            (
                &status["expectedPods"],
                &status["desiredHealthy"],
                &status["currentHealthy"],
                &status["disruptionsAllowed"]
            ),
            (&json!(5), &json!(3), &json!(4), &json!(1))
        );
        assert_eq!(status["conditions"][0]["reason"], "SufficientPods");
    }

    #[test]
    fn a_controller_without_a_scale_fails_safe() {
        let state = test_state();
        let owner = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "odd", "uid": "u-1"}});
        let pdb = budget(json!({"maxUnavailable": 1}), json!({"disruptionsAllowed": 3}));
        let (status, _) = desired_status(&state, &pdb, &[pod("a", Some(&owner))], state.now());
        assert_eq!(status["disruptionsAllowed"], 0);
        let condition = &status["conditions"][0];
        assert_eq!((&condition["status"], &condition["reason"]), (&json!("False"), &json!("SyncFailed")));
        assert_eq!(condition["message"], "found no controllers for pod \"a\"");
    }

    #[test]
    fn evicted_pods_count_as_going_until_the_deletion_timeout() {
        let state = test_state();
        let now: jiff::Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        let disrupted = json!({"disruptedPods": {"a": "2026-01-01T00:09:30Z", "b": "2026-01-01T00:07:00Z"}});
        let pdb = budget(json!({"minAvailable": 1}), disrupted);
        let (status, wake) = desired_status(&state, &pdb, &[pod("a", None), pod("b", None), pod("c", None)], now);
        // "a" is still going; "b" was not deleted within two minutes and counts again.
        assert_eq!(status["disruptedPods"], json!({"a": "2026-01-01T00:09:30Z"}));
        assert_eq!((&status["currentHealthy"], &status["disruptionsAllowed"]), (&json!(2), &json!(1)));
        assert_eq!(wake, Some("2026-01-01T00:11:30Z".parse().unwrap()));
    }

    #[test]
    fn a_budget_behind_its_spec_answers_429_with_a_retry_time() {
        let state = test_state();
        let rt = |resource: &str, group: &str| state.registry.lookup(group, "v1", resource).unwrap();
        let target = |resource: &str, group: &str, name: &str| Target {
            rt: rt(resource, group),
            namespace: "default".into(),
            name: name.into(),
        };
        let mut running = (*pod("a", None)).clone();
        running["spec"] = json!({"containers": [{"name": "c", "image": "nginx"}]});
        create(&state, "pods", running.clone());
        api::update_status(&state, &target("pods", "", "a"), running, false, Ownership::Unrecorded).unwrap();
        let pdb = budget(json!({"minAvailable": 0}), json!({}));
        create(&state, "poddisruptionbudgets", pdb.clone());
        let mut behind = pdb;
        behind["status"] = json!({"observedGeneration": 0, "disruptionsAllowed": 1});
        api::update_status(
            &state,
            &target("poddisruptionbudgets", "policy", "web"),
            behind,
            false,
            Ownership::Unrecorded,
        )
        .unwrap();

        let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "a"}});
        let (code, status) = evict(&state, "default", "a", eviction, false).unwrap();
        assert_eq!(code, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(status["details"]["retryAfterSeconds"], 10);
        assert_eq!(
            status["details"]["causes"][0]["message"],
            "The disruption budget web is still being processed by the server."
        );
        assert!(state.store.get(&target("pods", "", "a").key()).is_some(), "nothing was evicted");

        let misnamed = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "b"}});
        let refused = evict(&state, "default", "a", misnamed, false).unwrap_err();
        assert_eq!(
            (refused.code, refused.message.as_str()),
            (400, "name in URL does not match name in Eviction object")
        );
    }
}
