//! Two hosts against one cluster: one leads, the other stands by with warm caches and takes
//! over when the leader stops (released lease) or dies (expired lease). A leader that cannot
//! renew (a stalled API) is deposed within its renew deadline, and from then on sends nothing,
//! as the API server's write audit shows.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use wasmcm::LeaderConfig;
use wasmcm::Version;
use wasmcm::{Engine, EngineConfig, Limits, Plugin};
use wasmcm::{Host, HostConfig, Mode};
use wasmcm_apiserver::{AuditLease, Cluster, ClusterConfig, KubeletConfig};
use wasmcm_test_support::{client, eventually};

fn plugin() -> Arc<Plugin> {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("precompiled");
    let engine = Engine::new(&EngineConfig { precompiled_dir: Some(dir), ..EngineConfig::default() }).unwrap();
    Arc::new(engine.load("replicaset", wasmcm::builtin::get("replicaset").unwrap(), Limits::default()).unwrap())
}

/// 3 s lease, 2 s renew deadline, 300 ms retry.
fn leader(identity: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(300),
        ..LeaderConfig::new("kube-system", "wasmcm", identity)
    }
}

async fn host(cluster: &Cluster, identity: &str) -> Host {
    let config = HostConfig { mode: Mode::Leader(leader(identity)), ..HostConfig::default() };
    Host::start(
        wasmcm_test_support::config(&cluster.kubeconfig).await,
        vec![Version::of(plugin())],
        config,
        Default::default(),
    )
    .await
    .unwrap()
}

fn replica_set(name: &str) -> ReplicaSet {
    replicas(name, 2)
}

fn replicas(name: &str, replicas: i32) -> ReplicaSet {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }))
    .unwrap()
}

async fn pods_of(pods: &Api<Pod>, app: &str) -> usize {
    pods.list(&ListParams::default().labels(&format!("app={app}"))).await.map(|l| l.items.len()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_host_leads_and_a_standby_takes_over() {
    let config = ClusterConfig {
        kubelet: KubeletConfig { start_delay: Duration::from_millis(50), ..KubeletConfig::default() },
        ..ClusterConfig::default()
    };
    let cluster = Cluster::start(config).await.unwrap();
    let c = client(&cluster.kubeconfig).await;
    let leases: Api<Lease> = Api::namespaced(c.clone(), "kube-system");
    let holder = || async { leases.get_opt("wasmcm").await.ok().flatten().and_then(|l| l.spec?.holder_identity) };

    let a = host(&cluster, "host-a").await;
    let b = host(&cluster, "host-b").await;
    let first = eventually("a leader", || async { holder().await }).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(holder().await.as_deref(), Some(first.as_str()), "the lease stays with one host");
    let (a_leads, b_leads) = (*a.leading().borrow(), *b.leading().borrow());
    assert!(a_leads != b_leads, "exactly one host leads (a: {a_leads}, b: {b_leads})");
    let (leader, standby) = if a_leads { (a, b) } else { (b, a) };

    let rss: Api<ReplicaSet> = Api::namespaced(c.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    rss.create(&PostParams::default(), &replica_set("one")).await.unwrap();
    eventually("the leader to reconcile", || async { (pods_of(&pods, "one").await == 2).then_some(()) }).await;

    // A graceful stop releases the lease: the standby leads at once and converges what
    // changed in between.
    leader.shutdown().await;
    rss.create(&PostParams::default(), &replica_set("two")).await.unwrap();
    let mut standby_leading = standby.leading();
    tokio::time::timeout(Duration::from_secs(3), standby_leading.wait_for(|l| *l))
        .await
        .expect("the standby leads within the lease duration")
        .unwrap();
    eventually("the new leader to reconcile", || async { (pods_of(&pods, "two").await == 2).then_some(()) }).await;
    assert_eq!(pods_of(&pods, "one").await, 2, "nothing was duplicated by the change of leader");

    // A leader that dies without releasing is replaced once its lease expires.
    let successor = host(&cluster, "host-c").await;
    drop(standby);
    let mut successor_leading = successor.leading();
    tokio::time::timeout(Duration::from_secs(15), successor_leading.wait_for(|l| *l))
        .await
        .expect("the lease expires and the successor takes over")
        .unwrap();
    assert_eq!(holder().await.as_deref(), Some("host-c"));
    successor.shutdown().await;
}

/// An API server that stops answering (every request held, then 504) deposes the leader
/// within its renew deadline, while the stall lasts: no renewal attempt may hang past it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stalled_api_deposes_the_leader_within_its_renew_deadline() {
    let (cluster, _) = wasmcm_test_support::cluster().await;
    let a = host(&cluster, "stalled-a").await;
    let mut leading = a.leading();
    tokio::time::timeout(Duration::from_secs(30), leading.wait_for(|l| *l)).await.unwrap().unwrap();
    let stall = Duration::from_secs(10);
    let started = tokio::time::Instant::now();
    cluster.stall(stall);
    tokio::time::timeout(stall, leading.wait_for(|l| !*l)).await.expect("deposed while the API still stalls").unwrap();
    let deposed = started.elapsed();
    assert!(!a.fence().holds(), "the fence is closed");
    // The last renewal began at most a retry period before the stall.
    assert!(deposed <= Duration::from_millis(2300 + 1500), "deposed {deposed:?} into the stall");
    eprintln!("deposed {deposed:?} into a {stall:?} stall (renew deadline 2 s)");
}

/// A leader writing steadily when the API stalls sends nothing once its lease has lapsed: the
/// writes it had in flight are answered 504 when the stall ends and not retried by its client,
/// and the work queue's retries meet the fence. Judged by the API server's audit of every write
/// against the Lease's own renewTime and duration.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deposed_leader_sends_no_write_once_its_lease_has_lapsed() {
    let config = ClusterConfig {
        kubelet: KubeletConfig { start_delay: Duration::from_millis(50), ..KubeletConfig::default() },
        audit_lease: Some(AuditLease::Single { namespace: "kube-system".into(), name: "wasmcm".into() }),
        ..ClusterConfig::default()
    };
    let cluster = Cluster::start(config).await.unwrap();
    let c = client(&cluster.kubeconfig).await;
    // Writes paced at 20/s, so that the stall finds some in flight and more waiting.
    let config = HostConfig {
        mode: Mode::Leader(leader("fenced-a")),
        client_rate: wasmcm::ClientRate { qps: 20.0, burst: 1 },
        ..HostConfig::default()
    };
    let a = Host::start(
        wasmcm_test_support::config(&cluster.kubeconfig).await,
        vec![Version::of(plugin())],
        config,
        Default::default(),
    )
    .await
    .unwrap();
    let mut leading = a.leading();
    tokio::time::timeout(Duration::from_secs(30), leading.wait_for(|l| *l)).await.unwrap().unwrap();
    let rss: Api<ReplicaSet> = Api::namespaced(c.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    rss.create(&PostParams::default(), &replicas("many", 100)).await.unwrap();
    eventually("some pods", || async { (pods_of(&pods, "many").await >= 10).then_some(()) }).await;
    let stall = Duration::from_secs(6);
    cluster.stall(stall);
    // The lease lapses 3 s after the last renewal; the stall outlasts that, and then the queue
    // retries what failed.
    tokio::time::sleep(stall + Duration::from_secs(4)).await;

    let audit = cluster.take_audit();
    let writes: Vec<_> = audit
        .iter()
        .filter(|r| r.user_agent.contains("(fenced-a)") && !matches!(r.resource.as_str(), "leases" | "events"))
        .collect();
    let stalled = writes.iter().filter(|r| r.code == 504).count();
    let by_non_holder: Vec<_> = writes.iter().filter(|r| r.valid_holder() != Some("fenced-a")).collect();
    eprintln!(
        "{} writes audited, {stalled} answered 504 by the stall, {} by a non-holder",
        writes.len(),
        by_non_holder.len()
    );
    assert!(writes.len() >= 10 && stalled >= 1, "the stall caught the leader writing: {writes:#?}");
    assert!(by_non_holder.is_empty(), "writes after the lease lapsed: {by_non_holder:#?}");
    assert!(!*leading.borrow(), "deposed");
}
