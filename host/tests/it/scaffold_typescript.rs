//! `wasmcm new --lang typescript` end to end, as `scaffold.rs` runs the Rust scaffold: scaffold,
//! `npm ci` of the lock it writes (the repository's pinned toolchain, the SDK linked by path),
//! the native unit tests (`npm test`), the component (`npm run build`), `simulate` on its
//! snapshot, `plugins inspect` (nothing imported but the contract), then `wasmcm run` with its
//! plugin.yaml on the embedded cluster, the `try:` line pasted, its CRD and example applied with
//! the real kubectl and reconciled; a key recorded, replayed identically, and replayed again after
//! a change to the plugin's code, which shows the difference; and the same rebuild's keys that
//! misbehave (an exception, with its stack in the log; the clock, randomness, timers, the
//! network, each failing saying what the sandbox offers instead), and a key answered with every
//! intent contract 0.4.0 added, performed. It prints how long each step took.
//!
//! Owns this flow only; what the scaffold contains is unit-tested in
//! `host/src/scaffold/typescript.rs`. Writes nothing outside its temporary directory but npm's
//! cache and the SDK's `dist/` (which `tsc -b` builds when stale).

use crate::common;
use crate::scaffold::{Steps, reconciled_on_the_host, run_on_the_host, simulates_the_example_ready, text, wasmcm};

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const NAME: &str = "hello-scaffold";
const WASM: &str = "build/hello-scaffold.wasm";

/// `npm <args>` in `dir`, as a plugin author runs it: npm's own cache, offline when it holds
/// what the lock names.
pub(crate) fn npm(dir: &Path, args: &[&str]) -> Output {
    Command::new("npm")
        .current_dir(dir)
        .args(args)
        .env("npm_config_prefer_offline", "true")
        .env("npm_config_audit", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_update_notifier", "false")
        .output()
        .expect("npm runs (Node.js 20.19 or later)")
}

fn build(dir: &Path) {
    let built = npm(dir, &["run", "build"]);
    assert!(built.status.success(), "npm run build: {}", text(&built));
    assert!(text(&built).contains("(no WASI)"), "{}", text(&built));
}

#[test]
fn a_new_typescript_plugin_builds_tests_simulates_and_reconciles_its_custom_resource_on_the_host() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(NAME);
    let mut steps = Steps::start();

    let out = wasmcm(home.path(), &["new", NAME, "--lang", "typescript"]);
    assert!(out.status.success(), "wasmcm new: {}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(printed.contains("npm ci && npm test") && printed.contains("npm run build"), "{printed}");
    let lock = std::fs::read_to_string(dir.join("package-lock.json")).expect("a package-lock.json");
    steps.done("scaffold");

    let installed = npm(&dir, &["ci"]);
    assert!(installed.status.success(), "npm ci: {}", text(&installed));
    assert_eq!(
        std::fs::read_to_string(dir.join("package-lock.json")).unwrap(),
        lock,
        "npm ci kept the lock as written"
    );
    steps.done("npm ci (the locked toolchain)");

    let tested = npm(&dir, &["test"]);
    assert!(tested.status.success(), "npm test: {}", text(&tested));
    assert!(
        text(&tested).contains("ok 1 - reports the generation Ready, then writes nothing more"),
        "{}",
        text(&tested)
    );
    steps.done("unit-test (node --test)");

    build(&dir);
    steps.done("build the component");

    simulates_the_example_ready(&dir, WASM, NAME, "HelloScaffold");
    steps.done("simulate");

    let out = wasmcm(&dir, &["plugins", "inspect", WASM]);
    assert!(out.status.success(), "inspect: {}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains(&format!("{NAME} 0.1.0 (contract")), "{shown}");
    let imports = shown.lines().find_map(|l| l.trim().strip_prefix("imports:")).expect("an imports line");
    assert!(imports.split(',').all(|i| i.trim().starts_with("wasmcm:reconciler/")), "no WASI: {shown}");
    steps.done("inspect");

    let (_host, live) = run_on_the_host(home.path(), &dir, NAME);
    let (try_line, kubeconfig) = (live.try_line, live.kubeconfig);
    steps.done("load into the host (make run)");
    reconciled_on_the_host(home.path(), &dir, &try_line, &kubeconfig, "helloscaffolds");
    steps.done("reconcile the custom resource (kubectl)");

    let address = live.address;
    let token = home.path().join("admin-token").display().to_string();
    let record = ["plugins", "record", NAME, "default/example", "-o", "example.json", "--address", &address];
    let out = wasmcm(&dir, &[&record[..], &["--admin-token-file", &token]].concat());
    assert!(out.status.success(), "record: {}", text(&out));
    steps.done("record a key");

    let replay = ["simulate", "--plugin", WASM, "--state", "example.json", "--expect", "example.json"];
    let out = wasmcm(&dir, &replay);
    assert!(out.status.success(), "replay: {}", text(&out));
    assert!(text(&out).contains("identical to example.json"), "{}", text(&out));
    steps.done("replay it");

    // A change, and the bad input of a TypeScript plugin behind keys of its own (one build for
    // both: a component build is the slow step).
    let index = dir.join("src/index.ts");
    let code = std::fs::read_to_string(&index).unwrap();
    assert!(code.contains(r#"reason: "Reconciled","#), "the skeleton's reason");
    let entry = "  reconcile(request: Request, cache: Cache): Outcome {\n";
    assert!(code.contains(entry), "the skeleton's reconcile");
    // The skeleton's kind, as `resource` declares it: `export const HelloScaffolds = resource<…`.
    let kind = code
        .lines()
        .find_map(|l| l.strip_prefix("export const ")?.split_once(" = resource<").map(|(k, _)| k.to_string()))
        .expect("the skeleton's resource");
    let code = code
        .replace(r#"reason: "Reconciled","#, r#"reason: "Served","#)
        .replace(
            entry,
            &format!("{entry}    if (request.name === \"patches\") return patches(request.name, {kind});\n    misbehave(request.name);\n"),
        )
        + MISBEHAVE;
    std::fs::write(&index, code).unwrap();
    build(&dir);
    let out = wasmcm(&dir, &replay);
    assert_eq!(out.status.code(), Some(1), "the changed plugin differs: {}", text(&out));
    assert!(text(&out).contains("differs from example.json: 0 intents in 0 batches vs 1 in 1"), "{}", text(&out));
    let replayed: Value = serde_json::from_slice(&out.stdout).expect("simulate prints JSON");
    assert_eq!(replayed["outcome"]["batches"][0][0]["updateStatus"]["status"]["conditions"][0]["reason"], "Served");
    steps.done("change, rebuild, replay");

    let snapshot = std::fs::read_to_string(dir.join("snapshot.yaml")).unwrap();
    let example = snapshot.rfind("- apiVersion: ").expect("the example, last in the snapshot");
    let mut state = snapshot.clone();
    let keys = ["throws", "clock", "random", "timer", "fetch", "patches"];
    for key in keys {
        state.push_str(&snapshot[example..].replace("name: example", &format!("name: {key}")));
    }
    std::fs::write(dir.join("bad.yaml"), state).unwrap();
    let simulate = |key: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_wasmcm"))
            .current_dir(&dir)
            .args(["simulate", "--plugin", WASM, "--state", "bad.yaml", "--key", &format!("default/{key}")])
            .env("WASMCM_CACHE_DIR", common::precompiled_dir())
            .env("RUST_LOG", "error")
            .env("NO_COLOR", "1")
            .output()
            .expect("the binary runs");
        (out.status.code(), text(&out))
    };
    // An exception: a failed reconcile with its message, and where it was thrown in the log.
    let (code, log) = simulate("throws");
    assert_eq!(code, Some(3), "{log}");
    assert!(log.contains("failed: uncaught SyntaxError: JSON.parse: expected property name"), "{log}");
    assert!(log.contains("(its stack is in the host's log)"), "{log}");
    assert!(log.contains("ERROR") && log.contains("misbehave@"), "the stack, in the bundle built: {log}");
    // What the sandbox lacks: what to use instead.
    for (key, says) in [
        ("clock", "Date.now(): the wasmcm sandbox has no clock: use the request's `now` (request.now"),
        ("random", "Math.random(): the wasmcm sandbox has no randomness"),
        (
            "timer",
            "setTimeout(): the wasmcm sandbox has no timers: a reconcile returns at once; to come back later, return an outcome with requeueAfter",
        ),
        ("fetch", "fetch(): the wasmcm sandbox has no network"),
    ] {
        let (code, log) = simulate(key);
        assert_eq!(code, Some(3), "{key}: {log}");
        assert!(log.contains(&format!("failed: uncaught SandboxError: {says}")), "{key}: {log}");
    }
    steps.done("bad input");

    // Contract 0.4.0's intents, as the SDK converts them.
    let out = wasmcm(&dir, &["simulate", "--plugin", WASM, "--state", "bad.yaml", "--key", "default/patches"]);
    crate::scaffold::the_0_4_0_intents_were_sent_and_performed(&out);
    steps.done("the 0.4.0 intents");
    eprintln!("{}", steps.report());
}

/// Appended to the scaffold's src/index.ts: keys that misbehave, each in its own way, and one
/// answered with every intent contract 0.4.0 added.
const MISBEHAVE: &str = r#"
import { Patch } from "@wasmcm/guest";

function patches(name: string, of: { apiVersion: string; kind: string }): Outcome {
  const ref = { kind: { apiVersion: of.apiVersion, kind: of.kind }, namespace: "", name };
  return new Outcome()
    // The snapshot's objects are at resourceVersion 1.
    .batch(Intent.patch(Patch.merge(ref, { metadata: { labels: { patched: "merge" } } }).withResourceVersion("1")))
    .batch(Intent.patch(Patch.json(ref, [{ op: "add", path: "/metadata/annotations", value: { patched: "json" } }])))
    .batch(Intent.patch(Patch.merge(ref, { status: { observedGeneration: 7 } }).toStatus()))
    .batch(Intent.delete(ref, undefined, "Foreground"))
    .batch(Intent.patch(finalizer.removePatch(ref, "example.com/keep")));
}
const sandbox = globalThis as unknown as { setTimeout(f: () => void, ms: number): unknown; fetch(url: string): unknown };

function misbehave(name: string): void {
  switch (name) {
    case "throws":
      JSON.parse("{not json");
      break;
    case "clock":
      log("info", `now: ${Date.now()}`);
      break;
    case "random":
      log("info", `dice: ${Math.random()}`);
      break;
    case "timer":
      sandbox.setTimeout(() => {}, 10);
      break;
    case "fetch":
      sandbox.fetch("http://example.com/");
      break;
  }
}
"#;
