//! `tracking_utils.go`: the `batch.kubernetes.io/job-tracking` finalizer that keeps a Job's
//! pods until the Job has counted them.
//!
//! Upstream's `uidTrackingExpectations` (the pod UIDs whose finalizer removal the controller
//! has not yet observed) has no counterpart here: a plugin keeps no memory between reconciles.
//! Its job is done by the order of the writes instead. A finished pod's UID is written into
//! `status.uncountedTerminatedPods` (conditioned on the Job's resourceVersion) before its
//! finalizer is removed, and it moves from there to the counters only once the cache shows the
//! pod without the finalizer (or gone); the cache never shows a pod's finalizer again once it
//! has shown it removed, so no pod is counted twice.

use k8s_openapi::api::core::v1::Pod;

/// `batch.JobTrackingFinalizer`.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// `hasJobTrackingFinalizer`.
pub fn has_job_tracking_finalizer(pod: &Pod) -> bool {
    pod.metadata.finalizers.iter().flatten().any(|f| f == JOB_TRACKING_FINALIZER)
}
