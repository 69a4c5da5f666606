//! The plugin engine with real components: loading, refusing bad input, and the ReplicaSet
//! plugin giving exactly the outcome its native build gives.

use crate::common;

use std::sync::Arc;

use serde_json::json;
use wasmcm::{Engine, EngineConfig, Limits, LoadError};
use wasmcm_guest::{Controller, Kind};
use wasmcm_replicaset::ReplicaSetController;
use wasmcm_replicaset::fixtures::{cache, fleet, pod, replica_set, request};

#[test]
fn describe_reports_what_the_plugin_declares() {
    let p = common::replicaset();
    let info = p.info();
    assert_eq!(info.name, "replicaset");
    assert_eq!(info.primary, Kind::new("apps/v1", "ReplicaSet"));
    assert_eq!(info.owns, vec![Kind::new("v1", "Pod")]);
    assert_eq!(info.writes, vec![Kind::new("apps/v1", "ReplicaSet"), Kind::new("v1", "Pod")]);
    assert_eq!(info.contract, wasmcm_guest::CONTRACT_VERSION);
    assert_eq!(p.digest().len(), 64);
}

#[test]
fn wasm_and_native_reconciles_agree() {
    let scenarios = vec![
        ("scale up from zero", vec![replica_set(5, json!({}))]),
        ("scale down a fleet", fleet(10, 40)),
        ("steady fleet", fleet(40, 40)),
        ("burst", vec![replica_set(1200, json!({}))]),
        (
            "adopt and release",
            vec![
                replica_set(2, json!({"spec": {"minReadySeconds": 5}})),
                pod("orphan", json!({"metadata": {"ownerReferences": null}})),
                pod("relabelled", json!({"metadata": {"labels": {"app": "other"}}})),
            ],
        ),
    ];
    let plugin = common::replicaset();
    for (what, objects) in scenarios {
        let native = ReplicaSetController::reconcile(&request("web"), &cache(&objects)).unwrap();
        let wasm = plugin.reconcile(&request("web"), Arc::new(cache(&objects))).unwrap();
        assert!(!native.batches.is_empty() || what == "steady fleet", "{what}: the scenario must do something");
        assert_eq!(wasm, native, "{what}");
    }
}

#[test]
fn plugin_errors_carry_the_plugins_verdict() {
    let mut rs = replica_set(1, json!({}));
    rs["spec"]["selector"] = json!({"matchExpressions": [{"key": "a", "operator": "Bogus"}]});
    let err = common::replicaset().reconcile(&request("web"), Arc::new(cache(&[rs]))).unwrap_err();
    assert!(!err.retryable());
    let msg = err.to_string();
    assert!(msg.contains("plugin replicaset 0.1.0 failed") && msg.contains("invalid selector"), "{msg}");
}

fn load_err(bytes: &[u8]) -> LoadError {
    match common::engine().load("test.wasm", bytes, Limits::default()) {
        Ok(_) => panic!("{} bytes loaded but should not have", bytes.len()),
        Err(e) => e,
    }
}

#[test]
fn malformed_components_are_refused_with_a_reason() {
    let real = std::fs::read(common::guest("wasmcm_hostile.wasm")).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "no WebAssembly header"),
        ("text", b"hello, I am not wasm".to_vec(), "no WebAssembly header"),
        ("core module", wat::parse_str("(module)").unwrap(), "not a valid WebAssembly component"),
        ("truncated", real[..real.len() / 2].to_vec(), "not a valid WebAssembly component"),
    ];
    for (what, bytes, expected) in cases {
        let msg = load_err(&bytes).to_string();
        assert!(msg.starts_with("test.wasm: ") && msg.contains(expected), "{what}: {msg}");
    }
    let msg = load_err(&wat::parse_str("(component)").unwrap()).to_string();
    assert!(msg.contains("cannot be linked") && msg.contains("controller"), "missing exports: {msg}");
}

#[test]
fn components_importing_anything_beyond_the_contract_are_refused() {
    for import in ["wasi:cli/environment@0.2.0", "wasi:filesystem/preopens@0.2.0", "wasi:sockets/tcp@0.2.0"] {
        let wat = format!(r#"(component (import "{import}" (instance)))"#);
        let err = load_err(&wat::parse_str(&wat).unwrap());
        assert!(matches!(&err, LoadError::ForbiddenImport { import: i, .. } if i == import), "{err}");
        assert!(err.to_string().contains("which the host does not provide"), "{err}");
    }
}

#[test]
fn plugins_built_for_another_contract_are_refused_with_the_versions() {
    let this = wasmcm_guest::CONTRACT_VERSION;
    assert_eq!(wasmcm::CONTRACTS, [this, "0.3.0"]);
    let components = [
        // A plugin of contract 0.2.0, which read the cache through `list` only.
        r#"(component (import "wasmcm:reconciler/cache@0.2.0" (instance)))"#,
        r#"(component (import "wasmcm:reconciler/types@9.0.0" (instance)))"#,
        // One importing nothing is still found out by its export.
        r#"(component (instance $i) (export "wasmcm:reconciler/controller@0.2.0" (instance $i)))"#,
    ];
    for (wat, theirs) in components.into_iter().zip(["0.2.0", "9.0.0", "0.2.0"]) {
        let err = load_err(&wat::parse_str(wat).unwrap());
        assert!(matches!(&err, LoadError::ContractInterface { contract, .. } if contract == theirs), "{err}");
        let expected = format!(
            "test.wasm: built for contract {theirs}; this host implements contracts 0.4.0 and 0.3.0: rebuild the \
             plugin against the wasmcm-guest crate of contract {this}"
        );
        assert_eq!(err.to_string(), expected);
    }
    // One component speaks one contract.
    let mixed = r#"(component (import "wasmcm:reconciler/cache@0.3.0" (instance))
        (instance $i) (export "wasmcm:reconciler/controller@0.4.0" (instance $i)))"#;
    let err = load_err(&wat::parse_str(mixed).unwrap());
    assert!(matches!(err, LoadError::Metadata { .. }), "{err}");
    assert!(err.to_string().ends_with("it mixes the interfaces of contracts 0.3.0 and 0.4.0"), "{err}");
    // And declares the contract it exports.
    let stamp = std::fs::read(common::guest("wasmcm_stamp.wasm")).unwrap();
    let declares_older = wasmcm_stamp::variant(&stamp, "v1", "contract-0.3.0").unwrap();
    let err = common::engine().load("stamp.wasm", &declares_older, Limits::default()).err().expect("refused");
    assert_eq!(
        err.to_string(),
        "stamp.wasm: invalid plugin metadata: describe() declares contract 0.3.0, but the component exports the \
         interfaces of contract 0.4.0"
    );
}

/// A plugin built against contract 0.3.0 before 0.4.0 existed loads and runs unchanged: its
/// reads are served, its intents arrive as the current contract's (a delete without a
/// propagation), and only the current contract's plugins are offered `patch`.
#[test]
fn plugins_of_contract_0_3_0_load_and_run_unchanged() {
    let bytes = std::fs::read(common::guest("wasmcm_legacy.wasm")).unwrap();
    let plugin = common::engine().load("legacy.wasm", &bytes, Limits::default()).expect("a 0.3.0 plugin loads");
    assert_eq!(plugin.info().contract, "0.3.0");
    assert_eq!(
        plugin.info().watches,
        [wasmcm_guest::Watch::new(Kind::new("v1", "Secret"), wasmcm_guest::Changes::DELETED)]
    );
    assert!(plugin.imports().iter().all(|i| i.ends_with("@0.3.0")), "{:?}", plugin.imports());
    let cm = |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "demo", "resourceVersion": "3"}});
    let cache = wasmcm_guest::MemoryCache::from_objects(&[cm("a"), cm("b")]).unwrap();
    let request =
        wasmcm_guest::Request::new("demo", "a", wasmcm_guest::Instant { seconds: 1_800_000_000, nanoseconds: 0 });
    let outcome = plugin.reconcile(&request, Arc::new(cache)).expect("reconciles");
    assert_eq!(outcome.requeue_after_ms, Some(1500));
    let [first, second] = outcome.batches.as_slice() else { panic!("{outcome:#?}") };
    let [wasmcm_guest::Intent::Update(updated)] = first.as_slice() else { panic!("{outcome:#?}") };
    let updated: serde_json::Value = serde_json::from_str(updated).unwrap();
    assert_eq!(updated["data"], json!({"seen-by": "legacy 0.3.0", "listed": "2"}));
    assert_eq!(updated["metadata"]["resourceVersion"], "3");
    let [wasmcm_guest::Intent::Delete(delete), wasmcm_guest::Intent::Event(event)] = second.as_slice() else {
        panic!("{outcome:#?}")
    };
    assert_eq!((delete.target.name.as_str(), delete.uid.as_ref(), delete.propagation), ("a-old", None, None));
    assert_eq!((event.reason.as_str(), event.message.as_str()), ("Legacy", "reconciled by a 0.3.0 plugin"));
}

#[test]
fn precompiled_cache_is_reused_and_survives_corruption() {
    let (dir, engine, _key) = cached_engine();
    let bytes = std::fs::read(common::guest("wasmcm_hostile.wasm")).unwrap();
    let first = engine.load("hostile", &bytes, Limits::default()).unwrap();
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].file_name().unwrap().to_str().unwrap().starts_with(first.digest()));

    std::fs::write(&files[0], b"garbage").unwrap();
    let again = engine.load("hostile", &bytes, Limits::default()).expect("a corrupt artefact is recompiled");
    assert_eq!(again.info().name, "hostile");
    assert_ne!(std::fs::read(&files[0]).unwrap(), b"garbage", "the artefact is rewritten");
}

/// An engine with a precompiled cache, and the directory holding its key.
fn cached_engine() -> (tempfile::TempDir, Engine, tempfile::TempDir) {
    let (dir, key) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let config = EngineConfig {
        precompiled_dir: Some(dir.path().into()),
        precompiled_key: Some(key.path().join("key")),
        ..EngineConfig::default()
    };
    (dir, Engine::new(&config).unwrap(), key)
}

/// Each compiled function of `dir`'s cache, sorted, with its content.
fn compiled_functions(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for shard in std::fs::read_dir(dir.join("functions")).unwrap() {
        for file in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            let path = file.unwrap().path();
            files.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    files.sort();
    files
}

/// A new release of a plugin compiles only the functions that changed: the rest come from the
/// compiled functions on disk (what makes a rebuilt Python or JavaScript plugin, whose
/// interpreter is the same in every build, compile in a third of the time). Each is used only
/// with this host's tag over its key and content, from a file no one else may write: a swapped,
/// garbled or exposed one is compiled again, and the plugin runs all the same.
#[test]
fn a_new_release_reuses_the_compiled_functions_and_refuses_tampered_ones() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, engine, _key) = cached_engine();
    let stamp = std::fs::read(common::guest("wasmcm_stamp.wasm")).unwrap();
    let release = |n: u32| {
        let bytes = wasmcm_stamp::variant(&stamp, &format!("v{n}"), &format!("{n}.0.0")).unwrap();
        let plugin = engine.load("stamp", &bytes, Limits::default()).unwrap();
        assert_eq!(plugin.info().version, format!("{n}.0.0"));
        assert!(!plugin.compiled().cached, "release {n} is new to the precompiled cache");
    };
    release(1);
    let first = compiled_functions(dir.path());
    assert!(first.len() > 100, "every function of the first release is kept: {}", first.len());
    assert!(first.iter().all(|(p, _)| std::fs::metadata(p).unwrap().permissions().mode() & 0o777 == 0o600));

    // Cranelift's keys of a few functions differ from one compile of the same code to the next
    // (wasmtime 48), so a few are compiled again: but most are reused, none is changed.
    release(2);
    let second = compiled_functions(dir.path());
    let compiled = second.len() - first.len();
    assert!(compiled * 4 < first.len(), "the second release, its data changed, compiled {compiled} of {}", first.len());
    assert!(first.iter().all(|f| second.contains(f)), "and changed none");

    // Every function swapped for the next one's (each file a valid tag for another function),
    // every fifth also open to others.
    for (i, (path, _)) in first.iter().enumerate() {
        std::fs::write(path, &first[(i + 1) % first.len()].1).unwrap();
        if i % 5 == 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).unwrap();
        }
    }
    release(3);
    let third = compiled_functions(dir.path());
    let restored: Vec<_> = first.iter().filter(|f| third.contains(f)).collect();
    assert!(
        restored.len() * 4 > first.len() * 3,
        "compiled again, as they were: {} of {}",
        restored.len(),
        first.len()
    );
    assert!(restored.iter().all(|(p, _)| std::fs::metadata(p).unwrap().permissions().mode() & 0o777 == 0o600));
}

/// Whoever can write the cache directory cannot make the host run other native code: an
/// artefact is used only with this host's tag for exactly these component bytes, and only from
/// a file no one else may write.
#[test]
fn a_swapped_or_exposed_precompiled_artefact_is_refused_and_recompiled() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, engine, _key) = cached_engine();
    let hostile = std::fs::read(common::guest("wasmcm_hostile.wasm")).unwrap();
    let replicaset = std::fs::read(common::guest("wasmcm_replicaset.wasm")).unwrap();
    let h = engine.load("hostile", &hostile, Limits::default()).unwrap();
    let r = engine.load("replicaset", &replicaset, Limits::default()).unwrap();
    let artefact = |digest: &str| {
        let mut files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        files.into_iter().find(|p| p.file_name().unwrap().to_str().unwrap().starts_with(digest)).unwrap()
    };
    let meta = std::fs::metadata(artefact(h.digest())).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "created private");
    let again = engine.load("hostile", &hostile, Limits::default()).unwrap();
    assert!(again.compiled().cached, "an intact artefact is reused");

    // The replicaset's (valid, this engine's) artefact under the hostile plugin's name.
    std::fs::copy(artefact(r.digest()), artefact(h.digest())).unwrap();
    let swapped = engine.load("hostile", &hostile, Limits::default()).unwrap();
    assert_eq!(swapped.info().name, "hostile", "the swapped artefact never ran");
    assert!(!swapped.compiled().cached, "it was recompiled");
    assert!(engine.load("hostile", &hostile, Limits::default()).unwrap().compiled().cached, "and stored again");

    // An intact artefact others may write is not trusted either.
    std::fs::set_permissions(artefact(h.digest()), std::fs::Permissions::from_mode(0o666)).unwrap();
    assert!(!engine.load("hostile", &hostile, Limits::default()).unwrap().compiled().cached);
}

/// `describe()` is bounded like any plugin output: a declaration of 100,000 kinds is refused
/// at load, with the count.
#[test]
fn an_oversized_declaration_is_refused_at_load() {
    let stamp = std::fs::read(common::guest("wasmcm_stamp.wasm")).unwrap();
    let wide = wasmcm_stamp::variant(&stamp, "v1", "writes-100000").unwrap();
    let err = common::engine().load("wide", &wide, Limits::default()).err().expect("refused");
    assert!(err.to_string().ends_with("writes lists 100001 kinds; at most 64"), "{err}");
    let fine = wasmcm_stamp::variant(&stamp, "v1", "writes-10").unwrap();
    assert_eq!(common::engine().load("fine", &fine, Limits::default()).unwrap().info().writes.len(), 11);
}

/// A cache whose `get` holds each caller until `n` have arrived, or a second passed (within
/// the calls' 2 s deadline), so that calls overlap.
struct Rendezvous {
    n: usize,
    arrived: std::sync::Mutex<usize>,
    all: std::sync::Condvar,
}

impl wasmcm_guest::Cache for Rendezvous {
    fn get(&self, _: &Kind, _: &str, _: &str) -> Option<String> {
        let mut arrived = self.arrived.lock().unwrap();
        *arrived += 1;
        self.all.notify_all();
        let _ = self.all.wait_timeout_while(arrived, std::time::Duration::from_secs(1), |a| *a < self.n).unwrap();
        None
    }
    fn list(&self, _: &Kind, _: &str, _: &wasmcm_guest::Selector) -> Vec<String> {
        Vec::new()
    }
    fn list_controlled(&self, _: &Kind, _: &str, _: &str, _: bool) -> Vec<String> {
        Vec::new()
    }
}

/// The host's memory budget bounds all calls together: two calls of 40 MiB each, within
/// their plugin's 64 MiB, do not fit an 80 MiB budget at once; the second is refused with the
/// reason, and once the first is over the budget is whole again.
#[test]
fn concurrent_calls_share_the_hosts_memory_budget() {
    let engine = Engine::new(&EngineConfig { memory_budget: Some(80 << 20), ..EngineConfig::default() }).unwrap();
    let bytes = std::fs::read(common::guest("wasmcm_hostile.wasm")).unwrap();
    let limits = Limits { memory_bytes: 64 << 20, ..Limits::default() };
    let plugin = Arc::new(engine.load("hostile", &bytes, limits).unwrap());
    let cache = Arc::new(Rendezvous { n: 2, arrived: Default::default(), all: Default::default() });
    let request = wasmcm_guest::Request::new("default", "grab", wasmcm_replicaset::fixtures::now());
    let calls: Vec<_> = (0..2)
        .map(|_| {
            let (plugin, cache, request) = (plugin.clone(), cache.clone(), request.clone());
            std::thread::spawn(move || plugin.reconcile(&request, cache))
        })
        .collect();
    let results: Vec<_> = calls.into_iter().map(|c| c.join().unwrap()).collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "{results:?}");
    let refused = results.iter().find_map(|r| r.as_ref().err()).unwrap();
    assert!(matches!(refused, wasmcm::CallError::Trap { reason: wasmcm::TrapReason::Memory, .. }), "{refused}");
    assert!(
        refused.to_string().contains("the host's memory budget for plugin calls (80 MiB) is held by other calls"),
        "{refused}"
    );

    let alone = Arc::new(Rendezvous { n: 1, arrived: Default::default(), all: Default::default() });
    for _ in 0..3 {
        plugin.reconcile(&request, alone.clone()).expect("the budget was given back");
    }
}

/// `n` ConfigMaps of 1 MiB each, in `default`.
fn megabyte_configmaps(n: usize) -> Arc<wasmcm_guest::MemoryCache> {
    let mut cache = wasmcm_guest::MemoryCache::new();
    for i in 0..n {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("cm-{i}"), "namespace": "default"},
                        "data": {"x": "x".repeat(1 << 20)}});
        cache.insert(&cm).unwrap();
    }
    Arc::new(cache)
}

/// The budget counts what a call reads as well as its linear memory: the host's copy of an
/// answer until the guest has it, beside the guest's own. With 96 MiB, a call listing 30 MiB
/// (twice 30 held at once) is served; one listing 56 MiB, whose guest copy alone would fit,
/// is refused with the budget named, and gives back all it held.
#[test]
fn what_a_call_reads_is_charged_to_the_memory_budget() {
    let engine = Engine::new(&EngineConfig { memory_budget: Some(96 << 20), ..EngineConfig::default() }).unwrap();
    let bytes = std::fs::read(common::guest("wasmcm_hostile.wasm")).unwrap();
    let plugin = engine.load("hostile", &bytes, Limits { memory_bytes: 256 << 20, ..Limits::default() }).unwrap();
    let request = wasmcm_guest::Request::new("default", "read-everything", wasmcm_replicaset::fixtures::now());
    let report = |o: &wasmcm_guest::Outcome| match &o.batches[0][0] {
        wasmcm_guest::Intent::Create(cm) => {
            serde_json::from_str::<serde_json::Value>(cm).unwrap()["data"]["report"].as_str().unwrap().to_string()
        }
        other => panic!("{other:?}"),
    };
    let (fits, too_much) = (megabyte_configmaps(30), megabyte_configmaps(56));
    assert_eq!(report(&plugin.reconcile(&request, fits.clone()).unwrap()), "read 30");
    for _ in 0..2 {
        let refused = plugin.reconcile(&request, too_much.clone()).expect_err("refused");
        assert!(matches!(refused, wasmcm::CallError::Trap { reason: wasmcm::TrapReason::Memory, .. }), "{refused}");
        assert!(refused.to_string().contains("the host's memory budget for plugin calls (96 MiB)"), "{refused}");
    }
    assert_eq!(report(&plugin.reconcile(&request, fits).unwrap()), "read 30", "the budget was given back");
}
