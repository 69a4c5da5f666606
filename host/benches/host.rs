//! The host at scale: 1,000 ReplicaSets × 3 pods on the embedded cluster, from creation to
//! every ReplicaSet reporting 3 ready replicas. Prints the time to converge, reconciles/s and
//! resident memory. The cluster runs in the same process, so RSS is reported before the host
//! starts and at the end.
//!
//! `cargo bench -p wasmcm --bench host` (or `make bench`). WASMCM_BENCH_QPS sets the host's
//! client-side API limit (kube-controller-manager's default is 20 qps; at that rate the
//! ~7,000 writes of this run alone take ~6 minutes, so the default here is 500).

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::ReplicaSet;
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;
use wasmcm::ClientRate;
use wasmcm::Metrics;
use wasmcm::Version;
use wasmcm::{Engine, EngineConfig, Limits};
use wasmcm::{Host, HostConfig};
use wasmcm_apiserver::{Cluster, ClusterConfig, KubeletConfig};

const REPLICA_SETS: usize = 1000;

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let qps: f64 = std::env::var("WASMCM_BENCH_QPS").ok().and_then(|q| q.parse().ok()).unwrap_or(500.0);
    let config = ClusterConfig {
        kubelet: KubeletConfig { nodes: 10, start_delay: Duration::from_millis(500), ..KubeletConfig::default() },
        ..ClusterConfig::default()
    };
    let cluster = Cluster::start(config).await.expect("cluster");
    let kubeconfig = Kubeconfig::read_from(&cluster.kubeconfig).expect("kubeconfig");
    let client = Client::try_from(
        Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.expect("config"),
    )
    .expect("client");
    let engine = Engine::new(&EngineConfig::default()).expect("engine");
    let plugin = engine
        .load("replicaset", wasmcm::builtin::get("replicaset").expect("built in"), Limits::default())
        .expect("plugin");
    let rss_before = rss_mib();
    let metrics = Arc::new(Metrics::default());
    let host_config =
        HostConfig { client_rate: ClientRate { qps, burst: (qps * 1.5) as u32 }, ..HostConfig::default() };
    let host = Host::start(client.clone(), vec![Version::of(Arc::new(plugin))], host_config, metrics.clone())
        .await
        .expect("host");
    let rss_host_idle = rss_mib();

    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let start = Instant::now();
    let creators: Vec<_> = (0..8)
        .map(|w| {
            let rss = rss.clone();
            tokio::spawn(async move {
                for i in (w..REPLICA_SETS).step_by(8) {
                    let name = format!("rs-{i:04}");
                    let rs: ReplicaSet = serde_json::from_value(json!({
                        "metadata": {"name": name},
                        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
                                 "template": {"metadata": {"labels": {"app": name}},
                                              "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}},
                    }))
                    .expect("rs");
                    rss.create(&PostParams::default(), &rs).await.expect("create");
                }
            })
        })
        .collect();
    for c in creators {
        c.await.expect("creator");
    }
    let created = start.elapsed();
    loop {
        let list = rss.list(&ListParams::default()).await.expect("list");
        let ready = list.items.iter().filter(|r| r.status.as_ref().and_then(|s| s.ready_replicas) == Some(3)).count();
        if ready == REPLICA_SETS {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(1200), "did not converge: {ready}/{REPLICA_SETS} ready");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let converged = start.elapsed();
    let text = metrics.encode();
    let reconciles: f64 = text
        .lines()
        .filter(|l| l.starts_with("wasmcm_reconciles_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    println!(
        "{REPLICA_SETS} ReplicaSets × 3 pods, 10 simulated nodes (pods start 0.5 s ± 20% after binding), host API limit {qps} qps:"
    );
    println!("  created the ReplicaSets in {:.1} s", created.as_secs_f64());
    println!("  all {REPLICA_SETS} report 3 ready replicas after {:.1} s", converged.as_secs_f64());
    println!("  {reconciles:.0} reconciles, {:.0} reconciles/s", reconciles / converged.as_secs_f64());
    println!(
        "  RSS: {rss_before:.0} MiB before the host (cluster + engine), {rss_host_idle:.0} MiB with the host idle, {:.0} MiB at the end (cluster store and host caches of 4,000 objects, one process)",
        rss_mib()
    );
    host.shutdown().await;
    cluster.shutdown().await;
}
