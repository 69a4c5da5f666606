//! Two `wasmcm run` processes on one cluster, as two replicas of the in-cluster Deployment:
//! one leads; SIGTERM makes it finish, release the Lease and exit 0, so the standby takes over
//! at once; SIGKILL leaves the Lease held, and a standby takes over once it expires. Configured
//! as deploy/manifests' Deployment runs them: as the ServiceAccount wasmcm/wasmcm (a token of
//! it, bound by the manifests' RBAC objects applied with the real kubectl), electing through the
//! Lease wasmcm/wasmcm that the manifests' Role allows, with the plugin manifest of the
//! ConfigMap wasmcm-plugins as the pod mounts it.

use crate::common;

use std::process::{Child, Command, Stdio};

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// A host process named `identity` (its POD_NAME) on the cluster of `kubeconfig`, configured
/// as the manifests' Deployment configures it (but for quicker lease timing).
fn host(kubeconfig: &std::path::Path, plugins: &std::path::Path, identity: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_wasmcm"))
        .arg("--cache-dir")
        .arg(common::precompiled_dir())
        .arg("run")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--plugins")
        .arg(plugins)
        .arg("--strict")
        .args(["--metrics-bind-address", "127.0.0.1:0", "--leader-elect-resource-namespace", "wasmcm"])
        .args(["--leader-elect-lease-duration", "4", "--leader-elect-renew-deadline", "3"])
        .args(["--leader-elect-retry-period", "1"])
        .env("POD_NAME", identity)
        .env("POD_NAMESPACE", "wasmcm")
        .env("RUST_LOG", "warn,wasmcm=info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("wasmcm runs")
}

fn signal(child: &Child, signal: &str) {
    let status = Command::new("kill").args([signal, &child.id().to_string()]).status().expect("kill runs");
    assert!(status.success(), "kill {signal} {}", child.id());
}

/// Waits for the process to exit (it must within `common::PATIENCE`).
async fn exit_code(child: &mut Child) -> Option<i32> {
    let deadline = tokio::time::Instant::now() + common::PATIENCE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        assert!(tokio::time::Instant::now() < deadline, "the host did not exit");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A cluster with deploy/'s RBAC, a kubeconfig of the host's ServiceAccount, and the plugin
/// manifest as the pod mounts it.
struct Replicas {
    cluster: wasmcm_apiserver::Cluster,
    client: kube::Client,
    kubeconfig: std::path::PathBuf,
    plugins: tempfile::TempDir,
}

impl Replicas {
    async fn start() -> Replicas {
        let (cluster, client) = common::cluster().await;
        common::kubectl_apply(&cluster.kubeconfig, &common::RBAC_MANIFESTS);
        let token = cluster.service_account_token("wasmcm", "wasmcm").unwrap();
        let kubeconfig = cluster.kubeconfig_for_token(&token).unwrap();
        Replicas { cluster, client, kubeconfig, plugins: common::plugins_dir() }
    }

    fn host(&self, identity: &str) -> Child {
        host(&self.kubeconfig, self.plugins.path(), identity)
    }

    /// Who holds the Lease wasmcm/wasmcm ("" for no one).
    async fn holder(&self) -> String {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "wasmcm");
        leases.get_opt("wasmcm").await.ok().flatten().and_then(|l| l.spec?.holder_identity).unwrap_or_default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_hands_over_at_once_and_sigkill_after_the_lease_expires() {
    let replicas = Replicas::start().await;
    let client = replicas.client.clone();
    let holder = || replicas.holder();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let count = |n: usize| {
        let pods = pods.clone();
        async move {
            let listed = pods.list(&ListParams::default().labels("app=web")).await.ok()?;
            (listed.items.len() == n).then_some(())
        }
    };

    let mut a = replicas.host("wasmcm-a");
    common::eventually("a to lead", || async { (holder().await == "wasmcm-a").then_some(()) }).await;
    let mut b = replicas.host("wasmcm-b");
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    rss.create(&PostParams::default(), &common::web::<ReplicaSet>(2, "i")).await.unwrap();
    common::eventually("a to create the pods", || count(2)).await;
    assert_eq!(holder().await, "wasmcm-a", "b stands by");

    signal(&a, "-TERM");
    assert_eq!(exit_code(&mut a).await, Some(0), "SIGTERM is a clean stop");
    // Released before exiting: empty, or already taken by the standby.
    let after_a = holder().await;
    assert!(after_a.is_empty() || after_a == "wasmcm-b", "the lease was released, not left to expire: {after_a:?}");
    common::eventually("b to lead", || async { (holder().await == "wasmcm-b").then_some(()) }).await;
    rss.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 3}}))).await.unwrap();
    common::eventually("b to reconcile", || count(3)).await;

    let mut c = replicas.host("wasmcm-c");
    signal(&b, "-KILL");
    exit_code(&mut b).await;
    assert_eq!(holder().await, "wasmcm-b", "a killed host cannot release its lease");
    common::eventually("c to take the expired lease", || async { (holder().await == "wasmcm-c").then_some(()) }).await;
    rss.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 1}}))).await.unwrap();
    common::eventually("c to reconcile", || count(1)).await;

    signal(&c, "-TERM");
    assert_eq!(exit_code(&mut c).await, Some(0));
}

/// A leader whose API stalls exits with an error within its renew deadline, as KCM does,
/// while the stall still lasts: it neither waits for a renewal that may never come nor drains
/// its reconciles (its fence refuses their writes anyway).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_renew_exits_at_once() {
    let replicas = Replicas::start().await;
    let mut a = replicas.host("wasmcm-a");
    common::eventually("a to lead", || async { (replicas.holder().await == "wasmcm-a").then_some(()) }).await;
    let stall = std::time::Duration::from_secs(20);
    let started = std::time::Instant::now();
    replicas.cluster.stall(stall);
    assert_eq!(exit_code(&mut a).await, Some(1), "losing the lease is an error exit");
    let exited = started.elapsed();
    // Renew deadline 3 s after the last renewal, which began at most a retry period (1 s) before.
    assert!(exited < std::time::Duration::from_secs(8), "exited {exited:?} into a {stall:?} stall");
}
