//! `wasmcm new` end to end, as a plugin author follows README.md's "Write a plugin" block from
//! an empty directory, and docs/plugins.md's "Write your own plugin" walkthrough of the same
//! steps, each line of both blocks run as written in a reader's shell (`wasmcm` on the PATH):
//! scaffold (docs/plugins.md's `cargo run -p wasmcm -- new` checked to be README.md's `wasmcm
//! new`), `cargo test && cargo plugin` and the two lines it is in docs/plugins.md, `simulate` on
//! its snapshot, then `WASMCM_PLUGINS=$PWD/plugin.yaml make -C <checkout> run` (checked with
//! `make -n` to be `cargo run -p wasmcm -- run`, which is this test's binary) on the embedded
//! cluster, where the `try:` line the host prints is pasted as it is, and the scaffold's CRD and
//! example are applied with docs/plugins.md's kubectl lines and reconciled; then a key is
//! recorded on that host with its `wasmcm plugins record` line, replayed identically with its
//! `simulate --expect` line, and replayed again after a change to the plugin's code, which shows
//! the difference. It prints how long each step took.
//!
//! Owns this flow only; what a scaffold contains is unit-tested in `host/src/scaffold.rs`. The
//! scaffold's `target/` is a link to `target/plugins`, shared so that reruns and the example's
//! build reuse compiled dependencies; nothing else of the workspace is written.

use crate::common;
use crate::docs::PLUGINS;
use crate::readme::{Blocks, README, Reader, commands, installed, sh_block};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// What README.md's block makes: `wasmcm new widgets --kind example.com/v1alpha1/Widget`.
const NAME: &str = "widgets";
const KIND: &str = "Widget";
const WASM: &str = "target/wasm32-unknown-unknown/release/widgets.wasm";

pub(crate) fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

pub(crate) fn wasmcm(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wasmcm"))
        .current_dir(dir)
        .args(args)
        .env("WASMCM_CACHE_DIR", common::precompiled_dir())
        .env("RUST_LOG", "off")
        .output()
        .expect("the binary runs")
}

#[test]
fn bad_input_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    for (args, why) in [
        (vec!["new", "Bad_Name"], "invalid plugin name \"Bad_Name\""),
        (vec!["new", "ok", "--kind", "Widget"], "invalid --kind \"Widget\": expected group/version/Kind"),
    ] {
        let out = wasmcm(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(why), "{args:?}: {}", text(&out));
    }
    std::fs::create_dir(dir.path().join("taken")).unwrap();
    std::fs::write(dir.path().join("taken/file"), "").unwrap();
    let out = wasmcm(dir.path(), &["new", "taken"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("exists and is not empty"), "{}", text(&out));
    assert_eq!(std::fs::read_dir(dir.path().join("taken")).unwrap().count(), 1, "nothing written");
}

#[test]
fn a_new_plugin_builds_tests_simulates_and_reconciles_its_custom_resource_on_the_host() {
    let home = tempfile::tempdir().unwrap();
    let checkout = home.path().join("wasmcm");
    std::fs::create_dir(&checkout).unwrap();
    let dir = home.path().join(NAME);
    let reader = Reader::new(home.path());
    let mut steps = Steps::start();

    // The block as a reader runs it: scaffold, test and build, simulate, run.
    let block = commands(&sh_block(README, "wasmcm new "));
    let [new, build, simulate, run] = &block[..] else { panic!("README.md's Write a plugin block: {block:#?}") };
    // docs/plugins.md's walkthrough of the same steps, one command a line, then kubectl, record
    // and replay.
    let walk = Blocks::of(PLUGINS, "cargo run -p wasmcm -- new ");

    // Scaffold, from the checkout (`--dir ../widgets`). docs/plugins.md's line is the same
    // command, from the same place, and the directory it goes to next is the one made.
    let printed = reader.ok(&checkout, new);
    let (new_alone, cd) = new.split_once(" && ").expect("README.md's wasmcm new … && cd");
    let walk_new = installed(&walk.take("cargo run -p wasmcm -- new "));
    assert_eq!(walk_new.split(" #").next().map(str::trim), Some(new_alone), "docs/plugins.md's and README.md's");
    assert_eq!(walk.take("cd "), cd, "docs/plugins.md's and README.md's");
    assert_eq!(checkout.join(cd.trim_start_matches("cd ")).canonicalize().ok(), dir.canonicalize().ok(), "{cd}");
    assert!(printed.contains("cargo build --release --target wasm32-unknown-unknown"), "{printed}");
    let lock =
        std::fs::read_to_string(dir.join("Cargo.lock")).unwrap_or_else(|e| panic!("a Cargo.lock: {e}\n{printed}"));
    assert!(lock.contains("name = \"wasmcm-guest\""), "{lock}");
    assert!(!lock.contains("name = \"wasmtime\""), "the lock is pruned to the plugin's dependencies");
    std::fs::create_dir_all(common::plugins_target()).unwrap();
    std::os::unix::fs::symlink(common::plugins_target(), dir.join("target")).unwrap();
    steps.done("scaffold");

    // Native unit tests, then the component, with the lock as generated; docs/plugins.md's two
    // lines after README.md's one (built: the tests run again).
    let built = reader.ok(&dir, build);
    assert!(built.contains("reports_the_generation_ready_then_writes_nothing_more ... ok"), "{built}");
    assert!(dir.join(WASM).exists(), "`cargo plugin` builds {WASM}: {built}");
    steps.done("unit-test and build the component");
    let tested = reader.ok(&dir, &walk.take("cargo test "));
    assert!(tested.contains("reports_the_generation_ready_then_writes_nothing_more ... ok"), "{tested}");
    let walk_build = walk.take("cargo build --release --target wasm32-unknown-unknown ");
    reader.ok(&dir, &walk_build);
    // "or `cargo plugin`": the scaffold's alias is that command.
    let alias = std::fs::read_to_string(dir.join(".cargo/config.toml")).unwrap();
    let alias = alias.lines().find_map(|l| l.strip_prefix("plugin = ")).expect("the plugin alias");
    assert_eq!(format!("cargo {}", alias.trim_matches('"')), walk_build.split(" #").next().unwrap_or("").trim());
    assert_eq!(std::fs::read_to_string(dir.join("Cargo.lock")).unwrap(), lock, "the build kept the lock as written");
    steps.done("the same, as docs/plugins.md's two lines");

    // Formatted as made, by the repository's rustfmt.toml it carries (seen failing before:
    // rustfmt's default width rewrapped four statements and reordered an import).
    let formatted = common::plugin_cargo(&dir, &["fmt", "--check"]);
    assert!(formatted.status.success(), "cargo fmt --check: {}", text(&formatted));

    // Simulate on the snapshot: one status update, Ready.
    the_example_was_made_ready(&reader.run(&dir, simulate), NAME, KIND);
    let walk_simulate = walk.take("wasmcm simulate --plugin target/wasm32-unknown-unknown/release/widgets.wasm");
    assert!(walk_simulate.contains("--state snapshot.yaml"), "the snapshot first: {walk_simulate}");
    the_example_was_made_ready(&reader.run(&dir, &walk_simulate), NAME, KIND);
    steps.done("simulate");

    // What the host sees of it.
    let out = wasmcm(&dir, &["plugins", "inspect", WASM]);
    assert!(out.status.success(), "inspect: {}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains(&format!("{NAME} 0.1.0 (contract")), "{shown}");
    assert!(shown.contains(&format!("primary: example.com/v1alpha1/{KIND}")), "{shown}");
    steps.done("inspect");

    // `make -C <checkout> run` is `cargo run -p wasmcm -- run`, this test's binary, which is
    // started here with the environment of the line.
    let root = wasmcm_test_support::workspace_root().display().to_string();
    let walk_run = walk.take("WASMCM_PLUGINS=$PWD/plugin.yaml make -C <wasmcm checkout> run");
    for run in [run, &walk_run] {
        let dry = run.replace("<wasmcm checkout>", &root).replacen(" make ", " make -n ", 1);
        assert!(dry.starts_with("WASMCM_PLUGINS=$PWD/plugin.yaml make -n -C "), "{run}");
        assert!(reader.ok(&dir, &dry).lines().any(|l| l == "cargo run -p wasmcm -- run"), "{dry}");
    }
    let (_host, live) = run_on_the_host(home.path(), &dir, NAME);
    let (try_line, kubeconfig) = (live.try_line, live.kubeconfig);
    steps.done("load into the host (make run)");

    // The try line pasted, then docs/plugins.md's kubectl lines in a shell with the export it
    // says to paste, and the host's admin address and token (which a reader of `make run`'s
    // defaults, 127.0.0.1:8080 and ~/.config/wasmcm/admin-token, need not name).
    the_try_line_works(home.path(), &dir, &try_line);
    assert!(walk_run.ends_with("# paste its try: line's export"), "{walk_run}");
    let export = try_line.split(" && ").next().expect("the try line's export");
    assert_eq!(export, format!("export KUBECONFIG={}", kubeconfig.display()), "{try_line}");
    let token = home.path().join("admin-token");
    let env = format!("{export} WASMCM_ADMIN_ADDRESS={} WASMCM_ADMIN_TOKEN_FILE={} && ", live.address, token.display());
    let sh = |command: &str| reader.run(&dir, &format!("{env}{command}"));
    let ok = |command: &str| {
        let out = sh(command);
        assert!(out.status.success(), "{command}: {}", text(&out));
        text(&out)
    };
    let established = ok(&walk.take("kubectl apply -f deploy/crd.yaml && kubectl wait --for condition=Established"));
    assert!(established.contains("condition met"), "{established}");
    let listed = ok(&walk.take("kubectl apply -f deploy/example.yaml && kubectl get widgets"));
    assert!(listed.lines().any(|l| l.starts_with("NAME ") && l.contains(" READY ")), "{listed}");
    reconciled(&kubeconfig, "widgets");
    steps.done("reconcile the custom resource (kubectl)");

    // Record a live reconcile of the example, as the README says.
    let recorded = ok(&walk.take("wasmcm plugins record widgets default/example -o example.json"));
    assert!(recorded.contains(&format!("recorded {NAME} 0.1.0")), "{recorded}");
    steps.done("record a key");

    // Replay it: the same plugin returns the same outcome (nothing to do: it is Ready).
    let replay = walk.take("wasmcm simulate --plugin target/wasm32-unknown-unknown/release/widgets.wasm");
    assert!(replay.ends_with("# identical: exit 0"), "{replay}");
    let out = sh(&replay);
    assert!(out.status.success(), "replay: {}", text(&out));
    assert!(text(&out).contains("identical to example.json"), "{}", text(&out));
    walk.finished("docs/plugins.md's Write your own plugin block");
    steps.done("replay it");

    // A change to the plugin's logic, rebuilt: the replay says what it would write now.
    let lib = dir.join("src/lib.rs");
    let code = std::fs::read_to_string(&lib).unwrap();
    assert!(code.contains(r#"reason: "Reconciled".into(),"#), "the skeleton's reason");
    std::fs::write(&lib, code.replace(r#"reason: "Reconciled".into(),"#, r#"reason: "Served".into(),"#)).unwrap();
    reader.ok(&dir, "cargo plugin");
    let out = sh(&replay);
    assert_eq!(out.status.code(), Some(1), "the changed plugin differs: {}", text(&out));
    assert!(text(&out).contains("differs from example.json: 0 intents in 0 batches vs 1 in 1"), "{}", text(&out));
    let replayed: Value = serde_json::from_slice(&out.stdout).expect("simulate prints JSON");
    let update = &replayed["outcome"]["batches"][0][0]["updateStatus"];
    assert_eq!(update["status"]["conditions"][0]["reason"], "Served", "{replayed:#}");
    assert_eq!(replayed["plugin"]["digest"].as_str().map(str::len), Some(64), "{replayed:#}");
    steps.done("change, rebuild, replay");
    eprintln!("{}", steps.report());
}

/// How long each step took, printed for the record (timings are not asserted).
pub(crate) struct Steps {
    last: Instant,
    done: Vec<(&'static str, Duration)>,
}

impl Steps {
    pub(crate) fn start() -> Self {
        Steps { last: Instant::now(), done: Vec::new() }
    }

    pub(crate) fn done(&mut self, step: &'static str) {
        self.done.push((step, self.last.elapsed()));
        self.last = Instant::now();
    }

    pub(crate) fn report(&self) -> String {
        let lines: Vec<String> =
            self.done.iter().map(|(step, took)| format!("  {step:<42} {:>7.2} s", took.as_secs_f64())).collect();
        format!("plugin author's steps:\n{}", lines.join("\n"))
    }
}

/// `simulate` of a scaffold's component (`wasm`, plugin `name`, reconciling `kind`) on its
/// snapshot at the snapshot's time: one status update of the example, then Ready at generation 1.
pub(crate) fn simulates_the_example_ready(dir: &Path, wasm: &str, name: &str, kind: &str) {
    let simulate = ["simulate", "--plugin", wasm, "--state", "snapshot.yaml", "--key", "default/example"];
    the_example_was_made_ready(&wasmcm(dir, &[&simulate[..], &["--now", "2026-01-01T00:00:00Z"]].concat()), name, kind);
}

/// What that `simulate` printed: one status update of the example, then Ready at generation 1.
fn the_example_was_made_ready(out: &Output, name: &str, kind: &str) {
    assert!(out.status.success(), "simulate: {}", text(out));
    let result: Value = serde_json::from_slice(&out.stdout).expect("simulate prints JSON");
    assert_eq!(result["plugin"]["name"], name);
    let actions: Vec<String> = result["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            format!("{} {} {}", a["verb"].as_str().unwrap(), a["kind"].as_str().unwrap(), a["name"].as_str().unwrap())
        })
        .collect();
    assert_eq!(actions, [format!("update-status {kind} example")], "{result:#}");
    let items = result["state"]["items"].as_array().unwrap();
    let object = items.iter().find(|o| o["kind"] == kind).expect("the example in the state");
    assert_eq!(object["status"]["observedGeneration"], 1, "{object:#}");
    assert_eq!(object["status"]["conditions"][0]["type"], "Ready", "{object:#}");
    assert_eq!(object["status"]["conditions"][0]["status"], "True", "{object:#}");
}

/// What a host started by [`run_on_the_host`] printed: the `try:` line, the kubeconfig it names
/// and the admin address.
pub(crate) struct Live {
    pub(crate) try_line: String,
    pub(crate) kubeconfig: PathBuf,
    pub(crate) address: String,
}

/// The host with the scaffold's plugin.yaml on a new embedded cluster, as
/// `WASMCM_PLUGINS=$PWD/plugin.yaml make run` starts it in `dir`, once it says it runs the
/// plugin `name`. The admin token goes to `home`/admin-token.
pub(crate) fn run_on_the_host(home: &Path, dir: &Path, name: &str) -> (Running, Live) {
    start_host(home, dir, Some(&dir.join("plugin.yaml")), name)
}

/// `wasmcm run` in `dir` with the plugins of `manifest` beside the built-ins (as
/// `WASMCM_PLUGINS=<manifest> make run`), once it says it runs `name`.
pub(crate) fn start_host(home: &Path, dir: &Path, manifest: Option<&Path>, name: &str) -> (Running, Live) {
    let mut command = common::host_command();
    if let Some(manifest) = manifest {
        command.env("WASMCM_PLUGINS", manifest);
    }
    let mut host = Running {
        child: command
            .current_dir(dir)
            .args(["run", "--metrics-bind-address", "127.0.0.1:0", "--leader-elect=false"])
            .arg("--admin-token-file")
            .arg(home.join("admin-token"))
            .env("WASMCM_CACHE_DIR", common::precompiled_dir())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("wasmcm runs"),
        cluster_dir: None,
    };
    let mut lines = BufReader::new(host.child.stdout.take().expect("piped")).lines();
    let (mut try_line, mut address) = (None, None);
    for line in lines.by_ref() {
        let line = line.expect("the host's output");
        if let Some(command) = line.strip_prefix("try: ") {
            try_line = Some(command.to_string());
        }
        if let Some(a) = line.strip_prefix("metrics: http://").and_then(|a| a.strip_suffix("/metrics")) {
            address = Some(a.to_string());
        }
        if line.starts_with("wasmcm running") {
            assert!(line.contains(name), "the plugin runs: {line}");
            break;
        }
    }
    let try_line = try_line.expect("the host prints what to try");
    let kubeconfig = PathBuf::from(
        try_line
            .split("KUBECONFIG=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("the try line names the kubeconfig: {try_line}")),
    );
    host.cluster_dir = kubeconfig.parent().map(Path::to_path_buf);
    let address = address.expect("the host prints its admin address");
    (host, Live { try_line, kubeconfig, address })
}

pub(crate) struct Running {
    pub(crate) child: std::process::Child,
    pub(crate) cluster_dir: Option<PathBuf>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = &self.cluster_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The `try:` line pasted into a shell, then the scaffold's CRD and example applied and the
/// example reconciled Ready, again after a spec change.
pub(crate) fn reconciled_on_the_host(home: &Path, dir: &Path, try_line: &str, kubeconfig: &Path, plural: &str) {
    the_try_line_works(home, dir, try_line);
    let kubectl = |args: &[&str]| {
        let out = wasmcm_test_support::kubectl(kubeconfig, args, None);
        (out.status.success(), text(&out))
    };
    let file = |f: &str| dir.join(f).display().to_string();
    let (ok, shown) = kubectl(&["apply", "-f", &file("deploy/crd.yaml")]);
    assert!(ok, "{shown}");
    // The CRD takes a moment to be served; kubectl then maps the kind.
    let deadline = Instant::now() + common::PATIENCE;
    loop {
        let (ok, shown) = kubectl(&["apply", "-f", &file("deploy/example.yaml")]);
        if ok {
            break;
        }
        assert!(Instant::now() < deadline, "the example is never accepted: {shown}");
        std::thread::sleep(Duration::from_millis(300));
    }
    reconciled(kubeconfig, plural);
}

/// The `try:` line pasted into a shell in `dir`: the Deployment it makes rolls out.
fn the_try_line_works(home: &Path, dir: &Path, try_line: &str) {
    // As pasted: the command names the kubectl it uses; no KUBECONFIG or PATH from here.
    let pasted = Command::new("sh")
        .args(["-c", try_line])
        .env_remove("KUBECONFIG")
        .env("HOME", home)
        .current_dir(dir)
        .output()
        .expect("sh runs");
    let shown = text(&pasted);
    assert!(pasted.status.success(), "the try line failed: {try_line}\n{shown}");
    assert!(shown.contains("successfully rolled out"), "{shown}");
    assert_eq!(shown.lines().filter(|l| l.starts_with("web-") && l.contains("Running")).count(), 3, "{shown}");
}

/// The scaffold's example, applied, reconciled Ready, then again after a spec change.
fn reconciled(kubeconfig: &Path, plural: &str) {
    let kubectl = |args: &[&str]| {
        let out = wasmcm_test_support::kubectl(kubeconfig, args, None);
        (out.status.success(), text(&out))
    };
    let ready = |generation: &str| {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let (_, shown) = kubectl(&[
                "get",
                plural,
                "example",
                "-o",
                "jsonpath={.status.observedGeneration} {.status.conditions[?(@.type==\"Ready\")].status}",
            ]);
            if shown.trim() == format!("{generation} True") {
                return;
            }
            // The host retries a kind it found unserved with a backoff of up to 30 s.
            assert!(Instant::now() < deadline, "not reconciled to generation {generation}: {shown}");
            std::thread::sleep(Duration::from_millis(300));
        }
    };
    ready("1");
    let (ok, shown) = kubectl(&["get", plural]);
    assert!(
        ok && shown.contains("READY") && shown.lines().any(|l| l.starts_with("example ") && l.contains("True")),
        "{shown}"
    );
    let (ok, shown) = kubectl(&["patch", plural, "example", "--type=merge", "-p", r#"{"spec":{"message":"again"}}"#]);
    assert!(ok, "{shown}");
    ready("2");
}

/// `simulate`'s answer for the key `patches` of a scaffold in another language, whose plugin
/// answers it with every intent contract 0.4.0 added (the SDK's conversions across the
/// component's boundary): a merge patch under a precondition, a JSON patch, a status patch, a
/// foreground delete, then a strategic patch removing a finalizer, each performed by the
/// server's write path.
pub(crate) fn the_0_4_0_intents_were_sent_and_performed(out: &Output) {
    assert!(out.status.success(), "patches: {}", text(out));
    let result: Value = serde_json::from_slice(&out.stdout).expect("simulate prints JSON");
    let intents: Vec<&Value> = result["outcome"]["batches"].as_array().unwrap().iter().map(|b| &b[0]).collect();
    let patch = |i: usize| {
        let p = &intents[i]["patch"];
        (p["type"].clone(), p["patch"].clone(), p["resourceVersion"].clone(), p["status"].clone())
    };
    let labels = json!({"metadata": {"labels": {"patched": "merge"}}});
    assert_eq!(patch(0), (json!("merge"), labels, json!("1"), json!(false)), "{result:#}");
    let ops = json!([{"op": "add", "path": "/metadata/annotations", "value": {"patched": "json"}}]);
    assert_eq!(patch(1), (json!("json"), ops, json!(null), json!(false)), "{result:#}");
    let status = json!({"status": {"observedGeneration": 7}});
    assert_eq!(patch(2), (json!("merge"), status, json!(null), json!(true)), "{result:#}");
    assert_eq!(intents[3]["delete"]["propagationPolicy"], "Foreground", "{result:#}");
    let unpinned = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/keep"]}});
    assert_eq!(patch(4), (json!("strategic"), unpinned, json!(null), json!(false)), "{result:#}");
    let actions: Vec<(&str, Option<u64>)> = result["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["verb"].as_str().unwrap_or(""), a["error"]["code"].as_u64()))
        .collect();
    // A custom resource takes no strategic merge patch (415), as kube-apiserver answers.
    let expected = [("patch", None), ("patch", None), ("patch-status", None), ("delete", None), ("patch", Some(415))];
    assert_eq!(actions, expected, "{result:#}");
    let items = result["state"]["items"].as_array().unwrap();
    let patched = items.iter().find(|o| o["metadata"]["name"] == "patches").expect("kept by the foreground delete");
    assert_eq!(patched["metadata"]["labels"]["patched"], "merge", "{patched:#}");
    assert_eq!(patched["metadata"]["annotations"]["patched"], "json", "{patched:#}");
    assert_eq!(patched["status"]["observedGeneration"], 7, "{patched:#}");
    assert_eq!(patched["metadata"]["finalizers"], json!(["foregroundDeletion"]), "{patched:#}");
}
