//! Server-side apply and managed fields, with kube-rs (`Patch::Apply`), the real kubectl
//! (`apply --server-side`, `--force-conflicts`) and the real helm (v4 installs and upgrades by
//! server-side apply), against kube-apiserver's behaviour: apply-create, merge by the schema's
//! list keys, conflicts naming the manager and field, force, removal of fields no longer
//! applied, and ownership taken by updates.

use std::process::Output;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

fn web(replicas: i64, containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}},
    })
}

fn apply_as(manager: &str) -> PatchParams {
    PatchParams::apply(manager)
}

/// The managers and operations of `d`'s managedFields, and whether each owns `path`
/// (fieldsV1 keys, e.g. `["f:spec", "f:replicas"]`).
fn owners(d: &Deployment, path: &[&str]) -> Vec<(String, String)> {
    d.metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|e| {
            let mut node = e.fields_v1.as_ref().map(|f| &f.0).unwrap_or(&Value::Null);
            path.iter().all(|p| match node.get(*p) {
                Some(next) => {
                    node = next;
                    true
                }
                None => false,
            })
        })
        .map(|e| (e.manager.clone().unwrap_or_default(), e.operation.clone().unwrap_or_default()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_creates_merges_by_key_conflicts_and_forces_as_kube_apiserver() {
    let (_cluster, client) = wasmcm_test_support::cluster().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");

    // Apply-create, then a second manager adds a container of its own: merged by name.
    let first = web(3, json!([{"name": "a", "image": "a:1"}]));
    let d = deployments.patch("web", &apply_as("first"), &Patch::Apply(&first)).await.unwrap();
    assert_eq!(owners(&d, &["f:spec", "f:replicas"]), [("first".to_string(), "Apply".to_string())]);
    let sidecar = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:1"}]}}}});
    let d = deployments.patch("web", &apply_as("second"), &Patch::Apply(&sidecar)).await.unwrap();
    let names: Vec<String> = d.spec.template.spec.as_ref().unwrap().containers.iter().map(|c| c.name.clone()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(d.spec.replicas, Some(3), "what the second leaves out stays");

    // The second wants 5 replicas too (an apply says all a manager wants: its container still):
    // the first owns them.
    let mut scale = sidecar.clone();
    scale["spec"]["replicas"] = json!(5);
    let err = deployments.patch("web", &apply_as("second"), &Patch::Apply(&scale)).await.unwrap_err();
    let kube::Error::Api(status) = err else { panic!("{err:?}") };
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(status.message, "Apply failed with 1 conflict: conflict with \"first\": .spec.replicas");
    // Forced, it takes them over.
    let d = deployments.patch("web", &apply_as("second").force(), &Patch::Apply(&scale)).await.unwrap();
    assert_eq!(d.spec.replicas, Some(5));
    assert_eq!(owners(&d, &["f:spec", "f:replicas"]), [("second".to_string(), "Apply".to_string())]);

    // The first stops applying its container: it goes; the second's stays. Its replicas are
    // the second's now, so they stay too.
    let without = web(5, json!([]));
    let d = deployments.patch("web", &apply_as("first"), &Patch::Apply(&without)).await.unwrap();
    let names: Vec<String> = d.spec.template.spec.as_ref().unwrap().containers.iter().map(|c| c.name.clone()).collect();
    assert_eq!(names, ["b"]);

    // An update takes over what it changes: a merge patch by kubectl-edit of the replicas.
    let edit = PatchParams { field_manager: Some("kubectl-edit".into()), ..PatchParams::default() };
    let d = deployments.patch("web", &edit, &Patch::Merge(json!({"spec": {"replicas": 2}}))).await.unwrap();
    assert_eq!(owners(&d, &["f:spec", "f:replicas"]), [("kubectl-edit".to_string(), "Update".to_string())]);
    let err = deployments.patch("web", &apply_as("second"), &Patch::Apply(&scale)).await.unwrap_err();
    let kube::Error::Api(status) = err else { panic!("{err:?}") };
    assert!(
        status.message.starts_with("Apply failed with 1 conflict: conflict with \"kubectl-edit\" using apps/v1 at "),
        "{}",
        status.message
    );

    // Applying a value equal to another manager's shares the field instead of conflicting.
    let same =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 2}});
    let d = deployments.patch("web", &apply_as("third"), &Patch::Apply(&same)).await.unwrap();
    let mut shared = owners(&d, &["f:spec", "f:replicas"]);
    shared.sort();
    assert_eq!(shared, [("kubectl-edit".into(), "Update".into()), ("third".into(), "Apply".into())]);

    // An apply without a field manager is refused, as upstream.
    let anonymous = PatchParams { field_manager: None, ..PatchParams::default() };
    let err = deployments.patch("web", &anonymous, &Patch::Apply(&same)).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 400 && s.message.contains("fieldManager is required")),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_no_longer_applied_is_removed_unless_another_manager_set_it() {
    let (_cluster, client) = wasmcm_test_support::cluster().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let mut config = web(1, json!([{"name": "a", "image": "a:1"}]));
    config["metadata"]["labels"] = json!({"app": "web", "tier": "front", "team": "x"});
    deployments.patch("web", &apply_as("owner"), &Patch::Apply(&config)).await.unwrap();
    let label = PatchParams { field_manager: Some("labeller".into()), ..PatchParams::default() };
    deployments.patch("web", &label, &Patch::Merge(json!({"metadata": {"labels": {"team": "y"}}}))).await.unwrap();
    config["metadata"]["labels"] = json!({"app": "web"});
    let d = deployments.patch("web", &apply_as("owner"), &Patch::Apply(&config)).await.unwrap();
    let labels = d.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("tier"), None, "owned by the applier alone: removed");
    assert_eq!(labels.get("team").map(String::as_str), Some("y"), "set by another manager since: kept");
}

fn run(kubeconfig: &std::path::Path, program: &std::path::Path, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(program);
    cmd.args(args).env("KUBECONFIG", kubeconfig).env("HOME", kubeconfig.parent().unwrap());
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

const MANIFEST: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1
";

/// kubectl's server-side apply, with a conflict after `kubectl scale` and `--force-conflicts`.
#[test]
fn kubectl_apply_server_side_and_force_conflicts() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (cluster, _client) = runtime.block_on(wasmcm_test_support::cluster());
    let kubectl = wasmcm_test_support::kubectl_path();
    let k = |args: &[&str], stdin: Option<&str>| run(&cluster.kubeconfig, &kubectl, args, stdin);
    let out = k(&["apply", "--server-side", "-f", "-"], Some(MANIFEST));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "deployment.apps/web serverside-applied");
    let out = k(&["scale", "deployment/web", "--replicas=4"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let changed = MANIFEST.replace("replicas: 2", "replicas: 3");
    let out = k(&["apply", "--server-side", "-f", "-"], Some(&changed));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a conflict with the scale");
    assert!(stderr.contains("Apply failed with 1 conflict") && stderr.contains(".spec.replicas"), "{stderr}");
    let out = k(&["apply", "--server-side", "--force-conflicts", "-f", "-"], Some(&changed));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = k(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"], None);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "3");
}

/// Helm 4 installs and upgrades by server-side apply: deploy/'s chart, into a namespace it
/// creates; and uninstalls it.
#[test]
fn helm_installs_and_upgrades_the_chart_by_server_side_apply() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (cluster, _client) = runtime.block_on(wasmcm_test_support::cluster());
    let helm = wasmcm_test_support::helm_path();
    let chart = wasmcm_test_support::workspace_root().join("deploy/helm/wasmcm");
    let chart = chart.to_str().unwrap();
    let h = |args: &[&str]| run(&cluster.kubeconfig, &helm, args, None);
    let out = h(&["install", "wasmcm", chart, "-n", "wasmcm", "--create-namespace"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = h(&["upgrade", "wasmcm", chart, "-n", "wasmcm", "--set", "replicaCount=3"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let kubectl = wasmcm_test_support::kubectl_path();
    let args = ["get", "deployment", "wasmcm", "-n", "wasmcm", "-o", "json", "--show-managed-fields"];
    let out = run(&cluster.kubeconfig, &kubectl, &args, None);
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["spec"]["replicas"], 3);
    let managers: Vec<&str> =
        d["metadata"]["managedFields"].as_array().unwrap().iter().filter_map(|e| e["manager"].as_str()).collect();
    assert!(managers.contains(&"helm"), "{managers:?}");

    // Helm deletes with a protobuf DeleteOptions body, and leaves nothing of the release.
    let out = h(&["uninstall", "wasmcm", "-n", "wasmcm", "--wait"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let left = |args: &[&str]| {
        let out = run(&cluster.kubeconfig, &kubectl, args, None);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(left(&["get", "secrets", "-n", "wasmcm", "-l", "owner=helm", "-o", "name"]), "");
    assert_eq!(
        left(&[
            "get",
            "deployments,configmaps,serviceaccounts",
            "-n",
            "wasmcm",
            "-l",
            "app.kubernetes.io/managed-by=Helm",
            "-o",
            "name"
        ]),
        ""
    );
}

/// A configuration without `metadata.name` applies to the object the URL names (kube-rs's
/// cluster tests send one); it cannot create one, as kube-apiserver's checkName refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_without_a_name_applies_to_the_object_of_the_url() {
    let (_cluster, client) = wasmcm_test_support::cluster().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let mut config = web(1, json!([{"name": "a", "image": "a:1"}]));
    let refused = deployments
        .patch(
            "web",
            &apply_as("owner"),
            &Patch::Apply(&json!({"apiVersion": "apps/v1",
        "kind": "Deployment", "spec": config["spec"].clone()})),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = refused else { panic!("{refused:?}") };
    assert_eq!(
        (status.code, status.message.as_str()),
        (400, "the name of the object () does not match the name on the URL (web)")
    );
    deployments.patch("web", &apply_as("owner"), &Patch::Apply(&config)).await.unwrap();
    config["metadata"].as_object_mut().unwrap().remove("name");
    config["spec"]["replicas"] = json!(2);
    let d = deployments.patch("web", &apply_as("owner"), &Patch::Apply(&config)).await.unwrap();
    assert_eq!((d.metadata.name.as_deref(), d.spec.replicas), (Some("web"), Some(2)));
    let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "other"}});
    let refused = deployments.patch("web", &apply_as("owner"), &Patch::Apply(&config)).await.unwrap_err();
    let kube::Error::Api(status) = refused else { panic!("{refused:?}") };
    assert_eq!(status.message, "the name of the object (other) does not match the name on the URL (web)");
}
