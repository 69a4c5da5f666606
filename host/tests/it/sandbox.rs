//! The sandbox, proven with a hostile guest: every misbehaviour ends that one call with a
//! precise reason, and the host keeps serving other calls, other keys and other plugins.

use crate::common;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmcm::write_outcome;
use wasmcm::{CallError, Limits, Plugin, TrapReason};
use wasmcm_apiserver::Offline;
use wasmcm_guest::{Intent, MemoryCache, Outcome, Request};
use wasmcm_replicaset::fixtures::{cache, now, replica_set, request};

fn call(key: &str) -> Result<Outcome, CallError> {
    call_with(&common::hostile(), key)
}

fn call_with(plugin: &Plugin, key: &str) -> Result<Outcome, CallError> {
    let req = Request::new("default", key, now());
    plugin.reconcile(&req, Arc::new(MemoryCache::new()))
}

fn trap(key: &str) -> (TrapReason, String) {
    trap_with(&common::hostile(), key)
}

fn trap_with(plugin: &Plugin, key: &str) -> (TrapReason, String) {
    match call_with(plugin, key) {
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
        ("write-secret", "plugin hostile may not write v1/Secret: not among the kinds it declared (6)"),
        ("other-namespace", "writes are confined to namespace \"default\", not \"kube-system\""),
    ] {
        let outcome = call(key).unwrap();
        let api = Offline::new(vec![], now().timestamp()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let r = rt.block_on(write_outcome(&api, plugin.info(), "default", key, &outcome, Default::default()));
        assert!(r.actions.is_empty(), "{key}: nothing may be sent: {:?}", r.actions);
        assert_eq!(r.refused.len(), 1, "{key}");
        assert_eq!(r.refused[0].reason, reason);
        assert!(r.failure.is_some(), "{key}: a refusal fails the outcome");
        assert_eq!(api.objects(), Vec::<serde_json::Value>::new(), "{key}");
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

#[test]
fn an_outcome_with_too_many_intents_is_refused() {
    let intents = |key| call(key).map(|o| o.intents().count());
    assert_eq!(intents("intents-10000").unwrap(), 10_000, "the cap itself is accepted");
    let (reason, msg) = trap("intents-10001");
    assert_eq!(reason, TrapReason::Outcome, "{msg}");
    assert!(
        msg.contains("trapped (outcome too large): outcome has 10001 intents; the host accepts at most 10000"),
        "{msg}"
    );
    // Empty batches are no way round it.
    assert_eq!(call("batches-10000").unwrap().batches.len(), 10_000);
    let (reason, msg) = trap("batches-10001");
    assert_eq!(reason, TrapReason::Outcome, "{msg}");
    assert!(msg.contains("outcome has 10001 batches; the host accepts at most 10000"), "{msg}");

    // Two million intents do not even fit in 64 MiB: the memory limit stops them first.
    let (reason, msg) = trap("many-intents");
    assert_eq!(reason, TrapReason::Memory, "{msg}");
    // With room for them in the plugin, they are more than the host copies out of a call
    // (well over 128 MiB in the host's form), so they are refused before it could count them.
    let (reason, msg) = trap_with(&common::hostile_roomy(), "many-intents");
    assert_eq!(reason, TrapReason::Outcome, "{msg}");
    assert!(msg.contains("the result needs more than the 128 MiB the host copies out of one call"), "{msg}");
    assert_eq!(report(&call_with(&common::hostile_roomy(), "fine").unwrap()), "ok fine", "the plugin still serves");
}

#[test]
fn import_arguments_past_the_copy_limit_trap_but_are_no_outcome() {
    // A 150 MB log message fits in the roomy plugin, not in what the host copies out of it.
    let (reason, msg) = trap_with(&common::hostile_roomy(), "huge-log");
    assert_eq!(reason, TrapReason::Other, "{msg}");
    assert!(msg.contains("fuel allocated for hostcalls has been exhausted"), "{msg}");
}

#[test]
fn an_outcome_with_too_much_text_is_refused() {
    let (reason, msg) = trap("huge-string");
    assert_eq!(reason, TrapReason::Memory, "100 MB do not fit in 64 MiB: {msg}");
    let (reason, msg) = trap_with(&common::hostile_roomy(), "huge-string");
    assert_eq!(reason, TrapReason::Outcome, "{msg}");
    let text: usize = msg
        .split_once("outcome has ")
        .and_then(|(_, rest)| rest.split_once(" bytes of text")?.0.parse().ok())
        .unwrap_or_else(|| panic!("no byte count in {msg}"));
    assert!((100_000_000..100_001_000).contains(&text), "the 100 MB object and its envelope: {msg}");
    assert!(msg.ends_with("the host accepts at most 16777216"), "{msg}");
}

/// The process's resident set, from /proc (Linux pages are 4 KiB on the machines this runs on).
fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm is readable");
    let pages: usize =
        statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("statm: {statm}"));
    pages * 4096
}

#[test]
fn misbehaving_plugins_do_not_grow_the_hosts_memory() {
    // RSS is the whole process's, and every other test of this binary runs beside this one:
    // the measurement runs in a test process of its own.
    const ALONE: &str = "WASMCM_TEST_RSS_ALONE";
    if std::env::var_os(ALONE).is_none() {
        let name = "sandbox::misbehaving_plugins_do_not_grow_the_hosts_memory";
        let out = Command::new(std::env::current_exe().expect("the test binary's path"))
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env(ALONE, "1")
            .output()
            .expect("the test binary runs");
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        eprint!("{stderr}");
        assert!(out.status.success(), "the measurement failed ({}):\n{stdout}{stderr}", out.status);
        assert!(stdout.contains("1 passed"), "the measurement did not run:\n{stdout}");
        return;
    }
    // The loop's deadline is short so that a thousand calls stay quick; the other keys keep
    // common::hostile's, so that a loaded machine does not turn them into deadline traps.
    let limits = Limits { memory_bytes: 64 << 20, deadline: Duration::from_millis(20) };
    let looping = common::engine().load_file(&common::guest("wasmcm_hostile.wasm"), limits).expect("hostile loads");
    let hostile = common::hostile();
    let roomy = common::hostile_roomy();
    // Every misbehaviour, and whether the call fails (the writer, not the engine, refuses the
    // last ones' writes).
    let tight: Vec<(&Plugin, &str, bool)> = [
        ("loop", true),
        ("alloc", true),
        ("panic", true),
        ("recurse", true),
        ("smash-stack", true),
        ("read-secret", true),
        ("clock", true),
        ("fail", true),
        ("many-intents", true),
        ("huge-string", true),
        ("intents-10001", true),
        ("batches-10001", true),
        ("ambient", false),
        ("write-secret", false),
        ("other-namespace", false),
    ]
    .into_iter()
    .map(|(key, fails)| (if key == "loop" { &looping } else { &*hostile }, key, fails))
    .collect();
    // With room for what the memory limit stops above: two million intents, more than the
    // host copies out; a refused 100 MB object; a 150 MB log message. At up to a second each
    // they are a few among the thousand.
    let roomy = [(&*roomy, "many-intents", true), (&*roomy, "huge-string", true), (&*roomy, "huge-log", true)];
    let run = |(plugin, key, fails): (&Plugin, &str, bool)| {
        let result = call_with(plugin, key);
        assert_eq!(result.is_err(), fails, "{key}: {result:?}");
    };

    for &kind in &tight {
        (0..50).for_each(|_| run(kind));
    }
    for &kind in &roomy {
        (0..3).for_each(|_| run(kind));
    }
    let before = rss_bytes();
    for i in 0..1000 {
        run(if i % 50 == 49 { roomy[i / 50 % roomy.len()] } else { tight[i % tight.len()] });
    }
    let after = rss_bytes();
    let mib = |bytes: usize| bytes as f64 / f64::from(1 << 20);
    eprintln!("RSS before 1,000 misbehaving calls: {:.1} MiB, after: {:.1} MiB", mib(before), mib(after));
    let grown = after.saturating_sub(before);
    assert!(grown < 64 << 20, "RSS grew by {} MiB over 1,000 misbehaving calls", grown >> 20);
}

#[test]
fn no_call_sees_what_an_earlier_call_left_in_memory() {
    // Memory is reset by scanning for the pages a call touched (PAGEMAP_SCAN) where the kernel
    // has it; statics, the heap near its start and past the part kept mapped must all be fresh.
    let plugin = common::hostile();
    for attempt in 0..6 {
        let o = call_with(&plugin, "remember").expect("remember");
        assert_eq!(report(&o), "calls=1 stale=0", "call {attempt}");
    }
}

/// One call's log output is capped: 10,000 lines become 100, and one line saying the rest
/// were dropped. The roomy guest's deadline, not the 300 ms one: a loaded machine writing
/// 10,000 lines must meet the cap rather than the clock.
#[test]
fn a_call_logs_at_most_its_share() {
    #[derive(Clone, Default)]
    struct Buffer(Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    tracing::subscriber::with_default(subscriber, || call_with(&common::hostile_roomy(), "chatty").unwrap());
    let logs = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    assert_eq!(logs.lines().filter(|l| l.contains("chatty line")).count(), 100, "{logs}");
    assert_eq!(logs.lines().filter(|l| l.contains("the rest are dropped")).count(), 1, "{logs}");
}

/// Reads are bounded like outcomes: a selector too costly to match and a list past the cap
/// each end the call with the reason, before the host copies or matches what was asked. The
/// roomy guest's deadline, not the 300 ms one, so that a loaded machine building 100,000 values
/// or reading 20,000 objects meets the read cap rather than the clock.
#[test]
fn oversized_reads_and_selectors_end_the_call_with_the_reason() {
    let (reason, msg) = trap_with(&common::hostile_roomy(), "huge-selector");
    assert_eq!(reason, TrapReason::Reads);
    assert!(msg.contains("a selector requirement of 100000 values; at most 256"), "{msg}");

    let configmaps = |n: usize| {
        let mut cache = MemoryCache::new();
        for i in 0..n {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": format!("cm-{i}"), "namespace": "default"}});
            cache.insert(&cm).unwrap();
        }
        Arc::new(cache)
    };
    let req = Request::new("default", "read-everything", now());
    match common::hostile_roomy().reconcile(&req, configmaps(20_001)) {
        Err(e @ CallError::Trap { reason: TrapReason::Reads, .. }) => {
            assert!(e.to_string().contains("list of v1/ConfigMap matched more than 20000 objects"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    // One fewer is served.
    let o = common::hostile_roomy().reconcile(&req, configmaps(20_000)).unwrap();
    assert_eq!(report(&o), "read 20000");
}
