//! A plugin's default reach, end to end: `wasmcm run` (the real binary, outside a pod, with a
//! kubeconfig) on the embedded cluster, running the hostile test guest under a manifest that
//! grants it nothing. Its keys in kube-system are left alone, and it can run no pod as a
//! foreign ServiceAccount (not a Pod, not a Deployment's template) nor a privileged one; each
//! refusal is in the host's log or an event naming the rule. And a host outside a pod has a
//! namespace of its own (the kubeconfig context's, else `wasmcm`) which, with its Leases, no
//! plugin writes, whether or not the host elects a leader.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Pod, ServiceAccount};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

/// A `wasmcm run` process, killed when dropped, its log collected.
struct HostProcess {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
    _state: tempfile::TempDir,
}

impl HostProcess {
    /// `wasmcm run --kubeconfig <kubeconfig> --plugins <plugins> <args>`, as outside a pod.
    fn start(kubeconfig: &Path, plugins: &Path, args: &[&str]) -> Self {
        let state = tempfile::tempdir().unwrap();
        let mut child = common::host_command()
            .arg("--cache-dir")
            .arg(common::precompiled_dir())
            .args(["run", "--kubeconfig"])
            .arg(kubeconfig)
            .arg("--plugins")
            .arg(plugins)
            .args(["--metrics-bind-address", "127.0.0.1:0", "--admin-token-file"])
            .arg(state.path().join("admin-token"))
            .args(args)
            .env("RUST_LOG", "warn,wasmcm=info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wasmcm runs");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (sink, pipe) = (log.clone(), child.stderr.take().expect("piped"));
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        HostProcess { child, log, _state: state }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).join("\n")
    }

    /// Waits for a line of the log containing `what`.
    async fn logged(&self, what: &str) -> String {
        common::eventually(&format!("the host to log {what:?}"), || async {
            self.log().lines().find(|l| l.contains(what)).map(String::from)
        })
        .await
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory holding a manifest that runs the hostile guest as plugin `hostile`, with `scope`.
fn hostile_manifest(scope: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let manifest = format!(
        "apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {{name: hostile}}\nspec:\n  source: {{file: {}}}\n  \
         limits: {{memory: 64Mi, deadline: 300ms}}\n{scope}",
        common::guest("wasmcm_hostile.wasm").display()
    );
    std::fs::write(dir.path().join("hostile.yaml"), manifest).unwrap();
    dir
}

async fn create_namespace(client: &kube::Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
}

/// The hostile plugin's key `namespace/name`: a ConfigMap.
async fn key(client: &kube::Client, namespace: &str, name: &str) {
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), namespace).create(&PostParams::default(), &cm).await.unwrap();
}

/// The message of the WriteRefused event on the key `namespace/name`, once there is one, or
/// `None` once `written` says the refused object was written after all.
async fn refused<F, Fut>(client: &kube::Client, namespace: &str, name: &str, written: F) -> Option<String>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let fields = format!("reason=WriteRefused,involvedObject.name={name}");
    common::eventually(&format!("the key {namespace}/{name} to be refused"), || async {
        if written().await {
            return Some(None);
        }
        let listed = events.list(&ListParams::default().fields(&fields)).await.ok()?;
        listed.items.into_iter().next().map(|e| Some(e.message.unwrap_or_default()))
    })
    .await
}

async fn exists<K>(api: &Api<K>, name: &str) -> bool
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.ok().flatten().is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_reaches_no_system_namespace_foreign_account_or_privileged_pod_by_default() {
    let (cluster, client) = common::cluster().await;
    let plugins = hostile_manifest("");
    let host = HostProcess::start(&cluster.kubeconfig, plugins.path(), &["--leader-elect=false"]);

    // What it may do, it does: a plain pod in an ordinary namespace.
    key(&client, "default", "plain-pod").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    common::eventually("the plain pod in default", || async { exists(&pods, "plain").await.then_some(()) }).await;

    // Its keys in kube-system are not its to reconcile: nothing is written there.
    key(&client, "kube-system", "plain-pod").await;
    key(&client, "kube-system", "pod-as-clusterrole-aggregation-controller").await;
    let system_pods: Api<Pod> = Api::namespaced(client.clone(), "kube-system");
    let line = common::eventually("kube-system to be passed over, or written", || async {
        if exists(&system_pods, "plain").await || exists(&system_pods, "as-account").await {
            return Some(Err(()));
        }
        let log = host.log();
        log.lines().find(|l| l.contains("not reconciled: namespace \"kube-system\"")).map(|l| Ok(l.to_string()))
    })
    .await
    .unwrap_or_else(|()| panic!("the plugin created a pod in kube-system:\n{}", host.log()));
    assert!(
        line.contains(
            "is a system namespace, which the default scope withholds and the manifest does not grant \
                       (scope.grant: [kube-system])"
        ),
        "{line}"
    );

    // In its own namespace, no pod or pod template as a foreign account, and no privileged pod.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let account = "clusterrole-aggregation-controller";
    key(&client, "default", &format!("pod-as-{account}")).await;
    let message = refused(&client, "default", &format!("pod-as-{account}"), || exists(&pods, "as-account"))
        .await
        .unwrap_or_else(|| panic!("a pod runs as {account}"));
    assert!(
        message.contains(&format!(
            "create v1/Pod default/as-account refused: spec.serviceAccountName \"{account}\": the pod would run as \
             that ServiceAccount, which the manifest does not allow (scope.serviceAccounts: [default])"
        )),
        "{message}"
    );
    key(&client, "default", &format!("template-as-{account}")).await;
    let message = refused(&client, "default", &format!("template-as-{account}"), || exists(&deployments, "as-account"))
        .await
        .unwrap_or_else(|| panic!("a Deployment's pods would run as {account}"));
    assert!(message.contains(&format!("spec.template.spec.serviceAccountName \"{account}\"")), "{message}");
    key(&client, "default", "privileged-pod").await;
    let message = refused(&client, "default", "privileged-pod", || exists(&pods, "privileged"))
        .await
        .expect("a privileged pod runs");
    assert!(
        message.contains(
            "the pod violates PodSecurity \"baseline:latest\" (scope.podSecurity): privileged (container \"c\" must \
             not set securityContext.privileged=true)"
        ),
        "{message}"
    );
    // And the host's log says it too.
    host.logged("refused: spec.serviceAccountName").await;

    assert!(!exists(&system_pods, "plain").await && !exists(&system_pods, "as-account").await);
    let names: Vec<String> =
        pods.list(&ListParams::default()).await.unwrap().items.into_iter().filter_map(|p| p.metadata.name).collect();
    assert_eq!(names, ["plain"], "only the plain pod runs");
    assert!(!exists(&deployments, "as-account").await);
}

/// Keys `namespace/lease-<name>` for each of the host's Leases (leader, shard, member) and an
/// ordinary one; waits until the ordinary one is written and each of the host's refused.
async fn leases_refused(client: &kube::Client, host: &HostProcess, namespace: &str) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    key(client, namespace, "lease-other").await;
    common::eventually("the ordinary Lease", || async { exists(&leases, "other").await.then_some(()) }).await;
    for name in ["wasmcm", "wasmcm-shard-0", "wasmcm-member-x"] {
        key(client, namespace, &format!("lease-{name}")).await;
        let taken = || async {
            let lease = leases.get_opt(name).await.ok().flatten();
            lease.and_then(|l| l.spec?.holder_identity).as_deref() == Some("hostile")
        };
        let message = refused(client, namespace, &format!("lease-{name}"), taken)
            .await
            .unwrap_or_else(|| panic!("the plugin took the Lease {namespace}/{name}:\n{}", host.log()));
        assert!(
            message.contains(&format!("Lease {namespace}/{name} is the host's leader or shard lease")),
            "{message}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_a_pod_the_host_keeps_its_namespace_and_leases_from_plugins() {
    let (cluster, client) = common::cluster().await;
    // The host's namespace and account, as deploy/manifests make them.
    create_namespace(&client, "wasmcm").await;
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "wasmcm"}})).unwrap();
    Api::<ServiceAccount>::namespaced(client.clone(), "wasmcm").create(&PostParams::default(), &account).await.unwrap();
    // Granted the Leases' namespace, so that it is the Leases themselves that are refused.
    let plugins = hostile_manifest("  scope: {grant: [kube-system]}\n");

    // No leader election: the host holds no Lease, but they are its group's all the same.
    let host = HostProcess::start(&cluster.kubeconfig, plugins.path(), &["--leader-elect=false"]);
    host.logged("the host's namespace: wasmcm").await;
    key(&client, "wasmcm", "pod-as-wasmcm").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "wasmcm");
    let line = common::eventually("the host's namespace to be passed over, or written", || async {
        if exists(&pods, "as-account").await {
            return Some(Err(()));
        }
        host.log().lines().find(|l| l.contains("not reconciled: namespace \"wasmcm\"")).map(|l| Ok(l.to_string()))
    })
    .await
    .unwrap_or_else(|()| panic!("the plugin runs a pod as the host's account in its namespace:\n{}", host.log()));
    assert!(line.contains("is the host's own"), "{line}");
    leases_refused(&client, &host, "kube-system").await;
    assert!(!exists(&pods, "as-account").await);
    drop(host);

    // The kubeconfig context's namespace is the host's when it names one, with leader election.
    let text = std::fs::read_to_string(&cluster.kubeconfig).unwrap();
    let mut kubeconfig: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    for context in kubeconfig["contexts"].as_array_mut().expect("contexts") {
        context["context"]["namespace"] = json!("team-host");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, serde_json::to_string(&kubeconfig).unwrap()).unwrap();
    create_namespace(&client, "team-host").await;
    let host = HostProcess::start(&path, plugins.path(), &["--leader-elect-resource-namespace", "team-host"]);
    host.logged("the host's namespace: team-host").await;
    key(&client, "team-host", "plain-pod").await;
    host.logged("not reconciled: namespace \"team-host\" is the host's own").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "team-host");
    assert!(!exists(&pods, "plain").await);
    // Its Leases are in its own namespace here, which the manifest does not grant; granted, they
    // are refused by name.
    drop(host);
    let plugins = hostile_manifest("  scope: {hostNamespace: true}\n");
    let host = HostProcess::start(&path, plugins.path(), &["--leader-elect-resource-namespace", "team-host"]);
    host.logged("the host's namespace: team-host").await;
    leases_refused(&client, &host, "team-host").await;
}
