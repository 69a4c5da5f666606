//! Reconcile cost of the ReplicaSet plugin as a component (fresh instance per call) against
//! the same logic compiled natively, measured in one run; plus the fixed cost of a call and
//! of loading a plugin cold vs from the precompiled cache.
//!
//! `cargo bench -p wasmcm --bench reconcile` (or `make bench`).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use wasmcm::plugins::{Engine, EngineConfig, Limits};
use wasmcm_guest::{Controller, MemoryCache};
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

fn json_bytes(objects: &[Value]) -> usize {
    objects.iter().map(|o| o.to_string().len()).sum()
}

fn main() {
    let engine = Engine::new(&EngineConfig::default()).expect("engine");
    let bytes = wasmcm::builtin::get("replicaset").expect("built in");
    let t = Instant::now();
    let plugin = engine.load("replicaset", bytes, Limits::default()).expect("loads");
    let cold_compile = t.elapsed();

    println!("ReplicaSet reconcile, WASM (fresh instance per call) vs native, same inputs");
    println!("{:<34} {:>9} {:>11} {:>11} {:>7}", "scenario", "cache", "native", "wasm", "ratio");
    let scenarios: Vec<(&str, Vec<Value>)> = vec![
        ("missing key (fixed call cost)", vec![]),
        ("steady, 3 pods", fleet(3, 3)),
        ("scale up 0 → 3", fleet(3, 0)),
        ("steady, 100 pods", fleet(100, 100)),
        ("scale down 100 → 50 (ranking)", fleet(50, 100)),
        ("scale up 0 → 500 (burst)", fleet(500, 0)),
        ("steady, 1000 pods", fleet(1000, 1000)),
    ];
    for (name, objects) in scenarios {
        let c: Arc<MemoryCache> = Arc::new(cache(&objects));
        let req = request("web");
        let native_out = ReplicaSetController::reconcile(&req, &*c).expect("native");
        let wasm_out = plugin.reconcile(&req, c.clone()).expect("wasm");
        assert_eq!(native_out, wasm_out, "{name}: WASM and native must agree");
        let native = measure(|| {
            black_box(ReplicaSetController::reconcile(&req, &*c).ok());
        });
        let wasm = measure(|| {
            black_box(plugin.reconcile(&req, c.clone()).ok());
        });
        let size = format!("{} KB", json_bytes(&objects).div_ceil(1024));
        let ratio = wasm.as_secs_f64() / native.as_secs_f64();
        println!("{name:<34} {size:>9} {:>11} {:>11} {ratio:>6.1}×", fmt(native), fmt(wasm));
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
