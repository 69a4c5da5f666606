//! A plugin that misbehaves on request, for the host's sandbox tests. The behaviour is chosen
//! by the name of the key reconciled, so one component covers every case.

use wasmcm_guest::{
    CONTRACT_VERSION, Cache, Controller, DeleteTarget, Error, Intent, Kind, Level, ObjectRef, Outcome, PluginInfo,
    Request, Selector, log,
};

/// Intents in the `many-intents` outcome: far past what the host accepts.
const MANY: usize = 2_000_000;
/// Bytes of the object in the `huge-string` outcome (100 MB).
const HUGE: usize = 100_000_000;
/// Bytes of the `huge-log` message: more than the host copies out of one import call (128 MiB).
const HUGE_LOG: usize = 150_000_000;

pub struct Hostile;

impl Controller for Hostile {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "hostile".into(),
            version: "0.0.1".into(),
            primary: Kind::new("v1", "ConfigMap"),
            owns: vec![],
            watches: vec![],
            writes: vec![
                Kind::new("v1", "ConfigMap"),
                Kind::new("v1", "Pod"),
                Kind::new("v1", "Namespace"),
                Kind::new("coordination.k8s.io/v1", "Lease"),
                // Served by no cluster: each write of it is a discovery miss.
                unserved(),
                Kind::new("apps/v1", "Deployment"),
            ],
            contract: CONTRACT_VERSION.into(),
        }
    }

    fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
        // `intents-N`: N intents in one batch; `batches-N`: N empty batches.
        let count = |prefix: &str| request.name.strip_prefix(prefix).and_then(|n| n.parse().ok());
        if let Some(n) = count("intents-") {
            return Ok(Outcome { batches: vec![deletes(n)], requeue_after_ms: None });
        }
        if let Some(n) = count("batches-") {
            return Ok(Outcome { batches: vec![Vec::new(); n], requeue_after_ms: None });
        }
        // `unserved-N`: N creates of a kind the cluster does not serve.
        if let Some(n) = count("unserved-") {
            let kind = unserved();
            let creates = (0..n)
                .map(|i| {
                    Intent::Create(format!(
                        r#"{{"apiVersion":"{}","kind":"{}","metadata":{{"name":"u-{i}","namespace":"{}"}}}}"#,
                        kind.api_version, kind.kind, request.namespace
                    ))
                })
                .collect();
            return Ok(Outcome { batches: vec![creates], requeue_after_ms: None });
        }
        // `bulk-N`: filler that the cache holds and a test reads; nothing to do.
        if count("bulk-").is_some() {
            return Ok(Outcome::default());
        }
        // `fill-N`: 240 MiB touched and held a while (read over and over), again and again
        // (requeued at once, writing nothing), so that a plugin's workers all hold their share
        // of memory at the same time.
        if count("fill-").is_some() {
            let v = vec![1u8; 240 << 20];
            let mut sum: u64 = 0;
            for pass in 0..16 {
                sum = sum.wrapping_add(v.iter().skip(pass).step_by(64).map(|b| u64::from(*b)).sum::<u64>());
            }
            std::hint::black_box(sum);
            return Ok(Outcome { batches: Vec::new(), requeue_after_ms: Some(1) });
        }
        // `pod-as-<account>`: a Pod in the key's namespace running as that ServiceAccount;
        // `template-as-<account>`: a Deployment whose pods would.
        if let Some(account) = request.name.strip_prefix("pod-as-") {
            return Ok(create(pod(&request.namespace, "as-account", account, false)));
        }
        if let Some(account) = request.name.strip_prefix("template-as-") {
            let template = pod_spec(account, false);
            let deployment = serde_json::json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "as-account", "namespace": request.namespace},
                "spec": {"selector": {"matchLabels": {"app": "x"}},
                         "template": {"metadata": {"labels": {"app": "x"}}, "spec": template}},
            });
            return Ok(create(deployment));
        }
        // `lease-<name>`: the Lease of that name in the key's namespace.
        if let Some(name) = request.name.strip_prefix("lease-") {
            let lease = serde_json::json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": request.namespace},
                "spec": {"holderIdentity": "hostile"},
            });
            return Ok(create(lease));
        }
        match request.name.as_str() {
            // A Pod any plugin may run, in the key's namespace.
            "plain-pod" => Ok(create(pod(&request.namespace, "plain", "", false))),
            // A privileged one.
            "privileged-pod" => Ok(create(pod(&request.namespace, "privileged", "", true))),
            "loop" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "alloc" => {
                // 1 GiB, touched so it cannot be optimised away.
                let v = vec![1u8; 1 << 30];
                Ok(outcome_with(format!("{}", v.iter().map(|b| *b as u64).sum::<u64>())))
            }
            "remember" => Ok(outcome_with(remember())),
            "panic" => panic!("hostile plugin panics on purpose"),
            "recurse" => Ok(outcome_with(format!("{}", recurse(std::hint::black_box(1))))),
            "smash-stack" => Ok(outcome_with(format!("{}", smash_stack(std::hint::black_box(1))))),
            "read-secret" => {
                let secrets = cache.list(&Kind::new("v1", "Secret"), &request.namespace, &Selector::everything());
                Ok(outcome_with(format!("read {} secrets", secrets.len())))
            }
            "ambient" => {
                // Everything a native program could reach; in a component each must fail.
                let file = std::fs::read_to_string("/etc/hostname").map(|_| "file read").unwrap_err();
                let net = std::net::TcpStream::connect("127.0.0.1:1").map(|_| "connected").unwrap_err();
                let env = std::env::var("HOME").map(|_| "env read").unwrap_err();
                let report = format!("file: {file}; net: {net}; env: {env}");
                log(Level::Info, &report);
                Ok(outcome_with(report))
            }
            "clock" => {
                let t = std::time::SystemTime::now();
                Ok(outcome_with(format!("{t:?}")))
            }
            "fail" => Err(Error::permanent("hostile plugin refuses")),
            "write-secret" => {
                let secret =
                    r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"stolen","namespace":"default"}}"#;
                Ok(Outcome { batches: vec![vec![Intent::Create(secret.into())]], requeue_after_ms: None })
            }
            "other-namespace" => {
                let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"kube-system"}}"#;
                Ok(Outcome { batches: vec![vec![Intent::Create(cm.into())]], requeue_after_ms: None })
            }
            // A pod in the key's namespace running as the host's ServiceAccount.
            "borrow-identity" => {
                let pod = format!(
                    r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"borrowed","namespace":"{}"}},
                        "spec":{{"serviceAccountName":"wasmcm","containers":[{{"name":"c","image":"evil"}}]}}}}"#,
                    request.namespace
                );
                Ok(Outcome { batches: vec![vec![Intent::Create(pod)]], requeue_after_ms: None })
            }
            // The host's leader Lease, in the key's namespace.
            "take-lease" => {
                let lease = format!(
                    r#"{{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{{"name":"wasmcm","namespace":"{}"}},
                        "spec":{{"holderIdentity":"hostile"}}}}"#,
                    request.namespace
                );
                Ok(Outcome { batches: vec![vec![Intent::Create(lease)]], requeue_after_ms: None })
            }
            // A cluster-scoped object: the Namespace `victim`.
            "cluster-delete" => {
                let target =
                    ObjectRef { kind: Kind::new("v1", "Namespace"), namespace: String::new(), name: "victim".into() };
                Ok(Outcome {
                    batches: vec![vec![Intent::Delete(DeleteTarget::new(target, None))]],
                    requeue_after_ms: None,
                })
            }
            "many-intents" => Ok(Outcome { batches: vec![deletes(MANY)], requeue_after_ms: None }),
            "huge-string" => {
                // Built in place: the arena never reuses freed memory, so a temporary copy
                // would double what the call needs.
                let head = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"huge","namespace":"default"},"data":{"x":""#;
                let tail = r#""}}"#;
                let mut cm = Vec::with_capacity(head.len() + HUGE + tail.len());
                cm.extend_from_slice(head.as_bytes());
                cm.resize(head.len() + HUGE, b'x');
                cm.extend_from_slice(tail.as_bytes());
                let cm = String::from_utf8(cm).map_err(|e| Error::permanent(e.to_string()))?;
                Ok(Outcome { batches: vec![vec![Intent::Create(cm)]], requeue_after_ms: None })
            }
            // As many writes as the host accepts in one outcome: ConfigMaps flood-0 …
            "flood" => {
                let creates = (0..10_000)
                    .map(|i| {
                        Intent::Create(format!(
                            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"flood-{i}","namespace":"{}"}}}}"#,
                            request.namespace
                        ))
                    })
                    .collect();
                Ok(Outcome { batches: vec![creates], requeue_after_ms: None })
            }
            // A selector whose matching costs 100,000 comparisons per object.
            "huge-selector" => {
                let values = (0..100_000).map(|i| format!("v{i}")).collect();
                let selector = Selector {
                    match_labels: vec![],
                    match_expressions: vec![wasmcm_guest::Requirement {
                        key: "k".into(),
                        operator: wasmcm_guest::Operator::In,
                        values,
                    }],
                };
                let found = cache.list(&Kind::new("v1", "ConfigMap"), &request.namespace, &selector);
                Ok(outcome_with(format!("matched {}", found.len())))
            }
            // Every ConfigMap of the cluster.
            "read-everything" => {
                let all = cache.list(&Kind::new("v1", "ConfigMap"), "", &Selector::everything());
                Ok(outcome_with(format!("read {}", all.len())))
            }
            // 40 MiB held across a read, where a test's cache makes calls meet.
            "grab" => {
                let v = vec![1u8; 40 << 20];
                let touched: u64 = v.iter().step_by(4096).map(|b| u64::from(*b)).sum();
                let _ = cache.get(&Kind::new("v1", "ConfigMap"), &request.namespace, "rendezvous");
                Ok(outcome_with(format!("touched {touched} pages")))
            }
            // Whether the host's namespace shows through the cache.
            "peek-host" => {
                let found = cache.get(&Kind::new("v1", "ConfigMap"), "wasmcm", "borrow-identity").is_some();
                let listed = cache.list(&Kind::new("v1", "ConfigMap"), "", &Selector::everything());
                let from_host = listed.iter().filter(|o| o.contains("\"namespace\":\"wasmcm\"")).count();
                Ok(outcome_with(format!("get {found}, listed {from_host}")))
            }
            "chatty" => {
                for i in 0..10_000 {
                    log(Level::Info, &format!("chatty line {i}"));
                }
                Ok(outcome_with("chatted".into()))
            }
            "huge-log" => {
                log(Level::Info, &"x".repeat(HUGE_LOG));
                Ok(outcome_with("logged".into()))
            }
            other => Ok(outcome_with(format!("ok {other}"))),
        }
    }
}

/// A kind it declares writing that no cluster serves.
fn unserved() -> Kind {
    Kind::new("unserved.wasmcm.dev/v1", "Unserved")
}

/// One create of `object`.
fn create(object: serde_json::Value) -> Outcome {
    Outcome { batches: vec![vec![Intent::Create(object.to_string())]], requeue_after_ms: None }
}

/// A pod spec running as `account` (none: unset), privileged or not.
fn pod_spec(account: &str, privileged: bool) -> serde_json::Value {
    let mut spec = serde_json::json!({"containers": [{"name": "c", "image": "evil"}]});
    if !account.is_empty() {
        spec["serviceAccountName"] = account.into();
    }
    if privileged {
        spec["containers"][0]["securityContext"] = serde_json::json!({"privileged": true});
    }
    spec
}

fn pod(namespace: &str, name: &str, account: &str, privileged: bool) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": pod_spec(account, privileged),
    })
}

/// `n` deletes, as small as an intent gets (empty strings allocate nothing), so that only their
/// number is excessive.
fn deletes(n: usize) -> Vec<Intent> {
    let target = ObjectRef { kind: Kind::new("", ""), namespace: String::new(), name: String::new() };
    vec![Intent::Delete(DeleteTarget::new(target, None)); n]
}

/// Exhausts the wasm call stack.
fn recurse(n: u64) -> u64 {
    if n == 0 { 0 } else { recurse(std::hint::black_box(n.wrapping_add(1))).wrapping_add(1) }
}

/// Exhausts Rust's shadow stack in linear memory (arrays in frames live there).
fn smash_stack(n: u64) -> u64 {
    let pad = std::hint::black_box([n; 64]);
    if n == 0 { pad[0] } else { smash_stack(n.wrapping_add(1)).wrapping_add(pad[3]) }
}

/// A ConfigMap create whose data carries `report`, so tests can read what happened.
/// What this instance finds left by an earlier call, then leaves for the next one: a static
/// counter (the data image) and marks in a heap block (pages the host must zero), one page near
/// the start and one 3 MiB in, past the part of memory the host keeps mapped between calls.
fn remember() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let calls = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
    const BLOCK: usize = 4 << 20;
    let mut block: Vec<u8> = Vec::with_capacity(BLOCK);
    let p = block.as_mut_ptr();
    let marks = [0, 64 << 10, 3 << 20, BLOCK - 1];
    // Volatile: the arena hands out the same addresses in every fresh instance, so these read
    // what an earlier call wrote there if the host did not reset its memory.
    let stale = marks.iter().filter(|&&i| unsafe { p.add(i).read_volatile() } != 0).count();
    for i in marks {
        unsafe { p.add(i).write_volatile(0xAB) };
    }
    format!("calls={calls} stale={stale}")
}

fn outcome_with(report: String) -> Outcome {
    let cm = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "report", "namespace": "default"},
        "data": {"report": report},
    });
    Outcome { batches: vec![vec![Intent::Create(cm.to_string())]], requeue_after_ms: None }
}

#[cfg(target_arch = "wasm32")]
wasmcm_guest::export_plugin!(Hostile);
