//! Server-side defaulting of built-in kinds, mirroring kube-apiserver: the v1 `SetDefaults_*`
//! functions and their generated wrappers (pkg/apis/*/v1), plus the few create-time fields the
//! registry strategies fill in (pod phase and QoS class, namespace finalizer and phase). One
//! function per kind, which its `Strategy` names.
//!
//! Only fields upstream would add are added, so objects read back look like a real cluster's and
//! `kubectl diff` / server-side apply see no phantom changes. Input of the wrong shape is left
//! alone: validation reports it, defaulting must never make it worse or panic.

use serde_json::{Map, Value, json};

/// The pod's QoS class as the kubelet and `status.qosClass` see it (pkg/apis/core/helper/qos).
///
/// Only cpu and memory count. A missing request counts as equal to its limit, which is what
/// pod defaulting would make it, so the answer does not depend on whether defaults ran first.
pub(crate) fn qos_class(pod_spec: &Value) -> &'static str {
    const TRACKED: [&str; 2] = ["cpu", "memory"];
    let mut requests = [0i128; 2];
    let mut limits = [0i128; 2];
    let mut seen_request = [false; 2];
    let mut seen_limit = [false; 2];
    let mut guaranteed = true;

    let mut add = |resources: Option<&Value>, need_both_limits: bool| {
        let req = resources.and_then(|r| r.get("requests"));
        let lim = resources.and_then(|r| r.get("limits"));
        let mut limits_found = [false; 2];
        for (i, name) in TRACKED.iter().enumerate() {
            let limit = lim.and_then(|l| l.get(*name)).and_then(quantity_nanos);
            let request = req.and_then(|r| r.get(*name)).and_then(quantity_nanos).or(limit);
            if let Some(q) = request.filter(|q| *q > 0) {
                requests[i] = requests[i].saturating_add(q);
                seen_request[i] = true;
            }
            if let Some(q) = limit.filter(|q| *q > 0) {
                limits[i] = limits[i].saturating_add(q);
                seen_limit[i] = true;
                limits_found[i] = true;
            }
        }
        if need_both_limits && !limits_found.iter().all(|f| *f) {
            guaranteed = false;
        }
    };

    // Pod-level resources, when given, replace the per-container sum (KEP-2837).
    let pod_level =
        pod_spec.get("resources").filter(|r| has_entries(r.get("requests")) || has_entries(r.get("limits")));
    if pod_level.is_some() {
        add(pod_level, true);
    } else {
        for list in ["containers", "initContainers"] {
            for container in pod_spec.get(list).and_then(Value::as_array).into_iter().flatten() {
                add(container.get("resources"), true);
            }
        }
    }

    if !seen_request.iter().any(|s| *s) && !seen_limit.iter().any(|s| *s) {
        return "BestEffort";
    }
    let same_sets = seen_request == seen_limit;
    let equal = (0..2).all(|i| !seen_request[i] || (seen_limit[i] && requests[i] == limits[i]));
    if guaranteed && same_sets && equal { "Guaranteed" } else { "Burstable" }
}

fn has_entries(v: Option<&Value>) -> bool {
    v.and_then(Value::as_object).is_some_and(|m| !m.is_empty())
}

pub(crate) fn deployment(obj: &mut Map<String, Value>) {
    let Some(spec) = child_obj(obj, "spec") else { return };
    default_val(spec, "replicas", json!(1));
    if let Some(strategy) = child_obj(spec, "strategy") {
        default_str(strategy, "type", "RollingUpdate");
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(rolling) = child_obj(strategy, "rollingUpdate")
        {
            default_val(rolling, "maxUnavailable", json!("25%"));
            default_val(rolling, "maxSurge", json!("25%"));
        }
    }
    default_val(spec, "revisionHistoryLimit", json!(10));
    default_val(spec, "progressDeadlineSeconds", json!(600));
    template(spec);
}

pub(crate) fn replica_set(obj: &mut Map<String, Value>) {
    if let Some(spec) = child_obj(obj, "spec") {
        default_val(spec, "replicas", json!(1));
        template(spec);
    }
    // ReplicaSetStatus.replicas has no omitempty, so a real server always shows it.
    if let Some(status) = child_obj(obj, "status") {
        default_val(status, "replicas", json!(0));
    }
}

/// `SetDefaults_DaemonSet`. The four counters of DaemonSetStatus without omitempty always show.
pub(crate) fn daemon_set(obj: &mut Map<String, Value>) {
    if let Some(spec) = child_obj(obj, "spec") {
        if let Some(strategy) = child_obj(spec, "updateStrategy") {
            default_str(strategy, "type", "RollingUpdate");
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(rolling) = child_obj(strategy, "rollingUpdate")
            {
                default_val(rolling, "maxUnavailable", json!(1));
                default_val(rolling, "maxSurge", json!(0));
            }
        }
        default_val(spec, "revisionHistoryLimit", json!(10));
        template(spec);
    }
    if let Some(status) = child_obj(obj, "status") {
        for counter in ["currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"] {
            default_val(status, counter, json!(0));
        }
    }
}

/// `SetDefaults_StatefulSet` with MaxUnavailableStatefulSet on (beta, hence default, in 1.35),
/// plus the claim templates' PersistentVolumeClaim defaults the generated defaulter applies.
pub(crate) fn stateful_set(obj: &mut Map<String, Value>) {
    if let Some(spec) = child_obj(obj, "spec") {
        default_str(spec, "podManagementPolicy", "OrderedReady");
        if let Some(strategy) = child_obj(spec, "updateStrategy") {
            // A rollingUpdate is made only together with the defaulted type: an explicit
            // RollingUpdate without one stays without (and means partition 0 to the controller).
            if is_unset_str(strategy.get("type")) {
                strategy.insert("type".into(), json!("RollingUpdate"));
                default_val(strategy, "rollingUpdate", json!({}));
            }
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
                && let Some(rolling) = strategy.get_mut("rollingUpdate").and_then(Value::as_object_mut)
            {
                default_val(rolling, "partition", json!(0));
                default_val(rolling, "maxUnavailable", json!(1));
            }
        }
        if let Some(policy) = child_obj(spec, "persistentVolumeClaimRetentionPolicy") {
            default_str(policy, "whenDeleted", "Retain");
            default_str(policy, "whenScaled", "Retain");
        }
        default_val(spec, "replicas", json!(1));
        default_val(spec, "revisionHistoryLimit", json!(10));
        template(spec);
        for claim in objects_mut(spec.get_mut("volumeClaimTemplates")) {
            if let Some(claim_spec) = child_obj(claim, "spec") {
                default_val(claim_spec, "volumeMode", json!("Filesystem"));
            }
            if let Some(status) = child_obj(claim, "status") {
                default_str(status, "phase", "Pending");
            }
        }
    }
    // StatefulSetStatus.replicas and .availableReplicas have no omitempty.
    if let Some(status) = child_obj(obj, "status") {
        default_val(status, "replicas", json!(0));
        default_val(status, "availableReplicas", json!(0));
    }
}

/// `SetDefaults_Job` (JobPodReplacementPolicy is GA). The selector and its template labels are
/// the registry's (`strategy`), which runs between two passes of this: the second pass is the
/// defaulting upstream applies whenever it reads the stored Job back, which is how a Job
/// created without labels shows the generated ones in `metadata.labels` too.
pub(crate) fn job(obj: &mut Map<String, Value>) {
    let template_labels = obj
        .get("spec")
        .and_then(|s| s.pointer("/template/metadata/labels"))
        .and_then(Value::as_object)
        .filter(|l| !l.is_empty())
        .cloned();
    if let Some(spec) = child_obj(obj, "spec") {
        let unset = |spec: &Map<String, Value>, key: &str| spec.get(key).is_none_or(Value::is_null);
        if unset(spec, "completions") && unset(spec, "parallelism") {
            spec.insert("completions".into(), json!(1));
        }
        default_val(spec, "parallelism", json!(1));
        let per_index = !unset(spec, "backoffLimitPerIndex");
        default_val(spec, "backoffLimit", json!(if per_index { i64::from(i32::MAX) } else { 6 }));
        default_val(spec, "completionMode", json!("NonIndexed"));
        default_val(spec, "suspend", json!(false));
        let replacement = if unset(spec, "podFailurePolicy") { "TerminatingOrFailed" } else { "Failed" };
        default_val(spec, "podReplacementPolicy", json!(replacement));
        default_val(spec, "manualSelector", json!(false));
        job_spec(spec);
    }
    if let Some(labels) = template_labels
        && let Some(meta) = child_obj(obj, "metadata")
        && is_empty_map(meta.get("labels"))
    {
        meta.insert("labels".into(), Value::Object(labels));
    }
    // Go writes a struct-valued status even when empty (omitempty does not omit structs).
    child_obj(obj, "status");
}

/// `SetDefaults_CronJob`. Its job template gets only what the generated defaulter reaches
/// inside it (the pod spec, pod failure policy patterns), not `SetDefaults_Job`, which is for
/// Job objects: the cron job controller's Jobs are defaulted when they are created.
pub(crate) fn cron_job(obj: &mut Map<String, Value>) {
    // Go writes a struct-valued status even when empty (omitempty does not omit structs).
    child_obj(obj, "status");
    let Some(spec) = child_obj(obj, "spec") else { return };
    default_str(spec, "concurrencyPolicy", "Allow");
    default_val(spec, "suspend", json!(false));
    default_val(spec, "successfulJobsHistoryLimit", json!(3));
    default_val(spec, "failedJobsHistoryLimit", json!(1));
    if let Some(job_spec_obj) =
        spec.get_mut("jobTemplate").and_then(|t| t.get_mut("spec")).and_then(Value::as_object_mut)
    {
        job_spec(job_spec_obj);
    }
}

/// What a JobSpec's nested types default to, in a Job or a CronJob's job template.
fn job_spec(spec: &mut Map<String, Value>) {
    template(spec);
    let rules = spec.get_mut("podFailurePolicy").and_then(|p| p.get_mut("rules"));
    for rule in objects_mut(rules) {
        for pattern in objects_mut(rule.get_mut("onPodConditions")) {
            default_str(pattern, "status", "True");
        }
    }
}

/// `SetDefaults_ReplicationController`: selector and labels from the template's labels.
pub(crate) fn replication_controller(obj: &mut Map<String, Value>) {
    // Go's `labels != nil`: any labels map, even an empty one, counts as given.
    let template_labels =
        obj.get("spec").and_then(|s| s.pointer("/template/metadata/labels")).and_then(Value::as_object).cloned();
    if let Some(labels) = template_labels {
        if let Some(spec) = child_obj(obj, "spec")
            && is_empty_map(spec.get("selector"))
        {
            spec.insert("selector".into(), Value::Object(labels.clone()));
        }
        if let Some(meta) = child_obj(obj, "metadata")
            && is_empty_map(meta.get("labels"))
        {
            meta.insert("labels".into(), Value::Object(labels));
        }
    }
    if let Some(spec) = child_obj(obj, "spec") {
        default_val(spec, "replicas", json!(1));
        template(spec);
    }
    // ReplicationControllerStatus.replicas has no omitempty.
    if let Some(status) = child_obj(obj, "status") {
        default_val(status, "replicas", json!(0));
    }
}

/// Templates get PodSpec defaults only: upstream keeps pod-only defaults (enableServiceLinks,
/// requests from limits, host ports) out of templates so they do not roll out new revisions.
fn template(spec: &mut Map<String, Value>) {
    if let Some(pod_spec) = spec.get_mut("template").and_then(|t| t.get_mut("spec")).and_then(Value::as_object_mut) {
        pod_spec_defaults(pod_spec);
    }
}

pub(crate) fn pod(obj: &mut Map<String, Value>) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        for list in ["containers", "initContainers"] {
            for c in objects_mut(spec.get_mut(list)) {
                requests_from_limits(c);
            }
        }
        default_val(spec, "enableServiceLinks", json!(true));
        if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
            for list in ["containers", "initContainers"] {
                for c in objects_mut(spec.get_mut(list)) {
                    for port in objects_mut(c.get_mut("ports")) {
                        if port.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0
                            && let Some(p) = port.get("containerPort").cloned()
                        {
                            port.insert("hostPort".into(), p);
                        }
                    }
                }
            }
        }
        pod_spec_defaults(spec);
    }
    // The pod registry sets these on create; keeping what is there lets updates pass through.
    let qos = obj.get("spec").map(qos_class);
    if let Some(status) = child_obj(obj, "status") {
        default_str(status, "phase", "Pending");
        if let Some(qos) = qos {
            default_str(status, "qosClass", qos);
        }
    }
}

fn requests_from_limits(container: &mut Map<String, Value>) {
    let Some(resources) = container.get_mut("resources").and_then(Value::as_object_mut) else { return };
    let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else { return };
    let Some(requests) = child_obj(resources, "requests") else { return };
    for (name, quantity) in limits {
        requests.entry(name).or_insert(quantity);
    }
}

fn pod_spec_defaults(spec: &mut Map<String, Value>) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default_val(spec, "securityContext", json!({}));
    default_val(spec, "terminationGracePeriodSeconds", json!(30));
    default_str(spec, "schedulerName", "default-scheduler");
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for c in objects_mut(spec.get_mut(list)) {
            container(c);
        }
    }
    for v in objects_mut(spec.get_mut("volumes")) {
        volume(v);
    }
}

fn container(c: &mut Map<String, Value>) {
    if is_unset_str(c.get("imagePullPolicy")) {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = if pulls_latest(image) { "Always" } else { "IfNotPresent" };
        c.insert("imagePullPolicy".into(), json!(policy));
    }
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    // ResourceRequirements is a non-pointer struct, so a real server always prints it.
    default_val(c, "resources", json!({}));
    for port in objects_mut(c.get_mut("ports")) {
        default_str(port, "protocol", "TCP");
    }
    for env in objects_mut(c.get_mut("env")) {
        if let Some(field_ref) =
            env.get_mut("valueFrom").and_then(|v| v.get_mut("fieldRef")).and_then(Value::as_object_mut)
        {
            default_str(field_ref, "apiVersion", "v1");
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            default_val(p, "timeoutSeconds", json!(1));
            default_val(p, "periodSeconds", json!(10));
            default_val(p, "successThreshold", json!(1));
            default_val(p, "failureThreshold", json!(3));
            handler(p);
            if let Some(grpc) = p.get_mut("grpc").and_then(Value::as_object_mut) {
                default_val(grpc, "service", json!(""));
            }
        }
    }
    if let Some(lifecycle) = c.get_mut("lifecycle").and_then(Value::as_object_mut) {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = lifecycle.get_mut(hook).and_then(Value::as_object_mut) {
                handler(h);
            }
        }
    }
}

fn handler(h: &mut Map<String, Value>) {
    if let Some(get) = h.get_mut("httpGet").and_then(Value::as_object_mut) {
        default_str(get, "path", "/");
        default_str(get, "scheme", "HTTP");
    }
}

/// The tag rule of `parsers.ParseImageName`: a reference with neither tag nor digest means
/// `:latest`, and only `latest` pulls every time.
fn pulls_latest(image: &str) -> bool {
    if image.is_empty() {
        return false;
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last_segment = name.rsplit('/').next().unwrap_or(name);
    match last_segment.rsplit_once(':') {
        Some((_, tag)) => tag == "latest",
        None => digest.is_none(),
    }
}

/// Mode 0644, the default upstream gives projected files.
const DEFAULT_MODE: i64 = 0o644;

fn volume(v: &mut Map<String, Value>) {
    if v.iter().all(|(k, val)| k == "name" || val.is_null()) {
        v.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = v.get_mut(source).and_then(Value::as_object_mut) {
            default_val(s, "defaultMode", json!(DEFAULT_MODE));
        }
    }
    if let Some(host_path) = v.get_mut("hostPath").and_then(Value::as_object_mut) {
        default_val(host_path, "type", json!(""));
    }
    if let Some(items) = v.get_mut("downwardAPI").and_then(|d| d.get_mut("items")) {
        field_ref_items(Some(items));
    }
    let sources = v.get_mut("projected").and_then(|p| p.get_mut("sources"));
    for source in objects_mut(sources) {
        field_ref_items(source.get_mut("downwardAPI").and_then(|d| d.get_mut("items")));
        if let Some(token) = source.get_mut("serviceAccountToken").and_then(Value::as_object_mut) {
            default_val(token, "expirationSeconds", json!(3600));
        }
    }
    let claim_spec =
        v.get_mut("ephemeral").and_then(|e| e.get_mut("volumeClaimTemplate")).and_then(|t| t.get_mut("spec"));
    if let Some(claim_spec) = claim_spec.and_then(Value::as_object_mut) {
        default_val(claim_spec, "volumeMode", json!("Filesystem"));
    }
}

fn field_ref_items(items: Option<&mut Value>) {
    for item in objects_mut(items) {
        if let Some(field_ref) = item.get_mut("fieldRef").and_then(Value::as_object_mut) {
            default_str(field_ref, "apiVersion", "v1");
        }
    }
}

pub(crate) fn namespace(obj: &mut Map<String, Value>) {
    let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).map(str::to_owned);
    let deleting = obj.get("metadata").and_then(|m| m.get("deletionTimestamp")).is_some_and(|t| !t.is_null());
    if let Some(name) = name.filter(|n| !n.is_empty())
        && let Some(labels) = child_obj(obj, "metadata").and_then(|m| child_obj(m, "labels"))
    {
        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
    // Upstream adds the finalizer on create only, since the namespace controller removes it
    // (through /finalize) while deleting. `apply` cannot tell create from update, so it adds it
    // to any namespace not being deleted: a live namespace has it anyway, and a finalized one is
    // never given it back.
    if !deleting
        && let Some(spec) = child_obj(obj, "spec")
        && let Some(Value::Array(finalizers)) = Some(spec.entry("finalizers").or_insert(json!([])))
        && !finalizers.iter().any(|f| f == "kubernetes")
    {
        finalizers.push(json!("kubernetes"));
    }
    if let Some(status) = child_obj(obj, "status") {
        default_str(status, "phase", "Active");
    }
}

pub(crate) fn secret(obj: &mut Map<String, Value>) {
    default_str(obj, "type", "Opaque");
    // stringData is write-only: conversion merges it into data, overriding same-named keys.
    // Left in place when it is not all strings, so validation can report it.
    let Some(string_data) = obj.get("stringData").and_then(Value::as_object) else { return };
    let Some(pairs) = string_data
        .iter()
        .map(|(k, v)| v.as_str().map(|s| (k.clone(), base64(s.as_bytes()))))
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    if obj.get("data").is_some_and(|d| !d.is_object() && !d.is_null()) {
        return;
    }
    obj.remove("stringData");
    if let Some(data) = child_obj(obj, "data") {
        for (k, v) in pairs {
            data.insert(k, json!(v));
        }
    }
}

pub(crate) fn node(obj: &mut Map<String, Value>) {
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else { return };
    if status.get("allocatable").is_none_or(Value::is_null)
        && let Some(capacity) = status.get("capacity").filter(|c| c.is_object()).cloned()
    {
        status.insert("allocatable".into(), capacity);
    }
}

/// `SetDefaults_Service`. Addresses (clusterIP, nodePorts) are allocated by `services`, not here.
pub(crate) fn service(obj: &mut Map<String, Value>) {
    if let Some(spec) = child_obj(obj, "spec") {
        default_str(spec, "sessionAffinity", "None");
        match spec.get("sessionAffinity").and_then(Value::as_str) {
            Some("None") => {
                spec.remove("sessionAffinityConfig");
            }
            Some("ClientIP")
                if spec
                    .get("sessionAffinityConfig")
                    .and_then(|c| c.pointer("/clientIP/timeoutSeconds"))
                    .is_none_or(Value::is_null) =>
            {
                spec.insert("sessionAffinityConfig".into(), json!({"clientIP": {"timeoutSeconds": 10800}}));
            }
            _ => {}
        }
        default_str(spec, "type", "ClusterIP");
        for port in objects_mut(spec.get_mut("ports")) {
            default_str(port, "protocol", "TCP");
            let unset = match port.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_i64() == Some(0),
                Some(Value::String(s)) => s.is_empty(),
                _ => false,
            };
            if unset && let Some(p) = port.get("port").filter(|p| p.is_i64()).cloned() {
                port.insert("targetPort".into(), p);
            }
        }
        let kind = spec.get("type").and_then(Value::as_str).unwrap_or("").to_owned();
        let has_external_ips = spec.get("externalIPs").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
        let externally_accessible =
            matches!(kind.as_str(), "LoadBalancer" | "NodePort") || (kind == "ClusterIP" && has_external_ips);
        if externally_accessible {
            default_str(spec, "externalTrafficPolicy", "Cluster");
        }
        if matches!(kind.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer") {
            default_val(spec, "internalTrafficPolicy", json!("Cluster"));
        }
        if kind == "LoadBalancer" {
            default_val(spec, "allocateLoadBalancerNodePorts", json!(true));
        }
    }
    // ServiceStatus.loadBalancer is a struct without omitempty: always shown, if only as {}.
    if let Some(status) = child_obj(obj, "status") {
        default_val(status, "loadBalancer", json!({}));
    }
}

/// PodDisruptionBudgetStatus's counters have no omitempty, so a real server always shows them.
pub(crate) fn pod_disruption_budget(obj: &mut Map<String, Value>) {
    if let Some(status) = child_obj(obj, "status") {
        for counter in ["disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"] {
            default_val(status, counter, json!(0));
        }
    }
}

/// `SetDefaults_RoleBinding`, `SetDefaults_ClusterRoleBinding` and `SetDefaults_Subject`: the
/// RBAC group where it goes without saying.
pub(crate) fn binding(obj: &mut Map<String, Value>) {
    const RBAC: &str = "rbac.authorization.k8s.io";
    if let Some(role_ref) = child_obj(obj, "roleRef") {
        default_str(role_ref, "apiGroup", RBAC);
    }
    for subject in objects_mut(obj.get_mut("subjects")) {
        // A ServiceAccount's group is "", which JSON omits.
        if matches!(subject.get("kind").and_then(Value::as_str), Some("User" | "Group")) {
            default_str(subject, "apiGroup", RBAC);
        }
    }
}

pub(crate) fn crd(obj: &mut Map<String, Value>) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
        default_str(names, "singular", &kind.to_lowercase());
        if !kind.is_empty() {
            default_str(names, "listKind", &format!("{kind}List"));
        }
    }
    default_val(spec, "conversion", json!({"strategy": "None"}));
    if let Some(port_owner) = spec
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(|w| w.get_mut("clientConfig"))
        .and_then(|c| c.get_mut("service"))
        .and_then(Value::as_object_mut)
    {
        default_val(port_owner, "port", json!(443));
    }
    let storage = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").cloned());
    // The registry records every version ever used for storage, on create and on update, so
    // that a storage-version switch passes validation and migrations know what to rewrite.
    if let Some(storage) = storage
        && let Some(status) = child_obj(obj, "status")
        && let Some(Value::Array(stored)) = Some(status.entry("storedVersions").or_insert(json!([])))
        && !stored.contains(&storage)
    {
        stored.push(storage);
    }
}

/// The child object `key`, created when absent or null; None when it holds something else.
pub(crate) fn child_obj<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    let slot = map.entry(key.to_owned()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = json!({});
    }
    slot.as_object_mut()
}

/// Objects of an array field, skipping anything that is not an object.
fn objects_mut(list: Option<&mut Value>) -> impl Iterator<Item = &mut Map<String, Value>> {
    list.and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut)
}

fn default_val(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_owned(), value);
    }
}

/// Go's string defaulting treats "" as unset.
fn default_str(map: &mut Map<String, Value>, key: &str, value: &str) {
    if is_unset_str(map.get(key)) {
        map.insert(key.to_owned(), json!(value));
    }
}

/// An absent, null or empty map (`len(m) == 0`); a value of another type is not, so that
/// defaulting never replaces what validation must report.
fn is_empty_map(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(_) => false,
    }
}

fn is_unset_str(v: Option<&Value>) -> bool {
    v.is_none_or(|v| v.is_null() || v.as_str() == Some(""))
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let byte = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (byte(0) << 16) | (byte(1) << 8) | byte(2);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A resource.Quantity in units of 10^-9 (JSON numbers are accepted too); None when it does
/// not parse. Precision below a nano-unit is irrelevant for QoS comparisons.
fn quantity_nanos(v: &Value) -> Option<i128> {
    match v {
        Value::String(s) => wasmcm_core::quantity::nanos(s),
        Value::Number(n) => n.as_f64().map(|f| (f * 1e9).ceil() as i128),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `object` defaulted as the registered type of `api_version` and `kind` defaults it
    /// (unknown kinds: as the generic registry, which leaves it alone).
    fn applied(api_version: &str, kind: &str, object: Value) -> Value {
        let mut object = object;
        let registered = crate::registry::resources::Registry::default().by_kind(api_version, kind);
        registered.map_or(&crate::registry::strategy::Strategy::GENERIC, |t| t.strategy).default(&mut object);
        object
    }

    fn deployment_json() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}
                }
            }
        })
    }

    #[test]
    fn deployment_defaults() {
        let d = applied("apps/v1", "Deployment", deployment_json());
        let cases: &[(&str, Value)] = &[
            ("/spec/replicas", json!(1)),
            ("/spec/strategy/type", json!("RollingUpdate")),
            ("/spec/strategy/rollingUpdate/maxUnavailable", json!("25%")),
            ("/spec/strategy/rollingUpdate/maxSurge", json!("25%")),
            ("/spec/revisionHistoryLimit", json!(10)),
            ("/spec/progressDeadlineSeconds", json!(600)),
            ("/spec/template/spec/restartPolicy", json!("Always")),
            ("/spec/template/spec/dnsPolicy", json!("ClusterFirst")),
            ("/spec/template/spec/terminationGracePeriodSeconds", json!(30)),
            ("/spec/template/spec/schedulerName", json!("default-scheduler")),
            ("/spec/template/spec/securityContext", json!({})),
            ("/spec/template/spec/containers/0/imagePullPolicy", json!("IfNotPresent")),
            ("/spec/template/spec/containers/0/terminationMessagePath", json!("/dev/termination-log")),
            ("/spec/template/spec/containers/0/terminationMessagePolicy", json!("File")),
            ("/spec/template/spec/containers/0/resources", json!({})),
            ("/spec/template/spec/containers/0/ports/0/protocol", json!("TCP")),
        ];
        for (pointer, want) in cases {
            assert_eq!(d.pointer(pointer), Some(want), "{pointer}");
        }
        // Pod-only defaults stay out of templates.
        assert_eq!(d.pointer("/spec/template/spec/enableServiceLinks"), None);
        assert_eq!(d.pointer("/status"), None);
    }

    #[test]
    fn deployment_keeps_given_values() {
        let mut d = deployment_json();
        d["spec"]["replicas"] = json!(0);
        d["spec"]["strategy"] = json!({"type": "Recreate"});
        d["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        let d = applied("apps/v1", "Deployment", d);
        assert_eq!(d["spec"]["replicas"], json!(0));
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], json!("Never"));

        let mut d = deployment_json();
        d["spec"]["strategy"] = json!({"rollingUpdate": {"maxSurge": 0}});
        let d = applied("apps/v1", "Deployment", d);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "25%"}})
        );
    }

    #[test]
    fn replica_set_defaults() {
        let mut rs = deployment_json();
        rs["kind"] = json!("ReplicaSet");
        let rs = applied("apps/v1", "ReplicaSet", rs);
        assert_eq!(rs["spec"]["replicas"], json!(1));
        assert_eq!(rs["spec"]["template"]["spec"]["schedulerName"], json!("default-scheduler"));
        assert_eq!(rs["status"], json!({"replicas": 0}));
        assert_eq!(rs["spec"].get("strategy"), None);
    }

    #[test]
    fn pod_defaults() {
        let p = applied(
            "v1",
            "Pod",
            json!({"metadata": {"name": "p"}, "spec": {
                "hostNetwork": true,
                "containers": [{"name": "a", "image": "busybox", "ports": [{"containerPort": 8080}],
                    "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                    "livenessProbe": {"httpGet": {"port": 80}},
                    "lifecycle": {"preStop": {"httpGet": {"port": 80}}}}],
                "initContainers": [{"name": "init", "image": "busybox:latest"}],
                "volumes": [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "c"}},
                    {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]
            }}),
        );
        let cases: &[(&str, Value)] = &[
            ("/spec/enableServiceLinks", json!(true)),
            ("/spec/restartPolicy", json!("Always")),
            ("/spec/containers/0/imagePullPolicy", json!("Always")),
            ("/spec/initContainers/0/imagePullPolicy", json!("Always")),
            ("/spec/initContainers/0/resources", json!({})),
            ("/spec/containers/0/ports/0/hostPort", json!(8080)),
            ("/spec/containers/0/env/0/valueFrom/fieldRef/apiVersion", json!("v1")),
            ("/spec/containers/0/resources/requests", json!({"cpu": "1", "memory": "1Gi"})),
            (
                "/spec/containers/0/livenessProbe",
                json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}),
            ),
            ("/spec/containers/0/lifecycle/preStop/httpGet/scheme", json!("HTTP")),
            ("/spec/volumes/0/emptyDir", json!({})),
            ("/spec/volumes/1/configMap/defaultMode", json!(420)),
            ("/spec/volumes/1/emptyDir", Value::Null),
            ("/spec/volumes/2/projected/defaultMode", json!(420)),
            ("/spec/volumes/2/projected/sources/0/serviceAccountToken/expirationSeconds", json!(3600)),
            ("/status/phase", json!("Pending")),
            // The init container has no limits, which upstream counts against Guaranteed.
            ("/status/qosClass", json!("Burstable")),
        ];
        for (pointer, want) in cases {
            assert_eq!(p.pointer(pointer).unwrap_or(&Value::Null), want, "{pointer}");
        }
    }

    #[test]
    fn pod_status_is_kept() {
        let p = applied(
            "v1",
            "Pod",
            json!({"spec": {"containers": [{"name": "a", "image": "x"}]},
                "status": {"phase": "Running", "qosClass": "Burstable"}}),
        );
        assert_eq!(p["status"], json!({"phase": "Running", "qosClass": "Burstable"}));
    }

    #[test]
    fn image_pull_policy() {
        let cases = [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("localhost:5000/nginx", "Always"),
            ("localhost:5000/nginx:v1", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
            ("nginx:latest@sha256:abc", "Always"),
            ("", "IfNotPresent"),
        ];
        for (image, want) in cases {
            let p = applied("v1", "Pod", json!({"spec": {"containers": [{"name": "a", "image": image}]}}));
            assert_eq!(p["spec"]["containers"][0]["imagePullPolicy"], json!(want), "{image}");
        }
        let p = applied("v1", "Pod", json!({"spec": {"containers": [{"image": "nginx", "imagePullPolicy": "Never"}]}}));
        assert_eq!(p["spec"]["containers"][0]["imagePullPolicy"], json!("Never"));
    }

    #[test]
    fn qos() {
        let c = |resources: Value| json!({"name": "c", "image": "i", "resources": resources});
        let both = |req: Value, lim: Value| json!({"containers": [c(json!({"requests": req, "limits": lim}))]});
        let cases = [
            (json!({"containers": [c(json!({}))]}), "BestEffort"),
            (json!({"containers": [{"name": "c"}]}), "BestEffort"),
            (json!({"containers": [c(json!({"requests": {"cpu": "0"}}))]}), "BestEffort"),
            (json!({"containers": [c(json!({"limits": {"cpu": "1", "memory": "1Gi"}}))]}), "Guaranteed"),
            (both(json!({"cpu": "1000m", "memory": "1024Mi"}), json!({"cpu": "1", "memory": "1Gi"})), "Guaranteed"),
            (both(json!({"cpu": "500m", "memory": "1Gi"}), json!({"cpu": "1", "memory": "1Gi"})), "Burstable"),
            (json!({"containers": [c(json!({"limits": {"cpu": "1"}}))]}), "Burstable"),
            (json!({"containers": [c(json!({"requests": {"memory": "1Gi"}}))]}), "Burstable"),
            (json!({"containers": [c(json!({"limits": {"cpu": "1", "memory": "1Gi"}})), c(json!({}))]}), "Burstable"),
            (
                json!({"containers": [c(json!({"limits": {"cpu": "1", "memory": "1Gi"}}))],
                       "initContainers": [c(json!({"limits": {"cpu": "2", "memory": "1G"}}))]}),
                "Guaranteed",
            ),
            (
                json!({"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}, "containers": [c(json!({}))]}),
                "Guaranteed",
            ),
            (json!({"containers": [c(json!({"requests": {"ephemeral-storage": "1Gi"}}))]}), "BestEffort"),
            (json!({"containers": "nonsense"}), "BestEffort"),
            (json!(null), "BestEffort"),
        ];
        for (spec, want) in cases {
            assert_eq!(qos_class(&spec), want, "{spec}");
        }
    }

    #[test]
    fn quantities() {
        let cases = [
            ("1", Some(1_000_000_000)),
            ("100m", Some(100_000_000)),
            ("0.5", Some(500_000_000)),
            ("1Ki", Some(1_024_000_000_000)),
            ("1k", Some(1_000_000_000_000)),
            ("1e3", Some(1_000_000_000_000)),
            ("1E-3", Some(1_000_000)),
            ("-2", Some(-2_000_000_000)),
            ("1n", Some(1)),
            (".5", Some(500_000_000)),
            ("", None),
            ("abc", None),
            ("1.2.3", None),
            ("1Q", None),
            ("1e", None),
        ];
        for (q, want) in cases {
            assert_eq!(quantity_nanos(&json!(q)), want, "{q}");
        }
        assert_eq!(quantity_nanos(&json!(2)), Some(2_000_000_000));
    }

    #[test]
    fn namespace_defaults() {
        let ns = applied("v1", "Namespace", json!({"metadata": {"name": "team-a"}}));
        assert_eq!(ns["spec"], json!({"finalizers": ["kubernetes"]}));
        assert_eq!(ns["status"], json!({"phase": "Active"}));
        assert_eq!(ns["metadata"]["labels"], json!({"kubernetes.io/metadata.name": "team-a"}));

        // A namespace being finalized is not given its finalizer back.
        let ns = applied(
            "v1",
            "Namespace",
            json!({"metadata": {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z"}, "spec": {},
                "status": {"phase": "Terminating"}}),
        );
        assert_eq!(ns["spec"], json!({}));
        assert_eq!(ns["status"]["phase"], json!("Terminating"));

        let ns = applied("v1", "Namespace", json!({"metadata": {"generateName": "x-"}, "spec": {"finalizers": []}}));
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(ns["metadata"].get("labels"), None);
        let ns = applied("v1", "Namespace", json!({"spec": {"finalizers": ["example.com/x", "kubernetes"]}}));
        assert_eq!(ns["spec"]["finalizers"], json!(["example.com/x", "kubernetes"]));
        let ns = applied("v1", "Namespace", json!({"spec": {"finalizers": "odd"}}));
        assert_eq!(ns["spec"]["finalizers"], json!("odd"));
    }

    #[test]
    fn secret_defaults() {
        let s = applied("v1", "Secret", json!({"metadata": {"name": "s"}}));
        assert_eq!(s["type"], json!("Opaque"));
        let s = applied("v1", "Secret", json!({"type": "kubernetes.io/tls"}));
        assert_eq!(s["type"], json!("kubernetes.io/tls"));

        let s = applied(
            "v1",
            "Secret",
            json!({"data": {"a": "eA==", "b": "eA=="}, "stringData": {"b": "hello", "c": "ab", "d": ""}}),
        );
        assert_eq!(s["data"], json!({"a": "eA==", "b": "aGVsbG8=", "c": "YWI=", "d": ""}));
        assert_eq!(s.get("stringData"), None);

        let s = applied("v1", "Secret", json!({"stringData": {"a": 1}}));
        assert_eq!(s["stringData"], json!({"a": 1}));
    }

    #[test]
    fn node_and_crd_defaults() {
        let n = applied("v1", "Node", json!({"status": {"capacity": {"cpu": "4"}}}));
        assert_eq!(n["status"]["allocatable"], json!({"cpu": "4"}));
        let n = applied("v1", "Node", json!({"metadata": {"name": "n"}}));
        assert_eq!(n, json!({"metadata": {"name": "n"}}));

        let crd = applied(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            json!({"spec": {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true}]}}),
        );
        assert_eq!(crd["spec"]["names"]["singular"], json!("widget"));
        assert_eq!(crd["spec"]["names"]["listKind"], json!("WidgetList"));
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));

        // Switching the storage version on update records the new one too.
        let mut crd = crd;
        crd["spec"]["versions"] = json!([{"name": "v1", "served": true, "storage": false},
            {"name": "v2", "served": true, "storage": true}]);
        let crd = applied("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd);
        assert_eq!(crd["status"]["storedVersions"], json!(["v1", "v2"]));
    }

    #[test]
    fn odd_json_is_left_alone() {
        let cases = [
            ("apps/v1", "Deployment", json!({"spec": 5})),
            (
                "apps/v1",
                "Deployment",
                json!({"spec": {"strategy": "x", "template": {"spec": {"containers": [1, "a", null]}}}}),
            ),
            ("v1", "Pod", json!({"spec": {"containers": {"a": 1}, "volumes": [3]}, "status": "x"})),
            ("v1", "Pod", json!("just a string")),
            ("v1", "Namespace", json!({"metadata": [], "spec": 1, "status": 2})),
            ("v1", "Secret", json!({"data": 3, "stringData": {"a": "b"}})),
            ("v1", "Node", json!({"status": {"capacity": 3}})),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition", json!({"spec": {"names": 1, "versions": 2}})),
        ];
        for (api_version, kind, object) in cases {
            // Whatever happens, no panic and nothing of the wrong shape gets replaced.
            let out = applied(api_version, kind, object.clone());
            if !object.is_object() {
                assert_eq!(out, object);
            }
        }
        assert_eq!(applied("example.com/v1", "Widget", json!({"spec": {}})), json!({"spec": {}}));
    }

    #[test]
    fn base64_encodes() {
        for (raw, want) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foobar", "Zm9vYmFy")] {
            assert_eq!(base64(raw.as_bytes()), want);
        }
    }
}
