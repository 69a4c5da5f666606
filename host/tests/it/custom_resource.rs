//! The example plugin for a custom resource (`examples/website`), end to end as a team outside
//! this repository would run it: built with cargo in its own directory (a standalone crate with
//! its own lock), loaded by the real `wasmcm run` from its own `plugin.yaml` next to the
//! built-ins, its CRD and a Website applied with the real kubectl to the embedded cluster, then
//! reconciled (owned children, pods, status and conditions, printer columns, a spec change),
//! hot-swapped to its second release (cargo feature `v2`) and deleted through its finalizer.
//! Then the same plugin on a host run as deploy/manifests' least-privileged account, writing
//! as its own account with only the RBAC `wasmcm plugins rbac` prints for it. Also `wasmcm
//! simulate` of the example's snapshot.
//!
//! The example's README runs here as written, in a reader's shell from a checkout's root: "Run
//! it with the host" is the first test's host and kubectl lines, "Simulate one reconcile" the
//! simulate test's, whose "Build and test" lines are checked with `make -n` to be `make test`'s.
//!
//! Owns this module and the example's build; it must not touch the other modules' plugins or
//! the built-in guests' build (`host/build.rs`, `target/guests`).

use crate::common;
use crate::readme::{Blocks, Reader, installed};
use crate::scaffold;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams};
use serde_json::Value;
use wasmcm_test_support::{eventually, workspace_root};

const NAMESPACE: &str = "default";
const SITE: &str = "hello";
const REGISTRY: &str = "website-registry";
const VERSION_ANNOTATION: &str = "example.wasmcm.dev/controller-version";
const FOOTER: &str = "<footer>served by website 0.2.0</footer>";

const README: &str = include_str!("../../../examples/website/README.md");

fn example_dir() -> PathBuf {
    workspace_root().join("examples/website")
}

/// The example's component as its README builds it, with `features`. One build at a time:
/// both releases come out at the same path. The shared `target/plugins` keeps compiled
/// dependencies across runs and tests.
pub(crate) fn build_example(features: &[&str]) -> Vec<u8> {
    static BUILD: Mutex<()> = Mutex::new(());
    let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let mut args = vec!["build", "--release", "--locked", "--target", "wasm32-unknown-unknown"];
    let features = features.join(",");
    if !features.is_empty() {
        args.extend(["--features", &features]);
    }
    let out = common::plugin_cargo(&example_dir(), &args);
    assert!(out.status.success(), "building examples/website {features:?}: {}", String::from_utf8_lossy(&out.stderr));
    let target_dir = common::plugins_target();
    let wasm = target_dir.join("wasm32-unknown-unknown/release/website.wasm");
    std::fs::read(&wasm).unwrap_or_else(|e| panic!("{}: {e}", wasm.display()))
}

/// `kubectl patch website` with a merge patch.
fn patch_website(kubeconfig: &Path, patch: &str) {
    kubectl_ok(kubeconfig, &["patch", "website", SITE, "-n", NAMESPACE, "--type=merge", "-p", patch]);
}

/// A checkout as the example's README is read from its root: `examples/website` with its
/// `plugin.yaml` as shipped (a copy: the host finds the component from the manifest's own
/// directory), its `deploy/`, and the component where the README's build puts it and the
/// manifest says (`target/wasm32-unknown-unknown/release/website.wasm`); and `target/tools`,
/// where `make` puts the pinned kubectl.
struct PluginDir {
    dir: tempfile::TempDir,
}

impl PluginDir {
    fn new(component: &[u8]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let me = PluginDir { dir };
        std::fs::create_dir_all(me.path().join("target/wasm32-unknown-unknown/release")).unwrap();
        std::fs::copy(example_dir().join("plugin.yaml"), me.manifest()).unwrap();
        std::os::unix::fs::symlink(example_dir().join("deploy"), me.path().join("deploy")).unwrap();
        std::fs::create_dir(me.checkout().join("target")).unwrap();
        let tools = wasmcm_test_support::kubectl_path().parent().expect("target/tools").to_path_buf();
        std::os::unix::fs::symlink(tools, me.checkout().join("target/tools")).unwrap();
        me.release(component);
        me
    }

    /// The checkout's root.
    fn checkout(&self) -> &Path {
        self.dir.path()
    }

    /// Its `examples/website`.
    fn path(&self) -> PathBuf {
        self.dir.path().join("examples/website")
    }

    fn manifest(&self) -> PathBuf {
        self.path().join("plugin.yaml")
    }

    /// Replaces the component as a build would end: a complete file renamed into place.
    fn release(&self, component: &[u8]) {
        let at = self.path().join("target/wasm32-unknown-unknown/release/website.wasm");
        let tmp = at.with_extension("wasm.new");
        std::fs::write(&tmp, component).unwrap();
        std::fs::rename(&tmp, &at).unwrap();
    }
}

/// `wasmcm run` with the plugins of a manifest file or directory, its metrics and admin endpoint
/// on a free address, its log collected; killed when the test ends however it ends, with the
/// files of the embedded cluster it started, if it started one.
pub(crate) struct HostProcess {
    pub(crate) address: String,
    /// The host's log, for the failure messages.
    log: std::sync::Arc<Mutex<Vec<String>>>,
    /// What it printed.
    printed: std::sync::Arc<Mutex<Vec<String>>>,
    child: Child,
    pub(crate) cluster_dir: Option<PathBuf>,
}

impl HostProcess {
    /// On `kubeconfig`'s cluster.
    fn start(kubeconfig: &Path, plugins: &Path, state: &Path) -> Self {
        let (kubeconfig, plugins) = (kubeconfig.display().to_string(), plugins.display().to_string());
        Self::spawn(Path::new("."), &["run", "--kubeconfig", &kubeconfig, "--plugins", &plugins], state)
    }

    /// `wasmcm` with `args` (`run …`) in `dir`.
    pub(crate) fn spawn(dir: &Path, args: &[&str], state: &Path) -> Self {
        let address = free_address();
        let mut child = common::host_command()
            // As deploy/manifests' pod: in namespace wasmcm, where the plugins' accounts are.
            .env("POD_NAMESPACE", "wasmcm")
            .current_dir(dir)
            .args(args)
            .args(["--leader-elect=false", "--metrics-bind-address", &address, "--cache-dir"])
            // The tests' shared cache: the website and the built-ins compiled once for all.
            .arg(common::precompiled_dir())
            .arg("--admin-token-file")
            .arg(state.join("admin-token"))
            .env("RUST_LOG", "warn,wasmcm=info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wasmcm runs");
        let log = collect(child.stderr.take().expect("piped"));
        let printed = collect(child.stdout.take().expect("piped"));
        HostProcess { address, log, printed, child, cluster_dir: None }
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).join("\n")
    }

    /// The line it printed that starts with `start`, once it has.
    pub(crate) async fn printed(&self, start: &str) -> String {
        eventually(&format!("the host to print {start:?}"), || async {
            self.printed.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|l| l.starts_with(start)).cloned()
        })
        .await
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.cluster_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Collects a child's pipe on a thread, for the failure messages.
fn collect(pipe: impl Read + Send + 'static) -> std::sync::Arc<Mutex<Vec<String>>> {
    let lines = std::sync::Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            sink.lock().unwrap_or_else(|e| e.into_inner()).push(line);
        }
    });
    lines
}

/// A free loopback address for the host's metrics and admin endpoint.
fn free_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// The real kubectl, off the async workers (the cluster serves on them).
fn kubectl(kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let out = tokio::task::block_in_place(|| wasmcm_test_support::kubectl(kubeconfig, args, None));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn kubectl_ok(kubeconfig: &Path, args: &[&str]) -> String {
    let (ok, stdout, stderr) = kubectl(kubeconfig, args);
    assert!(ok, "kubectl {args:?}: {stdout}{stderr}");
    stdout
}

/// The Website as kubectl reads it, if it exists.
fn website(kubeconfig: &Path) -> Option<Value> {
    let (ok, stdout, _) = kubectl(kubeconfig, &["get", "website", SITE, "-n", NAMESPACE, "-o", "json"]);
    ok.then(|| serde_json::from_str(&stdout).ok()).flatten()
}

fn condition<'a>(site: &'a Value, type_: &str) -> Option<&'a Value> {
    site.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == type_)
}

/// Ready and not progressing, with every count at `replicas`, for the site's latest generation.
fn settled(site: &Value, replicas: i64) -> bool {
    let status = &site["status"];
    let current = |c: Option<&Value>| c.is_some_and(|c| c["observedGeneration"] == site["metadata"]["generation"]);
    status["observedGeneration"] == site["metadata"]["generation"]
        && status["readyReplicas"] == replicas
        && status["updatedReplicas"] == replicas
        && condition(site, "Ready").is_some_and(|c| c["status"] == "True" && c["reason"] == "Available")
        && condition(site, "Progressing").is_some_and(|c| c["status"] == "False" && c["reason"] == "Complete")
        && current(condition(site, "Ready"))
        && current(condition(site, "Progressing"))
}

fn registry_data(cm: Option<ConfigMap>) -> Vec<(String, String)> {
    cm.and_then(|cm| cm.data).map(|d| d.into_iter().collect()).unwrap_or_default()
}

async fn ready_pods(pods: &Api<Pod>, image: &str) -> usize {
    let list = pods.list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={SITE}"))).await;
    list.map(|l| l.items)
        .unwrap_or_default()
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.spec.as_ref().is_some_and(|s| s.containers[0].image.as_deref() == Some(image)))
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .count()
}

/// The host's `/readyz?verbose`, once it answers.
pub(crate) async fn readyz(address: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
    let request = "GET /readyz?verbose HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut out = String::new();
    stream.read_to_string(&mut out).await.ok()?;
    Some(out)
}

/// The live version of the host's `website` plugin, from `wasmcm plugins list` with the admin
/// token the host made in `state`.
fn live_version(address: &str, state: &Path) -> Option<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_wasmcm"))
        .args(["plugins", "list", "--address", address, "--admin-token-file"])
        .arg(state.join("admin-token"))
        .env("RUST_LOG", "off")
        .output()
        .ok()?;
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    table.lines().map(|l| l.split_whitespace().collect::<Vec<_>>()).find_map(|words| {
        (words.first() == Some(&"website") && words.get(2) == Some(&"live")).then(|| words[1].to_string())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_website_is_reconciled_hot_swapped_and_deleted_through_its_finalizer() {
    let v1 = tokio::task::block_in_place(|| build_example(&[]));
    let v2 = tokio::task::block_in_place(|| build_example(&["v2"]));
    assert_ne!(v1, v2, "the second release is another component");

    // The README's "Run it with the host" block, each command as written in a reader's shell in
    // the checkout: the host on the embedded cluster it starts, the kubectl lines with the
    // KUBECONFIG it prints exported.
    let plugins = PluginDir::new(&v1);
    let blocks = Blocks::of(README, "cargo run -p wasmcm -- run");
    let run = installed(&blocks.take("cargo run -p wasmcm -- run --plugins examples/website/plugin.yaml"));
    let run: Vec<&str> = run.split(" #").next().unwrap_or_default().split_whitespace().skip(1).collect();
    let state = tempfile::tempdir().unwrap();
    // Started before the CRD exists: the host must find the kind once it is served.
    let mut host = HostProcess::spawn(plugins.checkout(), &run, state.path());
    let try_line = host.printed("try: export KUBECONFIG=").await;
    let kubeconfig = PathBuf::from(try_line["try: export KUBECONFIG=".len()..].split(" && ").next().unwrap_or(""));
    host.cluster_dir = kubeconfig.parent().map(Path::to_path_buf);
    let export = blocks.take("export KUBECONFIG=…");
    assert!(export.ends_with("# the path it prints"), "{export}");
    let export = format!("export KUBECONFIG={} && ", kubeconfig.display());
    let reader = Reader::new(state.path());
    let sh = |command: &str| {
        let out = tokio::task::block_in_place(|| reader.run(plugins.checkout(), &format!("{export}{command}")));
        assert!(out.status.success(), "{command}: {}", scaffold::text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let admin = wasmcm_test_support::client(&kubeconfig).await;
    let address = host.address.clone();
    // The host is up and has found that the cluster does not serve Websites yet.
    let readyz = eventually("the host to report website not synced", || async {
        readyz(&address).await.filter(|body| body.contains("[-]plugin/website not synced"))
    })
    .await;
    assert!(readyz.contains("[+]plugin/deployment ok"), "the other plugins run: {readyz}");
    assert_eq!(tokio::task::block_in_place(|| live_version(&address, state.path())).as_deref(), Some("0.1.0"));

    // The CRD, then at once a Website: the embedded cluster serves a CRD as soon as it stores it.
    sh(&blocks.take("target/tools/kubectl apply -f examples/website/deploy/crd.yaml"));
    sh(&blocks.take("target/tools/kubectl apply -f examples/website/deploy/website.yaml"));
    let get = blocks.take("target/tools/kubectl get websites");
    let (_, columns) = get.split_once("# ").expect("the columns shown");
    let table = sh(&get);
    assert_eq!(
        table.lines().next().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).as_deref(),
        Some(columns),
        "{table}"
    );

    // Reconciled: the finalizer, owned children, two ready pods, status with conditions.
    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), NAMESPACE);
    let config_maps: Api<ConfigMap> = Api::namespaced(admin.clone(), NAMESPACE);
    let pods: Api<Pod> = Api::namespaced(admin.clone(), NAMESPACE);
    // kubectl's default of 30 s, generous for a reader, is not for a loaded CI machine.
    let wait = blocks.take("target/tools/kubectl wait --for=condition=Ready website/hello");
    assert!(!wait.contains("--timeout"), "{wait}");
    sh(&format!("{wait} --timeout=120s"));
    let site = eventually("the Website to be Ready with 2 replicas", || async {
        website(&kubeconfig).filter(|s| settled(s, 2))
    })
    .await;
    // Waiting for a CRD is a normal state: said once, at INFO, with the kind's name, and that it
    // is served at last; not a WARN at every retry.
    let log = host.log();
    let kind = "example.wasmcm.dev/v1/Website";
    let waiting: Vec<&str> =
        log.lines().filter(|l| l.contains(&format!("waiting for the cluster to serve kind {kind}"))).collect();
    assert!(waiting.len() == 1 && waiting[0].contains(" INFO "), "once, at INFO:\n{log}");
    assert!(log.contains(&format!("the cluster serves kind {kind}: watching it")), "{log}");
    assert!(!log.lines().any(|l| l.contains(" WARN ") && l.contains(kind)), "no WARN for {kind}:\n{log}");
    let uid = site["metadata"]["uid"].as_str().expect("a uid").to_string();
    assert_eq!(site["metadata"]["finalizers"], serde_json::json!(["example.wasmcm.dev/registry"]), "{site}");
    let deployment = deployments.get(SITE).await.expect("the Deployment");
    let content = config_maps.get(&format!("{SITE}-content")).await.expect("the content ConfigMap");
    for (what, refs) in
        [("Deployment", &deployment.metadata.owner_references), ("ConfigMap", &content.metadata.owner_references)]
    {
        let refs = refs.as_ref().unwrap_or_else(|| panic!("{what} has ownerReferences"));
        assert_eq!(refs.len(), 1, "{what}: {refs:?}");
        let r = &refs[0];
        assert_eq!(
            (r.kind.as_str(), r.api_version.as_str(), r.name.as_str(), r.uid.as_str(), r.controller),
            ("Website", "example.wasmcm.dev/v1", SITE, uid.as_str(), Some(true)),
            "{what}"
        );
    }
    let data = content.data.clone().unwrap_or_default();
    assert!(data["index.html"].contains("<h1>Hello from a wasmcm plugin</h1>"), "{data:?}");
    assert!(!data["index.html"].contains(FOOTER));
    assert_eq!(ready_pods(&pods, "nginx:1.27").await, 2);
    assert_eq!(
        registry_data(config_maps.get_opt(REGISTRY).await.unwrap()),
        [(SITE.to_string(), "nginx:1.27".to_string())]
    );

    // The CRD's printer columns, through kubectl's server-side printing.
    let table = kubectl_ok(&kubeconfig, &["get", "websites", "-n", NAMESPACE]);
    let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["NAME", "IMAGE", "REPLICAS", "READY", "AGE"], "{table}");
    assert_eq!(rows[1][..4], [SITE, "nginx:1.27", "2", "2"], "{table}");

    // The README's spec change, then another: they reach the Deployment, the pods, the
    // registry and the status.
    sh(&blocks.take(r#"target/tools/kubectl patch website hello --type=merge -p '{"spec":{"replicas":3}}'"#));
    eventually("the Website to be Ready with 3 replicas", || async {
        website(&kubeconfig).filter(|s| settled(s, 3) && s["metadata"]["generation"] == 2)
    })
    .await;
    patch_website(&kubeconfig, r#"{"spec":{"image":"nginx:1.28"}}"#);
    let site = eventually("the Website to be Ready with 3 replicas of nginx:1.28", || async {
        website(&kubeconfig).filter(|s| settled(s, 3) && s["metadata"]["generation"] == 3)
    })
    .await;
    assert_eq!(site["status"]["observedGeneration"], 3);
    eventually("3 ready pods of nginx:1.28", || async { (ready_pods(&pods, "nginx:1.28").await == 3).then_some(()) })
        .await;
    let deployment = deployments.get(SITE).await.unwrap();
    let spec = &deployment.spec;
    assert_eq!(spec.replicas, Some(3));
    assert_eq!(spec.template.spec.as_ref().unwrap().containers[0].image.as_deref(), Some("nginx:1.28"));
    assert_eq!(
        registry_data(config_maps.get_opt(REGISTRY).await.unwrap()),
        [(SITE.to_string(), "nginx:1.28".to_string())]
    );
    let annotation = |d: &Deployment| d.metadata.annotations.as_ref().and_then(|a| a.get(VERSION_ANNOTATION)).cloned();
    assert_eq!(annotation(&deployment).as_deref(), Some("0.1.0"));

    // Hot swap: the second release replaces the file while the host runs; the next change of
    // the Website is reconciled by it.
    plugins.release(&v2);
    eventually("the host to promote website 0.2.0", || async {
        tokio::task::block_in_place(|| live_version(&address, state.path())).filter(|v| v == "0.2.0")
    })
    .await;
    patch_website(&kubeconfig, r#"{"spec":{"content":"<h1>Hello again</h1>"}}"#);
    let page = eventually("the page of 0.2.0 with its footer", || async {
        let cm = config_maps.get_opt(&format!("{SITE}-content")).await.ok().flatten()?;
        let page = cm.data?.get("index.html")?.clone();
        (page.contains("<h1>Hello again</h1>") && page.contains(FOOTER)).then_some(page)
    })
    .await;
    assert!(page.starts_with("<h1>Hello again</h1>"), "{page}");
    let deployment = eventually("the Deployment annotated by 0.2.0", || async {
        deployments.get(SITE).await.ok().filter(|d| annotation(d).as_deref() == Some("0.2.0"))
    })
    .await;
    assert_eq!(deployment.metadata.owner_references.as_ref().map(|r| r[0].uid.clone()), Some(uid.clone()));
    eventually("the Website Ready at generation 4", || async {
        website(&kubeconfig).filter(|s| settled(s, 3) && s["metadata"]["generation"] == 4)
    })
    .await;

    // Delete, as the README says: the finalizer's cleanup runs before the Website goes (kubectl
    // waits for that), then its children go.
    let delete = blocks.take("target/tools/kubectl delete website hello");
    assert!(delete.ends_with("# the registry entry goes, then the Website, then its children"), "{delete}");
    let out = sh(&delete);
    blocks.finished("examples/website/README.md's Run it with the host block");
    assert!(out.contains(&format!("website.example.wasmcm.dev \"{SITE}\" deleted")), "{out}");
    assert!(website(&kubeconfig).is_none(), "kubectl delete waits until the Website is gone");
    let registry = config_maps.get_opt(REGISTRY).await.unwrap();
    assert!(registry.is_some(), "the shared registry stays");
    assert_eq!(registry_data(registry), [], "the finalizer removed the Website's entry");
    eventually("the children and their pods to be garbage-collected", || async {
        let gone = deployments.get_opt(SITE).await.ok()?.is_none()
            && config_maps.get_opt(&format!("{SITE}-content")).await.ok()?.is_none()
            && pods
                .list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={SITE}")))
                .await
                .ok()?
                .items
                .is_empty();
        gone.then_some(())
    })
    .await;
    let log = host.log();
    assert!(!log.contains("ReconcileFailed"), "{log}");
}

/// The README's "Build and test" block, whose commands `make test` runs in the example's
/// directory (checked with `make -n`: the same, with `--locked` and the shared target
/// directory), and its "Simulate one reconcile" block, run as written from a checkout's root
/// with the component where that build puts it; what it prints is what the README says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulate_runs_the_example_on_its_snapshot() {
    let home = tempfile::tempdir().unwrap();
    let reader = Reader::new(home.path());
    let build = Blocks::of(README, "cd examples/website");
    let cd = build.take("cd examples/website");
    let make = reader.ok(&workspace_root(), "make -n test");
    for command in [build.take("cargo test "), build.take("cargo build --release --target wasm32-unknown-unknown ")] {
        let command = command.split(" #").next().unwrap_or_default().trim();
        let shared = |l: &&str| l.replace(" --locked", "").replace(" --target-dir ../../target/plugins", "");
        let found = make.lines().find(|l| shared(l) == format!("{cd} && {command}"));
        assert!(found.is_some(), "make test runs {cd} && {command}, with --locked and the shared target dir: {make}");
    }
    build.finished("examples/website/README.md's Build and test block");

    let v1 = tokio::task::block_in_place(|| build_example(&[]));
    let plugins = PluginDir::new(&v1);
    let blocks = Blocks::of(README, "cargo run -p wasmcm -- simulate");
    let simulate = installed(&blocks.take("cargo run -p wasmcm -- simulate"));
    blocks.finished("examples/website/README.md's Simulate one reconcile block");
    let out = tokio::task::block_in_place(|| reader.run(plugins.checkout(), &simulate));
    assert!(out.status.success(), "{simulate}: {}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let actions: Vec<String> = result["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| {
            format!(
                "{} {} {}",
                a["verb"].as_str().unwrap_or(""),
                a["kind"].as_str().unwrap_or(""),
                a["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    // What the README says it prints: the writes, then the Website's condition.
    let said = README.split("prints the writes (").nth(1).and_then(|p| p.split("\n\n").next()).expect("what it prints");
    let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
    let said: Vec<&str> = said.split('`').skip(1).step_by(2).collect();
    let [writes @ .., condition_said] = &said[..] else { panic!("{said:?}") };
    assert_eq!(actions, writes, "{result:#}");
    assert_eq!(writes[2], format!("create ConfigMap {REGISTRY}"));
    assert_eq!(result["plugin"]["version"], "0.1.0");
    let items = result["state"]["items"].as_array().expect("the state after");
    let site = items.iter().find(|o| o["kind"] == "Website").expect("the Website");
    let (type_, reason) = condition_said.split_once(": ").expect("type: reason");
    assert_eq!(condition(site, type_).map(|c| c["reason"].clone()), Some(reason.into()), "{site:#}");
    let deployment = items.iter().find(|o| o["kind"] == "Deployment").expect("the Deployment");
    assert_eq!(deployment["metadata"]["ownerReferences"][0]["uid"], site["metadata"]["uid"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_website_runs_as_its_own_service_account_with_the_rbac_wasmcm_prints_for_it() {
    let v1 = tokio::task::block_in_place(|| build_example(&[]));
    let (cluster, admin) = wasmcm_test_support::cluster().await;
    let kubeconfig = cluster.kubeconfig.clone();
    // The host as deploy/manifests run it: its ServiceAccount may only read the built-ins'
    // kinds and impersonate the built-ins' accounts, which write for them.
    common::kubectl_apply(&kubeconfig, &common::RBAC_MANIFESTS);
    common::kubectl_apply(&kubeconfig, &["06-plugin-identities.yaml"]);
    let token = cluster.service_account_token("wasmcm", "wasmcm").unwrap();
    let as_host = cluster.kubeconfig_for_token(&token).unwrap();
    let plugins = PluginDir::new(&v1);
    let component = plugins.path().join("target/wasm32-unknown-unknown/release/website.wasm");
    let rbac = || {
        let (component, kubeconfig) = (component.display().to_string(), kubeconfig.display().to_string());
        let manifest = plugins.manifest().display().to_string();
        tokio::task::block_in_place(|| {
            common::wasmcm(&["plugins", "rbac", &component, "--kubeconfig", &kubeconfig, "--plugins", &manifest])
        })
    };
    // Plurals come from discovery, never guessed: without its CRD the kind is not served.
    let refused = rbac();
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("plugin website: kind example.wasmcm.dev/v1/Website is not served by the cluster"),
        "{}",
        refused.stderr
    );
    let crd = example_dir().join("deploy/crd.yaml");
    kubectl_ok(&kubeconfig, &["apply", "-f", &crd.display().to_string()]);
    kubectl_ok(
        &kubeconfig,
        &["wait", "--for=condition=Established", "crd/websites.example.wasmcm.dev", "--timeout=60s"],
    );

    // The plugins as the deploy ConfigMap names the built-ins, and the website as its own
    // account, scoped to its namespace.
    let manifest = std::fs::read_to_string(plugins.manifest()).unwrap();
    let manifest = manifest.replace(
        "\nspec:\n",
        &format!("\nspec:\n  serviceAccount: wasmcm-website\n  scope: {{namespaces: [{NAMESPACE}]}}\n"),
    );
    std::fs::write(plugins.manifest(), manifest).unwrap();
    let configmap = std::fs::read_to_string(common::manifest("07-configmap-plugins.yaml")).unwrap();
    let configmap: Value = serde_saphyr::from_str(&configmap).unwrap();
    let builtins = configmap["data"]["plugins.yaml"].as_str().expect("the ConfigMap's plugins.yaml");
    std::fs::write(plugins.path().join("builtins.yaml"), builtins).unwrap();
    let state = tempfile::tempdir().unwrap();
    let host = HostProcess::start(&as_host, &plugins.path(), state.path());

    // Without the website's RBAC the host may not even list Websites; the built-ins run.
    let readyz = eventually("the host to report website not synced", || async {
        readyz(&host.address).await.filter(|body| body.contains("[-]plugin/website not synced"))
    })
    .await;
    assert!(readyz.contains("[+]plugin/deployment ok"), "{readyz}");
    eventually("the host to log the 403 listing Websites", || async {
        host.log().contains(r#"cannot list resource \"websites\""#).then_some(())
    })
    .await;

    // What `wasmcm plugins rbac` prints for the component, applied as its README says.
    let printed = rbac();
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    assert!(printed.stdout.contains("serviceAccount: wasmcm-website"), "{}", printed.stdout);
    // Its scope lists its namespace: a Role there, no ClusterRole for its writes.
    let objects: Vec<Value> = serde_saphyr::from_multiple(&printed.stdout).unwrap();
    let named = |kind: &str| objects.iter().find(|o| o["kind"] == kind && o["metadata"]["name"] == "wasmcm-website");
    assert_eq!(
        named("Role").map(|r| r["metadata"]["namespace"].clone()),
        Some(Value::from(NAMESPACE)),
        "{}",
        printed.stdout
    );
    assert!(named("ClusterRole").is_none(), "{}", printed.stdout);
    let applied = tokio::task::block_in_place(|| {
        wasmcm_test_support::kubectl(&kubeconfig, &["apply", "-f", "-"], Some(&printed.stdout))
    });
    assert!(applied.status.success(), "{}", String::from_utf8_lossy(&applied.stderr));
    let objects = String::from_utf8_lossy(&applied.stdout).lines().count();
    assert_eq!(objects, 7, "{}", String::from_utf8_lossy(&applied.stdout));

    // Now it syncs, and every write it makes (the finalizer, the children, the registry, the
    // status, its events) goes through as wasmcm-website: the host's own account writes nothing.
    let sample = example_dir().join("deploy/website.yaml");
    kubectl_ok(&kubeconfig, &["apply", "-f", &sample.display().to_string()]);
    let site = eventually("the Website to be Ready with 2 replicas", || async {
        website(&kubeconfig).filter(|s| settled(s, 2))
    })
    .await;
    assert_eq!(site["metadata"]["finalizers"], serde_json::json!(["example.wasmcm.dev/registry"]), "{site}");
    let config_maps: Api<ConfigMap> = Api::namespaced(admin.clone(), NAMESPACE);
    assert_eq!(
        registry_data(config_maps.get_opt(REGISTRY).await.unwrap()),
        [(SITE.to_string(), "nginx:1.27".to_string())]
    );
    let log = host.log();
    assert!(
        !log.contains("ReconcileFailed")
            && !log.contains("forbidden: User \"system:serviceaccount:wasmcm:wasmcm-website\""),
        "{log}"
    );

    // The account is bounded by what the plugin declares: not even reading Secrets.
    let (may, _, _) = kubectl(
        &kubeconfig,
        &["auth", "can-i", "get", "secrets", "--as", "system:serviceaccount:wasmcm:wasmcm-website", "-n", NAMESPACE],
    );
    assert!(!may, "the website's account may not read Secrets");
    let (may, _, _) = kubectl(
        &kubeconfig,
        &[
            "auth",
            "can-i",
            "update",
            "websites.example.wasmcm.dev",
            "--subresource=status",
            "--as",
            "system:serviceaccount:wasmcm:wasmcm-website",
            "-n",
            NAMESPACE,
        ],
    );
    assert!(may, "it may update a Website's status");
    // Its writes are granted in the namespace its scope lists, by a Role there: nowhere else.
    let (may, _, _) = kubectl(
        &kubeconfig,
        &[
            "auth",
            "can-i",
            "create",
            "deployments.apps",
            "--as",
            "system:serviceaccount:wasmcm:wasmcm-website",
            "-n",
            "other",
        ],
    );
    assert!(!may, "the website's account may not write outside its scope");
}
