//! Pure helpers of the Deployment controller, as upstream
//! `pkg/controller/deployment/util/deployment_util.go` (with the few `controller_utils.go` and
//! `intstr` pieces they lean on).
//!
//! Arithmetic on counts wraps like Go's `int32`, so hostile specs give upstream's numbers
//! instead of a panic. Unset `spec.replicas` reads as 1, the value the API server defaults it to.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet, ReplicaSetCondition};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;
use wasmcm_core::names::safe_encode;
use wasmcm_guest::Instant;

pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
pub const REVISION_HISTORY_ANNOTATION: &str = "deployment.kubernetes.io/revision-history";
pub const DESIRED_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/max-replicas";
pub const LAST_APPLIED_CONFIG_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Where the removed `spec.rollbackTo` of extensions/v1beta1 round-trips.
pub const DEPRECATED_ROLLBACK_TO_ANNOTATION: &str = "deprecated.deployment.rollback.to";
pub const DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: &str = "pod-template-hash";
/// What the controller passes as the revision-history length limit.
pub const MAX_REV_HISTORY_LENGTH_IN_CHARS: usize = 2000;

pub const ROLLING_UPDATE: &str = "RollingUpdate";
pub const RECREATE: &str = "Recreate";

pub const DEPLOYMENT_AVAILABLE: &str = "Available";
pub const DEPLOYMENT_PROGRESSING: &str = "Progressing";
pub const DEPLOYMENT_REPLICA_FAILURE: &str = "ReplicaFailure";

pub const ROLLBACK_REVISION_NOT_FOUND: &str = "DeploymentRollbackRevisionNotFound";
pub const ROLLBACK_TEMPLATE_UNCHANGED: &str = "DeploymentRollbackTemplateUnchanged";
pub const ROLLBACK_DONE: &str = "DeploymentRollback";

pub const REPLICA_SET_UPDATED_REASON: &str = "ReplicaSetUpdated";
pub const FAILED_RS_CREATE_REASON: &str = "ReplicaSetCreateError";
pub const NEW_REPLICA_SET_REASON: &str = "NewReplicaSetCreated";
pub const FOUND_NEW_RS_REASON: &str = "FoundNewReplicaSet";
pub const NEW_RS_AVAILABLE_REASON: &str = "NewReplicaSetAvailable";
pub const TIMED_OUT_REASON: &str = "ProgressDeadlineExceeded";
pub const PAUSED_DEPLOY_REASON: &str = "DeploymentPaused";
pub const RESUMED_DEPLOY_REASON: &str = "DeploymentResumed";
pub const MINIMUM_REPLICAS_AVAILABLE: &str = "MinimumReplicasAvailable";
pub const MINIMUM_REPLICAS_UNAVAILABLE: &str = "MinimumReplicasUnavailable";

// ---------------------------------------------------------------------------------------------
// Field access with API defaults
// ---------------------------------------------------------------------------------------------

pub fn deployment_replicas(d: &Deployment) -> i32 {
    d.spec.replicas.unwrap_or(1)
}

pub fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.replicas.unwrap_or(1)
}

/// The strategy type as upstream sees it: unset is `""`, which is neither strategy.
fn strategy_type(d: &Deployment) -> &str {
    d.spec.strategy.as_ref().and_then(|s| s.type_.as_deref()).unwrap_or("")
}

fn rolling_params(d: &Deployment) -> (Option<&IntOrString>, Option<&IntOrString>) {
    let ru = d.spec.strategy.as_ref().and_then(|s| s.rolling_update.as_ref());
    (ru.and_then(|r| r.max_surge.as_ref()), ru.and_then(|r| r.max_unavailable.as_ref()))
}

fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

// ---------------------------------------------------------------------------------------------
// maxSurge / maxUnavailable
// ---------------------------------------------------------------------------------------------

/// `intstr.GetScaledValueFromIntOrPercent`: ints pass through, `"N%"` scales `total`.
pub fn scaled_value_from_int_or_percent(
    value: Option<&IntOrString>,
    total: i32,
    round_up: bool,
) -> Result<i64, String> {
    let Some(value) = value else { return Err("nil value for IntOrString".into()) };
    match value {
        IntOrString::Int(i) => Ok(i64::from(*i)),
        IntOrString::String(s) => {
            let Some(digits) = s.strip_suffix('%') else {
                return Err("invalid value for IntOrString: invalid type: string is not a percentage".into());
            };
            // Go's strconv.Atoi and Rust's i64 parser accept the same grammar: optional sign, digits.
            let percent: i64 =
                digits.parse().map_err(|e| format!("invalid value for IntOrString: invalid value {s:?}: {e}"))?;
            let scaled = percent as f64 * f64::from(total) / 100.0;
            Ok(if round_up { scaled.ceil() } else { scaled.floor() } as i64)
        }
    }
}

/// `ResolveFenceposts`: surge rounds up, unavailable down; an unset bound is 0. Both resolving
/// to zero would stall a rollout, so unavailable then becomes 1.
pub fn resolve_fenceposts(
    max_surge: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    desired: i32,
) -> Result<(i32, i32), String> {
    let zero = IntOrString::Int(0);
    let surge = scaled_value_from_int_or_percent(Some(max_surge.unwrap_or(&zero)), desired, true)?;
    let mut unavailable = scaled_value_from_int_or_percent(Some(max_unavailable.unwrap_or(&zero)), desired, false)?;
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    Ok((surge as i32, unavailable as i32))
}

pub fn is_rolling_update(d: &Deployment) -> bool {
    strategy_type(d) == ROLLING_UPDATE
}

/// `MaxSurge`: 0 unless rolling; an invalid bound (rejected by validation) counts as 0.
pub fn max_surge(d: &Deployment) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    let (surge, unavailable) = rolling_params(d);
    resolve_fenceposts(surge, unavailable, deployment_replicas(d)).map(|(s, _)| s).unwrap_or(0)
}

/// `MaxUnavailable`: 0 unless rolling with replicas, never more than the replicas.
pub fn max_unavailable(d: &Deployment) -> i32 {
    let replicas = deployment_replicas(d);
    if !is_rolling_update(d) || replicas == 0 {
        return 0;
    }
    let (surge, unavailable) = rolling_params(d);
    let unavailable = resolve_fenceposts(surge, unavailable, replicas).map(|(_, u)| u).unwrap_or(0);
    unavailable.min(replicas)
}

/// `MinAvailable`: the replicas a rolling update must keep available.
pub fn min_available(d: &Deployment) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    deployment_replicas(d).wrapping_sub(max_unavailable(d))
}

// ---------------------------------------------------------------------------------------------
// Pod template hash
// ---------------------------------------------------------------------------------------------

struct Fnv1a32(u32);

impl Fnv1a32 {
    fn new() -> Self {
        Fnv1a32(0x811c_9dc5)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u32::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0193);
        }
    }
}

/// Writes `v` as compact JSON with object keys sorted, whatever map type serde_json was built
/// with (the `preserve_order` feature could be unified in by another crate).
fn write_canonical(h: &mut Fnv1a32, v: &Value) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            h.write(b"{");
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    h.write(b",");
                }
                h.write(Value::String(k.clone()).to_string().as_bytes());
                h.write(b":");
                if let Some(item) = map.get(k) {
                    write_canonical(h, item);
                }
            }
            h.write(b"}");
        }
        Value::Array(items) => {
            h.write(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    h.write(b",");
                }
                write_canonical(h, item);
            }
            h.write(b"]");
        }
        scalar => h.write(scalar.to_string().as_bytes()),
    }
}

/// The `pod-template-hash` label value for `template` (upstream `controller.ComputeHash`).
///
/// Upstream feeds FNV-1a 32 with a spew dump of the Go struct, which depends on Go type and
/// field layout and cannot be reproduced here; this hashes the canonical JSON of the template
/// instead, then adds the collision count and encodes exactly as upstream. So a ReplicaSet
/// created by kube-controller-manager carries a different hash than this computes for the same
/// template. That is harmless: the new ReplicaSet is found by comparing templates with
/// [`equal_ignore_hash`], never by hash, so a Deployment handed over from KCM adopts its
/// existing ReplicaSet; the hash only has to be stable here and to move when the template or
/// the collision count does, so that names and selectors of a new ReplicaSet are unique.
pub fn pod_template_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let mut h = Fnv1a32::new();
    // Serialising a k8s-openapi struct cannot fail (string keys only); null keeps this total.
    let json = serde_json::to_value(template).unwrap_or(Value::Null);
    write_canonical(&mut h, &json);
    if let Some(count) = collision_count {
        // Upstream writes an 8-byte buffer holding the little-endian u32 in its first half.
        let mut buf = [0u8; 8];
        buf[..4].copy_from_slice(&(count as u32).to_le_bytes());
        h.write(&buf);
    }
    safe_encode(&h.0.to_string())
}

/// Drops empty arrays: Go's semantic equality treats a nil and an empty slice as equal, and the
/// API server omits empty lists, so this is the only nil-versus-empty case templates meet.
fn without_empty_arrays(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|_, item| !matches!(item, Value::Array(a) if a.is_empty()));
            map.values_mut().for_each(without_empty_arrays);
        }
        Value::Array(items) => items.iter_mut().for_each(without_empty_arrays),
        _ => {}
    }
}

fn comparable_template(t: &PodTemplateSpec) -> Value {
    let mut v = serde_json::to_value(t).unwrap_or(Value::Null);
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
            labels.remove(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY);
        }
        // nil and empty maps are equal to upstream too; these two are the ones that can be
        // emptied by the hash label removal or by a client.
        for map in ["labels", "annotations"] {
            if meta.get(map).and_then(Value::as_object).is_some_and(serde_json::Map::is_empty) {
                meta.remove(map);
            }
        }
    }
    without_empty_arrays(&mut v);
    // Go's template holds metadata and spec by value: absent and empty are the same there.
    if let Value::Object(fields) = &mut v {
        fields.retain(|_, item| !matches!(item, Value::Object(o) if o.is_empty()));
    }
    v
}

/// `EqualIgnoreHash`: templates equal but for the `pod-template-hash` label.
pub fn equal_ignore_hash(t1: &PodTemplateSpec, t2: &PodTemplateSpec) -> bool {
    comparable_template(t1) == comparable_template(t2)
}

// ---------------------------------------------------------------------------------------------
// Revisions and annotations
// ---------------------------------------------------------------------------------------------

/// The revision annotation of `meta`; 0 when absent or not an integer. Upstream skips a
/// revision it cannot parse when taking maxima, which gives the same results as 0.
pub fn revision(meta: &ObjectMeta) -> i64 {
    annotation(meta, REVISION_ANNOTATION).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The revision annotation as written, `""` when absent.
pub fn revision_string(meta: &ObjectMeta) -> String {
    annotation(meta, REVISION_ANNOTATION).unwrap_or("").to_string()
}

pub fn max_revision(replica_sets: &[&ReplicaSet]) -> i64 {
    replica_sets.iter().map(|rs| revision(&rs.metadata)).fold(0, i64::max)
}

/// The second highest revision: that of the rollout before the current one.
pub fn last_revision(replica_sets: &[&ReplicaSet]) -> i64 {
    let (mut max, mut second) = (0, 0);
    for v in replica_sets.iter().map(|rs| revision(&rs.metadata)) {
        if v >= max {
            second = max;
            max = v;
        } else if v > second {
            second = v;
        }
    }
    second
}

/// `SetDeploymentRevision`: true when the deployment's revision annotation had to change.
pub fn set_deployment_revision(annotations: &mut BTreeMap<String, String>, revision: &str) -> bool {
    if annotations.get(REVISION_ANNOTATION).map(String::as_str) == Some(revision) {
        return false;
    }
    annotations.insert(REVISION_ANNOTATION.into(), revision.into());
    true
}

/// Annotations owned by the controller (or kubectl) that never travel between a Deployment and
/// its ReplicaSets.
pub fn skip_copy_annotation(key: &str) -> bool {
    matches!(
        key,
        LAST_APPLIED_CONFIG_ANNOTATION
            | REVISION_ANNOTATION
            | REVISION_HISTORY_ANNOTATION
            | DESIRED_REPLICAS_ANNOTATION
            | MAX_REPLICAS_ANNOTATION
            | DEPRECATED_ROLLBACK_TO_ANNOTATION
    )
}

/// Copies the deployment's copyable annotations (such as `kubernetes.io/change-cause`) onto
/// `rs_annotations`; true when something changed.
pub fn copy_deployment_annotations(deployment: &Deployment, rs_annotations: &mut BTreeMap<String, String>) -> bool {
    let mut changed = false;
    for (k, v) in deployment.metadata.annotations.iter().flatten() {
        if skip_copy_annotation(k) || rs_annotations.get(k) == Some(v) {
            continue;
        }
        rs_annotations.insert(k.clone(), v.clone());
        changed = true;
    }
    changed
}

/// `SetDeploymentAnnotationsTo`: on rollback the deployment takes the ReplicaSet's copyable
/// annotations and keeps only its own controller-owned ones.
pub fn deployment_annotations_for_rollback(
    deployment: &BTreeMap<String, String>,
    rollback_to: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let kept = deployment.iter().filter(|(k, _)| skip_copy_annotation(k));
    let copied = rollback_to.iter().filter(|(k, _)| !skip_copy_annotation(k));
    kept.chain(copied).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// `SetReplicasAnnotations`: true when either annotation had to change.
pub fn set_replicas_annotations(annotations: &mut BTreeMap<String, String>, desired: i32, max: i32) -> bool {
    let mut updated = false;
    for (key, value) in [(DESIRED_REPLICAS_ANNOTATION, desired), (MAX_REPLICAS_ANNOTATION, max)] {
        let value = value.to_string();
        if annotations.get(key) != Some(&value) {
            annotations.insert(key.into(), value);
            updated = true;
        }
    }
    updated
}

pub fn replicas_annotations_need_update(rs: &ReplicaSet, desired: i32, max: i32) -> bool {
    annotation(&rs.metadata, DESIRED_REPLICAS_ANNOTATION) != Some(desired.to_string().as_str())
        || annotation(&rs.metadata, MAX_REPLICAS_ANNOTATION) != Some(max.to_string().as_str())
}

/// Go's `strconv.Atoi` into `int32`: values past 32 bits wrap as upstream's conversion does.
/// `getNonNegativeInt32FromAnnotation`: a decimal in 0..=2^31-1, anything else (absent, a
/// sign, out of range, not a number) unreadable. These annotations are the controller's own;
/// another tool may still damage them.
fn int_annotation(rs: &ReplicaSet, key: &str) -> Option<i32> {
    let value = annotation(&rs.metadata, key)?;
    // Go's ParseUint takes no sign; Rust's parse would take a `+`.
    if !value.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse::<i32>().ok()
}

pub fn desired_replicas_annotation(rs: &ReplicaSet) -> Option<i32> {
    int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
}

pub fn max_replicas_annotation(rs: &ReplicaSet) -> Option<i32> {
    int_annotation(rs, MAX_REPLICAS_ANNOTATION)
}

/// What [`set_new_replica_set_annotations`] made of a ReplicaSet's annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnotationUpdate {
    /// The annotations to give the ReplicaSet. Kept even when `changed` is false: upstream's
    /// copy is already mutated then, and is written anyway when minReadySeconds needs an update.
    pub annotations: BTreeMap<String, String>,
    /// Upstream's return value: whether the ReplicaSet needs an update for its annotations.
    pub changed: bool,
}

/// `SetNewReplicaSetAnnotations` as a pure function of the ReplicaSet's current annotations.
///
/// The revision only moves up (old ReplicaSets may have been deleted since `new_revision` was
/// computed); a ReplicaSet that already had a revision and gets a new one is a rollback target,
/// so its old revision joins the history, trimmed from the front to `history_limit_chars`.
/// Replica annotations are set only on a ReplicaSet about to be created (`exists == false`).
/// An unparsable revision on either side stops after the copy and reports no change, as upstream.
pub fn set_new_replica_set_annotations(
    deployment: &Deployment,
    new_rs: &ReplicaSet,
    new_revision: &str,
    exists: bool,
    history_limit_chars: usize,
) -> AnnotationUpdate {
    let mut annotations = new_rs.metadata.annotations.clone().unwrap_or_default();
    let mut changed = copy_deployment_annotations(deployment, &mut annotations);
    let old_revision = annotations.get(REVISION_ANNOTATION).cloned();
    let old_int = match old_revision.as_deref() {
        None | Some("") => Some(0),
        Some(s) => s.parse::<i64>().ok(),
    };
    let (Some(old_int), Ok(new_int)) = (old_int, new_revision.parse::<i64>()) else {
        return AnnotationUpdate { annotations, changed: false };
    };
    if old_int < new_int {
        annotations.insert(REVISION_ANNOTATION.into(), new_revision.into());
        changed = true;
        if let Some(old) = old_revision {
            push_revision_history(&mut annotations, old, history_limit_chars);
        }
    }
    if !exists {
        let replicas = deployment_replicas(deployment);
        changed |= set_replicas_annotations(&mut annotations, replicas, replicas.wrapping_add(max_surge(deployment)));
    }
    AnnotationUpdate { annotations, changed }
}

fn push_revision_history(annotations: &mut BTreeMap<String, String>, old: String, limit: usize) {
    let history = annotations.get(REVISION_HISTORY_ANNOTATION).cloned().unwrap_or_default();
    let revisions: Vec<&str> = history.split(',').collect();
    if revisions.first().is_none_or(|r| r.is_empty()) {
        // Upstream does not apply the limit to the first entry.
        annotations.insert(REVISION_HISTORY_ANNOTATION.into(), old);
        return;
    }
    let mut total = history.len() + old.len() + 1;
    let mut start = 0;
    while total > limit && start < revisions.len() {
        total = total.saturating_sub(revisions[start].len() + 1);
        start += 1;
    }
    if total <= limit {
        let mut kept: Vec<&str> = revisions[start..].to_vec();
        kept.push(&old);
        annotations.insert(REVISION_HISTORY_ANNOTATION.into(), kept.join(","));
    }
}

// ---------------------------------------------------------------------------------------------
// Replica counts and proportional scaling
// ---------------------------------------------------------------------------------------------

fn sum(replica_sets: &[&ReplicaSet], f: impl Fn(&ReplicaSet) -> i32) -> i32 {
    replica_sets.iter().fold(0i32, |acc, rs| acc.wrapping_add(f(rs)))
}

/// Sum of `spec.replicas`.
pub fn get_replica_count_for_replica_sets(replica_sets: &[&ReplicaSet]) -> i32 {
    sum(replica_sets, rs_replicas)
}

/// Pods that run or are about to: per ReplicaSet the largest of `spec.replicas` (pods on their
/// way in), `status.replicas` (pods a scale-down has yet to remove) and the active pods the
/// cache shows it controlling (`active`, by ReplicaSet uid: pods a quick scale-down has yet to
/// remove that its status never counted).
pub fn get_running_or_wanted_count_for_replica_sets(
    replica_sets: &[&ReplicaSet],
    active: &BTreeMap<String, i32>,
) -> i32 {
    sum(replica_sets, |rs| {
        let pods = rs.metadata.uid.as_ref().and_then(|uid| active.get(uid)).copied().unwrap_or(0);
        rs_replicas(rs).max(rs.status.as_ref().map_or(0, |s| s.replicas)).max(pods)
    })
}

/// Sum of `status.replicas`.
pub fn get_actual_replica_count_for_replica_sets(replica_sets: &[&ReplicaSet]) -> i32 {
    sum(replica_sets, |rs| rs.status.as_ref().map_or(0, |s| s.replicas))
}

pub fn get_ready_replica_count_for_replica_sets(replica_sets: &[&ReplicaSet]) -> i32 {
    sum(replica_sets, |rs| rs.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0))
}

pub fn get_available_replica_count_for_replica_sets(replica_sets: &[&ReplicaSet]) -> i32 {
    sum(replica_sets, available_replicas)
}

pub fn available_replicas(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0)
}

/// ReplicaSets that have, or ought to have, pods.
pub fn filter_active_replica_sets<'a>(replica_sets: &[&'a ReplicaSet]) -> Vec<&'a ReplicaSet> {
    replica_sets.iter().copied().filter(|rs| rs_replicas(rs) > 0).collect()
}

/// `GetReplicaSetProportion`: how many replicas `rs` gains (or loses) in a scaling event,
/// bounded by what is left of `to_add` after `added`.
///
/// Unlike upstream, a scale-down never grows a ReplicaSet: a max-replicas annotation damaged
/// to a small value (`"1"`) gives a large positive share, which upstream's `max(share,
/// allowed)` keeps, growing that ReplicaSet past what the deployment allows while the largest
/// one is cut to 0 for the leftover.
pub fn get_proportion(rs: Option<&ReplicaSet>, d: &Deployment, to_add: i32, added: i32) -> i32 {
    let Some(rs) = rs else { return 0 };
    if rs_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = get_replica_set_fraction(rs, d);
    let allowed = to_add.wrapping_sub(added);
    if to_add > 0 { fraction.min(allowed) } else { fraction.max(allowed).min(0) }
}

/// `getReplicaSetFraction`: the change that keeps `rs` at its share of the deployment, the
/// share being measured against the deployment size (max-replicas annotation) it was last
/// sized for.
pub fn get_replica_set_fraction(rs: &ReplicaSet, d: &Deployment) -> i32 {
    let replicas = rs_replicas(rs);
    if deployment_replicas(d) == 0 {
        return replicas.wrapping_neg();
    }
    let deployment_max = deployment_replicas(d).wrapping_add(max_surge(d));
    // An annotation another tool removed, spoiled or zeroed: the deployment's current size
    // stands in; when that is 0 too, there is nothing to scale against.
    let before = match max_replicas_annotation(rs) {
        Some(max) if max > 0 => max,
        _ => d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0),
    };
    if before <= 0 {
        return 0;
    }
    // In f64, where Go multiplies in int32 and wraps past 2^31 (50k replicas × 50k).
    let new_size = f64::from(replicas) * f64::from(deployment_max) / f64::from(before);
    // k8s.io/utils RoundToInt32: half away from zero by adding 0.5 and truncating.
    let rounded = if new_size < 0.0 { (new_size - 0.5) as i32 } else { (new_size + 0.5) as i32 };
    rounded.saturating_sub(replicas)
}

/// `IsSaturated`: `rs` owns every desired replica, all available, and was sized for this
/// deployment size.
pub fn is_saturated(d: &Deployment, rs: Option<&ReplicaSet>) -> bool {
    let Some(rs) = rs else { return false };
    let Some(desired) = desired_replicas_annotation(rs) else { return false };
    let replicas = deployment_replicas(d);
    rs_replicas(rs) == replicas && desired == replicas && available_replicas(rs) == replicas
}

/// `NewRSNewReplicas`: the size of the new ReplicaSet in this step of a rollout.
///
/// Unlike upstream, which sums `spec.replicas`, maxSurge bounds the pods that run: an old
/// ReplicaSet just scaled down counts the pods it still has until they are gone (by its status
/// and by the pods it controls in the cache, `active`), and while one has a change of spec its
/// status has not yet observed (its controller may still be creating pods for the size it had,
/// which no cache shows yet) the new one does not grow at all. Upstream runs up to replicas +
/// maxSurge + the old pods not yet deleted; a chaos soak with quick successive image changes saw
/// 5 pods for 3 + 1.
pub fn new_rs_new_replicas(
    d: &Deployment,
    all_rs: &[&ReplicaSet],
    new_rs: &ReplicaSet,
    active: &BTreeMap<String, i32>,
) -> Result<i32, String> {
    let replicas = deployment_replicas(d);
    match strategy_type(d) {
        ROLLING_UPDATE => {
            // Unlike MaxSurge, an unset maxSurge is an error here, as upstream.
            let surge = scaled_value_from_int_or_percent(rolling_params(d).0, replicas, true)?;
            let current = get_running_or_wanted_count_for_replica_sets(all_rs, active);
            let max_total = replicas.wrapping_add(surge as i32);
            let new_replicas = rs_replicas(new_rs);
            let settling = all_rs.iter().any(|rs| !std::ptr::eq(*rs, new_rs) && !status_observed(rs));
            if current >= max_total || settling {
                return Ok(new_replicas);
            }
            let scale_up = max_total.wrapping_sub(current).min(replicas.wrapping_sub(new_replicas));
            Ok(new_replicas.wrapping_add(scale_up))
        }
        RECREATE => Ok(replicas),
        other => Err(format!("deployment type {other} isn't supported")),
    }
}

/// Whether a ReplicaSet's status has observed its latest spec.
pub fn status_observed(rs: &ReplicaSet) -> bool {
    let observed = rs.status.as_ref().and_then(|s| s.observed_generation).unwrap_or(0);
    rs.metadata.generation.unwrap_or(0) <= observed
}

/// `FindActiveOrLatest`: the one ReplicaSet to size the whole deployment to, when at most one is
/// active; `None` when several are (they scale proportionally).
pub fn find_active_or_latest<'a>(new_rs: Option<&'a ReplicaSet>, old_rss: &[&'a ReplicaSet]) -> Option<&'a ReplicaSet> {
    let mut old: Vec<&ReplicaSet> = old_rss.to_vec();
    old.sort_by(|a, b| replica_sets_by_creation_timestamp(b, a));
    let all: Vec<&ReplicaSet> = old.iter().copied().chain(new_rs).collect();
    let active = filter_active_replica_sets(&all);
    match active.len() {
        0 => new_rs.or(old.first().copied()),
        1 => active.first().copied(),
        _ => None,
    }
}

/// `FindNewReplicaSet`: the oldest ReplicaSet whose template is the deployment's. Several can
/// match after an upgrade changed hashing; the oldest is the deterministic choice.
pub fn find_new_replica_set<'a>(d: &Deployment, replica_sets: &[&'a ReplicaSet]) -> Option<&'a ReplicaSet> {
    let mut sorted = replica_sets.to_vec();
    sorted.sort_by(|a, b| replica_sets_by_creation_timestamp(a, b));
    let empty = PodTemplateSpec::default();
    let wanted = comparable_template(&d.spec.template);
    sorted.into_iter().find(|rs| comparable_template(rs.spec.template.as_ref().unwrap_or(&empty)) == wanted)
}

/// `FindOldReplicaSets`: every ReplicaSet but the new one, and those of them with replicas wanted.
pub fn find_old_replica_sets<'a>(
    d: &Deployment,
    replica_sets: &[&'a ReplicaSet],
) -> (Vec<&'a ReplicaSet>, Vec<&'a ReplicaSet>) {
    let new_uid = find_new_replica_set(d, replica_sets).map(|rs| rs.metadata.uid.as_deref().unwrap_or(""));
    let all: Vec<&ReplicaSet> =
        replica_sets.iter().copied().filter(|rs| new_uid != Some(rs.metadata.uid.as_deref().unwrap_or(""))).collect();
    let required = all.iter().copied().filter(|rs| rs_replicas(rs) != 0).collect();
    (required, all)
}

// ---------------------------------------------------------------------------------------------
// Orderings
// ---------------------------------------------------------------------------------------------

/// Oldest first, then by name. An unset timestamp is Go's zero time, older than any.
pub fn replica_sets_by_creation_timestamp(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    let (ta, tb) = (a.metadata.creation_timestamp.as_ref(), b.metadata.creation_timestamp.as_ref());
    ta.map(|t| t.0).cmp(&tb.map(|t| t.0)).then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// `ReplicaSetsByRevision`: lowest revision first, a ReplicaSet without the annotation being
/// revision 0 (upstream's `Revision`); equal revisions by age, then name. An unreadable
/// revision counts as 0 too: upstream compares it by age with every other, which is no order
/// at all (and Rust's sort may panic on one).
pub fn replica_sets_by_revision(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    revision(&a.metadata).cmp(&revision(&b.metadata)).then_with(|| replica_sets_by_creation_timestamp(a, b))
}

/// Largest first, older first among equals: the order scale-downs take.
pub fn replica_sets_by_size_older(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    rs_replicas(b).cmp(&rs_replicas(a)).then_with(|| replica_sets_by_creation_timestamp(a, b))
}

/// Largest first, newer first among equals: the order scale-ups take.
pub fn replica_sets_by_size_newer(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    rs_replicas(b).cmp(&rs_replicas(a)).then_with(|| replica_sets_by_creation_timestamp(b, a))
}

// ---------------------------------------------------------------------------------------------
// Conditions and progress
// ---------------------------------------------------------------------------------------------

/// A condition stamped `now`, in whole seconds as the API stores it.
pub fn new_deployment_condition(
    cond_type: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Instant,
) -> DeploymentCondition {
    let at = Instant { seconds: now.seconds, nanoseconds: 0 }.time();
    DeploymentCondition {
        type_: Some(cond_type.into()),
        status: Some(status.into()),
        last_update_time: Some(at.clone()),
        last_transition_time: Some(at),
        reason: Some(reason.into()),
        message: Some(message.into()),
    }
}

/// `ReplicaSetToDeploymentCondition`: lifts a ReplicaSet condition (ReplicaFailure) onto the
/// deployment, its transition time doubling as the update time.
pub fn replica_set_to_deployment_condition(c: &ReplicaSetCondition) -> DeploymentCondition {
    DeploymentCondition {
        type_: c.type_.clone(),
        status: c.status.clone(),
        last_transition_time: c.last_transition_time.clone(),
        last_update_time: c.last_transition_time.clone(),
        reason: c.reason.clone(),
        message: c.message.clone(),
    }
}

pub fn get_deployment_condition<'a>(status: &'a DeploymentStatus, cond_type: &str) -> Option<&'a DeploymentCondition> {
    status.conditions.iter().flatten().find(|c| c.type_.as_deref() == Some(cond_type))
}

/// `SetDeploymentCondition`: a condition with the same status and reason is left as it is
/// (message and update time included); one with the same status only keeps its transition time.
/// The condition moves to the end of the list.
pub fn set_deployment_condition(status: &mut DeploymentStatus, mut condition: DeploymentCondition) {
    let cond_type = condition.type_.clone().unwrap_or_default();
    if let Some(current) = get_deployment_condition(status, &cond_type) {
        if current.status == condition.status && current.reason == condition.reason {
            return;
        }
        if current.status == condition.status {
            condition.last_transition_time = current.last_transition_time.clone();
        }
    }
    remove_deployment_condition(status, &cond_type);
    status.conditions.get_or_insert_with(Vec::new).push(condition);
}

/// Removes every condition of `cond_type`; an emptied list becomes unset, as upstream's nil.
pub fn remove_deployment_condition(status: &mut DeploymentStatus, cond_type: &str) {
    if let Some(conditions) = status.conditions.as_mut() {
        conditions.retain(|c| c.type_.as_deref() != Some(cond_type));
    }
    if status.conditions.as_ref().is_some_and(Vec::is_empty) {
        status.conditions = None;
    }
}

/// `progressDeadlineSeconds` set and not the "never" sentinel `i32::MAX`.
pub fn has_progress_deadline(d: &Deployment) -> bool {
    d.spec.progress_deadline_seconds.is_some_and(|s| s != i32::MAX)
}

/// `revisionHistoryLimit` set and not the "keep all" sentinel `i32::MAX`.
pub fn has_revision_history_limit(d: &Deployment) -> bool {
    d.spec.revision_history_limit.is_some_and(|s| s != i32::MAX)
}

/// All desired replicas updated and available, no old ones left, and the spec observed.
pub fn deployment_complete(d: &Deployment, new_status: &DeploymentStatus) -> bool {
    let replicas = deployment_replicas(d);
    new_status.updated_replicas.unwrap_or(0) == replicas
        && new_status.replicas.unwrap_or(0) == replicas
        && new_status.available_replicas.unwrap_or(0) == replicas
        && new_status.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0)
}

/// Progress between the deployment's recorded status and `new_status`: more updated, ready or
/// available pods, or fewer old ones.
pub fn deployment_progressing(d: &Deployment, new_status: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let n = |v: Option<i32>| v.unwrap_or(0);
    let old_old = n(old.replicas).wrapping_sub(n(old.updated_replicas));
    let new_old = n(new_status.replicas).wrapping_sub(n(new_status.updated_replicas));
    n(new_status.updated_replicas) > n(old.updated_replicas)
        || new_old < old_old
        || n(new_status.ready_replicas) > n(old.ready_replicas)
        || n(new_status.available_replicas) > n(old.available_replicas)
}

/// `DeploymentTimedOut`: the Progressing condition of `new_status` has not moved for longer than
/// the deadline. A completed rollout never times out; one already marked timed out stays so.
pub fn deployment_timed_out(d: &Deployment, new_status: &DeploymentStatus, now: Instant) -> bool {
    if !has_progress_deadline(d) {
        return false;
    }
    let Some(condition) = get_deployment_condition(new_status, DEPLOYMENT_PROGRESSING) else { return false };
    match condition.reason.as_deref() {
        Some(NEW_RS_AVAILABLE_REASON) => return false,
        Some(TIMED_OUT_REASON) => return true,
        _ => {}
    }
    let deadline = i64::from(d.spec.progress_deadline_seconds.unwrap_or(0));
    match condition.last_update_time.as_ref() {
        // Go's zero time is long past any deadline.
        None => true,
        Some(from) => now.since(from) > k8s_openapi::jiff::SignedDuration::from_secs(deadline),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    fn deployment(fields: Value) -> Deployment {
        let mut d = json!({
            "metadata": {"name": "foo", "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"foo": "bar"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}},
                "template": {
                    "metadata": {"labels": {"foo": "bar"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        });
        wasmcm_guest::json::merge_patch(&mut d, fields);
        serde_json::from_value(d).unwrap()
    }

    fn rolling(replicas: i32, surge: Value, unavailable: Value) -> Deployment {
        deployment(json!({"spec": {"replicas": replicas,
            "strategy": {"rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}}}))
    }

    fn rs(name: &str, replicas: i32, created: &str, fields: Value) -> ReplicaSet {
        let mut v = json!({
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"foo": "bar"}}},
        });
        wasmcm_guest::json::merge_patch(&mut v, fields);
        serde_json::from_value(v).unwrap()
    }

    fn template(v: Value) -> PodTemplateSpec {
        serde_json::from_value(v).unwrap()
    }

    fn ios(v: &Value) -> Option<IntOrString> {
        if v.is_null() { None } else { Some(serde_json::from_value(v.clone()).unwrap()) }
    }

    fn time(s: &str) -> Instant {
        Instant::parse_rfc3339(s).unwrap()
    }

    #[test]
    fn fenceposts() {
        type Case = (Value, Value, i32, Result<(i32, i32), ()>);
        let cases: Vec<Case> = vec![
            (json!("25%"), json!("25%"), 10, Ok((3, 2))),
            (json!(0), json!(0), 10, Ok((0, 1))),
            (json!("0%"), json!("0%"), 0, Ok((0, 1))),
            (json!("0%"), json!("0%"), 10, Ok((0, 1))),
            (json!("39%"), json!("39%"), 10, Ok((4, 3))),
            (json!("oops"), json!("39%"), 10, Err(())),
            (json!("55%"), json!("urg"), 10, Err(())),
            (json!("5"), json!(1), 10, Err(())),
            (json!("%"), json!(1), 10, Err(())),
            (json!(" 5%"), json!(1), 10, Err(())),
            (json!("99999999999999999999%"), json!(1), 10, Err(())),
            (Value::Null, json!("39%"), 10, Ok((0, 3))),
            (json!("39%"), Value::Null, 10, Ok((4, 0))),
            (Value::Null, Value::Null, 10, Ok((0, 1))),
            (json!(2), json!(3), 10, Ok((2, 3))),
            (json!(20), json!(20), 10, Ok((20, 20))),
            (json!("150%"), json!("150%"), 10, Ok((15, 15))),
            (json!("1%"), json!("1%"), 2, Ok((1, 0))),
            (json!("+10%"), json!("-10%"), 10, Ok((1, -1))),
            (json!("1%"), json!("99%"), 1, Ok((1, 0))),
        ];
        for (surge, unavailable, desired, want) in cases {
            let got = resolve_fenceposts(ios(&surge).as_ref(), ios(&unavailable).as_ref(), desired);
            assert_eq!(got.map_err(|_| ()), want, "{surge} / {unavailable} of {desired}");
        }
    }

    #[test]
    fn surge_and_unavailable_of_deployments() {
        let cases = vec![
            (rolling(10, json!(1), json!(5)), 1, 5, 5),
            (rolling(10, json!(1), json!(10)), 1, 10, 0),
            (rolling(5, json!(1), json!(10)), 1, 5, 0),
            (rolling(0, json!(1), json!(10)), 1, 0, 0),
            (rolling(10, json!(1), json!("50%")), 1, 5, 5),
            (rolling(10, json!(1), json!("60%")), 1, 6, 4),
            (rolling(10, json!(1), json!("100%")), 1, 10, 0),
            (rolling(5, json!(1), json!("100%")), 1, 5, 0),
            (rolling(10, json!("25%"), json!("25%")), 3, 2, 8),
            (rolling(10, json!("bad"), json!("25%")), 0, 0, 10),
            (
                deployment(json!({"spec": {"replicas": 10, "strategy": {"type": "Recreate", "rollingUpdate": null}}})),
                0,
                0,
                0,
            ),
            (deployment(json!({"spec": {"replicas": 10, "strategy": {"rollingUpdate": null}}})), 0, 1, 9),
            (deployment(json!({"spec": {"replicas": 10, "strategy": null}})), 0, 0, 0),
        ];
        for (i, (d, surge, unavailable, min)) in cases.into_iter().enumerate() {
            assert_eq!((max_surge(&d), max_unavailable(&d), min_available(&d)), (surge, unavailable, min), "case {i}");
        }
    }

    #[test]
    fn safe_encoding_maps_digits_like_upstream() {
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
        // '0' (48) % 27 = 21 -> '4'; '6' (54) % 27 = 0 -> 'b'.
        assert_eq!(safe_encode("0"), "4");
        assert_eq!(safe_encode("6"), "b");
        assert_eq!(safe_encode("9"), "f");
    }

    #[test]
    fn template_hash() {
        let base =
            json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let t = template(base.clone());
        let h = pod_template_hash(&t, None);
        assert!(!h.is_empty() && h.len() <= 10);
        assert!(h.bytes().all(|b| wasmcm_core::names::SAFE_ALPHABET.contains(&b)), "{h}");
        assert_eq!(h, pod_template_hash(&template(base.clone()), None), "stable");
        // Map keys are hashed sorted, so building the JSON in another order changes nothing.
        let reordered = template(
            json!({"spec": {"containers": [{"image": "nginx", "name": "c"}]}, "metadata": {"labels": {"app": "web"}}}),
        );
        assert_eq!(h, pod_template_hash(&reordered, None));

        let mut labelled = base.clone();
        labelled["metadata"]["labels"]["tier"] = json!("front");
        assert_ne!(h, pod_template_hash(&template(labelled), None), "label change");
        let mut image = base.clone();
        image["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert_ne!(h, pod_template_hash(&template(image), None), "image change");

        let c0 = pod_template_hash(&t, Some(0));
        let c1 = pod_template_hash(&t, Some(1));
        assert_ne!(h, c0, "a zero collision count is still written");
        assert_ne!(c0, c1);
        assert_ne!(c1, pod_template_hash(&t, Some(-1)));
        assert_eq!(pod_template_hash(&t, Some(i32::MAX)), pod_template_hash(&t, Some(i32::MAX)));
    }

    #[test]
    fn fnv1a_matches_reference_vectors() {
        for (input, want) in [("", 0x811c_9dc5u32), ("a", 0xe40c_292c), ("foobar", 0xbf9c_f968)] {
            let mut h = Fnv1a32::new();
            h.write(input.as_bytes());
            assert_eq!(h.0, want, "{input:?}");
        }
    }

    #[test]
    fn equal_ignoring_hash() {
        let t = |name: &str, node: &str, annotations: Value, labels: Value| {
            template(json!({"metadata": {"name": name, "annotations": annotations, "labels": labels},
                            "spec": {"nodeName": node, "containers": []}}))
        };
        let h = DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY;
        let cases = vec![
            (
                "same",
                t("foo", "n", json!({}), json!({h: "1", "a": "b"})),
                t("foo", "n", json!({}), json!({h: "1", "a": "b"})),
                true,
            ),
            (
                "hash differs",
                t("foo", "n", json!({}), json!({h: "1", "a": "b"})),
                t("foo", "n", json!({}), json!({h: "2", "a": "b"})),
                true,
            ),
            (
                "one without hash",
                t("foo", "n", json!({}), json!({"a": "b"})),
                t("foo", "n", json!({}), json!({h: "2", "a": "b"})),
                true,
            ),
            (
                "only hash vs other label",
                t("foo", "n", json!({}), json!({"a": "b"})),
                t("foo", "n", json!({}), json!({h: "2"})),
                false,
            ),
            (
                "extra label",
                t("foo", "n", json!({}), json!({h: "1"})),
                t("foo", "n", json!({}), json!({h: "1", "a": "b"})),
                false,
            ),
            (
                "annotations differ",
                t("foo", "n", json!({"x": "1"}), json!({h: "1"})),
                t("foo", "n", json!({"y": "1"}), json!({h: "1"})),
                false,
            ),
            (
                "name differs",
                t("foo-1", "n", json!({}), json!({h: "1"})),
                t("foo-2", "n", json!({}), json!({h: "2"})),
                false,
            ),
            (
                "node differs",
                t("foo", "n1", json!({}), json!({"a": "b"})),
                t("foo", "n2", json!({}), json!({"a": "b"})),
                false,
            ),
            (
                "only hash vs no labels",
                t("foo", "n", json!({}), json!({h: "1"})),
                t("foo", "n", json!({}), Value::Null),
                true,
            ),
            (
                "empty vs absent list",
                t("foo", "n", Value::Null, Value::Null),
                template(json!({"metadata": {"name": "foo"}, "spec": {"nodeName": "n"}})),
                true,
            ),
            ("empty vs absent spec", template(json!({"spec": {"containers": []}})), template(json!({})), true),
            (
                "only hash label vs no metadata",
                template(json!({"metadata": {"labels": {h: "1"}}})),
                template(json!({})),
                true,
            ),
            (
                "securityContext {} vs absent",
                template(json!({"spec": {"containers": [], "securityContext": {}}})),
                template(json!({"spec": {"containers": []}})),
                false,
            ),
        ];
        for (what, a, b, want) in cases {
            assert_eq!(equal_ignore_hash(&a, &b), want, "{what}");
            assert_eq!(equal_ignore_hash(&b, &a), want, "{what} (reversed)");
        }
    }

    #[test]
    fn revisions() {
        let with = |rev: Option<&str>| {
            rs(
                "r",
                1,
                "2026-01-01T00:00:00Z",
                json!({"metadata": {"annotations": rev.map(|r| json!({REVISION_ANNOTATION: r}))}}),
            )
        };
        let cases: Vec<(Vec<Option<&str>>, i64, i64)> = vec![
            (vec![], 0, 0),
            (vec![Some("1")], 1, 0),
            (vec![Some("1"), Some("3"), Some("2")], 3, 2),
            (vec![Some("3"), Some("3")], 3, 3),
            (vec![Some("5"), Some("x"), None, Some("4")], 5, 4),
            (vec![Some("-2"), Some("+7")], 7, 0),
            (vec![Some("9223372036854775808"), Some("2")], 2, 0),
        ];
        for (revs, max, last) in cases {
            let sets: Vec<ReplicaSet> = revs.iter().map(|r| with(*r)).collect();
            let refs: Vec<&ReplicaSet> = sets.iter().collect();
            assert_eq!((max_revision(&refs), last_revision(&refs)), (max, last), "{revs:?}");
        }
        assert_eq!(revision(&with(Some(" 1")).metadata), 0);

        let mut annotations = BTreeMap::new();
        assert!(set_deployment_revision(&mut annotations, "4"));
        assert!(!set_deployment_revision(&mut annotations, "4"));
        assert_eq!(annotations[REVISION_ANNOTATION], "4");
    }

    #[test]
    fn skipped_annotations() {
        for (key, skip) in [
            (LAST_APPLIED_CONFIG_ANNOTATION, true),
            (REVISION_ANNOTATION, true),
            (REVISION_HISTORY_ANNOTATION, true),
            (DESIRED_REPLICAS_ANNOTATION, true),
            (MAX_REPLICAS_ANNOTATION, true),
            (DEPRECATED_ROLLBACK_TO_ANNOTATION, true),
            ("kubernetes.io/change-cause", false),
            ("example.com/team", false),
        ] {
            assert_eq!(skip_copy_annotation(key), skip, "{key}");
        }
        let deployment: BTreeMap<String, String> = [(REVISION_ANNOTATION, "3"), ("kubernetes.io/change-cause", "old")]
            .map(|(k, v)| (k.into(), v.into()))
            .into();
        let target: BTreeMap<String, String> =
            [(REVISION_ANNOTATION, "1"), ("kubernetes.io/change-cause", "v1"), (DESIRED_REPLICAS_ANNOTATION, "2")]
                .map(|(k, v)| (k.into(), v.into()))
                .into();
        let got = deployment_annotations_for_rollback(&deployment, &target);
        let want: BTreeMap<String, String> = [(REVISION_ANNOTATION, "3"), ("kubernetes.io/change-cause", "v1")]
            .map(|(k, v)| (k.into(), v.into()))
            .into();
        assert_eq!(got, want);
    }

    fn annotated(rs: &ReplicaSet, annotations: Option<BTreeMap<String, String>>) -> ReplicaSet {
        let mut rs = rs.clone();
        rs.metadata.annotations = annotations;
        rs
    }

    #[test]
    fn new_replica_set_annotations_walk_revisions_with_a_bounded_history() {
        // Upstream TestAnnotationUtils: revisions 11..=20 with a 5-character history limit.
        let d = deployment(json!({"metadata": {"annotations": {REVISION_ANNOTATION: "1"}}}));
        let mut current = rs("r", 0, "2026-01-01T00:00:00Z", json!({}));
        for i in 10..20 {
            let next = (i + 1).to_string();
            let update = set_new_replica_set_annotations(&d, &current, &next, true, 5);
            assert!(update.changed);
            current = annotated(&current, Some(update.annotations));
            let a = current.metadata.annotations.clone().unwrap();
            assert_eq!(a[REVISION_ANNOTATION], next);
            assert!(!a.contains_key(DESIRED_REPLICAS_ANNOTATION), "exists: no replica annotations");
            if i >= 12 {
                assert_eq!(a[REVISION_HISTORY_ANNOTATION], format!("{},{}", i - 1, i));
            }
        }
    }

    #[test]
    fn new_replica_set_annotation_cases() {
        let d = rolling(10, json!("25%"), json!("25%"));
        let d = {
            let mut d = d;
            d.metadata.annotations = Some(
                [
                    ("kubernetes.io/change-cause", "rollout"),
                    (REVISION_ANNOTATION, "9"),
                    (LAST_APPLIED_CONFIG_ANNOTATION, "{}"),
                ]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into(),
            );
            d
        };
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let cause = ("kubernetes.io/change-cause", "rollout");
        type Case<'a> = (&'a str, Option<Vec<(&'a str, &'a str)>>, &'a str, bool, Option<Vec<(&'a str, &'a str)>>);
        let cases: Vec<Case> = vec![
            (
                "new RS: revision, cause, replica annotations",
                None,
                "4",
                false,
                Some(vec![
                    cause,
                    (REVISION_ANNOTATION, "4"),
                    (DESIRED_REPLICAS_ANNOTATION, "10"),
                    (MAX_REPLICAS_ANNOTATION, "13"),
                ]),
            ),
            ("up to date", Some(vec![cause, (REVISION_ANNOTATION, "4")]), "4", true, None),
            ("revision never goes down", Some(vec![cause, (REVISION_ANNOTATION, "7")]), "4", true, None),
            (
                "integer, not string, comparison",
                Some(vec![cause, (REVISION_ANNOTATION, "9")]),
                "10",
                true,
                Some(vec![cause, (REVISION_ANNOTATION, "10"), (REVISION_HISTORY_ANNOTATION, "9")]),
            ),
            (
                "rollback appends to history",
                Some(vec![cause, (REVISION_ANNOTATION, "2"), (REVISION_HISTORY_ANNOTATION, "1")]),
                "5",
                true,
                Some(vec![cause, (REVISION_ANNOTATION, "5"), (REVISION_HISTORY_ANNOTATION, "1,2")]),
            ),
            (
                "cause copied even without a revision change",
                Some(vec![(REVISION_ANNOTATION, "4")]),
                "4",
                true,
                Some(vec![cause, (REVISION_ANNOTATION, "4")]),
            ),
            ("unparsable old revision: no update", Some(vec![(REVISION_ANNOTATION, "x")]), "4", true, None),
            ("unparsable new revision: no update", None, "four", false, None),
            (
                "empty old revision counts as 0 and joins history as empty",
                Some(vec![cause, (REVISION_ANNOTATION, "")]),
                "1",
                true,
                Some(vec![cause, (REVISION_ANNOTATION, "1"), (REVISION_HISTORY_ANNOTATION, "")]),
            ),
        ];
        let base = rs("r", 0, "2026-01-01T00:00:00Z", json!({}));
        for (what, before, new_revision, exists, want) in cases {
            let r = annotated(&base, before.map(|b| map(&b)));
            let got = set_new_replica_set_annotations(&d, &r, new_revision, exists, MAX_REV_HISTORY_LENGTH_IN_CHARS);
            assert_eq!(got.changed.then_some(got.annotations), want.map(|w| map(&w)), "{what}");
        }
    }

    #[test]
    fn unparsable_revision_keeps_the_copy_but_reports_no_change() {
        let d = deployment(json!({"metadata": {"annotations": {"kubernetes.io/change-cause": "c"}}}));
        let r = rs("r", 1, "2026-01-01T00:00:00Z", json!({"metadata": {"annotations": {REVISION_ANNOTATION: "x"}}}));
        let update = set_new_replica_set_annotations(&d, &r, "2", false, MAX_REV_HISTORY_LENGTH_IN_CHARS);
        assert!(!update.changed);
        assert_eq!(update.annotations.get("kubernetes.io/change-cause").map(String::as_str), Some("c"));
        assert_eq!(update.annotations[REVISION_ANNOTATION], "x");
        assert!(!update.annotations.contains_key(DESIRED_REPLICAS_ANNOTATION), "stops before replica annotations");
    }

    #[test]
    fn history_limit_drops_oldest_or_skips() {
        let cases = [
            ("1,2,3", "4", 100, Some("1,2,3,4")),
            ("1,2,3", "4", 5, Some("2,3,4")),
            ("1,2,3", "4", 4, Some("3,4")),
            ("1,2,3", "4", 7, Some("1,2,3,4")),
            ("1,2,3", "4", 6, Some("2,3,4")),
            ("1,2,3", "44444", 3, None),
            ("", "4", 0, Some("4")),
        ];
        for (history, old, limit, want) in cases {
            let mut a = BTreeMap::from([(REVISION_HISTORY_ANNOTATION.to_string(), history.to_string())]);
            push_revision_history(&mut a, old.into(), limit);
            let got = a.get(REVISION_HISTORY_ANNOTATION).map(String::as_str);
            assert_eq!(got, want.or(Some(history)), "{history} + {old} within {limit}");
        }
    }

    #[test]
    fn replicas_annotations() {
        let mut a = BTreeMap::new();
        assert!(set_replicas_annotations(&mut a, 10, 11));
        assert_eq!((a[DESIRED_REPLICAS_ANNOTATION].as_str(), a[MAX_REPLICAS_ANNOTATION].as_str()), ("10", "11"));
        assert!(!set_replicas_annotations(&mut a, 10, 11));
        assert!(set_replicas_annotations(&mut a, 10, 12));

        let r = |pairs: Option<[(&str, &str); 2]>| {
            let mut r = rs("r", 1, "2026-01-01T00:00:00Z", json!({}));
            r.metadata.annotations = pairs.map(|p| p.map(|(k, v)| (k.to_string(), v.to_string())).into());
            r
        };
        for (pairs, want) in [
            (None, true),
            (Some([(DESIRED_REPLICAS_ANNOTATION, "8"), (MAX_REPLICAS_ANNOTATION, "20")]), true),
            (Some([(DESIRED_REPLICAS_ANNOTATION, "10"), (MAX_REPLICAS_ANNOTATION, "16")]), true),
            (Some([(DESIRED_REPLICAS_ANNOTATION, "10"), (MAX_REPLICAS_ANNOTATION, "20")]), false),
        ] {
            assert_eq!(replicas_annotations_need_update(&r(pairs), 10, 20), want, "{pairs:?}");
        }
        let odd = r(Some([(DESIRED_REPLICAS_ANNOTATION, "4294967297"), (MAX_REPLICAS_ANNOTATION, "many")]));
        assert_eq!(desired_replicas_annotation(&odd), None, "out of range, not wrapped");
        assert_eq!(max_replicas_annotation(&odd), None);
    }

    /// Upstream's TestGetNonNegativeInt32FromAnnotation.
    #[test]
    fn replica_annotations_are_non_negative_int32s() {
        let r = |value: &str| {
            rs("r", 1, "2026-01-01T00:00:00Z", json!({"metadata": {"annotations": {MAX_REPLICAS_ANNOTATION: value}}}))
        };
        for (value, want) in [
            ("0", Some(0)),
            ("13", Some(13)),
            ("2147483647", Some(i32::MAX)),
            ("2147483648", None),
            ("4294967296", None),
            ("-1", None),
            ("+5", None),
            (" 5", None),
            ("", None),
            ("invalid", None),
        ] {
            assert_eq!(max_replicas_annotation(&r(value)), want, "{value:?}");
        }
        assert_eq!(max_replicas_annotation(&rs("r", 1, "2026-01-01T00:00:00Z", json!({}))), None);
    }

    /// Upstream's TestGetReplicaSetFraction (maxUnavailable 1 throughout).
    #[test]
    fn replica_set_fraction_as_upstream() {
        /// (what, deployment replicas, status.replicas, maxSurge, rs replicas, max-replicas, fraction)
        type Case<'a> = (&'a str, i32, i32, i32, i32, Option<&'a str>, i32);
        let cases: &[Case] = &[
            ("empty deployment always scales to 0", 0, 0, 0, 10, None, -10),
            ("annotation missing and no status: no scaling", 10, 0, 0, 5, None, 0),
            ("annotation 0 and no status: no scaling", 10, 0, 0, 5, Some("0"), 0),
            ("annotation missing: scale up by 1/5 from status", 120, 100, 0, 50, None, 10),
            ("annotation 0: scale up by 1/5 from status", 120, 100, 0, 50, Some("0"), 10),
            ("annotation unreadable: scale up by 1/5 from status", 120, 100, 0, 50, Some("-100"), 10),
            ("scale up by 1/5", 120, 0, 0, 50, Some("100"), 10),
            ("scale up with maxSurge", 120, 0, 10, 50, Some("110"), 9),
            ("scale down by 1/6", 10, 0, 0, 6, Some("12"), -1),
            ("scale down with maxSurge", 100, 0, 10, 50, Some("130"), -8),
        ];
        for &(what, replicas, status, surge, rs_replicas, max, want) in cases {
            let mut d = rolling(replicas, json!(surge), json!(1));
            d.status = Some(DeploymentStatus { replicas: Some(status), ..Default::default() });
            let annotations = max.map_or(json!({}), |m| json!({MAX_REPLICAS_ANNOTATION: m}));
            let r = rs("r", rs_replicas, "2026-01-01T00:00:00Z", json!({"metadata": {"annotations": annotations}}));
            assert_eq!(get_replica_set_fraction(&r, &d), want, "{what}");
        }
        // No int32 wrap: 50,000 × 60,000 overflows int32 in Go.
        let d = rolling(60_000, json!(0), json!(1));
        let big = rs(
            "b",
            50_000,
            "2026-01-01T00:00:00Z",
            json!({"metadata": {"annotations": {MAX_REPLICAS_ANNOTATION: "50000"}}}),
        );
        assert_eq!(get_replica_set_fraction(&big, &d), 10_000);
    }

    #[test]
    fn replica_counts() {
        let a = rs(
            "a",
            1,
            "2026-01-01T00:00:00Z",
            json!({"status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 1}}),
        );
        let b = rs("b", 2, "2026-01-01T00:00:00Z", json!({"status": {"replicas": 3, "readyReplicas": 1}}));
        let c = rs("c", 0, "2026-01-01T00:00:00Z", json!({}));
        let cases: Vec<(Vec<&ReplicaSet>, [i32; 4])> = vec![
            (vec![], [0, 0, 0, 0]),
            (vec![&a], [1, 2, 2, 1]),
            (vec![&a, &b], [3, 5, 3, 1]),
            (vec![&a, &b, &c], [3, 5, 3, 1]),
        ];
        for (sets, want) in cases {
            let got = [
                get_replica_count_for_replica_sets(&sets),
                get_actual_replica_count_for_replica_sets(&sets),
                get_ready_replica_count_for_replica_sets(&sets),
                get_available_replica_count_for_replica_sets(&sets),
            ];
            assert_eq!(got, want);
        }
        let names: Vec<_> = filter_active_replica_sets(&[&a, &b, &c]).iter().map(|r| r.metadata.name.clone()).collect();
        assert_eq!(names, [Some("a".into()), Some("b".into())]);
        let huge = rs("h", i32::MAX, "2026-01-01T00:00:00Z", json!({}));
        assert_eq!(get_replica_count_for_replica_sets(&[&huge, &a]), i32::MIN, "wraps, never panics");
    }

    #[test]
    fn new_rs_replicas() {
        // Upstream TestNewRSNewReplicas: all RSs = one of 5 replicas; maxUnavailable 1.
        let rs5 = rs("rs5", 5, "2026-01-01T00:00:00Z", json!({}));
        let cases = [
            ("cannot scale up", ROLLING_UPDATE, 1, 5, json!(1), Ok(5)),
            ("scale up to deployment replicas", ROLLING_UPDATE, 6, 2, json!(10), Ok(6)),
            ("scale up by the surge room", ROLLING_UPDATE, 10, 2, json!(2), Ok(9)),
            ("percent surge rounds up", ROLLING_UPDATE, 10, 2, json!("1%"), Ok(8)),
            ("recreate", RECREATE, 3, 1, json!(1), Ok(3)),
            ("invalid surge", ROLLING_UPDATE, 3, 1, json!("x%"), Err(())),
            ("unset surge", ROLLING_UPDATE, 3, 1, Value::Null, Err(())),
            ("unknown strategy", "Canary", 3, 1, json!(1), Err(())),
        ];
        for (what, strategy, replicas, new_replicas, surge, want) in cases {
            let d = deployment(json!({"spec": {"replicas": replicas,
                "strategy": {"type": strategy, "rollingUpdate": {"maxSurge": surge, "maxUnavailable": 1}}}}));
            let new_rs = rs("new", new_replicas, "2026-01-01T00:00:00Z", json!({}));
            assert_eq!(new_rs_new_replicas(&d, &[&rs5], &new_rs, &BTreeMap::new()).map_err(|_| ()), want, "{what}");
        }
    }

    /// An old ReplicaSet scaled to 0 right after it was scaled up still has the pod it created,
    /// which its status has not counted yet: the new one does not surge into that room.
    #[test]
    fn new_replicas_count_the_pods_an_old_replica_set_still_runs() {
        let d = deployment(json!({"spec": {"replicas": 3,
            "strategy": {"type": ROLLING_UPDATE, "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}}));
        let stable = rs("stable", 3, "2026-01-01T00:00:00Z", json!({"status": {"replicas": 3}}));
        let mut quick = rs("quick", 0, "2026-01-01T00:00:01Z", json!({"status": {"replicas": 0}}));
        quick.metadata.uid = Some("quick-uid".into());
        let new_rs = rs("new", 0, "2026-01-01T00:00:02Z", json!({}));
        let all = [&stable, &quick, &new_rs];
        assert_eq!(new_rs_new_replicas(&d, &all, &new_rs, &BTreeMap::new()), Ok(1), "room for one, by spec and status");
        let active = BTreeMap::from([("quick-uid".to_string(), 1)]);
        assert_eq!(new_rs_new_replicas(&d, &all, &new_rs, &active), Ok(0), "the quick one's pod takes it");
        // Scaled down but not yet observed by its controller: it may still be creating a pod no
        // cache shows.
        quick.metadata.generation = Some(2);
        quick.status.as_mut().unwrap().observed_generation = Some(1);
        let all = [&stable, &quick, &new_rs];
        assert_eq!(new_rs_new_replicas(&d, &all, &new_rs, &BTreeMap::new()), Ok(0), "until it has observed it");
    }

    #[test]
    fn saturation() {
        let d = rolling(1, json!(1), json!(0));
        let sat = |replicas: i32, desired: &str, available: i32| {
            rs(
                "r",
                replicas,
                "2026-01-01T00:00:00Z",
                json!({
                "metadata": {"annotations": {DESIRED_REPLICAS_ANNOTATION: desired}},
                "status": {"replicas": replicas, "availableReplicas": available}}),
            )
        };
        assert!(is_saturated(&d, Some(&sat(1, "1", 1))));
        assert!(!is_saturated(&d, None));
        assert!(!is_saturated(&d, Some(&sat(1, "2", 1))), "sized for another deployment size");
        assert!(!is_saturated(&d, Some(&sat(1, "1", 0))), "not all available");
        assert!(!is_saturated(&d, Some(&sat(2, "1", 2))));
        assert!(!is_saturated(&d, Some(&sat(1, "one", 1))));
    }

    #[test]
    fn proportions() {
        // Deployment 10 -> 20 with surge 2: an RS of 6 sized for max 12 grows to round(6*22/12) = 11.
        let d = rolling(20, json!(2), json!(0));
        let six =
            rs("a", 6, "2026-01-01T00:00:00Z", json!({"metadata": {"annotations": {MAX_REPLICAS_ANNOTATION: "12"}}}));
        let cases = [
            ("fraction bounded by what is left", Some(&six), 10, 0, 5),
            ("allowed smaller than fraction", Some(&six), 10, 7, 3),
            ("nothing to add", Some(&six), 0, 0, 0),
            ("all added", Some(&six), 10, 10, 0),
            ("no rs", None, 10, 0, 0),
        ];
        for (what, r, to_add, added, want) in cases {
            assert_eq!(get_proportion(r, &d, to_add, added), want, "{what}");
        }
        assert_eq!(get_replica_set_fraction(&six, &d), 5);
        // Scaling down to zero takes the whole RS.
        assert_eq!(get_replica_set_fraction(&six, &rolling(0, json!(2), json!(0))), -6);
        // No annotation: falls back to the deployment's status.replicas (6 * 22 / 11 = 12).
        let bare = rs("b", 6, "2026-01-01T00:00:00Z", json!({}));
        let mut with_status = d.clone();
        with_status.status = Some(DeploymentStatus { replicas: Some(11), ..Default::default() });
        assert_eq!(get_replica_set_fraction(&bare, &with_status), 6);
        // Scaling down: max of fraction and allowed.
        let down = rolling(5, json!(0), json!(1));
        let ten =
            rs("t", 10, "2026-01-01T00:00:00Z", json!({"metadata": {"annotations": {MAX_REPLICAS_ANNOTATION: "10"}}}));
        assert_eq!(get_proportion(Some(&ten), &down, -5, 0), -5);
        assert_eq!(get_proportion(Some(&ten), &down, -3, 0), -3);
        // A zero annotation with no status to fall back on scales nothing.
        let zero =
            rs("z", 3, "2026-01-01T00:00:00Z", json!({"metadata": {"annotations": {MAX_REPLICAS_ANNOTATION: "0"}}}));
        assert_eq!(get_replica_set_fraction(&zero, &d), 0);
        assert_eq!(get_proportion(Some(&zero), &down, -5, 0), 0);
        // A tiny annotation on a scale-down: upstream grows the ReplicaSet by 27; never here.
        let tiny =
            rs("y", 3, "2026-01-01T00:00:00Z", json!({"metadata": {"annotations": {MAX_REPLICAS_ANNOTATION: "1"}}}));
        assert_eq!(get_replica_set_fraction(&tiny, &rolling(10, json!(0), json!(1))), 27);
        assert_eq!(get_proportion(Some(&tiny), &down, -5, 0), 0);
        // Extremes do not panic.
        let big = rs(
            "g",
            i32::MAX,
            "2026-01-01T00:00:00Z",
            json!({"metadata": {"annotations": {MAX_REPLICAS_ANNOTATION: "1"}}}),
        );
        let _ = get_proportion(Some(&big), &d, i32::MIN, i32::MAX);
    }

    /// The proportional part of upstream `DeploymentController.scale`, built on these helpers,
    /// returning each ReplicaSet's new size by name.
    fn scale(d: &Deployment, new_rs: Option<&ReplicaSet>, old: &[&ReplicaSet]) -> BTreeMap<String, i32> {
        let name = |r: &ReplicaSet| r.metadata.name.clone().unwrap_or_default();
        let mut sizes: BTreeMap<String, i32> = new_rs.iter().chain(old).map(|r| (name(r), rs_replicas(r))).collect();
        if let Some(only) = find_active_or_latest(new_rs, old) {
            sizes.insert(name(only), deployment_replicas(d));
            return sizes;
        }
        if is_saturated(d, new_rs) {
            for r in filter_active_replica_sets(old) {
                sizes.insert(name(r), 0);
            }
            return sizes;
        }
        if !is_rolling_update(d) {
            return sizes;
        }
        let all: Vec<&ReplicaSet> = old.iter().copied().chain(new_rs).collect();
        let mut all = filter_active_replica_sets(&all);
        let allowed = if deployment_replicas(d) > 0 { deployment_replicas(d) + max_surge(d) } else { 0 };
        let to_add = allowed - get_replica_count_for_replica_sets(&all);
        match to_add.cmp(&0) {
            Ordering::Greater => all.sort_by(|a, b| replica_sets_by_size_newer(a, b)),
            Ordering::Less => all.sort_by(|a, b| replica_sets_by_size_older(a, b)),
            Ordering::Equal => {}
        }
        let mut added = 0;
        for r in &all {
            let p = get_proportion(Some(r), d, to_add, added);
            sizes.insert(name(r), rs_replicas(r) + p);
            added += p;
        }
        if let Some(first) = all.first()
            && to_add != 0
        {
            let size = sizes.get(&name(first)).copied().unwrap_or(0) + to_add - added;
            sizes.insert(name(first), size.max(0));
        }
        sizes
    }

    #[test]
    fn proportional_scaling_matches_upstream_test_scale() {
        const NEW: &str = "2016-05-20T02:00:00Z";
        const OLD: &str = "2016-05-20T01:00:00Z";
        const OLDER: &str = "2016-05-20T00:00:00Z";
        // (name, new replicas, old replicas, old surge, new surge, new RS, old RSs, expected sizes)
        type Sets<'a> = Vec<(&'a str, i32, &'a str)>;
        type Case<'a> = (&'a str, i32, i32, i32, i32, Option<(&'a str, i32)>, Sets<'a>, Vec<i32>);
        let cases: Vec<Case> = vec![
            ("10 -> 12", 12, 10, 0, 0, Some(("foo-v1", 10)), vec![], vec![12]),
            ("10 -> 5", 5, 10, 0, 0, Some(("foo-v1", 10)), vec![], vec![5]),
            ("5 -> 10", 10, 5, 0, 0, Some(("foo-v2", 2)), vec![("foo-v1", 3, OLD)], vec![4, 6]),
            ("5 -> 3", 3, 5, 0, 0, Some(("foo-v2", 2)), vec![("foo-v1", 3, OLD)], vec![1, 2]),
            ("9 -> 4", 4, 9, 0, 0, Some(("foo-v2", 8)), vec![("foo-v1", 1, OLD)], vec![4, 0]),
            (
                "7 -> 10",
                10,
                7,
                0,
                0,
                Some(("foo-v3", 2)),
                vec![("foo-v2", 3, OLD), ("foo-v1", 2, OLDER)],
                vec![3, 4, 3],
            ),
            (
                "13 -> 8",
                8,
                13,
                0,
                0,
                Some(("foo-v3", 2)),
                vec![("foo-v2", 8, OLD), ("foo-v1", 3, OLDER)],
                vec![1, 5, 2],
            ),
            (
                "leftover 3 -> 4",
                4,
                3,
                0,
                0,
                Some(("foo-v3", 1)),
                vec![("foo-v2", 1, OLD), ("foo-v1", 1, OLDER)],
                vec![2, 1, 1],
            ),
            (
                "leftover 3 -> 2",
                2,
                3,
                0,
                0,
                Some(("foo-v3", 1)),
                vec![("foo-v2", 1, OLD), ("foo-v1", 1, OLDER)],
                vec![1, 1, 0],
            ),
            ("no new rs 4 -> 5", 5, 4, 0, 0, None, vec![("foo-v2", 2, OLD), ("foo-v1", 2, OLDER)], vec![3, 2]),
            ("6 -> 0", 0, 6, 0, 0, Some(("foo-v3", 3)), vec![("foo-v2", 2, OLD), ("foo-v1", 1, OLDER)], vec![0, 0, 0]),
            ("0 -> 6", 6, 6, 0, 0, Some(("foo-v3", 0)), vec![("foo-v2", 0, OLD), ("foo-v1", 0, OLDER)], vec![6, 0, 0]),
            ("with surge", 20, 10, 2, 2, Some(("foo-v2", 6)), vec![("foo-v1", 6, OLD)], vec![11, 11]),
            ("surge and size", 50, 10, 3, 6, Some(("foo-v2", 5)), vec![("foo-v1", 8, OLD)], vec![22, 34]),
            ("size and template", 14, 10, 0, 0, None, vec![("foo-v2", 7, NEW), ("foo-v1", 3, OLD)], vec![10, 4]),
        ];
        for (what, replicas, old_replicas, old_surge, new_surge, new_rs, old_rss, want) in cases {
            let d = rolling(replicas, json!(new_surge), json!(0));
            let old_d = rolling(old_replicas, json!(old_surge), json!(0));
            let sized = |name: &str, n: i32, created: &str| {
                let mut r = rs(name, n, created, json!({}));
                let mut a = BTreeMap::new();
                set_replicas_annotations(&mut a, old_replicas, old_replicas + max_surge(&old_d));
                r.metadata.annotations = Some(a);
                r
            };
            let new_rs = new_rs.map(|(n, r)| sized(n, r, NEW));
            let olds: Vec<ReplicaSet> = old_rss.iter().map(|(n, r, c)| sized(n, *r, c)).collect();
            let old_refs: Vec<&ReplicaSet> = olds.iter().collect();
            let sizes = scale(&d, new_rs.as_ref(), &old_refs);
            let got: Vec<i32> =
                new_rs.iter().chain(&olds).map(|r| sizes[r.metadata.name.as_deref().unwrap_or("")]).collect();
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn saturated_but_broken_new_rs_leaves_old_pods() {
        let d = rolling(2, json!(1), json!(1));
        let mut new_rs = rs("foo-v2", 2, "2016-05-20T02:00:00Z", json!({}));
        let mut old = rs("foo-v1", 1, "2016-05-20T01:00:00Z", json!({}));
        for r in [&mut new_rs, &mut old] {
            let mut a = BTreeMap::new();
            set_replicas_annotations(&mut a, 2, 3);
            r.metadata.annotations = Some(a);
        }
        let sizes = scale(&d, Some(&new_rs), &[&old]);
        assert_eq!((sizes["foo-v2"], sizes["foo-v1"]), (2, 1));
    }

    #[test]
    fn active_or_latest() {
        let new = rs("new", 0, "2026-01-03T00:00:00Z", json!({}));
        let a = rs("a", 0, "2026-01-01T00:00:00Z", json!({}));
        let b = rs("b", 0, "2026-01-02T00:00:00Z", json!({}));
        let active = rs("act", 2, "2026-01-01T00:00:00Z", json!({}));
        let name = |r: Option<&ReplicaSet>| r.and_then(|r| r.metadata.name.clone());
        assert_eq!(name(find_active_or_latest(None, &[])), None);
        assert_eq!(name(find_active_or_latest(Some(&new), &[&a])), Some("new".into()));
        assert_eq!(name(find_active_or_latest(None, &[&a, &b])), Some("b".into()), "newest old one");
        assert_eq!(name(find_active_or_latest(Some(&new), &[&active, &a])), Some("act".into()));
        let new_active = rs("new", 1, "2026-01-03T00:00:00Z", json!({}));
        assert_eq!(name(find_active_or_latest(Some(&new_active), &[&active])), None);
    }

    #[test]
    fn new_and_old_replica_sets() {
        // Upstream TestFindNewReplicaSet / TestFindOldReplicaSets.
        let d = deployment(json!({}));
        let tpl = serde_json::to_value(&d.spec.template).unwrap();
        let mut old_tpl = tpl.clone();
        old_tpl["spec"]["containers"][0]["name"] = json!("nginx-old-1");
        let with = |name: &str, replicas: i32, created: &str, template: &Value, hash: &str| {
            let mut t = template.clone();
            t["metadata"]["labels"][DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY] = json!(hash);
            rs(name, replicas, created, json!({"metadata": {"uid": format!("uid-{name}")}, "spec": {"template": t}}))
        };
        let new_rs = with("new", 1, "2026-01-01T00:01:00Z", &tpl, "hash");
        let new_dup = with("dup", 0, "2026-01-01T00:00:00Z", &tpl, "different-hash");
        let old_rs = with("old", 0, "2025-12-31T23:59:00Z", &old_tpl, "x");
        let names =
            |v: &[&ReplicaSet]| v.iter().map(|r| r.metadata.name.clone().unwrap_or_default()).collect::<Vec<_>>();
        let new_name = |list: &[&ReplicaSet]| find_new_replica_set(&d, list).and_then(|r| r.metadata.name.clone());

        assert_eq!(new_name(&[&new_rs, &old_rs]), Some("new".into()));
        assert_eq!(new_name(&[&new_rs, &old_rs, &new_dup]), Some("dup".into()), "oldest match wins");
        assert_eq!(new_name(&[&old_rs]), None);

        let cases: Vec<(Vec<&ReplicaSet>, Vec<&str>, Vec<&str>)> = vec![
            (vec![&new_rs, &old_rs], vec![], vec!["old"]),
            (vec![&old_rs], vec![], vec!["old"]),
            (vec![&old_rs, &new_rs, &new_dup], vec!["new"], vec!["old", "new"]),
            (vec![&new_rs], vec![], vec![]),
        ];
        for (list, required, all) in cases {
            let (got_required, got_all) = find_old_replica_sets(&d, &list);
            let listed = names(&list);
            assert_eq!(names(&got_required), required, "required of {listed:?}");
            assert_eq!(names(&got_all), all, "all of {listed:?}");
        }
    }

    #[test]
    fn replica_set_condition_lifts_to_deployment() {
        let at = Time(time("2026-01-01T00:00:00Z").timestamp());
        let c = ReplicaSetCondition {
            type_: Some(DEPLOYMENT_REPLICA_FAILURE.into()),
            status: Some("True".into()),
            last_transition_time: Some(at.clone()),
            reason: Some("FailedCreate".into()),
            message: Some("quota".into()),
        };
        let d = replica_set_to_deployment_condition(&c);
        assert_eq!(d.type_.as_deref(), Some(DEPLOYMENT_REPLICA_FAILURE));
        assert_eq!((d.last_update_time, d.last_transition_time), (Some(at.clone()), Some(at)));
        assert_eq!((d.reason.as_deref(), d.message.as_deref()), (Some("FailedCreate"), Some("quota")));
    }

    #[test]
    fn round_half_away_from_zero_like_upstream() {
        // 3 replicas of a deployment sized 5 -> 7 (no surge): 3 * 7 / 5 = 4.2 -> 4; 5 * 7 / 2 = 17.5 -> 18.
        let d = rolling(7, json!(0), json!(1));
        let sized = |n: i32, max: &str| {
            rs("r", n, "2026-01-01T00:00:00Z", json!({"metadata": {"annotations": {MAX_REPLICAS_ANNOTATION: max}}}))
        };
        assert_eq!(get_replica_set_fraction(&sized(3, "5"), &d), 1);
        assert_eq!(get_replica_set_fraction(&sized(5, "2"), &d), 13);
        // 1 * 7 / 14 = 0.5 -> 1.
        assert_eq!(get_replica_set_fraction(&sized(1, "14"), &d), 0);
    }

    #[test]
    fn orderings() {
        let sets = [
            rs("b", 2, "2026-01-02T00:00:00Z", json!({})),
            rs("a", 2, "2026-01-02T00:00:00Z", json!({})),
            rs("old", 2, "2026-01-01T00:00:00Z", json!({})),
            rs("big", 5, "2026-01-03T00:00:00Z", json!({})),
            rs("zero-time", 1, "2026-01-01T00:00:00Z", json!({"metadata": {"creationTimestamp": null}})),
        ];
        let order = |cmp: fn(&ReplicaSet, &ReplicaSet) -> Ordering| {
            let mut v: Vec<&ReplicaSet> = sets.iter().collect();
            v.sort_by(|a, b| cmp(a, b));
            v.iter().map(|r| r.metadata.name.clone().unwrap_or_default()).collect::<Vec<_>>()
        };
        assert_eq!(order(replica_sets_by_creation_timestamp), ["zero-time", "old", "a", "b", "big"]);
        assert_eq!(order(replica_sets_by_size_older), ["big", "old", "a", "b", "zero-time"]);
        assert_eq!(order(replica_sets_by_size_newer), ["big", "b", "a", "old", "zero-time"]);
    }

    fn condition(cond_type: &str, status: &str, reason: &str, at: &str) -> DeploymentCondition {
        new_deployment_condition(cond_type, status, reason, "", time(at))
    }

    #[test]
    fn conditions() {
        let progressing = || condition(DEPLOYMENT_PROGRESSING, "False", "ForSomeReason", "2026-01-01T00:00:00Z");
        let progressing2 = || condition(DEPLOYMENT_PROGRESSING, "True", "BecauseItIs", "2026-01-01T00:00:00Z");
        let available = || condition(DEPLOYMENT_AVAILABLE, "True", "AwesomeController", "2026-01-01T00:00:00Z");
        let status = |c: Vec<DeploymentCondition>| DeploymentStatus { conditions: Some(c), ..Default::default() };

        let s = status(vec![progressing(), available()]);
        assert!(get_deployment_condition(&s, DEPLOYMENT_AVAILABLE).is_some());
        assert!(get_deployment_condition(&s, DEPLOYMENT_REPLICA_FAILURE).is_none());

        let set_cases = vec![
            ("first time", DeploymentStatus::default(), available(), status(vec![available()])),
            ("simple set", status(vec![progressing()]), available(), status(vec![progressing(), available()])),
            ("overwrite", status(vec![progressing()]), progressing2(), status(vec![progressing2()])),
            (
                "moves to the end",
                status(vec![progressing(), available()]),
                progressing2(),
                status(vec![available(), progressing2()]),
            ),
        ];
        for (what, mut s, c, want) in set_cases {
            set_deployment_condition(&mut s, c);
            assert_eq!(s, want, "{what}");
        }

        let remove_cases = vec![
            ("empty", DeploymentStatus::default(), DEPLOYMENT_PROGRESSING, DeploymentStatus::default()),
            ("simple", status(vec![progressing()]), DEPLOYMENT_PROGRESSING, DeploymentStatus::default()),
            (
                "nothing",
                status(vec![progressing(), available()]),
                DEPLOYMENT_REPLICA_FAILURE,
                status(vec![progressing(), available()]),
            ),
        ];
        for (what, mut s, t, want) in remove_cases {
            remove_deployment_condition(&mut s, t);
            assert_eq!(s, want, "{what}");
        }
    }

    #[test]
    fn condition_transitions_keep_or_move_times() {
        let t0 = "2026-01-01T00:00:00Z";
        let t1 = "2026-01-01T00:05:00Z";
        let mut s = DeploymentStatus::default();
        set_deployment_condition(&mut s, condition(DEPLOYMENT_PROGRESSING, "True", NEW_REPLICA_SET_REASON, t0));

        // Same status and reason: nothing changes, not even the update time or message.
        let mut later = condition(DEPLOYMENT_PROGRESSING, "True", NEW_REPLICA_SET_REASON, t1);
        later.message = Some("new message".into());
        set_deployment_condition(&mut s, later);
        let c = get_deployment_condition(&s, DEPLOYMENT_PROGRESSING).unwrap();
        assert_eq!((c.last_update_time.clone(), c.message.as_deref()), (Some(time(t0).time()), Some("")));

        // Same status, new reason: update time moves, transition time stays.
        set_deployment_condition(&mut s, condition(DEPLOYMENT_PROGRESSING, "True", REPLICA_SET_UPDATED_REASON, t1));
        let c = get_deployment_condition(&s, DEPLOYMENT_PROGRESSING).unwrap();
        assert_eq!(c.reason.as_deref(), Some(REPLICA_SET_UPDATED_REASON));
        assert_eq!(
            (c.last_update_time.clone(), c.last_transition_time.clone()),
            (Some(time(t1).time()), Some(time(t0).time()))
        );

        // Status flips: both times move.
        set_deployment_condition(&mut s, condition(DEPLOYMENT_PROGRESSING, "False", TIMED_OUT_REASON, t1));
        let c = get_deployment_condition(&s, DEPLOYMENT_PROGRESSING).unwrap();
        assert_eq!(c.last_transition_time, Some(time(t1).time()));
        assert_eq!(s.conditions.as_ref().map(Vec::len), Some(1));

        // Sub-second precision is dropped, as the API would.
        let c = new_deployment_condition(
            DEPLOYMENT_AVAILABLE,
            "True",
            MINIMUM_REPLICAS_AVAILABLE,
            "m",
            time("2026-01-01T00:00:00.7Z"),
        );
        assert_eq!(c.last_update_time, Some(time(t0).time()));
    }

    #[test]
    fn reason_constants() {
        assert_eq!(
            [
                NEW_REPLICA_SET_REASON,
                FOUND_NEW_RS_REASON,
                REPLICA_SET_UPDATED_REASON,
                NEW_RS_AVAILABLE_REASON,
                TIMED_OUT_REASON,
                PAUSED_DEPLOY_REASON,
                RESUMED_DEPLOY_REASON,
                MINIMUM_REPLICAS_AVAILABLE,
                MINIMUM_REPLICAS_UNAVAILABLE,
                FAILED_RS_CREATE_REASON,
            ],
            [
                "NewReplicaSetCreated",
                "FoundNewReplicaSet",
                "ReplicaSetUpdated",
                "NewReplicaSetAvailable",
                "ProgressDeadlineExceeded",
                "DeploymentPaused",
                "DeploymentResumed",
                "MinimumReplicasAvailable",
                "MinimumReplicasUnavailable",
                "ReplicaSetCreateError",
            ]
        );
    }

    #[test]
    fn completeness() {
        // (desired, current, updated, available, observed generation)
        let cases = [
            ("min but not all available", (5, 5, 5, 4, 1), false),
            ("min availability not honoured", (5, 5, 5, 3, 1), false),
            ("complete", (5, 5, 5, 5, 1), true),
            ("available but not updated", (5, 5, 4, 5, 1), false),
            ("old pods still running", (1, 2, 1, 1, 1), false),
            ("one replica never comes up", (1, 1, 1, 0, 1), false),
            ("spec not yet observed", (5, 5, 5, 5, 0), false),
        ];
        for (what, (desired, current, updated, available, observed), want) in cases {
            let d = deployment(json!({"metadata": {"generation": 1}, "spec": {"replicas": desired}}));
            let s = DeploymentStatus {
                replicas: Some(current),
                updated_replicas: Some(updated),
                available_replicas: Some(available),
                observed_generation: Some(observed),
                ..Default::default()
            };
            assert_eq!(deployment_complete(&d, &s), want, "{what}");
        }
    }

    #[test]
    fn progressing() {
        let st = |(current, updated, ready, available): (i32, i32, i32, i32)| DeploymentStatus {
            replicas: Some(current),
            updated_replicas: Some(updated),
            ready_replicas: Some(ready),
            available_replicas: Some(available),
            ..Default::default()
        };
        let cases = [
            ("updated pods", (10, 4, 4, 4), (10, 6, 4, 4), true),
            ("not progressing", (10, 4, 4, 4), (10, 4, 4, 4), false),
            ("old pods removed", (10, 4, 6, 6), (8, 4, 6, 6), true),
            ("less new pods", (10, 7, 3, 3), (10, 6, 3, 3), false),
            ("less overall but more new", (10, 4, 7, 7), (8, 8, 5, 5), true),
            ("more ready", (10, 10, 9, 8), (10, 10, 10, 8), true),
            ("more available", (10, 10, 10, 9), (10, 10, 10, 10), true),
        ];
        for (what, old, new, want) in cases {
            let mut d = deployment(json!({}));
            d.status = Some(st(old));
            assert_eq!(deployment_progressing(&d, &st(new)), want, "{what}");
        }
    }

    #[test]
    fn timeouts() {
        let at = |min: u32, sec: u32| format!("2016-01-01T00:{min:02}:{sec:02}Z");
        type Case<'a> = (&'a str, Option<i32>, &'a str, Option<String>, String, bool);
        let cases: Vec<Case> = vec![
            ("no deadline", None, "", Some(at(1, 9)), at(1, 20), false),
            ("infinite deadline", Some(i32::MAX), "", Some(at(1, 9)), at(1, 20), false),
            ("11s > 10s", Some(10), "", Some(at(1, 9)), at(1, 20), true),
            ("9s < 10s", Some(10), "", Some(at(1, 11)), at(1, 20), false),
            ("exactly 10s is not past", Some(10), "", Some(at(1, 10)), at(1, 20), false),
            ("complete rollout", Some(10), NEW_RS_AVAILABLE_REASON, Some(at(0, 0)), at(59, 0), false),
            ("already timed out", Some(10), TIMED_OUT_REASON, Some(at(1, 19)), at(1, 20), true),
            ("no update time is Go's zero time", Some(10), "", None, at(1, 20), true),
        ];
        for (what, deadline, reason, from, now, want) in cases {
            let mut d = deployment(json!({}));
            d.spec.progress_deadline_seconds = deadline;
            let s = DeploymentStatus {
                conditions: Some(vec![DeploymentCondition {
                    type_: Some(DEPLOYMENT_PROGRESSING.into()),
                    status: Some("True".into()),
                    reason: Some(reason.into()),
                    last_update_time: from.map(|f| Time(time(&f).timestamp())),
                    ..Default::default()
                }]),
                ..Default::default()
            };
            assert_eq!(deployment_timed_out(&d, &s, time(&now)), want, "{what}");
        }
        let mut d = deployment(json!({}));
        d.spec.progress_deadline_seconds = Some(10);
        assert!(!deployment_timed_out(&d, &DeploymentStatus::default(), time(&at(1, 0))), "no Progressing condition");
        assert!(has_progress_deadline(&d));
        d.spec.revision_history_limit = Some(i32::MAX);
        assert!(!has_revision_history_limit(&d));
        d.spec.revision_history_limit = Some(0);
        assert!(has_revision_history_limit(&d));
    }

    #[test]
    fn strategy_checks() {
        assert!(is_rolling_update(&deployment(json!({}))));
        assert!(!is_rolling_update(&deployment(json!({"spec": {"strategy": {"type": "Recreate"}}}))));
        assert!(!is_rolling_update(&deployment(json!({"spec": {"strategy": null}}))));
    }
}
