//! `job_controller.go`: `syncJob` and what it calls. One reconcile of a Job: its pods claimed
//! (adopted with the tracking finalizer, or released), the finished condition decided (pod
//! failure policy, backoff limits, deadline, failed indexes, success policy, completions),
//! pods created (slow start, indexes) or deleted (excess, suspended, finished), and the status
//! tracked through `uncountedTerminatedPods` while finished pods' finalizers are removed.
//!
//! Upstream writes inside the sync, in order, and carries what it wrote into the next write;
//! here the same decisions become one outcome of batches, in upstream's order: adoption
//! patches; finalizer patches and deletes of pods to remove; creates in slow-start batches; the
//! status; its events; the finalizer patches of counted pods. A status written before finalizers
//! are removed is upstream's first flush; what upstream writes after them (pods moved from
//! `uncountedTerminatedPods` to the counters, the final condition) is written by the next
//! reconcile, which the pods' finalizer removal wakes (see `tracking_utils`). After a failed
//! outcome the status goes first, so that counting never waits on pods that cannot be created.
//!
//! Feature gates are those of upstream's newest release: JobPodReplacementPolicy,
//! JobManagedBy, JobSuccessPolicy, JobBackoffLimitPerIndex and PodIndexLabel on, so terminal
//! conditions come after their interim FailureTarget and SuccessCriteriaMet conditions.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::SignedDuration;
use serde_json::{Value, json};
use wasmcm_guest::ownership::{Claim, claim, new_controller_ref};
use wasmcm_guest::{
    Cache, CacheExt, DeleteTarget, Error, Event, EventType, Instant, Intent, Kind, Level, Object, ObjectRef, Outcome,
    Patch, Request, Selector, finalizer, log, pod,
};

use crate::backoff_utils::{
    BackoffRecord, DEFAULT_JOB_POD_FAILURE_BACKOFF, MAX_JOB_POD_FAILURE_BACKOFF, new_backoff_record,
    record_from_counted, remaining_time_per_index,
};
use crate::indexed_job_utils::{
    OrderedIntervals, UNKNOWN_COMPLETION_INDEX, add_completion_index, add_completion_index_env_variables,
    add_index_failure_count_annotation, calculate_failed_indexes, calculate_succeeded_indexes, completion_index,
    duplicated_index_pods_for_removal, first_pending_indexes, has_backoff_limit_per_index, is_indexed_job,
    pod_generate_name_with_index, pods_with_delayed_deletion_per_index,
};
use crate::pod_failure_policy::match_pod_failure_policy;
use crate::success_policy::{
    has_success_criteria_met_condition, is_success_criteria_met_condition, match_success_policy,
};
use crate::tracking_utils::{JOB_TRACKING_FINALIZER, has_job_tracking_finalizer};
use crate::util::is_job_finished;

/// `MaxUncountedPods`: the UIDs `status.uncountedTerminatedPods` holds at most (about 20 KB).
pub const MAX_UNCOUNTED_PODS: usize = 500;
/// `MaxPodCreateDeletePerSync`.
pub const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;
/// `controller.SlowStartInitialBatchSize`.
const SLOW_START_INITIAL_BATCH_SIZE: usize = 1;
/// `syncJobBatchPeriod`: the least delay of a requeue for a pod failure back-off.
const SYNC_JOB_BATCH_PERIOD: SignedDuration = SignedDuration::from_secs(1);
/// `batch.JobControllerName`: the `spec.managedBy` of Jobs this controller reconciles.
pub const JOB_CONTROLLER_NAME: &str = "kubernetes.io/job-controller";
/// The label the API server puts on a Job's pod template (unless its selector is manual).
const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";

pub(crate) fn job_kind() -> Kind {
    Kind::new("batch/v1", "Job")
}

fn pod_kind() -> Kind {
    Kind::new("v1", "Pod")
}

/// One reconcile of the Job of `req`.
pub fn sync(req: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
    let Some(object) = cache.get_as::<Job>(&req.namespace, &req.name)? else {
        return Ok(deleted_job(req, cache));
    };
    let raw = object.raw()?;
    let job = object.value;
    if let Some(name) = managed_by_external_controller(&job) {
        log(Level::Debug, &format!("skip syncing the job as it is managed by an external controller {name:?}"));
        return Ok(Outcome::default());
    }
    let now = Instant { seconds: req.now.seconds, nanoseconds: 0 };
    let mut s = Sync { req, now, cache, job, raw, writes: Writes::default() };
    s.sync_job()?;
    Ok(s.writes.into_outcome(req.previous_failure.is_some()))
}

/// `managedByExternalController`.
pub fn managed_by_external_controller(job: &Job) -> Option<&str> {
    job.spec.as_ref()?.managed_by.as_deref().filter(|name| *name != JOB_CONTROLLER_NAME)
}

/// The writes of one sync, grouped by the batch they go in.
#[derive(Default)]
struct Writes {
    /// Adoption and release patches (`ClaimPods`), and the finalizers of orphans let go.
    claims: Vec<Intent>,
    /// Finalizers taken off pods about to be deleted (`deleteJobPods`).
    unfinalized: Vec<Intent>,
    deletes: Vec<Intent>,
    /// Slow-start batches of creates.
    creates: Vec<Vec<Intent>>,
    status: Option<Intent>,
    /// Events recorded once the status they describe is written.
    events: Vec<Intent>,
    /// Finalizers of counted pods (`removeTrackingFinalizerFromPods`).
    finalizers: Vec<Intent>,
    requeue: Option<SignedDuration>,
}

impl Writes {
    fn requeue_after(&mut self, d: SignedDuration) {
        let d = d.max(SignedDuration::ZERO);
        self.requeue = Some(self.requeue.map_or(d, |r| r.min(d)));
    }

    fn into_outcome(self, status_first: bool) -> Outcome {
        let mut o = Outcome::default();
        o.push_batch(self.claims);
        let mut tracking = vec![self.status.into_iter().collect(), self.events, self.finalizers];
        let mut managing = vec![self.unfinalized, self.deletes];
        managing.extend(self.creates);
        if status_first {
            std::mem::swap(&mut tracking, &mut managing);
        }
        for batch in managing.into_iter().chain(tracking) {
            o.push_batch(batch);
        }
        o.requeue_after_ms = self.requeue.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1));
        o
    }
}

/// A pod as read: typed, with its name and uid at hand.
pub(crate) struct PodRef {
    pub pod: Pod,
}

impl PodRef {
    fn name(&self) -> &str {
        self.pod.metadata.name.as_deref().unwrap_or("")
    }
}

/// `uncountedTerminatedPods` as sets.
#[derive(Default)]
struct Uncounted {
    succeeded: BTreeSet<String>,
    failed: BTreeSet<String>,
}

/// `syncJobCtx`.
struct Ctx<'p> {
    pods: Vec<&'p Pod>,
    finished_condition: Option<JobCondition>,
    active_pods: Vec<&'p Pod>,
    succeeded: i32,
    failed: i32,
    prev_succeeded_indexes: OrderedIntervals,
    succeeded_indexes: OrderedIntervals,
    failed_indexes: Option<OrderedIntervals>,
    new_backoff_record: BackoffRecord,
    uncounted: Uncounted,
    pods_with_delayed_deletion_per_index: BTreeMap<i64, &'p Pod>,
    terminating: i32,
    ready: i32,
}

struct Sync<'a> {
    req: &'a Request,
    now: Instant,
    cache: &'a dyn Cache,
    /// The Job as read, its status changed as the sync goes (upstream's deep copy).
    job: Job,
    raw: Value,
    writes: Writes,
}

fn spec_of(job: &Job) -> k8s_openapi::api::batch::v1::JobSpec {
    job.spec.clone().unwrap_or_default()
}

fn phase(p: &Pod) -> &str {
    p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

/// `jobSuspended`.
pub fn job_suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

/// `onlyReplaceFailedPods`: a pod is replaced only once it failed, not while it terminates.
pub fn only_replace_failed_pods(job: &Job) -> bool {
    let spec = job.spec.as_ref();
    spec.and_then(|s| s.pod_replacement_policy.as_deref()) == Some("Failed")
        || spec.is_some_and(|s| s.pod_failure_policy.is_some())
}

/// `isPodFailed`: Failed, or (unless only failed pods are replaced) deleted before it
/// succeeded, for orphans that never reach a phase.
pub fn is_pod_failed(p: &Pod, job: &Job) -> bool {
    if phase(p) == "Failed" {
        return true;
    }
    if only_replace_failed_pods(job) {
        return false;
    }
    p.metadata.deletion_timestamp.is_some() && phase(p) != "Succeeded"
}

/// `newCondition`.
pub fn new_condition(type_: &str, status: &str, reason: &str, message: &str, now: Instant) -> JobCondition {
    let none_if_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    JobCondition {
        type_: type_.into(),
        status: status.into(),
        reason: none_if_empty(reason),
        message: none_if_empty(message),
        last_probe_time: Some(now.time()),
        last_transition_time: Some(now.time()),
    }
}

fn reason(c: &JobCondition) -> &str {
    c.reason.as_deref().unwrap_or("")
}

fn message(c: &JobCondition) -> &str {
    c.message.as_deref().unwrap_or("")
}

/// `ensureJobConditionStatus`: the condition of `type_` set to these values (a new one only
/// when not False); whether anything changed.
pub fn ensure_job_condition_status(
    list: &mut Vec<JobCondition>,
    type_: &str,
    status: &str,
    reason_: &str,
    message_: &str,
    now: Instant,
) -> bool {
    if let Some(c) = list.iter_mut().find(|c| c.type_ == type_) {
        if c.status != status || reason(c) != reason_ || message(c) != message_ {
            *c = new_condition(type_, status, reason_, message_, now);
            return true;
        }
        return false;
    }
    if status != "False" {
        list.push(new_condition(type_, status, reason_, message_, now));
        return true;
    }
    false
}

/// `newFailedConditionForFailureTarget`.
fn failed_condition_for_failure_target(c: &JobCondition, now: Instant) -> JobCondition {
    new_condition("Failed", "True", reason(c), message(c), now)
}

/// `newFailureCondition`: the interim FailureTarget (delayTerminalCondition holds).
fn new_failure_condition(reason_: &str, message_: &str, now: Instant) -> JobCondition {
    new_condition("FailureTarget", "True", reason_, message_, now)
}

/// `newSuccessCondition`: the interim SuccessCriteriaMet.
fn new_success_condition(now: Instant) -> JobCondition {
    new_condition("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods", now)
}

impl<'a> Sync<'a> {
    fn conditions(&self) -> &[JobCondition] {
        self.job.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default()
    }

    fn status_mut(&mut self) -> &mut JobStatus {
        self.job.status.get_or_insert_with(Default::default)
    }

    fn job_ref(&self) -> ObjectRef {
        ObjectRef { kind: job_kind(), namespace: self.req.namespace.clone(), name: self.req.name.clone() }
    }

    fn event(&mut self, event_type: EventType, reason: &str, message: &str) {
        let regarding = self.job_ref();
        self.writes.events.push(Intent::Event(Event {
            regarding,
            event_type,
            reason: reason.into(),
            message: message.into(),
        }));
    }

    fn pod_ref(&self, p: &Pod) -> ObjectRef {
        ObjectRef {
            kind: pod_kind(),
            namespace: self.req.namespace.clone(),
            name: p.metadata.name.clone().unwrap_or_default(),
        }
    }

    fn sync_job(&mut self) -> Result<(), Error> {
        // A finished Job is not synced again; what its pods still hold of the finalizer goes
        // (upstream: updateJob's cleanupPodFinalizers through the orphan queue).
        if is_job_finished(&self.job) {
            let pods = self.controlled_pods()?;
            let patches: Vec<Intent> = pods
                .iter()
                .filter(|p| has_job_tracking_finalizer(&p.pod))
                .map(|p| Intent::Patch(finalizer::remove_patch(self.pod_ref(&p.pod), JOB_TRACKING_FINALIZER)))
                .collect();
            self.writes.finalizers = patches;
            return Ok(());
        }
        let spec = spec_of(&self.job);
        if let Some(mode) = spec.completion_mode.as_deref()
            && mode != "NonIndexed"
            && mode != "Indexed"
        {
            self.event(
                EventType::Warning,
                "UnknownCompletionMode",
                "Skipped Job sync because completion mode is unknown",
            );
            return Ok(());
        }
        if self.status_mut().uncounted_terminated_pods.is_none() {
            self.status_mut().uncounted_terminated_pods = Some(UncountedTerminatedPods::default());
        }

        let owned = self.pods_for_job(&spec)?;
        let pods: Vec<&Pod> = owned.iter().map(|p| &p.pod).collect();
        let active_pods: Vec<&Pod> = pods.iter().copied().filter(|p| pod::is_active(p)).collect();
        let uncounted_status =
            self.job.status.as_ref().and_then(|s| s.uncounted_terminated_pods.clone()).unwrap_or_default();
        let uncounted = Uncounted {
            succeeded: uncounted_status.succeeded.iter().flatten().cloned().collect(),
            failed: uncounted_status.failed.iter().flatten().cloned().collect(),
        };
        let mut ctx = Ctx {
            ready: active_pods.iter().filter(|p| pod::is_ready(p)).count() as i32,
            terminating: pods.iter().filter(|p| pod::is_terminating(p)).count() as i32,
            pods,
            active_pods,
            finished_condition: None,
            succeeded: 0,
            failed: 0,
            prev_succeeded_indexes: OrderedIntervals::default(),
            succeeded_indexes: OrderedIntervals::default(),
            failed_indexes: None,
            new_backoff_record: BackoffRecord::default(),
            uncounted,
            pods_with_delayed_deletion_per_index: BTreeMap::new(),
        };
        let mut active = ctx.active_pods.len() as i32;
        let observed = (active, ctx.ready, ctx.terminating);
        let (new_succeeded, new_failed) = self.new_finished_pods(&ctx);
        let status = self.job.status.clone().unwrap_or_default();
        ctx.succeeded =
            status.succeeded.unwrap_or(0) + new_succeeded.len() as i32 + ctx.uncounted.succeeded.len() as i32;
        ctx.failed = status.failed.unwrap_or(0)
            + self.non_ignored_failed_pods_count(&new_failed) as i32
            + ctx.uncounted.failed.len() as i32;

        // Job first start. Set StartTime only if the job is not in the suspended state.
        if status.start_time.is_none() && !job_suspended(&self.job) {
            self.status_mut().start_time = Some(self.now.time());
        }

        let (counted_succeeded, counted_failed) = self.counted_finished_pods(&ctx);
        ctx.new_backoff_record =
            new_backoff_record(record_from_counted(&counted_succeeded, &counted_failed), &new_succeeded, &new_failed);

        let backoff_limit = spec.backoff_limit.unwrap_or(6);
        let exceeds_backoff_limit = ctx.failed > backoff_limit;
        ctx.finished_condition = has_success_criteria_met_condition(&self.job).cloned();

        // With SuccessCriteriaMet already, the termination was confirmed in an earlier sync:
        // the pod failure policy is evaluated only without it.
        if ctx.finished_condition.is_none() {
            let failure_target =
                self.conditions().iter().find(|c| c.type_ == "FailureTarget" && c.status == "True").cloned();
            if let Some(target) = failure_target {
                ctx.finished_condition = Some(failed_condition_for_failure_target(&target, self.now));
            } else if let Some(message) = self.fail_job_message(&ctx.pods) {
                // The interim FailureTarget records the failure message before the finalizers
                // (allowing the pods' removal) are removed.
                ctx.finished_condition =
                    Some(new_condition("FailureTarget", "True", "PodFailurePolicy", &message, self.now));
            }
        }
        if ctx.finished_condition.is_none() {
            if exceeds_backoff_limit || past_backoff_limit_on_failure(&self.job, &ctx.pods) {
                ctx.finished_condition = Some(new_failure_condition(
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                    self.now,
                ));
            } else if self.past_active_deadline() {
                ctx.finished_condition = Some(new_failure_condition(
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                    self.now,
                ));
            } else if let (Some(ads), false) = (spec.active_deadline_seconds, job_suspended(&self.job)) {
                let started = self.job.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| self.now.since(t));
                let sync_in = SignedDuration::from_secs(ads) - started.unwrap_or(SignedDuration::ZERO);
                log(
                    Level::Debug,
                    &format!("Job has activeDeadlineSeconds configuration. Will sync this job again in {sync_in:?}"),
                );
                self.writes.requeue_after(sync_in);
            }
        }

        let completions = spec.completions.unwrap_or(0);
        if is_indexed_job(&self.job) {
            let (prev, succeeded) = calculate_succeeded_indexes(&self.job, &ctx.pods);
            ctx.prev_succeeded_indexes = prev;
            ctx.succeeded_indexes = succeeded;
            ctx.succeeded = ctx.succeeded_indexes.total() as i32;
            if has_backoff_limit_per_index(&self.job) {
                let failed = calculate_failed_indexes(&self.job, &ctx.pods);
                if ctx.finished_condition.is_none() {
                    if spec.max_failed_indexes.is_some_and(|max| failed.total() > i64::from(max)) {
                        ctx.finished_condition = Some(new_failure_condition(
                            "MaxFailedIndexesExceeded",
                            "Job has exceeded the specified maximal number of failed indexes",
                            self.now,
                        ));
                    } else if failed.total() > 0
                        && failed.total() + ctx.succeeded_indexes.total() >= i64::from(completions)
                    {
                        ctx.finished_condition =
                            Some(new_failure_condition("FailedIndexes", "Job has failed indexes", self.now));
                    }
                }
                ctx.failed_indexes = Some(failed);
                let valid_failed = self.valid_pods_excluding(&ctx, None, |p| is_pod_failed(p, &self.job));
                ctx.pods_with_delayed_deletion_per_index = pods_with_delayed_deletion_per_index(
                    &self.job,
                    &valid_failed,
                    &ctx.active_pods,
                    &ctx.succeeded_indexes,
                    ctx.failed_indexes.as_ref(),
                );
            }
            if ctx.finished_condition.is_none()
                && let Some(message) =
                    match_success_policy(spec.success_policy.as_ref(), completions, &ctx.succeeded_indexes)
            {
                ctx.finished_condition =
                    Some(new_condition("SuccessCriteriaMet", "True", "SuccessPolicy", &message, self.now));
            }
        }

        let mut suspend_cond_changed = false;
        if ctx.finished_condition.is_some() {
            // Remove active pods: the Job failed, or met its success criteria.
            let deleted_ready = ctx.active_pods.iter().filter(|p| pod::is_ready(p)).count() as i32;
            let deleted = ctx.active_pods.len() as i32;
            for p in &ctx.active_pods {
                self.writes.deletes.push(Intent::Delete(DeleteTarget::new(self.pod_ref(p), p.metadata.uid.clone())));
            }
            // Every delete succeeds or the outcome stops before the status: `deleted == active`.
            active -= deleted;
            ctx.terminating += deleted;
            ctx.ready -= deleted_ready;
        } else {
            let mut manage_job_called = false;
            if self.job.metadata.deletion_timestamp.is_none() {
                active = self.manage_job(&spec, &mut ctx);
                manage_job_called = true;
            }
            let complete = match spec.completions {
                // Any success completes a work-queue Job, once its other pods are done.
                None => ctx.succeeded > 0 && active == 0,
                Some(completions) => ctx.succeeded >= completions && active == 0,
            };
            if complete {
                ctx.finished_condition = Some(new_success_condition(self.now));
            } else if manage_job_called {
                let now = self.now;
                if job_suspended(&self.job) {
                    let conditions = self.status_mut().conditions.get_or_insert_with(Vec::new);
                    if ensure_job_condition_status(
                        conditions,
                        "Suspended",
                        "True",
                        "JobSuspended",
                        "Job suspended",
                        now,
                    ) {
                        suspend_cond_changed = true;
                        self.event(EventType::Normal, "Suspended", "Job suspended");
                    }
                } else {
                    let conditions = self.status_mut().conditions.get_or_insert_with(Vec::new);
                    if ensure_job_condition_status(conditions, "Suspended", "False", "JobResumed", "Job resumed", now) {
                        suspend_cond_changed = true;
                        self.event(EventType::Normal, "Resumed", "Job resumed");
                        // A resumed Job's activeDeadlineSeconds counts from now: it is the time
                        // a Job is continuously active.
                        self.status_mut().start_time = Some(now.time());
                    }
                }
            }
        }

        // After a failed outcome the status is written before this sync's pod writes (see the
        // module's documentation): it reports the pods as they are, not as they will be.
        let (active, ready, terminating) = match self.req.previous_failure.is_some() {
            true => observed,
            false => (active, ctx.ready, ctx.terminating),
        };
        let old = self.job.status.clone().unwrap_or_default();
        let needs_status_update = suspend_cond_changed
            || active != old.active.unwrap_or(0)
            || Some(ready) != old.ready
            || Some(terminating) != old.terminating;
        let status = self.status_mut();
        status.active = Some(active);
        status.ready = Some(ready);
        status.terminating = Some(terminating);
        self.track_job_status_and_remove_finalizers(&mut ctx, needs_status_update)
    }

    /// The pods a Job controls, as the cache has them, by name.
    fn controlled_pods(&self) -> Result<Vec<PodRef>, Error> {
        let uid = self.job.metadata.uid.as_deref().unwrap_or("");
        let pods = self.cache.list_controlled_as::<Pod>(&self.req.namespace, uid, false)?;
        let mut pods: Vec<PodRef> = pods.into_iter().map(|p: Object<Pod>| PodRef { pod: p.value }).collect();
        pods.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(pods)
    }

    /// `getPodsForJob`: the pods the Job controls and the orphans its selector matches, claimed
    /// as `PodControllerRefManager.ClaimPods` does (adopted with an ownerReference and the
    /// tracking finalizer, released when they stop matching), by name. An orphan carrying the
    /// tracking finalizer that the Job does not adopt loses it, as upstream's orphan worker
    /// takes it off.
    fn pods_for_job(&mut self, spec: &k8s_openapi::api::batch::v1::JobSpec) -> Result<Vec<PodRef>, Error> {
        let selector = match &spec.selector {
            Some(s) => Selector::from_label_selector(s)
                .map_err(|e| Error::permanent(format!("couldn't convert Job selector: {e}")))?,
            None => Selector::everything(),
        };
        let uid = self.job.metadata.uid.clone().unwrap_or_default();
        let candidates = self.cache.list_controlled_as::<Pod>(&self.req.namespace, &uid, true)?;
        let owner = ObjectMeta { namespace: Some(self.req.namespace.clone()), ..self.job.metadata.clone() };
        let mut pods = Vec::new();
        for candidate in candidates {
            let mut p = candidate.value;
            let labels = p.metadata.labels.clone().unwrap_or_default();
            let matches = !selector.is_empty() && selector.matches(&labels);
            let orphan = wasmcm_guest::ownership::controller_of(&p.metadata).is_none();
            match claim(&owner, &p.metadata, matches) {
                Claim::Owned => pods.push(PodRef { pod: p }),
                Claim::Adopt => {
                    let patch = json!({"metadata": {
                        "ownerReferences": [new_controller_ref("batch/v1", "Job", &owner)],
                        "uid": p.metadata.uid,
                        "finalizers": [JOB_TRACKING_FINALIZER],
                    }});
                    self.writes.claims.push(Intent::Patch(Patch::strategic(self.pod_ref(&p), &patch)));
                    // The adopted pod carries the finalizer for the remaining calculations.
                    if !has_job_tracking_finalizer(&p) {
                        p.metadata.finalizers.get_or_insert_with(Vec::new).push(JOB_TRACKING_FINALIZER.into());
                    }
                    pods.push(PodRef { pod: p });
                }
                Claim::Release => {
                    let patch = json!({"metadata": {
                        "uid": p.metadata.uid,
                        "ownerReferences": [{"$patch": "delete", "uid": uid}],
                        "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER],
                    }});
                    self.writes.claims.push(Intent::Patch(Patch::strategic(self.pod_ref(&p), &patch)));
                }
                Claim::Ignore => {
                    if orphan && has_job_tracking_finalizer(&p) {
                        let patch = finalizer::remove_patch(self.pod_ref(&p), JOB_TRACKING_FINALIZER);
                        self.writes.claims.push(Intent::Patch(patch));
                    }
                }
            }
        }
        pods.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(pods)
    }

    /// `getValidPodsWithFilter`: pods not yet counted (carrying the finalizer, not in the
    /// `uncounted` set given), of a valid index for an Indexed Job, that pass `filter`.
    fn valid_pods_excluding<'p>(
        &self,
        ctx: &Ctx<'p>,
        uncounted: Option<&BTreeSet<String>>,
        filter: impl Fn(&Pod) -> bool,
    ) -> Vec<&'p Pod> {
        let indexed = is_indexed_job(&self.job);
        let completions = i64::from(self.job.spec.as_ref().and_then(|s| s.completions).unwrap_or(0));
        ctx.pods
            .iter()
            .copied()
            .filter(|p| {
                let uid = p.metadata.uid.as_deref().unwrap_or("");
                if !has_job_tracking_finalizer(p) || uncounted.is_some_and(|u| u.contains(uid)) {
                    return false;
                }
                if indexed {
                    let ix = completion_index(p);
                    if ix == UNKNOWN_COMPLETION_INDEX || ix >= completions {
                        return false;
                    }
                }
                filter(p)
            })
            .collect()
    }

    /// `getNewFinishedPods`: the succeeded and failed pods not counted in the status yet.
    fn new_finished_pods<'p>(&self, ctx: &Ctx<'p>) -> (Vec<&'p Pod>, Vec<&'p Pod>) {
        let succeeded = self.valid_pods_excluding(ctx, Some(&ctx.uncounted.succeeded), |p| phase(p) == "Succeeded");
        let failed = self.valid_pods_excluding(ctx, Some(&ctx.uncounted.failed), |p| is_pod_failed(p, &self.job));
        (succeeded, failed)
    }

    /// The finished pods already counted, for the back-off record (see `backoff_utils`): those
    /// in `uncountedTerminatedPods`, and those without the finalizer that finished undeleted.
    fn counted_finished_pods<'p>(&self, ctx: &Ctx<'p>) -> (Vec<&'p Pod>, Vec<&'p Pod>) {
        let (mut succeeded, mut failed) = (Vec::new(), Vec::new());
        for &p in &ctx.pods {
            let uid = p.metadata.uid.as_deref().unwrap_or("");
            let in_uncounted = ctx.uncounted.succeeded.contains(uid) || ctx.uncounted.failed.contains(uid);
            let settled = !has_job_tracking_finalizer(p) && p.metadata.deletion_timestamp.is_none();
            if !(in_uncounted || settled) {
                continue;
            }
            if phase(p) == "Succeeded" {
                succeeded.push(p);
            } else if is_pod_failed(p, &self.job) {
                failed.push(p);
            }
        }
        (succeeded, failed)
    }

    /// `nonIgnoredFailedPodsCount`.
    fn non_ignored_failed_pods_count(&self, failed: &[&Pod]) -> usize {
        let policy = self.job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref());
        match policy {
            None => failed.len(),
            Some(_) => failed.iter().filter(|p| match_pod_failure_policy(policy, p).count_failed).count(),
        }
    }

    /// `getFailJobMessage`: the message of the first failed pod a FailJob rule matches.
    fn fail_job_message(&self, pods: &[&Pod]) -> Option<String> {
        let policy = self.job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref())?;
        pods.iter()
            .filter(|p| is_pod_failed(p, &self.job))
            .find_map(|p| match_pod_failure_policy(Some(policy), p).fail_job_message)
    }

    /// `pastActiveDeadline`: never while suspended.
    fn past_active_deadline(&self) -> bool {
        let spec = self.job.spec.as_ref();
        let (Some(ads), Some(start)) = (
            spec.and_then(|s| s.active_deadline_seconds),
            self.job.status.as_ref().and_then(|s| s.start_time.as_ref()),
        ) else {
            return false;
        };
        !job_suspended(&self.job) && self.now.since(start) >= SignedDuration::from_secs(ads)
    }

    /// `manageJob`: the pods to delete (suspended, or more than wanted) or to create (fewer
    /// than wanted, once the back-off allows), and the active count after them.
    fn manage_job(&mut self, spec: &k8s_openapi::api::batch::v1::JobSpec, ctx: &mut Ctx<'_>) -> i32 {
        let mut active = ctx.active_pods.len() as i32;
        let parallelism = spec.parallelism.unwrap_or(1);
        if job_suspended(&self.job) {
            log(Level::Debug, &format!("Deleting all active pods in suspended job (active {active})"));
            let to_delete = active_pods_for_removal(&self.job, &ctx.active_pods, ctx.active_pods.len());
            let (removed_ready, removed) = self.delete_job_pods(&to_delete);
            active -= removed;
            ctx.terminating += removed;
            ctx.ready -= removed_ready;
            return active;
        }
        let want_active = match spec.completions {
            // A work queue: parallelism pods, until one succeeded; then whatever runs.
            None if ctx.succeeded > 0 => active,
            None => parallelism,
            Some(completions) => (completions - ctx.succeeded).min(parallelism).max(0),
        };
        let rm_at_least = (active - want_active).max(0) as usize;
        let mut to_delete = active_pods_for_removal(&self.job, &ctx.active_pods, rm_at_least);
        to_delete.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
        if !to_delete.is_empty() {
            log(
                Level::Debug,
                &format!("Too many pods running for job: deleting {}, target {want_active}", to_delete.len()),
            );
            let (removed_ready, removed) = self.delete_job_pods(&to_delete);
            active -= removed;
            ctx.terminating += removed;
            ctx.ready -= removed_ready;
            // A sync either deletes or creates pods (an Indexed Job with repeated indexes may
            // need both); deletion first.
            return active;
        }

        let terminating = if only_replace_failed_pods(&self.job) { ctx.terminating } else { 0 };
        let mut diff = want_active - terminating - active;
        if diff <= 0 {
            return active;
        }
        if !has_backoff_limit_per_index(&self.job) {
            let remaining = ctx.new_backoff_record.remaining_time(
                self.now,
                DEFAULT_JOB_POD_FAILURE_BACKOFF,
                MAX_JOB_POD_FAILURE_BACKOFF,
            );
            if remaining > SignedDuration::ZERO {
                self.writes.requeue_after(remaining.max(SYNC_JOB_BATCH_PERIOD));
                // As upstream: the status reports no active pods until the back-off passes.
                return 0;
            }
        }
        diff = diff.min(MAX_POD_CREATE_DELETE_PER_SYNC as i32);
        let mut indexes_to_add: Vec<i64> = Vec::new();
        if is_indexed_job(&self.job) {
            let completions = i64::from(spec.completions.unwrap_or(0));
            indexes_to_add = first_pending_indexes(
                &self.job,
                &ctx.pods,
                &ctx.active_pods,
                &ctx.succeeded_indexes,
                ctx.failed_indexes.as_ref(),
                diff as usize,
                completions,
            );
            if has_backoff_limit_per_index(&self.job) {
                let (now_indexes, remaining) = self.creation_info_for_independent_indexes(&indexes_to_add, ctx);
                if remaining > SignedDuration::ZERO {
                    self.writes.requeue_after(remaining.max(SYNC_JOB_BATCH_PERIOD));
                    return 0;
                }
                indexes_to_add = now_indexes;
            }
            diff = indexes_to_add.len() as i32;
        }
        log(Level::Debug, &format!("Too few pods running: need {want_active}, creating {diff}"));
        active += diff;

        let mut template = self.raw.pointer("/spec/template").cloned().unwrap_or_else(|| json!({}));
        if is_indexed_job(&self.job) {
            add_completion_index_env_variables(&mut template);
        }
        append_job_tracking_finalizer(&mut template);
        let owner = ObjectMeta { namespace: Some(self.req.namespace.clone()), ..self.job.metadata.clone() };
        let controller_ref = new_controller_ref("batch/v1", "Job", &owner);
        let mut creates = Vec::new();
        for i in 0..diff as usize {
            let mut pod_template = template.clone();
            let index = indexes_to_add.get(i).copied();
            if let Some(index) = index {
                add_completion_index(&mut pod_template, index);
                if let Some(spec) = pod_template.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.insert("hostname".into(), json!(format!("{}-{index}", self.req.name)));
                }
                if has_backoff_limit_per_index(&self.job) {
                    let replaced = ctx.pods_with_delayed_deletion_per_index.get(&index).copied();
                    add_index_failure_count_annotation(&mut pod_template, &self.job, replaced);
                }
            }
            match pod::pod_from_template(&pod_template, &self.req.namespace, &self.req.name, &controller_ref) {
                Ok(mut p) => {
                    if let Some(index) = index {
                        p["metadata"]["generateName"] = json!(pod_generate_name_with_index(&self.req.name, index));
                    }
                    creates.push(Intent::Create(p.to_string()));
                }
                Err(e) => {
                    // Upstream's PodControl fails each create with this error: no pod, an event.
                    active -= 1;
                    self.event(EventType::Warning, "FailedCreate", &format!("Error creating: {}", e.message));
                }
            }
        }
        // Slow start: batches of 1, 2, 4, …; a failure stops the later batches.
        let mut creates = creates.into_iter().peekable();
        let mut size = SLOW_START_INITIAL_BATCH_SIZE;
        while creates.peek().is_some() {
            self.writes.creates.push(creates.by_ref().take(size).collect());
            size *= 2;
        }
        active
    }

    /// `getPodCreationInfoForIndependentIndexes`: the indexes whose back-off has passed, or,
    /// when none has, the shortest wait.
    fn creation_info_for_independent_indexes(&self, indexes: &[i64], ctx: &Ctx<'_>) -> (Vec<i64>, SignedDuration) {
        let mut now_indexes = Vec::new();
        let mut min_remaining: Option<SignedDuration> = None;
        for &ix in indexes {
            let remaining = remaining_time_per_index(
                self.now,
                DEFAULT_JOB_POD_FAILURE_BACKOFF,
                MAX_JOB_POD_FAILURE_BACKOFF,
                ctx.pods_with_delayed_deletion_per_index.get(&ix).copied(),
            );
            if remaining == SignedDuration::ZERO {
                now_indexes.push(ix);
            } else if min_remaining.is_none_or(|m| remaining < m) {
                min_remaining = Some(remaining);
            }
        }
        if !now_indexes.is_empty() {
            return (now_indexes, SignedDuration::ZERO);
        }
        (now_indexes, min_remaining.unwrap_or(SignedDuration::ZERO))
    }

    /// `deleteJobPods`: each pod's finalizer removed, then the pod deleted; (ready, all) removed.
    fn delete_job_pods(&mut self, pods: &[&Pod]) -> (i32, i32) {
        for p in pods {
            if has_job_tracking_finalizer(p) {
                let patch = finalizer::remove_patch(self.pod_ref(p), JOB_TRACKING_FINALIZER);
                self.writes.unfinalized.push(Intent::Patch(patch));
            }
            self.writes.deletes.push(Intent::Delete(DeleteTarget::new(self.pod_ref(p), p.metadata.uid.clone())));
        }
        (pods.iter().filter(|p| pod::is_ready(p)).count() as i32, pods.len() as i32)
    }

    /// `trackJobStatusAndRemoveFinalizers`: finished pods into `uncountedTerminatedPods` (or
    /// their indexes into `completedIndexes`), interim conditions, the status written, then the
    /// finalizers of those pods removed; or, when no finalizer is left to remove, the counters
    /// and the terminal condition written at once (see the module's documentation).
    fn track_job_status_and_remove_finalizers(
        &mut self,
        ctx: &mut Ctx<'_>,
        mut needs_flush: bool,
    ) -> Result<(), Error> {
        let indexed = is_indexed_job(&self.job);
        if indexed {
            ctx.pods.sort_by_key(|p| completion_index(p));
        }
        let uids_with_finalizer: BTreeSet<String> =
            ctx.pods.iter().filter(|p| has_job_tracking_finalizer(p)).filter_map(|p| p.metadata.uid.clone()).collect();
        if clean_uncounted_pods_without_finalizers(self.status_mut(), &uids_with_finalizer) {
            needs_flush = true;
        }
        let completions = self.job.spec.as_ref().and_then(|s| s.completions).unwrap_or(0);
        let policy = self.job.spec.as_ref().and_then(|s| s.pod_failure_policy.clone());
        let mut pods_to_remove_finalizer: Vec<&Pod> = Vec::new();
        let mut new_succeeded_indexes: Vec<i64> = Vec::new();
        let mut reached_max_uncounted_pods = false;
        let finished_failing =
            ctx.finished_condition.as_ref().is_some_and(|c| !is_success_criteria_met_condition(Some(c)));
        let (mut add_succeeded, mut add_failed): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
        let pods = ctx.pods.clone();
        for p in pods {
            if !has_job_tracking_finalizer(p) {
                // Counted in an earlier sync.
                continue;
            }
            let consider_pod_failed = is_pod_failed(p, &self.job);
            if !self.can_remove_finalizer(ctx, p, consider_pod_failed) {
                continue;
            }
            pods_to_remove_finalizer.push(p);
            let uid = p.metadata.uid.clone().unwrap_or_default();
            if phase(p) == "Succeeded" && !ctx.uncounted.failed.contains(&uid) {
                if indexed {
                    // The completion index is enough not to count a pod twice.
                    let ix = completion_index(p);
                    if ix != UNKNOWN_COMPLETION_INDEX
                        && ix < i64::from(completions)
                        && !ctx.prev_succeeded_indexes.has(ix)
                    {
                        new_succeeded_indexes.push(ix);
                        needs_flush = true;
                    }
                } else if !ctx.uncounted.succeeded.contains(&uid) {
                    needs_flush = true;
                    add_succeeded.push(uid);
                }
            } else if consider_pod_failed || finished_failing {
                // Once the Job is finished, every pod not terminated counts as failed.
                let ix = completion_index(p);
                if !ctx.uncounted.failed.contains(&uid)
                    && (!indexed || (ix != UNKNOWN_COMPLETION_INDEX && ix < i64::from(completions)))
                {
                    let counted = policy.is_none() || match_pod_failure_policy(policy.as_ref(), p).count_failed;
                    if counted {
                        needs_flush = true;
                        add_failed.push(uid);
                    }
                }
            }
            let uncounted = self.job.status.as_ref().and_then(|s| s.uncounted_terminated_pods.as_ref());
            let listed =
                uncounted.map_or(0, |u| u.succeeded.iter().flatten().count() + u.failed.iter().flatten().count());
            if new_succeeded_indexes.len() + listed + add_succeeded.len() + add_failed.len() >= MAX_UNCOUNTED_PODS {
                // Enough UIDs for one status (about 20 KB) and finalizer removals for one sync:
                // the status and pod updates bring the Job back for the rest.
                reached_max_uncounted_pods = true;
                break;
            }
        }
        {
            let uncounted = self.status_mut().uncounted_terminated_pods.get_or_insert_with(Default::default);
            if !add_succeeded.is_empty() {
                uncounted.succeeded.get_or_insert_with(Vec::new).extend(add_succeeded);
            }
            if !add_failed.is_empty() {
                uncounted.failed.get_or_insert_with(Vec::new).extend(add_failed);
            }
        }
        if indexed {
            new_succeeded_indexes.sort_unstable();
            ctx.succeeded_indexes = ctx.succeeded_indexes.with_ordered_indexes(&new_succeeded_indexes);
            let succeeded_str = ctx.succeeded_indexes.to_string();
            let status = self.status_mut();
            if status.completed_indexes.as_deref().unwrap_or("") != succeeded_str {
                needs_flush = true;
            }
            status.succeeded = Some(ctx.succeeded_indexes.total() as i32);
            status.completed_indexes = (!succeeded_str.is_empty()).then_some(succeeded_str);
            let failed_str = ctx.failed_indexes.as_ref().map(ToString::to_string);
            if status.failed_indexes != failed_str {
                status.failed_indexes = failed_str;
                needs_flush = true;
            }
        }
        if let Some(target) = ctx.finished_condition.clone().filter(|c| c.type_ == "FailureTarget") {
            // The interim FailureTarget goes into the status before the finalizers are removed;
            // the final Failed condition is prepared from it.
            self.status_mut().conditions.get_or_insert_with(Vec::new).push(target.clone());
            needs_flush = true;
            ctx.finished_condition = Some(failed_condition_for_failure_target(&target, self.now));
        }
        if let Some(met) = ctx.finished_condition.clone().filter(|c| is_success_criteria_met_condition(Some(c))) {
            if has_success_criteria_met_condition(&self.job).is_none() {
                self.status_mut().conditions.get_or_insert_with(Vec::new).push(met.clone());
                needs_flush = true;
            }
            ctx.finished_condition = Some(new_condition("Complete", "True", reason(&met), message(&met), self.now));
        }

        if !pods_to_remove_finalizer.is_empty() {
            // Upstream's first flush, then the removals; the counters move and the terminal
            // condition comes in the reconcile the removals wake.
            if needs_flush {
                self.write_status();
            }
            for p in pods_to_remove_finalizer {
                let patch = finalizer::remove_patch(self.pod_ref(p), JOB_TRACKING_FINALIZER);
                self.writes.finalizers.push(Intent::Patch(patch));
            }
            return Ok(());
        }
        let finished = !reached_max_uncounted_pods && self.enact_job_finished(ctx);
        if finished {
            needs_flush = true;
        }
        if needs_flush {
            self.write_status();
            if finished && let Some(condition) = ctx.finished_condition.clone() {
                self.record_job_finished(&condition);
            }
        }
        Ok(())
    }

    /// `canRemoveFinalizer`: the Job is being deleted or finished, the pod succeeded, or it
    /// failed and its index's replacement does not wait for its failure count.
    fn can_remove_finalizer(&self, ctx: &Ctx<'_>, p: &Pod, consider_pod_failed: bool) -> bool {
        if self.job.metadata.deletion_timestamp.is_some() || ctx.finished_condition.is_some() || phase(p) == "Succeeded"
        {
            return true;
        }
        if !consider_pod_failed {
            return false;
        }
        if has_backoff_limit_per_index(&self.job) {
            let ix = completion_index(p);
            if ix != UNKNOWN_COMPLETION_INDEX
                && let Some(delayed) = ctx.pods_with_delayed_deletion_per_index.get(&ix)
                && delayed.metadata.uid == p.metadata.uid
            {
                log(Level::Debug, "Delaying pod finalizer removal to await for pod recreation within the index");
                return false;
            }
        }
        true
    }

    /// `enactJobFinished`: the terminal condition, once no pod is uncounted or terminating.
    fn enact_job_finished(&mut self, ctx: &Ctx<'_>) -> bool {
        let Some(finished) = ctx.finished_condition.clone() else { return false };
        let uncounted = self.job.status.as_ref().and_then(|s| s.uncounted_terminated_pods.as_ref());
        let count = uncounted.map_or(0, |u| u.succeeded.iter().flatten().count() + u.failed.iter().flatten().count());
        if count > 0 {
            log(Level::Debug, &format!("Delaying marking the Job as finished: {count} uncounted pod(s)"));
            return false;
        }
        if ctx.terminating > 0 {
            log(Level::Debug, &format!("Delaying marking the Job as finished: {} terminating pod(s)", ctx.terminating));
            return false;
        }
        let now = self.now;
        let conditions = self.status_mut().conditions.get_or_insert_with(Vec::new);
        ensure_job_condition_status(
            conditions,
            &finished.type_,
            &finished.status,
            reason(&finished),
            message(&finished),
            now,
        );
        if finished.type_ == "Complete" {
            self.status_mut().completion_time = finished.last_transition_time.clone();
        }
        true
    }

    /// `recordJobFinished`: the events of a finished Job.
    fn record_job_finished(&mut self, finished: &JobCondition) {
        if finished.type_ == "Complete" {
            let completions = self.job.spec.as_ref().and_then(|s| s.completions);
            let succeeded = self.job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0);
            if completions.is_some_and(|c| succeeded > c) {
                self.event(
                    EventType::Warning,
                    "TooManySucceededPods",
                    "Too many succeeded pods running after completion count reached",
                );
            }
            self.event(EventType::Normal, "Completed", "Job completed");
        } else {
            let (reason_, message_) = (reason(finished).to_string(), message(finished).to_string());
            self.event(EventType::Warning, &reason_, &message_);
        }
    }

    /// The status write: the Job as read with the status fields this controller owns replaced
    /// (fields of later API versions kept), conditioned on the Job's resourceVersion.
    fn write_status(&mut self) {
        let status = self.job.status.clone().unwrap_or_default();
        let mut written = self.raw.clone();
        let fields = serde_json::to_value(&status).unwrap_or_else(|_| json!({}));
        if !written.get("status").is_some_and(Value::is_object) {
            written["status"] = json!({});
        }
        if let (Some(target), Some(fields)) = (written["status"].as_object_mut(), fields.as_object()) {
            for key in OWNED_STATUS_FIELDS {
                match fields.get(*key) {
                    Some(v) => target.insert(key.to_string(), v.clone()),
                    None => target.remove(*key),
                };
            }
        }
        self.writes.status = Some(Intent::UpdateStatus(written.to_string()));
    }
}

/// The `JobStatus` fields this controller writes.
const OWNED_STATUS_FIELDS: &[&str] = &[
    "active",
    "completedIndexes",
    "completionTime",
    "conditions",
    "failed",
    "failedIndexes",
    "ready",
    "startTime",
    "succeeded",
    "terminating",
    "uncountedTerminatedPods",
];

/// `appendJobCompletionFinalizerIfNotFound` on a template's JSON.
fn append_job_tracking_finalizer(template: &mut Value) {
    let Some(obj) = template.as_object_mut() else { return };
    let metadata = obj.entry("metadata").or_insert_with(|| json!({}));
    let Some(metadata) = metadata.as_object_mut() else { return };
    let list = metadata.entry("finalizers").or_insert_with(|| json!([]));
    if list.is_null() {
        *list = json!([]);
    }
    if let Some(list) = list.as_array_mut()
        && !list.iter().any(|f| f.as_str() == Some(JOB_TRACKING_FINALIZER))
    {
        list.push(json!(JOB_TRACKING_FINALIZER));
    }
}

/// `activePodsForRemoval`: for an Indexed Job, pods of repeated, unknown or out-of-range indexes
/// first; then, to reach `rm_at_least`, the first of the rest in `controller.ActivePods` order
/// (not ready before ready, unscheduled before scheduled, pending before running).
pub fn active_pods_for_removal<'p>(job: &Job, pods: &[&'p Pod], rm_at_least: usize) -> Vec<&'p Pod> {
    let (mut rm, mut left) = if is_indexed_job(job) {
        let completions = i64::from(job.spec.as_ref().and_then(|s| s.completions).unwrap_or(0));
        duplicated_index_pods_for_removal(pods, completions)
    } else {
        (Vec::new(), pods.to_vec())
    };
    if rm.len() < rm_at_least {
        pod::sort_by_less(&mut left, |a, b| pod::active_pods_less(a, b));
        let more = (rm_at_least - rm.len()).min(left.len());
        rm.extend_from_slice(&left[..more]);
    }
    rm
}

/// `pastBackoffLimitOnFailure`: with `restartPolicy: OnFailure`, the restarts of the pods still
/// running or pending reached `backoffLimit` (any restart, when it is 0).
pub fn past_backoff_limit_on_failure(job: &Job, pods: &[&Pod]) -> bool {
    let spec = job.spec.as_ref();
    let restart = spec.and_then(|s| s.template.spec.as_ref()).and_then(|s| s.restart_policy.as_deref());
    if restart != Some("OnFailure") {
        return false;
    }
    let restarts: i64 = pods
        .iter()
        .filter(|p| matches!(phase(p), "Running" | "Pending"))
        .filter_map(|p| p.status.as_ref())
        .flat_map(|s| s.init_container_statuses.iter().flatten().chain(s.container_statuses.iter().flatten()))
        .map(|c| i64::from(c.restart_count))
        .sum();
    let limit = i64::from(spec.and_then(|s| s.backoff_limit).unwrap_or(6));
    if limit == 0 { restarts > 0 } else { restarts >= limit }
}

/// `cleanUncountedPodsWithoutFinalizers`: the uncounted pods whose finalizer is gone (or which
/// are gone) move to the counters; whether any did.
fn clean_uncounted_pods_without_finalizers(status: &mut JobStatus, uids_with_finalizer: &BTreeSet<String>) -> bool {
    let mut updated = false;
    let uncounted = status.uncounted_terminated_pods.get_or_insert_with(Default::default);
    let moved = |list: &mut Option<Vec<String>>| -> i32 {
        let before = list.as_ref().map_or(0, Vec::len);
        let kept: Vec<String> =
            list.iter().flatten().filter(|uid| uids_with_finalizer.contains(*uid)).cloned().collect();
        let n = (before - kept.len()) as i32;
        *list = (!kept.is_empty()).then_some(kept);
        n
    };
    let (succeeded, failed) = (moved(&mut uncounted.succeeded), moved(&mut uncounted.failed));
    if succeeded > 0 {
        updated = true;
        status.succeeded = Some(status.succeeded.unwrap_or(0) + succeeded);
    }
    if failed > 0 {
        updated = true;
        status.failed = Some(status.failed.unwrap_or(0) + failed);
    }
    updated
}

/// The key of a Job that is gone: its pods still carrying the tracking finalizer (the garbage
/// collector deleting them, or they were orphaned) lose it, as upstream's orphan worker takes
/// it off. They are found by the `batch.kubernetes.io/job-name` label the API server puts on a
/// Job's pods, among those no other controller holds.
fn deleted_job(req: &Request, cache: &dyn Cache) -> Outcome {
    let selector =
        Selector { match_labels: vec![(JOB_NAME_LABEL.to_string(), req.name.clone())], match_expressions: vec![] };
    let mut patches = Vec::new();
    let mut pods: Vec<Pod> = cache
        .list(&pod_kind(), &req.namespace, &selector)
        .into_iter()
        .filter_map(|json| serde_json::from_str::<Pod>(&json).ok())
        .collect();
    pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for p in pods {
        let ours = match wasmcm_guest::ownership::controller_of(&p.metadata) {
            None => true,
            Some(r) => r.kind == "Job" && r.api_version == "batch/v1" && r.name == req.name,
        };
        if ours && has_job_tracking_finalizer(&p) {
            let target = ObjectRef {
                kind: pod_kind(),
                namespace: req.namespace.clone(),
                name: p.metadata.name.clone().unwrap_or_default(),
            };
            patches.push(Intent::Patch(finalizer::remove_patch(target, JOB_TRACKING_FINALIZER)));
        }
    }
    let mut o = Outcome::default();
    o.push_batch(patches);
    o
}
