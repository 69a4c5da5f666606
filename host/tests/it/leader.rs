//! Two hosts against one cluster: one leads, the other stands by with warm caches and takes
//! over when the leader stops (released lease) or dies (expired lease).

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
use wasmcm::{Host, HostConfig};
use wasmcm_apiserver::{Cluster, ClusterConfig, KubeletConfig};
use wasmcm_test_support::{client, eventually};

fn plugin() -> Arc<Plugin> {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("precompiled");
    let engine = Engine::new(&EngineConfig { precompiled_dir: Some(dir), ..EngineConfig::default() }).unwrap();
    Arc::new(engine.load("replicaset", wasmcm::builtin::get("replicaset").unwrap(), Limits::default()).unwrap())
}

async fn host(cluster: &Cluster, identity: &str) -> Host {
    let leader = LeaderConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(300),
        ..LeaderConfig::new("kube-system", "wasmcm", identity)
    };
    let config = HostConfig { leader: Some(leader), ..HostConfig::default() };
    Host::start(client(&cluster.kubeconfig).await, vec![Version::of(plugin())], config, Default::default())
        .await
        .unwrap()
}

fn replica_set(name: &str) -> ReplicaSet {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
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
