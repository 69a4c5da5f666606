//! The host at scale, as it runs for real: the embedded API server (`wasmcm cluster`) and the
//! host (`wasmcm run --kubeconfig …`) as two separate processes, driven over plain HTTP by 16
//! client threads of this process. Separate processes, so that the CPU time and the peak RSS
//! measured are each process's own (in one process the cluster's store and the host's caches
//! cannot be told apart), and so that every write of the host goes through a real socket to a
//! server it shares with nobody but the bench.
//!
//! For each size N (Deployments of R replicas, spread round robin over 10 namespaces):
//!
//! 0. raw: the write rate a plain client gets from the same server with no host running
//!    (pod creates by the 16 clients), the ceiling the host's writes are compared with;
//! 1. rollout: N Deployments created, until every one reports R updated and available
//!    replicas at its current generation;
//! 2. image change: every Deployment's image patched, until all are updated again.
//!
//! Per phase it prints the time, pods/s, the host's writes/s and their ratio to the raw rate,
//! reconciles per Deployment by plugin, errors by reason, the CPU seconds and peak RSS of each
//! process; then the memory per cached object (host) and per stored object (server), and, when
//! several sizes ran, how time grew with size. After each phase it checks that every Deployment
//! has exactly R pods that are not terminating, and fails if one has more or fewer.
//!
//! `cargo bench -p wasmcm --bench scale -- [--sizes 1000,3000,10000] [--replicas 3]`
//! (or `make bench SCALE_ARGS="--sizes 1000,3000,10000"`). Each size runs on a fresh server and
//! host. Flags: `--size N` (or WASMCM_BENCH_SIZE; default 1000), `--sizes a,b,c`,
//! `--replicas R` (3), `--raw-pods K` (min(N×R, 3000)), `--qps Q` (500), `--burst B` (the host's
//! default unless given), `--nodes` (50), `--pod-start-delay-ms` (500), `--clients` (16),
//! `--phase-timeout SECONDS` (max(1200, N × 0.12)), `--keep-logs`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Namespaces the Deployments are spread over (round robin): sharded replicas split by namespace.
const NAMESPACES: usize = 30;
const RAW_NAMESPACE: &str = "raw";
const IMAGE_BEFORE: &str = "nginx:1.27";
const IMAGE_AFTER: &str = "nginx:1.28";

#[derive(Clone, Debug)]
struct Options {
    sizes: Vec<usize>,
    replicas: usize,
    raw_pods: Option<usize>,
    qps: f64,
    burst: Option<u32>,
    nodes: usize,
    pod_start_delay_ms: u64,
    clients: usize,
    phase_timeout: Option<Duration>,
    keep_logs: bool,
    /// `--hosts 1,2,3`: instead of the phases above, the rollout on that many replicas run with
    /// `--shards`, each replica's cached objects and RSS.
    hosts: Vec<usize>,
    shards: u32,
}

fn parse_options() -> Result<Options, String> {
    let default_size = match std::env::var("WASMCM_BENCH_SIZE") {
        Ok(s) => s.parse().map_err(|_| format!("WASMCM_BENCH_SIZE={s}: not a number"))?,
        Err(_) => 1000,
    };
    let mut o = Options {
        sizes: vec![default_size],
        replicas: 3,
        raw_pods: None,
        qps: 500.0,
        burst: None,
        nodes: 50,
        pod_start_delay_ms: 500,
        clients: 16,
        phase_timeout: None,
        keep_logs: false,
        hosts: Vec::new(),
        shards: 32,
    };
    let mut args = std::env::args().skip(1);
    fn number<T: std::str::FromStr>(flag: &str, value: Option<String>) -> Result<T, String> {
        let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
        value.parse().map_err(|_| format!("{flag} {value}: not a number"))
    }
    fn numbers(flag: &str, value: Option<String>) -> Result<Vec<usize>, String> {
        let list = value.ok_or_else(|| format!("{flag} needs a value"))?;
        list.split(',').map(|s| s.trim().parse().map_err(|_| format!("{flag} {list}: not a list of numbers"))).collect()
    }
    while let Some(arg) = args.next() {
        // `--flag=value` as well as `--flag value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        let mut value = || inline.clone().or_else(|| args.next());
        match flag.as_str() {
            // What `cargo bench` passes to every bench binary.
            "--bench" => {}
            "--size" => o.sizes = vec![number(&flag, value())?],
            "--sizes" => o.sizes = numbers(&flag, value())?,
            "--replicas" => o.replicas = number(&flag, value())?,
            "--raw-pods" => o.raw_pods = Some(number(&flag, value())?),
            "--qps" => o.qps = number(&flag, value())?,
            "--burst" => o.burst = Some(number(&flag, value())?),
            "--nodes" => o.nodes = number(&flag, value())?,
            "--pod-start-delay-ms" => o.pod_start_delay_ms = number(&flag, value())?,
            "--clients" => o.clients = number::<usize>(&flag, value())?.max(1),
            "--phase-timeout" => o.phase_timeout = Some(Duration::from_secs(number(&flag, value())?)),
            "--keep-logs" => o.keep_logs = true,
            "--hosts" => o.hosts = numbers(&flag, value())?,
            "--shards" => o.shards = number(&flag, value())?,
            "-h" | "--help" => {
                return Err("flags: --size N | --sizes a,b,c, --replicas R, --raw-pods K, --qps Q, --burst B, \
                            --nodes N, --pod-start-delay-ms MS, --clients C, --phase-timeout S, --keep-logs, \
                            --hosts 1,2,3 [--shards S]"
                    .into());
            }
            // Filters and flags cargo or libtest users might pass out of habit.
            other if !other.starts_with('-') => {}
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if o.sizes.is_empty() || o.sizes.contains(&0) || o.replicas == 0 {
        return Err("sizes and replicas must be positive".into());
    }
    Ok(o)
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("scale bench: {e}");
            return ExitCode::from(2);
        }
    };
    let ticks = clock_ticks();
    if !options.hosts.is_empty() {
        return run_sharded(&options);
    }
    let mut results = Vec::new();
    let mut failed = false;
    for &size in &options.sizes {
        match run_size(&options, size, ticks) {
            Ok(r) => results.push(r),
            Err(e) => {
                eprintln!("\nscale bench, {size} Deployments: FAILED: {e}");
                failed = true;
                break;
            }
        }
    }
    if results.len() > 1 {
        print_ratios(&results);
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

// ---------------------------------------------------------------------------------------------
// One size: a fresh server and host, three phases.

struct SizeResult {
    size: usize,
    rows: Vec<Row>,
}

struct Row {
    phase: &'static str,
    time: Duration,
    host_cpu: Option<f64>,
    /// The machine's 1-minute load average at the phase's end: the figures of a phase that
    /// shared the cores with other work are not comparable.
    load: Option<f64>,
}

/// A point in time of both processes and the host's metrics; phases are differences of two.
struct Snapshot {
    at: Instant,
    server: ProcSample,
    host: Option<ProcSample>,
    metrics: Option<Scrape>,
}

fn run_size(o: &Options, size: usize, ticks: f64) -> Result<SizeResult, String> {
    let r = o.replicas;
    let raw_pods = o.raw_pods.unwrap_or((size * r).min(3000));
    // Generous: before the scale work, the image change of 1,000 Deployments took 570 s on a
    // busy 2-core machine.
    let timeout = o.phase_timeout.unwrap_or(Duration::from_secs_f64((size as f64 * 0.12).max(1200.0)));
    let dir = std::env::temp_dir().join(format!("wasmcm-scale-{}-{size}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let binary = env!("CARGO_BIN_EXE_wasmcm");

    println!();
    println!("== {size} Deployments × {r} replicas = {} pods, in {NAMESPACES} namespaces ==", size * r);
    println!(
        "server: `wasmcm cluster --insecure-http --nodes {} --pod-start-delay-ms {}`; host: `wasmcm run \
         --leader-elect=false --kube-api-qps {}{}`; {} client threads over plain HTTP/1.1 (keep-alive)",
        o.nodes,
        o.pod_start_delay_ms,
        o.qps,
        o.burst.map(|b| format!(" --kube-api-burst {b}")).unwrap_or_else(|| " (burst: the host's default)".into()),
        o.clients
    );
    println!(
        "host writes = wasmcm_intents_executed_total (object creates, updates, status updates and deletes the \
         host sent, failed ones included; Events not counted); CPU from /proc/<pid>/stat at {ticks} ticks/s; \
         peak RSS = VmHWM; logs in {}",
        dir.display()
    );

    let (mut server, addr) = start_server(o, &dir)?;
    let mut http = Http::new(&addr);

    for ns in (0..NAMESPACES).map(namespace).chain([RAW_NAMESPACE.to_string()]) {
        create(
            &mut http,
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )?;
    }
    let server_idle = server.sample()?;

    // Phase 0: the server alone.
    let before = Snapshot { at: Instant::now(), server: server.sample()?, host: None, metrics: None };
    parallel(&addr, o.clients, raw_pods, |http, i| {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("raw-{i:05}"), "labels": {"app": "raw"}},
            "spec": {"containers": [{"name": "c", "image": IMAGE_BEFORE}]},
        });
        create(http, &format!("/api/v1/namespaces/{RAW_NAMESPACE}/pods"), &pod)
    })?;
    let after = Snapshot { at: Instant::now(), server: server.sample()?, host: None, metrics: None };
    let raw_rate = raw_pods as f64 / after.at.duration_since(before.at).as_secs_f64();
    let mut table = Table::new();
    table.row(phase_row(
        &format!("raw: {raw_pods} pod creates, no host"),
        raw_pods,
        None,
        &before,
        &after,
        ticks,
        size,
    ));
    let mut rows = vec![Row { phase: "raw", time: after.at - before.at, host_cpu: None, load: load_average() }];

    // The raw pods would otherwise be in the host's caches and in the server's work.
    let (status, body) = http.call("DELETE", &format!("/api/v1/namespaces/{RAW_NAMESPACE}"), None)?;
    if !(200..300).contains(&status) {
        return Err(format!("deleting namespace {RAW_NAMESPACE}: {status}: {}", String::from_utf8_lossy(&body)));
    }
    let gone_by = Instant::now() + Duration::from_secs(300);
    loop {
        let (status, _) = http.call("GET", &format!("/api/v1/namespaces/{RAW_NAMESPACE}"), None)?;
        if status == 404 {
            break;
        }
        if Instant::now() > gone_by {
            return Err(format!("namespace {RAW_NAMESPACE} still there 300 s after its deletion"));
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    let metrics_addr = free_port()?;
    let mut host_cmd = Command::new(binary);
    host_cmd
        .arg("run")
        .arg("--kubeconfig")
        .arg(dir.join("kubeconfig"))
        .args(["--leader-elect=false", "--kube-api-qps", &o.qps.to_string()])
        // Parsed for the reasons of the warnings and errors (below the table).
        .args(["--log-format", "json"])
        .args(["--metrics-bind-address", &metrics_addr]);
    if let Some(b) = o.burst {
        host_cmd.args(["--kube-api-burst", &b.to_string()]);
    }
    let mut host = Process::spawn("host", &mut host_cmd, &dir, false)?;
    let mut admin = Http::new(&metrics_addr);
    let ready_by = Instant::now() + Duration::from_secs(180);
    loop {
        host.check_alive()?;
        if matches!(admin.call("GET", "/readyz", None), Ok((200, _))) {
            break;
        }
        if Instant::now() > ready_by {
            return Err(format!("the host was not ready after 180 s; {}", host.log_tail()));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let host_idle = host.sample()?;
    let snapshot = |server: &mut Process, host: &mut Process, admin: &mut Http| -> Result<Snapshot, String> {
        Ok(Snapshot {
            at: Instant::now(),
            server: server.sample()?,
            host: Some(host.sample()?),
            metrics: Some(Scrape::get(admin)?),
        })
    };

    let mut log = LogReasons::new(&host.log);

    // Phase 1: rollout.
    log.skip();
    let before = snapshot(&mut server, &mut host, &mut admin)?;
    create_deployments(&addr, o.clients, size, r)?;
    let created = before.at.elapsed();
    // Each phase ends alike: wait for its generation, measure, and on a timeout print what was
    // measured and the log's reasons so far before failing.
    let mut reasons: Vec<(&'static str, BTreeMap<String, usize>)> = Vec::new();
    let mut end_phase =
        |log: &mut LogReasons, phase: &'static str, waited: Result<(), String>, before: &Snapshot, after: &Snapshot| {
            table.row(phase_row(phase, size * r, Some(raw_rate), before, after, ticks, size));
            rows.push(Row {
                phase,
                time: after.at - before.at,
                host_cpu: cpu(before, after, ticks).0,
                load: load_average(),
            });
            reasons.push((phase, log.read()));
            waited.inspect_err(|_| {
                table.print();
                for (phase, r) in &reasons {
                    print_reasons(phase, r);
                }
            })
        };
    let waited = wait_converged(&mut http, &mut host, size, r, 1, before.at + timeout);
    let after = snapshot(&mut server, &mut host, &mut admin)?;
    end_phase(&mut log, "rollout", waited, &before, &after)?;
    let notes_rollout = format!("the clients created the {size} Deployments in {:.1} s", created.as_secs_f64());
    let check_rollout = check_pods(&mut http, size, r)?;
    let rollout_memory = (after.host, after.metrics.clone());

    // Phase 2: image change.
    log.skip();
    let before = snapshot(&mut server, &mut host, &mut admin)?;
    parallel(&addr, o.clients, size, |http, i| {
        // Strategic merge, as `kubectl set image`: containers merge by name.
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": IMAGE_AFTER}]}}}});
        let path = format!("/apis/apps/v1/namespaces/{}/deployments/{}", namespace(i), deployment_name(i));
        let body = serde_json::to_vec(&patch).map_err(|e| e.to_string())?;
        let (status, answer) = retrying(http, "PATCH", &path, Some(("application/strategic-merge-patch+json", &body)))?;
        if (200..300).contains(&status) {
            Ok(())
        } else {
            Err(format!("PATCH {path}: {status}: {}", String::from_utf8_lossy(&answer)))
        }
    })?;
    let patched = before.at.elapsed();
    let waited = wait_converged(&mut http, &mut host, size, r, 2, before.at + timeout);
    let after = snapshot(&mut server, &mut host, &mut admin)?;
    end_phase(&mut log, "image change", waited, &before, &after)?;
    let check_image = check_pods(&mut http, size, r)?;

    table.print();
    let loads: Vec<String> = rows
        .iter()
        .map(|r| format!("{} {}", r.phase, r.load.map(|l| format!("{l:.1}")).unwrap_or_else(|| "n/a".into())))
        .collect();
    println!(
        "  load average (1 min) at each phase's end, {} CPUs: {}",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        loads.join(", ")
    );
    println!("  {notes_rollout}; patched their image in {:.1} s", patched.as_secs_f64());
    println!("  pods per Deployment after the rollout: {}", check_rollout.summary(r));
    println!("  pods per Deployment after the image change: {}", check_image.summary(r));
    for (phase, r) in &reasons {
        print_reasons(phase, r);
    }

    println!("memory:");
    let mib = |kib: u64| kib as f64 / 1024.0;
    let host_memory = |label: &str, sample: &Option<ProcSample>, metrics: &Option<Scrape>| {
        let (Some(sample), Some(metrics)) = (sample, metrics) else { return };
        let objects = metrics.by_label("wasmcm_informer_objects", "kind");
        let cached: f64 = objects.values().sum();
        let kinds: Vec<String> = objects.iter().map(|(k, v)| format!("{k} {v:.0}")).collect();
        let growth = sample.rss_kib.saturating_sub(host_idle.rss_kib) as f64 * 1024.0;
        let per_object = if cached > 0.0 { format!("{:.0} bytes", growth / cached) } else { "n/a".into() };
        let bytes = metrics.by_label("wasmcm_informer_bytes", "kind").values().sum::<f64>();
        let json_part = if metrics.has("wasmcm_informer_bytes") && cached > 0.0 {
            format!(
                "; JSON {:.0} bytes/object (wasmcm_informer_bytes), overhead beyond the JSON {:.0} bytes/object",
                bytes / cached,
                (growth - bytes) / cached
            )
        } else {
            "; JSON bytes/object n/a (no wasmcm_informer_bytes)".into()
        };
        println!(
            "  host, {label}: RSS {:.0} MiB ({:.0} idle with plugins loaded), {cached:.0} cached objects ({}) → \
             {per_object} of RSS growth per cached object{json_part}",
            mib(sample.rss_kib),
            mib(host_idle.rss_kib),
            kinds.join(", "),
        );
    };
    host_memory("after the rollout", &rollout_memory.0, &rollout_memory.1);
    host_memory("after the image change", &after.host, &after.metrics);
    let stored = check_image.stored();
    let server_now = server.sample()?;
    println!(
        "  server, after the image change: RSS {:.0} MiB ({:.0} with the namespaces alone), {stored} stored objects \
         in the bench namespaces ({} pods, {} ReplicaSets, {} Deployments, {} Events) → {:.0} bytes of RSS per \
         stored object, {:.0} bytes of RSS growth per stored object",
        mib(server_now.rss_kib),
        mib(server_idle.rss_kib),
        check_image.pods,
        check_image.replica_sets,
        check_image.deployments,
        check_image.events,
        server_now.rss_kib as f64 * 1024.0 / stored.max(1) as f64,
        server_now.rss_kib.saturating_sub(server_idle.rss_kib) as f64 * 1024.0 / stored.max(1) as f64,
    );

    host.stop();
    server.stop();
    let bad = check_rollout.violations.len() + check_image.violations.len();
    if bad > 0 {
        return Err(format!("{bad} Deployments ended a phase with more or fewer pods than they asked for (above)"));
    }
    if !o.keep_logs {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(SizeResult { size, rows })
}

// ---------------------------------------------------------------------------------------------
// Scale-out: the same rollout on 1, 2, 3 … replicas run with `--shards`.

fn run_sharded(o: &Options) -> ExitCode {
    let size = o.sizes[0];
    println!();
    println!(
        "== scale-out: {size} Deployments × {} replicas in {NAMESPACES} namespaces, on {:?} replicas of `wasmcm run \
         --shards {} --kube-api-qps {}` (a fresh server each) ==",
        o.replicas, o.hosts, o.shards, o.qps
    );
    println!(
        "converge = from the first create until every Deployment is available; cached = the replica's \
         wasmcm_informer_objects; peak RSS = VmHWM"
    );
    let mut rows = Vec::new();
    for &hosts in &o.hosts {
        match sharded_rollout(o, size, hosts) {
            Ok(row) => rows.push(row),
            Err(e) => {
                eprintln!("\nscale-out bench, {hosts} replicas: FAILED: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let mut table = Table {
        rows: vec![
            [
                "replicas",
                "converge s",
                "vs 1",
                "shards held",
                "cached objects",
                "most cached vs 1",
                "RSS MiB",
                "peak RSS MiB",
            ]
            .map(String::from)
            .to_vec(),
        ],
    };
    let base = rows.first().map(|r: &ShardedRow| (r.converge, r.cached.iter().copied().max().unwrap_or(0)));
    for r in &rows {
        let join = |v: Vec<String>| v.join(" / ");
        let (t0, c0) = base.unwrap_or((r.converge, 1));
        let most = r.cached.iter().copied().max().unwrap_or(0);
        table.row(vec![
            r.hosts.to_string(),
            format!("{:.1}", r.converge.as_secs_f64()),
            format!("{:.2}", r.converge.as_secs_f64() / t0.as_secs_f64().max(1e-9)),
            join(r.held.iter().map(|h| format!("{h:.0}")).collect()),
            join(r.cached.iter().map(u64::to_string).collect()),
            format!("{:.2}", most as f64 / c0.max(1) as f64),
            join(r.rss_kib.iter().map(|k| format!("{:.0}", *k as f64 / 1024.0)).collect()),
            join(r.peak_kib.iter().map(|k| format!("{:.0}", *k as f64 / 1024.0)).collect()),
        ]);
    }
    table.print();
    ExitCode::SUCCESS
}

struct ShardedRow {
    hosts: usize,
    converge: Duration,
    held: Vec<f64>,
    cached: Vec<u64>,
    rss_kib: Vec<u64>,
    peak_kib: Vec<u64>,
}

fn sharded_rollout(o: &Options, size: usize, hosts: usize) -> Result<ShardedRow, String> {
    const NAMES: [&str; 8] = ["host-1", "host-2", "host-3", "host-4", "host-5", "host-6", "host-7", "host-8"];
    if hosts == 0 || hosts > NAMES.len() {
        return Err(format!("--hosts: 1 to {} replicas", NAMES.len()));
    }
    let timeout = o.phase_timeout.unwrap_or(Duration::from_secs_f64((size as f64 * 0.12).max(1200.0)));
    let dir = std::env::temp_dir().join(format!("wasmcm-scale-out-{}-{hosts}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let binary = env!("CARGO_BIN_EXE_wasmcm");
    let (mut server, addr) = start_server(o, &dir)?;
    let mut http = Http::new(&addr);
    for ns in (0..NAMESPACES).map(namespace) {
        create(
            &mut http,
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )?;
    }
    let mut replicas = Vec::new();
    for name in &NAMES[..hosts] {
        let metrics = free_port()?;
        let mut command = Command::new(binary);
        command
            .arg("run")
            .arg("--kubeconfig")
            .arg(dir.join("kubeconfig"))
            .args(["--shards", &o.shards.to_string(), "--leader-elect-resource-namespace", "default"])
            .args(["--kube-api-qps", &o.qps.to_string(), "--metrics-bind-address", &metrics])
            .env("POD_NAME", name);
        if let Some(b) = o.burst {
            command.args(["--kube-api-burst", &b.to_string()]);
        }
        replicas.push((Process::spawn(name, &mut command, &dir, false)?, Http::new(&metrics)));
    }
    // Every replica ready, and the shards spread over them (each at most its fair share).
    let fair = (o.shards as usize).div_ceil(hosts) as f64;
    let ready_by = Instant::now() + Duration::from_secs(180);
    loop {
        let mut held = Vec::new();
        for (process, admin) in &mut replicas {
            process.check_alive()?;
            let scrape = match admin.call("GET", "/readyz", None) {
                Ok((200, _)) => Scrape::get(admin)?,
                _ => break,
            };
            held.push(scrape.total("wasmcm_shard_held").unwrap_or(0.0));
        }
        if held.len() == hosts && held.iter().sum::<f64>() == o.shards as f64 && held.iter().all(|h| *h <= fair) {
            break;
        }
        if Instant::now() > ready_by {
            return Err(format!("the shards were not spread over {hosts} replicas after 180 s: {held:?}"));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let started = Instant::now();
    let r = o.replicas;
    create_deployments(&addr, o.clients, size, r)?;
    wait_converged(&mut http, &mut replicas[0].0, size, r, 1, started + timeout)?;
    let converge = started.elapsed();
    let mut row = ShardedRow { hosts, converge, held: vec![], cached: vec![], rss_kib: vec![], peak_kib: vec![] };
    for (process, admin) in &mut replicas {
        let scrape = Scrape::get(admin)?;
        let sample = process.sample()?;
        row.held.push(scrape.total("wasmcm_shard_held").unwrap_or(0.0));
        row.cached.push(scrape.total("wasmcm_informer_objects").unwrap_or(0.0) as u64);
        row.rss_kib.push(sample.rss_kib);
        row.peak_kib.push(sample.peak_rss_kib);
    }
    for (process, _) in &mut replicas {
        process.stop();
    }
    server.stop();
    if !o.keep_logs {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(row)
}

/// `wasmcm cluster` over plain HTTP, its kubeconfig in `dir`; and the address it serves at.
fn start_server(o: &Options, dir: &Path) -> Result<(Process, String), String> {
    let mut server = Process::spawn(
        "server",
        Command::new(env!("CARGO_BIN_EXE_wasmcm"))
            .args(["cluster", "--insecure-http", "--nodes", &o.nodes.to_string()])
            .args(["--pod-start-delay-ms", &o.pod_start_delay_ms.to_string()])
            .arg("--kubeconfig")
            .arg(dir.join("kubeconfig")),
        dir,
        true,
    )?;
    let url = server.first_line_after("wasmcm cluster serving at ", Duration::from_secs(60))?;
    let addr = url.strip_prefix("http://").ok_or_else(|| format!("the server is not plain HTTP: {url}"))?.to_string();
    Ok((server, addr))
}

/// The bench's `size` Deployments of `replicas` pods each, created by `clients` threads.
fn create_deployments(addr: &str, clients: usize, size: usize, replicas: usize) -> Result<(), String> {
    parallel(addr, clients, size, |http, i| {
        let name = deployment_name(i);
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": IMAGE_BEFORE}]},
                },
            },
        });
        create(http, &format!("/apis/apps/v1/namespaces/{}/deployments", namespace(i)), &deployment)
    })
}

fn namespace(i: usize) -> String {
    format!("bench-{}", i % NAMESPACES)
}

fn deployment_name(i: usize) -> String {
    format!("d-{i:05}")
}

fn free_port() -> Result<String, String> {
    // Bound and released: a small race with other programs, acceptable for a bench.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("finding a free port: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    Ok(addr.to_string())
}

// ---------------------------------------------------------------------------------------------
// Convergence and the pod check.

/// Whether a Deployment's status shows `replicas` updated and available pods, no more, at the
/// generation the bench wrote last (`generation`: 1 after creation, 2 after the patch).
fn converged(d: &Value, replicas: usize, generation: i64) -> bool {
    let int = |p: &str| d.pointer(p).and_then(Value::as_i64);
    let r = Some(replicas as i64);
    int("/metadata/generation") == Some(generation)
        && int("/status/observedGeneration") == Some(generation)
        && int("/status/replicas") == r
        && int("/status/updatedReplicas") == r
        && int("/status/availableReplicas") == r
}

fn list(http: &mut Http, path: &str) -> Result<Vec<Value>, String> {
    let (status, body) = retrying(http, "GET", path, None)?;
    if status != 200 {
        return Err(format!("GET {path}: {status}: {}", String::from_utf8_lossy(&body)));
    }
    let mut list: Value = serde_json::from_slice(&body).map_err(|e| format!("GET {path}: {e}"))?;
    match list.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => Ok(items),
        Some(Value::Null) | None => Ok(Vec::new()),
        Some(other) => Err(format!("GET {path}: items is not a list: {other}")),
    }
}

/// Polls the Deployments until all converged. A namespace whose Deployments all converged is
/// not listed again until the others have (the lists are what loads the server most); then
/// one more pass over all confirms.
fn wait_converged(
    http: &mut Http,
    host: &mut Process,
    size: usize,
    replicas: usize,
    generation: i64,
    deadline: Instant,
) -> Result<(), String> {
    let expected: Vec<usize> = (0..NAMESPACES).map(|n| (0..size).filter(|i| i % NAMESPACES == n).count()).collect();
    let interval = Duration::from_secs_f64((size as f64 / 5000.0).max(1.0));
    let started = Instant::now();
    let mut last_report = Instant::now();
    let mut pending: BTreeSet<usize> = (0..NAMESPACES).collect();
    let mut counts = [0usize; NAMESPACES];
    loop {
        let mut laggards = Vec::new();
        for &n in &pending.clone() {
            let items = list(http, &format!("/apis/apps/v1/namespaces/{}/deployments", namespace(n)))?;
            counts[n] = items.iter().filter(|d| converged(d, replicas, generation)).count();
            if counts[n] == expected[n] && items.len() == expected[n] {
                pending.remove(&n);
            } else {
                laggards.extend(items.into_iter().filter(|d| !converged(d, replicas, generation)));
            }
        }
        if pending.is_empty() {
            // Everything looked converged namespace by namespace; confirm all at once.
            let mut all = true;
            for n in 0..NAMESPACES {
                let items = list(http, &format!("/apis/apps/v1/namespaces/{}/deployments", namespace(n)))?;
                counts[n] = items.iter().filter(|d| converged(d, replicas, generation)).count();
                if counts[n] != expected[n] || items.len() != expected[n] {
                    all = false;
                    pending.insert(n);
                }
            }
            if all {
                return Ok(());
            }
        }
        let done: usize = counts.iter().sum();
        if Instant::now() > deadline {
            let shown: Vec<String> = laggards
                .iter()
                .take(10)
                .map(|d| {
                    let s = |p: &str| d.pointer(p).map(Value::to_string).unwrap_or_else(|| "-".into());
                    format!(
                        "{}/{} generation {} observed {} replicas {} updated {} available {}",
                        s("/metadata/namespace").trim_matches('"'),
                        s("/metadata/name").trim_matches('"'),
                        s("/metadata/generation"),
                        s("/status/observedGeneration"),
                        s("/status/replicas"),
                        s("/status/updatedReplicas"),
                        s("/status/availableReplicas"),
                    )
                })
                .collect();
            return Err(format!(
                "timed out after {:.0} s: {} of {size} Deployments not converged (e.g.\n    {})",
                started.elapsed().as_secs_f64(),
                size - done,
                shown.join("\n    ")
            ));
        }
        host.check_alive()?;
        if last_report.elapsed() >= Duration::from_secs(15) {
            eprintln!("  … {done}/{size} converged after {:.0} s", started.elapsed().as_secs_f64());
            last_report = Instant::now();
        }
        std::thread::sleep(interval);
    }
}

/// Pods that are not terminating per Deployment, through their ReplicaSet's owner reference,
/// and the counts of what the server stores in the bench namespaces.
#[derive(Default)]
struct PodCheck {
    violations: Vec<String>,
    terminating: usize,
    orphans: usize,
    pods: usize,
    replica_sets: usize,
    deployments: usize,
    events: usize,
}

impl PodCheck {
    fn stored(&self) -> usize {
        self.pods + self.replica_sets + self.deployments + self.events
    }

    fn summary(&self, replicas: usize) -> String {
        let mut s = if self.violations.is_empty() {
            format!("every Deployment has exactly {replicas} (OK)")
        } else {
            format!("{} Deployments with more or fewer than {replicas} (FAILED)", self.violations.len())
        };
        s += &format!("; {} terminating pods, {} pods owned by no ReplicaSet", self.terminating, self.orphans);
        s
    }
}

fn controller_of<'a>(object: &'a Value, kind: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find_map(|o| (o["kind"] == kind && o["controller"] == true).then(|| o["name"].as_str()).flatten())
}

/// A Deployment may briefly show a surplus right after converging (a pod whose deletion the
/// status already counts); the check looks again for up to 30 s before calling it a violation.
fn check_pods(http: &mut Http, size: usize, replicas: usize) -> Result<PodCheck, String> {
    let settle_by = Instant::now() + Duration::from_secs(30);
    let mut first: Option<usize> = None;
    loop {
        let check = count_pods(http, size, replicas)?;
        first.get_or_insert(check.violations.len());
        if check.violations.is_empty() || Instant::now() > settle_by {
            if !check.violations.is_empty() {
                for v in check.violations.iter().take(20) {
                    println!("  VIOLATION {v}");
                }
            }
            if first != Some(check.violations.len()) {
                println!(
                    "  (right after convergence {} Deployments had more or fewer pods; {} after settling)",
                    first.unwrap_or(0),
                    check.violations.len()
                );
            }
            return Ok(check);
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn count_pods(http: &mut Http, size: usize, replicas: usize) -> Result<PodCheck, String> {
    let mut check = PodCheck::default();
    let mut per_deployment: BTreeMap<(String, String), usize> = BTreeMap::new();
    for n in 0..NAMESPACES {
        let ns = namespace(n);
        let replica_sets = list(http, &format!("/apis/apps/v1/namespaces/{ns}/replicasets"))?;
        let owner: BTreeMap<&str, &str> = replica_sets
            .iter()
            .filter_map(|rs| Some((rs.pointer("/metadata/name")?.as_str()?, controller_of(rs, "Deployment")?)))
            .collect();
        let pods = list(http, &format!("/api/v1/namespaces/{ns}/pods"))?;
        for pod in &pods {
            if pod.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) {
                check.terminating += 1;
                continue;
            }
            match controller_of(pod, "ReplicaSet").and_then(|rs| owner.get(rs)) {
                Some(d) => *per_deployment.entry((ns.clone(), d.to_string())).or_default() += 1,
                None => check.orphans += 1,
            }
        }
        check.pods += pods.len();
        check.replica_sets += replica_sets.len();
        check.deployments += list(http, &format!("/apis/apps/v1/namespaces/{ns}/deployments"))?.len();
        check.events += list(http, &format!("/api/v1/namespaces/{ns}/events"))?.len();
    }
    for i in 0..size {
        let key = (namespace(i), deployment_name(i));
        let n = per_deployment.get(&key).copied().unwrap_or(0);
        if n != replicas {
            check.violations.push(format!("{}/{}: {n} pods, asked for {replicas}", key.0, key.1));
        }
    }
    Ok(check)
}

// ---------------------------------------------------------------------------------------------
// Clients.

/// Runs `work(i)` for every i in 0..n on `clients` threads, each with its own connection.
fn parallel(
    addr: &str,
    clients: usize,
    n: usize,
    work: impl Fn(&mut Http, usize) -> Result<(), String> + Sync,
) -> Result<(), String> {
    let next = AtomicUsize::new(0);
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..clients {
            s.spawn(|| {
                let mut http = Http::new(addr);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    if let Err(e) = work(&mut http, i) {
                        errors.lock().unwrap_or_else(|e| e.into_inner()).push(e);
                        // One failure ends the phase: stop handing out work.
                        next.store(n, Ordering::Relaxed);
                        break;
                    }
                }
            });
        }
    });
    let errors = errors.into_inner().unwrap_or_else(|e| e.into_inner());
    match errors.first() {
        None => Ok(()),
        Some(e) => Err(format!("{} client errors, the first: {e}", errors.len())),
    }
}

/// A request, again after 429 and 5xx (the server's answers to overload) a few times.
fn retrying(http: &mut Http, method: &str, path: &str, body: Option<(&str, &[u8])>) -> Result<(u16, Vec<u8>), String> {
    let mut attempt = 0;
    loop {
        let (status, answer) = http.call(method, path, body)?;
        if (status == 429 || status >= 500) && attempt < 10 {
            attempt += 1;
            std::thread::sleep(Duration::from_millis(100 * attempt));
            continue;
        }
        return Ok((status, answer));
    }
}

fn create(http: &mut Http, path: &str, object: &Value) -> Result<(), String> {
    let body = serde_json::to_vec(object).map_err(|e| e.to_string())?;
    let (status, answer) = retrying(http, "POST", path, Some(("application/json", &body)))?;
    // Names are unique in a run: 409 means an earlier attempt on a connection that broke
    // before its answer arrived did create it.
    if (200..300).contains(&status) || status == 409 {
        Ok(())
    } else {
        Err(format!("POST {path}: {status}: {}", String::from_utf8_lossy(&answer)))
    }
}

/// A minimal HTTP/1.1 client with keep-alive: the server is plain HTTP on loopback, and the
/// bench's own client must cost little next to what it measures.
struct Http {
    addr: String,
    conn: Option<BufReader<TcpStream>>,
}

impl Http {
    fn new(addr: &str) -> Http {
        Http { addr: addr.to_string(), conn: None }
    }

    /// One request; on a broken connection (a keep-alive closed by the server) once more on a
    /// new one.
    fn call(&mut self, method: &str, path: &str, body: Option<(&str, &[u8])>) -> Result<(u16, Vec<u8>), String> {
        match self.attempt(method, path, body) {
            Ok(r) => Ok(r),
            Err(_) => {
                self.conn = None;
                self.attempt(method, path, body).map_err(|e| {
                    self.conn = None;
                    format!("{method} http://{}{path}: {e}", self.addr)
                })
            }
        }
    }

    fn attempt(&mut self, method: &str, path: &str, body: Option<(&str, &[u8])>) -> std::io::Result<(u16, Vec<u8>)> {
        use std::io::{Error, ErrorKind};
        let conn = match &mut self.conn {
            Some(c) => c,
            None => {
                let stream = TcpStream::connect(&self.addr)?;
                stream.set_nodelay(true)?;
                stream.set_read_timeout(Some(Duration::from_secs(300)))?;
                self.conn.insert(BufReader::with_capacity(64 * 1024, stream))
            }
        };
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nUser-Agent: wasmcm-scale-bench\r\n",
            self.addr
        )
        .into_bytes();
        let (content_type, payload) = body.unwrap_or(("", &[]));
        if !content_type.is_empty() {
            request.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
        }
        request.extend_from_slice(format!("Content-Length: {}\r\n\r\n", payload.len()).as_bytes());
        request.extend_from_slice(payload);
        conn.get_mut().write_all(&request)?;

        let bad = |what: &str| Error::new(ErrorKind::InvalidData, what.to_string());
        let mut line = String::new();
        if conn.read_line(&mut line)? == 0 {
            return Err(Error::new(ErrorKind::UnexpectedEof, "connection closed"));
        }
        let status: u16 = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| bad(&line))?;
        let (mut length, mut chunked, mut close) = (None, false, false);
        loop {
            line.clear();
            if conn.read_line(&mut line)? == 0 {
                return Err(Error::new(ErrorKind::UnexpectedEof, "connection closed in the headers"));
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else { continue };
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = Some(value.parse::<usize>().map_err(|_| bad(header))?),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => close = value.eq_ignore_ascii_case("close"),
                _ => {}
            }
        }
        let mut answer = Vec::new();
        if chunked {
            loop {
                line.clear();
                conn.read_line(&mut line)?;
                let size = line.trim_end().split(';').next().unwrap_or("");
                let size = usize::from_str_radix(size.trim(), 16).map_err(|_| bad(&line))?;
                if size == 0 {
                    // Trailers, up to the empty line.
                    loop {
                        line.clear();
                        if conn.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
                            break;
                        }
                    }
                    break;
                }
                let start = answer.len();
                answer.resize(start + size, 0);
                conn.read_exact(&mut answer[start..])?;
                line.clear();
                conn.read_line(&mut line)?;
            }
        } else if let Some(length) = length {
            answer.resize(length, 0);
            conn.read_exact(&mut answer)?;
        } else if !(status == 204 || status == 304 || (100..200).contains(&status)) {
            conn.read_to_end(&mut answer)?;
            close = true;
        }
        if close {
            self.conn = None;
        }
        Ok((status, answer))
    }
}

// ---------------------------------------------------------------------------------------------
// The host's metrics.

/// One scrape of a Prometheus text exposition: (name, labels, value) per series.
#[derive(Clone, Default)]
struct Scrape {
    series: Vec<(String, BTreeMap<String, String>, f64)>,
}

impl Scrape {
    fn get(admin: &mut Http) -> Result<Scrape, String> {
        let (status, body) = admin.call("GET", "/metrics", None)?;
        if status != 200 {
            return Err(format!("GET /metrics: {status}"));
        }
        Ok(Scrape::parse(&String::from_utf8_lossy(&body)))
    }

    fn parse(text: &str) -> Scrape {
        let mut series = Vec::new();
        for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
            let Some((head, value)) = line.rsplit_once(' ') else { continue };
            let Ok(value) = value.parse::<f64>() else { continue };
            let (name, labels) = match head.split_once('{') {
                Some((name, rest)) => (name, parse_labels(rest.trim_end_matches('}'))),
                None => (head, BTreeMap::new()),
            };
            series.push((name.to_string(), labels, value));
        }
        Scrape { series }
    }

    fn has(&self, name: &str) -> bool {
        self.series.iter().any(|(n, _, _)| n == name)
    }

    /// Sums of `name`'s series grouped by the values of `labels`.
    fn grouped(&self, name: &str, labels: &[&str]) -> BTreeMap<Vec<String>, f64> {
        let mut out = BTreeMap::new();
        for (n, l, v) in &self.series {
            if n == name {
                let key = labels.iter().map(|k| l.get(*k).cloned().unwrap_or_default()).collect();
                *out.entry(key).or_default() += v;
            }
        }
        out
    }

    fn by_label(&self, name: &str, label: &str) -> BTreeMap<String, f64> {
        self.grouped(name, &[label]).into_iter().map(|(k, v)| (k.join(""), v)).collect()
    }

    fn total(&self, name: &str) -> Option<f64> {
        self.has(name).then(|| self.series.iter().filter(|(n, _, _)| n == name).map(|(_, _, v)| v).sum())
    }
}

fn parse_labels(text: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut rest = text;
    while let Some((key, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, e)) = chars.next() {
                        value.push(if e == 'n' { '\n' } else { e });
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        labels.insert(key.trim_start_matches(',').trim().to_string(), value);
        rest = &after[end..];
    }
    labels
}

/// After minus before, per group (a counter that did not exist before counts from 0).
fn delta(before: &Scrape, after: &Scrape, name: &str, labels: &[&str]) -> BTreeMap<Vec<String>, f64> {
    let old = before.grouped(name, labels);
    after
        .grouped(name, labels)
        .into_iter()
        .map(|(k, v)| {
            let d = v - old.get(&k).copied().unwrap_or(0.0);
            (k, d)
        })
        .filter(|(_, d)| *d != 0.0)
        .collect()
}

/// The host's warnings and errors by message, with every word holding a digit (names, counts,
/// versions) replaced by `#`: the metrics say which plugin failed how often, the log says why.
/// Write conflicts are logged at debug level only; they show as `write_failed` in the table.
struct LogReasons {
    path: PathBuf,
    offset: u64,
}

impl LogReasons {
    fn new(path: &Path) -> LogReasons {
        LogReasons { path: path.to_path_buf(), offset: 0 }
    }

    fn skip(&mut self) {
        self.offset = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
    }

    /// The reasons logged since the last call, and the count of each.
    fn read(&mut self) -> BTreeMap<String, usize> {
        use std::io::{Seek, SeekFrom};
        let mut reasons = BTreeMap::new();
        let Ok(mut file) = std::fs::File::open(&self.path) else { return reasons };
        let mut text = Vec::new();
        if file.seek(SeekFrom::Start(self.offset)).and_then(|_| file.read_to_end(&mut text)).is_err() {
            return reasons;
        }
        // A line being written stays for the next read.
        let complete = text.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
        self.offset += complete as u64;
        for line in String::from_utf8_lossy(&text[..complete]).lines() {
            let Ok(entry) = serde_json::from_str::<Value>(line) else { continue };
            if !matches!(entry["level"].as_str(), Some("WARN" | "ERROR")) {
                continue;
            }
            let message = entry.pointer("/fields/message").and_then(Value::as_str).unwrap_or("");
            let words: Vec<&str> = message
                .split_whitespace()
                .map(|w| if w.bytes().any(|b| b.is_ascii_digit()) { "#" } else { w })
                .collect();
            let reason = format!("{} {}", entry["level"].as_str().unwrap_or(""), words.join(" "));
            *reasons.entry(reason).or_default() += 1;
        }
        reasons
    }
}

fn print_reasons(phase: &str, reasons: &BTreeMap<String, usize>) {
    if reasons.is_empty() {
        println!("  host log, {phase}: no warnings or errors");
        return;
    }
    let mut sorted: Vec<(&String, &usize)> = reasons.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let total: usize = reasons.values().sum();
    println!("  host log, {phase}: {total} warnings and errors, {} distinct; the most frequent:", reasons.len());
    for (reason, n) in sorted.iter().take(5) {
        let reason: String = reason.chars().take(220).collect();
        println!("    {n:>7} × {reason}");
    }
}

// ---------------------------------------------------------------------------------------------
// Processes.

/// A child process, stopped (SIGTERM, then SIGKILL) when dropped: a failing or panicking bench
/// leaves no server or host behind.
struct Process {
    name: &'static str,
    child: Child,
    log: PathBuf,
    stdout: Option<std::sync::mpsc::Receiver<String>>,
}

impl Process {
    fn spawn(name: &'static str, command: &mut Command, dir: &Path, read_stdout: bool) -> Result<Process, String> {
        let log = dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        command.stdin(Stdio::null()).stderr(file);
        command.stdout(if read_stdout { Stdio::piped() } else { Stdio::null() });
        let mut child = command.spawn().map_err(|e| format!("starting the {name}: {e}"))?;
        // Read, and drained to the end so the child never blocks on a full pipe.
        let stdout = child.stdout.take().map(|out| {
            let (send, receive) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    let _ = send.send(line);
                }
            });
            receive
        });
        Ok(Process { name, child, log, stdout })
    }

    fn first_line_after(&mut self, prefix: &str, within: Duration) -> Result<String, String> {
        let deadline = Instant::now() + within;
        let stdout = self.stdout.as_ref().ok_or("stdout not captured")?;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match stdout.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return Ok(rest.trim().to_string());
                    }
                }
                Err(_) => return Err(format!("the {} printed no {prefix:?} line; {}", self.name, self.log_tail())),
            }
        }
    }

    fn check_alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Err(format!("the {} exited ({status}); {}", self.name, self.log_tail())),
            _ => Ok(()),
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n    ");
        format!("the end of {}:\n    {tail}", self.log.display())
    }

    fn sample(&mut self) -> Result<ProcSample, String> {
        self.check_alive()?;
        ProcSample::read(self.child.id())
            .ok_or_else(|| format!("cannot read /proc/{} of the {}", self.child.id(), self.name))
    }

    fn stop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

#[derive(Clone, Copy, Debug)]
struct ProcSample {
    /// utime + stime, in clock ticks.
    cpu_ticks: u64,
    rss_kib: u64,
    peak_rss_kib: u64,
}

impl ProcSample {
    fn read(pid: u32) -> Option<ProcSample> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) may hold spaces and parentheses: count from its end.
        let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
        // After the name: state is field 3, utime 14, stime 15.
        let utime: u64 = fields.get(11)?.parse().ok()?;
        let stime: u64 = fields.get(12)?.parse().ok()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let kib = |key: &str| -> Option<u64> {
            status.lines().find(|l| l.starts_with(key))?.split_whitespace().nth(1)?.parse().ok()
        };
        Some(ProcSample { cpu_ticks: utime + stime, rss_kib: kib("VmRSS:")?, peak_rss_kib: kib("VmHWM:")? })
    }
}

fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

// ---------------------------------------------------------------------------------------------
// Output.

fn cpu(before: &Snapshot, after: &Snapshot, ticks: f64) -> (Option<f64>, f64) {
    let host = match (before.host, after.host) {
        (Some(b), Some(a)) => Some(a.cpu_ticks.saturating_sub(b.cpu_ticks) as f64 / ticks),
        _ => None,
    };
    (host, after.server.cpu_ticks.saturating_sub(before.server.cpu_ticks) as f64 / ticks)
}

fn phase_row(
    phase: &str,
    pods: usize,
    raw_rate: Option<f64>,
    before: &Snapshot,
    after: &Snapshot,
    ticks: f64,
    size: usize,
) -> Vec<String> {
    let seconds = after.at.duration_since(before.at).as_secs_f64();
    let (host_cpu, server_cpu) = cpu(before, after, ticks);
    let na = || "n/a".to_string();
    let mut row = vec![phase.to_string(), format!("{seconds:.1}"), format!("{:.0}", pods as f64 / seconds)];
    match (&before.metrics, &after.metrics) {
        (Some(b), Some(a)) => {
            // A series appears with its first increment: absent before counts as 0.
            let writes = a
                .total("wasmcm_intents_executed_total")
                .map(|w| w - b.total("wasmcm_intents_executed_total").unwrap_or(0.0));
            let rate = writes.map(|w| w / seconds);
            row.push(rate.map(|r| format!("{r:.0}")).unwrap_or_else(na));
            row.push(rate.zip(raw_rate).map(|(r, raw)| format!("{:.2}", r / raw)).unwrap_or_else(na));
            let reconciles = delta(b, a, "wasmcm_reconciles_total", &["plugin"]);
            row.push(if a.has("wasmcm_reconciles_total") {
                reconciles
                    .iter()
                    .map(|(p, n)| format!("{} {:.1}", p[0], n / size as f64))
                    .collect::<Vec<_>>()
                    .join(", ")
            } else {
                na()
            });
            let mut errors: Vec<String> = delta(b, a, "wasmcm_reconciles_total", &["plugin", "outcome"])
                .into_iter()
                .filter(|(k, _)| k[1] != "success")
                .map(|(k, n)| format!("{} {} {n:.0}", k[0], k[1]))
                .collect();
            errors.extend(
                delta(b, a, "wasmcm_plugin_traps_total", &["plugin", "reason"])
                    .into_iter()
                    .map(|(k, n)| format!("{} trap {} {n:.0}", k[0], k[1])),
            );
            errors.extend(
                delta(b, a, "wasmcm_intents_refused_total", &["plugin"])
                    .into_iter()
                    .map(|(k, n)| format!("{} refused {n:.0}", k[0])),
            );
            row.push(if errors.is_empty() { "none".into() } else { errors.join(", ") });
        }
        _ => row.extend(["-", "1.00", "-", "-"].map(String::from)),
    }
    row.push(host_cpu.map(|c| format!("{c:.1}")).unwrap_or_else(|| "-".into()));
    row.push(format!("{server_cpu:.1}"));
    row.push(after.host.map(|h| format!("{:.0}", h.peak_rss_kib as f64 / 1024.0)).unwrap_or_else(|| "-".into()));
    row.push(format!("{:.0}", after.server.peak_rss_kib as f64 / 1024.0));
    row
}

struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new() -> Table {
        let header = [
            "phase",
            "time s",
            "pods/s",
            "host writes/s",
            "÷ raw",
            "reconciles/Deployment",
            "errors by reason",
            "host CPU s",
            "server CPU s",
            "host peak RSS MiB",
            "server peak RSS MiB",
        ];
        Table { rows: vec![header.map(String::from).to_vec()] }
    }

    fn row(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    fn print(&self) {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let width = |c: usize| self.rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns).map(width).collect();
        for (n, row) in self.rows.iter().enumerate() {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(c, (s, w))| {
                    let pad = " ".repeat(w - s.chars().count());
                    // Text columns left-aligned, figures right-aligned.
                    if c == 0 || c == 5 || c == 6 { format!("{s}{pad}") } else { format!("{pad}{s}") }
                })
                .collect();
            println!("{}", cells.join(" | ").trim_end());
            if n == 0 {
                println!("{}", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("-|-"));
            }
        }
    }
}

/// How the phases' time grew with size: a linear host grows as the size does.
fn print_ratios(results: &[SizeResult]) {
    println!();
    println!("growth with size (linear would be the size ratio):");
    for pair in results.windows(2) {
        let (small, large) = (&pair[0], &pair[1]);
        let mut parts = Vec::new();
        for phase in ["rollout", "image change"] {
            let find =
                |r: &SizeResult| r.rows.iter().find(|row| row.phase == phase).map(|row| (row.time, row.host_cpu));
            if let (Some((t1, c1)), Some((t2, c2))) = (find(small), find(large)) {
                let mut part = format!("{phase} time ×{:.2}", t2.as_secs_f64() / t1.as_secs_f64());
                if let (Some(c1), Some(c2)) = (c1, c2)
                    && c1 > 0.0
                {
                    part += &format!(", host CPU ×{:.2}", c2 / c1);
                }
                parts.push(part);
            }
        }
        println!(
            "  {}÷{} (size ×{:.1}): {}",
            large.size,
            small.size,
            large.size as f64 / small.size as f64,
            parts.join("; ")
        );
    }
}
