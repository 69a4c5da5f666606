//! OCI sources, end to end: plugins published with the real `wasmcm plugins push` to real
//! registries on loopback (Debian's docker-registry, the CNCF distribution registry), one
//! behind htpasswd authentication and one open, and run from Plugin objects by a host with
//! `--require-pins`: pulled with the credentials of a Secret of its namespace, pinned by
//! digest, cached by digest (so a pinned plugin loads with its registry gone), and refused
//! when its reference is unpinned or its bytes in the registry were tampered with; a plugin
//! given another number of workers is replaced, not swapped.

use crate::common;
use crate::plugin_objects::{Replica, condition, kubectl};

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;
use wasmcm_test_support::registry::Registry;

fn push(file: &Path, reference: &str, docker_config: &Path) -> Output {
    common::host_command()
        .args(["plugins", "push"])
        .arg(file)
        .arg(reference)
        .arg("--cache-dir")
        .arg(common::precompiled_dir())
        .env("DOCKER_CONFIG", docker_config)
        .output()
        .expect("the binary runs")
}

/// `wasmcm plugins push`, which must succeed: the pinned reference it prints.
fn pushed(file: &Path, reference: &str, docker_config: &Path) -> String {
    let out = push(file, reference, docker_config);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "wasmcm plugins push {reference}: {stderr}");
    let pinned = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(pinned.starts_with(&format!("{reference}@sha256:")), "{pinned:?}; {stderr}");
    pinned
}

fn plugin_object(name: &str, reference: &str) -> String {
    format!(
        "apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {{name: {name}}}\nspec:\n  source: {{oci: \"{reference}\"}}\n"
    )
}

/// Waits up to 120 s for `done` to hold of Plugin `name`.
fn until(kubeconfig: &Path, name: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = wasmcm_test_support::kubectl(kubeconfig, &["get", "plugin", name, "-o", "json"], None);
        let object: Option<Value> = out.status.success().then(|| serde_json::from_slice(&out.stdout).expect("JSON"));
        if let Some(o) = object.as_ref().filter(|o| done(o)) {
            return o.clone();
        }
        assert!(Instant::now() < deadline, "{name}: {what}: not within 120 s: {object:#?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Degraded with `reason`, the message saying `says`.
fn refused(kubeconfig: &Path, name: &str, reason: &str, says: &str) {
    let object = until(kubeconfig, name, reason, |o| condition(o, "Degraded")["reason"] == reason);
    let message = condition(&object, "Degraded")["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains(says), "{name}: {message:?} should say {says:?}: {object:#}");
    assert_eq!(object["status"]["state"], "Degraded", "{object:#}");
}

#[test]
fn a_pushed_plugin_is_pulled_pinned_and_run_and_a_tampered_or_unpinned_reference_is_refused() {
    let secured = Registry::start(true);
    let open = Registry::start(false);
    let dir = tempfile::tempdir().unwrap();
    let stamp = common::guest("wasmcm_stamp.wasm");
    let original = std::fs::read(&stamp).unwrap();
    let (no_credentials, docker_config) = (dir.path().join("anonymous"), dir.path().join("docker"));
    std::fs::create_dir_all(&no_credentials).unwrap();
    std::fs::create_dir_all(&docker_config).unwrap();
    let auth = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", secured.username(), secured.password()))
    };
    let config = serde_json::json!({"auths": {secured.address(): {"auth": auth}}});
    std::fs::write(docker_config.join("config.json"), config.to_string()).unwrap();

    // Publishing: refused without credentials, said as the registry says it; pinned with them.
    let reference = format!("{}/team/stamp:1.0.0", secured.address());
    let denied = push(&stamp, &reference, &no_credentials);
    let stderr = String::from_utf8_lossy(&denied.stderr);
    assert_eq!(denied.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("401") || stderr.to_lowercase().contains("unauthorized"), "{stderr}");
    let pinned = pushed(&stamp, &reference, &docker_config);
    // The same bytes make the same artifact, wherever they are pushed.
    let copy = pushed(&stamp, &format!("{}/team/stamp:1.0.0", open.address()), &no_credentials);
    assert_eq!(pinned.rsplit_once('@').unwrap().1, copy.rsplit_once('@').unwrap().1);
    // A second release to tamper with: the registry's stored layer gets one byte changed.
    let v2 = wasmcm_stamp::variant(&original, "v2", "2.0.0").expect("the markers are in the component");
    let v2_file = dir.path().join("stamp-v2.wasm");
    std::fs::write(&v2_file, &v2).unwrap();
    let tampered = pushed(&v2_file, &format!("{}/team/tampered:2.0.0", open.address()), &no_credentials);
    let blob = open.blob_path(&format!("sha256:{}", common::sha256(&v2)));
    let mut stored = std::fs::read(&blob).unwrap_or_else(|e| panic!("{}: {e}", blob.display()));
    assert_eq!(stored, v2, "the registry stores the layer as pushed");
    let last = stored.len() - 1;
    stored[last] ^= 0xff;
    std::fs::write(&blob, &stored).unwrap();

    // A host that pulls with the Secret's credentials and refuses what is not pinned. It shares
    // the tests' cache (compiled plugins, and pulled ones under oci/), which an earlier run left
    // the untampered release in: that goes, so this run's pull meets the tampered bytes.
    let pulled = common::precompiled_dir().join("oci").join("sha256");
    for digest in [tampered.rsplit_once("@sha256:").unwrap().1.to_string(), common::sha256(&v2)] {
        let _ = std::fs::remove_file(pulled.join(digest));
    }
    let args = ["--leader-elect=false", "--require-pins", "--registry-secrets", "plugin-registry"];
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    let host = Replica::start(dir.path(), &args);
    let kubeconfig = host.kubeconfig.clone().expect("the try line");
    let secret = [
        "create",
        "secret",
        "docker-registry",
        "plugin-registry",
        "-n",
        "wasmcm",
        &format!("--docker-server={}", secured.address()),
        &format!("--docker-username={}", secured.username()),
        &format!("--docker-password={}", secured.password()),
    ];
    kubectl(&kubeconfig, &secret, None);
    let applied = Instant::now();
    kubectl(&kubeconfig, &["apply", "-f", "-"], Some(&plugin_object("stamp", &pinned)));
    let configmap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stamped, namespace: default, labels: {wasmcm.dev/stamp: \"\"}}\n";
    kubectl(&kubeconfig, &["apply", "-f", "-"], Some(configmap));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let data = kubectl(&kubeconfig, &["get", "configmap", "stamped", "-o", "jsonpath={.data}"], None);
        if data.contains("v1") {
            break;
        }
        if Instant::now() > deadline {
            let status = kubectl(&kubeconfig, &["get", "plugin", "stamp", "-o", "yaml"], None);
            panic!("the pulled plugin did not reconcile: {data:?}\n{status}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("kubectl apply of an OCI Plugin to its first reconcile: {:.2} s", applied.elapsed().as_secs_f64());
    let ready = until(&kubeconfig, "stamp", "Ready", |o| o["status"]["state"] == "Ready");
    assert_eq!(ready["status"]["digest"], format!("sha256:{}", common::sha256(&original)), "{ready:#}");
    assert_eq!(ready["status"]["source"], format!("oci://{pinned}"), "{ready:#}");

    // Unpinned under --require-pins; tampered in the registry.
    let unpinned = format!("{}/team/stamp:1.0.0", open.address());
    kubectl(&kubeconfig, &["apply", "-f", "-"], Some(&plugin_object("unpinned", &unpinned)));
    refused(&kubeconfig, "unpinned", "NotTrusted", "--require-pins");
    kubectl(&kubeconfig, &["apply", "-f", "-"], Some(&plugin_object("tampered", &tampered)));
    refused(&kubeconfig, "tampered", "DigestMismatch", "sha256");

    // `wasmcm plugins list` reads the same status, a line per replica.
    let list = common::host_command()
        .args(["plugins", "list", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .expect("the binary runs");
    let table = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success(), "{table}{}", String::from_utf8_lossy(&list.stderr));
    eprintln!("wasmcm plugins list --kubeconfig:\n{table}");
    let digest = common::sha256(&original);
    let row = |name: &str| table.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_default().to_string();
    assert!(row("stamp").contains(" Ready ") && row("stamp").contains(&digest[..12]), "{table}");
    assert!(row("tampered").contains(" Degraded "), "{table}");
    let replica = table.lines().skip_while(|l| !l.starts_with("stamp ")).nth(1).unwrap_or_default();
    assert!(
        replica.starts_with("  wasmcm-") && replica.contains(" Ready ") && replica.contains("reconciles="),
        "{table}"
    );

    // Another number of workers: the running plugin is replaced (stopped, started), not offered
    // a new version, and goes on reconciling.
    let count = || {
        let count = kubectl(&kubeconfig, &["get", "configmap", "stamped", "-o", "jsonpath={.data.count}"], None);
        count.trim().parse::<u64>().unwrap_or(0)
    };
    kubectl(
        &kubeconfig,
        &["patch", "plugin", "stamp", "--type", "merge", "-p", r#"{"spec":{"limits":{"workers":2}}}"#],
        None,
    );
    until(&kubeconfig, "stamp", "replaced", |o| {
        let acted = o["status"]["replicas"].as_array().is_some_and(|r| r.iter().all(|r| r["observedGeneration"] == 2));
        acted && o["status"]["state"] == "Ready"
    });
    let before = count();
    let deadline = Instant::now() + Duration::from_secs(120);
    while count() <= before {
        assert!(Instant::now() < deadline, "the replaced plugin does not reconcile");
        std::thread::sleep(Duration::from_millis(200));
    }

    // Pulled once, pinned: it loads again with its registry gone.
    drop(secured);
    kubectl(&kubeconfig, &["delete", "plugin", "stamp"], None);
    let deadline = Instant::now() + Duration::from_secs(120);
    while common::sample(&host.metrics(), "wasmcm_plugin_info", &["plugin=\"stamp\""]).is_some() {
        assert!(Instant::now() < deadline, "the deleted plugin still runs");
        std::thread::sleep(Duration::from_millis(100));
    }
    kubectl(&kubeconfig, &["apply", "-f", "-"], Some(&plugin_object("stamp", &pinned)));
    let again = until(&kubeconfig, "stamp", "Ready from the cache", |o| o["status"]["state"] == "Ready");
    assert_eq!(again["status"]["digest"], ready["status"]["digest"], "{again:#}");
}
