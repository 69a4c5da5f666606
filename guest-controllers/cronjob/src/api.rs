//! The parts of CronJobs and Jobs the controller reads. Decoding only these, instead of
//! k8s-openapi's whole types (whose pod-template decoders are most of a component), keeps the
//! component under a ConfigMap's 1 MiB; what the controller writes starts from the JSON as read
//! (the Job template, the CronJob with its new status), so nothing of the objects is lost.

use k8s_openapi::api::batch::v1::{CronJobStatus, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use wasmcm_guest::{Kind, Resource};

/// batch/v1 CronJob: metadata, the spec's scheduling fields, status.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct CronJob {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: CronJobSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CronJobStatus>,
}

/// CronJobSpec without its job template (copied as JSON).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJobSpec {
    #[serde(default)]
    pub schedule: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starting_deadline_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successful_jobs_history_limit: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_jobs_history_limit: Option<i32>,
}

/// batch/v1 Job: metadata and status (the controller never reads a Job's spec).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct Job {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<JobStatus>,
}

impl Resource for CronJob {
    fn kind() -> Kind {
        Kind::new("batch/v1", "CronJob")
    }
}

impl Resource for Job {
    fn kind() -> Kind {
        Kind::new("batch/v1", "Job")
    }
}
