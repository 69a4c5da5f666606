//! The real kubectl v1.35 against the embedded cluster. kubectl is installed by
//! `scripts/install-kubectl.sh` (which `make test` runs first); without it these tests fail,
//! they never skip.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use wasmcm_apiserver::Cluster;

/// A cluster and the real kubectl configured for it (shared by the modules that drive kubectl).
pub(crate) struct Env {
    pub(crate) kubeconfig: PathBuf,
    _cluster: Cluster,
    _runtime: tokio::runtime::Runtime,
}

pub(crate) fn env() -> Env {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let cluster = runtime.block_on(Cluster::start(wasmcm_test_support::quick_config())).expect("cluster starts");
    Env { kubeconfig: cluster.kubeconfig.clone(), _cluster: cluster, _runtime: runtime }
}

impl Env {
    pub(crate) fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        wasmcm_test_support::kubectl(&self.kubeconfig, args, stdin)
    }

    /// Runs kubectl and returns stdout; fails the test with stderr on a non-zero exit.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        self.ok_stdin(args, None)
    }

    /// [`Env::ok`] with `stdin` piped in.
    pub(crate) fn ok_stdin(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin);
        assert!(out.status.success(), "kubectl {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn apply_stdin(&self, verb: &[&str], manifest: &str) -> String {
        let mut args = verb.to_vec();
        args.extend(["-f", "-"]);
        let out = self.run(&args, Some(manifest));
        assert!(out.status.success(), "kubectl {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&a)).expect("kubectl -o json prints JSON")
    }

    fn eventually(&self, what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !f() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        ports:
        - containerPort: 80
";

const POD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: solo
  labels: {app: solo}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox:1.36
";

#[test]
fn version_api_resources_and_api_versions() {
    let e = env();
    let v = e.ok(&["version", "-o", "json"]);
    let v: Value = serde_json::from_str(&v).unwrap();
    assert_eq!(v["serverVersion"]["major"], "1");
    assert!(v["clientVersion"]["gitVersion"].as_str().unwrap().starts_with("v1.35"));
    let resources = e.ok(&["api-resources"]);
    for line in ["deployments", "replicasets", "pods", "leases", "customresourcedefinitions"] {
        assert!(resources.contains(line), "{line} in {resources}");
    }
    let versions = e.ok(&["api-versions"]);
    for gv in ["apps/v1", "v1", "coordination.k8s.io/v1", "events.k8s.io/v1", "apiextensions.k8s.io/v1"] {
        assert!(versions.lines().any(|l| l == gv), "{gv} in {versions}");
    }
}

#[test]
fn a_new_cluster_prints_as_a_real_one_does() {
    let e = env();
    e.eventually("three Ready nodes", || {
        let nodes = e.ok(&["get", "nodes", "--no-headers"]);
        nodes.lines().count() == 3 && nodes.lines().all(|l| l.split_whitespace().nth(1) == Some("Ready"))
    });
    let schedulable = e.ok(&["get", "nodes", "--field-selector", "spec.unschedulable=false", "-o", "name"]);
    assert_eq!(schedulable.lines().count(), 3, "{schedulable}");
    let address = e._cluster.addr.to_string();
    let endpoints = e.ok(&["get", "endpoints", "kubernetes", "--no-headers"]);
    assert_eq!(endpoints.split_whitespace().take(2).collect::<Vec<_>>(), ["kubernetes", address.as_str()]);
    let slices = e.ok(&["get", "endpointslices", "kubernetes", "--no-headers"]);
    let port = e._cluster.addr.port().to_string();
    let ip = e._cluster.addr.ip().to_string();
    assert_eq!(
        slices.split_whitespace().take(4).collect::<Vec<_>>(),
        ["kubernetes", "IPv4", port.as_str(), ip.as_str()]
    );
    let service = e.ok(&["get", "service", "kubernetes", "--no-headers"]);
    assert_eq!(
        service.split_whitespace().take(5).collect::<Vec<_>>(),
        ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"]
    );
    let roles = e.ok(&["get", "clusterroles", "cluster-admin", "view", "-o", "name"]);
    assert_eq!(
        roles,
        "clusterrole.rbac.authorization.k8s.io/cluster-admin\nclusterrole.rbac.authorization.k8s.io/view\n"
    );
    let out = e.run(&["delete", "namespace", "kube-system"], None);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error from server (Forbidden): namespaces \"kube-system\" is forbidden: this namespace may not be deleted"
    );
    let cm = e.ok(&["create", "configmap", "c"]);
    assert_eq!(cm.trim(), "configmap/c created");
    assert_eq!(e.ok(&["delete", "configmap", "c"]).trim(), "configmap \"c\" deleted from default namespace");
}

#[test]
fn create_apply_replace_get_and_delete_from_files() {
    let e = env();
    assert!(e.apply_stdin(&["create"], POD).contains("pod/solo created"));
    e.eventually("the pod to run", || e.json(&["get", "pod", "solo"])["status"]["phase"] == "Running");

    // Table output comes from the server's printers.
    let table = e.ok(&["get", "pods"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert!(table.lines().nth(1).unwrap().starts_with("solo"), "{table}");
    let wide = e.ok(&["get", "pods", "-o", "wide"]);
    assert!(wide.contains("NODE") && wide.contains("wasmcm-node-"), "{wide}");
    let yaml = e.ok(&["get", "pod", "solo", "-o", "yaml"]);
    assert!(yaml.contains("name: solo") && yaml.contains("phase: Running"), "{yaml}");
    assert_eq!(e.ok(&["get", "pods", "-l", "app=solo", "-o", "name"]).trim(), "pod/solo");
    assert_eq!(e.ok(&["get", "pods", "-l", "app=other", "-o", "name"]).trim(), "");

    assert!(e.apply_stdin(&["apply"], DEPLOYMENT).contains("deployment.apps/web created"));
    let changed = DEPLOYMENT.replace("replicas: 2", "replicas: 3");
    assert!(e.apply_stdin(&["apply"], &changed).contains("deployment.apps/web configured"));
    assert_eq!(e.json(&["get", "deploy", "web"])["spec"]["replicas"], 3);
    let replaced = DEPLOYMENT.replace("replicas: 2", "replicas: 5");
    assert!(e.apply_stdin(&["replace"], &replaced).contains("deployment.apps/web replaced"));
    assert_eq!(e.json(&["get", "deploy", "web"])["spec"]["replicas"], 5);

    assert!(e.ok(&["delete", "pod", "solo"]).contains("pod \"solo\" deleted"));
    e.ok(&["wait", "--for=delete", "pod/solo", "--timeout=30s"]);
}

/// kubectl's typed `create <kind>` commands send protobuf bodies, not JSON.
#[test]
fn typed_create_commands() {
    let e = env();
    assert!(e.ok(&["create", "namespace", "team"]).contains("namespace/team created"));
    e.ok(&["create", "deployment", "api", "--image=nginx:1.27", "--replicas=3", "-n", "team"]);
    e.ok(&["create", "configmap", "cfg", "--from-literal=a=b"]);
    e.ok(&["create", "secret", "generic", "s", "--from-literal=k=v"]);
    e.ok(&["create", "serviceaccount", "robot"]);

    assert_eq!(e.json(&["get", "namespace", "team"])["metadata"]["name"], "team");
    let deployment = e.json(&["get", "deployment", "api", "-n", "team"]);
    assert_eq!(deployment["spec"]["replicas"], 3);
    assert_eq!(deployment["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27");
    assert_eq!(deployment["spec"]["selector"]["matchLabels"]["app"], "api");
    assert_eq!(e.json(&["get", "configmap", "cfg"])["data"]["a"], "b");
    assert_eq!(e.json(&["get", "secret", "s"])["data"]["k"], "dg==");
    assert_eq!(e.json(&["get", "serviceaccount", "robot"])["metadata"]["name"], "robot");
}

#[test]
fn label_annotate_patch_and_scale() {
    let e = env();
    e.apply_stdin(&["create"], DEPLOYMENT);
    e.ok(&["label", "deploy", "web", "tier=front"]);
    e.ok(&["annotate", "deploy", "web", "owner=platform"]);
    let d = e.json(&["get", "deploy", "web"]);
    assert_eq!(d["metadata"]["labels"]["tier"], "front");
    assert_eq!(d["metadata"]["annotations"]["owner"], "platform");

    e.ok(&["patch", "deploy", "web", "--type", "merge", "-p", r#"{"spec":{"minReadySeconds":5}}"#]);
    e.ok(&[
        "patch",
        "deploy",
        "web",
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/spec/replicas","value":4}]"#,
    ]);
    e.ok(&[
        "patch",
        "deploy",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.28"}]}}}}"#,
    ]);
    let d = e.json(&["get", "deploy", "web"]);
    assert_eq!(d["spec"]["minReadySeconds"], 5);
    assert_eq!(d["spec"]["replicas"], 4);
    let containers = &d["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers.as_array().unwrap().len(), 1, "strategic merge keeps one container: {containers}");
    assert_eq!(containers[0]["image"], "nginx:1.28");
    assert_eq!(containers[0]["ports"][0]["containerPort"], 80, "and keeps its other fields");

    e.ok(&["scale", "deploy", "web", "--replicas=7"]);
    assert_eq!(e.json(&["get", "deploy", "web"])["spec"]["replicas"], 7);
    e.ok(&["set", "image", "deploy/web", "app=nginx:1.29"]);
    assert_eq!(e.json(&["get", "deploy", "web"])["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.29");
}

#[test]
fn rollout_pause_resume_and_restart() {
    let e = env();
    e.apply_stdin(&["create"], DEPLOYMENT);
    e.ok(&["rollout", "pause", "deploy/web"]);
    assert_eq!(e.json(&["get", "deploy", "web"])["spec"]["paused"], true);
    e.ok(&["rollout", "resume", "deploy/web"]);
    assert!(e.json(&["get", "deploy", "web"])["spec"].get("paused").is_none_or(|p| p == false));
    e.ok(&["rollout", "restart", "deploy/web"]);
    let d = e.json(&["get", "deploy", "web"]);
    assert!(d["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"].is_string(), "{d}");
    assert_eq!(d["metadata"]["generation"], 4, "pause, resume and restart each change the spec");
}

#[test]
fn describe_a_deployment_and_its_defaults() {
    let e = env();
    e.apply_stdin(&["create", "--namespace=default"], DEPLOYMENT);
    let d = e.json(&["get", "deploy", "web"]);
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate", "defaulted by the server");
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "IfNotPresent");
    let described = e.ok(&["describe", "deployment", "web"]);
    for field in
        ["Name:", "web", "Namespace:", "default", "Replicas:", "Image:", "nginx:1.27", "StrategyType:", "RollingUpdate"]
    {
        assert!(described.contains(field), "{field} in {described}");
    }
}

#[test]
fn delete_cascades_unless_orphaned_and_wait_for_conditions() {
    let e = env();
    e.apply_stdin(&["create"], POD);
    e.ok(&["wait", "--for=condition=Ready", "pod/solo", "--timeout=30s"]);
    let cm = |name: &str, owner_uid: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  ownerReferences:\n  - apiVersion: v1\n    kind: Pod\n    name: solo\n    uid: {owner_uid}\n"
        )
    };
    let uid = e.json(&["get", "pod", "solo"])["metadata"]["uid"].as_str().unwrap().to_string();
    e.apply_stdin(&["create"], &cm("dependent", &uid));
    e.ok(&["delete", "pod", "solo", "--cascade=orphan"]);
    e.ok(&["wait", "--for=delete", "pod/solo", "--timeout=30s"]);
    let orphan = e.json(&["get", "configmap", "dependent"]);
    assert!(
        orphan["metadata"].get("ownerReferences").is_none_or(|r| r.as_array().is_some_and(Vec::is_empty)),
        "{orphan}"
    );

    e.apply_stdin(&["create"], POD);
    let uid = e.json(&["get", "pod", "solo"])["metadata"]["uid"].as_str().unwrap().to_string();
    e.apply_stdin(&["create"], &cm("collected", &uid));
    e.ok(&["delete", "pod", "solo"]);
    e.ok(&["wait", "--for=delete", "configmap/collected", "--timeout=30s"]);
}

#[test]
fn get_watch_streams_changes() {
    let e = env();
    let mut child = Command::new(wasmcm_test_support::kubectl_path())
        .args(["get", "pods", "-w", "--request-timeout=20s"])
        .env("KUBECONFIG", &e.kubeconfig)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    e.apply_stdin(&["create"], POD);
    e.eventually("the pod to run", || e.json(&["get", "pod", "solo"])["status"]["phase"] == "Running");
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("solo")).collect();
    assert!(lines.len() >= 2, "the watch printed the pod's changes: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(lines.iter().any(|l| l.contains("Running")), "{text}");

    // The deprecated `/watch/` paths, which upstream still serves, and `?watch=` decoded as
    // upstream decodes a bool: each a stream of events, through kubectl's raw GET.
    for path in [
        "/api/v1/watch/namespaces/default/pods/solo?resourceVersion=0&timeoutSeconds=1",
        "/api/v1/watch/pods?resourceVersion=0&timeoutSeconds=1",
        "/api/v1/namespaces/default/pods?watch=True&resourceVersion=0&timeoutSeconds=1",
    ] {
        let streamed = e.ok(&["get", "--raw", path]);
        let first: Value = serde_json::from_str(streamed.lines().next().unwrap_or_default()).expect("an event a line");
        assert_eq!(
            (first["type"].as_str(), first["object"]["metadata"]["name"].as_str()),
            (Some("ADDED"), Some("solo")),
            "{path}: {streamed}"
        );
    }
}

/// `kubectl run --restart=Never` pods run to completion by the kubelet's rules (a second by
/// default, exit code 0; `wasmcm.dev/exit-code` steers it), and `kubectl logs` is answered with
/// an error saying why there are none.
#[test]
fn pods_that_never_restart_complete_and_logs_are_refused_with_the_reason() {
    let e = env();
    e.ok(&["run", "once", "--image=busybox:1.36", "--restart=Never"]);
    e.ok(&["run", "fails", "--image=busybox:1.36", "--restart=Never", "--annotations=wasmcm.dev/exit-code=3"]);
    e.ok(&["wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/once", "--timeout=60s"]);
    e.ok(&["wait", "--for=jsonpath={.status.phase}=Failed", "pod/fails", "--timeout=60s"]);
    let failed = e.json(&["get", "pod", "fails"]);
    let terminated = &failed["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!((terminated["exitCode"].as_i64(), terminated["reason"].as_str()), (Some(3), Some("Error")), "{failed}");

    let logs = e.run(&["logs", "once"], None);
    let stderr = String::from_utf8_lossy(&logs.stderr);
    assert!(!logs.status.success());
    assert!(
        stderr.contains("Error from server (BadRequest): pods/log is not served by the wasmcm embedded cluster")
            && stderr.contains("pod default/once has no logs"),
        "{stderr}"
    );
    let missing = e.run(&["logs", "nosuch"], None);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("pods \"nosuch\" not found"));
}

/// core/v1 and events.k8s.io/v1 Events are one storage, as in kube-apiserver: an Event written
/// through either API is read, selected, patched, described and deleted through both, under
/// each version's field names.
#[test]
fn events_written_through_either_api_are_served_through_both() {
    let e = env();
    e.apply_stdin(&["create"], POD);
    let uid = e.json(&["get", "pod", "solo"])["metadata"]["uid"].as_str().unwrap().to_owned();
    let regarding = format!("{{kind: Pod, apiVersion: v1, namespace: default, name: solo, uid: {uid}}}");
    e.apply_stdin(
        &["create"],
        &format!(
            "apiVersion: v1
kind: Event
metadata: {{name: legacy}}
involvedObject: {regarding}
reason: Pulled
message: pulled the image
type: Normal
source: {{component: kubelet}}
count: 3
firstTimestamp: '2026-11-28T10:00:00Z'
lastTimestamp: '2026-11-28T10:05:00Z'
"
        ),
    );
    let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string();
    e.apply_stdin(
        &["create"],
        &format!(
            "apiVersion: events.k8s.io/v1
kind: Event
metadata: {{name: modern}}
regarding: {regarding}
reason: Started
action: Start
note: started the container
type: Normal
eventTime: '{now}'
reportingController: wasmcm.dev/test
reportingInstance: host-a
"
        ),
    );

    let legacy = e.json(&["get", "events.events.k8s.io", "legacy"]);
    assert_eq!(legacy["apiVersion"], "events.k8s.io/v1");
    assert_eq!(
        (&legacy["note"], &legacy["deprecatedSource"]["component"], &legacy["deprecatedCount"]),
        (&Value::from("pulled the image"), &Value::from("kubelet"), &Value::from(3)),
        "{legacy}"
    );
    let modern = e.json(&["get", "events", "modern"]);
    assert_eq!(modern["apiVersion"], "v1");
    assert_eq!(
        (&modern["message"], &modern["reportingComponent"], &modern["involvedObject"]["name"]),
        (&Value::from("started the container"), &Value::from("wasmcm.dev/test"), &Value::from("solo")),
        "{modern}"
    );
    let names = |args: &[&str]| -> Vec<String> {
        let listed = e.json(args);
        let mut names: Vec<String> = listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().into())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        names(&["get", "events.events.k8s.io", "--field-selector", "regarding.name=solo"]),
        ["legacy", "modern"]
    );
    assert_eq!(names(&["get", "events", "--field-selector", "reportingComponent=wasmcm.dev/test"]), ["modern"]);
    assert_eq!(names(&["get", "events.events.k8s.io", "--field-selector", "source=kubelet"]), ["legacy"]);
    let refused = e.run(&["get", "events.events.k8s.io", "--field-selector", "involvedObject.name=solo"], None);
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("field label not supported: involvedObject.name"),
        "{refused:?}"
    );

    // A repeat is a patch of the series through events.k8s.io/v1, which may change nothing else.
    let later = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string();
    e.ok(&[
        "patch",
        "events.events.k8s.io",
        "modern",
        "--type=merge",
        "-p",
        &format!(r#"{{"series": {{"count": 4, "lastObservedTime": "{later}"}}}}"#),
    ]);
    assert_eq!(e.json(&["get", "events", "modern"])["series"]["count"], 4);
    let immutable = e.run(&["patch", "events.events.k8s.io", "modern", "--type=merge", "-p", r#"{"note": "x"}"#], None);
    assert!(String::from_utf8_lossy(&immutable.stderr).contains("message: Invalid value"), "{immutable:?}");
    let described = e.ok(&["describe", "pod", "solo"]);
    assert!(
        described.lines().any(|l| l.contains("Started") && l.contains("(x4 over") && l.contains("wasmcm.dev/test")),
        "{described}"
    );
    assert!(described.lines().any(|l| l.contains("Pulled") && l.contains("kubelet")), "{described}");

    e.ok(&["delete", "events.events.k8s.io", "legacy"]);
    assert_eq!(names(&["get", "events", "--field-selector", "involvedObject.name=solo"]), ["modern"]);
}
