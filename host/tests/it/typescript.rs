//! Plugins in TypeScript (issue 34), through the real binary:
//!
//! - the TypeScript website example (`examples/website-typescript`) behaves as the Rust one: the
//!   Rust plugin's live reconciles, recorded with `wasmcm plugins record` on a running host,
//!   replay identically against the TypeScript build with `wasmcm simulate --expect`. The host
//!   runs the Rust plugin with its writes narrowed away (`capabilities: {writes: []}`), so every
//!   Website stays in the state the test made it (fresh, new, a child of someone else, stale
//!   children and registry, being deleted) and each recording is a reconcile with writes to
//!   compare;
//! - its component imports nothing but the contract (`plugins inspect`);
//! - its README runs as written: the build block is what `make test` runs (`make -n -B`); its
//!   `simulate` of the Rust example's snapshot prints what the Rust build prints; its replay of
//!   a recording of the Rust plugin is identical; its `run` serves the plugin on the embedded
//!   cluster it starts.
//!
//! A TypeScript plugin's bad input (an exception, the clock, randomness, timers, the network)
//! is `scaffold_typescript`'s, on the scaffold's own rebuild. Owns this module and the example's
//! build (`npm ci`, `npm run build` in its directory, when its component is missing or older
//! than its sources or the SDK's).

use crate::common;
use crate::custom_resource::{HostProcess, readyz};
use crate::readme::{Blocks, Reader, installed};
use crate::record::start_host;
use crate::scaffold::text;
use crate::scaffold_typescript::npm;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde_json::{Value, json};
use wasmcm_apiserver::{Cluster, ClusterConfig};
use wasmcm_test_support::workspace_root;

const FINALIZER: &str = "example.wasmcm.dev/registry";

const README: &str = include_str!("../../../examples/website-typescript/README.md");

fn example_dir() -> PathBuf {
    workspace_root().join("examples/website-typescript")
}

fn sdk_dir() -> PathBuf {
    workspace_root().join("guest-controllers/sdk-typescript")
}

/// The newest modification time of the files under `dir` (sources: no node_modules, dist, build).
fn newest(dir: &Path) -> SystemTime {
    let mut newest = SystemTime::UNIX_EPOCH;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if ["node_modules", "dist", "build"].iter().any(|skip| name == *skip) {
                continue;
            }
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(path),
                Ok(m) => newest = newest.max(m.modified().unwrap_or(SystemTime::UNIX_EPOCH)),
                Err(_) => {}
            }
        }
    }
    newest
}

/// The example's component, as its README builds it (`npm ci`, `npm run build`); `make test`
/// has built it already unless its sources or the SDK's changed since.
pub(crate) fn example_component() -> PathBuf {
    static BUILD: Mutex<()> = Mutex::new(());
    let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let dir = example_dir();
    let wasm = dir.join("build/website.wasm");
    let built = std::fs::metadata(&wasm).and_then(|m| m.modified()).ok();
    let sources = newest(&dir.join("src")).max(newest(&sdk_dir().join("src"))).max(newest(&sdk_dir().join("bin")));
    if built.is_none_or(|b| b < sources) {
        if !dir.join("node_modules/.bin/wasmcm-componentize").exists() {
            let out = npm(&dir, &["ci"]);
            assert!(out.status.success(), "npm ci in {}: {}", dir.display(), text(&out));
        }
        let out = npm(&dir, &["run", "build"]);
        assert!(out.status.success(), "npm run build in {}: {}", dir.display(), text(&out));
    }
    wasm
}

fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let out = wasmcm_test_support::kubectl(kubeconfig, args, stdin);
    assert!(out.status.success(), "kubectl {args:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn apply(kubeconfig: &Path, object: &Value) -> Value {
    kubectl(kubeconfig, &["apply", "-f", "-"], Some(&object.to_string()));
    let (kind, name) = (object["kind"].as_str().unwrap(), object["metadata"]["name"].as_str().unwrap());
    serde_json::from_str(&kubectl(kubeconfig, &["get", kind, name, "-n", "default", "-o", "json"], None)).unwrap()
}

fn website(name: &str, finalizers: &[&str], image: &str, replicas: i64) -> Value {
    json!({"apiVersion": "example.wasmcm.dev/v1", "kind": "Website",
           "metadata": {"name": name, "namespace": "default", "finalizers": finalizers},
           "spec": {"image": image, "replicas": replicas, "content": format!("<h1>{name}</h1>")}})
}

/// A child of `owner` as the Rust plugin would have written it at release 0.0.9, with `data`
/// or `replicas` of `image`.
fn child(owner: &Value, kind: &str, name: &str, image: &str) -> Value {
    let owner_ref = json!({"apiVersion": "example.wasmcm.dev/v1", "kind": "Website", "name": owner["metadata"]["name"],
                           "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true});
    let site = owner["metadata"]["name"].as_str().unwrap();
    let labels = json!({"app.kubernetes.io/name": "website", "app.kubernetes.io/instance": site,
                        "app.kubernetes.io/managed-by": "website"});
    let metadata = json!({"name": name, "namespace": "default", "labels": labels, "ownerReferences": [owner_ref],
                          "annotations": {"example.wasmcm.dev/controller-version": "0.0.9"}});
    let pod_labels = json!({"app.kubernetes.io/name": "website", "app.kubernetes.io/instance": site});
    match kind {
        "ConfigMap" => {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"index.html": "old"}})
        }
        _ => json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": {
            "replicas": 1, "selector": {"matchLabels": pod_labels},
            "template": {"metadata": {"labels": pod_labels}, "spec": {"containers": [{"name": "web", "image": image}]}}}}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_website_imports_only_the_contract_and_replays_the_rust_plugins_live_reconciles_identically() {
    let typescript = example_component();
    // No WASI at all: the host sees the contract's interfaces and nothing else.
    let run = common::wasmcm(&["plugins", "inspect", &typescript.display().to_string()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("website 0.1.0 (contract 0.4.0)"), "{}", run.stdout);
    let imports = run.stdout.lines().find_map(|l| l.trim().strip_prefix("imports:")).expect("an imports line");
    let imports: Vec<&str> = imports.split(',').map(str::trim).collect();
    assert_eq!(
        imports,
        ["wasmcm:reconciler/types@0.4.0", "wasmcm:reconciler/cache@0.4.0", "wasmcm:reconciler/log@0.4.0"],
        "no WASI at all"
    );

    let rust = tempfile::tempdir().unwrap();
    let rust_wasm = rust.path().join("website.wasm");
    std::fs::write(
        &rust_wasm,
        tokio::task::spawn_blocking(|| crate::custom_resource::build_example(&[])).await.unwrap(),
    )
    .unwrap();

    let cluster = Cluster::start(ClusterConfig::default()).await.unwrap();
    let kubeconfig = cluster.kubeconfig.clone();
    common::kubectl_apply(
        &kubeconfig,
        &[&workspace_root().join("examples/website/deploy/crd.yaml").display().to_string()],
    );
    common::eventually("the Website CRD served", || {
        let served = wasmcm_test_support::kubectl(&kubeconfig, &["get", "websites"], None).status.success();
        async move { served.then_some(()) }
    })
    .await;

    // Each Website in a state a reconcile has writes for.
    apply(&kubeconfig, &website("fresh", &[], "nginx:1.27", 2));
    apply(&kubeconfig, &website("new", &[FINALIZER], "nginx:1.27", 2));
    apply(&kubeconfig, &website("conflict", &[FINALIZER], "nginx:1.27", 1));
    let mut theirs =
        child(&json!({"metadata": {"name": "conflict", "uid": "someone-else"}}), "Deployment", "conflict", "httpd:2");
    theirs["metadata"]["ownerReferences"] = json!([]);
    apply(&kubeconfig, &theirs);
    let stale = apply(&kubeconfig, &website("stale", &[FINALIZER], "nginx:1.28", 3));
    apply(&kubeconfig, &child(&stale, "ConfigMap", "stale-content", ""));
    apply(&kubeconfig, &child(&stale, "Deployment", "stale", "nginx:1.27"));
    let status = json!({"status": {"observedGeneration": 1, "replicas": 1, "readyReplicas": 0, "updatedReplicas": 1,
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "Unavailable", "message": "0/3 replicas ready",
             "observedGeneration": 1, "lastTransitionTime": "2026-11-26T07:00:00Z"},
            {"type": "Progressing", "status": "True", "reason": "RollingOut", "message": "1/3 updated, 0/3 replicas ready",
             "observedGeneration": 1, "lastTransitionTime": "2026-11-26T07:00:00Z"}]}});
    kubectl(
        &kubeconfig,
        &[
            "patch",
            "website",
            "stale",
            "-n",
            "default",
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ],
        None,
    );
    apply(&kubeconfig, &website("leaving", &["other.io/keep", FINALIZER], "nginx:1.27", 1));
    apply(
        &kubeconfig,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "sites", "namespace": "default"},
        "data": {"stale": "nginx:1.27", "leaving": "nginx:1.27", "elsewhere": "httpd:2"}}),
    );
    kubectl(&kubeconfig, &["delete", "website", "leaving", "-n", "default", "--wait=false"], None);

    // The Rust plugin on a live host, its writes narrowed away so that every state stays.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::write(
        dir.path().join("plugins/website.yaml"),
        format!(
            "apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {{name: website}}\n\
             spec: {{source: {{file: {}}}, capabilities: {{writes: []}}, settings: {{registry: sites}}}}\n",
            rust_wasm.display()
        ),
    )
    .unwrap();
    let token = dir.path().join("admin-token");
    let (_host, address) = start_host(&cluster, &dir.path().join("plugins"), &token);

    let mut replayed = Vec::new();
    for name in ["fresh", "new", "conflict", "stale", "leaving"] {
        let recording = dir.path().join(format!("{name}.json"));
        let file = recording.display().to_string();
        let (address, token, key) = (address.clone(), token.display().to_string(), format!("default/{name}"));
        let run = common::eventually(&format!("a recording of {key}"), || {
            let (file, address, token, key) = (file.clone(), address.clone(), token.clone(), key.clone());
            async move {
                let run = tokio::task::spawn_blocking(move || {
                    common::wasmcm(&[
                        "plugins",
                        "record",
                        "website",
                        &key,
                        "-o",
                        &file,
                        "--address",
                        &address,
                        "--admin-token-file",
                        &token,
                    ])
                })
                .await
                .unwrap();
                (run.code == 0).then_some(run)
            }
        })
        .await;
        assert!(run.stderr.contains("recorded website 0.1.0"), "{}", run.stderr);
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&recording).unwrap()).unwrap();
        let batches = doc["outcome"]["batches"].as_array().map_or(0, Vec::len);
        assert!(batches > 0, "{name}: the recorded reconcile has writes to compare: {doc:#}");

        let ts = typescript.display().to_string();
        let replay = common::wasmcm(&["simulate", "--plugin", &ts, "--state", &file, "--expect", &file]);
        assert_eq!(
            replay.code, 0,
            "{name}: the TypeScript build differs from the Rust plugin's live reconcile: {}",
            replay.stderr
        );
        assert!(replay.stderr.contains(&format!("identical to {file}")), "{}", replay.stderr);
        assert!(replay.stderr.contains("replayed with another plugin than recorded"), "{}", replay.stderr);
        replayed.push(format!("{name}: {} batches", batches));
        // The language bench (host/benches/languages.rs) times these same reconciles: its
        // recordings were saved from here.
        if let Some(keep) = std::env::var_os("WASMCM_SAVE_RECORDINGS") {
            std::fs::copy(&recording, Path::new(&keep).join(format!("{name}.json"))).unwrap();
        }
    }
    eprintln!("replayed identically against the TypeScript build: {}", replayed.join("; "));
    the_readme_runs_as_written(&rust_wasm, &dir.path().join("fresh.json")).await;
}

/// The README's blocks, each command as written in a reader's shell at a checkout's root: the
/// Rust build `rust_wasm` is what the TypeScript build must print the same as, and `recording`
/// one of the Rust plugin's live reconciles (the README's `hello.json`).
async fn the_readme_runs_as_written(rust_wasm: &Path, recording: &Path) {
    let home = tempfile::tempdir().unwrap();
    let reader = Reader::new(home.path());
    let root = workspace_root();
    let build = Blocks::of(README, "cd examples/website-typescript");
    let cd = build.take("cd examples/website-typescript");
    // -B: every step, whether this checkout has built it already or not.
    let make = tokio::task::block_in_place(|| reader.ok(&root, "make -n -B test-typescript"));
    for command in [build.take("npm ci"), build.take("npm test"), build.take("npm run build")] {
        let command = command.split(" #").next().unwrap_or_default().trim();
        let line = format!("{cd} && {command}");
        let found = make.lines().any(|l| l == line || l.starts_with(&format!("{line} ")));
        assert!(found, "make test runs {line} (its flags aside): {make}");
    }
    build.finished("examples/website-typescript/README.md's Build and test block");

    // A checkout whose examples are this one's, and the recording as `hello.json`.
    let checkout = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root.join("examples"), checkout.path().join("examples")).unwrap();
    std::fs::copy(recording, checkout.path().join("hello.json")).unwrap();
    let run = |command: &str| {
        let out = tokio::task::block_in_place(|| reader.run(checkout.path(), command));
        assert!(out.status.success(), "{command}: {}", text(&out));
        out
    };
    let blocks = Blocks::of(README, "cargo run -p wasmcm -- simulate");
    let typescript = "examples/website-typescript/build/website.wasm";
    // The block's two simulates, in its order: the snapshot's, then the replay.
    let simulate = installed(&blocks.take(&format!("cargo run -p wasmcm -- simulate --plugin {typescript}")));
    assert!(simulate.contains("--state examples/website/deploy/snapshot.yaml"), "{simulate}");
    let reconciled = |command: &str| {
        let mut printed: Value = serde_json::from_slice(&run(command).stdout).expect("one JSON document");
        printed.as_object_mut().and_then(|o| o.remove("plugin")).expect("the plugin run");
        printed
    };
    let rust = simulate.replace(typescript, &rust_wasm.display().to_string());
    assert_eq!(reconciled(&simulate), reconciled(&rust), "the TypeScript build prints what the Rust one prints");

    let replay = blocks.take(&format!("cargo run -p wasmcm -- simulate --plugin {typescript}"));
    assert!(replay.contains("--state hello.json --expect hello.json"), "{replay}");
    let (replay, said) = replay.split_once(" #").expect("what the replay prints");
    let said = said.split('"').nth(1).expect("a quoted line");
    let out = run(&installed(replay.trim()));
    assert!(String::from_utf8_lossy(&out.stderr).contains(said), "{said}: {}", text(&out));

    // `run` as written, with what a test adds (a free metrics address, no Lease): the plugin
    // loads and reports on the embedded cluster the host starts.
    let run = installed(&blocks.take("cargo run -p wasmcm -- run --plugins examples/website-typescript/plugin.yaml"));
    blocks.finished("examples/website-typescript/README.md's Simulate, replay, run block");
    let args: Vec<&str> = run.split_whitespace().skip(1).collect();
    let state = tempfile::tempdir().unwrap();
    let mut host = HostProcess::spawn(checkout.path(), &args, state.path());
    let try_line = host.printed("try: export KUBECONFIG=").await;
    let kubeconfig = PathBuf::from(try_line["try: export KUBECONFIG=".len()..].split(" && ").next().unwrap_or(""));
    host.cluster_dir = kubeconfig.parent().map(Path::to_path_buf);
    let address = host.address.clone();
    // Its kind is not served until the README's CRD is applied: the plugin runs, unsynced.
    common::eventually("the TypeScript plugin to report", || async {
        readyz(&address).await.filter(|body| body.contains("[-]plugin/website not synced"))
    })
    .await;
}
