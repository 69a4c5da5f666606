//! Printers of the workload kinds served without a controller here: Jobs, CronJobs, DaemonSets,
//! StatefulSets and ReplicationControllers (kubernetes `pkg/printers/internalversion/printers.go`
//! v1.35: printJob, printCronJob, printDaemonSet, printStatefulSet, printReplicationController).
//!
//! It owns these kinds' columns and rows; container cells and selector text are `apps`', the
//! shared machinery the parent's.

use jiff::Timestamp;
use serde_json::Value;

use super::apps::{CONTAINERS_DOC, IMAGES_DOC, container_cells, label_selector};
use super::{
    AGE_COLUMN, ColumnSpec, NAME_COLUMN, Row, age, human_duration, int, items, or_none, present, text, timestamp,
};

const JOB_SELECTOR_DOC: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

pub(super) const JOB_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    ("Status", "string", "", "Status of the job.", 0),
    (
        "Completions",
        "string",
        "",
        "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.",
        0,
    ),
    ("Duration", "string", "", "Time required to complete the job.", 0),
    AGE_COLUMN,
    ("Containers", "string", "", CONTAINERS_DOC, 1),
    ("Images", "string", "", IMAGES_DOC, 1),
    ("Selector", "string", "", JOB_SELECTOR_DOC, 1),
];

pub(super) const CRON_JOB_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    ("Schedule", "string", "", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.", 0),
    (
        "Timezone",
        "string",
        "",
        "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
        0,
    ),
    (
        "Suspend",
        "boolean",
        "",
        "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.",
        0,
    ),
    ("Active", "integer", "", "A list of pointers to currently running jobs.", 0),
    ("Last Schedule", "string", "", "Information when was the last time the job was successfully scheduled.", 0),
    AGE_COLUMN,
    ("Containers", "string", "", CONTAINERS_DOC, 1),
    ("Images", "string", "", IMAGES_DOC, 1),
    ("Selector", "string", "", JOB_SELECTOR_DOC, 1),
];

pub(super) const DAEMON_SET_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    (
        "Desired",
        "integer",
        "",
        "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        0,
    ),
    (
        "Current",
        "integer",
        "",
        "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        0,
    ),
    (
        "Ready",
        "integer",
        "",
        "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.",
        0,
    ),
    ("Up-to-date", "integer", "", "The total number of nodes that are running updated daemon pod", 0),
    (
        "Available",
        "integer",
        "",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
        0,
    ),
    (
        "Node Selector",
        "string",
        "",
        "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
        0,
    ),
    AGE_COLUMN,
    ("Containers", "string", "", CONTAINERS_DOC, 1),
    ("Images", "string", "", IMAGES_DOC, 1),
    (
        "Selector",
        "string",
        "",
        "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        1,
    ),
];

pub(super) const STATEFUL_SET_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    ("Ready", "string", "", "Number of the pod with ready state", 0),
    AGE_COLUMN,
    ("Containers", "string", "", CONTAINERS_DOC, 1),
    ("Images", "string", "", IMAGES_DOC, 1),
];

pub(super) const REPLICATION_CONTROLLER_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    (
        "Desired",
        "integer",
        "",
        "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        0,
    ),
    (
        "Current",
        "integer",
        "",
        "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        0,
    ),
    ("Ready", "integer", "", "The number of ready replicas for this replication controller.", 0),
    AGE_COLUMN,
    ("Containers", "string", "", CONTAINERS_DOC, 1),
    ("Images", "string", "", IMAGES_DOC, 1),
    (
        "Selector",
        "string",
        "",
        "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        1,
    ),
];

/// metav1.FormatLabelSelector: `<none>` for an empty selector, `<error>` for one that does not convert.
fn format_label_selector(selector: Option<&Value>) -> String {
    match label_selector(selector) {
        Ok(s) if s.is_empty() => "<none>".into(),
        Ok(s) => s,
        Err(()) => "<error>".into(),
    }
}

/// labels.FormatLabels: `k=v` pairs sorted by key, `<none>` when there are none.
fn format_labels(map: Option<&Value>) -> Value {
    or_none(&super::label_set_string(map))
}

/// Whether the Job has a condition of this type with status True (hasJobCondition).
fn has_condition(obj: &Value, kind: &str) -> bool {
    items(obj, "/status/conditions").iter().any(|c| text(c, "/type") == kind && text(c, "/status") == "True")
}

pub(super) fn job_row(obj: &Value, now: Timestamp) -> Row {
    let succeeded = int(obj, "/status/succeeded").unwrap_or(0);
    let completions = match int(obj, "/spec/completions") {
        Some(completions) => format!("{succeeded}/{completions}"),
        None => match int(obj, "/spec/parallelism").unwrap_or(0) {
            parallelism if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = timestamp(obj, "/status/startTime");
    let duration = match (start, timestamp(obj, "/status/completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.duration_since(start)),
        (Some(start), Some(end)) => human_duration(end.duration_since(start)),
    };
    // The order is upstream's: a finished Job says how it finished even while it is deleted.
    let status = if has_condition(obj, "Complete") {
        "Complete"
    } else if has_condition(obj, "Failed") {
        "Failed"
    } else if present(obj, "/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if has_condition(obj, "Suspended") {
        "Suspended"
    } else if has_condition(obj, "FailureTarget") {
        "FailureTarget"
    } else if has_condition(obj, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let (containers, images) = container_cells(obj, "/spec/template/spec/containers");
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        status.into(),
        completions.into(),
        duration.into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
        containers,
        images,
        format_label_selector(obj.pointer("/spec/selector")).into(),
    ])
}

pub(super) fn cron_job_row(obj: &Value, now: Timestamp) -> Row {
    let last_schedule = match timestamp(obj, "/status/lastScheduleTime") {
        Some(t) => age(now, Some(t)),
        None => "<none>".into(),
    };
    let time_zone = obj.pointer("/spec/timeZone").and_then(Value::as_str).unwrap_or("<none>");
    // printBoolPtr.
    let suspend = match obj.pointer("/spec/suspend").and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    let (containers, images) = container_cells(obj, "/spec/jobTemplate/spec/template/spec/containers");
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        text(obj, "/spec/schedule").into(),
        time_zone.into(),
        suspend.into(),
        items(obj, "/status/active").len().into(),
        last_schedule.into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
        containers,
        images,
        format_label_selector(obj.pointer("/spec/jobTemplate/spec/selector")).into(),
    ])
}

pub(super) fn daemon_set_row(obj: &Value, now: Timestamp) -> Row {
    let count = |field: &str| int(obj, &format!("/status/{field}")).unwrap_or(0);
    let (containers, images) = container_cells(obj, "/spec/template/spec/containers");
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        count("desiredNumberScheduled").into(),
        count("currentNumberScheduled").into(),
        count("numberReady").into(),
        count("updatedNumberScheduled").into(),
        count("numberAvailable").into(),
        format_labels(obj.pointer("/spec/template/spec/nodeSelector")),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
        containers,
        images,
        format_label_selector(obj.pointer("/spec/selector")).into(),
    ])
}

pub(super) fn stateful_set_row(obj: &Value, now: Timestamp) -> Row {
    let ready = int(obj, "/status/readyReplicas").unwrap_or(0);
    let desired = int(obj, "/spec/replicas").unwrap_or(1);
    let (containers, images) = container_cells(obj, "/spec/template/spec/containers");
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        format!("{ready}/{desired}").into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
        containers,
        images,
    ])
}

pub(super) fn replication_controller_row(obj: &Value, now: Timestamp) -> Row {
    let (containers, images) = container_cells(obj, "/spec/template/spec/containers");
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        int(obj, "/spec/replicas").unwrap_or(1).into(),
        int(obj, "/status/replicas").unwrap_or(0).into(),
        int(obj, "/status/readyReplicas").unwrap_or(0).into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
        containers,
        images,
        format_labels(obj.pointer("/spec/selector")),
    ])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> Timestamp {
        "2026-01-01T00:10:00Z".parse().unwrap_or_default()
    }

    fn cells(row: Row) -> Vec<Value> {
        row.cells
    }

    #[test]
    fn job_rows_say_how_far_along_a_job_is() {
        let job = json!({"metadata": {"name": "pi", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"completions": 3, "parallelism": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                "template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}},
            "status": {"succeeded": 1, "startTime": "2026-01-01T00:01:00Z"}});
        assert_eq!(
            cells(job_row(&job, now())),
            json!(["pi", "Running", "1/3", "9m", "10m", "pi", "perl", "batch.kubernetes.io/controller-uid=u"])
                .as_array()
                .cloned()
                .unwrap_or_default()
        );

        let mut done = job.clone();
        done["status"]["completionTime"] = json!("2026-01-01T00:01:42Z");
        done["status"]["conditions"] = json!([{"type": "Complete", "status": "True"}]);
        done["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:09:00Z");
        let row = cells(job_row(&done, now()));
        assert_eq!((&row[1], &row[3]), (&json!("Complete"), &json!("42s")));

        let mut open = job.clone();
        open["spec"] = json!({"parallelism": 4});
        open["status"] = json!({"conditions": [{"type": "Suspended", "status": "True"}]});
        let row = cells(job_row(&open, now()));
        assert_eq!(
            (&row[1], &row[2], &row[3], &row[7]),
            (&json!("Suspended"), &json!("0/1 of 4"), &json!(""), &json!("<none>"))
        );
    }

    #[test]
    fn cron_job_rows() {
        let cj = json!({"metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"schedule": "*/1 * * * *", "suspend": false,
                "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}},
            "status": {"active": [{"name": "c-1"}], "lastScheduleTime": "2026-01-01T00:09:00Z"}});
        assert_eq!(
            cells(cron_job_row(&cj, now())),
            vec![
                json!("c"),
                json!("*/1 * * * *"),
                json!("<none>"),
                json!("False"),
                json!(1),
                json!("60s"),
                json!("10m"),
                json!("c"),
                json!("busybox"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn daemon_set_stateful_set_and_rc_rows() {
        let meta = json!({"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"});
        let ds = json!({"metadata": meta, "spec": {"selector": {"matchLabels": {"app": "x"}},
            "template": {"spec": {"nodeSelector": {"os": "linux", "disk": "ssd"}, "containers": [{"name": "c", "image": "i"}]}}},
            "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1}});
        assert_eq!(
            cells(daemon_set_row(&ds, now())),
            vec![
                json!("x"),
                json!(2),
                json!(2),
                json!(1),
                json!(0),
                json!(0),
                json!("disk=ssd,os=linux"),
                json!("10m"),
                json!("c"),
                json!("i"),
                json!("app=x")
            ]
        );
        let sts = json!({"metadata": meta, "spec": {"replicas": 3}, "status": {"readyReplicas": 2}});
        assert_eq!(cells(stateful_set_row(&sts, now()))[..3], [json!("x"), json!("2/3"), json!("10m")]);
        let rc = json!({"metadata": meta, "spec": {"replicas": 3, "selector": {"b": "2", "a": "1"}}});
        let row = cells(replication_controller_row(&rc, now()));
        assert_eq!(row[..4], [json!("x"), json!(3), json!(0), json!(0)]);
        assert_eq!(row[7], json!("a=1,b=2"));
    }
}
