//! Plugins in Python (issue 34): the website example in Python (`examples/website-python`, built
//! by its own build.sh with the pinned componentize-py) against the Rust one (`examples/website`).
//! The real binary runs the Rust plugin on an embedded cluster while the real kubectl drives a
//! Website through its life (created, finalized, its children made, rolled out, changed,
//! deleted). The plugin writes as its own ServiceAccount, and the test withholds and grants its
//! rights step by step, so each step holds still (its writes refused) while a live reconcile of
//! it is recorded with `wasmcm plugins record`; every recording is replayed against the Python
//! build with `simulate --expect`, which must find it identical. Then the manifest swaps in the
//! Python build under `rollout: {strategy: Shadow}`, which must be promoted with no
//! disagreement, and go on serving the Website. Also: `simulate` of the Python build on the Rust
//! example's snapshot, what the host says of a large component, and that the engine's default
//! pool holds as many Python calls at once as the default workers make.
//!
//! Owns this module and the Python example's build into `target/plugins/python`; it must not
//! touch the Rust example's build beyond running it as `custom_resource` does.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use serde_json::Value;
use wasmcm_test_support::{eventually, workspace_root};

const NAMESPACE: &str = "default";
const SITE: &str = "hello";

fn rust_example() -> PathBuf {
    workspace_root().join("examples/website")
}

fn python_example() -> PathBuf {
    workspace_root().join("examples/website-python")
}

/// Where `make test` (and this module, when that has not run) builds the Python example.
pub fn python_component(release: &str) -> PathBuf {
    let file = if release == "v2" { "website-v2.wasm" } else { "website.wasm" };
    common::plugins_target().join("python/website-python").join(file)
}

/// The newest modification time of the Python sources the component is built from.
fn newest_source() -> SystemTime {
    let dirs = [python_example(), workspace_root().join("guest-controllers/sdk-python/wasmcm_guest")];
    let mut newest = SystemTime::UNIX_EPOCH;
    for dir in dirs {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.extension().is_some_and(|e| e == "py") {
                newest = newest.max(std::fs::metadata(&path).and_then(|m| m.modified()).expect("an mtime"));
            }
        }
    }
    newest
}

/// The Python example's component of `release`, built with its build.sh unless a build newer
/// than its sources is there (componentize-py takes about 20 s of CPU a build).
pub fn build_python(release: &str) -> Vec<u8> {
    static BUILD: Mutex<()> = Mutex::new(());
    let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let out = python_component(release);
    let fresh = std::fs::metadata(&out).and_then(|m| m.modified()).is_ok_and(|built| built >= newest_source());
    if !fresh {
        let built =
            Command::new(python_example().join("build.sh")).arg(release).arg(&out).output().expect("build.sh runs");
        assert!(built.status.success(), "examples/website-python/build.sh {release}: {}", text(&built));
    }
    std::fs::read(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()))
}

/// The Rust example's release build, as `custom_resource` makes it.
fn build_rust() -> Vec<u8> {
    let args = ["build", "--release", "--locked", "--target", "wasm32-unknown-unknown"];
    let out = common::plugin_cargo(&rust_example(), &args);
    assert!(out.status.success(), "building examples/website: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::read(common::plugins_target().join("wasm32-unknown-unknown/release/website.wasm")).expect("website.wasm")
}

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `wasmcm` with the shared precompiled cache, so a Python component compiles once per build.
fn wasmcm(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wasmcm"))
        .args(args)
        .env("WASMCM_CACHE_DIR", common::precompiled_dir())
        .env("RUST_LOG", "off")
        .output()
        .expect("the binary runs")
}

fn actions(result: &Value) -> Vec<String> {
    let verb = |a: &Value, f: &str| a[f].as_str().unwrap_or_default().to_string();
    let list = result["actions"].as_array().cloned().unwrap_or_default();
    list.iter().map(|a| format!("{} {} {}", verb(a, "verb"), verb(a, "kind"), verb(a, "name"))).collect()
}

#[test]
fn the_python_website_simulates_as_the_rust_one_on_its_snapshot() {
    let (rust, python) = (build_rust(), build_python("v1"));
    let dir = tempfile::tempdir().unwrap();
    let mut results = Vec::new();
    for (name, bytes) in [("rust.wasm", &rust), ("python.wasm", &python)] {
        let component = dir.path().join(name);
        std::fs::write(&component, bytes).unwrap();
        let snapshot = rust_example().join("deploy/snapshot.yaml");
        let out = wasmcm(&[
            "simulate",
            "--plugin",
            &component.display().to_string(),
            "--state",
            &snapshot.display().to_string(),
            "--key",
            "default/hello",
            "--now",
            "2026-11-26T08:00:05Z",
        ]);
        assert!(out.status.success(), "{name}: {}", text(&out));
        let result: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        results.push(result);
    }
    assert_eq!(
        actions(&results[1]),
        [
            "create ConfigMap hello-content",
            "create Deployment hello",
            "create ConfigMap website-registry",
            "update-status Website hello"
        ],
        "{:#}",
        results[1]
    );
    assert_eq!(results[0]["outcome"], results[1]["outcome"], "the same writes, byte for byte once parsed");
    assert_eq!(results[0]["state"], results[1]["state"], "the same cluster after them");

    // What the host says of it: no WASI imports, its size.
    let out = wasmcm(&["plugins", "inspect", &dir.path().join("python.wasm").display().to_string()]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("website 0.1.0 (contract 0.4.0)"), "{shown}");
    let imports = shown.lines().find(|l| l.trim_start().starts_with("imports:")).expect("an imports line");
    assert!(!imports.contains("wasi:"), "no WASI imports: {imports}");
    eprintln!("{shown}");
}

/// Kills the host this test started, when the test ends however it ends.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// GET `path` of the host's admin address, the body.
async fn get(address: &str, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut out = String::new();
    stream.read_to_string(&mut out).await.ok()?;
    Some(out)
}

fn kubectl_ok(kubeconfig: &Path, args: &[&str]) -> String {
    let out = tokio::task::block_in_place(|| wasmcm_test_support::kubectl(kubeconfig, args, None));
    assert!(out.status.success(), "kubectl {args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn website(kubeconfig: &Path) -> Option<Value> {
    let out = tokio::task::block_in_place(|| {
        wasmcm_test_support::kubectl(kubeconfig, &["get", "website", SITE, "-n", NAMESPACE, "-o", "json"], None)
    });
    out.status.success().then(|| serde_json::from_slice(&out.stdout).ok()).flatten()
}

fn ready(site: &Value, replicas: i64) -> bool {
    let status = &site["status"];
    status["observedGeneration"] == site["metadata"]["generation"]
        && status["readyReplicas"] == replicas
        && status["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// One live reconcile of the Website recorded from the host at `address`, into `file`: the
/// recording, or why there is none.
fn record(address: &str, token: &Path, file: &Path) -> Result<Value, String> {
    let out = wasmcm(&[
        "plugins",
        "record",
        "website",
        &format!("{NAMESPACE}/{SITE}"),
        "-o",
        &file.display().to_string(),
        "--address",
        address,
        "--admin-token-file",
        &token.display().to_string(),
    ]);
    if !out.status.success() {
        return Err(text(&out));
    }
    let recording = std::fs::read(file).map_err(|e| e.to_string())?;
    serde_json::from_slice(&recording).map_err(|e| format!("not a recording: {e}"))
}

/// A recording's intents, batch after batch: `update Website hello`, `create ConfigMap
/// hello-content`...
fn intents(recording: &Value) -> Vec<String> {
    let batches = recording.pointer("/outcome/batches").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut out = Vec::new();
    for intent in batches.iter().filter_map(Value::as_array).flatten().filter_map(Value::as_object) {
        for (verb, object) in intent {
            let name = object.pointer("/metadata/name").or_else(|| object.get("name"));
            let (kind, name) = (object["kind"].as_str().unwrap_or("?"), name.and_then(Value::as_str).unwrap_or("?"));
            out.push(format!("{verb} {kind} {name}"));
        }
    }
    out
}

/// `simulate --expect` of `recording` against the Python component: the line it printed.
fn replay(python: &Path, recording: &Path) -> String {
    let recording = recording.display().to_string();
    let out =
        wasmcm(&["simulate", "--plugin", &python.display().to_string(), "--state", &recording, "--expect", &recording]);
    let said = text(&out);
    assert!(out.status.success() && said.contains("identical to"), "the Python replay of {recording}: {said}");
    said.lines().find(|l| l.contains("identical to")).unwrap_or_default().to_string()
}

/// The website plugin's rights, each a Role of the Website's namespace the test binds to the
/// plugin's own ServiceAccount (`serviceAccount` in its manifest entry, which its writes
/// impersonate) and unbinds again: without one, those of its writes fail with the API server's
/// 403 and the Website's life holds still at that step, every reconcile of it returning the same
/// writes, so a live reconcile that writes can be recorded whatever the machine's speed.
const RIGHTS: [(&str, &str, &str, &[&str]); 4] = [
    ("website-finalizer", "example.wasmcm.dev", "websites", &["update"]),
    ("website-children", "", "configmaps", &["create", "update"]),
    ("website-deployments", "apps", "deployments", &["create", "update"]),
    ("website-status", "example.wasmcm.dev", "websites/status", &["update"]),
];

const ACCOUNT: &str = "website";

async fn roles(admin: &kube::Client) {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::Role;
    let post = kube::api::PostParams::default();
    let account: ServiceAccount = serde_json::from_value(serde_json::json!({"metadata": {"name": ACCOUNT}})).unwrap();
    kube::Api::<ServiceAccount>::namespaced(admin.clone(), NAMESPACE).create(&post, &account).await.unwrap();
    for (name, group, resource, verbs) in RIGHTS {
        let rules = serde_json::json!([{"apiGroups": [group], "resources": [resource], "verbs": verbs}]);
        let role: Role =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "rules": rules})).unwrap();
        kube::Api::<Role>::namespaced(admin.clone(), NAMESPACE).create(&post, &role).await.unwrap();
    }
}

/// Binds exactly the rights `names` (and unbinds the others).
async fn bind(admin: &kube::Client, names: &[&str]) {
    use k8s_openapi::api::rbac::v1::RoleBinding;
    let bindings = kube::api::Api::<RoleBinding>::namespaced(admin.clone(), NAMESPACE);
    for (name, ..) in RIGHTS {
        let bound = bindings.get_opt(name).await.unwrap().is_some();
        if names.contains(&name) && !bound {
            let binding: RoleBinding = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [{"kind": "ServiceAccount", "namespace": NAMESPACE, "name": ACCOUNT}],
            }))
            .unwrap();
            bindings.create(&kube::api::PostParams::default(), &binding).await.unwrap();
        } else if !names.contains(&name) && bound {
            bindings.delete(name, &Default::default()).await.unwrap();
        }
    }
}

const ALL: [&str; 4] = ["website-finalizer", "website-children", "website-deployments", "website-status"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_reconciles_replay_identically_in_python_and_a_shadow_swap_to_it_promotes_with_no_disagreement() {
    let started = Instant::now();
    let rust = tokio::task::block_in_place(build_rust);
    let python = tokio::task::block_in_place(|| build_python("v1"));
    eprintln!("built both in {:.1} s", started.elapsed().as_secs_f64());
    let (cluster, admin) = wasmcm_test_support::cluster().await;
    let kubeconfig = cluster.kubeconfig.clone();
    let dir = tempfile::tempdir().unwrap();
    let components = dir.path().join("components");
    std::fs::create_dir_all(&components).unwrap();
    let (rust_file, python_file) = (components.join("rust.wasm"), components.join("python.wasm"));
    std::fs::write(&rust_file, &rust).unwrap();
    std::fs::write(&python_file, &python).unwrap();
    // The Rust example's manifest, its limits raised to the Python one's, so the swap changes
    // only the source and the rollout; its writes as its own account.
    let manifest = |file: &Path, rollout: &str| {
        format!(
            "apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata:\n  name: website\nspec:\n  source: {{file: {}}}\n  \
             serviceAccount: {NAMESPACE}/{ACCOUNT}\n  limits: {{memory: 128Mi, deadline: 2s}}\n  \
             settings: {{registry: website-registry}}\n{rollout}",
            file.display()
        )
    };
    roles(&admin).await;
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let manifest_file = plugins.join("website.yaml");
    std::fs::write(&manifest_file, manifest(&rust_file, "")).unwrap();

    let address = free_address();
    let token = dir.path().join("admin-token");
    let mut child = common::host_command()
        .args(["run", "--leader-elect=false", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--plugins")
        .arg(&plugins)
        .args(["--metrics-bind-address", &address, "--cache-dir"])
        .arg(common::precompiled_dir())
        .arg("--admin-token-file")
        .arg(&token)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wasmcm runs");
    let stderr = child.stderr.take().expect("piped");
    let _host = Running(child);
    let log = std::sync::Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = log.clone();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            sink.lock().unwrap_or_else(|e| e.into_inner()).push(line);
        }
    });

    kubectl_ok(&kubeconfig, &["apply", "-f", &rust_example().join("deploy/crd.yaml").display().to_string()]);
    kubectl_ok(
        &kubeconfig,
        &["wait", "--for=condition=Established", "crd/websites.example.wasmcm.dev", "--timeout=60s"],
    );
    eventually("the host to serve its admin port", || async { get(&address, "/healthz").await }).await;

    // Live reconciles of the Rust plugin through the Website's life, each held at a step by
    // the rights it lacks (its writes refused, so they are the same however often it runs),
    // then let through (the same writes, performed); each replayed against the Python build.
    let mut recordings: Vec<(String, PathBuf, Vec<String>)> = Vec::new();
    let mut n = 0;
    let mut file = || {
        n += 1;
        dir.path().join(format!("{n:02}.json"))
    };
    // The next reconcile whose writes include `wanted` (a live reconcile, recorded).
    macro_rules! held {
        ($what:expr, $wanted:expr) => {{
            let file = file();
            let doc = eventually(&format!("a reconcile of the Website {} that writes {}", $what, $wanted), || async {
                let doc = tokio::task::block_in_place(|| record(&address, &token, &file)).ok()?;
                intents(&doc).iter().any(|i| i == $wanted).then_some(doc)
            })
            .await;
            recordings.push((format!("{} (writes refused)", $what), file, intents(&doc)));
        }};
    }
    // The next reconcile, whatever it writes.
    macro_rules! next {
        ($what:expr) => {{
            let file = file();
            let doc = eventually(&format!("a reconcile of the Website {}", $what), || async {
                tokio::task::block_in_place(|| record(&address, &token, &file)).ok()
            })
            .await;
            recordings.push(($what.to_string(), file, intents(&doc)));
        }};
    }
    let site = rust_example().join("deploy/website.yaml").display().to_string();
    kubectl_ok(&kubeconfig, &["apply", "-f", &site]);
    held!("new", "update Website hello");
    bind(&admin, &["website-finalizer"]).await;
    next!("new, its finalizer");
    held!("finalized", "create Deployment hello");
    bind(&admin, &["website-finalizer", "website-children", "website-deployments"]).await;
    next!("finalized, its children");
    held!("rolling out", "updateStatus Website hello");
    bind(&admin, &ALL).await;
    next!("rolling out, its status");
    eventually("the Website Ready with 2 replicas", || async { website(&kubeconfig).filter(|s| ready(s, 2)) }).await;
    next!("settled");

    bind(&admin, &[]).await;
    let patch = r#"{"spec":{"image":"nginx:1.28","replicas":3}}"#;
    kubectl_ok(&kubeconfig, &["patch", "website", SITE, "-n", NAMESPACE, "--type=merge", "-p", patch]);
    held!("changed", "update Deployment hello");
    bind(&admin, &ALL).await;
    next!("changed, its writes");
    eventually("the Website Ready with 3 replicas", || async { website(&kubeconfig).filter(|s| ready(s, 3)) }).await;
    next!("settled again");

    bind(&admin, &[]).await;
    kubectl_ok(&kubeconfig, &["delete", "website", SITE, "-n", NAMESPACE, "--wait=false"]);
    held!("deleted", "update ConfigMap website-registry");
    bind(&admin, &ALL).await;
    eventually("the Website gone", || async {
        // The key queued again, in case its retries are backed off.
        let _ = tokio::task::block_in_place(|| record(&address, &token, &dir.path().join("gone.json")));
        website(&kubeconfig).is_none().then_some(())
    })
    .await;

    let mut replayed = Vec::new();
    for (what, file, intents) in &recordings {
        let line = tokio::task::block_in_place(|| replay(&python_file, file));
        replayed.push(format!("{what}: {} intents {intents:?}; {line}", intents.len()));
    }
    eprintln!("replays against Python:\n  {}", replayed.join("\n  "));
    let written: usize = recordings.iter().map(|(_, _, i)| i.len()).sum();
    assert!(written >= 10, "the recordings write children, status, the registry and the finalizer: {replayed:#?}");

    // The Website again, run to rest by the Rust plugin.
    kubectl_ok(&kubeconfig, &["apply", "-f", &site]);
    eventually("the new Website Ready with 2 replicas", || async { website(&kubeconfig).filter(|s| ready(s, 2)) })
        .await;

    // The Python build under a shadow rollout: it runs beside the Rust one on the same requests,
    // its writes compared and never performed, and is promoted after 8 agreements. Changes of
    // the Website, each run to rest, until then.
    let shadow_from = log.lock().unwrap().len();
    std::fs::write(&manifest_file, manifest(&python_file, "  rollout: {strategy: Shadow, agreements: 8}\n")).unwrap();
    let digest = common::sha256(&python);
    let metrics = || async { get(&address, "/metrics").await.unwrap_or_default() };
    eventually("the Python build in shadow", || async {
        let m = metrics().await;
        m.contains(&format!("digest=\"{digest}\"")).then_some(())
    })
    .await;
    let live = |m: &str| {
        m.lines().any(|l| {
            l.starts_with("wasmcm_plugin_info{")
                && l.contains(&format!("digest=\"{digest}\""))
                && l.contains("state=\"live\"")
                && l.ends_with(" 1")
        })
    };
    let changes = std::sync::atomic::AtomicUsize::new(0);
    let m = eventually("the Python build promoted", || async {
        let m = metrics().await;
        if live(&m) {
            return Some(m);
        }
        let compared: Vec<&str> = m.lines().filter(|l| l.starts_with("wasmcm_shadow_comparisons_total{")).collect();
        eprintln!("not promoted yet: {compared:?}");
        let i = changes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let replicas = 3 - i % 2;
        let patch = format!(r#"{{"spec":{{"replicas":{replicas},"content":"<h1>change {i}</h1>"}}}}"#);
        kubectl_ok(&kubeconfig, &["patch", "website", SITE, "-n", NAMESPACE, "--type=merge", "-p", &patch]);
        let what = format!("the Website Ready with {replicas} replicas after change {i}");
        eventually(&what, || async { website(&kubeconfig).filter(|s| ready(s, replicas as i64)) }).await;
        None
    })
    .await;
    let comparisons: Vec<&str> = m.lines().filter(|l| l.starts_with("wasmcm_shadow_comparisons_total{")).collect();
    eprintln!("shadow comparisons:\n  {}", comparisons.join("\n  "));
    assert!(
        comparisons.iter().all(|l| !l.contains("result=\"mismatch\"") || l.ends_with(" 0")),
        "no disagreement: {comparisons:?}\n{}",
        log.lock().unwrap()[shadow_from..].join("\n")
    );
    assert!(comparisons.iter().any(|l| l.contains("result=\"agreement\"")), "{comparisons:?}");

    // Promoted, the Python plugin serves the Website.
    kubectl_ok(
        &kubeconfig,
        &["patch", "website", SITE, "-n", NAMESPACE, "--type=merge", "-p", r#"{"spec":{"replicas":1}}"#],
    );
    eventually("the Python plugin to bring the Website to 1 replica", || async {
        website(&kubeconfig).filter(|s| ready(s, 1))
    })
    .await;
    let log = log.lock().unwrap()[shadow_from..].join("\n");
    assert!(!log.contains("ReconcileFailed") && !log.contains("trapped"), "{log}");
}

/// A componentize-py component instantiates 38 core modules a call (the interpreter's shared
/// libraries and their stubs) where a Rust one instantiates 3: the engine's default pool must
/// hold the calls the default workers make at once whatever the language. Two Python plugins at
/// the default 5 workers, one with a shadow candidate beside it: 15 Python calls held together
/// in the default engine's pool, with 15 calls of the three built-ins beside them.
#[test]
fn the_default_pool_holds_two_python_plugins_and_a_shadow_at_the_default_workers() {
    use std::sync::Arc;
    use std::time::Duration;
    let python = build_python("v1");
    let engine = wasmcm::Engine::new(&wasmcm::EngineConfig {
        precompiled_dir: Some(common::precompiled_dir()),
        ..wasmcm::EngineConfig::default()
    })
    .unwrap();
    // Held for as long as the others take to start, not cut short by the deadline.
    let limits = wasmcm::Limits { memory_bytes: 128 << 20, deadline: Duration::from_secs(600) };
    let website = Arc::new(engine.load("website", &python, limits.clone()).expect("the Python website loads"));
    let replicaset = wasmcm::builtin::get("replicaset").expect("built in");
    let builtin = Arc::new(engine.load("replicaset", replicaset, limits).expect("the built-in loads"));
    let (pythons, builtins) = (15, 15);
    let cache = Arc::new(crate::engine::Rendezvous::new(pythons + builtins, Duration::from_secs(300)));
    let now = wasmcm_guest::Instant::parse_rfc3339("2026-11-26T08:00:00Z").unwrap();
    let calls: Vec<_> = (0..pythons + builtins)
        .map(|i| {
            let plugin = if i < pythons { website.clone() } else { builtin.clone() };
            let cache = cache.clone();
            let request = wasmcm_guest::Request::new("default", &format!("site-{i}"), now);
            std::thread::spawn(move || plugin.reconcile(&request, cache))
        })
        .collect();
    let failed: Vec<String> =
        calls.into_iter().filter_map(|c| c.join().unwrap().err()).map(|e| e.to_string()).collect();
    assert_eq!(failed, Vec::<String>::new(), "every call had an instance");
}
