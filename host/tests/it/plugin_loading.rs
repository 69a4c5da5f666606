//! Loading plugins from manifests, end to end: broken entries are reported precisely while the
//! others start (and `--strict` makes any failure fatal), manifest capabilities and settings
//! reach the running plugin, a plugin is read from a ConfigMap and swapped when that ConfigMap
//! changes, a restart reuses the compiled plugins, and `wasmcm plugins inspect` shows what a
//! component is.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use wasmcm::Metrics;
use wasmcm::Version;
use wasmcm::{Engine, EngineConfig};
use wasmcm::{Host, HostConfig};

const BUILTINS: [&str; 6] = ["replicaset", "deployment", "rollback", "job", "cronjob", "ttlafterfinished"];

fn stamp_path() -> PathBuf {
    common::guest("wasmcm_stamp.wasm")
}

fn stamp_bytes() -> Vec<u8> {
    std::fs::read(stamp_path()).expect("the stamp guest is built")
}

/// A one-plugin manifest; `spec` is the YAML flow mapping of its spec.
fn manifest(name: &str, spec: &str) -> String {
    format!("apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {{name: {name}}}\nspec: {spec}\n")
}

fn write(dir: &Path, file: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, contents).unwrap();
    path
}

fn names(versions: &[Version]) -> Vec<String> {
    let mut names: Vec<String> = versions.iter().map(|v| v.name().to_string()).collect();
    names.sort();
    names
}

/// The one version called `name`, out of a `load_all`.
fn take(versions: Vec<Version>, name: &str) -> Version {
    versions.into_iter().find(|v| v.name() == name).unwrap_or_else(|| panic!("{name} was loaded"))
}

fn labelled_configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {wasmcm_stamp::LABEL: "yes"}}})).unwrap()
}

fn data(cm: &ConfigMap, key: &str) -> Option<String> {
    cm.data.as_ref()?.get(key).cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_plugins_are_reported_precisely_and_the_others_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stamp = stamp_path();
    let stamp = stamp.display();
    let hostile = common::guest("wasmcm_hostile.wasm");
    let hostile = hostile.display();
    let pin = common::sha256(&stamp_bytes());
    // Another component's digest (an all-digit one would be read by YAML as a number).
    let wrong_pin = common::sha256(b"another release");
    let text = write(d, "notes.wasm", "hello, I am a text file, not a component\n");
    let wasi = write(
        d,
        "wasi.wasm",
        wat::parse_str(r#"(component (import "wasi:cli/environment@0.2.0" (instance)))"#).unwrap(),
    );

    write(d, "a-good.yaml", manifest("stamp", &format!("{{source: {{file: {stamp}}}, sha256: {pin}}}")));
    write(d, "b-pinned.yaml", manifest("pinned", &format!("{{source: {{file: {stamp}}}, sha256: {wrong_pin}}}")));
    write(d, "c-text.yaml", manifest("text", "{source: {file: notes.wasm}}"));
    write(d, "d-missing.yaml", manifest("missing", "{source: {file: gone.wasm}}"));
    write(
        d,
        "e-narrowed.yaml",
        manifest("narrowed", &format!("{{source: {{file: {hostile}}}, capabilities: {{writes: [v1/Secret]}}}}")),
    );
    write(d, "f-broken.yaml", "apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {name: [unclosed\n");
    write(d, "g-unknown.yaml", manifest("colourful", "{source: {builtin: replicaset}, colour: blue}"));
    write(d, "h-wasi.yaml", manifest("wasi", "{source: {file: wasi.wasm}}"));
    write(d, "notes.txt", "not a manifest: ignored");
    let release = |version: &str| wasmcm_stamp::variant(&stamp_bytes(), "v1", version).unwrap();
    let traps = write(d, "traps.wasm", release("trap"));
    let future = write(d, "future.wasm", release("contract-9.0.0"));
    write(d, "i-traps.yaml", manifest("traps", "{source: {file: traps.wasm}}"));
    write(d, "j-future.yaml", manifest("future", "{source: {file: future.wasm}}"));

    let (versions, failures) =
        wasmcm::load_all(common::engine(), &[d.to_path_buf()], &wasmcm::Trust::of("default"), None).await;

    assert_eq!(
        names(&versions),
        ["cronjob", "deployment", "job", "replicaset", "rollback", "stamp", "ttlafterfinished"],
        "failures: {failures:#?}"
    );
    let good = versions.iter().find(|v| v.name() == "stamp").unwrap();
    assert_eq!(good.plugin.digest(), pin, "the pinned digest is the component's");
    assert_eq!(good.spec.sha256.as_deref(), Some(pin.as_str()));
    for builtin in BUILTINS {
        let v = versions.iter().find(|v| v.name() == builtin).unwrap();
        assert_eq!(v.plugin.digest(), common::sha256(wasmcm::builtin::get(builtin).unwrap()), "{builtin}");
    }

    let gone = d.join("gone.wasm");
    let (text, gone, wasi) = (text.display().to_string(), gone.display().to_string(), wasi.display().to_string());
    let broken = d.join("f-broken.yaml").display().to_string();
    let unknown = d.join("g-unknown.yaml").display().to_string();
    let expected: Vec<(&str, Vec<String>)> = vec![
        (
            "pin mismatch",
            vec![stamp.to_string(), "plugin pinned".into(), "digest mismatch".into(), wrong_pin.clone(), pin.clone()],
        ),
        ("text bytes", vec![text, "plugin text".into(), "no WebAssembly header".into()]),
        ("missing file", vec![gone, "plugin missing".into(), "cannot read".into()]),
        (
            "narrowed beyond its declaration",
            vec![
                hostile.to_string(),
                "plugin narrowed".into(),
                "capabilities.writes names v1/Secret, which the plugin does not declare".into(),
            ],
        ),
        ("invalid YAML", vec![broken, "invalid YAML".into()]),
        (
            "describe() traps",
            vec![
                traps.display().to_string(),
                "plugin traps".into(),
                "describe() failed".into(),
                "version trap traps in describe()".into(),
            ],
        ),
        (
            "another contract",
            vec![
                future.display().to_string(),
                "plugin future".into(),
                "built for contract 9.0.0; this host implements contracts 0.4.0 and 0.3.0".to_string(),
            ],
        ),
        ("unknown field", vec![unknown, "plugin colourful".into(), "unknown field `colour`".into()]),
        (
            "import beyond the world",
            vec![
                wasi,
                "plugin wasi".into(),
                "imports `wasi:cli/environment@0.2.0`, which the host does not provide".into(),
            ],
        ),
    ];
    for (what, parts) in &expected {
        let matching: Vec<&String> = failures.iter().filter(|f| parts.iter().all(|p| f.contains(p.as_str()))).collect();
        assert_eq!(matching.len(), 1, "{what}: one failure with {parts:?} in {failures:#?}");
    }
    assert_eq!(failures.len(), expected.len(), "one failure per broken entry: {failures:#?}");

    // Each plugin's failure has the reason its Plugin status and the failure metric give it
    // (the two broken files are manifests, not plugins).
    let loaded =
        wasmcm::load_plugins(common::engine(), &[d.to_path_buf()], None, &wasmcm::Trust::of("default"), None).await;
    let reasons: Vec<(String, &str)> = loaded.failed.iter().map(|f| (f.plugin.clone(), f.reason.as_str())).collect();
    let want = [
        ("future", "InvalidComponent"),
        ("missing", "Unreadable"),
        ("narrowed", "InvalidComponent"),
        ("pinned", "DigestMismatch"),
        ("text", "InvalidComponent"),
        ("traps", "InvalidComponent"),
        ("wasi", "InvalidComponent"),
    ];
    let mut reasons = reasons;
    reasons.sort();
    assert_eq!(reasons, want.map(|(p, r)| (p.to_string(), r)), "{:#?}", loaded.failed);
    assert_eq!(loaded.manifest_errors.len(), 2, "{:#?}", loaded.manifest_errors);
}

/// The real binary, run on a fresh embedded cluster with the given manifests.
fn wasmcm_run(plugins: &Path, cache: &Path, strict: bool) -> Command {
    let mut cmd = common::host_command();
    cmd.args(["run", "--plugins"])
        .arg(plugins)
        .args(["--metrics-bind-address", "127.0.0.1:0", "--leader-elect=false", "--cache-dir"])
        .arg(cache)
        .env("RUST_LOG", "warn,wasmcm=error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if strict {
        cmd.arg("--strict");
    }
    cmd
}

/// Reads a child's pipe on a thread, line by line, into a channel.
fn lines(pipe: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Kills a child this test started, when the test ends however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn strict_makes_any_failure_fatal() {
    let dir = tempfile::tempdir().unwrap();
    // What is compiled is not the point here: the cache every test shares spares compiling.
    let cache = common::precompiled_dir();
    let stamp = stamp_path();
    let pinned = manifest("pinned", &format!("{{source: {{file: {}}}, sha256: {}}}", stamp.display(), "ab".repeat(32)));
    write(dir.path(), "pinned.yaml", pinned);

    let started = Instant::now();
    let child = wasmcm_run(dir.path(), &cache, true).spawn().expect("the binary runs");
    let mut child = Running(child);
    let stderr = lines(child.0.stderr.take().unwrap());
    let stdout = lines(child.0.stdout.take().unwrap());
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(300), "--strict did not exit");
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!("--strict exited after {:.2} s", started.elapsed().as_secs_f64());
    let stderr: Vec<String> = stderr.iter().collect();
    let stdout: Vec<String> = stdout.iter().collect();
    let stderr = stderr.join("\n");
    assert!(!status.success(), "exit {status}; stderr:\n{stderr}");
    let fatal = stderr.lines().find(|l| l.starts_with("error: --strict")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(fatal.contains("1 failed to load"), "{fatal}");
    let failure = format!("plugin pinned: {}: digest mismatch", stamp.display());
    assert!(stderr.contains(&failure), "stderr names the plugin, the file and the reason:\n{stderr}");
    assert!(!stdout.iter().any(|l| l.starts_with("wasmcm running:")), "{stdout:?}");

    // Without --strict the good plugins start; the broken one is reported, and listed as failed.
    write(dir.path(), "stamp.yaml", manifest("stamp", &format!("{{source: {{file: {}}}}}", stamp.display())));
    let token = dir.path().join("admin-token");
    let child = wasmcm_run(dir.path(), &cache, false).arg("--admin-token-file").arg(&token).spawn().expect("runs");
    let mut child = Running(child);
    let stderr = lines(child.0.stderr.take().unwrap());
    let stdout = lines(child.0.stdout.take().unwrap());
    let mut metrics = None;
    let running = loop {
        match stdout.recv_timeout(Duration::from_secs(300)) {
            Ok(line) if line.starts_with("wasmcm running:") => break line,
            Ok(line) if line.starts_with("metrics: http://") => {
                let address = line["metrics: http://".len()..].trim_end_matches("/metrics").to_string();
                metrics = Some(address);
            }
            Ok(_) => {}
            Err(e) => {
                let status = child.0.try_wait().unwrap();
                let stderr: Vec<String> = stderr.try_iter().collect();
                panic!("no `wasmcm running:` line ({e}); exit {status:?}; stderr:\n{}", stderr.join("\n"));
            }
        }
    };
    assert!(running.contains("replicaset, deployment, rollback, job, cronjob, ttlafterfinished, stamp"), "{running}");
    assert!(!running.contains("pinned"), "{running}");
    assert!(child.0.try_wait().unwrap().is_none(), "the host keeps running");
    // More than a log line: `plugins list`, `/readyz` and the failure series say which and why.
    let address = metrics.expect("the metrics address printed");
    let addr: std::net::SocketAddr = address.parse().unwrap();
    let list =
        common::wasmcm(&["plugins", "list", "--address", &address, "--admin-token-file", &token.display().to_string()]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let row = list.stdout.lines().find(|l| l.starts_with("pinned ")).unwrap_or_else(|| panic!("{}", list.stdout));
    assert!(row.contains(" failed ") && row.contains("DigestMismatch: ") && row.contains("digest mismatch"), "{row}");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (code, readyz) = runtime.block_on(common::http_get(addr, "/readyz?verbose"));
    assert_eq!(code, 200, "the others run: {readyz}");
    let line = "[-]plugin/pinned failed to load (excluded: the other plugins run): DigestMismatch: ";
    assert!(readyz.contains(line), "{readyz}");
    assert!(readyz.contains("[+]plugin/stamp ok"), "{readyz}");
    let (_, text) = runtime.block_on(common::http_get(addr, "/metrics"));
    let failed = ["plugin=\"pinned\"", "reason=\"DigestMismatch\""];
    assert_eq!(common::metric(&text, "wasmcm_plugin_load_failures_total", &failed), 1.0, "{text}");
    drop(child);
    let stderr: Vec<String> = stderr.iter().collect();
    assert!(
        stderr.iter().any(|l| l.contains("not loaded") && l.contains("plugin pinned") && l.contains("digest mismatch")),
        "the broken plugin is reported:\n{}",
        stderr.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capabilities_narrow_and_settings_reach_the_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let stamp = stamp_path();
    let stamp = stamp.display();
    write(
        dir.path(),
        "limited.yaml",
        manifest("limited", &format!("{{source: {{file: {stamp}}}, settings: {{limit: 3}}}}")),
    );
    write(
        dir.path(),
        "readonly.yaml",
        manifest("readonly", &format!("{{source: {{file: {stamp}}}, capabilities: {{writes: []}}}}")),
    );
    let (versions, failures) =
        wasmcm::load_all(common::engine(), &[dir.path().to_path_buf()], &wasmcm::Trust::of("default"), None).await;
    assert!(failures.is_empty(), "{failures:#?}");
    let readonly = versions.iter().find(|v| v.name() == "readonly").unwrap();
    assert!(readonly.plugin.info().writes.is_empty(), "writes: [] leaves no kind writable");
    assert_eq!(readonly.plugin.info().primary.to_string(), "v1/ConfigMap");
    let (limited, readonly) = {
        let mut versions = versions;
        let limited = versions.remove(versions.iter().position(|v| v.name() == "limited").unwrap());
        (limited, take(versions, "readonly"))
    };
    assert_eq!(limited.spec.settings, r#"{"limit":3}"#);

    let (cluster, client) = common::cluster().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    // Settings: the stamp stops at count 3 (without them it would count on for ever).
    let metrics = Arc::new(Metrics::default());
    let host =
        Host::start(common::config(&cluster.kubeconfig).await, vec![limited], HostConfig::default(), metrics.clone())
            .await
            .unwrap();
    cms.create(&PostParams::default(), &labelled_configmap("limited")).await.unwrap();
    common::eventually("the count to reach 3", || async {
        let cm = cms.get("limited").await.ok()?;
        (data(&cm, "count").as_deref() == Some("3")).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let cm = cms.get("limited").await.unwrap();
    assert_eq!(data(&cm, "count").as_deref(), Some("3"), "the limit of the settings holds");
    assert_eq!(data(&cm, "stamp").as_deref(), Some("v1"));
    assert!(
        common::metric(&metrics.encode(), "wasmcm_reconciles_total", &["plugin=\"limited\"", "outcome=\"success\""])
            >= 4.0
    );
    host.shutdown().await;
    cms.delete("limited", &DeleteParams::default()).await.unwrap();

    // Capabilities: with no writable kind, its update is refused and never sent.
    let metrics = Arc::new(Metrics::default());
    let host =
        Host::start(common::config(&cluster.kubeconfig).await, vec![readonly], HostConfig::default(), metrics.clone())
            .await
            .unwrap();
    cms.create(&PostParams::default(), &labelled_configmap("readonly")).await.unwrap();
    common::eventually("the update to be refused", || async {
        (common::metric(&metrics.encode(), "wasmcm_intents_refused_total", &["plugin=\"readonly\""]) > 0.0)
            .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cm = cms.get("readonly").await.unwrap();
    assert_eq!(data(&cm, "stamp"), None, "the refused update was never sent: {cm:?}");
    assert_eq!(common::metric(&metrics.encode(), "wasmcm_intents_executed_total", &["plugin=\"readonly\""]), 0.0);
    host.shutdown().await;
}

fn plugins_configmap(bytes: Vec<u8>) -> ConfigMap {
    let mut cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "plugins"}})).unwrap();
    cm.binary_data = Some(BTreeMap::from([("stamp.wasm".to_string(), ByteString(bytes))]));
    cm
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_loads_from_a_configmap_and_swaps_when_it_changes() {
    // Refused over 1 MiB, with the size and the limit said.
    let big = plugins_configmap(vec![0; (1 << 20) + 1]);
    let err = wasmcm::configmap_bytes(&big, "stamp.wasm").unwrap_err();
    assert!(err.contains(&format!("{} bytes", (1 << 20) + 1)) && err.contains("at most 1 MiB"), "{err}");
    assert!(err.contains("from Python or JavaScript") && err.contains("give it as a file"), "{err}");
    let err = wasmcm::configmap_bytes(&big, "other.wasm").unwrap_err();
    assert!(err.contains("no key \"other.wasm\""), "{err}");
    let exactly = plugins_configmap(vec![0; 1 << 20]);
    assert_eq!(wasmcm::configmap_bytes(&exactly, "stamp.wasm").unwrap().len(), 1 << 20);

    let (cluster, client) = common::cluster().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let v1 = stamp_bytes();
    cms.create(&PostParams::default(), &plugins_configmap(v1.clone())).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "stamp.yaml", manifest("stamp", "{source: {configMap: {name: plugins, key: stamp.wasm}}}"));
    let paths = vec![dir.path().to_path_buf()];

    // Without a client the ConfigMap cannot be read, and the failure says so.
    let (_, failures) = wasmcm::load_all(common::engine(), &paths, &wasmcm::Trust::of("default"), None).await;
    assert!(
        failures.iter().any(|f| f.contains("plugin stamp") && f.contains("ConfigMap default/plugins key stamp.wasm")),
        "{failures:#?}"
    );

    let (versions, failures) =
        wasmcm::load_all(common::engine(), &paths, &wasmcm::Trust::of("default"), Some(&client)).await;
    assert!(failures.is_empty(), "{failures:#?}");
    let stamp = take(versions, "stamp");
    assert_eq!(stamp.plugin.digest(), common::sha256(&v1));
    assert_eq!(stamp.plugin.info().version, "1.0.0");

    let metrics = Arc::new(Metrics::default());
    let host =
        Host::start(common::config(&cluster.kubeconfig).await, vec![stamp], HostConfig::default(), metrics.clone())
            .await
            .unwrap();
    let reloader = wasmcm::Reloader {
        engine: common::engine().clone(),
        client: Some(client.clone()),
        trust: wasmcm::Trust::of("default"),
        paths,
        objects: None,
        plugins: host.plugins().clone(),
        failures: Arc::new(wasmcm::LoadFailures::new(metrics.clone())),
    }
    .spawn()
    .unwrap();
    cms.create(&PostParams::default(), &labelled_configmap("stamped")).await.unwrap();
    common::eventually("stamp v1", || async {
        let cm = cms.get("stamped").await.ok()?;
        (data(&cm, "stamp").as_deref() == Some("v1")).then_some(())
    })
    .await;

    let v2 = wasmcm_stamp::variant(&v1, "v2", "2.0.0").expect("the markers are found");
    let mut plugins = cms.get("plugins").await.unwrap();
    plugins.binary_data = plugins_configmap(v2.clone()).binary_data;
    cms.replace("plugins", &PostParams::default(), &plugins).await.unwrap();
    common::eventually("stamp v2", || async {
        let cm = cms.get("stamped").await.ok()?;
        (data(&cm, "stamp").as_deref() == Some("v2")).then_some(())
    })
    .await;
    let live = host.controller("stamp").unwrap().rollout().live();
    assert_eq!(live.plugin.digest(), common::sha256(&v2));
    assert_eq!(live.plugin.info().version, "2.0.0");
    reloader.abort();
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_restart_reuses_compiled_plugins() {
    let dir = tempfile::tempdir().unwrap();
    let engine = || {
        Engine::new(&EngineConfig { precompiled_dir: Some(dir.path().join("precompiled")), ..EngineConfig::default() })
            .unwrap()
    };
    let load = |versions: &[Version]| -> Vec<String> {
        versions
            .iter()
            .map(|v| {
                let c = v.plugin.compiled();
                format!("{} {:.0} ms ({} bytes)", v.name(), c.duration.as_secs_f64() * 1e3, c.size)
            })
            .collect()
    };

    let cold = engine();
    let (versions, failures) = wasmcm::load_all(&cold, &[], &wasmcm::Trust::of("default"), None).await;
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(versions.iter().map(Version::name).collect::<Vec<_>>(), BUILTINS);
    for v in &versions {
        assert!(!v.plugin.compiled().cached, "{}: a fresh cache has nothing", v.name());
    }
    eprintln!("cold load: {}", load(&versions).join(", "));
    drop((versions, cold));

    let warm = engine();
    let (versions, failures) = wasmcm::load_all(&warm, &[], &wasmcm::Trust::of("default"), None).await;
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(versions.iter().map(Version::name).collect::<Vec<_>>(), BUILTINS);
    for v in &versions {
        assert!(v.plugin.compiled().cached, "{}: compiled by the first engine", v.name());
    }
    eprintln!("warm load: {}", load(&versions).join(", "));

    let (cluster, client) = common::cluster().await;
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let rs: ReplicaSet = common::web(1, "nginx:1.27");
    rss.create(&PostParams::default(), &rs).await.unwrap();
    let metrics = Arc::new(Metrics::default());
    let started = Instant::now();
    let host = Host::start(common::config(&cluster.kubeconfig).await, versions, HostConfig::default(), metrics.clone())
        .await
        .unwrap();
    let synced = started.elapsed();
    let reconciled = ["plugin=\"replicaset\"", "outcome=\"success\""];
    common::eventually("a successful ReplicaSet reconcile", || async {
        (common::metric(&metrics.encode(), "wasmcm_reconciles_total", &reconciled) > 0.0).then_some(())
    })
    .await;
    eprintln!(
        "warm start: caches synced {:.0} ms, first successful reconcile {:.0} ms after Host::start",
        synced.as_secs_f64() * 1e3,
        started.elapsed().as_secs_f64() * 1e3
    );
    host.shutdown().await;
}

#[test]
fn plugins_inspect_prints_digest_imports_and_size() {
    let cache = tempfile::tempdir().unwrap();
    let stamp = stamp_path();
    let inspect = || {
        let out = Command::new(env!("CARGO_BIN_EXE_wasmcm"))
            .args(["plugins", "inspect"])
            .arg(&stamp)
            .arg("replicaset")
            .arg("--cache-dir")
            .arg(cache.path())
            .env("RUST_LOG", "off")
            .output()
            .expect("the binary runs");
        assert!(out.status.success(), "exit {}; stderr: {}", out.status, String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let loads = |stdout: &str| -> Vec<String> {
        stdout.lines().filter_map(|l| l.strip_prefix("  load:    ")).map(String::from).collect()
    };
    let first = loads(&inspect());
    assert!(first.len() == 2 && first.iter().all(|l| l.starts_with("compiled in ")), "a fresh cache: {first:?}");
    let stdout = inspect();
    let again = loads(&stdout);
    assert!(again.len() == 2 && again.iter().all(|l| l.starts_with("from the precompiled cache in ")), "{again:?}");

    // One block per plugin, in the order asked.
    let at = stdout.find("\nreplicaset ").unwrap_or_else(|| panic!("{stdout}"));
    let (stamp_block, rs_block) = stdout.split_at(at + 1);
    let contract = wasmcm_guest::CONTRACT_VERSION;
    let bytes = stamp_bytes();
    let rs = wasmcm::builtin::get("replicaset").unwrap();
    for (block, first, bytes) in [(stamp_block, "stamp 1.0.0", &bytes[..]), (rs_block, "replicaset 0.1.0", rs)] {
        assert!(block.starts_with(&format!("{first} (contract {contract})")), "{block}");
        let field = |name: &str| -> String {
            let prefix = format!("  {name}:");
            let line = block.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("{name}: {block}"));
            line[prefix.len()..].trim().to_string()
        };
        assert_eq!(field("sha256"), common::sha256(bytes), "{block}");
        assert_eq!(field("size"), format!("{} bytes", bytes.len()), "{block}");
        let imports = field("imports");
        let imports: Vec<&str> = imports.split(", ").collect();
        assert!(imports.contains(&format!("wasmcm:reconciler/cache@{contract}").as_str()), "{block}");
        assert!(
            imports
                .iter()
                .all(|i| ["cache", "log", "types"].iter().any(|n| *i == format!("wasmcm:reconciler/{n}@{contract}"))),
            "only contract interfaces: {block}"
        );
    }
    assert!(stamp_block.contains("  primary: v1/ConfigMap\n") && stamp_block.contains("  writes:  v1/ConfigMap\n"));
    assert!(rs_block.contains("  primary: apps/v1/ReplicaSet\n") && rs_block.contains("  owns:    v1/Pod\n"));

    // Not a plugin: a clear error, non-zero.
    let out = Command::new(env!("CARGO_BIN_EXE_wasmcm"))
        .args(["plugins", "inspect", "no-such-plugin", "--cache-dir"])
        .arg(cache.path())
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("unknown plugin \"no-such-plugin\""), "{stderr}");
}

/// Where a plugin may come from is checked before its bytes are read: under `require_pins` an
/// unpinned file is refused (a pinned one and the built-ins load), a ConfigMap in another
/// namespace is refused unless allowed, and a file is read only up to what a plugin can be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpinned_foreign_or_endless_plugin_sources_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stamp = stamp_path();
    let stamp = stamp.display();
    let pin = common::sha256(&stamp_bytes());
    write(d, "a.yaml", manifest("pinned", &format!("{{source: {{file: {stamp}}}, sha256: {pin}}}")));
    write(d, "b.yaml", manifest("unpinned", &format!("{{source: {{file: {stamp}}}}}")));
    write(
        d,
        "c.yaml",
        manifest(
            "foreign",
            &format!("{{source: {{configMap: {{namespace: kube-system, name: p, key: p.wasm}}}}, sha256: {pin}}}"),
        ),
    );
    write(d, "d.yaml", manifest("endless", &format!("{{source: {{file: /dev/zero}}, sha256: {pin}}}")));
    let trust = wasmcm::Trust { require_pins: true, ..wasmcm::Trust::of("wasmcm") };

    let (versions, failures) = wasmcm::load_all(common::engine(), &[d.to_path_buf()], &trust, None).await;

    assert_eq!(
        names(&versions),
        ["cronjob", "deployment", "job", "pinned", "replicaset", "rollback", "ttlafterfinished"],
        "{failures:#?}"
    );
    let failure = |name: &str| failure_of(&failures, name);
    assert!(failure("unpinned").ends_with("--require-pins: the manifest entry pins no sha256"), "{failures:#?}");
    assert!(
        failure("foreign").contains("plugins are read from ConfigMaps in the host's namespace \"wasmcm\" only"),
        "{failures:#?}"
    );
    assert!(failure("endless").ends_with("/dev/zero: more than 64 MiB; not a controller plugin"), "{failures:#?}");

    // Allowed explicitly, the foreign namespace gets as far as needing a cluster.
    let trust = wasmcm::Trust { configmap_namespaces: vec!["kube-system".into()], ..trust };
    let (_, failures) = wasmcm::load_all(common::engine(), &[d.to_path_buf()], &trust, None).await;
    assert!(failure_of(&failures, "foreign").contains("ConfigMap sources need a cluster"), "{failures:#?}");
}

fn failure_of<'a>(failures: &'a [String], name: &str) -> &'a str {
    failures.iter().find(|f| f.starts_with(&format!("plugin {name}:"))).map_or("", String::as_str)
}

/// A plugin whose informer cannot sync (here: the host's ServiceAccount, as deploy/ binds it,
/// may not list ConfigMaps cluster-wide, the stamp plugin's primary) holds up neither the host's
/// start nor the other plugins: it is reported (log, `wasmcm_plugin_synced` 0, `/readyz`
/// detail, a `PluginNotSynced` event on the Lease), and it starts once the right is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_plugin_whose_caches_cannot_sync_is_reported_while_the_others_run() {
    let (cluster, admin) = common::cluster().await;
    let deployed = common::service_account(&cluster).await;
    let mut config = deployed.config;
    config.mode = wasmcm::Mode::Leader(wasmcm::LeaderConfig::new("wasmcm", "wasmcm", "sync-test"));
    let stamp = Arc::new(common::engine().load_file(&stamp_path(), wasmcm::Limits::default()).unwrap());
    let plugins = vec![common::as_deployed(Version::of(common::replicaset())), Version::of(stamp)];
    let metrics = Arc::new(Metrics::default());
    let host = tokio::time::timeout(
        Duration::from_secs(60),
        Host::start(deployed.kube_config, plugins, config, metrics.clone()),
    )
    .await
    .expect("the host starts without the stamp plugin's caches")
    .unwrap();

    let rss: Api<ReplicaSet> = Api::namespaced(admin.clone(), "default");
    rss.create(&PostParams::default(), &common::web(2, "nginx:1.27")).await.unwrap();
    common::eventually("the replicaset plugin to run", || async {
        (common::web_pods(&admin).await == Some((2, 2))).then_some(())
    })
    .await;
    let synced =
        |plugin: &str| common::sample(&metrics.encode(), "wasmcm_plugin_synced", &[&format!("plugin=\"{plugin}\"")]);
    assert_eq!((synced("replicaset"), synced("stamp")), (Some(1.0), Some(0.0)));

    let (_ready, ready) = tokio::sync::watch::channel(true);
    let (_plugins, controllers) = tokio::sync::watch::channel(host.controllers().to_vec());
    let endpoint = wasmcm::Admin {
        metrics: metrics.clone(),
        ready,
        plugins: controllers,
        token: None,
        standing: tokio::sync::watch::channel(wasmcm::Agreement::Unknown).1,
        cluster: tokio::sync::watch::channel(wasmcm::Reach::Unknown).1,
        failures: Arc::new(wasmcm::LoadFailures::new(metrics.clone())),
    };
    let addr =
        wasmcm::serve_admin(tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(), endpoint).await.unwrap();
    let (status, body) = wasmcm::admin_request(addr, hyper::Method::GET, "/readyz", None).await.unwrap();
    assert_eq!(status, 200, "the others run: {body}");
    assert!(body.contains("[+]plugin/replicaset ok"), "{body}");
    let stamp_line = body.lines().find(|l| l.starts_with("[-]plugin/stamp")).unwrap_or_else(|| panic!("{body}"));
    assert!(stamp_line.contains("v1/ConfigMap") && stamp_line.contains("forbidden"), "{stamp_line}");

    let event = common::event(&admin, Some("wasmcm"), "reason=PluginNotSynced").await;
    assert_eq!(event.involved_object.kind.as_deref(), Some("Lease"));
    let message = event.message.unwrap_or_default();
    assert!(message.contains("sync-test") && message.contains("plugin stamp"), "{message}");

    // Granted the right, it syncs on its own.
    let rules = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]}]);
    common::grant(&admin, "read-configmaps", rules, ("wasmcm", "wasmcm")).await;
    common::eventually("the stamp plugin to sync", || async { (synced("stamp") == Some(1.0)).then_some(()) }).await;
    host.shutdown().await;
}

/// `component` with a custom section appended: the same plugin, another digest.
fn rebuilt(component: &[u8], note: &str) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                return;
            }
        }
    }
    let name = b"wasmcm-test";
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name);
    body.extend_from_slice(note.as_bytes());
    let mut out = component.to_vec();
    out.push(0);
    leb(body.len(), &mut out);
    out.extend(body);
    out
}

/// A new version waiting for an informer that cannot sync (it reads Secrets, which the host may
/// not list) holds up no other plugin's swap made at the same moment, and goes on once it can.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_swap_waiting_for_its_caches_holds_up_no_other_plugins_swap() {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::ClusterRole;
    use kube::api::{Patch, PatchParams};
    let (cluster, admin) = common::cluster().await;
    // A host that may do all the two plugins need, but not read Secrets.
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "limited"}})).unwrap();
    Api::<ServiceAccount>::namespaced(admin.clone(), "default").create(&PostParams::default(), &account).await.unwrap();
    let rules = |secrets: bool| {
        let mut resources = vec!["configmaps", "pods", "events"];
        resources.extend(secrets.then_some("secrets"));
        json!([{"apiGroups": [""], "resources": resources, "verbs": ["*"]},
               {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["*"]},
               {"apiGroups": ["apps"], "resources": ["replicasets", "replicasets/status"], "verbs": ["*"]}])
    };
    common::grant(&admin, "limited", rules(false), ("default", "limited")).await;
    let token = cluster.service_account_token("default", "limited").unwrap();
    let limited = common::config(&cluster.kubeconfig_for_token(&token).unwrap()).await;

    let dir = tempfile::tempdir().unwrap();
    let replicaset = wasmcm::builtin::get("replicaset").unwrap().to_vec();
    write(dir.path(), "stamp.wasm", stamp_bytes());
    write(dir.path(), "replicaset.wasm", &replicaset);
    let mut plugins = common::builtins_off(&["replicaset"]);
    plugins += "- metadata: {name: stamp}\n  spec: {source: {file: stamp.wasm}}\n";
    plugins += "- metadata: {name: replicaset}\n  spec: {source: {file: replicaset.wasm}}\n";
    write(dir.path(), "plugins.yaml", plugins);
    let paths = vec![dir.path().to_path_buf()];
    let trust = wasmcm::Trust::of("default");
    let (versions, failures) = wasmcm::load_all(common::engine(), &paths, &trust, Some(&admin)).await;
    assert!(failures.is_empty(), "{failures:?}");
    let metrics = Arc::new(Metrics::default());
    let host = Host::start(limited, versions, HostConfig::default(), metrics.clone()).await.unwrap();
    let reloader = wasmcm::Reloader {
        engine: common::engine().clone(),
        client: Some(admin.clone()),
        trust,
        paths,
        objects: None,
        plugins: host.plugins().clone(),
        failures: Arc::new(wasmcm::LoadFailures::new(metrics)),
    }
    .spawn()
    .unwrap();

    // Both new releases land together; the stamp plugin's comes first in the manifest.
    let stamp_v2 = wasmcm_stamp::variant(&stamp_bytes(), "v2", "watch-secrets").unwrap();
    let replicaset_v2 = rebuilt(&replicaset, "v2");
    for (file, bytes) in [("stamp.wasm", &stamp_v2), ("replicaset.wasm", &replicaset_v2)] {
        write(dir.path(), &format!(".{file}.new"), bytes);
        std::fs::rename(dir.path().join(format!(".{file}.new")), dir.path().join(file)).unwrap();
    }
    let live = |name: &str| host.controller(name).unwrap().rollout().live().plugin.digest().to_string();
    common::eventually("the replicaset plugin's new release to run", || async {
        (live("replicaset") == common::sha256(&replicaset_v2)).then_some(())
    })
    .await;
    let stamp = host.controller("stamp").unwrap().rollout().clone();
    assert_eq!(stamp.live().plugin.info().version, "1.0.0");
    assert!(stamp.current().1.is_none(), "the stamp plugin's release waits for its Secret informer");

    // Once Secrets may be read, the stamp plugin's release goes on: held, since it reads more.
    let widened = Patch::Merge(json!({"rules": rules(true)}));
    Api::<ClusterRole>::all(admin.clone()).patch("limited", &PatchParams::default(), &widened).await.unwrap();
    common::eventually("the stamp plugin's release to be offered", || async {
        let shadow = stamp.current().1?;
        (shadow.plugin.info().version == "watch-secrets").then_some(())
    })
    .await;
    reloader.abort();
    host.shutdown().await;
}

/// The real binary on its embedded cluster, its manifests changed while it runs: a plugin
/// added starts without a restart, one that fails is listed as failed and loads once its entry
/// is fixed, one removed stops reconciling and leaves no series or informer nothing reads.
#[test]
fn plugins_are_added_fixed_and_removed_while_the_host_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cache = common::precompiled_dir();
    write(dir.path(), "builtins.yaml", common::builtins_off(&[]));
    let stamp = stamp_path();
    let stamp_spec = format!("{{source: {{file: {}}}, settings: {{limit: 1}}}}", stamp.display());
    write(dir.path(), "stamp.yaml", manifest("stamp", &stamp_spec));
    let token = dir.path().join("admin-token");
    let child = wasmcm_run(dir.path(), &cache, false).arg("--admin-token-file").arg(&token).spawn().expect("runs");
    let mut child = Running(child);
    let _stderr = lines(child.0.stderr.take().unwrap());
    let stdout = lines(child.0.stdout.take().unwrap());
    let (mut address, mut kubeconfig) = (None, None);
    loop {
        let line = stdout.recv_timeout(Duration::from_secs(300)).expect("the host starts");
        if let Some(a) = line.strip_prefix("metrics: http://") {
            address = Some(a.trim_end_matches("/metrics").to_string());
        }
        if let Some(k) = line.strip_prefix("try: export KUBECONFIG=") {
            kubeconfig = k.split(" && ").next().map(PathBuf::from);
        }
        if line.starts_with("wasmcm running:") {
            assert_eq!(line, "wasmcm running: stamp (Ctrl-C to stop)");
            break;
        }
    }
    let (address, kubeconfig) = (address.expect("the metrics address"), kubeconfig.expect("the try line"));
    let addr: std::net::SocketAddr = address.parse().unwrap();
    let token_arg = token.display().to_string();
    let list = || {
        let run = common::wasmcm(&["plugins", "list", "--address", &address, "--admin-token-file", &token_arg]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stdout
    };
    let row = |name: &str| list().lines().find(|l| l.starts_with(&format!("{name} "))).map(str::to_string);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let metrics = || runtime.block_on(common::http_get(addr, "/metrics")).1;
    let wait = |what: &str, done: &mut dyn FnMut() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !done() {
            assert!(Instant::now() < deadline, "{what}: not within 120 s; plugins:\n{}", list());
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let client = runtime.block_on(async { kube::Client::try_from(common::config(&kubeconfig).await).unwrap() });
    let replicasets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client, "default");
    let rs = |replicas: i32| -> ReplicaSet {
        serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
        }))
        .unwrap()
    };
    runtime.block_on(replicasets.create(&PostParams::default(), &rs(2))).unwrap();
    let count = || runtime.block_on(pods.list(&Default::default())).unwrap().items.len();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(count(), 0, "no plugin reconciles ReplicaSets yet");

    // Added with a wrong pin: listed as failed, with the reason; the host runs on.
    let pinned = format!("{{source: {{builtin: replicaset}}, sha256: {}}}", "ab".repeat(32));
    write(dir.path(), "zz-replicaset.yaml", manifest("replicaset", &pinned));
    wait("the wrong pin listed", &mut || {
        row("replicaset").is_some_and(|r| r.contains(" failed ") && r.contains("DigestMismatch"))
    });
    assert_eq!(common::metric(&metrics(), "wasmcm_plugin_load_failures_total", &["plugin=\"replicaset\""]), 1.0);

    // Fixed: it loads, without a restart, and reconciles.
    write(dir.path(), "zz-replicaset.yaml", manifest("replicaset", "{source: {builtin: replicaset}}"));
    wait("the fixed plugin live", &mut || row("replicaset").is_some_and(|r| r.contains(" live ")));
    wait("the ReplicaSet's pods", &mut || count() == 2);
    let text = metrics();
    assert_eq!(common::sample(&text, "wasmcm_plugin_info", &["plugin=\"replicaset\""]), Some(1.0), "{text}");
    assert!(common::sample(&text, "wasmcm_informer_objects", &["kind=\"apps/v1/ReplicaSet\""]).is_some(), "{text}");

    // Removed: it stops, its series and the informers only it read go, the others stay.
    std::fs::remove_file(dir.path().join("zz-replicaset.yaml")).unwrap();
    wait("the plugin gone from the list", &mut || row("replicaset").is_none());
    let gone = ["kind=\"apps/v1/ReplicaSet\""];
    wait("its informers stopped", &mut || common::sample(&metrics(), "wasmcm_informer_objects", &gone).is_none());
    let text = metrics();
    for (series, label) in [
        ("wasmcm_plugin_info", "plugin=\"replicaset\""),
        ("workqueue_depth", "name=\"replicaset\""),
        ("wasmcm_informer_objects", "kind=\"apps/v1/ReplicaSet\""),
        ("wasmcm_informer_objects", "kind=\"v1/Pod\""),
    ] {
        assert_eq!(common::sample(&text, series, &[label]), None, "{series}{{{label}}} is gone:\n{text}");
    }
    assert!(common::sample(&text, "wasmcm_informer_objects", &["kind=\"v1/ConfigMap\""]).is_some(), "{text}");
    assert!(row("stamp").is_some_and(|r| r.contains(" live ")), "{}", list());
    let mut scaled = runtime.block_on(replicasets.get("web")).unwrap();
    scaled.spec.replicas = Some(3);
    runtime.block_on(replicasets.replace("web", &PostParams::default(), &scaled)).unwrap();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(count(), 2, "a removed plugin reconciles nothing");
    assert!(child.0.try_wait().unwrap().is_none(), "the host runs on");
}
