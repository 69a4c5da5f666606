//! `wasmcm simulate` through the built binary: output, exit codes, error messages; and
//! docs/plugins.md's "Try `simulate`" block, run as written.

use crate::common;
use crate::common::{Run, wasmcm};
use crate::docs::PLUGINS;
use crate::readme::{Blocks, Reader, installed};

use std::path::Path;

use serde_json::Value;

const NOW: &str = "2026-11-21T10:00:00Z";

fn example(name: &str) -> String {
    common::workspace_root().join("examples").join(name).display().to_string()
}

fn simulate(plugin: &str, state: &str, key: &str, extra: &[&str]) -> Run {
    let mut args = vec!["simulate", "--plugin", plugin, "--state", state, "--key", key, "--now", NOW];
    args.extend_from_slice(extra);
    wasmcm(&args)
}

fn ok_json(run: Run) -> Value {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    serde_json::from_str(&run.stdout).expect("stdout is one JSON document")
}

fn verbs(out: &Value) -> Vec<(String, String)> {
    out["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["verb"].as_str().unwrap().to_string(), a["kind"].as_str().unwrap().to_string()))
        .collect()
}

fn owned_pods(out: &Value) -> Vec<&Value> {
    out["state"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "Pod" && i["metadata"]["ownerReferences"][0]["name"] == "web")
        .collect()
}

#[test]
fn scale_up_creates_three_owned_pods() {
    let out = ok_json(simulate("replicaset", &example("replicaset-scale-up.yaml"), "default/web", &[]));
    assert_eq!(out["plugin"]["name"], "replicaset");
    assert_eq!(out["plugin"]["version"], "0.1.0");
    let creates: Vec<_> = verbs(&out).into_iter().filter(|(v, k)| v == "create" && k == "Pod").collect();
    assert_eq!(creates.len(), 3);
    assert_eq!(verbs(&out).last().unwrap(), &("update-status".to_string(), "ReplicaSet".to_string()));
    let pods = owned_pods(&out);
    assert_eq!(pods.len(), 3);
    for p in &pods {
        let name = p["metadata"]["name"].as_str().unwrap();
        assert!(name.starts_with("web-") && name.len() == "web-".len() + 5, "{name}");
        assert_eq!(p["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(p["metadata"]["creationTimestamp"], NOW);
    }
    let events: Vec<_> = out["events"].as_array().unwrap().iter().map(|e| e["reason"].as_str().unwrap()).collect();
    assert_eq!(events, vec!["SuccessfulCreate"; 3]);
    assert!(out["requeueAfterSeconds"].is_null());
    let rs = item(&out, "ReplicaSet", "web");
    assert_eq!(rs["status"]["observedGeneration"], 1);
    assert_eq!(rs["metadata"]["resourceVersion"], "104", "three creates and a status write");
}

/// docs/plugins.md's "Try `simulate`" block, run as written from the repository root, and the
/// document it shows printed: its request and actions are what simulate prints.
#[test]
fn scale_down_deletes_the_three_the_upstream_ranking_picks() {
    let blocks = Blocks::of(PLUGINS, "cargo run -p wasmcm -- simulate --plugin replicaset");
    let command = installed(&blocks.take("cargo run -p wasmcm -- simulate --plugin replicaset"));
    blocks.finished("docs/plugins.md's Try simulate block");
    let home = tempfile::tempdir().unwrap();
    let run = Reader::new(home.path()).run(&common::workspace_root(), &command);
    assert!(run.status.success(), "{command}: {}", String::from_utf8_lossy(&run.stderr));
    let out: Value = serde_json::from_slice(&run.stdout).expect("stdout is one JSON document");
    let shown = PLUGINS.split("```jsonc\n").nth(1).and_then(|b| b.split("```").next()).expect("the jsonc block");
    let line = |key: &str| {
        let line = shown.lines().find_map(|l| l.trim().strip_prefix(&format!("\"{key}\": "))).expect(key);
        serde_json::from_str::<Value>(line.trim_end_matches(',')).unwrap_or_else(|e| panic!("{key}: {e}: {line}"))
    };
    assert_eq!(out["request"], line("request"), "{out:#}");
    let actions: Vec<Value> = shown
        .lines()
        .skip_while(|l| !l.contains("\"actions\": ["))
        .skip(1)
        .take_while(|l| !l.trim().starts_with(']'))
        .map(|l| serde_json::from_str(l.trim().trim_end_matches(',')).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(out["actions"].as_array(), Some(&actions), "docs/plugins.md shows {actions:#?}");
    let deleted: Vec<_> = out["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["verb"] == "delete")
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(deleted, vec!["web-unscheduled", "web-pending", "web-not-ready"]);
    // Bound pods terminate gracefully; the unscheduled one is gone at once.
    let items = out["state"]["items"].as_array().unwrap();
    let by_name = |n: &str| items.iter().find(|i| i["metadata"]["name"] == n);
    assert!(by_name("web-unscheduled").is_none());
    assert_eq!(by_name("web-pending").unwrap()["metadata"]["deletionTimestamp"], "2026-11-21T10:00:30Z");
    for keep in ["web-ready-old", "web-ready-new"] {
        assert!(by_name(keep).unwrap()["metadata"].get("deletionTimestamp").is_none(), "{keep}");
    }
}

/// The item of `kind`/`name` in the state after the writes.
fn item<'a>(out: &'a Value, kind: &str, name: &str) -> &'a Value {
    out["state"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == kind && i["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in the state"))
}

#[test]
fn deployment_rolling_update_step_surges_the_new_replica_set_and_trims_the_old() {
    let out = ok_json(simulate("deployment", &example("deployment-rolling-update.yaml"), "default/web", &[]));
    let created: Vec<&Value> =
        out["state"]["items"].as_array().unwrap().iter().filter(|i| i["kind"] == "ReplicaSet").collect();
    assert_eq!(created.len(), 2, "one new ReplicaSet");
    let new = created.iter().find(|rs| rs["metadata"]["name"] != "web-7c5ddbdf54").unwrap();
    assert_eq!(new["spec"]["replicas"], 1, "25% of 4 surges by 1");
    assert_eq!(new["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "2");
    assert_eq!(new["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.28");
    assert_eq!(item(&out, "ReplicaSet", "web-7c5ddbdf54")["spec"]["replicas"], 3, "25% of 4 may be unavailable");
    let d = item(&out, "Deployment", "web");
    assert_eq!(d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "2");
    assert_eq!(d["status"]["observedGeneration"], 2);
    let reasons: Vec<&str> = out["events"].as_array().unwrap().iter().map(|e| e["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["ScalingReplicaSet", "ScalingReplicaSet"]);
}

/// `simulate --plugin deployment` of key `default/web` over `objects`, at the fixtures' time.
fn simulate_deployment(objects: &[Value]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
    let state = write(dir.path(), "state.json", &list.to_string());
    let now = ["--now", wasmcm_deployment::fixtures::NOW];
    let run = wasmcm(
        &[&["simulate", "--plugin", "deployment", "--state", &state, "--key", "default/web"][..], &now].concat(),
    );
    ok_json(run)
}

/// The deployment crate's history-cleanup table, through the component and the simulated API.
#[test]
fn deployment_history_cleanup_as_upstream() {
    for case in wasmcm_deployment::fixtures::cleanup_cases() {
        let out = simulate_deployment(&case.objects);
        let deleted: Vec<&str> = out["actions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["verb"] == "delete" && a["kind"] == "ReplicaSet")
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        assert_eq!(deleted, case.want, "{}", case.what);
        for name in &case.want {
            assert!(!out["state"]["items"].as_array().unwrap().iter().any(|i| i["metadata"]["name"] == *name));
        }
    }
}

/// The deployment crate's damaged max-replicas table, through the component.
#[test]
fn deployment_damaged_max_replicas_annotations_as_upstream() {
    for case in wasmcm_deployment::fixtures::damaged_annotation_cases() {
        let out = simulate_deployment(&case.objects);
        for (name, want) in &case.want {
            assert_eq!(item(&out, "ReplicaSet", name)["spec"]["replicas"], *want, "{}: {name}", case.what);
        }
    }
}

#[test]
fn rollback_request_puts_the_old_template_back_and_records_it() {
    let out = ok_json(simulate("rollback", &example("deployment-rollback.yaml"), "default/web", &[]));
    assert_eq!(verbs(&out), [("update".to_string(), "Deployment".to_string())]);
    let d = item(&out, "Deployment", "web");
    assert!(d["metadata"]["annotations"].get("rollback.wasmcm.dev/to-revision").is_none(), "request consumed");
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27");
    assert!(d["spec"]["template"]["metadata"]["labels"].get("pod-template-hash").is_none());
    assert_eq!(
        d["metadata"]["annotations"]["kubernetes.io/change-cause"],
        "kubectl create deployment web --image=nginx:1.27"
    );
    let events = out["events"].as_array().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["reason"], "DeploymentRollback");
    assert_eq!(events[0]["message"], "Rolled back deployment \"web\" to revision 1");
}

#[test]
fn json_lists_work_like_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = std::fs::read_to_string(example("replicaset-scale-down.yaml")).unwrap();
    let items = wasmcm::simulate::parse_objects(&yaml).unwrap();
    let path = dir.path().join("state.json");
    std::fs::write(&path, serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()).unwrap();
    let from_json = ok_json(simulate("replicaset", path.to_str().unwrap(), "default/web", &[]));
    let from_yaml = ok_json(simulate("replicaset", &example("replicaset-scale-down.yaml"), "default/web", &[]));
    assert_eq!(from_json, from_yaml);
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn bad_input_exits_2_and_says_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let broken = write(dir.path(), "broken.yaml", "apiVersion: v1\nkind: [Pod\n");
    let r = simulate("replicaset", &broken, "default/web", &[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains(&broken) && r.stderr.contains("invalid YAML"), "{}", r.stderr);

    let nameless = write(dir.path(), "nameless.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {}\n");
    let r = simulate("replicaset", &nameless, "default/web", &[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("item 1 (Pod): metadata.name is missing"), "{}", r.stderr);

    let missing = dir.path().join("absent.yaml").display().to_string();
    let r = simulate("replicaset", &missing, "default/web", &[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains(&missing) && r.stderr.contains("cannot read"), "{}", r.stderr);

    let r = simulate("replicaset", &example("replicaset-scale-down.yaml"), "default/nope", &[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("key default/nope"), "{}", r.stderr);
    assert!(r.stderr.contains("apps/v1 ReplicaSet ×1, v1 Pod ×5"), "{}", r.stderr);

    let r = simulate("no-such-plugin", &example("replicaset-scale-up.yaml"), "default/web", &[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("unknown plugin \"no-such-plugin\"") && r.stderr.contains("replicaset"), "{}", r.stderr);

    let junk = write(dir.path(), "junk.wasm", "\0asm junk");
    let r = simulate(&junk, &example("replicaset-scale-up.yaml"), "default/web", &[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains(&junk) && r.stderr.contains("not a valid WebAssembly component"), "{}", r.stderr);

    let scale_up = example("replicaset-scale-up.yaml");
    let r =
        wasmcm(&["simulate", "--plugin", "replicaset", "--state", &scale_up, "--key", "default/web", "--now", "noon"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--now") && r.stderr.contains("noon"), "{}", r.stderr);
}

#[test]
fn plugin_failures_exit_3_with_name_version_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cms: String = ["loop", "panic"]
        .iter()
        .map(|n| format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}, namespace: default}}\n"))
        .collect();
    let state = write(dir.path(), "cms.yaml", &cms);
    let hostile = common::guest("wasmcm_hostile.wasm").display().to_string();

    let r = simulate(&hostile, &state, "default/loop", &["--deadline-ms", "200"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("plugin hostile 0.0.1 trapped (deadline)"), "{}", r.stderr);

    let r = simulate(&hostile, &state, "default/panic", &[]);
    assert_eq!(r.code, 3);
    assert!(
        r.stderr.contains("trapped (panic)") && r.stderr.contains("hostile plugin panics on purpose"),
        "{}",
        r.stderr
    );
}

/// A 3 MB recording whose one call's answer names one 4 KiB object 1.4 million times (once
/// more than 5 GiB when each naming was a copy) is refused at once, the cap named.
#[test]
fn a_hostile_recording_is_refused_quickly_naming_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let object = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "u1", "annotations": {"pad": "x".repeat(4096)}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
    });
    let recording = |namings: usize| {
        let answer = format!("[{}0]", "0,".repeat(namings - 1));
        format!(
            r#"{{"apiVersion": "wasmcm.dev/v1alpha1", "kind": "Recording",
                "plugin": {{"name": "replicaset", "version": "0.1.0", "digest": "d"}},
                "request": {{"namespace": "default", "name": "web", "now": "2026-11-21T10:00:00Z"}},
                "reads": [{{"call": "list", "apiVersion": "v1", "kind": "Pod", "namespace": "default",
                            "selector": {{"matchLabels": {{"app": "web"}}}}, "answer": {answer}}}],
                "objects": [{object}], "outcome": {{"batches": []}}}}"#
        )
    };
    for (namings, cap) in [
        (1_400_000, "the answers name more than 1000000 objects in all, the cap a replay reads"),
        (900_000, "the answers hand out more than 256 MiB of objects in all, the cap a replay reads"),
    ] {
        let text = recording(namings);
        assert!(text.len() > namings * 2, "{} bytes", text.len());
        let path = dir.path().join("hostile.json");
        std::fs::write(&path, &text).unwrap();
        let started = std::time::Instant::now();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_wasmcm"))
            .args(["simulate", "--plugin", "replicaset", "--state", path.to_str().unwrap()])
            .env("WASMCM_CACHE_DIR", common::precompiled_dir())
            .env("RUST_LOG", "off")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Generous for a loaded machine; the replay that copied every naming ran for minutes.
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > std::time::Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("simulate still ran after 60 s on a {} byte recording", text.len());
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("hostile.json: reads[0].answer: {cap}")), "{stderr}");
    }
}
