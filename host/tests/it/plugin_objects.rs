//! Plugins as Kubernetes objects, end to end: three sharded replicas of the real binary on one
//! cluster, the Plugin CRD applied as deploy/ ships it, and the Plugin objects steered with the
//! real kubectl. An object applied (server-side, as Argo CD does) starts on every replica while
//! they run; one that fails shows Degraded with its reason in status, an Event and the metric,
//! and loads once fixed, without a restart; each replica keeps its own status entry and removes
//! it when it stops; a deleted object stops reconciling everywhere.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One replica: `wasmcm run` with the built-ins off (the Plugin objects are what it runs) and
/// `args`, once it says it runs.
pub(crate) struct Replica {
    child: Child,
    metrics: std::net::SocketAddr,
    /// The kubeconfig of the embedded cluster it started, if it started one.
    pub(crate) kubeconfig: Option<PathBuf>,
}

impl Replica {
    pub(crate) fn start(manifests: &Path, args: &[&std::ffi::OsStr]) -> Replica {
        std::fs::write(manifests.join("builtins.yaml"), common::builtins_off(&[])).unwrap();
        let mut child = common::host_command()
            .args(["run", "--metrics-bind-address", "127.0.0.1:0", "--plugins"])
            .arg(manifests.join("builtins.yaml"))
            .arg("--cache-dir")
            .arg(common::precompiled_dir())
            .args(args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary runs");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let (mut metrics, mut kubeconfig) = (None, None);
        for line in stdout.lines() {
            let line = line.expect("its output");
            if let Some(a) = line.strip_prefix("metrics: http://") {
                metrics = a.trim_end_matches("/metrics").parse().ok();
            }
            if let Some(k) = line.strip_prefix("try: export KUBECONFIG=") {
                kubeconfig = k.split(" && ").next().map(PathBuf::from);
            }
            if line.starts_with("wasmcm running:") {
                assert_eq!(line, "wasmcm running: no plugin yet (Ctrl-C to stop)");
                break;
            }
        }
        Replica { child, metrics: metrics.expect("the metrics address printed"), kubeconfig }
    }

    /// SIGTERM, as a kubelet stops a pod, and the exit awaited.
    fn stop(mut self) {
        let stopped = std::process::Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        assert!(stopped.is_ok_and(|s| s.success()), "kill -TERM");
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the replica did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn metrics(&self) -> String {
        tokio::runtime::Runtime::new().unwrap().block_on(common::http_get(self.metrics, "/metrics")).1
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let out = wasmcm_test_support::kubectl(kubeconfig, args, stdin);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "kubectl {}: {text}", args.join(" "));
    String::from_utf8_lossy(&out.stdout).into()
}

fn plugin(kubeconfig: &Path) -> Option<Value> {
    let out = wasmcm_test_support::kubectl(kubeconfig, &["get", "plugin", "replicaset", "-o", "json"], None);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).expect("JSON"))
}

/// Waits up to 120 s for `done` to hold of the replicaset Plugin object.
fn until(kubeconfig: &Path, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let object = plugin(kubeconfig);
        if let Some(o) = object.as_ref().filter(|o| done(o)) {
            return o.clone();
        }
        assert!(Instant::now() < deadline, "{what}: not within 120 s: {object:#?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn replicas(object: &Value) -> Vec<&Value> {
    object["status"]["replicas"].as_array().map(|r| r.iter().collect()).unwrap_or_default()
}

pub(crate) fn condition<'a>(object: &'a Value, kind: &str) -> &'a Value {
    let conditions = object["status"]["conditions"].as_array();
    conditions.and_then(|c| c.iter().find(|c| c["type"] == kind)).unwrap_or(&Value::Null)
}

fn pods(kubeconfig: &Path) -> usize {
    kubectl(kubeconfig, &["get", "pods", "-o", "name"], None).lines().count()
}

const REPLICA_SET: &str = "apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c, image: nginx}]}}
";

#[test]
fn plugin_objects_run_on_every_replica_report_per_replica_and_stop_when_deleted() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (cluster, _client) = runtime.block_on(common::cluster());
    let kubeconfig: PathBuf = cluster.kubeconfig.clone();
    let root = wasmcm_test_support::workspace_root();
    let crd = root.join("deploy/manifests/00-crd-plugins.yaml").display().to_string();
    kubectl(&kubeconfig, &["apply", "-f", &crd], None);
    kubectl(&kubeconfig, &["wait", "--for", "condition=Established", "crd/plugins.wasmcm.dev"], None);
    let dir = tempfile::tempdir().unwrap();
    let args = ["--shards".as_ref(), "3".as_ref(), "--kubeconfig".as_ref(), kubeconfig.as_os_str()];
    let group: Vec<Replica> = (0..3).map(|_| Replica::start(dir.path(), &args)).collect();
    kubectl(&kubeconfig, &["apply", "-f", "-"], Some(REPLICA_SET));
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(pods(&kubeconfig), 0, "no replica runs a ReplicaSet controller yet");

    // A wrong pin, applied server-side: Degraded/DigestMismatch on all three, an Event, the metric.
    let pinned = format!(
        "apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {{name: replicaset}}\nspec:\n  source: {{builtin: replicaset}}\n  sha256: {}\n",
        "ab".repeat(32)
    );
    let applied = Instant::now();
    kubectl(&kubeconfig, &["apply", "--server-side", "--field-manager", "argocd", "-f", "-"], Some(&pinned));
    let degraded = until(&kubeconfig, "Degraded on all three", |o| {
        replicas(o).len() == 3 && o["status"]["state"] == "Degraded" && o["status"]["ready"] == "0/3"
    });
    assert!(
        replicas(&degraded).iter().all(|r| r["state"] == "Failed" && r["reason"] == "DigestMismatch"),
        "{degraded:#}"
    );
    let identities: std::collections::BTreeSet<&str> =
        replicas(&degraded).iter().filter_map(|r| r["identity"].as_str()).collect();
    assert_eq!(identities.len(), 3, "one entry per replica: {degraded:#}");
    let reason = condition(&degraded, "Degraded");
    assert_eq!(
        (reason["status"].as_str(), reason["reason"].as_str()),
        (Some("True"), Some("DigestMismatch")),
        "{degraded:#}"
    );
    let events = kubectl(&kubeconfig, &["get", "events", "-n", "default", "-o", "json"], None);
    let events: Value = serde_json::from_str(&events).unwrap();
    let warned =
        events["items"].as_array().unwrap().iter().any(|e| {
            e["involvedObject"]["kind"] == "Plugin" && e["reason"] == "DigestMismatch" && e["type"] == "Warning"
        });
    assert!(warned, "a Warning Event on the Plugin: {events:#}");
    for replica in &group {
        let labels = ["plugin=\"replicaset\"", "reason=\"DigestMismatch\""];
        assert_eq!(common::metric(&replica.metrics(), "wasmcm_plugin_load_failures_total", &labels), 1.0);
    }

    // Fixed, by the same manager: it loads on every replica without a restart, and reconciles.
    let fixed = pinned.lines().filter(|l| !l.contains("sha256")).collect::<Vec<_>>().join("\n");
    let fixing = Instant::now();
    kubectl(&kubeconfig, &["apply", "--server-side", "--field-manager", "argocd", "-f", "-"], Some(&fixed));
    let deadline = Instant::now() + Duration::from_secs(120);
    while pods(&kubeconfig) < 2 {
        assert!(Instant::now() < deadline, "the fixed plugin did not reconcile the ReplicaSet");
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!(
        "kubectl apply of the fixed Plugin to its first reconcile (pods created): {:.2} s (first apply {:.2} s before)",
        fixing.elapsed().as_secs_f64(),
        (fixing - applied).as_secs_f64()
    );
    let ready =
        until(&kubeconfig, "Ready on all three", |o| o["status"]["ready"] == "3/3" && o["status"]["state"] == "Ready");
    assert_eq!(ready["status"]["observedGeneration"], ready["metadata"]["generation"], "{ready:#}");
    assert!(ready["status"]["digest"].as_str().is_some_and(|d| d.starts_with("sha256:") && d.len() == 71), "{ready:#}");
    assert_eq!(condition(&ready, "Degraded")["status"], "False", "{ready:#}");
    assert_eq!(condition(&ready, "Ready")["reason"], "Loaded", "{ready:#}");
    let wide = kubectl(&kubeconfig, &["get", "plugins", "-o", "wide"], None);
    eprintln!("kubectl get plugins -o wide:\n{wide}");
    let row = wide.lines().find(|l| l.starts_with("replicaset ")).unwrap_or_else(|| panic!("{wide}"));
    assert!(row.contains(" Ready ") && row.contains(" 3/3 ") && row.contains("built-in plugin replicaset"), "{wide}");
    eprintln!("status:\n{}", kubectl(&kubeconfig, &["get", "plugin", "replicaset", "-o", "yaml"], None));

    // A replica that stops takes its entry with it; the others' stay.
    let mut group = group;
    group.pop().expect("three").stop();
    until(&kubeconfig, "the stopped replica's entry gone", |o| replicas(o).len() == 2 && o["status"]["ready"] == "2/2");

    // Deleted: no replica reconciles its keys any more.
    kubectl(&kubeconfig, &["delete", "plugin", "replicaset"], None);
    let deadline = Instant::now() + Duration::from_secs(120);
    while group.iter().any(|r| common::sample(&r.metrics(), "wasmcm_plugin_info", &["plugin=\"replicaset\""]).is_some())
    {
        assert!(Instant::now() < deadline, "the deleted plugin still runs");
        std::thread::sleep(Duration::from_millis(100));
    }
    kubectl(&kubeconfig, &["scale", "replicaset", "web", "--replicas", "3"], None);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(pods(&kubeconfig), 2, "a deleted plugin reconciles nothing");
    drop(group);
    runtime.block_on(cluster.shutdown());
}

/// A Shadow rollout through the object: a new build of the plugin's file shows as the
/// candidate, Progressing/Shadowing, and is promoted by patching the object, which a user
/// without RBAC on Plugins may not do.
#[test]
fn a_shadow_candidate_is_promoted_by_patching_the_object_as_rbac_allows() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read(common::guest("wasmcm_stamp.wasm")).unwrap();
    let file = dir.path().join("bin").join("stamp.wasm");
    std::fs::create_dir(dir.path().join("bin")).unwrap();
    std::fs::write(&file, &original).unwrap();
    // On its embedded cluster, which `wasmcm run` gives the CRD.
    let host = Replica::start(dir.path(), &["--leader-elect=false".as_ref()]);
    let kubeconfig = host.kubeconfig.clone().expect("the try line");
    let object = format!(
        "apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {{name: stamp}}\nspec:\n  source: {{file: {}}}\n  rollout: {{strategy: Shadow, agreements: 1000000}}\n",
        file.display()
    );
    kubectl(&kubeconfig, &["apply", "-f", "-"], Some(&object));
    let get = |what: &str, done: &dyn Fn(&Value) -> bool| -> Value {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let out = wasmcm_test_support::kubectl(&kubeconfig, &["get", "plugin", "stamp", "-o", "json"], None);
            let o: Option<Value> = out.status.success().then(|| serde_json::from_slice(&out.stdout).expect("JSON"));
            if let Some(o) = o.as_ref().filter(|o| done(o)) {
                return o.clone();
            }
            assert!(Instant::now() < deadline, "{what}: not within 120 s: {o:#?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    get("Ready", &|o| o["status"]["state"] == "Ready" && o["status"]["version"] == "1.0.0");

    let v2 = wasmcm_stamp::variant(&original, "v2", "2.0.0").expect("the markers are in the component");
    let staged = dir.path().join("bin").join(".stamp.wasm.new");
    std::fs::write(&staged, &v2).unwrap();
    std::fs::rename(&staged, &file).unwrap();
    let shadowing = get("Shadowing", &|o| o["status"]["candidate"]["version"] == "2.0.0");
    assert_eq!(shadowing["status"]["state"], "Progressing", "{shadowing:#}");
    let progressing = condition(&shadowing, "Progressing");
    assert_eq!((progressing["status"].as_str(), progressing["reason"].as_str()), (Some("True"), Some("Shadowing")));
    let digest = format!("sha256:{}", common::sha256(&v2));
    assert_eq!(shadowing["status"]["candidate"]["digest"], digest.as_str(), "{shadowing:#}");

    // Promotion is a patch of the object: RBAC decides who may.
    let promote = format!("{{\"spec\":{{\"rollout\":{{\"promote\":\"{digest}\"}}}}}}");
    let patch = ["patch", "plugin", "stamp", "--type", "merge", "-p", &promote];
    let refused = wasmcm_test_support::kubectl(
        &kubeconfig,
        &[&patch[..], &["--as", "system:serviceaccount:default:nobody"]].concat(),
        None,
    );
    assert!(!refused.status.success(), "a user without RBAC on plugins may not promote");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("forbidden"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(get("still shadowing", &|_| true)["status"]["version"], "1.0.0", "not promoted by the refused patch");
    kubectl(&kubeconfig, &patch, None);
    let promoted = get("promoted", &|o| o["status"]["version"] == "2.0.0" && o["status"]["state"] == "Ready");
    assert_eq!(promoted["status"]["digest"], digest.as_str(), "{promoted:#}");
    assert!(promoted["status"]["candidate"].as_object().is_none_or(|c| c.is_empty()), "{promoted:#}");
}
