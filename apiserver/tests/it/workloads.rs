//! Jobs, CronJobs, DaemonSets, StatefulSets and ReplicationControllers served as kube-apiserver
//! serves them (no controllers run for them): the real kubectl v1.35 creates, applies (client-
//! and server-side), prints, scales and is refused with upstream's texts; kube-rs round-trips
//! the defaults and the status subresource.

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use crate::kubectl::env;

const DAEMON_SET: &str = "apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers:
      - name: agent
        image: busybox
";

const STATEFUL_SET: &str = "apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: postgres:17
        ports:
        - containerPort: 5432
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 1Gi}
";

const REPLICATION_CONTROLLER: &str = "apiVersion: v1
kind: ReplicationController
metadata:
  name: legacy
spec:
  template:
    metadata:
      labels: {app: legacy}
    spec:
      containers:
      - name: app
        image: nginx
";

/// The header line of `kubectl get`, its columns split on runs of spaces.
fn header(output: &str) -> Vec<String> {
    output
        .lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn row<'a>(output: &'a str, name: &str) -> Vec<&'a str> {
    let line = output.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap_or_default();
    line.split("   ").map(str::trim).filter(|s| !s.is_empty()).collect()
}

/// Whether a line of `output` is these words, whatever the spacing.
fn has_line(output: &str, words: &[&str]) -> bool {
    output.lines().any(|l| l.split_whitespace().eq(words.iter().copied()))
}

#[test]
fn kubectl_creates_jobs_and_cron_jobs_and_prints_upstream_columns() {
    let e = env();
    assert!(e.ok(&["create", "job", "j", "--image=busybox"]).contains("job.batch/j created"));
    let job = e.json(&["get", "job", "j"]);
    let uid = job["metadata"]["uid"].as_str().unwrap().to_owned();
    assert_eq!(job["spec"]["completions"], 1);
    assert_eq!(job["spec"]["parallelism"], 1);
    assert_eq!(job["spec"]["backoffLimit"], 6);
    assert_eq!(job["spec"]["completionMode"], "NonIndexed");
    assert_eq!(job["spec"]["suspend"], false);
    assert_eq!(job["spec"]["manualSelector"], false);
    assert_eq!(job["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
    assert_eq!(job["spec"]["selector"], json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}));
    let generated = json!({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "j",
        "controller-uid": uid, "job-name": "j"});
    assert_eq!(job["spec"]["template"]["metadata"]["labels"], generated);
    assert_eq!(job["metadata"]["labels"], generated, "a Job without labels shows its pods'");
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    assert_eq!(job["status"], json!({}), "Go writes an empty status struct");

    assert!(
        e.ok(&["create", "cronjob", "c", "--image=busybox", "--schedule=*/1 * * * *"])
            .contains("cronjob.batch/c created")
    );
    let cron = e.json(&["get", "cronjob", "c"]);
    assert_eq!(cron["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(cron["spec"]["suspend"], false);
    assert_eq!(cron["spec"]["successfulJobsHistoryLimit"], 3);
    assert_eq!(cron["spec"]["failedJobsHistoryLimit"], 1);
    assert_eq!(cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"], "OnFailure");

    // A Job made from the CronJob's template, owned by it as the cron job controller's would be.
    assert!(e.ok(&["create", "job", "--from=cronjob/c", "j2"]).contains("job.batch/j2 created"));
    let j2 = e.json(&["get", "job", "j2"]);
    assert_eq!(j2["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"], "manual");
    assert_eq!(j2["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    assert_eq!(j2["metadata"]["ownerReferences"][0]["uid"], cron["metadata"]["uid"]);
    assert_eq!(j2["spec"]["template"]["metadata"]["labels"]["job-name"], "j2");

    let jobs = e.ok(&["get", "jobs"]);
    assert_eq!(header(&jobs), ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]);
    assert_eq!(row(&jobs, "j")[..3], ["j", "Running", "0/1"]);
    let wide = e.ok(&["get", "jobs", "-o", "wide"]);
    assert_eq!(header(&wide), ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]);
    assert!(wide.contains(&format!("batch.kubernetes.io/controller-uid={uid}")), "{wide}");
    let crons = e.ok(&["get", "cronjobs"]);
    assert_eq!(header(&crons), ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]);
    assert_eq!(row(&crons, "c")[..6], ["c", "*/1 * * * *", "<none>", "False", "0", "<none>"]);

    // The status subresource: a Job's completion is written there, and the printer follows it.
    let status = r#"{"status":{"succeeded":1,"startTime":"2026-01-01T00:00:00Z","completionTime":"2026-01-01T00:00:42Z",
        "conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}]}}"#;
    e.ok(&["patch", "job", "j", "--subresource=status", "--type=merge", "-p", status]);
    let jobs = e.ok(&["get", "jobs"]);
    assert_eq!(row(&jobs, "j")[..4], ["j", "Complete", "1/1", "42s"]);
    assert_eq!(e.ok(&["get", "jobs", "--field-selector=status.successful=1", "-o", "name"]), "job.batch/j\n");

    // A strategic merge patch reaches into the job template and merges its containers by name.
    let patch = r#"{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox:1.37"}]}}}}}}"#;
    e.ok(&["patch", "cronjob", "c", "-p", patch]);
    let cron = e.json(&["get", "cronjob", "c"]);
    let containers = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers.as_array().map(Vec::len), Some(1), "{containers}");
    assert_eq!(containers[0]["image"], "busybox:1.37");
    assert_eq!(cron["metadata"]["generation"], 2);

    // kubectl's describers read what they need.
    let described = e.ok(&["describe", "job", "j"]);
    assert!(has_line(&described, &["Completions:", "1"]), "{described}");
    assert!(
        has_line(&described, &["Pods", "Statuses:", "0", "Active", "/", "1", "Succeeded", "/", "0", "Failed"]),
        "{described}"
    );
    let described = e.ok(&["describe", "cronjob", "c"]);
    assert!(has_line(&described, &["Schedule:", "*/1", "*", "*", "*", "*"]), "{described}");
    let all = e.ok(&["get", "all"]);
    assert!(all.contains("job.batch/j") && all.contains("cronjob.batch/c"), "{all}");

    // A schedule robfig/cron does not parse: refused with its text.
    let out = e.run(&["create", "cronjob", "bad", "--image=busybox", "--schedule=61 * * * *"], None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            r#"CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61"#
        ),
        "{stderr}"
    );

    // kubectl deletes in the background (its --cascade default), so the Job registry's
    // orphaning default and its warning do not apply.
    let out = e.run(&["delete", "job", "j2"], None);
    assert!(out.status.success() && out.stderr.is_empty(), "{out:?}");
    assert!(e.ok(&["get", "jobs", "-o", "name"]).lines().all(|l| l != "job.batch/j2"));
}

#[test]
fn kubectl_applies_daemon_sets_and_stateful_sets_and_scales() {
    let e = env();
    e.ok_stdin(&["apply", "-f", "-"], Some(DAEMON_SET));
    e.ok_stdin(&["apply", "--server-side", "-f", "-"], Some(STATEFUL_SET));
    e.ok_stdin(&["create", "-f", "-"], Some(REPLICATION_CONTROLLER));

    let ds = e.json(&["get", "ds", "agent"]);
    assert_eq!(
        ds["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"], "1");
    assert_eq!(ds["metadata"]["generation"], 1);
    let sts = e.json(&["get", "sts", "db"]);
    assert_eq!(sts["spec"]["replicas"], 1);
    assert_eq!(sts["spec"]["podManagementPolicy"], "OrderedReady");
    assert_eq!(
        sts["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}})
    );
    assert_eq!(
        sts["spec"]["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    assert_eq!(sts["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"], "Filesystem");
    let rc = e.json(&["get", "rc", "legacy"]);
    assert_eq!(rc["spec"]["replicas"], 1);
    assert_eq!(rc["spec"]["selector"], json!({"app": "legacy"}));
    assert_eq!(rc["metadata"]["labels"], json!({"app": "legacy"}));

    // Re-applying a change: client-side apply patches the DaemonSet's template by container name.
    e.ok_stdin(&["apply", "-f", "-"], Some(&DAEMON_SET.replace("image: busybox", "image: busybox:1.37")));
    let ds = e.json(&["get", "ds", "agent"]);
    assert_eq!(ds["spec"]["template"]["spec"]["containers"][0]["image"], "busybox:1.37");
    assert_eq!(ds["metadata"]["generation"], 2);
    assert_eq!(ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"], "2");

    e.ok(&["scale", "sts/db", "--replicas=3"]);
    e.ok(&["scale", "rc/legacy", "--replicas=2"]);
    assert_eq!(e.json(&["get", "sts", "db"])["spec"]["replicas"], 3);
    assert_eq!(e.json(&["get", "rc", "legacy"])["spec"]["replicas"], 2);
    let scale: Value =
        serde_json::from_str(&e.ok(&["get", "--raw", "/apis/apps/v1/namespaces/default/statefulsets/db/scale"]))
            .unwrap();
    assert_eq!(scale["status"]["selector"], "app=db");
    // A server-side re-apply of the same manifest does not take back what scale set.
    e.ok_stdin(&["apply", "--server-side", "-f", "-"], Some(STATEFUL_SET));
    assert_eq!(e.json(&["get", "sts", "db"])["spec"]["replicas"], 3);

    // rollout restart stamps the template, which counts as a new template generation.
    e.ok(&["rollout", "restart", "ds/agent"]);
    let ds = e.json(&["get", "ds", "agent"]);
    assert!(ds["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"].is_string());
    assert_eq!(ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"], "3");
    for kind in ["ds/agent", "sts/db", "rc/legacy"] {
        assert!(e.ok(&["describe", kind]).contains("Pods Status:"), "describe {kind}");
    }

    e.ok(&["create", "job", "once", "--image=busybox"]);
    e.ok(&["create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *"]);
    let all = e.ok(&["get", "jobs,cronjobs,ds,sts,rc"]);
    let blocks: Vec<&str> = all.split("\n\n").collect();
    assert_eq!(blocks.len(), 5, "{all}");
    assert_eq!(header(blocks[0]), ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]);
    assert_eq!(row(blocks[0], "job.batch/once")[..3], ["job.batch/once", "Running", "0/1"]);
    assert_eq!(header(blocks[1]), ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]);
    assert_eq!(
        row(blocks[1], "cronjob.batch/nightly")[..6],
        ["cronjob.batch/nightly", "0 3 * * *", "<none>", "False", "0", "<none>"]
    );
    assert_eq!(
        header(blocks[2]),
        ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"]
    );
    assert_eq!(
        row(blocks[2], "daemonset.apps/agent")[..7],
        ["daemonset.apps/agent", "0", "0", "0", "0", "0", "kubernetes.io/os=linux"]
    );
    assert_eq!(header(blocks[3]), ["NAME", "READY", "AGE"]);
    assert_eq!(row(blocks[3], "statefulset.apps/db")[..2], ["statefulset.apps/db", "0/3"]);
    assert_eq!(header(blocks[4]), ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]);
    assert_eq!(row(blocks[4], "replicationcontroller/legacy")[..4], ["replicationcontroller/legacy", "2", "0", "0"]);
    let wide = e.ok(&["get", "sts,rc", "-o", "wide"]);
    let blocks: Vec<&str> = wide.split("\n\n").collect();
    assert_eq!(header(blocks[0]), ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"]);
    assert_eq!(header(blocks[1]), ["NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]);
    assert!(blocks[1].contains("app=legacy"), "{wide}");

    // A StatefulSet's spec beyond the updatable fields is frozen, with upstream's text.
    let out = e.run(&["patch", "sts", "db", "--type=merge", "-p", r#"{"spec":{"serviceName":"other"}}"#], None);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals'"),
        "{out:?}"
    );
    // A selector that does not match the template.
    let out = e.run(
        &["create", "-f", "-"],
        Some(
            &DAEMON_SET
                .replace("matchLabels: {app: agent}", "matchLabels: {app: other}")
                .replace("name: agent\nspec", "name: agent2\nspec"),
        ),
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            r#"spec.template.metadata.labels: Invalid value: map[string]string{"app":"agent"}: `selector` does not match template `labels`"#
        ),
        "{out:?}"
    );
}

#[test]
fn discovery_lists_the_batch_group_and_the_new_resources() {
    let e = env();
    let versions = e.ok(&["api-versions"]);
    assert!(versions.lines().any(|l| l == "batch/v1"), "{versions}");
    let resources = e.ok(&["api-resources", "--api-group=batch"]);
    assert!(
        resources
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["cronjobs", "cj", "batch/v1", "true", "CronJob"]),
        "{resources}"
    );
    assert!(
        resources.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["jobs", "batch/v1", "true", "Job"]),
        "{resources}"
    );
    let apps = e.ok(&["api-resources", "--api-group=apps"]);
    assert!(apps.contains("daemonsets") && apps.contains("statefulsets"), "{apps}");
    let core = e.ok(&["api-resources", "--api-group="]);
    assert!(core.lines().any(|l| l.starts_with("replicationcontrollers")), "{core}");

    // Aggregated discovery (what kubectl reads first) lists the group with its subresources.
    let aggregated = e.run(&["get", "--raw", "/apis"], None);
    assert!(aggregated.status.success());
    let group_list: Value = serde_json::from_slice(&e.run(&["get", "--raw", "/apis/batch"], None).stdout).unwrap();
    assert_eq!(group_list["preferredVersion"]["groupVersion"], "batch/v1");
    let sts: Value = serde_json::from_slice(&e.run(&["get", "--raw", "/apis/apps/v1"], None).stdout).unwrap();
    let names: Vec<&str> = sts["resources"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    for want in ["daemonsets", "daemonsets/status", "statefulsets", "statefulsets/scale", "statefulsets/status"] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_round_trips_defaults_and_the_status_subresource() {
    let (_cluster, client) = wasmcm_test_support::cluster().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let job: Job = serde_json::from_value(json!({"metadata": {"name": "pi"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl"}]}}}}))
    .unwrap();
    let created = jobs.create(&PostParams::default(), &job).await.unwrap();
    let spec = created.spec.as_ref().unwrap();
    assert_eq!((spec.completions, spec.parallelism, spec.backoff_limit), (Some(1), Some(1), Some(6)));
    assert_eq!(spec.completion_mode.as_deref(), Some("NonIndexed"));
    assert_eq!(spec.suspend, Some(false));
    let uid = created.metadata.uid.clone().unwrap();
    let selector = spec.selector.as_ref().and_then(|s| s.match_labels.clone()).unwrap();
    assert_eq!(selector.get("batch.kubernetes.io/controller-uid"), Some(&uid));
    let labels = spec.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap();
    assert_eq!(labels.get("controller-uid"), Some(&uid));
    assert_eq!(labels.get("job-name").map(String::as_str), Some("pi"));
    assert_eq!(created.metadata.generation, Some(1));

    // Status writes ignore the spec, spec writes ignore the status; only spec bumps generation.
    let status = json!({"spec": {"parallelism": 5}, "status": {"active": 1}});
    let after = jobs.patch_status("pi", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    assert_eq!(after.status.as_ref().and_then(|s| s.active), Some(1));
    assert_eq!(after.spec.as_ref().and_then(|s| s.parallelism), Some(1));
    assert_eq!(after.metadata.generation, Some(1));
    let spec_patch = json!({"spec": {"parallelism": 3}, "status": {"active": 9}});
    let after = jobs.patch("pi", &PatchParams::default(), &Patch::Merge(&spec_patch)).await.unwrap();
    assert_eq!(after.spec.as_ref().and_then(|s| s.parallelism), Some(3));
    assert_eq!(after.status.as_ref().and_then(|s| s.active), Some(1));
    assert_eq!(after.metadata.generation, Some(2));
    // The Job status strategy's transition rules: no Complete without SuccessCriteriaMet.
    let complete = json!({"status": {"startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:01:00Z",
        "active": 0, "conditions": [{"type": "Complete", "status": "True"}]}});
    let err = jobs.patch_status("pi", &PatchParams::default(), &Patch::Merge(&complete)).await.unwrap_err();
    let kube::Error::Api(status) = err else { panic!("{err}") };
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "Job.batch \"pi\" is invalid: status.conditions: Invalid value: cannot set Complete=True condition \
         without the SuccessCriteriaMet=true condition"
    );
    // The pod template of a running Job is immutable.
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "pi", "image": "perl:2"}]}}}});
    let err = jobs.patch("pi", &PatchParams::default(), &Patch::Strategic(&image)).await.unwrap_err();
    assert!(err.to_string().contains("spec.template: Invalid value"), "{err}");

    let crons: Api<CronJob> = Api::namespaced(client.clone(), "default");
    let cron: CronJob = serde_json::from_value(json!({"metadata": {"name": "nightly"}, "spec": {"schedule": "@daily",
        "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}))
    .unwrap();
    let cron = crons.create(&PostParams::default(), &cron).await.unwrap();
    let spec = cron.spec;
    assert_eq!(spec.concurrency_policy.as_deref(), Some("Allow"));
    assert_eq!((spec.successful_jobs_history_limit, spec.failed_jobs_history_limit), (Some(3), Some(1)));
    let mut bad: CronJob = serde_json::from_value(json!({"metadata": {"name": "bad"}, "spec": {"schedule": "* * *",
        "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "busybox"}]}}}}}}))
    .unwrap();
    let err = crons.create(&PostParams::default(), &bad).await.unwrap_err();
    let kube::Error::Api(status) = err else { panic!("{err}") };
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains("spec.schedule: Invalid value: \"* * *\": expected exactly 5 fields, found 3: [* * *]"),
        "{}",
        status.message
    );
    assert!(
        status.message.contains(
            r#"spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#
        ),
        "{}",
        status.message
    );
    bad.metadata.name = Some("tz".into());
    bad.spec.schedule = "CRON_TZ=Europe/Paris 0 0 * * *".into();
    let err = crons.create(&PostParams::default(), &bad).await.unwrap_err();
    assert!(err.to_string().contains("cannot use TZ or CRON_TZ in schedule, use timeZone field instead"), "{err}");

    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let sts: StatefulSet = serde_json::from_value(json!({"metadata": {"name": "db"}, "spec": {"serviceName": "db",
        "selector": {"matchLabels": {"app": "db"}},
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "postgres:17"}]}}}}))
    .unwrap();
    let sts = sets.create(&PostParams::default(), &sts).await.unwrap();
    let spec = &sts.spec;
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.revision_history_limit, Some(10));
    assert_eq!(
        spec.update_strategy.as_ref().and_then(|s| s.rolling_update.as_ref()).and_then(|r| r.partition),
        Some(0)
    );
    let scaled =
        sets.patch_scale("db", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 4}}))).await.unwrap();
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(4));
    assert_eq!(sets.get("db").await.unwrap().metadata.generation, Some(2));

    let daemons: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    let ds: DaemonSet = serde_json::from_value(json!({"metadata": {"name": "agent"}, "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "a", "image": "busybox"}]}}}}))
    .unwrap();
    let ds = daemons.create(&PostParams::default(), &ds).await.unwrap();
    let strategy = ds.spec.update_strategy.clone().unwrap();
    assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
    let status = json!({"status": {"desiredNumberScheduled": 2, "numberReady": 2, "currentNumberScheduled": 2, "numberMisscheduled": 0}});
    let ds = daemons.patch_status("agent", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    assert_eq!(ds.status.map(|s| s.number_ready), Some(2));

    let rcs: Api<ReplicationController> = Api::namespaced(client.clone(), "default");
    let rc: ReplicationController = serde_json::from_value(json!({"metadata": {"name": "legacy"}, "spec": {
        "template": {"metadata": {"labels": {"app": "legacy"}}, "spec": {"containers": [{"name": "a", "image": "nginx"}]}}}}))
    .unwrap();
    let rc = rcs.create(&PostParams::default(), &rc).await.unwrap();
    assert_eq!(rc.spec.as_ref().and_then(|s| s.replicas), Some(1));
    let scale = rcs.get_scale("legacy").await.unwrap();
    assert_eq!(scale.status.map(|s| s.selector), Some(Some("app=legacy".into())));

    // Server-side apply of a Job works from the schema; garbage collection removes the owned Job
    // with its CronJob.
    let owned = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "owned", "ownerReferences": [{
        "apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": cron.metadata.uid, "controller": true}]},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
    let applied = jobs.patch("owned", &PatchParams::apply("test"), &Patch::Apply(&owned)).await.unwrap();
    assert_eq!(applied.spec.as_ref().and_then(|s| s.backoff_limit), Some(6));
    crons.delete("nightly", &Default::default()).await.unwrap();
    wasmcm_test_support::eventually("the owned Job is collected", || async {
        jobs.get_opt("owned").await.unwrap().is_none().then_some(())
    })
    .await;

    // A Job deleted without a propagation policy keeps its pods (the Job registry's
    // OrphanDependents default) and says so in a Warning; Background takes them along.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pi = jobs.get("pi").await.unwrap();
    let pod: Pod =
        serde_json::from_value(json!({"metadata": {"name": "pi-1", "ownerReferences": [{"apiVersion": "batch/v1",
        "kind": "Job", "name": "pi", "uid": pi.metadata.uid, "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl"}]}}))
        .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let req = http::Request::delete("/apis/batch/v1/namespaces/default/jobs/pi")
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let res = client.send(req).await.unwrap();
    assert_eq!(res.status(), 200);
    let warning = res.headers().get("warning").and_then(|w| w.to_str().ok()).unwrap_or_default().to_owned();
    assert!(warning.starts_with("299 - \"child pods are preserved by default when jobs are deleted"), "{warning}");
    wasmcm_test_support::eventually("the Job is gone", || async {
        jobs.get_opt("pi").await.unwrap().is_none().then_some(())
    })
    .await;
    let orphan = pods.get("pi-1").await.unwrap();
    assert!(orphan.metadata.owner_references.unwrap_or_default().is_empty(), "the pod is orphaned, not deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregated_discovery_lists_batch_and_the_subresources() {
    let (_cluster, client) = wasmcm_test_support::cluster().await;
    let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let get = |path: &str| http::Request::get(path).header("Accept", accept).body(Vec::new()).unwrap();
    let apis: Value = serde_json::from_str(&client.request_text(get("/apis")).await.unwrap()).unwrap();
    assert_eq!(apis["kind"], "APIGroupDiscoveryList");
    let group =
        |name: &str| apis["items"].as_array().unwrap().iter().find(|g| g["metadata"]["name"] == name).cloned().unwrap();
    let resources = |g: &Value| -> Vec<(String, Vec<String>)> {
        g["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let subs =
                    r["subresources"].as_array().unwrap().iter().map(|s| s["subresource"].as_str().unwrap().to_owned());
                (r["resource"].as_str().unwrap().to_owned(), subs.collect())
            })
            .collect()
    };
    let batch = group("batch");
    assert_eq!(batch["versions"][0]["version"], "v1");
    assert_eq!(
        resources(&batch),
        [("cronjobs".to_owned(), vec!["status".to_owned()]), ("jobs".to_owned(), vec!["status".to_owned()])]
    );
    let apps = resources(&group("apps"));
    assert!(apps.contains(&("daemonsets".to_owned(), vec!["status".to_owned()])), "{apps:?}");
    assert!(apps.contains(&("statefulsets".to_owned(), vec!["status".to_owned(), "scale".to_owned()])), "{apps:?}");
    let core: Value = serde_json::from_str(&client.request_text(get("/api")).await.unwrap()).unwrap();
    let rc = core["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "replicationcontrollers")
        .cloned()
        .unwrap();
    assert_eq!(rc["shortNames"], json!(["rc"]));
    assert_eq!(rc["categories"], json!(["all"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_and_strategic_merge_patches_of_the_new_kinds() {
    let (_cluster, client) = wasmcm_test_support::cluster().await;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let rv = sets.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    let mut events = sets.watch(&WatchParams::default().timeout(10), &rv).await.unwrap().boxed();
    let sts: StatefulSet = serde_json::from_value(json!({"metadata": {"name": "db"}, "spec": {
        "selector": {"matchLabels": {"app": "db"}},
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [
            {"name": "db", "image": "postgres:17", "ports": [{"containerPort": 5432}]},
            {"name": "exporter", "image": "exporter:1"}]}}}}))
    .unwrap();
    sets.create(&PostParams::default(), &sts).await.unwrap();
    // A strategic merge patch merges containers by name and keeps the other one.
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "db", "image": "postgres:18"}]}}}});
    sets.patch("db", &PatchParams::default(), &Patch::Strategic(&patch)).await.unwrap();
    let status = json!({"status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}});
    sets.patch_status("db", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();

    let mut seen = Vec::new();
    while seen.len() < 3 {
        match events.next().await {
            Some(Ok(WatchEvent::Added(s))) => seen.push(("ADDED", s)),
            Some(Ok(WatchEvent::Modified(s))) => seen.push(("MODIFIED", s)),
            other => panic!("unexpected watch event {other:?}"),
        }
    }
    assert_eq!(seen.iter().map(|(t, _)| *t).collect::<Vec<_>>(), ["ADDED", "MODIFIED", "MODIFIED"]);
    let patched = &seen[1].1;
    let containers = &patched.spec.template.spec.as_ref().unwrap().containers;
    let images: Vec<_> = containers.iter().map(|c| (c.name.as_str(), c.image.as_deref().unwrap_or_default())).collect();
    assert_eq!(images, [("db", "postgres:18"), ("exporter", "exporter:1")]);
    assert_eq!(containers[0].ports.as_ref().map(Vec::len), Some(1), "the patched container keeps its ports");
    assert_eq!(patched.metadata.generation, Some(2));
    let with_status = &seen[2].1;
    assert_eq!(with_status.status.as_ref().and_then(|s| s.ready_replicas), Some(1));
    assert_eq!(with_status.metadata.generation, Some(2), "a status write does not bump the generation");

    // A status that contradicts itself is refused with the StatefulSet status rules.
    let bad = json!({"status": {"replicas": 1, "readyReplicas": 2}});
    let err = sets.patch_status("db", &PatchParams::default(), &Patch::Merge(&bad)).await.unwrap_err();
    assert!(
        err.to_string().contains("status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"),
        "{err}"
    );
}
