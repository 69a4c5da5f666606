//! Plugin lifecycle end to end: a host on the embedded cluster runs the stamp test plugin from
//! a manifest directory watched by the reloader, and a test makes a new release by rewriting
//! the plugin file (`wasmcm_stamp::variant`). Swaps under load, shadow rollouts (kept apart,
//! promoted, abandoned), auto-revert of a trapping version, and the admin API and CLI.
//!
//! Every labelled ConfigMap is reconciled continuously (each write wakes the next reconcile),
//! its `data.stamp` saying which version wrote it last and `data.count` how often.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use wasmcm::ClientRate;
use wasmcm::Metrics;
use wasmcm::Reloader;
use wasmcm::{Host, HostConfig};
use wasmcm::{Rollout, RolloutStatus};
use wasmcm_apiserver::Cluster;
use wasmcm_stamp::{LABEL, variant};

/// name → (stamp, count) of the labelled ConfigMaps.
type Stamps = BTreeMap<String, (String, u64)>;

/// A host running only the stamp plugin, from `<dir>/plugins.yaml` and `<dir>/stamp.wasm`.
struct Fixture {
    cluster: Cluster,
    client: Client,
    host: Host,
    metrics: Arc<Metrics>,
    reloader: tokio::task::JoinHandle<()>,
    dir: tempfile::TempDir,
    /// The stamp component as built: stamp v1, version 1.0.0.
    original: Vec<u8>,
}

impl Fixture {
    /// `spec`: YAML lines added under the stamp plugin's `spec:`; `labelled` ConfigMaps exist
    /// before the host starts.
    async fn start(spec: &[&str], labelled: usize) -> Fixture {
        logs::init();
        let (cluster, client) = common::cluster().await;

        let dir = tempfile::tempdir().unwrap();
        let original = std::fs::read(common::guest("wasmcm_stamp.wasm")).unwrap();
        std::fs::write(dir.path().join("stamp.wasm"), &original).unwrap();
        let mut manifest = common::builtins_off(&[]);
        manifest += "- metadata: {name: stamp}\n  spec:\n    source: {file: stamp.wasm}\n";
        for line in spec {
            manifest += &format!("    {line}\n");
        }
        std::fs::write(dir.path().join("plugins.yaml"), manifest).unwrap();

        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        for i in 0..labelled {
            create_configmap(&cms, &format!("cm-{i:03}"), true).await;
        }

        let engine = common::engine().clone();
        let paths = vec![dir.path().to_path_buf()];
        let (versions, failures) = wasmcm::load_all(&engine, &paths, &wasmcm::Trust::of("wasmcm"), Some(&client)).await;
        assert!(failures.is_empty(), "{failures:?}");
        let names: Vec<_> = versions.iter().map(|v| v.name().to_string()).collect();
        assert_eq!(names, ["stamp"], "the built-ins are disabled");
        let metrics = Arc::new(Metrics::default());
        let config = HostConfig { client_rate: ClientRate { qps: 1000.0, burst: 1000 }, ..HostConfig::default() };
        assert!(matches!(config.mode, wasmcm::Mode::Single), "no leader election");
        let host =
            Host::start(common::config(&cluster.kubeconfig).await, versions, config, metrics.clone()).await.unwrap();
        let reloader = Reloader {
            engine,
            client: Some(client.clone()),
            trust: wasmcm::Trust::of("wasmcm"),
            paths,
            objects: None,
            plugins: host.plugins().clone(),
            failures: Arc::new(wasmcm::LoadFailures::new(metrics.clone())),
        }
        .spawn()
        .unwrap();
        Fixture { cluster, client, host, metrics, reloader, dir, original }
    }

    async fn stop(self) {
        self.reloader.abort();
        self.host.shutdown().await;
        self.cluster.shutdown().await;
    }

    /// A new release of the stamp plugin.
    fn release(&self, stamp: &str, version: &str) -> Vec<u8> {
        variant(&self.original, stamp, version).expect("the markers are in the component")
    }

    /// Replaces the plugin file atomically, as a deployment tool would.
    fn install(&self, bytes: &[u8]) {
        let tmp = self.dir.path().join(".stamp.wasm.new");
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, self.dir.path().join("stamp.wasm")).unwrap();
    }

    fn rollout(&self) -> Arc<Rollout> {
        self.host.controller("stamp").expect("the stamp plugin runs").rollout().clone()
    }

    fn live_version(&self) -> String {
        self.rollout().live().plugin.info().version.clone()
    }

    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), "default")
    }

    async fn stamps(&self) -> Stamps {
        let selector = ListParams::default().labels(&format!("{LABEL}=yes"));
        let list = self.configmaps().list(&selector).await.unwrap();
        list.items
            .into_iter()
            .map(|cm| {
                let data = cm.data.unwrap_or_default();
                let stamp = data.get("stamp").cloned().unwrap_or_default();
                let count = data.get("count").and_then(|c| c.parse().ok()).unwrap_or(0);
                (cm.metadata.name.unwrap_or_default(), (stamp, count))
            })
            .collect()
    }

    /// Waits until all `n` labelled ConfigMaps carry `stamp` with a count of at least `count`.
    async fn wait_stamped(&self, n: usize, stamp: &str, count: u64) -> Stamps {
        common::eventually(&format!("{n} ConfigMaps stamped {stamp} with count ≥ {count}"), || async {
            let now = self.stamps().await;
            (now.len() == n && now.values().all(|(s, c)| s == stamp && *c >= count)).then_some(now)
        })
        .await
    }

    /// Waits until every ConfigMap of `before` was reconciled again, by a version stamping `stamp`.
    async fn wait_all_grew(&self, before: &Stamps, stamp: &str) {
        common::eventually(&format!("every ConfigMap's count to grow (stamp {stamp})"), || async {
            let now = self.stamps().await;
            before
                .iter()
                .all(|(name, (_, count))| now.get(name).is_some_and(|(s, c)| s == stamp && c > count))
                .then_some(())
        })
        .await
    }

    /// The sum of the samples of `series` whose labels include all of `labels`; 0 when none.
    fn metric(&self, series: &str, labels: &[&str]) -> f64 {
        common::metric(&self.metrics.encode(), series, labels)
    }

    fn comparisons(&self, version: &str, result: &str) -> f64 {
        let (v, r) = (format!("version=\"{version}\""), format!("result=\"{result}\""));
        self.metric("wasmcm_shadow_comparisons_total", &["plugin=\"stamp\"", &v, &r])
    }

    fn swaps(&self) -> f64 {
        self.metric("wasmcm_plugin_swaps_total", &["plugin=\"stamp\""])
    }

    fn reverts(&self) -> f64 {
        self.metric("wasmcm_plugin_reverts_total", &["plugin=\"stamp\""])
    }

    /// Reconcile samples of the stamp plugin with an outcome other than success.
    fn unsuccessful_reconciles(&self) -> Vec<String> {
        self.metrics
            .encode()
            .lines()
            .filter(|l| l.starts_with("wasmcm_reconciles_total{") && l.contains("plugin=\"stamp\""))
            .filter(|l| !l.contains("outcome=\"success\"") && !l.ends_with(" 0"))
            .map(String::from)
            .collect()
    }

    /// Every stamp any labelled ConfigMap is seen with from now on, as the watch reports it.
    fn watch_stamps(&self) -> Arc<Mutex<BTreeSet<String>>> {
        use kube::runtime::watcher;
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let (api, out) = (self.configmaps(), seen.clone());
        tokio::spawn(async move {
            let config = watcher::Config::default().labels(&format!("{LABEL}=yes"));
            let mut events = std::pin::pin!(watcher(api, config));
            while let Some(event) = events.next().await {
                match event {
                    Ok(watcher::Event::Apply(cm) | watcher::Event::InitApply(cm)) => {
                        if let Some(stamp) = cm.data.and_then(|mut d| d.remove("stamp")) {
                            out.lock().unwrap().insert(stamp);
                        }
                    }
                    Ok(_) => {}
                    // The watcher retries at once: without a pause, a stopped cluster would
                    // keep this task from ever yielding (and the runtime from shutting down).
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        });
        seen
    }
}

async fn create_configmap(api: &Api<ConfigMap>, name: &str, labelled: bool) {
    let labels = if labelled { json!({LABEL: "yes"}) } else { json!({}) };
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
    api.create(&PostParams::default(), &cm).await.unwrap();
}

/// The versions of a status in a given state, as (version, digest).
fn in_state(status: &RolloutStatus, state: &str) -> Vec<(String, String)> {
    status.versions.iter().filter(|v| v.state == state).map(|v| (v.version.clone(), v.digest.clone())).collect()
}

/// What the reloader logs, kept to look for what it decided.
mod logs {
    use std::sync::Mutex;

    static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());

    struct Writer;

    impl std::io::Write for Writer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            LOGS.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    pub fn init() {
        let _ = tracing_subscriber::fmt()
            .with_writer(|| Writer)
            .with_ansi(false)
            .with_env_filter(tracing_subscriber::EnvFilter::new("wasmcm::lifecycle::reload=info"))
            .try_init();
    }

    /// The log lines containing all of `words`.
    pub fn lines(words: &[&str]) -> Vec<String> {
        let logs = LOGS.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&logs)
            .lines()
            .filter(|l| words.iter().all(|w| l.contains(w)))
            .map(String::from)
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swap_under_load_loses_no_key_and_no_reconcile_fails() {
    const N: usize = 200;
    let f = Fixture::start(&[], N).await;
    f.wait_stamped(N, "v1", 2).await;
    assert_eq!(f.swaps(), 0.0);

    let v2 = f.release("v2", "2.0.0");
    let started = std::time::Instant::now();
    f.install(&v2);
    let swapped = f.wait_stamped(N, "v2", 0).await;
    eprintln!("all {N} ConfigMaps stamped by v2 {:.2} s after the file was replaced", started.elapsed().as_secs_f64());
    assert_eq!(f.live_version(), "2.0.0");
    assert_eq!(f.rollout().live().plugin.digest(), common::sha256(&v2));

    // No key fell out of the queue in the swap: every one is still reconciled, by v2.
    f.wait_all_grew(&swapped, "v2").await;

    // Two reconciles of one key at once would have conflicted on resourceVersion (write_failed).
    assert_eq!(f.unsuccessful_reconciles(), Vec::<String>::new());
    let ok = |version: &str| {
        f.metric(
            "wasmcm_reconciles_total",
            &["plugin=\"stamp\"", &format!("version=\"{version}\""), "outcome=\"success\""],
        )
    };
    let (v1_ok, v2_ok) = (ok("1.0.0"), ok("2.0.0"));
    eprintln!("successful reconciles: {v1_ok} by 1.0.0, {v2_ok} by 2.0.0");
    assert!(v1_ok >= 2.0 * N as f64 && v2_ok >= N as f64, "{v1_ok} {v2_ok}");
    assert_eq!(f.swaps(), 1.0);
    f.stop().await;
}

/// A release written in place, in two parts with a pause between them longer than any quiet
/// spell a watcher could wait out: the host reads it once, whole, when the file is closed. The
/// half it could have read is never loaded (a failed load would be counted), and the rename of
/// a release is swapped in at once, with no quiet spell (the swap test's figure).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_release_written_in_place_is_read_once_when_closed() {
    use std::io::Write;
    let f = Fixture::start(&[], 1).await;
    f.wait_stamped(1, "v1", 1).await;
    let failures = || f.metric("wasmcm_plugin_load_failures_total", &["plugin=\"stamp\""]);

    let v2 = f.release("v2", "2.0.0");
    let (first, rest) = v2.split_at(v2.len() / 2);
    let mut file =
        std::fs::OpenOptions::new().write(true).truncate(true).open(f.dir.path().join("stamp.wasm")).unwrap();
    file.write_all(first).unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(f.live_version(), "1.0.0", "nothing swapped while the file is half written");
    file.write_all(rest).unwrap();
    drop(file);
    f.wait_stamped(1, "v2", 0).await;
    assert_eq!(f.live_version(), "2.0.0");
    assert_eq!(failures(), 0.0, "the half-written file was read");
    assert_eq!(f.swaps(), 1.0);
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_disagreeing_shadow_is_never_promoted_and_an_agreeing_one_is() {
    const N: usize = 5;
    let f = Fixture::start(&["rollout: {strategy: Shadow, agreements: 20}"], N).await;
    f.wait_stamped(N, "v1", 2).await;
    let seen = f.watch_stamps();

    // v2 stamps differently: it disagrees on every labelled ConfigMap, and agrees (doing
    // nothing) on unlabelled ones.
    f.install(&f.release("v2", "2.0.0"));
    common::eventually("v2 to run in shadow", || async {
        (in_state(&f.rollout().status(), "shadow").first().map(|v| v.0.as_str()) == Some("2.0.0")).then_some(())
    })
    .await;
    for i in 0..30 {
        create_configmap(&f.configmaps(), &format!("plain-{i:02}"), false).await;
    }
    common::eventually("v2 to disagree and to agree 20 times", || async {
        (f.comparisons("2.0.0", "mismatch") > 0.0 && f.comparisons("2.0.0", "agreement") >= 20.0).then_some(())
    })
    .await;
    eprintln!(
        "v2 in shadow: {} agreements, {} mismatches",
        f.comparisons("2.0.0", "agreement"),
        f.comparisons("2.0.0", "mismatch")
    );
    assert_eq!(f.live_version(), "1.0.0", "a candidate that disagreed is not promoted");
    assert_eq!(f.swaps(), 0.0);
    assert_eq!(in_state(&f.rollout().status(), "shadow")[0].0, "2.0.0", "still in shadow");
    let before = f.stamps().await;
    f.wait_all_grew(&before, "v1").await;

    // The same stamp under a new version agrees everywhere: promoted after 20 agreements.
    let v101 = f.release("v1", "1.0.1");
    f.install(&v101);
    common::eventually("1.0.1 to be promoted", || async { (f.live_version() == "1.0.1").then_some(()) }).await;
    assert_eq!(f.rollout().live().plugin.digest(), common::sha256(&v101));
    assert_eq!(f.swaps(), 1.0);
    assert!(f.comparisons("1.0.1", "agreement") >= 20.0);
    assert_eq!(f.comparisons("1.0.1", "mismatch"), 0.0);
    assert!(in_state(&f.rollout().status(), "shadow").is_empty());

    // A shadow's writes are compared, never performed.
    let before = f.stamps().await;
    f.wait_all_grew(&before, "v1").await;
    assert_eq!(*seen.lock().unwrap(), BTreeSet::from(["v1".to_string()]), "no ConfigMap was ever stamped v2");
    assert_eq!(f.unsuccessful_reconciles(), Vec::<String>::new());
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_disagreeing_shadow_is_abandoned_when_the_manifest_says_so() {
    const N: usize = 5;
    let f = Fixture::start(&["rollout: {strategy: Shadow, agreements: 20, abandonOnMismatch: true}"], N).await;
    f.wait_stamped(N, "v1", 2).await;
    let seen = f.watch_stamps();

    let v2 = f.release("v2", "2.0.0");
    f.install(&v2);
    let failed = common::eventually("v2 to be abandoned", || async {
        let status = f.rollout().status();
        let failed = status.versions.into_iter().find(|v| v.state == "failed")?;
        Some(failed)
    })
    .await;
    assert_eq!((failed.version.as_str(), failed.digest.clone()), ("2.0.0", common::sha256(&v2)));
    let reason = failed.reason.unwrap_or_default();
    assert!(reason.contains("abandoned in shadow") && reason.contains("stamp"), "{reason}");
    assert!(f.comparisons("2.0.0", "mismatch") >= 1.0);
    let status = f.rollout().status();
    assert!(in_state(&status, "shadow").is_empty(), "no candidate any more");
    assert_eq!(in_state(&status, "live"), [("1.0.0".to_string(), common::sha256(&f.original))]);
    assert_eq!(f.swaps(), 0.0);

    let before = f.stamps().await;
    f.wait_all_grew(&before, "v1").await;
    assert_eq!(*seen.lock().unwrap(), BTreeSet::from(["v1".to_string()]), "no ConfigMap was ever stamped v2");
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_version_that_traps_is_reverted_and_objects_keep_converging() {
    const N: usize = 10;
    let f = Fixture::start(&["revert: {window: 20, maxFailures: 5}"], N).await;
    f.wait_stamped(N, "v1", 2).await;

    let trap = f.release("trap", "9.9.9");
    f.install(&trap);
    common::eventually("the trapping version to be reverted", || async { (f.reverts() >= 1.0).then_some(()) }).await;
    assert_eq!(f.swaps(), 1.0, "it was promoted once");
    assert_eq!(f.reverts(), 1.0);
    assert_eq!(f.live_version(), "1.0.0");
    let traps = f.metric("wasmcm_plugin_traps_total", &["plugin=\"stamp\"", "version=\"9.9.9\""]);
    assert!(traps > 5.0, "more than maxFailures traps: {traps}");
    let status = f.rollout().status();
    assert_eq!(in_state(&status, "failed"), [("9.9.9".to_string(), common::sha256(&trap))]);
    assert!(in_state(&status, "previous").is_empty(), "nothing to revert to any more");

    // Whoever looks at the object whose reconcile tipped the balance is told.
    let event = common::event(&f.client, Some("default"), "reason=PluginReverted").await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let message = event.message.unwrap_or_default();
    assert!(message.contains("9.9.9") && message.contains("reverted to 1.0.0"), "{message}");
    assert!(event.involved_object.name.is_some_and(|n| n.starts_with("cm-")));

    // The keys that trapped are retried by the restored version.
    let before = f.stamps().await;
    f.wait_all_grew(&before, "v1").await;

    // The same bytes again: refused, however often they are written.
    f.install(&trap);
    let refused = common::eventually("the reloader to refuse the same bytes", || async {
        logs::lines(&["9.9.9", "refused", "rejected before"]).into_iter().next()
    })
    .await;
    eprintln!("{refused}");
    assert_eq!((f.live_version().as_str(), f.swaps(), f.reverts()), ("1.0.0", 1.0, 1.0));
    let before = f.stamps().await;
    f.wait_all_grew(&before, "v1").await;
    f.stop().await;
}

/// Runs the real `wasmcm` binary: (success, stdout, stderr).
async fn cli(args: &[&str]) -> (bool, String, String) {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_wasmcm"))
            .arg("--no-cache")
            .args(&args)
            .env_remove("WASMCM_ADMIN_ADDRESS")
            .output()
            .expect("the wasmcm binary runs");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    })
    .await
    .unwrap()
}

/// Writes `request` on a new connection and returns what comes back.
async fn raw_http(addr: std::net::SocketAddr, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_admin_endpoint_lists_and_promotes() {
    const N: usize = 5;
    let f = Fixture::start(&["rollout: {strategy: Shadow, agreements: 1000}"], N).await;
    let (_ready, ready) = tokio::sync::watch::channel(true);
    let (_plugins, plugins) = tokio::sync::watch::channel(f.host.controllers().to_vec());
    let token_dir = tempfile::tempdir().unwrap();
    let token_file = token_dir.path().join("admin-token");
    let token = wasmcm::admin_token(&token_file, true).unwrap();
    let standing = tokio::sync::watch::channel(wasmcm::Agreement::Unknown).1;
    let admin = wasmcm::Admin {
        metrics: f.metrics.clone(),
        ready,
        plugins,
        token: Some(token.clone().into()),
        standing,
        cluster: tokio::sync::watch::channel(wasmcm::Reach::Unknown).1,
        failures: Arc::new(wasmcm::LoadFailures::new(f.metrics.clone())),
    };
    let addr = wasmcm::serve_admin(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(), admin).await.unwrap();
    f.wait_stamped(N, "v1", 2).await;

    // A candidate that disagrees is never promoted on its own.
    let v2 = f.release("v2", "2.0.0");
    f.install(&v2);
    let (v1_digest, v2_digest) = (common::sha256(&f.original), common::sha256(&v2));
    let stamp = common::eventually("GET /plugins to show the shadow disagreeing", || async {
        let (code, body) = wasmcm::admin_request(addr, http::Method::GET, "/plugins", Some(&token)).await.ok()?;
        assert_eq!(code, 200, "{body}");
        let plugins: Vec<Value> = serde_json::from_str(&body).unwrap();
        let stamp = plugins.into_iter().find(|p| p["name"] == "stamp")?;
        let shadow = stamp["versions"].as_array()?.iter().find(|v| v["state"] == "shadow")?;
        (shadow["mismatches"].as_u64() > Some(0)).then_some(stamp)
    })
    .await;
    assert_eq!(stamp["primary"], "v1/ConfigMap");
    let versions = stamp["versions"].as_array().unwrap();
    let (live, shadow) = (&versions[0], &versions[1]);
    assert_eq!(
        (&live["state"], &live["version"], &live["digest"]),
        (&json!("live"), &json!("1.0.0"), &json!(v1_digest))
    );
    assert!(live["reconciles"].as_u64() > Some(0) && live["failures"] == 0, "{live}");
    assert_eq!((&shadow["version"], &shadow["digest"]), (&json!("2.0.0"), &json!(v2_digest)));
    assert!(shadow["agreements"].is_u64(), "{shadow}");

    let address = addr.to_string();
    let token_arg = token_file.to_str().unwrap();
    let (ok, table, stderr) = cli(&["plugins", "list", "--address", &address, "--admin-token-file", token_arg]).await;
    assert!(ok, "{stderr}");
    eprintln!("{table}");
    let row = |state: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some(state))
            .unwrap_or_else(|| panic!("{table}"))
            .to_string()
    };
    let (live_row, shadow_row) = (row("live"), row("shadow"));
    assert!(table.starts_with("NAME"), "{table}");
    for (line, version, digest, counter) in
        [(&live_row, "1.0.0", &v1_digest, "reconciles="), (&shadow_row, "2.0.0", &v2_digest, "mismatches=")]
    {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(&words[..2], ["stamp", version], "{line}");
        assert_eq!(words[3], &digest[..12], "{line}");
        assert!(line.contains(counter), "{line}");
    }

    // Reads and changes need the token, from no browser page; idle connections do not take the
    // port.
    let (code, body) = wasmcm::admin_request(addr, http::Method::GET, "/plugins", None).await.unwrap();
    assert_eq!(code, 401, "{body}");
    let promote = "/plugins/stamp/promote";
    let (code, body) = wasmcm::admin_request(addr, http::Method::POST, promote, None).await.unwrap();
    assert_eq!(code, 401, "{body}");
    let (code, body) = wasmcm::admin_request(addr, http::Method::POST, promote, Some("guess")).await.unwrap();
    assert_eq!(code, 401, "{body}");
    let forged = format!(
        "POST {promote} HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    assert!(raw_http(addr, &forged).await.starts_with("HTTP/1.1 403"), "a cross-origin change is refused");
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    let health = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        wasmcm::admin_request(addr, http::Method::GET, "/healthz", None),
    )
    .await;
    assert!(matches!(health, Ok(Ok((200, _)))), "/healthz beside 300 idle connections: {health:?}");
    drop(idle);
    assert_eq!(f.live_version(), "1.0.0", "nothing was promoted without the token");

    let (ok, out, stderr) =
        cli(&["plugins", "promote", "stamp", "--address", &address, "--admin-token-file", token_arg]).await;
    assert!(ok, "{stderr}");
    assert!(out.contains("promoted 2.0.0"), "{out}");
    assert_eq!(f.live_version(), "2.0.0");
    assert_eq!(f.swaps(), 1.0);
    f.wait_stamped(N, "v2", 0).await;

    let (ok, _, stderr) =
        cli(&["plugins", "promote", "stamp", "--address", &address, "--admin-token-file", token_arg]).await;
    assert!(!ok, "nothing left to promote");
    assert!(stderr.contains("no shadow candidate"), "{stderr}");
    assert_eq!(f.live_version(), "2.0.0");
    f.stop().await;
}

/// A new version that declares rights the live one lacks is not promoted on its own, even with
/// the Immediate strategy: it runs in shadow, shown as held with why, until an operator
/// promotes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_version_declaring_wider_rights_is_held_until_promoted_by_hand() {
    const N: usize = 3;
    let f = Fixture::start(&[], N).await;
    f.wait_stamped(N, "v1", 1).await;
    let original = f.live_version();
    f.install(&f.release("v1", "writes-1"));
    let held = common::eventually("the wider version to be held", || async {
        let status = f.rollout().status();
        status.versions.into_iter().find(|v| v.state == "held")
    })
    .await;
    assert_eq!(held.version, "writes-1");
    let reason = held.reason.unwrap_or_default();
    assert!(reason.contains("writes +example.com/v1/Kind0"), "{reason}");

    // It runs beside the live version, whose writes alone are performed.
    create_configmap(&f.configmaps(), "cm-new", true).await;
    f.wait_stamped(N + 1, "v1", 1).await;
    common::eventually("the held version to be compared", || async {
        (f.comparisons("writes-1", "agreement") >= 1.0).then_some(())
    })
    .await;
    assert_eq!(f.live_version(), original, "never promoted on its own");
    assert_eq!(f.swaps(), 0.0);

    assert!(f.rollout().promote().unwrap().contains("promoted writes-1"));
    assert_eq!(f.live_version(), "writes-1");
    f.stop().await;
}

/// A plugin's write client is made for the identity its manifest names, so a new version (the
/// same bytes too) that names another `serviceAccount` is refused, not run under the old one.
#[test]
fn a_version_with_another_service_account_is_refused_by_the_rollout() {
    let rollout = Rollout::new(wasmcm::Version::of(common::replicaset()), Arc::new(Metrics::default()));
    let mut other = wasmcm::Version::of(common::replicaset());
    other.spec.service_account = Some((Some("wasmcm".into()), "someone-else".into()));
    let refused = rollout.offer(other).expect_err("another identity is refused");
    assert!(refused.contains("writes as ServiceAccount wasmcm/someone-else"), "{refused}");
    assert!(refused.contains("the running version as the host's own identity"), "{refused}");
    assert!(refused.contains("only when it is replaced"), "{refused}");
    assert_eq!(rollout.status().versions.len(), 1, "nothing in shadow");
}

/// A plugin's informers cover the namespaces its scope lists, and a manifest that widens the
/// list widens them before the new spec runs: ConfigMaps of the added namespace are cached
/// (under the informer of both namespaces, the old one's series gone) and reconciled.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_manifest_widening_the_scope_widens_the_informers() {
    use k8s_openapi::api::core::v1::Namespace;
    let f = Fixture::start(&["scope: {namespaces: [default]}"], 2).await;
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": "team-b"}})).unwrap();
    Api::<Namespace>::all(f.client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
    let team_b: Api<ConfigMap> = Api::namespaced(f.client.clone(), "team-b");
    create_configmap(&team_b, "b", true).await;
    f.wait_stamped(2, "v1", 1).await;
    let cached = |metrics: &Metrics| -> Vec<String> {
        let text = metrics.encode();
        let lines = text.lines().filter(|l| l.starts_with("wasmcm_informer_objects{"));
        lines.map(|l| l.rsplit_once(' ').map_or(l, |(series, _)| series).to_string()).collect()
    };
    assert_eq!(cached(&f.metrics), ["wasmcm_informer_objects{kind=\"v1/ConfigMap\",namespaces=\"default\"}"]);

    let manifest = f.dir.path().join("plugins.yaml");
    let widened = std::fs::read_to_string(&manifest).unwrap().replace("[default]", "[default, team-b]");
    let tmp = f.dir.path().join(".plugins.yaml.new");
    std::fs::write(&tmp, widened).unwrap();
    std::fs::rename(&tmp, &manifest).unwrap();
    common::eventually("team-b/b stamped", || async {
        let data = team_b.get("b").await.ok()?.data?;
        (data.get("stamp").map(String::as_str) == Some("v1")).then_some(())
    })
    .await;
    assert_eq!(cached(&f.metrics), ["wasmcm_informer_objects{kind=\"v1/ConfigMap\",namespaces=\"default,team-b\"}"]);
    f.stop().await;
}
