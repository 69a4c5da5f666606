//! `util/utils.go`: whether a Job has finished, and how.

use k8s_openapi::api::batch::v1::Job;

/// `FinishedCondition`: the type of a Complete or Failed condition that is True, if any.
pub fn finished_condition(job: &Job) -> Option<&str> {
    conditions(job)
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        .map(|c| c.type_.as_str())
}

/// `IsJobFinished`.
pub fn is_job_finished(job: &Job) -> bool {
    finished_condition(job).is_some()
}

/// `IsJobSucceeded`.
pub fn is_job_succeeded(job: &Job) -> bool {
    conditions(job).any(|c| c.type_ == "Complete" && c.status == "True")
}

fn conditions(job: &Job) -> impl Iterator<Item = &k8s_openapi::api::batch::v1::JobCondition> {
    job.status.iter().flat_map(|s| s.conditions.iter().flatten())
}
