//! Docs that cannot drift: which test runs each ```sh block of every document in the repository
//! (a block no test runs fails [`every_documents_blocks_are_run_by_a_test`], naming it), and the
//! blocks no other test has a flow for: guest-controllers/sdk-python/README.md's componentize-py
//! line, run as written on the README's first plugin (again only when what it builds from
//! changed), and its `simulate` of the component. Owns `target/plugins/python/readme-greeter`.
//!
//! The other tests take their commands from the documents' text with `readme.rs`'s machinery (a
//! reader's shell, `Blocks`: a command neither run nor skipped with a reason fails its test):
//! README.md, deploy/README.md, apiserver/README.md (`readme.rs`; README.md's "Write a plugin"
//! and docs/plugins.md's "Write your own plugin", `scaffold.rs`); docs/plugins.md's `simulate`
//! (`simulate_cli.rs`) and record-and-replay (`record.rs`); examples/website/README.md
//! (`custom_resource.rs`).

use crate::common;
use crate::readme::{Blocks, Reader, inline};
use crate::scaffold::text;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub(crate) const PLUGINS: &str = include_str!("../../../docs/plugins.md");
const PYTHON_SDK: &str = include_str!("../../../guest-controllers/sdk-python/README.md");

/// Each document's ```sh blocks by the start of their first line (`None`: all of its blocks),
/// and the test that runs them, `module::test`.
const RUN_BY: &[(&str, Option<&str>, &str)] = &[
    ("README.md", Some("make run"), "readme::the_readmes_first_steps_work_as_written"),
    ("README.md", Some("export KUBECONFIG="), "readme::the_readmes_first_steps_work_as_written"),
    ("README.md", Some("wasmcm new "), SCAFFOLD),
    ("deploy/README.md", None, "readme::the_deploy_readmes_steps_work_as_written"),
    ("apiserver/README.md", Some("make cluster"), "readme::the_apiserver_readmes_start_works_as_written"),
    (
        "docs/plugins.md",
        Some("cargo run -p wasmcm -- simulate --plugin replicaset"),
        "simulate_cli::scale_down_deletes_the_three_the_upstream_ranking_picks",
    ),
    (
        "docs/plugins.md",
        Some("wasmcm plugins record deployment"),
        "record::a_live_reconcile_is_recorded_and_replays_identically_and_a_changed_plugin_shows_its_difference",
    ),
    ("docs/plugins.md", Some("cargo run -p wasmcm -- new "), SCAFFOLD),
    (
        "examples/website/README.md",
        Some("cd examples/website"),
        "custom_resource::simulate_runs_the_example_on_its_snapshot",
    ),
    (
        "examples/website/README.md",
        Some("cargo run -p wasmcm -- simulate"),
        "custom_resource::simulate_runs_the_example_on_its_snapshot",
    ),
    (
        "examples/website/README.md",
        Some("cargo run -p wasmcm -- run"),
        "custom_resource::a_website_is_reconciled_hot_swapped_and_deleted_through_its_finalizer",
    ),
    (
        "guest-controllers/sdk-python/README.md",
        Some("componentize-py "),
        "docs::the_python_sdks_first_plugin_builds_as_written",
    ),
    ("examples/website-typescript/README.md", None, TYPESCRIPT),
];

const TYPESCRIPT: &str = "typescript::the_typescript_website_imports_only_the_contract_and_replays_the_rust_plugins_live_reconciles_identically";

const SCAFFOLD: &str = "scaffold::a_new_plugin_builds_tests_simulates_and_reconciles_its_custom_resource_on_the_host";

/// The source of the test module `module`, to find the tests [`RUN_BY`] names.
fn module_source(module: &str) -> &'static str {
    match module {
        "readme" => include_str!("readme.rs"),
        "scaffold" => include_str!("scaffold.rs"),
        "simulate_cli" => include_str!("simulate_cli.rs"),
        "record" => include_str!("record.rs"),
        "custom_resource" => include_str!("custom_resource.rs"),
        "docs" => include_str!("docs.rs"),
        "typescript" => include_str!("typescript.rs"),
        other => panic!("RUN_BY names module {other}: add it to module_source"),
    }
}

/// The Markdown files under `dir`, but for build output, installed packages and hidden
/// directories.
fn documents(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                documents(&path, found);
            }
        } else if name.ends_with(".md") {
            found.push(path);
        }
    }
}

/// The first lines of the ```sh blocks of `doc`.
fn first_lines(doc: &str) -> Vec<String> {
    doc.split("```sh\n").skip(1).map(|rest| rest.lines().next().unwrap_or_default().trim().to_string()).collect()
}

#[test]
fn every_documents_blocks_are_run_by_a_test() {
    let root = common::workspace_root();
    let mut docs = Vec::new();
    documents(&root, &mut docs);
    // In one order on every machine, for the message.
    docs.sort();
    let mut unrun = Vec::new();
    let mut with_blocks = Vec::new();
    for path in &docs {
        let name = path.strip_prefix(&root).expect("under the root").display().to_string();
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let firsts = first_lines(&text);
        if !firsts.is_empty() {
            with_blocks.push(name.clone());
        }
        for first in firsts {
            let runs = |&&(doc, start, _): &&(&str, Option<&str>, &str)| {
                doc == name && start.is_none_or(|s| first.starts_with(s))
            };
            if !RUN_BY.iter().any(|e| runs(&e)) {
                unrun.push(format!("{name}: {first}"));
            }
        }
    }
    assert_eq!(unrun, Vec::<String>::new(), "blocks no test runs: run them in one and list it in RUN_BY");

    // Every entry names a document with that block, and a test that exists.
    for &(doc, start, test) in RUN_BY {
        assert!(with_blocks.iter().any(|d| d == doc), "RUN_BY lists {doc}, which has no sh block");
        if let Some(start) = start {
            let text = std::fs::read_to_string(root.join(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
            assert!(first_lines(&text).iter().any(|f| f.starts_with(start)), "{doc} has no block {start:?}");
        }
        let (module, name) = test.split_once("::").expect("module::test");
        assert!(module_source(module).contains(&format!("fn {name}()")), "no test {test}");
    }
}

/// The README's first plugin, as a reader writes it to `greeter.py` in a directory of their
/// own: built with the README's componentize-py line (the pinned componentize-py, which the
/// script the README names installs), then tried offline as step 3 says, on a snapshot of the
/// Greeting the README's unit test reconciles.
#[test]
fn the_python_sdks_first_plugin_builds_as_written() {
    let root = common::workspace_root();
    let dir = common::plugins_target().join("python/readme-greeter");
    std::fs::create_dir_all(&dir).unwrap();
    let code = PYTHON_SDK.split("```python\n").nth(1).and_then(|b| b.split("```").next()).expect("the first plugin");
    std::fs::write(dir.join("greeter.py"), code).unwrap();

    let home = tempfile::tempdir().unwrap();
    let installed = Reader::new(home.path()).run(&root, "scripts/install-componentize-py.sh");
    let componentize_py = PathBuf::from(String::from_utf8_lossy(&installed.stdout).trim());
    let path = componentize_py.ends_with("target/tools/python/bin/componentize-py");
    assert!(installed.status.success() && path, "scripts/install-componentize-py.sh: {}", text(&installed));
    let reader = Reader::new(home.path()).with_path(componentize_py.parent().expect("its bin directory"));

    let blocks = Blocks::of(PYTHON_SDK, "componentize-py ");
    let build = blocks.take("componentize-py --wit-path <checkout>/wit");
    blocks.finished("guest-controllers/sdk-python/README.md's Build block");
    assert!(build.contains(" -o greeter.wasm"), "{build}");
    built_once(&reader, &dir, &build.replace("<checkout>", &root.display().to_string()));

    // Step 3's offline try, on the unit test's Greeting.
    let try_it = inline(PYTHON_SDK, "wasmcm simulate --plugin greeter.wasm");
    std::fs::write(dir.join("snapshot.yaml"), SNAPSHOT).unwrap();
    let out = reader.run(&dir, &try_it.replace("<snapshot.yaml>", "snapshot.yaml"));
    assert!(out.status.success(), "{try_it}: {}", text(&out));
    let result: Value = serde_json::from_slice(&out.stdout).expect("simulate prints JSON");
    let actions: Vec<String> = result["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| format!("{} {} {}", a["verb"], a["kind"], a["name"]).replace('"', ""))
        .collect();
    assert_eq!(actions, ["create ConfigMap hello-greeting", "update-status Greeting hello"], "{result:#}");
    let items = result["state"]["items"].as_array().expect("the state after");
    let greeting = items.iter().find(|o| o["kind"] == "Greeting").expect("the Greeting");
    assert_eq!(greeting["status"]["observedGeneration"], 1, "{greeting:#}");
    let child = items.iter().find(|o| o["metadata"]["name"] == "hello-greeting").expect("the ConfigMap");
    assert_eq!(child["data"]["message"], "Hi!", "{child:#}");
}

/// `build` run in `dir` (greeter.py's), unless the greeter.wasm there was built by the same
/// line from the same inputs (greeter.py, the SDK, the contract, the pinned componentize-py):
/// a build takes about 15 s, and its component, which differs byte for byte from the last one,
/// a compile of about 20 s more on its first `simulate`.
fn built_once(reader: &Reader, dir: &Path, build: &str) {
    let root = common::workspace_root();
    let mut inputs = build.as_bytes().to_vec();
    let mut files = vec![dir.join("greeter.py"), root.join("scripts/install-componentize-py.sh")];
    for from in ["guest-controllers/sdk-python/wasmcm_guest", "wit"] {
        let listed = std::fs::read_dir(root.join(from)).unwrap_or_else(|e| panic!("{from}: {e}"));
        let mut listed: Vec<PathBuf> = listed.map(|e| e.expect("an entry").path()).filter(|p| p.is_file()).collect();
        listed.sort();
        files.extend(listed);
    }
    for file in files {
        inputs.extend(file.display().to_string().bytes());
        inputs.extend(std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())));
    }
    let stamp = common::sha256(&inputs);
    let (wasm, kept) = (dir.join("greeter.wasm"), dir.join("greeter.wasm.inputs"));
    if wasm.exists() && std::fs::read_to_string(&kept).is_ok_and(|k| k == stamp) {
        return;
    }
    let _ = std::fs::remove_file(&wasm);
    reader.ok(dir, build);
    assert!(wasm.exists(), "{build} makes greeter.wasm");
    std::fs::write(&kept, stamp).unwrap();
}

/// The Greeting of the README's unit test, and its CRD (status as a subresource).
const SNAPSHOT: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: greetings.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: greetings, singular: greeting, kind: Greeting, listKind: GreetingList}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: v1
kind: Namespace
metadata: {name: demo}
---
apiVersion: example.com/v1
kind: Greeting
metadata: {name: hello, namespace: demo, uid: u1, generation: 1, resourceVersion: "1"}
spec: {message: "Hi!"}
"#;
