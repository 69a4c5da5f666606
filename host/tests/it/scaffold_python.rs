//! `wasmcm new --lang python` end to end, as `scaffold` does for Rust: scaffold, its native unit
//! tests (`./test.sh`), its build (`./build.sh`, the pinned componentize-py), `simulate` on its
//! snapshot, `plugins inspect` (no WASI imports), `wasmcm run` with its plugin.yaml on the
//! embedded cluster, its CRD and example applied with the real kubectl and reconciled Ready, a
//! key recorded and replayed identically, then a change rebuilt: the replay shows the
//! difference, and the bad input of a Python plugin (an exception, a clock, a file, a module
//! imported during a call) fails the reconcile with a message saying what happened and what to use,
//! and a key answered with every intent contract 0.4.0 added is performed.
//!
//! Owns this flow only; what a scaffold contains is unit-tested in `host/src/scaffold/`.

use crate::common;
use crate::scaffold::{text, wasmcm};

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const NAME: &str = "hello-python";
const WASM: &str = "build/hello_python.wasm";
const PLURAL: &str = "hellopythons";

fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(dir.join(program)).current_dir(dir).args(args).output().expect("the script runs")
}

#[test]
fn a_new_python_plugin_builds_tests_simulates_and_reconciles_on_the_host() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(NAME);
    let mut steps: Vec<(&str, f64)> = Vec::new();
    let mut last = Instant::now();
    let mut done = |step: &'static str| {
        steps.push((step, last.elapsed().as_secs_f64()));
        last = Instant::now();
    };

    let out = wasmcm(home.path(), &["new", NAME, "--lang", "python"]);
    assert!(out.status.success(), "wasmcm new: {}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("./build.sh"), "{}", text(&out));
    done("scaffold");

    let tested = run(&dir, "test.sh", &["-v"]);
    assert!(tested.status.success(), "test.sh: {}", text(&tested));
    assert!(text(&tested).contains("test_reports_the_generation_ready_then_writes_nothing_more"), "{}", text(&tested));
    done("unit-test");

    let built = run(&dir, "build.sh", &[]);
    assert!(built.status.success(), "build.sh: {}", text(&built));
    done("build the component");

    let simulate = |key: &str, state: &str| {
        wasmcm(&dir, &["simulate", "--plugin", WASM, "--state", state, "--key", key, "--now", "2026-01-01T00:00:00Z"])
    };
    crate::scaffold::simulates_the_example_ready(&dir, WASM, NAME, "HelloPython");
    done("simulate (compiles the component)");

    let out = wasmcm(&dir, &["plugins", "inspect", WASM]);
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success() && shown.contains(&format!("{NAME} 0.1.0 (contract")), "{}", text(&out));
    let imports = shown.lines().find(|l| l.trim_start().starts_with("imports:")).unwrap_or_default();
    assert!(!imports.contains("wasi"), "no WASI imports: {shown}");
    done("inspect");

    let (_host, live) = crate::scaffold::run_on_the_host(home.path(), &dir, NAME);
    let kubeconfig = live.kubeconfig;
    done("load into the host");

    let kubectl = |args: &[&str]| {
        let out = wasmcm_test_support::kubectl(&kubeconfig, args, None);
        (out.status.success(), text(&out))
    };
    let (ok, shown) = kubectl(&["apply", "-f", &dir.join("deploy/crd.yaml").display().to_string()]);
    assert!(ok, "{shown}");
    let deadline = Instant::now() + common::PATIENCE;
    while !kubectl(&["apply", "-f", &dir.join("deploy/example.yaml").display().to_string()]).0 {
        assert!(Instant::now() < deadline, "the example is never accepted");
        std::thread::sleep(Duration::from_millis(300));
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let jsonpath = "jsonpath={.status.observedGeneration} {.status.conditions[?(@.type==\"Ready\")].status}";
        let (_, shown) = kubectl(&["get", PLURAL, "example", "-o", jsonpath]);
        if shown.trim() == "1 True" {
            break;
        }
        assert!(Instant::now() < deadline, "not reconciled: {shown}");
        std::thread::sleep(Duration::from_millis(300));
    }
    done("reconcile the custom resource (kubectl)");

    let address = live.address;
    let token = home.path().join("admin-token").display().to_string();
    let out = wasmcm(
        &dir,
        &[
            "plugins",
            "record",
            NAME,
            "default/example",
            "-o",
            "example.json",
            "--address",
            &address,
            "--admin-token-file",
            &token,
        ],
    );
    assert!(out.status.success(), "record: {}", text(&out));
    let replay = ["simulate", "--plugin", WASM, "--state", "example.json", "--expect", "example.json"];
    let out = wasmcm(&dir, &replay);
    assert!(out.status.success() && text(&out).contains("identical to example.json"), "replay: {}", text(&out));
    done("record and replay a key");

    // A change, and the bad input of a Python plugin behind keys of its own.
    let code = std::fs::read_to_string(dir.join("controller.py")).unwrap();
    assert!(code.contains(r#""Reconciled""#), "the skeleton's reason");
    let code = code.replace(r#""Reconciled""#, r#""Served""#).replace(
        "    def reconcile(self, request: Request, cache: wg.Cache) -> Outcome:\n",
        "    def reconcile(self, request: Request, cache: wg.Cache) -> Outcome:\n        early = misbehave(request.name)\n        if early is not None:\n            return early\n",
    ) + MISBEHAVE;
    std::fs::write(dir.join("controller.py"), code).unwrap();
    let built = run(&dir, "build.sh", &[]);
    assert!(built.status.success(), "build.sh: {}", text(&built));
    let out = wasmcm(&dir, &replay);
    assert_eq!(out.status.code(), Some(1), "the changed plugin differs: {}", text(&out));
    assert!(text(&out).contains("differs from example.json: 0 intents in 0 batches vs 1 in 1"), "{}", text(&out));
    done("change, rebuild, replay");

    let snapshot = std::fs::read_to_string(dir.join("snapshot.yaml")).unwrap();
    let example = snapshot.find("- apiVersion: example.com/v1alpha1").expect("the example in the snapshot");
    let mut state = snapshot.clone();
    for key in ["raises", "clock", "datetime", "random", "files", "patches"] {
        state.push_str(&snapshot[example..].replace("name: example", &format!("name: {key}")));
    }
    std::fs::write(dir.join("bad.yaml"), state).unwrap();
    for (key, expected) in [
        (
            "raises",
            vec![
                "failed: uncaught ValueError: no such widget",
                "Traceback (most recent call last):",
                "controller.py\", line",
            ],
        ),
        (
            "clock",
            vec!["failed: time.time(): the sandbox offers no clock", "use request.now", "(retrying cannot help)"],
        ),
        ("random", vec!["random.random(): the sandbox offers no randomness"]),
        ("files", vec!["open(): the sandbox offers no files", "read the cluster through the cache"]),
        (
            "datetime",
            vec![
                "trapped (sandbox)",
                "a stub of the sandbox: the sandbox offers no imports once a call has begun",
                "import every module the plugin uses at the top",
            ],
        ),
    ] {
        let out = simulate(&format!("default/{key}"), "bad.yaml");
        assert_eq!(out.status.code(), Some(3), "{key}: {}", text(&out));
        for part in expected {
            assert!(text(&out).contains(part), "{key}: {part:?} in {}", text(&out));
        }
        eprintln!("{key}: {}", text(&out).lines().find(|l| l.starts_with("error:")).unwrap_or_default());
    }
    done("bad input");

    // Contract 0.4.0's intents, as the SDK converts them.
    let out = simulate("default/patches", "bad.yaml");
    crate::scaffold::the_0_4_0_intents_were_sent_and_performed(&out);
    done("the 0.4.0 intents");
    let lines: Vec<String> = steps.iter().map(|(s, t)| format!("  {s:<42} {t:>7.2} s")).collect();
    eprintln!("plugin author's steps (Python):\n{}", lines.join("\n"));
}

/// Appended to the scaffold's controller.py: keys that misbehave, and one that answers with
/// every intent contract 0.4.0 added.
const MISBEHAVE: &str = r#"

def misbehave(name: str) -> Outcome | None:
    import random
    import time

    if name == "patches":
        ref = wg.ObjectRef(PRIMARY, "", name)
        return (
            Outcome()
            # The snapshot's objects are at resourceVersion 1.
            .push_batch([wg.Patch.merge(ref, {"metadata": {"labels": {"patched": "merge"}}}).with_resource_version("1")])
            .push_batch([wg.Patch.json(ref, [{"op": "add", "path": "/metadata/annotations", "value": {"patched": "json"}}])])
            .push_batch([wg.Patch.merge(ref, {"status": {"observedGeneration": 7}}).to_status()])
            .push_batch([wg.Delete(ref, propagation=wg.Propagation.FOREGROUND)])
            .push_batch([wg.remove_finalizer_patch(ref, "example.com/keep")])
        )
    if name == "raises":
        raise ValueError("no such widget")
    if name == "clock":
        time.time()
    if name == "random":
        random.random()
    if name == "files":
        open("/etc/hostname").read()
    if name == "datetime":
        import datetime  # not imported when the component was built

        datetime.datetime.now()
    return None
"#;
