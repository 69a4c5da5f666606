//! The host end to end on the embedded cluster: the ReplicaSet plugin, through informers,
//! queue, expectations and the API writer, makes pods exist and status converge.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use wasmcm::Metrics;
use wasmcm::Version;
use wasmcm::{Engine, Limits};
use wasmcm::{Host, HostConfig};
use wasmcm_apiserver::Cluster;

async fn start() -> (Cluster, Client, Host) {
    let (cluster, client, host, _) = start_with_metrics().await;
    (cluster, client, host)
}

async fn start_with_metrics() -> (Cluster, Client, Host, Arc<Metrics>) {
    let (cluster, client, engine) = cluster_and_engine().await;
    let plugin = engine.load("replicaset", wasmcm::builtin::get("replicaset").unwrap(), Limits::default()).unwrap();
    let metrics = Arc::new(Metrics::default());
    let deployed = common::service_account(&cluster).await;
    let plugins = vec![common::as_deployed(Version::of(Arc::new(plugin)))];
    let host = Host::start(deployed.kube_config, plugins, deployed.config, metrics.clone()).await.unwrap();
    (cluster, client, host, metrics)
}

/// An embedded cluster (pods start after 50 ms), a client for it, and an engine whose
/// compiled plugins are shared by the test binaries.
async fn cluster_and_engine() -> (Cluster, Client, Engine) {
    let (cluster, client) = common::cluster().await;
    (cluster, client, common::engine().clone())
}

/// A plain HTTP GET, enough for the metrics endpoint.
fn replica_set(name: &str, replicas: i32) -> ReplicaSet {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}},
    }))
    .unwrap()
}

async fn active_pods(pods: &Api<Pod>, app: &str) -> Vec<Pod> {
    let list = pods.list(&ListParams::default().labels(&format!("app={app}"))).await.unwrap();
    list.items.into_iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_set_gets_its_pods_and_status_through_the_host() {
    let (_cluster, client, host, metrics) = start_with_metrics().await;
    let (ready, ready_rx) = tokio::sync::watch::channel(false);
    let plugins = tokio::sync::watch::channel(host.controllers().to_vec()).1;
    let standing = tokio::sync::watch::channel(wasmcm::Agreement::Unknown).1;
    let cluster = tokio::sync::watch::channel(wasmcm::Reach::Unknown).1;
    let failures = std::sync::Arc::new(wasmcm::LoadFailures::new(metrics.clone()));
    let admin = wasmcm::Admin { metrics, ready: ready_rx, plugins, token: None, standing, cluster, failures };
    let addr = wasmcm::serve_admin(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(), admin).await.unwrap();
    assert_eq!(common::http_get(addr, "/readyz").await.0, 503, "not ready before the host says so");
    ready.send_replace(true);
    assert_eq!(common::http_get(addr, "/readyz").await.0, 200);
    assert_eq!(common::http_get(addr, "/healthz").await.0, 200);
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    rss.create(&PostParams::default(), &replica_set("web", 3)).await.unwrap();

    common::eventually("3 ready replicas in status", || async {
        let rs = rss.get("web").await.ok()?;
        let s = rs.status?;
        (s.ready_replicas == Some(3) && s.replicas == 3 && s.observed_generation == Some(1)).then_some(())
    })
    .await;
    let owned = active_pods(&pods, "web").await;
    assert_eq!(owned.len(), 3, "exactly 3 pods, no duplicates");
    assert!(owned.iter().all(|p| p.metadata.owner_references.as_ref().is_some_and(|r| r[0].name == "web")));

    // A deleted pod is replaced.
    let victim = owned[0].metadata.name.clone().unwrap();
    pods.delete(&victim, &DeleteParams::default().grace_period(0)).await.unwrap();
    common::eventually("the pod to be replaced", || async {
        let now = active_pods(&pods, "web").await;
        (now.len() == 3 && now.iter().all(|p| p.metadata.name.as_deref() != Some(victim.as_str()))).then_some(())
    })
    .await;

    // Scaling through /scale.
    rss.patch_scale("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 1}}))).await.unwrap();
    common::eventually("scale down to 1", || async { (active_pods(&pods, "web").await.len() == 1).then_some(()) })
        .await;

    // An orphan that matches is adopted (and then one pod too many is removed).
    let orphan: Pod = serde_json::from_value(json!({"metadata": {"name": "orphan", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &orphan).await.unwrap();
    common::eventually("adoption and convergence", || async {
        let now = active_pods(&pods, "web").await;
        let adopted = pods
            .get("orphan")
            .await
            .ok()
            .map(|p| p.metadata.owner_references.is_some_and(|r| r.iter().any(|r| r.name == "web")));
        (now.len() == 1 && adopted != Some(false)).then_some(())
    })
    .await;

    // Events name the ReplicaSet by uid too, which is how `kubectl describe` finds them.
    let uid = rss.get("web").await.unwrap().metadata.uid.unwrap();
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let about_rs = ListParams::default().fields(&format!("involvedObject.uid={uid}"));
    let reasons: Vec<String> =
        events.list(&about_rs).await.unwrap().items.into_iter().filter_map(|e| e.reason).collect();
    assert!(
        reasons.iter().any(|r| r == "SuccessfulCreate") && reasons.iter().any(|r| r == "SuccessfulDelete"),
        "{reasons:?}"
    );

    let (code, text) = common::http_get(addr, "/metrics").await;
    assert_eq!(code, 200);
    let q = "name=\"replicaset\"";
    assert!(common::sample(&text, "workqueue_adds_total", &[q]).is_some_and(|v| v >= 3.0), "{text}");
    assert!(common::sample(&text, "workqueue_depth", &[q]).is_some());
    assert!(common::sample(&text, "workqueue_queue_duration_seconds_count", &[q]).is_some_and(|v| v >= 3.0));
    assert!(common::sample(&text, "workqueue_work_duration_seconds_count", &[q]).is_some_and(|v| v >= 3.0));
    assert!(common::sample(&text, "workqueue_retries_total", &[q]).is_some());
    assert!(common::sample(&text, "workqueue_unfinished_work_seconds", &[q]).is_some());
    assert!(common::sample(&text, "workqueue_longest_running_processor_seconds", &[q]).is_some());
    let ok = ["plugin=\"replicaset\"", "version=\"0.1.0\"", "outcome=\"success\""];
    assert!(common::sample(&text, "wasmcm_reconciles_total", &ok).is_some_and(|v| v >= 3.0), "{text}");
    assert!(common::sample(&text, "wasmcm_reconcile_duration_seconds_count", &ok[..2]).is_some_and(|v| v >= 3.0));
    assert_eq!(common::sample(&text, "wasmcm_leader", &[]), Some(1.0));
    assert!(common::sample(&text, "wasmcm_informer_objects", &["kind=\"v1/Pod\""]).is_some_and(|v| v >= 1.0));

    // Deleting the ReplicaSet cascades to its pods.
    rss.delete("web", &DeleteParams::default()).await.unwrap();
    common::eventually("the pods to go with it", || async { active_pods(&pods, "web").await.is_empty().then_some(()) })
        .await;
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_replica_sets_converge_exactly_despite_lagging_watches_and_failing_writes() {
    let (cluster, client, host) = start().await;
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    // From the start the host sees the cluster late (every watch event held back), loses its
    // watches, and has 10% of its writes refused: retries then run on stale caches.
    cluster.set_faults(wasmcm_apiserver::FaultConfig {
        write_error_rate: 0.1,
        watch_delay: Duration::from_millis(300),
        watch_drop_interval: Some(Duration::from_secs(3)),
        ..Default::default()
    });
    let want: Vec<(String, i32)> = (0..50).map(|i| (format!("rs-{i:02}"), 1 + i % 4)).collect();
    for (name, replicas) in &want {
        // The test's own writes are refused now and then too.
        while rss.create(&PostParams::default(), &replica_set(name, *replicas)).await.is_err() {
            if rss.get(name).await.is_ok() {
                break;
            }
        }
    }
    let total: i32 = want.iter().map(|(_, r)| r).sum();
    common::eventually("every ReplicaSet to have exactly its pods", || async {
        let all = pods.list(&ListParams::default()).await.ok()?.items;
        let live: Vec<&Pod> = all.iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
        if live.len() != total as usize {
            return None;
        }
        want.iter()
            .all(|(name, r)| {
                live.iter().filter(|p| p.metadata.owner_references.as_ref().is_some_and(|o| o[0].name == *name)).count()
                    == *r as usize
            })
            .then_some(())
    })
    .await;
    cluster.set_faults(Default::default());
    // Nothing was ever scaled down, so any pod deletion would mean a duplicate was created.
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let deletes = events.list(&ListParams::default().fields("reason=SuccessfulDelete")).await.unwrap().items.len();
    assert_eq!(deletes, 0, "no pod was created twice");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resync_reconciles_unchanged_objects_only_when_enabled() {
    let reconciles = |m: &Metrics| -> f64 {
        m.encode()
            .lines()
            .filter(|l| l.starts_with("wasmcm_reconciles_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    for resync in [None, Some(Duration::from_millis(200))] {
        let (cluster, client, engine) = cluster_and_engine().await;
        let plugin = Arc::new(
            engine.load("replicaset", wasmcm::builtin::get("replicaset").unwrap(), Limits::default()).unwrap(),
        );
        let metrics = Arc::new(Metrics::default());
        let deployed = common::service_account(&cluster).await;
        let mut config = deployed.config;
        config.controller.resync = resync;
        let plugins = vec![common::as_deployed(Version::of(plugin))];
        let host = Host::start(deployed.kube_config, plugins, config, metrics.clone()).await.unwrap();
        let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
        let mut rs = replica_set("quiet", 0);
        rs.spec.replicas = Some(0);
        rss.create(&PostParams::default(), &rs).await.unwrap();
        common::eventually("the status to be written", || async {
            rss.get("quiet").await.ok()?.status?.observed_generation.filter(|g| *g == 1)
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = reconciles(&metrics);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let grew = reconciles(&metrics) - before;
        match resync {
            None => assert_eq!(grew, 0.0, "nothing changed, nothing reconciled"),
            Some(_) => assert!(grew >= 3.0, "resync reconciled {grew} times in 1.5 s"),
        }
        host.shutdown().await;
    }
}

/// A key that keeps failing is reported once it has failed `report_after` times, with an event
/// naming why, and retried with backoff for good: never dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hopeless_keys_are_reported_with_an_event_and_refused_intents_are_counted() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let (cluster, client, engine) = cluster_and_engine().await;
    let hostile = std::path::PathBuf::from(env!("WASMCM_GUEST_DIR")).join("wasmcm_hostile.wasm");
    let limits = Limits { memory_bytes: 64 << 20, deadline: Duration::from_millis(50) };
    let plugin = Arc::new(engine.load_file(&hostile, limits).unwrap());
    let metrics = Arc::new(Metrics::default());
    let mut config = HostConfig::default();
    config.controller.report_after = 2;
    // As admin: the hostile plugin reconciles ConfigMaps cluster-wide, beyond deploy/'s RBAC.
    let host =
        Host::start(common::config(&cluster.kubeconfig).await, vec![Version::of(plugin)], config, metrics.clone())
            .await
            .unwrap();

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in ["loop", "write-secret"] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let reported = common::event(&client, Some("default"), "reason=ReconcileFailed,involvedObject.name=loop").await;
    let message = reported.message.unwrap_or_default();
    assert!(message.contains("failed 2 times") && message.contains("deadline"), "{message}");
    let traps =
        || common::metric(&metrics.encode(), "wasmcm_reconciles_total", &["plugin=\"hostile\"", "outcome=\"trap\""]);
    let at_report = traps();
    common::eventually("the reported key to be retried still", || async { (traps() > at_report + 3.0).then_some(()) })
        .await;
    common::eventually("the refused write to be counted", || async {
        metrics
            .encode()
            .lines()
            .any(|l| {
                l.starts_with("wasmcm_intents_refused_total{") && l.contains("plugin=\"hostile\"") && !l.ends_with(" 0")
            })
            .then_some(())
    })
    .await;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), "default");
    assert!(secrets.get_opt("stolen").await.unwrap().is_none(), "the refused write was never sent");
    host.shutdown().await;
}

/// A ReplicaSet whose writes fail for longer than any retry limit (every write answered 429,
/// 409 or 500, past 15 failures of its key, with resync off) converges once the API recovers:
/// its key was kept in backoff, as the metrics show meanwhile, not dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_failing_past_any_limit_converges_once_the_api_recovers() {
    use wasmcm::RateLimit;
    let (cluster, client) = common::cluster().await;
    let metrics = Arc::new(Metrics::default());
    let mut config = HostConfig::default();
    // Quick backoff, so that 15 failures take a second instead of three minutes.
    config.controller.rate = RateLimit { max_delay: Duration::from_millis(100), ..RateLimit::default() };
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    rss.create(&PostParams::default(), &replica_set("stubborn", 2)).await.unwrap();
    // From before the host starts: no pod of it is ever created until the faults stop.
    cluster.set_faults(wasmcm_apiserver::FaultConfig { write_error_rate: 1.0, ..Default::default() });
    let plugins = vec![Version::of(common::replicaset())];
    let host = Host::start(common::config(&cluster.kubeconfig).await, plugins, config, metrics.clone()).await.unwrap();
    // 16 failed reconciles: past the deployment controller's 15 retries (`maxRetries`).
    let failed = || {
        let text = metrics.encode();
        common::metric(&text, "wasmcm_reconciles_total", &["plugin=\"replicaset\"", "outcome=\"write_failed\""])
    };
    common::eventually("16 failed reconciles", || async { (failed() >= 16.0).then_some(()) }).await;
    let in_backoff = common::metric(&metrics.encode(), "wasmcm_keys_in_backoff", &["name=\"replicaset\""]);
    assert_eq!(in_backoff, 1.0, "the failing key is counted in backoff");
    cluster.set_faults(Default::default());
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    common::eventually("the ReplicaSet to converge", || async {
        (active_pods(&pods, "stubborn").await.len() == 2).then_some(())
    })
    .await;
    common::eventually("no key in backoff", || async {
        let text = metrics.encode();
        (common::metric(&text, "wasmcm_keys_in_backoff", &["name=\"replicaset\""]) == 0.0).then_some(())
    })
    .await;
    host.shutdown().await;
}

#[test]
fn the_run_command_makes_kubectl_created_replica_sets_run() {
    use std::io::{BufRead, BufReader};
    use std::process::Command;
    use std::time::Instant;
    let kubectl = wasmcm_test_support::kubectl_path();
    let mut host = Command::new(env!("CARGO_BIN_EXE_wasmcm"))
        .args(["run", "--metrics-bind-address", "127.0.0.1:0", "--leader-elect=false"])
        .env("RUST_LOG", "warn")
        .env("WASMCM_CACHE_DIR", std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("precompiled"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("wasmcm runs");
    let mut lines = BufReader::new(host.stdout.take().unwrap()).lines();
    let kubeconfig = loop {
        let line = lines.next().expect("wasmcm prints the kubeconfig").unwrap();
        if let Some(rest) = line.split("KUBECONFIG=").nth(1) {
            break std::path::PathBuf::from(rest.split_whitespace().next().unwrap());
        }
    };
    // Wait for the host itself to be up before creating.
    for line in lines.by_ref() {
        if line.unwrap().starts_with("wasmcm running") {
            break;
        }
    }
    let root = wasmcm_test_support::workspace_root();
    let kubectl_ok = |args: &[&str]| {
        let out = Command::new(&kubectl).args(args).env("KUBECONFIG", &kubeconfig).output().unwrap();
        assert!(out.status.success(), "kubectl {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    kubectl_ok(&["create", "-f", root.join("examples/replicaset.yaml").to_str().unwrap()]);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let phases = kubectl_ok(&["get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.phase}"]);
        if phases.split_whitespace().filter(|p| *p == "Running").count() == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "pods did not run: {phases}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = host.kill();
    let _ = host.wait();
    if let Some(dir) = kubeconfig.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// A pod deleted gracefully counts as gone at once: its deletion is observed when its
/// deletionTimestamp is set (as KCM's updatePod does), not when it finally disappears. Scaled
/// down and up again, the ReplicaSet replaces pods still in a 5-minute grace period instead of
/// waiting that out (or the expectations' 5-minute TTL).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pods_in_their_grace_period_do_not_hold_the_replica_set_back() {
    use wasmcm_apiserver::{ClusterConfig, KubeletConfig};
    let kubelet = KubeletConfig {
        start_delay: Duration::from_millis(50),
        grace_cap: Duration::from_secs(600),
        ..KubeletConfig::default()
    };
    let cluster = Cluster::start(ClusterConfig { kubelet, ..ClusterConfig::default() }).await.unwrap();
    let client = wasmcm_test_support::client(&cluster.kubeconfig).await;
    let metrics = Arc::new(Metrics::default());
    let plugins = vec![Version::of(common::replicaset())];
    let host =
        Host::start(common::config(&cluster.kubeconfig).await, plugins, HostConfig::default(), metrics).await.unwrap();

    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mut rs = replica_set("lingering", 3);
    rs.spec.template.as_mut().unwrap().spec.as_mut().unwrap().termination_grace_period_seconds = Some(300);
    rss.create(&PostParams::default(), &rs).await.unwrap();
    let active = |n: usize| {
        let pods = pods.clone();
        async move { (active_pods(&pods, "lingering").await.len() == n).then_some(()) }
    };
    common::eventually("3 pods", || active(3)).await;

    let scale = |n: i32| json!({"spec": {"replicas": n}});
    rss.patch("lingering", &PatchParams::default(), &Patch::Merge(scale(1))).await.unwrap();
    common::eventually("2 pods marked for deletion", || active(1)).await;
    rss.patch("lingering", &PatchParams::default(), &Patch::Merge(scale(3))).await.unwrap();
    let replaced = tokio::time::timeout(Duration::from_secs(60), async {
        while active(3).await.is_none() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let all = pods.list(&ListParams::default().labels("app=lingering")).await.unwrap().items;
    let terminating = all.iter().filter(|p| p.metadata.deletion_timestamp.is_some()).count();
    assert!(replaced.is_ok(), "the ReplicaSet waited for its terminating pods ({terminating} of {})", all.len());
    assert_eq!(terminating, 2, "the deleted pods are still in their grace period");
    drop(host);
}
