//! Reconcile cost of the ReplicaSet, Deployment, Job and CronJob plugins as components (fresh instance per
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
use wasmcm_cronjob::CronJobController;
use wasmcm_cronjob::fixtures as cfx;
use wasmcm_deployment::DeploymentController;
use wasmcm_deployment::fixtures as dfx;
use wasmcm_guest::{Cache, CacheExt, Controller, Kind, MemoryCache, Request, Selector};
use wasmcm_job::JobController;
use wasmcm_job::fixtures as jfx;
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

    println!();
    header("Job reconcile, WASM (fresh instance per call) vs native, same inputs");
    let job = engine.load("job", wasmcm::builtin::get("job").expect("built in"), Limits::default()).expect("loads");
    for row in job_rows() {
        compare::<JobController>(&job, &row);
    }

    println!();
    header("CronJob reconcile, WASM (fresh instance per call) vs native, same inputs");
    let cronjob = engine.load("cronjob", wasmcm::builtin::get("cronjob").expect("built in"), Limits::default());
    let cronjob = cronjob.expect("loads");
    for row in cronjob_rows() {
        compare::<CronJobController>(&cronjob, &row);
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

/// The Job plugin's scenarios: a start, steady state, counting finished pods through the
/// tracking finalizer, an Indexed Job part way, and a Job that failed past its back-off limit.
fn job_rows() -> Vec<Row> {
    let started = json!({"status": {"startTime": jfx::time(-60)}});
    let with = |mut j: Value, more: Value| {
        jfx::merge(&mut j, more);
        j
    };
    let running = |n: usize| jfx::pods("run", n, "Running", &json!({}));
    let mut steady = vec![with(
        jfx::job(Some(100), Some(1000), 6, "", started.clone()),
        json!({"status": {"active": 100, "ready": 0, "terminating": 0, "uncountedTerminatedPods": {}}}),
    )];
    steady.extend(running(100));
    let mut finishing = vec![jfx::job(Some(100), Some(100), 6, "", started.clone())];
    finishing.extend(jfx::pods("done", 100, "Succeeded", &json!({})));
    let mut indexed = vec![jfx::job(
        Some(100),
        Some(1000),
        6,
        "Indexed",
        json!({"status": {"startTime": jfx::time(-60), "succeeded": 400, "completedIndexes": "0-399"}}),
    )];
    indexed.extend((400..500).map(|i| jfx::indexed_pod(&format!("ix-{i}"), &i.to_string(), "Running")));
    let mut failing = vec![jfx::job(Some(10), Some(10), 2, "", started.clone())];
    failing.extend(jfx::pods("failed", 3, "Failed", &json!({})));
    failing.extend(running(7));
    vec![
        Row { name: "missing key (fixed call cost)", objects: vec![], request: jfx::request("foobar") },
        Row {
            name: "start, 5 completions 2 at a time",
            objects: vec![jfx::job(Some(2), Some(5), 6, "", json!({}))],
            request: jfx::request("foobar"),
        },
        Row { name: "steady, 100 pods running", objects: steady, request: jfx::request("foobar") },
        Row { name: "100 pods succeeded (tracking)", objects: finishing, request: jfx::request("foobar") },
        Row { name: "Indexed, 400 of 1000 done, 100 run", objects: indexed, request: jfx::request("foobar") },
        Row { name: "past backoffLimit, 7 pods to delete", objects: failing, request: jfx::request("foobar") },
    ]
}

/// The CronJob plugin's scenarios, on upstream's fixtures (`snazzycats/mycronjob`, on the hour):
/// waiting for the next time with a Job running, a Job due under Allow and under Replace (which
/// deletes the running one), a history of 50 finished Jobs cleaned to its limits, and a CronJob
/// that missed more than 100 start times.
fn cronjob_rows() -> Vec<Row> {
    let hourly = |policy: &str, more: Value| {
        let mut cj = cfx::cron_job(json!({"spec": {"schedule": "0 * * * ?", "concurrencyPolicy": policy},
            "metadata": {"creationTimestamp": cfx::just_before_the_prior_hour().to_string()},
            "status": {"lastScheduleTime": cfx::just_after_the_prior_hour().to_string()}}));
        cfx::merge(&mut cj, more);
        cj
    };
    // A Job of the prior hour, still running and in the active list.
    let active = |policy: &str| {
        let cj = hourly(policy, json!({}));
        let job = cfx::job(&cj, cfx::just_after_the_prior_hour(), "1234", json!({}));
        let cj = hourly(policy, json!({"status": {"active": [cfx::reference(&job)]}}));
        vec![cj, job]
    };
    let history = {
        let cj = hourly("Allow", json!({"spec": {"successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1}}));
        let mut objects = vec![cj.clone()];
        for i in 0..50i64 {
            let scheduled = cfx::just_before_the_prior_hour() - cfx::minutes(50 - i);
            let outcome = if i % 2 == 0 { "Complete" } else { "Failed" };
            let fields = cfx::finished(outcome, scheduled + cfx::seconds(10));
            objects.push(cfx::job(&cj, scheduled, &format!("uid-{i}"), fields));
        }
        objects
    };
    let missed = cfx::cron_job(json!({"spec": {"schedule": "* * * * ?"},
        "metadata": {"creationTimestamp": cfx::just_before_the_hour().to_string()}}));
    let request = |now| cfx::request_at(now);
    vec![
        Row { name: "missing key (fixed call cost)", objects: vec![], request: request(cfx::just_after_the_hour()) },
        Row {
            name: "not time, 1 Job running",
            objects: active("Forbid"),
            request: request(cfx::just_before_the_hour()),
        },
        Row {
            name: "is time, Allow: create",
            objects: vec![hourly("Allow", json!({}))],
            request: request(cfx::just_after_the_hour()),
        },
        Row {
            name: "is time, Replace: delete, create",
            objects: active("Replace"),
            request: request(cfx::just_after_the_hour()),
        },
        Row {
            name: "history of 50 finished, limits 3/1",
            objects: history,
            request: request(cfx::just_before_the_hour()),
        },
        Row { name: ">100 missed start times", objects: vec![missed], request: request(cfx::week_after_the_hour()) },
    ]
}
