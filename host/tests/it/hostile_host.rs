//! The sandbox seen from the whole host: a hostile plugin failing on every key it is given
//! sits next to the ReplicaSet plugin on the embedded cluster. Its keys trap or are refused,
//! are retried with backoff for good and reported; the ReplicaSet converges all the same.

use crate::common;

use std::sync::Arc;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Pod};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use wasmcm::Metrics;
use wasmcm::Version;
use wasmcm::{Host, HostConfig, HostIdentity};

/// Failures after which a key is reported; low so that the report, which names the failures,
/// comes in seconds (5 ms doubling: about 5 s of backoff).
const MAX_RETRIES: u32 = 10;

/// Each hostile key, and what its give-up event must say it failed of.
const HOSTILE: &[(&str, &str)] = &[
    ("panic", "trapped (panic)"),
    ("alloc", "trapped (memory)"),
    ("loop", "trapped (deadline)"),
    ("read-secret", "trapped (capability)"),
    ("write-secret", "may not write v1/Secret"),
    // Two million intents do not fit in 64 MiB; 10,001 do, and are more than the host accepts.
    ("many-intents", "trapped (memory)"),
    ("intents-10001", "trapped (outcome too large)"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hostile_plugin_fails_alone_while_the_replica_set_converges() {
    let (cluster, client) = common::cluster().await;

    let metrics = Arc::new(Metrics::default());
    let mut config = HostConfig::default();
    config.controller.report_after = MAX_RETRIES;
    let plugins = vec![Version::of(common::replicaset()), Version::of(common::hostile())];
    let host = Host::start(common::config(&cluster.kubeconfig).await, plugins, config, metrics.clone()).await.unwrap();

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for (name, _) in HOSTILE {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let rs: ReplicaSet = common::web(3, "nginx:1.27");
    rss.create(&PostParams::default(), &rs).await.unwrap();

    let hostile_queue = ["name=\"hostile\""];
    let retries = || common::sample(&metrics.encode(), "workqueue_retries_total", &hostile_queue).unwrap_or(0.0);
    let first =
        common::eventually("the hostile keys to be retried", || async { Some(retries()).filter(|r| *r > 0.0) }).await;

    common::eventually("3 ready replicas", || async {
        let s = rss.get("web").await.ok()?.status?;
        (s.ready_replicas == Some(3) && s.replicas == 3 && s.observed_generation == Some(1)).then_some(())
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let live = pods.list(&ListParams::default().labels("app=web")).await.unwrap().items;
    assert_eq!(live.iter().filter(|p| p.metadata.deletion_timestamp.is_none()).count(), 3);

    // Retries go on with backoff after the first ones, past the first sample.
    let later = common::eventually("more retries", || async { Some(retries()).filter(|r| *r > first) }).await;

    // Each key failed MAX_RETRIES times, was reported with an event saying why, and is retried still.
    for (key, why) in HOSTILE {
        let fields = format!("reason=ReconcileFailed,involvedObject.name={key}");
        let event = common::event(&client, Some("default"), &fields).await;
        let message = event.message.unwrap_or_default();
        assert!(message.contains(&format!("failed {MAX_RETRIES} times")), "{key}: {message}");
        assert!(message.contains(why), "{key}: {message}");
    }

    // Every key keeps failing past its report: the first call and every retry of each trapping
    // key count, and write-secret is refused by the writer each time.
    let failing = HOSTILE.len() as f64;
    let text = common::eventually("every key retried past its report", || async {
        let text = metrics.encode();
        let retried = common::sample(&text, "workqueue_retries_total", &hostile_queue).unwrap_or(0.0);
        let traps = common::sample(&text, "wasmcm_reconciles_total", &["plugin=\"hostile\"", "outcome=\"trap\""]);
        let refused =
            common::sample(&text, "wasmcm_reconciles_total", &["plugin=\"hostile\"", "outcome=\"write_failed\""]);
        let past = f64::from(MAX_RETRIES + 1);
        (retried >= failing * past && traps.unwrap_or(0.0) >= (failing - 1.0) * past && refused.unwrap_or(0.0) >= past)
            .then(|| {
                eprintln!("hostile queue retries: {first}, later {later}, finally {retried}; hostile traps: {traps:?}");
                text
            })
    })
    .await;
    // The other plugin never trapped.
    assert_eq!(common::sample(&text, "wasmcm_reconciles_total", &["plugin=\"replicaset\"", "outcome=\"trap\""]), None);
    assert!(
        common::sample(&text, "wasmcm_reconciles_total", &["plugin=\"replicaset\"", "outcome=\"success\""]).is_some()
    );
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), "default");
    assert!(secrets.get_opt("stolen").await.unwrap().is_none(), "the refused write was never sent");
    host.shutdown().await;
}

/// A plugin acts as a tenant: not in the host's namespace (nor sees into it), never on the
/// host's Lease, never on cluster-scoped objects its manifest does not grant, whatever kinds
/// it declared.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hostile_plugin_cannot_borrow_the_hosts_identity_or_reach_cluster_scope() {
    let (cluster, client) = common::cluster().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for ns in ["wasmcm", "victim"] {
        let n: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        namespaces.create(&PostParams::default(), &n).await.unwrap();
    }

    let metrics = Arc::new(Metrics::default());
    let mut config = HostConfig::default();
    config.controller.report_after = 2;
    config.controller.host =
        HostIdentity { namespace: Some("wasmcm".into()), lease: Some(("kube-system".into(), "wasmcm".into())) };
    // Granted the Lease's namespace (kube-system, withheld by default), so that it is the Lease
    // itself that is refused there.
    let mut hostile = Version::of(common::hostile());
    hostile.spec.scope.grant = ["kube-system".to_string()].into();
    let plugins = vec![Version::of(common::replicaset()), hostile];
    let host = Host::start(common::config(&cluster.kubeconfig).await, plugins, config, metrics.clone()).await.unwrap();

    // (namespace, key): the host's namespace, where the host's ServiceAccount lives; the
    // Lease's; and a cluster-scoped delete from an ordinary namespace.
    for (ns, name) in [
        ("wasmcm", "borrow-identity"),
        ("kube-system", "take-lease"),
        ("default", "cluster-delete"),
        ("default", "peek-host"),
    ] {
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    rss.create(&PostParams::default(), &common::web(2, "nginx:1.27")).await.unwrap();

    let sample = |outcome: &str| {
        common::sample(&metrics.encode(), "wasmcm_reconciles_total", &["plugin=\"hostile\"", outcome]).unwrap_or(0.0)
    };
    common::eventually("the key in the host's namespace to be passed over", || async {
        (sample("outcome=\"out_of_scope\"") >= 1.0).then_some(())
    })
    .await;
    let events: Api<Event> = Api::all(client.clone());
    for (ns, key, why) in [
        ("kube-system", "take-lease", "Lease kube-system/wasmcm is the host's leader or shard lease"),
        ("default", "cluster-delete", "v1/Namespace is cluster-scoped, which the manifest does not grant"),
    ] {
        let fields = format!("reason=WriteRefused,involvedObject.name={key},involvedObject.namespace={ns}");
        let event = common::event(&client, Some(ns), &fields).await;
        let message = event.message.unwrap_or_default();
        assert!(message.contains(why), "{key}: {message}");
    }
    common::eventually("the ReplicaSet beside them to converge", || async {
        let s = rss.get("web").await.ok()?.status?;
        (s.ready_replicas == Some(2)).then_some(())
    })
    .await;

    // Nor does it see into the host's namespace.
    let report = common::eventually("peek-host's report", || async {
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        cms.get_opt("report").await.ok()??.data?.remove("report")
    })
    .await;
    assert_eq!(report, "get false, listed 0");

    let text = metrics.encode();
    assert!(common::sample(&text, "wasmcm_intents_refused_total", &["plugin=\"hostile\""]).unwrap_or(0.0) >= 2.0);
    let pods: Api<Pod> = Api::namespaced(client.clone(), "wasmcm");
    assert!(pods.list(&ListParams::default()).await.unwrap().items.is_empty(), "no pod runs as the host");
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> = Api::namespaced(client.clone(), "kube-system");
    assert!(leases.get_opt("wasmcm").await.unwrap().is_none(), "the host's Lease was not taken");
    let victim = namespaces.get("victim").await.unwrap();
    assert!(victim.metadata.deletion_timestamp.is_none(), "the cluster-scoped delete was never sent");
    // Each refusal was reported once, not once per retry.
    let refused = events.list(&ListParams::default().fields("reason=WriteRefused")).await.unwrap().items;
    assert_eq!(refused.len(), 2, "{refused:#?}");
    host.shutdown().await;
}

/// Each plugin writes on a budget of its own: 10,000 writes queued by one outcome (500 s at the
/// default 20 qps) leave the ReplicaSet plugin's writes as prompt as ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_of_writes_delays_only_the_plugin_that_asked() {
    let (cluster, client) = common::cluster().await;
    let metrics = Arc::new(Metrics::default());
    let plugins = vec![Version::of(common::replicaset()), Version::of(common::hostile())];
    let host = Host::start(common::config(&cluster.kubeconfig).await, plugins, HostConfig::default(), metrics.clone())
        .await
        .unwrap();

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let flood: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "flood"}})).unwrap();
    cms.create(&PostParams::default(), &flood).await.unwrap();
    let flooded = || async {
        let all = cms.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default();
        all.iter().filter(|c| c.metadata.name.as_deref().is_some_and(|n| n.starts_with("flood-"))).count()
    };
    // Past the burst: the flood's writes are being paced.
    common::eventually("the flood to be under way", || async { (flooded().await >= 40).then_some(()) }).await;

    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    rss.create(&PostParams::default(), &common::web(3, "nginx:1.27")).await.unwrap();
    let started = std::time::Instant::now();
    let converged = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            if let Ok(rs) = rss.get("web").await
                && rs.status.is_some_and(|s| s.ready_replicas == Some(3))
            {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    })
    .await;
    let so_far = flooded().await;
    assert!(converged.is_ok(), "the ReplicaSet waited behind the flood ({so_far} flood writes so far)");
    eprintln!("ReplicaSet ready {:?} after its creation, beside a flood at {so_far} writes", started.elapsed());
    assert!(so_far < 5_000, "the flood itself is paced at the client rate");
    // Dropped, not shut down: a shutdown waits for the flood's outcome to be written.
    drop(host);
}

/// Time for the ReplicaSet `name` (3 replicas) from its creation to 3 ready pods; fails after
/// 60 s.
async fn converges(client: &kube::Client, name: &str) -> std::time::Duration {
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let mut rs: ReplicaSet = common::web(3, "nginx:1.27");
    rs.metadata.name = Some(name.into());
    let started = std::time::Instant::now();
    rss.create(&PostParams::default(), &rs).await.unwrap();
    let converged = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            if let Ok(rs) = rss.get(name).await
                && rs.status.is_some_and(|s| s.ready_replicas == Some(3))
            {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(converged.is_ok(), "ReplicaSet {name} did not converge within 60 s");
    started.elapsed()
}

/// Reads are bounded and interruptible: with 20,001 ConfigMaps cached, a plugin listing all
/// of them or matching a 100,000-value selector fails that reconcile with the reason (over
/// and over, as it retries), while the ReplicaSet plugin beside it converges as it did before
/// the cache was full: nothing it needs waits behind those reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn huge_reads_fail_alone_and_leave_the_other_plugins_reconciles_prompt() {
    use futures_util::StreamExt;
    let (cluster, client) = common::cluster().await;
    let metrics = Arc::new(Metrics::default());
    let plugins = vec![Version::of(common::replicaset()), Version::of(common::hostile_roomy())];
    let mut config = HostConfig::default();
    config.controller.report_after = MAX_RETRIES;
    let host = Host::start(common::config(&cluster.kubeconfig).await, plugins, config, metrics.clone()).await.unwrap();
    let before = converges(&client, "before").await;

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = futures_util::stream::iter(0..20_001)
        .map(|i| {
            let cms = cms.clone();
            async move {
                let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("bulk-{i}")}})).unwrap();
                cms.create(&PostParams::default(), &cm).await.is_ok()
            }
        })
        .buffer_unordered(32)
        .filter(|ok| std::future::ready(*ok))
        .count()
        .await;
    assert_eq!(created, 20_001);
    common::eventually("the hostile plugin's cache to hold them", || async {
        let text = metrics.encode();
        (common::metric(&text, "wasmcm_reconciles_total", &["plugin=\"hostile\""]) >= 20_001.0).then_some(())
    })
    .await;

    for key in ["read-everything", "huge-selector"] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": key}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    // While they fail and retry (about 5 s of backoff each), another ReplicaSet.
    let after = converges(&client, "after").await;
    common::eventually("both huge reads to fail, with the reason, and be retried", || async {
        let text = metrics.encode();
        let labels = ["plugin=\"hostile\"", "reason=\"reads too large\""];
        (common::metric(&text, "wasmcm_plugin_traps_total", &labels) >= 2.0 * f64::from(MAX_RETRIES)).then_some(())
    })
    .await;
    eprintln!(
        "ReplicaSet ready {before:?} after creation on an empty cache, {after:?} beside 20,001 objects and huge reads"
    );

    for (key, why) in [
        ("read-everything", "list of v1/ConfigMap matched more than 20000 objects"),
        ("huge-selector", "a selector requirement of 100000 values; at most 256"),
    ] {
        let fields = format!("reason=ReconcileFailed,involvedObject.name={key}");
        let event = common::event(&client, Some("default"), &fields).await;
        let message = event.message.unwrap_or_default();
        assert!(message.contains(why), "{key}: {message}");
    }
    host.shutdown().await;
}

/// An HTTP front of the cluster `admin` reaches, for a host under test: it passes every request
/// on as `admin` and counts those for `path`. Returns its URL and the count.
async fn counting_proxy(admin: kube::Client, path: &'static str) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use http_body_util::BodyExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    type Failure = Box<dyn std::error::Error + Send + Sync>;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (admin, counted) = (admin.clone(), counted.clone());
            let service = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let (admin, counted) = (admin.clone(), counted.clone());
                async move {
                    if request.uri().path() == path {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                    let (parts, body) = request.into_parts();
                    let body = body.collect().await?.to_bytes().to_vec();
                    let answer = admin.send(http::Request::from_parts(parts, kube::client::Body::from(body))).await?;
                    Ok::<_, Failure>(answer)
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(io, service));
        }
    });
    (url, count)
}

/// A plugin declaring writes of a kind no cluster serves buys no discovery requests with it:
/// 50 such intents per reconcile, refused on every retry, cost the API server one discovery
/// request for the kind per 30 s (the miss is remembered), not one per intent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_of_an_unserved_kind_cost_one_discovery_request_per_ttl() {
    let (_cluster, admin) = common::cluster().await;
    let (url, discovered) = counting_proxy(admin.clone(), "/apis/unserved.wasmcm.dev/v1").await;
    let metrics = Arc::new(Metrics::default());
    let plugins = vec![Version::of(common::hostile())];
    let config = kube::Config::new(url.parse().unwrap());
    let started = std::time::Instant::now();
    let host = Host::start(config, plugins, HostConfig::default(), metrics.clone()).await.unwrap();

    let cms: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "unserved-50"}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    // Retried with backoff, each reconcile's 50 intents refused: the kind is not served.
    let refused = common::eventually("5 reconciles of unserved-50 refused", || async {
        let text = metrics.encode();
        let failed =
            common::metric(&text, "wasmcm_reconciles_total", &["plugin=\"hostile\"", "outcome=\"write_failed\""]);
        (failed >= 5.0).then(|| common::metric(&text, "wasmcm_intents_refused_total", &["plugin=\"hostile\""]))
    })
    .await;
    assert!(refused >= 250.0, "{refused} intents refused");
    let event = common::event(&admin, Some("default"), "reason=WriteRefused,involvedObject.name=unserved-50").await;
    let message = event.message.unwrap_or_default();
    assert!(message.contains("kind unserved.wasmcm.dev/v1/Unserved is not served by the cluster"), "{message}");
    let requests = discovered.load(std::sync::atomic::Ordering::SeqCst);
    let ttls = started.elapsed().as_secs() / 30 + 1;
    eprintln!("{refused} intents refused; {requests} discovery requests for the kind in {:?}", started.elapsed());
    assert!(requests as u64 <= ttls, "{requests} discovery requests for {refused} intents within {ttls} TTLs");
    drop(host);
}

/// What a call reads is the host's memory as well as the guest's, and the budget counts both:
/// with 96 MiB for all calls, a plugin listing 56 MiB of ConfigMaps (the host's copy, then
/// the guest's) fails that call naming the budget, where its linear memory alone would have
/// fit; the ReplicaSet plugin beside it converges.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_are_charged_to_the_memory_budget() {
    use k8s_openapi::api::core::v1::Namespace;
    let (cluster, client) = common::cluster().await;
    let engine = wasmcm::Engine::new(&wasmcm::EngineConfig {
        memory_budget: Some(96 << 20),
        max_concurrent_calls: 16,
        precompiled_dir: Some(common::precompiled_dir()),
        ..wasmcm::EngineConfig::default()
    })
    .unwrap();
    let limits = wasmcm::Limits { memory_bytes: 256 << 20, deadline: std::time::Duration::from_secs(10) };
    let hostile = engine.load_file(&common::guest("wasmcm_hostile.wasm"), limits).unwrap();
    let rs = engine.load("replicaset", wasmcm::builtin::get("replicaset").unwrap(), wasmcm::Limits::default()).unwrap();

    let bulk: Namespace = serde_json::from_value(json!({"metadata": {"name": "bulk"}})).unwrap();
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &bulk).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "bulk");
    for i in 0..56 {
        let cm = json!({"metadata": {"name": format!("bulk-{i}")}, "data": {"x": "x".repeat(1 << 20)}});
        cms.create(&PostParams::default(), &serde_json::from_value(cm).unwrap()).await.unwrap();
    }
    let metrics = Arc::new(Metrics::default());
    let mut config = HostConfig::default();
    config.controller.report_after = 3;
    let plugins = vec![Version::of(Arc::new(rs)), Version::of(Arc::new(hostile))];
    let host = Host::start(common::config(&cluster.kubeconfig).await, plugins, config, metrics.clone()).await.unwrap();

    let reader: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "read-everything"}})).unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), "default").create(&PostParams::default(), &reader).await.unwrap();
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    rss.create(&PostParams::default(), &common::web(3, "nginx:1.27")).await.unwrap();

    let defaults: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let trap = ["plugin=\"hostile\"", "reason=\"memory\""];
    // The call copies 56 MiB through a debug build: alone about 10 s, beside the image and
    // scaffold tests on 2 cores it has taken over PATIENCE, so it gets longer.
    let deadline = tokio::time::Instant::now() + common::PATIENCE * 3;
    let verdict = loop {
        if common::metric(&metrics.encode(), "wasmcm_plugin_traps_total", &trap) >= 1.0 {
            break Ok(());
        }
        let report = defaults.get_opt("report").await.ok().flatten().and_then(|cm| cm.data?.remove("report"));
        if let Some(report) = report.filter(|r| r.starts_with("read ")) {
            break Err(report);
        }
        assert!(tokio::time::Instant::now() < deadline, "read-everything neither trapped nor reported");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(verdict, Ok(()), "the whole read fitted the budget beside the guest's copy");
    let fields = "reason=ReconcileFailed,involvedObject.name=read-everything";
    let message = common::event(&client, Some("default"), fields).await.message.unwrap_or_default();
    assert!(message.contains("trapped (memory)"), "{message}");
    assert!(message.contains("the host's memory budget for plugin calls (96 MiB)"), "{message}");
    common::eventually("the ReplicaSet beside it to converge", || async {
        let s = rss.get("web").await.ok()?.status?;
        (s.ready_replicas == Some(3)).then_some(())
    })
    .await;
    host.shutdown().await;
}
