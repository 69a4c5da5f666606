//! The embedded API server under load, through kube-rs over HTTPS as any client:
//! concurrent writes/s, listing 10,000 pods (JSON and as a kubectl Table), and the fan-out of
//! changes to 10 watchers. Also the memory the server keeps per stored object: the growth of
//! the process's resident set over 30,000 pods created in a fresh cluster, next to the size
//! of one pod's JSON.
//!
//! `cargo bench -p wasmcm-apiserver --bench cluster` (or `make bench`).

use std::time::{Duration, Instant};

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;
use wasmcm_apiserver::{Cluster, ClusterConfig, KubeletConfig};

const PODS: usize = 10_000;
const WRITERS: usize = 16;
const WATCHERS: usize = 10;
const FANOUT_WRITES: usize = 2_000;
const MEMORY_PODS: usize = 30_000;

async fn client(cluster: &Cluster) -> Client {
    let kubeconfig = Kubeconfig::read_from(&cluster.kubeconfig).expect("kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.expect("config");
    Client::try_from(config).expect("client")
}

/// The resident set of this process (Linux), in bytes.
fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

async fn create_pods(pods: &Api<Pod>, n: usize) -> Duration {
    let start = Instant::now();
    let tasks: Vec<_> = (0..WRITERS)
        .map(|w| {
            let pods = pods.clone();
            tokio::spawn(async move {
                for i in (w..n).step_by(WRITERS) {
                    pods.create(&PostParams::default(), &pod(i)).await.expect("create");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("writer");
    }
    start.elapsed()
}

/// Resident-set growth per pod over `MEMORY_PODS` pods in a cluster of its own, first thing in
/// the process, so that memory freed by earlier phases does not hide the growth. It counts
/// everything the server keeps per object: the stored value, its indexes and its watch
/// history entry.
async fn memory_per_object(config: ClusterConfig) {
    let cluster = Cluster::start(config).await.expect("cluster");
    let client = client(&cluster).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    // Warm the connections and the server's lazily built tables before the baseline.
    create_pods(&pods, WRITERS).await;
    let before = rss();
    let elapsed = create_pods(&Api::namespaced(client.clone(), "kube-public"), MEMORY_PODS).await;
    // Let the kubelet and the garbage collector catch up before measuring.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss();
    let req = http::Request::builder().uri("/api/v1/namespaces/kube-public/pods").body(Vec::new()).expect("request");
    let list: serde_json::Value = client.request(req).await.expect("list");
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), MEMORY_PODS);
    let json_bytes: usize = items.iter().map(|p| serde_json::to_vec(p).map(|v| v.len()).unwrap_or(0)).sum();
    println!(
        "create {MEMORY_PODS} pods in a fresh cluster: {:.2} s, {:.0} writes/s",
        elapsed.as_secs_f64(),
        MEMORY_PODS as f64 / elapsed.as_secs_f64()
    );
    match (before, after) {
        (Some(before), Some(after)) => println!(
            "memory per stored pod: {:.1} KiB of resident set ({:.0} MiB over {MEMORY_PODS} pods); its JSON is {:.1} KiB",
            after.saturating_sub(before) as f64 / MEMORY_PODS as f64 / 1024.0,
            after.saturating_sub(before) as f64 / (1 << 20) as f64,
            json_bytes as f64 / MEMORY_PODS as f64 / 1024.0
        ),
        _ => println!("memory per stored pod: no /proc/self/status here"),
    }
    cluster.shutdown().await;
}

fn pod(i: usize) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": format!("pod-{i:05}"), "labels": {"app": "bench", "shard": (i % 10).to_string()}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]},
    }))
    .expect("pod")
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    // No nodes: pods stay unscheduled, so the numbers are the API server's alone.
    let config =
        ClusterConfig { kubelet: KubeletConfig { nodes: 0, ..KubeletConfig::default() }, ..ClusterConfig::default() };
    let mut starts = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let c = Cluster::start(config.clone()).await.expect("cluster");
        starts.push(t.elapsed());
        c.shutdown().await;
    }
    starts.sort();
    println!(
        "start a cluster (certificates, kubeconfig, bootstrap): {:.1} ms (median of 5)",
        starts[2].as_secs_f64() * 1000.0
    );
    memory_per_object(config.clone()).await;
    let cluster = Cluster::start(config).await.expect("cluster");
    let client = client(&cluster).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");

    let write_time = create_pods(&pods, PODS).await;
    println!(
        "create {PODS} pods, {WRITERS} concurrent clients: {:.2} s, {:.0} writes/s",
        write_time.as_secs_f64(),
        PODS as f64 / write_time.as_secs_f64()
    );

    let mut best = Duration::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let list = pods.list(&ListParams::default()).await.expect("list");
        assert_eq!(list.items.len(), PODS);
        best = best.min(t.elapsed());
    }
    println!("list {PODS} pods (JSON, decoded by kube-rs): {:.0} ms (best of 5)", best.as_secs_f64() * 1000.0);

    let http = reqwest_like_table(&client).await;
    println!("list {PODS} pods as a kubectl Table: {:.0} ms (best of 5)", http.as_secs_f64() * 1000.0);

    let t = Instant::now();
    let selected = pods.list(&ListParams::default().labels("shard=3")).await.expect("list");
    println!(
        "list with a label selector ({} of {PODS} match): {:.1} ms",
        selected.items.len(),
        t.elapsed().as_secs_f64() * 1000.0
    );

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = cms.list(&ListParams::default()).await.expect("list").metadata.resource_version.expect("rv");
    let watchers: Vec<_> = (0..WATCHERS)
        .map(|_| {
            let cms = cms.clone();
            let rv = rv.clone();
            tokio::spawn(async move {
                let mut stream = cms.watch(&WatchParams::default().timeout(280), &rv).await.expect("watch").boxed();
                let mut n = 0;
                while n < FANOUT_WRITES {
                    if let Some(WatchEvent::Added(_)) = stream.try_next().await.expect("event") {
                        n += 1;
                    }
                }
                Instant::now()
            })
        })
        .collect();
    let t = Instant::now();
    for i in 0..FANOUT_WRITES {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("cm-{i:05}")}})).expect("cm");
        cms.create(&PostParams::default(), &cm).await.expect("create");
    }
    let written = t.elapsed();
    let mut last = t;
    for w in watchers {
        last = last.max(w.await.expect("watcher"));
    }
    let delivered = last.duration_since(t);
    println!(
        "watch fan-out: {FANOUT_WRITES} sequential writes to {WATCHERS} watchers: written in {:.2} s, all {} events delivered in {:.2} s ({:.0} events/s delivered)",
        written.as_secs_f64(),
        FANOUT_WRITES * WATCHERS,
        delivered.as_secs_f64(),
        (FANOUT_WRITES * WATCHERS) as f64 / delivered.as_secs_f64()
    );
    cluster.shutdown().await;
}

/// A Table list as kubectl asks for it (kube-rs has no typed call for it).
async fn reqwest_like_table(client: &Client) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let req = http::Request::builder()
            .uri("/api/v1/namespaces/default/pods")
            .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
            .body(Vec::new())
            .expect("request");
        let t = Instant::now();
        let table: serde_json::Value = client.request(req).await.expect("table");
        assert_eq!(table["rows"].as_array().map(Vec::len), Some(PODS));
        best = best.min(t.elapsed());
    }
    best
}
