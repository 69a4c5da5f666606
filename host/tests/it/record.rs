//! `wasmcm plugins record` on a running host and `wasmcm simulate --expect` replaying what it
//! saved, through the real binary: a live reconcile replays identically offline, and a changed
//! plugin version's different outcome is reported with the difference. docs/plugins.md's
//! "Record a live reconcile and replay it" block runs here as written, with what it shows printed.

use crate::common;
use crate::common::wasmcm;
use crate::docs::PLUGINS;
use crate::readme::{Blocks, Reader, sh_block};
use crate::scaffold::text;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wasmcm_apiserver::{Cluster, ClusterConfig};

/// The host, killed when the test ends however it ends.
pub(crate) struct Host(Child);

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The real binary on `cluster` with the built-ins and `plugins`; returns it and its admin
/// address, read from what it prints. Its log goes to `host.log` beside `token`.
pub(crate) fn start_host(cluster: &Cluster, plugins: &Path, token: &Path) -> (Host, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_wasmcm"))
        .arg("--cache-dir")
        .arg(common::precompiled_dir())
        .arg("run")
        .arg("--kubeconfig")
        .arg(&cluster.kubeconfig)
        .arg("--plugins")
        .arg(plugins)
        .arg("--admin-token-file")
        .arg(token)
        .args(["--metrics-bind-address", "127.0.0.1:0", "--leader-elect=false"])
        .env("RUST_LOG", "warn,wasmcm=info")
        .env_remove("WASMCM_PLUGINS")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(token.with_file_name("host.log")).expect("a log file"))
        .spawn()
        .expect("wasmcm runs");
    let stdout = child.stdout.take().expect("piped");
    let host = Host(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut address = None;
    loop {
        let line = rx.recv_timeout(Duration::from_secs(300)).expect("the host prints its address, then runs");
        if let Some(a) = line.strip_prefix("metrics: http://").and_then(|a| a.strip_suffix("/metrics")) {
            address = Some(a.to_string());
        }
        if line.starts_with("wasmcm running:") {
            break;
        }
    }
    (host, address.expect("a metrics line before the running line"))
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_reconcile_is_recorded_and_replays_identically_and_a_changed_plugin_shows_its_difference() {
    let cluster = Cluster::start(ClusterConfig::default()).await.unwrap();
    let client = wasmcm_test_support::client(&cluster.kubeconfig).await;
    let dir = tempfile::tempdir().unwrap();
    let stamp = common::guest("wasmcm_stamp.wasm");
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::write(
        dir.path().join("plugins/stamp.yaml"),
        format!(
            "apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {{name: stamp}}\n\
             spec: {{source: {{file: {}}}, settings: {{limit: 1000000}}}}\n",
            stamp.display()
        ),
    )
    .unwrap();
    // The built-in deployment plugin as the default manifest has it, writing as the account
    // deploy/manifests give it, whose rights the replay of docs/plugins.md's block below narrows.
    common::kubectl_apply(&cluster.kubeconfig, &["00-namespace.yaml", "06-plugin-identities.yaml"]);
    std::fs::write(
        dir.path().join("plugins/deployment.yaml"),
        "apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {name: deployment}\n\
         spec:\n  source: {builtin: deployment}\n  serviceAccount: wasmcm/wasmcm-deployment\n  \
         scope: {grant: [kube-system, kube-public, kube-node-lease], serviceAccounts: [\"*\"], podSecurity: privileged}\n",
    )
    .unwrap();
    let token = dir.path().join("admin-token");
    let (_host, address) = start_host(&cluster, &dir.path().join("plugins"), &token);

    // A ConfigMap the stamp plugin keeps counting (each write wakes its next reconcile), and a
    // Deployment the built-ins run to rest.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let labelled = json!({"metadata": {"name": "counted", "labels": {"wasmcm.dev/stamp": "yes"}}});
    cms.create(&PostParams::default(), &serde_json::from_value(labelled).unwrap()).await.unwrap();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments.create(&PostParams::default(), &common::web(3, "nginx:1")).await.unwrap();
    common::eventually("3 web pods ready", || async {
        let d = deployments.get("web").await.ok()?;
        (d.status?.available_replicas == Some(3)).then_some(())
    })
    .await;

    let record = |plugin: &str, key: &str, out: &Path| {
        let token = token.to_str().unwrap().to_string();
        let (plugin, key, out, address) = (plugin.to_string(), key.to_string(), out.to_path_buf(), address.clone());
        tokio::task::spawn_blocking(move || {
            let out = out.to_str().unwrap();
            wasmcm(&[
                "plugins",
                "record",
                &plugin,
                &key,
                "-o",
                out,
                "--address",
                &address,
                "--admin-token-file",
                &token,
            ])
        })
    };

    // Recorded on the live host: the stamp plugin read its ConfigMap and wrote the next count,
    // into a file only its owner may read (what the plugin read, Secrets included), even where
    // one readable by others was before.
    let recorded = dir.path().join("counted.json");
    std::fs::write(&recorded, "").unwrap();
    std::fs::set_permissions(&recorded, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let run = record("stamp", "default/counted", &recorded).await.unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mode = |p: &Path| std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions()) & 0o777;
    assert_eq!(mode(&recorded), 0o600, "a recording is its owner's alone");
    assert!(
        run.stderr.contains("recorded stamp 1.0.0") && run.stderr.contains("1 intents in 1 batches"),
        "{}",
        run.stderr
    );
    let doc = read(&recorded);
    assert_eq!(
        (&doc["kind"], &doc["plugin"]["digest"]),
        (&json!("Recording"), &json!(common::sha256(&std::fs::read(&stamp).unwrap())))
    );
    assert_eq!(doc["request"]["settings"], json!({"limit": 1000000}));
    assert_eq!(doc["reads"][0]["call"], "get");
    let count: u64 = doc["objects"][0]["data"]["count"].as_str().unwrap().parse().unwrap();
    let update = &doc["outcome"]["batches"][0][0]["update"];
    assert_eq!(update["data"]["count"], (count + 1).to_string(), "what it read, plus one");

    // Replayed offline, the same plugin returns the same outcome, and the recording is a
    // snapshot simulate applies the writes to.
    let file = recorded.to_str().unwrap();
    let stamp_file = stamp.to_str().unwrap();
    let replay = wasmcm(&["simulate", "--plugin", stamp_file, "--state", file, "--expect", file]);
    assert_eq!(replay.code, 0, "{}", replay.stderr);
    assert!(replay.stderr.contains(&format!("identical to {file}")), "{}", replay.stderr);
    let out: Value = serde_json::from_str(&replay.stdout).unwrap();
    assert_eq!(out["expected"]["identical"], true);
    assert_eq!(out["request"], doc["request"], "the plugin was asked as it was then, to the nanosecond");
    assert_eq!(out["actions"][0]["verb"], "update");
    let stored = out["state"]["items"].as_array().unwrap().iter().find(|o| o["metadata"]["name"] == "counted").unwrap();
    assert_eq!(stored["data"]["count"], (count + 1).to_string());

    // A new release of the plugin (another stamp) differs, and says where.
    let v2 = wasmcm_stamp::variant(&std::fs::read(&stamp).unwrap(), "v2", "2.0.0").unwrap();
    let v2_file = dir.path().join("stamp-v2.wasm");
    std::fs::write(&v2_file, v2).unwrap();
    let replay = wasmcm(&["simulate", "--plugin", v2_file.to_str().unwrap(), "--state", file, "--expect", file]);
    assert_eq!(replay.code, 1, "{}", replay.stderr);
    assert!(
        replay.stderr.contains(&format!(
            r#"differs from {file}: intent 0 (update ConfigMap default/counted): /update/data/stamp: "v1" → "v2""#
        )),
        "{}",
        replay.stderr
    );
    assert!(replay.stderr.contains("replayed with another plugin than recorded"), "{}", replay.stderr);
    let out: Value = serde_json::from_str(&replay.stdout).unwrap();
    assert_eq!((&out["expected"]["identical"], &out["expected"]["samePlugin"]), (&json!(false), &json!(false)));

    // docs/plugins.md's block, as written in a shell that has the host's address and token (a
    // reader of `make run`'s defaults, 127.0.0.1:8080 and ~/.config/wasmcm/admin-token, names
    // neither). The key holds still where it would scale: the Deployment asks for 4 replicas and
    // its plugin may no longer update ReplicaSets, so every reconcile returns that update.
    let blocks = Blocks::of(PLUGINS, "wasmcm plugins record deployment");
    let metrics = address.parse().expect("the host's address");
    let refused = || async {
        let (_, text) = common::http_get(metrics, "/metrics").await;
        let failed = ["plugin=\"deployment\"", "outcome=\"write_failed\""];
        common::metric(&text, "wasmcm_reconciles_total", &failed)
    };
    let before = refused().await;
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let mut role = roles.get("wasmcm-deployment").await.unwrap();
    let replica_sets = |r: &&mut PolicyRule| r.resources == Some(vec!["replicasets".into()]);
    let rule = role.rules.iter_mut().flatten().find(replica_sets).expect("the ReplicaSet rule");
    rule.verbs.retain(|v| v != "update");
    roles.replace("wasmcm-deployment", &PostParams::default(), &role).await.unwrap();
    deployments.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 4}}))).await.unwrap();
    common::eventually("the scale refused", || async { (refused().await > before).then_some(()) }).await;
    let reader = Reader::new(dir.path());
    let env = format!("export WASMCM_ADMIN_ADDRESS={address} WASMCM_ADMIN_TOKEN_FILE={} && ", token.display());
    let sh = |command: &str| tokio::task::block_in_place(|| reader.run(dir.path(), &format!("{env}{command}")));
    let run = sh(&blocks.take("wasmcm plugins record deployment default/web -o web.json"));
    assert!(run.status.success(), "{}", text(&run));
    let web = dir.path().join("web.json");
    assert_eq!(mode(&web), 0o600, "a new recording too");
    let mut doc = read(&web);
    // The Deployment's reconcile reads its ReplicaSets and pods by owner.
    let calls: Vec<&str> = doc["reads"].as_array().unwrap().iter().map(|r| r["call"].as_str().unwrap()).collect();
    assert!(calls.contains(&"listControlled"), "{calls:?}");
    let replicas = doc.pointer_mut("/outcome/batches/0/0/update/spec/replicas").expect("the scale first");
    assert_eq!(*replicas, 4, "{}", text(&run));
    let replay = sh(&blocks.take("wasmcm simulate --plugin deployment --state web.json --expect web.json"));
    let said = text(&replay);
    assert!(replay.status.success() && said.contains("identical to web.json"), "identical: exit 0: {said}");

    // A fix of a release that scaled one short: the recording as that release made it, the
    // built-in as ./fixed.wasm. What the block shows it prints, its elided name aside.
    *replicas = json!(3);
    std::fs::write(&web, serde_json::to_vec(&doc).unwrap()).unwrap();
    std::fs::copy(common::guest("wasmcm_deployment_plugin.wasm"), dir.path().join("fixed.wasm")).unwrap();
    let replay = sh(&blocks.take("wasmcm simulate --plugin ./fixed.wasm --state web.json --expect web.json"));
    blocks.finished("docs/plugins.md's record and replay block");
    let shown = sh_block(PLUGINS, "wasmcm plugins record deployment");
    let shown = shown.lines().find_map(|l| l.strip_prefix("# differs from ")).expect("the difference shown");
    let (shown, exit) = shown.split_once("   (exit ").expect("its exit code");
    assert_eq!(replay.status.code().map(|c| c.to_string()), Some(exit.trim_end_matches(')').to_string()));
    let said = text(&replay);
    let printed = said.lines().find_map(|l| l.strip_prefix("differs from ")).unwrap_or_else(|| panic!("{said}"));
    let (before, after) = shown.split_once('…').expect("the ReplicaSet's name elided");
    assert!(
        printed.starts_with(before) && printed.ends_with(after),
        "docs/plugins.md shows {shown}, simulate printed {printed}"
    );

    // What cannot be recorded says why; a recording needs the admin token.
    let run = record("deployment", "default/nope", &dir.path().join("nope.json")).await.unwrap();
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("404") && run.stderr.contains("no apps/v1/Deployment default/nope in the host's cache"),
        "{}",
        run.stderr
    );
    let run = record("nope", "default/web", &dir.path().join("nope.json")).await.unwrap();
    assert!(run.code == 2 && run.stderr.contains("no plugin nope"), "{}", run.stderr);
    let addr = address.parse().unwrap();
    let (code, body) =
        wasmcm::admin_request(addr, http::Method::POST, "/plugins/stamp/record?key=default/counted", None)
            .await
            .unwrap();
    assert_eq!(code, 401, "{body}");
    let bad = wasmcm(&["simulate", "--plugin", stamp_file, "--state", file, "--expect", &example_state()]);
    assert!(bad.code == 2 && bad.stderr.contains("not a recording"), "{}", bad.stderr);
}

fn example_state() -> String {
    common::workspace_root().join("examples/replicaset.yaml").display().to_string()
}
