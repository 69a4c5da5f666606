//! The language bench (issue 34): the website example built in Rust (`examples/website`),
//! Python (`examples/website-python`) and TypeScript (`examples/website-typescript`), side by
//! side on one contract: component size, compile time (no cache), load from the precompiled
//! cache, instantiation (a fresh instance and an empty call: the key's object is missing),
//! reconcile time over the same recorded requests (median and p99), peak linear memory per
//! instance, and each one's ratio to Rust.
//!
//! The requests are the Rust plugin's live reconciles recorded by the `typescript` integration
//! test (`host/benches/recordings/website/`, saved with `WASMCM_SAVE_RECORDINGS`): five
//! Websites whose reconciles write (fresh, new, a child of someone else, stale children, being
//! deleted). Every language's outcome is checked against the recorded one first. A language
//! whose build is missing is skipped with a line saying how to build it; `make bench` builds
//! them. Peak linear memory is found through the engine's public limit alone: the smallest
//! `Limits::memory_bytes` (to 64 KiB) at which every recorded reconcile still succeeds.
//!
//! `cargo bench -p wasmcm --bench languages [-- --calls N]` (or `make bench`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmcm::record::Recording;
use wasmcm::{Engine, EngineConfig, Limits, Plugin};
use wasmcm_guest::{Cache, MemoryCache, Request};

/// Where each language's build is, relative to the workspace, and how to make it.
const LANGUAGES: [(&str, &str, &str); 3] = [
    (
        "rust",
        "target/plugins/wasm32-unknown-unknown/release/website.wasm",
        "cd examples/website && cargo build --release --locked --target wasm32-unknown-unknown --target-dir ../../target/plugins",
    ),
    ("python", "target/plugins/python/website-python/website.wasm", "make test-python"),
    (
        "typescript",
        "examples/website-typescript/build/website.wasm",
        "cd examples/website-typescript && npm ci && npm run build",
    ),
];

const PAGE: usize = 64 << 10;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    match us {
        _ if us >= 1e6 => format!("{:.2} s", us / 1e6),
        _ if us >= 1000.0 => format!("{:.2} ms", us / 1000.0),
        _ => format!("{us:.0} µs"),
    }
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// The `p`-th percentile of sorted `samples`.
fn percentile(samples: &[Duration], p: f64) -> Duration {
    let at = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[at.min(samples.len() - 1)]
}

/// The recorded requests, by file name.
fn recordings() -> Vec<(String, Recording, Vec<serde_json::Value>)> {
    let dir = workspace().join("host/benches/recordings/website");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let doc: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).expect("readable")).expect("JSON");
            let recording = Recording::from_json(&doc).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let objects = recording.objects().expect("the recording's objects");
            (path.file_stem().unwrap().to_string_lossy().into_owned(), recording, objects)
        })
        .collect()
}

/// Every recorded request reconciled by `plugin`, each outcome checked against the recorded
/// one; the first difference, if any.
fn check(plugin: &Plugin, recorded: &[(String, Recording, Vec<serde_json::Value>)]) -> Result<(), String> {
    for (name, recording, objects) in recorded {
        let cache = Arc::new(recording.replay_cache(objects)?);
        let result = plugin.reconcile(&recording.request, cache);
        if let Some(difference) = recording.compare(&result) {
            return Err(format!("{name}: {difference}"));
        }
    }
    Ok(())
}

struct Row {
    language: &'static str,
    size: usize,
    compile: Duration,
    load: Duration,
    instantiate: Duration,
    median: Duration,
    p99: Duration,
    memory: usize,
}

fn measure_language(
    language: &'static str,
    bytes: &[u8],
    recorded: &[(String, Recording, Vec<serde_json::Value>)],
    calls: usize,
) -> Result<Row, String> {
    let limits = Limits { memory_bytes: 1 << 30, deadline: Duration::from_secs(30) };
    let engine = Engine::new(&EngineConfig::default()).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let plugin = engine.load(language, bytes, limits.clone()).map_err(|e| e.to_string())?;
    let compile = started.elapsed();
    check(&plugin, recorded).map_err(|e| format!("its outcome differs from the recorded one: {e}"))?;

    let dir = std::env::temp_dir().join(format!("wasmcm-languages-{}-{language}", std::process::id()));
    let cached = Engine::new(&EngineConfig { precompiled_dir: Some(dir.clone()), ..EngineConfig::default() })
        .map_err(|e| e.to_string())?;
    cached.load(language, bytes, limits.clone()).map_err(|e| e.to_string())?;
    let mut loads: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let _ = cached.load(language, bytes, limits.clone());
            t.elapsed()
        })
        .collect();
    loads.sort();

    // A fresh instance and an empty call: the key's object is not in the cache.
    let empty: Arc<dyn Cache + Send + Sync> = Arc::new(MemoryCache::new());
    let missing = Request::new("default", "missing", recorded[0].1.request.now);
    let mut instantiate: Vec<Duration> = (0..calls.min(200))
        .map(|_| {
            let t = Instant::now();
            let _ = plugin.reconcile(&missing, empty.clone());
            t.elapsed()
        })
        .collect();
    instantiate.sort();

    let mut reconciles = Vec::new();
    for (_, recording, objects) in recorded {
        let cache: Arc<dyn Cache + Send + Sync> = Arc::new(recording.replay_cache(objects)?);
        let _ = plugin.reconcile(&recording.request, cache.clone());
        for _ in 0..calls {
            let t = Instant::now();
            let _ = plugin.reconcile(&recording.request, cache.clone());
            reconciles.push(t.elapsed());
        }
    }
    reconciles.sort();

    // The smallest memory limit at which every recorded reconcile succeeds: the peak linear
    // memory of an instance, to a page.
    let fits = |memory: usize| -> bool {
        let limited = Limits { memory_bytes: memory, ..limits.clone() };
        cached.load(language, bytes, limited).is_ok_and(|p| check(&p, recorded).is_ok())
    };
    let (mut low, mut high) = (0usize, (1usize << 30) / PAGE);
    if !fits(high * PAGE) {
        return Err("no memory limit up to 1 GiB fits its reconciles".into());
    }
    while high - low > 1 {
        let mid = (low + high) / 2;
        if fits(mid * PAGE) { high = mid } else { low = mid }
    }
    let _ = std::fs::remove_dir_all(&dir);

    Ok(Row {
        language,
        size: bytes.len(),
        compile,
        load: loads[loads.len() / 2],
        instantiate: percentile(&instantiate, 0.5),
        median: percentile(&reconciles, 0.5),
        p99: percentile(&reconciles, 0.99),
        memory: high * PAGE,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let calls = args
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(100usize);
    let recorded = recordings();
    let sizes: Vec<String> = recorded.iter().map(|(n, r, _)| format!("{n} ({})", r.summary())).collect();
    println!(
        "The website example by language: {} recorded reconciles of the Rust plugin, {calls} calls each",
        recorded.len()
    );
    for s in &sizes {
        println!("  {s}");
    }
    println!();

    let mut rows: Vec<Row> = Vec::new();
    let mut skipped = Vec::new();
    for (language, path, build) in LANGUAGES {
        let file = workspace().join(path);
        let Ok(bytes) = std::fs::read(&file) else {
            skipped.push(format!("{language}: skipped, no build at {path} (build it with: {build})"));
            continue;
        };
        match measure_language(language, &bytes, &recorded, calls) {
            Ok(row) => rows.push(row),
            Err(why) => skipped.push(format!("{language}: skipped, {path}: {why} (rebuild it with: {build})")),
        }
    }

    println!(
        "{:<11} {:>10} {:>10} {:>12} {:>12} {:>12} {:>12} {:>11}",
        "language", "component", "compile", "precompiled", "instantiate", "reconcile", "p99", "memory"
    );
    println!(
        "{:<11} {:>10} {:>10} {:>12} {:>12} {:>12} {:>12} {:>11}",
        "", "", "(no cache)", "load", "+ empty call", "median", "", "per instance"
    );
    let rust = rows
        .iter()
        .find(|r| r.language == "rust")
        .map(|r| (r.size as f64, r.compile, r.load, r.instantiate, r.median, r.p99, r.memory as f64));
    for r in &rows {
        println!(
            "{:<11} {:>10} {:>10} {:>12} {:>12} {:>12} {:>12} {:>11}",
            r.language,
            mib(r.size),
            fmt(r.compile),
            fmt(r.load),
            fmt(r.instantiate),
            fmt(r.median),
            fmt(r.p99),
            mib(r.memory)
        );
        if let (Some((size, compile, load, instantiate, median, p99, memory)), false) = (rust, r.language == "rust") {
            let x = |a: f64, b: f64| format!("{:.1}×", a / b);
            let d = |a: Duration, b: Duration| x(a.as_secs_f64(), b.as_secs_f64());
            println!(
                "{:<11} {:>10} {:>10} {:>12} {:>12} {:>12} {:>12} {:>11}",
                "  ÷ rust",
                x(r.size as f64, size),
                d(r.compile, compile),
                d(r.load, load),
                d(r.instantiate, instantiate),
                d(r.median, median),
                d(r.p99, p99),
                x(r.memory as f64, memory)
            );
        }
    }
    for s in &skipped {
        println!("{s}");
    }
}
