//! A tenant's large writes against the embedded cluster do not stall the host that runs it:
//! `wasmcm run` without a kubeconfig serves the embedded API server on its own runtime, so a
//! write whose checks held that runtime (two 470 KB custom resources of set- and map-typed
//! lists, checked pairwise, held it 30 s) kept the host from renewing its Lease, and it exited
//! with "leadership lost". Seen failing so before the checks became linear and moved off the
//! runtime.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use futures_util::StreamExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

/// The host's lease timing: renewed every second, lost if not renewed within 6 s.
const RENEW_DEADLINE: u64 = 6;

/// A host process, killed if the test ends without stopping it.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `wasmcm run` on its embedded cluster, leader-elected; its kubeconfig once it runs. Its log
/// goes to `log`.
fn run_embedded(log: &std::path::Path, temp: &std::path::Path) -> (Running, std::path::PathBuf) {
    let mut host = common::host_command()
        .arg("--cache-dir")
        .arg(common::precompiled_dir())
        .args(["run", "--metrics-bind-address", "127.0.0.1:0"])
        .args(["--leader-elect-resource-namespace", "kube-system", "--leader-elect-resource-name", "wasmcm"])
        .args(["--leader-elect-lease-duration", "8", "--leader-elect-renew-deadline", &RENEW_DEADLINE.to_string()])
        .args(["--leader-elect-retry-period", "1"])
        .env("POD_NAME", "stall-host")
        .env("RUST_LOG", "warn,wasmcm=info")
        .env("TMPDIR", temp)
        .env_remove("KUBECONFIG")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).expect("a log file"))
        .spawn()
        .expect("wasmcm runs");
    let mut lines = BufReader::new(host.stdout.take().expect("stdout")).lines();
    let host = Running(host);
    let mut kubeconfig = None;
    for line in lines.by_ref() {
        let line = line.expect("a line");
        if let Some(rest) = line.split("KUBECONFIG=").nth(1) {
            kubeconfig = rest.split_whitespace().next().map(std::path::PathBuf::from);
        }
        if line.starts_with("wasmcm running") {
            break;
        }
    }
    // Keep reading, so that the host never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (host, kubeconfig.expect("wasmcm prints the kubeconfig"))
}

fn crd(plural: &str, kind: &str, list: Value) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": {"items": list}}}}}}]},
    }))
    .expect("a CRD")
}

fn api(client: &kube::Client, plural: &str, kind: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", kind), plural);
    Api::namespaced_with(client.clone(), "default", &ar)
}

fn renew_time(lease: &Lease) -> Option<jiff::Timestamp> {
    lease.spec.as_ref()?.renew_time.as_ref().map(|t| t.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_large_set_typed_custom_resources_leave_the_hosts_lease_renewals_on_time() {
    let temp = tempfile::tempdir().unwrap();
    let log = temp.path().join("host.log");
    let (mut host, kubeconfig) = tokio::task::block_in_place(|| run_embedded(&log, temp.path()));
    let client = wasmcm_test_support::client(&kubeconfig).await;

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let set = json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
    let map = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "value": {"type": "integer"}}}});
    crds.create(&PostParams::default(), &crd("tagsets", "TagSet", set)).await.expect("the set CRD");
    crds.create(&PostParams::default(), &crd("tagmaps", "TagMap", map)).await.expect("the map CRD");

    // Every renewal from now on, in order, as a watch of the Lease sees them.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    let held = common::eventually("the host to hold its Lease", || async {
        let lease = leases.get_opt("wasmcm").await.ok()??;
        renew_time(&lease).map(|_| lease)
    })
    .await;
    let (renewals_tx, mut renewals) = tokio::sync::mpsc::unbounded_channel();
    let _ = renewals_tx.send(renew_time(&held));
    let watched = leases.clone();
    let from = held.metadata.resource_version.clone().unwrap_or_default();
    let watch = tokio::spawn(async move {
        let params = WatchParams::default().fields("metadata.name=wasmcm").timeout(290);
        let mut events = watched.watch(&params, &from).await.expect("a watch of the Lease").boxed();
        while let Some(Ok(event)) = events.next().await {
            // Bookmarks too: the Lease's changes are the MODIFIED events.
            let WatchEvent::Modified(lease) = event else { continue };
            if renewals_tx.send(renew_time(&lease)).is_err() {
                return;
            }
        }
    });

    // Two large custom resources at once: 42,000 set items (~470 KB), 12,000 list-map items
    // (~310 KB). Their managedFields name every item, as kube-apiserver's do (`v:` and `k:`
    // entries), so each write is about twice its object: 18,000 map items no longer fit the
    // 1.5 MiB a stored object may be.
    let tags: Vec<String> = (0..42_000).map(|i| format!("t-{i:06}")).collect();
    let items: Vec<Value> = (0..12_000).map(|i| json!({"name": format!("n-{i:06}"), "value": 1})).collect();
    let object = |kind: &str, name: &str, items: Value| -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": kind, "metadata": {"name": name},
            "spec": {"items": items}}))
        .expect("an object")
    };
    let (a, b) = (object("TagSet", "big", json!(tags)), object("TagMap", "big", json!(items)));
    assert!(serde_json::to_vec(&a).unwrap().len() > 450_000 && serde_json::to_vec(&b).unwrap().len() > 300_000);
    let (sets, maps) = (api(&client, "tagsets", "TagSet"), api(&client, "tagmaps", "TagMap"));
    let post = PostParams::default();
    let (created_a, created_b) = tokio::join!(sets.create(&post, &a), maps.create(&post, &b));

    // Two more renewals once the writes are answered: the host renews on, or is gone.
    let mut seen: Vec<jiff::Timestamp> = Vec::new();
    let mut take = |seen: &mut Vec<jiff::Timestamp>| {
        while let Ok(t) = renewals.try_recv() {
            if let Some(t) = t.filter(|t| seen.last().is_none_or(|last| t > last)) {
                seen.push(t);
            }
        }
    };
    take(&mut seen);
    let before = seen.len();
    common::eventually("two renewals after the writes, or the host's exit", || {
        take(&mut seen);
        let done = seen.len() >= before + 2 || host.0.try_wait().ok().flatten().is_some();
        std::future::ready(done.then_some(()))
    })
    .await;
    watch.abort();

    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(host.0.try_wait().unwrap().is_none(), "the host exited: {log_text}");
    assert!(!log_text.contains("leadership lost"), "the host lost its lease: {log_text}");
    let longest = seen.windows(2).map(|w| w[1].duration_since(w[0])).max().unwrap_or_default();
    assert!(
        longest <= jiff::SignedDuration::from_secs(RENEW_DEADLINE as i64),
        "renewals {longest:?} apart, past the renew deadline: {seen:?}"
    );
    created_a.expect("the set-typed resource is stored");
    created_b.expect("the map-typed resource is stored");

    // Stopped cleanly, the host takes its cluster's files with it.
    let status = std::process::Command::new("kill").args(["-INT", &host.0.id().to_string()]).status().unwrap();
    assert!(status.success());
    let code = tokio::task::block_in_place(|| host.0.wait()).unwrap();
    assert!(code.success(), "{code:?}: {}", std::fs::read_to_string(&log).unwrap_or_default());
    assert!(!kubeconfig.exists(), "the kubeconfig is removed at exit");
    assert!(kubeconfig.parent().is_some_and(|d| !d.exists()), "and its directory");
}
