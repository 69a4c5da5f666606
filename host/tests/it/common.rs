//! Shared setup for the host's integration tests, beyond what every crate's tests share
//! (`wasmcm-test-support`, re-exported here).

pub use wasmcm_test_support::{
    PATIENCE, cluster, config, eventually, helm_path, kubectl_path, token_client, workspace_root,
};

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use wasmcm::{Engine, EngineConfig, Limits, Plugin};

/// One engine per test binary, with a precompiled cache shared by all test binaries so each
/// component is compiled once per build.
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        Engine::new(&EngineConfig { precompiled_dir: Some(precompiled_dir()), ..EngineConfig::default() })
            .expect("engine starts")
    })
}

pub fn precompiled_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("precompiled")
}

pub fn guest(file: &str) -> PathBuf {
    PathBuf::from(env!("WASMCM_GUEST_DIR")).join(file)
}

pub fn replicaset() -> Arc<Plugin> {
    static P: OnceLock<Arc<Plugin>> = OnceLock::new();
    P.get_or_init(|| {
        let bytes = wasmcm::builtin::get("replicaset").expect("built in");
        Arc::new(engine().load("replicaset", bytes, Limits::default()).expect("replicaset loads"))
    })
    .clone()
}

/// The hostile test guest with tight limits, so misbehaviour is caught quickly.
pub fn hostile() -> Arc<Plugin> {
    static P: OnceLock<Arc<Plugin>> = OnceLock::new();
    P.get_or_init(|| {
        let limits = Limits { memory_bytes: 64 << 20, deadline: Duration::from_millis(300) };
        Arc::new(engine().load_file(&guest("wasmcm_hostile.wasm"), limits).expect("hostile guest loads"))
    })
    .clone()
}

/// The hostile test guest with room for huge outcomes in its memory, so that it is the host,
/// not the memory limit, that refuses them.
pub fn hostile_roomy() -> Arc<Plugin> {
    static P: OnceLock<Arc<Plugin>> = OnceLock::new();
    P.get_or_init(|| {
        let limits = Limits { memory_bytes: 512 << 20, deadline: Duration::from_secs(10) };
        Arc::new(engine().load_file(&guest("wasmcm_hostile.wasm"), limits).expect("hostile guest loads"))
    })
    .clone()
}

/// A built-in plugin loaded once per test binary, or `None` when this build does not ship it
/// (so a test can depend on a plugin that is still being written).
pub fn builtin(name: &str) -> Option<Arc<Plugin>> {
    static LOADED: OnceLock<std::sync::Mutex<std::collections::HashMap<String, Arc<Plugin>>>> = OnceLock::new();
    let bytes = wasmcm::builtin::get(name)?;
    let mut loaded = LOADED.get_or_init(Default::default).lock().unwrap();
    let plugin = loaded.entry(name.to_string()).or_insert_with(|| {
        Arc::new(engine().load(name, bytes, Limits::default()).unwrap_or_else(|e| panic!("{name} loads: {e}")))
    });
    Some(plugin.clone())
}

/// Prometheus text: the samples of `series` whose labels include every one of `labels`.
fn samples<'a>(text: &'a str, series: &'a str, labels: &'a [&str]) -> impl Iterator<Item = f64> + 'a {
    text.lines()
        .filter(move |l| l.starts_with(series) && l[series.len()..].starts_with(['{', ' ']))
        .filter(move |l| labels.iter().all(|want| l.contains(want)))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
}

/// The first such sample, if any.
pub fn sample(text: &str, series: &str, labels: &[&str]) -> Option<f64> {
    samples(text, series, labels).next()
}

/// The sum of such samples (0 when there are none).
pub fn metric(text: &str, series: &str, labels: &[&str]) -> f64 {
    samples(text, series, labels).sum()
}

pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// `web`, a Deployment or a ReplicaSet (they share this shape): `replicas` pods of `image`
/// labelled app=web.
pub fn web<K: serde::de::DeserializeOwned>(replicas: i32, image: &str) -> K {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": image}]}}},
    }))
    .expect("a workload")
}

/// Pods labelled app=web, not being deleted, and how many of them are ready.
pub async fn web_pods(admin: &kube::Client) -> Option<(usize, usize)> {
    let listed = kube::Api::<k8s_openapi::api::core::v1::Pod>::namespaced(admin.clone(), "default")
        .list(&kube::api::ListParams::default().labels("app=web"))
        .await
        .ok()?;
    let live: Vec<&k8s_openapi::api::core::v1::Pod> =
        listed.items.iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
    let ready = live
        .iter()
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .count();
    Some((live.len(), ready))
}

/// A file of deploy/manifests.
pub fn manifest(file: &str) -> PathBuf {
    workspace_root().join("deploy/manifests").join(file)
}

/// The RBAC objects of deploy/manifests, in order: the namespace, the ServiceAccount
/// wasmcm/wasmcm, the host's ClusterRole (reads) and its binding, the Role for leases,
/// ConfigMaps and impersonating the plugins, and its binding, and each built-in plugin's
/// ServiceAccount, ClusterRole and binding.
pub const RBAC_MANIFESTS: [&str; 7] = [
    "00-namespace.yaml",
    "01-serviceaccount.yaml",
    "02-clusterrole.yaml",
    "03-clusterrolebinding.yaml",
    "04-role.yaml",
    "05-rolebinding.yaml",
    "06-plugin-identities.yaml",
];

/// The plugin manifest of deploy/manifests' ConfigMap wasmcm-plugins, written out as the pod's
/// volume mount /etc/wasmcm/plugins.
pub fn plugins_dir() -> tempfile::TempDir {
    let text = std::fs::read_to_string(manifest("07-configmap-plugins.yaml")).unwrap();
    let config_map: k8s_openapi::api::core::v1::ConfigMap = serde_saphyr::from_str(&text).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (file, content) in config_map.data.expect("the plugin manifest") {
        std::fs::write(dir.path().join(file), content).unwrap();
    }
    dir
}

/// `version` with its manifest entry as deploy/manifests' ConfigMap gives it (its
/// `serviceAccount` and scope), so that it writes as that plugin's own ServiceAccount.
pub fn as_deployed(version: wasmcm::Version) -> wasmcm::Version {
    let dir = plugins_dir();
    let (specs, errors) = wasmcm::resolve_plugins(&[dir.path().to_path_buf()], "wasmcm");
    assert!(errors.is_empty(), "{errors:?}");
    let name = version.name().to_string();
    let spec = specs.into_iter().find(|s| s.name == name).unwrap_or_else(|| panic!("{name} in the ConfigMap"));
    wasmcm::Version { spec, ..version }
}

/// A host as deploy/manifests run it: a client of the ServiceAccount wasmcm/wasmcm (whose
/// ClusterRole only reads), and a configuration with which each plugin given
/// [`as_deployed`] writes by impersonating its own ServiceAccount.
pub struct Deployed {
    pub client: kube::Client,
    /// What `client` is made of, for `Host::start`.
    pub kube_config: kube::Config,
    pub config: wasmcm::HostConfig,
}

/// The identities of deploy/manifests: its RBAC objects applied (with the real kubectl) and a
/// host running as them. End-to-end tests run their hosts so, and so prove the ClusterRoles
/// sufficient.
pub async fn service_account(cluster: &wasmcm_apiserver::Cluster) -> Deployed {
    kubectl_apply(&cluster.kubeconfig, &RBAC_MANIFESTS);
    as_host(cluster).await
}

/// A host acting as the ServiceAccount wasmcm/wasmcm in namespace wasmcm, whatever RBAC is in
/// place.
pub async fn as_host(cluster: &wasmcm_apiserver::Cluster) -> Deployed {
    let token = cluster.service_account_token("wasmcm", "wasmcm").expect("a token");
    let path = cluster.kubeconfig_for_token(&token).expect("a kubeconfig");
    let kubeconfig = kube::config::Kubeconfig::read_from(path).expect("the kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("a config");
    let client = kube::Client::try_from(config.clone()).expect("a client");
    let mut host = wasmcm::HostConfig::default();
    host.controller.host = wasmcm::HostIdentity { namespace: Some("wasmcm".into()), ..Default::default() };
    Deployed { client, kube_config: config, config: host }
}

/// `kubectl apply -f` of each of `files` (of deploy/manifests) with `kubeconfig`, off the async
/// workers (the cluster serves on them; needs a multi-thread runtime). Fails the test on error.
pub fn kubectl_apply(kubeconfig: &std::path::Path, files: &[&str]) {
    tokio::task::block_in_place(|| {
        let paths: Vec<String> = files.iter().map(|f| manifest(f).display().to_string()).collect();
        let mut args = vec!["apply"];
        for p in &paths {
            args.extend(["-f", p.as_str()]);
        }
        let out = wasmcm_test_support::kubectl(kubeconfig, &args, None);
        assert!(
            out.status.success(),
            "kubectl apply {files:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    })
}

/// The first Event matching the field selector `fields` (in `namespace`, or in all), once there
/// is one.
pub async fn event(client: &kube::Client, namespace: Option<&str>, fields: &str) -> k8s_openapi::api::core::v1::Event {
    let events: kube::Api<k8s_openapi::api::core::v1::Event> = match namespace {
        Some(ns) => kube::Api::namespaced(client.clone(), ns),
        None => kube::Api::all(client.clone()),
    };
    eventually(&format!("an Event with {fields}"), || async {
        events.list(&kube::api::ListParams::default().fields(fields)).await.ok()?.items.into_iter().next()
    })
    .await
}

/// A ClusterRole `name` of `rules`, bound to the ServiceAccount `namespace/account`.
pub async fn grant(admin: &kube::Client, name: &str, rules: serde_json::Value, (namespace, account): (&str, &str)) {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let post = kube::api::PostParams::default();
    let role: ClusterRole =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "rules": rules})).expect("a ClusterRole");
    kube::Api::<ClusterRole>::all(admin.clone()).create(&post, &role).await.expect("the ClusterRole is created");
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "namespace": namespace, "name": account}],
    }))
    .expect("a ClusterRoleBinding");
    kube::Api::<ClusterRoleBinding>::all(admin.clone()).create(&post, &binding).await.expect("the binding is created");
}

/// A plain HTTP GET of the host's admin endpoint (metrics, health): the status and whole answer.
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let code = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, out)
}

/// What a run of the `wasmcm` binary printed, and its exit code.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A PluginList that turns the built-ins off, but those in `except`: the manifest of a host that
/// runs only what a test gives it (further items may follow).
pub fn builtins_off(except: &[&str]) -> String {
    let mut list = String::from("apiVersion: wasmcm.dev/v1alpha1\nkind: PluginList\nitems:\n");
    for builtin in ["replicaset", "deployment", "rollback", "job", "cronjob", "ttlafterfinished"] {
        if !except.contains(&builtin) {
            list += &format!(
                "- metadata: {{name: {builtin}}}\n  spec: {{source: {{builtin: {builtin}}}, enabled: false}}\n"
            );
        }
    }
    list
}

/// `wasmcm run`'s binary, deaf to what in the tester's environment would point it at another
/// cluster, namespace or other plugins than the test names (an in-cluster CI runner, a
/// developer's exports).
pub fn host_command() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_wasmcm"));
    for var in ["KUBERNETES_SERVICE_HOST", "WASMCM_KUBECONFIG", "WASMCM_PLUGINS", "WASMCM_NAMESPACE", "POD_NAMESPACE"] {
        cmd.env_remove(var);
    }
    cmd
}

/// `wasmcm run` as deploy/manifests' pod runs it, with in-cluster credentials only: what the
/// kubelet mounts (a token of the ServiceAccount wasmcm/wasmcm, the CA, the namespace) written to
/// `dir` (`WASMCM_SERVICEACCOUNT_DIR`), the plugin manifest `plugins` (the ConfigMap's volume),
/// the Lease in `wasmcm` under the identity `pod`, the log (wasmcm's at debug) to `log`.
pub fn in_cluster_host(
    cluster: &wasmcm_apiserver::Cluster,
    dir: &Path,
    plugins: &Path,
    pod: &str,
    log: &Path,
) -> Child {
    let token = cluster.service_account_token("wasmcm", "wasmcm").expect("a token");
    std::fs::write(dir.join("token"), &token).unwrap();
    std::fs::write(dir.join("ca.crt"), cluster.ca_pem.as_deref().expect("a TLS cluster")).unwrap();
    std::fs::write(dir.join("namespace"), "wasmcm").unwrap();
    host_command()
        .arg("--cache-dir")
        .arg(precompiled_dir())
        .arg("run")
        .arg("--plugins")
        .arg(plugins)
        .args(["--leader-elect-resource-namespace", "wasmcm", "--metrics-bind-address", "127.0.0.1:0"])
        .env_remove("KUBECONFIG")
        .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        .env("KUBERNETES_SERVICE_PORT", cluster.addr.port().to_string())
        .env("WASMCM_SERVICEACCOUNT_DIR", dir)
        .env("POD_NAME", pod)
        .env("RUST_LOG", "warn,wasmcm=debug")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("wasmcm runs")
}

/// The `wasmcm` binary with `args`, sharing the tests' precompiled cache, logs off.
pub fn wasmcm(args: &[&str]) -> Run {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wasmcm"))
        .args(args)
        .env("WASMCM_CACHE_DIR", precompiled_dir())
        .env("RUST_LOG", "off")
        .output()
        .expect("the binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    }
}

/// Where the tests build plugin crates kept outside the workspace (the example, scaffolds):
/// shared, so reruns and other tests reuse their compiled dependencies.
pub fn plugins_target() -> PathBuf {
    workspace_root().join("target/plugins")
}

/// Cargo in the plugin crate `dir` as its author runs it (the rustup proxy on PATH, so the
/// crate's rust-toolchain.toml applies), building into [`plugins_target`], without what this
/// test's own build put in the environment (as host/build.rs keeps it from the guests').
pub fn plugin_cargo(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new("cargo");
    cmd.current_dir(dir).args(args).env("CARGO_TARGET_DIR", plugins_target());
    as_an_author(&mut cmd).output().expect("cargo runs")
}

/// `cmd` without what this test's own build put in the environment, which would steer an
/// author's cargo (as host/build.rs keeps it from the guests').
pub fn as_an_author(cmd: &mut std::process::Command) -> &mut std::process::Command {
    for var in [
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "RUSTC",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
        "RUSTUP_TOOLCHAIN",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// The embedded cluster and an in-process host running built-in plugins as deploy/manifests'
/// identities (so each scenario also proves their ClusterRoles sufficient), with the real
/// kubectl pointed at it: the bed of the Deployment, Job and CronJob tests, which add their
/// kind's helpers on top. Stops the host, then the cluster, when dropped.
pub struct Bed {
    pub kubeconfig: PathBuf,
    kubectl: PathBuf,
    pub client: kube::Client,
    pub metrics: Arc<wasmcm::Metrics>,
    host: Option<wasmcm::Host>,
    cluster: Option<wasmcm_apiserver::Cluster>,
    pub runtime: tokio::runtime::Runtime,
}

impl Bed {
    /// `config`'s cluster (its clock is the host's controllers' too) and a host running
    /// `plugins`.
    pub fn start(config: wasmcm_apiserver::ClusterConfig, plugins: Vec<wasmcm::Version>) -> Bed {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap();
        let metrics = Arc::new(wasmcm::Metrics::default());
        let clock = config.clock;
        let (cluster, client, host) = runtime.block_on(async {
            let cluster = wasmcm_apiserver::Cluster::start(config).await.expect("cluster starts");
            let client = wasmcm_test_support::client(&cluster.kubeconfig).await;
            let mut deployed = service_account(&cluster).await;
            deployed.config.controller.clock = clock;
            let plugins = plugins.into_iter().map(as_deployed).collect();
            let host = wasmcm::Host::start(deployed.kube_config, plugins, deployed.config, metrics.clone())
                .await
                .expect("host starts");
            (cluster, client, host)
        });
        Bed {
            kubeconfig: cluster.kubeconfig.clone(),
            kubectl: kubectl_path(),
            client,
            metrics,
            host: Some(host),
            cluster: Some(cluster),
            runtime,
        }
    }

    /// kubectl with `args`, `stdin` written to it.
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> std::process::Output {
        use std::io::Write;
        let mut child = std::process::Command::new(&self.kubectl)
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            // kubectl's discovery cache goes under $HOME: one per cluster.
            .env("HOME", self.kubeconfig.parent().expect("the kubeconfig is in the cluster's directory"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        if let Some(text) = stdin {
            child.stdin.take().expect("piped").write_all(text.as_bytes()).expect("kubectl reads its input");
        }
        drop(child.stdin.take());
        child.wait_with_output().expect("kubectl finishes")
    }

    /// Runs kubectl and returns stdout; fails the test with stderr on a non-zero exit.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args, None);
        assert!(out.status.success(), "kubectl {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl <args> -o json`.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&args)).expect("kubectl -o json prints JSON")
    }

    /// `kubectl apply -f -` of `object`, which must succeed.
    pub fn apply(&self, object: &serde_json::Value) {
        let out = self.run(&["apply", "-f", "-"], Some(&object.to_string()));
        assert!(out.status.success(), "kubectl apply: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Polls `f` (each poll runs kubectl: five a second at most) until it returns `Some`; after
    /// `timeout`, fails the test with what `kubectl describe <describe>` says.
    pub fn eventually<T>(
        &self,
        what: &str,
        timeout: Duration,
        describe: &[&str],
        mut f: impl FnMut() -> Option<T>,
    ) -> T {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(v) = f() {
                return v;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}\n{}",
                self.ok(&[&["describe"], describe].concat())
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        // Bounded, so a test that already failed cannot hang here as well.
        let (host, cluster) = (self.host.take(), self.cluster.take());
        self.runtime.block_on(async {
            if let Some(host) = host {
                let _ = tokio::time::timeout(Duration::from_secs(10), host.shutdown()).await;
            }
            if let Some(cluster) = cluster {
                let _ = tokio::time::timeout(Duration::from_secs(10), cluster.shutdown()).await;
            }
        });
    }
}

/// The `items` of a list kubectl printed.
pub fn items(list: serde_json::Value) -> Vec<serde_json::Value> {
    list.get("items").and_then(serde_json::Value::as_array).cloned().unwrap_or_default()
}
