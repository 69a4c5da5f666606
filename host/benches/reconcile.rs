//! Reconcile cost of the ReplicaSet and Deployment plugins as components (fresh instance per
//! call) against the same logic compiled natively, measured in one run on the same inputs with
//! the outcomes asserted equal; where the time goes (fixed call cost, cache reads crossing the
//! boundary, JSON decoding); and the cost of loading a plugin cold vs from the precompiled cache.
//!
//! `cargo bench -p wasmcm --bench reconcile` (or `make bench`).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use serde_json::{Value, json};
use wasmcm::{Engine, EngineConfig, Limits, Plugin};
use wasmcm_deployment::DeploymentController;
use wasmcm_deployment::fixtures as dfx;
use wasmcm_guest::{Cache, CacheExt, Controller, Kind, MemoryCache, Request, Selector};
use wasmcm_replicaset::ReplicaSetController;
use wasmcm_replicaset::fixtures::{cache, fleet, request};

/// Median over 7 samples of the mean time per call, each sample running ≥ 150 ms.
fn measure(mut f: impl FnMut()) -> Duration {
    for _ in 0..3 {
        f();
    }
    let mut samples: Vec<Duration> = (0..7)
        .map(|_| {
            let start = Instant::now();
            let mut n = 0u32;
            while start.elapsed() < Duration::from_millis(150) {
                f();
                n += 1;
            }
            start.elapsed() / n
        })
        .collect();
    samples.sort();
    samples[3]
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 { format!("{:.2} ms", us / 1000.0) } else { format!("{us:.1} µs") }
}

/// A cache that counts what a reconcile reads through it: calls and JSON bytes.
struct Counting {
    inner: MemoryCache,
    calls: AtomicUsize,
    bytes: AtomicUsize,
}

impl Cache for Counting {
    fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<String> {
        let v = self.inner.get(kind, namespace, name);
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(v.as_ref().map_or(0, String::len), Ordering::Relaxed);
        v
    }

    fn list(&self, kind: &Kind, namespace: &str, selector: &Selector) -> Vec<String> {
        self.count(self.inner.list(kind, namespace, selector))
    }

    fn list_controlled(&self, kind: &Kind, namespace: &str, owner_uid: &str, orphans: bool) -> Vec<String> {
        self.count(self.inner.list_controlled(kind, namespace, owner_uid, orphans))
    }
}

impl Counting {
    fn count(&self, v: Vec<String>) -> Vec<String> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(v.iter().map(String::len).sum(), Ordering::Relaxed);
        v
    }
}

struct Row {
    name: &'static str,
    objects: Vec<Value>,
    request: Request,
}

/// Times one scenario both ways and prints a row; returns (native, wasm).
fn compare<C: Controller>(plugin: &Plugin, row: &Row) -> (Duration, Duration) {
    let c = Arc::new(Counting { inner: cache(&row.objects), calls: AtomicUsize::new(0), bytes: AtomicUsize::new(0) });
    let native_out = C::reconcile(&row.request, &*c).expect("native");
    let (calls, bytes) = (c.calls.swap(0, Ordering::Relaxed), c.bytes.swap(0, Ordering::Relaxed));
    let wasm_out = plugin.reconcile(&row.request, c.clone()).expect("wasm");
    assert_eq!(native_out, wasm_out, "{}: WASM and native must agree", row.name);
    let native = measure(|| {
        black_box(C::reconcile(&row.request, &*c).ok());
    });
    let wasm = measure(|| {
        black_box(plugin.reconcile(&row.request, c.clone()).ok());
    });
    let ratio = wasm.as_secs_f64() / native.as_secs_f64();
    let read = format!("{calls} / {} KB", bytes.div_ceil(1024));
    println!("{:<36} {read:>12} {:>11} {:>11} {ratio:>6.2}×", row.name, fmt(native), fmt(wasm));
    (native, wasm)
}

fn header(title: &str) {
    println!("{title}");
    println!("{:<36} {:>12} {:>11} {:>11} {:>7}", "scenario", "reads / JSON", "native", "wasm", "ratio");
}

/// Native time to decode what a RollingUpdate sync reads (the deployment and the ReplicaSets
/// of its namespace) into k8s-openapi types: the floor of any reconcile over JSON.
fn decode_only(objects: &[Value]) -> Duration {
    let c = cache(objects);
    measure(|| {
        black_box(c.get_as::<Deployment>(dfx::NAMESPACE, "web").ok());
        black_box(c.list_as::<ReplicaSet>(dfx::NAMESPACE, &Selector::everything()).ok());
    })
}

fn main() {
    let engine = Engine::new(&EngineConfig::default()).expect("engine");
    let bytes = wasmcm::builtin::get("replicaset").expect("built in");
    let t = Instant::now();
    let plugin = engine.load("replicaset", bytes, Limits::default()).expect("loads");
    let cold_compile = t.elapsed();

    header("ReplicaSet reconcile, WASM (fresh instance per call) vs native, same inputs");
    let rs_rows = [
        ("missing key (fixed call cost)", vec![]),
        ("steady, 3 pods", fleet(3, 3)),
        ("scale up 0 → 3", fleet(3, 0)),
        ("steady, 100 pods", fleet(100, 100)),
        ("scale down 100 → 50 (ranking)", fleet(50, 100)),
        ("scale up 0 → 500 (burst)", fleet(500, 0)),
        ("steady, 1000 pods", fleet(1000, 1000)),
    ];
    for (name, objects) in rs_rows {
        compare::<ReplicaSetController>(&plugin, &Row { name, objects, request: request("web") });
    }

    println!();
    header("Deployment reconcile, WASM (fresh instance per call) vs native, same inputs");
    let deployment =
        engine.load("deployment", wasmcm::builtin::get("deployment").expect("built in"), Limits::default());
    let deployment = deployment.expect("loads");
    let image = |i: &str| json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": i}]}}}});
    let three = || {
        let mut objects = vec![
            dfx::deployment(3, json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision": "1"}}})),
            dfx::replica_set("web-1", "nginx:1", 1, 3, json!({})),
        ];
        objects.extend((0..3).map(|i| dfx::pod(&format!("web-1-{i}"), "web-1", json!({}))));
        objects
    };
    let mut rollout_start = three();
    dfx::merge(&mut rollout_start[0], image("nginx:2"));
    let mut proportional = dfx::rollout(10, 100);
    dfx::merge(&mut proportional[0], json!({"spec": {"replicas": 150}}));
    let rows = [
        Row { name: "missing key (fixed call cost)", objects: vec![], request: dfx::request("web") },
        Row { name: "3 replicas, steady", objects: three(), request: dfx::request("web") },
        Row { name: "3 replicas, rollout starts", objects: rollout_start, request: dfx::request("web") },
        Row { name: "10 ReplicaSets, 100 pods, rolling", objects: dfx::rollout(10, 100), request: dfx::request("web") },
        Row { name: "10 ReplicaSets, 100 pods, scale 150", objects: proportional, request: dfx::request("web") },
    ];
    let mut timings = Vec::new();
    for row in &rows {
        timings.push(compare::<DeploymentController>(&deployment, row));
    }
    let fixed = timings[0].1;
    println!();
    println!("Where a Deployment reconcile's time goes (WASM = fixed call cost + the sync itself):");
    for (row, (native, wasm)) in rows.iter().zip(&timings).skip(1) {
        let decode = decode_only(&row.objects);
        let sync = wasm.saturating_sub(fixed);
        println!(
            "  {:<34} fixed {:>9} ({:>4.1}%)  sync in WASM {:>9} = {:.2}× native   JSON decode natively {:>9} ({:.0}% of native)",
            row.name,
            fmt(fixed),
            100.0 * fixed.as_secs_f64() / wasm.as_secs_f64(),
            fmt(sync),
            sync.as_secs_f64() / native.as_secs_f64(),
            fmt(decode),
            100.0 * decode.as_secs_f64() / native.as_secs_f64(),
        );
    }

    let dir = std::env::temp_dir().join(format!("wasmcm-bench-{}", std::process::id()));
    let cached =
        Engine::new(&EngineConfig { precompiled_dir: Some(dir.clone()), ..EngineConfig::default() }).expect("engine");
    cached.load("replicaset", bytes, Limits::default()).expect("first load fills the cache");
    let warm = measure(|| {
        black_box(cached.load("replicaset", bytes, Limits::default()).ok());
    });
    let _ = std::fs::remove_dir_all(&dir);
    println!();
    println!("Loading the ReplicaSet plugin ({} KB component, incl. digest, link, describe())", bytes.len() / 1024);
    println!("  compile (no cache)          {:>11}", fmt(cold_compile));
    println!(
        "  from the precompiled cache  {:>11}   ({:.0}× faster)",
        fmt(warm),
        cold_compile.as_secs_f64() / warm.as_secs_f64()
    );
}
