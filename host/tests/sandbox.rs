//! The sandbox, proven with a hostile guest: every misbehaviour ends that one call with a
//! precise reason, and the host keeps serving other calls, other keys and other plugins.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmcm::plugins::{CallError, TrapReason};
use wasmcm::snapshot::Snapshot;
use wasmcm::writer;
use wasmcm_guest::{Intent, MemoryCache, Outcome, Request};
use wasmcm_replicaset::fixtures::{cache, now, replica_set, request};

fn call(key: &str) -> Result<Outcome, CallError> {
    let req = Request {
        namespace: "default".into(),
        name: key.into(),
        now: now(),
        previous_failure: None,
        settings: "{}".into(),
    };
    common::hostile().reconcile(&req, Arc::new(MemoryCache::new()))
}

fn trap(key: &str) -> (TrapReason, String) {
    match call(key) {
        Err(e @ CallError::Trap { reason, .. }) => (reason, e.to_string()),
        other => panic!("{key}: expected a trap, got {other:?}"),
    }
}

/// The `report` the hostile guest put in the ConfigMap it asks to create.
fn report(o: &Outcome) -> String {
    let Some(Intent::Create(cm)) = o.intents().next() else { panic!("no create in {o:?}") };
    let cm: Value = serde_json::from_str(cm).unwrap();
    cm["data"]["report"].as_str().unwrap().to_string()
}

#[test]
fn an_infinite_loop_is_interrupted_at_the_deadline() {
    let started = Instant::now();
    let (reason, msg) = trap("loop");
    assert_eq!(reason, TrapReason::Deadline);
    assert!(msg.contains("plugin hostile 0.0.1 trapped (deadline)") && msg.contains("300ms"), "{msg}");
    assert!(started.elapsed() < Duration::from_secs(30), "interrupted, not run to completion");
}

#[test]
fn a_huge_allocation_hits_the_memory_cap() {
    let (reason, msg) = trap("alloc");
    assert_eq!(reason, TrapReason::Memory);
    assert!(msg.contains("memory limit of 64 MiB exceeded"), "{msg}");
}

#[test]
fn a_panic_is_reported_with_its_message() {
    let (reason, msg) = trap("panic");
    assert_eq!(reason, TrapReason::Panic);
    assert!(msg.contains("hostile plugin panics on purpose"), "{msg}");
}

#[test]
fn runaway_recursion_exhausts_the_stack_not_the_host() {
    assert_eq!(trap("recurse").0, TrapReason::StackOverflow);
    // Frames with arrays live on Rust's shadow stack in linear memory; overflowing it runs off
    // the bottom of memory, which the sandbox stops as an out-of-bounds access.
    let (reason, msg) = trap("smash-stack");
    assert_eq!(reason, TrapReason::OutOfBounds);
    assert!(msg.contains("out of bounds memory access"), "{msg}");
}

#[test]
fn reading_an_undeclared_kind_traps() {
    let (reason, msg) = trap("read-secret");
    assert_eq!(reason, TrapReason::Capability);
    assert!(msg.contains("read of v1/Secret, a kind the plugin did not declare"), "{msg}");
}

#[test]
fn files_network_and_environment_are_unreachable() {
    let r = report(&call("ambient").expect("the guest survives the attempts"));
    for what in ["file: ", "net: ", "env: "] {
        assert!(r.contains(what), "{r}");
    }
    // std on wasm32-unknown-unknown has no way to reach the host: every attempt fails.
    assert!(r.matches("unsupported").count() + r.matches("not supported").count() >= 2, "{r}");
    assert!(r.contains("env: environment variable not found"), "{r}");
}

#[test]
fn there_is_no_clock_to_read() {
    let (reason, msg) = trap("clock");
    assert_eq!(reason, TrapReason::Panic, "{msg}");
    assert!(msg.contains("time not implemented"), "{msg}");
}

#[test]
fn a_plugin_error_is_not_a_trap() {
    match call("fail") {
        Err(CallError::Plugin { message, retryable, .. }) => {
            assert_eq!(message, "hostile plugin refuses");
            assert!(!retryable);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn writes_beyond_the_declared_kinds_or_namespace_are_refused_and_never_sent() {
    let plugin = common::hostile();
    for (key, reason) in [
        ("write-secret", "plugin hostile may not write v1/Secret (it declared: v1/ConfigMap)"),
        ("other-namespace", "writes are confined to namespace \"default\", not \"kube-system\""),
    ] {
        let outcome = call(key).unwrap();
        let api = std::sync::Mutex::new(Snapshot::new(vec![], now()));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let r = rt.block_on(writer::execute(&api, plugin.info(), "default", key, &outcome, Default::default()));
        assert!(r.actions.is_empty(), "{key}: nothing may be sent: {:?}", r.actions);
        assert_eq!(r.refused.len(), 1, "{key}");
        assert_eq!(r.refused[0].reason, reason);
        assert!(r.failure.is_some(), "{key}: a refusal fails the outcome");
        assert_eq!(api.lock().unwrap().to_list()["items"], json!([]), "{key}");
    }
}

#[test]
fn the_host_keeps_serving_while_and_after_plugins_misbehave() {
    let rs = Arc::new(cache(&[replica_set(3, json!({}))]));
    // A looping call occupies one thread until its deadline; meanwhile other keys and another
    // plugin go on.
    let looping = std::thread::spawn(|| trap("loop").0);
    let healthy: Vec<_> = (0..4)
        .map(|_| {
            let rs = rs.clone();
            std::thread::spawn(move || common::replicaset().reconcile(&request("web"), rs))
        })
        .collect();
    for h in healthy {
        let outcome = h.join().unwrap().expect("replicaset reconciles while another plugin loops");
        assert_eq!(outcome.intents().filter(|i| matches!(i, Intent::Create(_))).count(), 3);
    }
    assert_eq!(looping.join().unwrap(), TrapReason::Deadline);

    for key in ["alloc", "panic", "recurse", "smash-stack", "read-secret", "clock", "loop"] {
        assert!(call(key).is_err());
    }
    assert_eq!(report(&call("fine").unwrap()), "ok fine", "the hostile plugin itself still serves");
    assert!(common::replicaset().reconcile(&request("web"), rs).is_ok());
}
