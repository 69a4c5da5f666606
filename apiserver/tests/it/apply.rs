//! Server-side apply and managed fields, with kube-rs (`Patch::Apply`), the real kubectl
//! (`apply --server-side`, `--force-conflicts`) and the real helm (v4 installs and upgrades by
//! server-side apply), against kube-apiserver's behaviour: apply-create, merge by the schema's
//! list keys, conflicts naming the manager and field, force, removal of fields no longer
//! applied, and ownership taken by updates; custom resources merged by their CRD's
//! `x-kubernetes-list-type` / `-list-map-keys` / `-map-type`.

use std::process::Output;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
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
fn owners(d: &impl kube::Resource, path: &[&str]) -> Vec<(String, String)> {
    d.meta()
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

/// A cluster-scoped kind with a status subresource whose lists say how they merge, as
/// deploy/'s Plugin does: `status.replicas` by `identity`, `status.conditions` by `type`; in
/// the spec a set, a list without the extension (atomic), a list keyed by two fields, a keyed
/// list inside a keyed list's items, and an atomic map.
fn plugin_crd() -> Value {
    let keyed = |keys: Value, properties: Value| {
        json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": keys,
               "items": {"type": "object", "required": keys, "properties": properties}})
    };
    let string = json!({"type": "string"});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "plugins.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster",
            "names": {"plural": "plugins", "singular": "plugin", "kind": "Plugin"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": string},
                        "hosts": {"type": "array", "items": string},
                        "ports": keyed(json!(["port", "protocol"]),
                            json!({"port": {"type": "integer"}, "protocol": string, "name": string})),
                        "groups": keyed(json!(["name"]), json!({"name": string,
                            "members": keyed(json!(["id"]), json!({"id": {"type": "integer"}, "role": string}))})),
                        "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                            "additionalProperties": string},
                    }},
                    "status": {"type": "object", "properties": {
                        "state": string,
                        "replicas": keyed(json!(["identity"]), json!({"identity": string, "state": string})),
                        "conditions": keyed(json!(["type"]), json!({"type": string, "status": string})),
                    }},
                }}}}]},
    })
}

async fn with_plugins() -> (wasmcm_apiserver::Cluster, Api<DynamicObject>) {
    let (cluster, client) = wasmcm_test_support::cluster().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &serde_json::from_value(plugin_crd()).unwrap()).await.unwrap();
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Plugin"), "plugins");
    (cluster, Api::all_with(client, &ar))
}

fn plugin(part: &str, value: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Plugin", "metadata": {"name": "p"}, part: value})
}

fn conflict_message(err: kube::Error) -> (u16, String) {
    let kube::Error::Api(status) = err else { panic!("{err:?}") };
    (status.code, status.message)
}

/// Each replica applies its own entry of `status.replicas` (a `map` list keyed by `identity`)
/// under its own manager: the entries coexist, each owned by `k:{"identity":"…"}`; an entry
/// left out by its manager goes, the other's stays; the same field of the same entry still
/// conflicts; a forced apply of another field takes nothing of the entries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_apply_their_own_entries_of_a_custom_resources_keyed_status_list() {
    let (_cluster, plugins) = with_plugins().await;
    plugins.patch("p", &apply_as("creator"), &Patch::Apply(plugin("spec", json!({"tags": ["x"]})))).await.unwrap();
    let status = |identity: &str, state: &str, condition: &str| {
        plugin(
            "status",
            json!({"replicas": [{"identity": identity, "state": state}],
            "conditions": [{"type": condition, "status": "True"}]}),
        )
    };
    plugins.patch_status("p", &apply_as("replica-a"), &Patch::Apply(status("a", "Ready", "AReady"))).await.unwrap();
    let p = plugins
        .patch_status("p", &apply_as("replica-b"), &Patch::Apply(status("b", "Progressing", "BReady")))
        .await
        .expect("another entry of a keyed list is no conflict");
    assert_eq!(
        p.data["status"]["replicas"],
        json!([{"identity": "a", "state": "Ready"}, {"identity": "b", "state": "Progressing"}])
    );
    assert_eq!(p.data["status"]["conditions"].as_array().unwrap().len(), 2);
    let entry = |identity: &str| format!("k:{{\"identity\":\"{identity}\"}}");
    let owns = |p: &DynamicObject, identity: &str| owners(p, &["f:status", "f:replicas", &entry(identity), "f:state"]);
    assert_eq!(owns(&p, "a"), [("replica-a".to_string(), "Apply".to_string())]);
    assert_eq!(owns(&p, "b"), [("replica-b".to_string(), "Apply".to_string())]);
    assert_eq!(
        owners(&p, &["f:status", "f:conditions", "k:{\"type\":\"BReady\"}", "f:status"]),
        [("replica-b".to_string(), "Apply".to_string())]
    );
    let a_entry = p.metadata.managed_fields.iter().flatten().find(|e| e.manager.as_deref() == Some("replica-a"));
    assert_eq!(a_entry.and_then(|e| e.subresource.as_deref()), Some("status"));

    // The same field of the same entry is another manager's.
    let mut taking = status("b", "Progressing", "BReady");
    taking["status"]["replicas"] =
        json!([{"identity": "b", "state": "Progressing"}, {"identity": "a", "state": "Failed"}]);
    let err = plugins.patch_status("p", &apply_as("replica-b"), &Patch::Apply(&taking)).await.unwrap_err();
    assert_eq!(
        conflict_message(err),
        (
            409,
            "Apply failed with 1 conflict: conflict with \"replica-a\" with subresource \"status\": \
             .status.replicas[identity=\"a\"].state"
                .to_string()
        )
    );

    // A forced apply of another field by a third manager leaves the entries alone.
    let p = plugins
        .patch_status("p", &apply_as("summarizer").force(), &Patch::Apply(plugin("status", json!({"state": "Ready"}))))
        .await
        .unwrap();
    assert_eq!(p.data["status"]["state"], "Ready");
    assert_eq!(p.data["status"]["replicas"].as_array().unwrap().len(), 2);
    assert_eq!(owns(&p, "a"), [("replica-a".to_string(), "Apply".to_string())]);

    // replica-a stops applying its entry: it goes, b's stays.
    let p =
        plugins.patch_status("p", &apply_as("replica-a"), &Patch::Apply(plugin("status", json!({})))).await.unwrap();
    assert_eq!(p.data["status"]["replicas"], json!([{"identity": "b", "state": "Progressing"}]));
    assert_eq!(p.data["status"]["conditions"], json!([{"type": "BReady", "status": "True"}]));
    assert_eq!(p.data["status"]["state"], "Ready");
    assert!(owns(&p, "a").is_empty());
}

/// A CRD's other list and map types, by two managers: a `set` merges their items (owned by
/// `v:` value), a list without `x-kubernetes-list-type` is atomic (the second conflicts), a list
/// keyed by two fields and a keyed list inside a keyed list's items merge by their keys, and an
/// `x-kubernetes-map-type: atomic` object is owned whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resource_lists_merge_as_their_crds_list_types_say() {
    let (_cluster, plugins) = with_plugins().await;
    let one = json!({"tags": ["x"], "hosts": ["h1"], "selector": {"a": "1"},
        "ports": [{"port": 80, "protocol": "TCP", "name": "web"}],
        "groups": [{"name": "g", "members": [{"id": 1, "role": "lead"}]}]});
    plugins.patch("p", &apply_as("one"), &Patch::Apply(plugin("spec", one))).await.unwrap();
    let two = json!({"tags": ["y"], "ports": [{"port": 80, "protocol": "UDP", "name": "dns"}],
        "groups": [{"name": "g", "members": [{"id": 2, "role": "member"}]}]});
    let p = plugins.patch("p", &apply_as("two"), &Patch::Apply(plugin("spec", two.clone()))).await.unwrap();
    let spec = &p.data["spec"];
    assert_eq!(spec["tags"], json!(["x", "y"]));
    assert_eq!(spec["ports"].as_array().unwrap().len(), 2, "{spec}");
    assert_eq!(
        spec["groups"],
        json!([{"name": "g", "members": [{"id": 1, "role": "lead"}, {"id": 2, "role": "member"}]}])
    );
    assert_eq!(owners(&p, &["f:spec", "f:tags", "v:\"y\""]), [("two".to_string(), "Apply".to_string())]);
    assert_eq!(
        owners(&p, &["f:spec", "f:ports", "k:{\"port\":80,\"protocol\":\"TCP\"}", "f:name"]),
        [("one".to_string(), "Apply".to_string())]
    );
    let member = ["f:spec", "f:groups", "k:{\"name\":\"g\"}", "f:members", "k:{\"id\":2}", "f:role"];
    assert_eq!(owners(&p, &member), [("two".to_string(), "Apply".to_string())]);
    assert_eq!(owners(&p, &["f:spec", "f:hosts"]), [("one".to_string(), "Apply".to_string())]);

    // Without a list type, a list is one value: another manager's.
    let mut hosts = two.clone();
    hosts["hosts"] = json!(["h2"]);
    let err = plugins.patch("p", &apply_as("two"), &Patch::Apply(plugin("spec", hosts))).await.unwrap_err();
    assert_eq!(conflict_message(err), (409, "Apply failed with 1 conflict: conflict with \"one\": .spec.hosts".into()));
    // And so is an atomic map.
    let mut selector = two.clone();
    selector["selector"] = json!({"b": "2"});
    let err = plugins.patch("p", &apply_as("two"), &Patch::Apply(plugin("spec", selector))).await.unwrap_err();
    assert_eq!(
        conflict_message(err),
        (409, "Apply failed with 1 conflict: conflict with \"one\": .spec.selector".into())
    );

    // A strategic merge patch has no Go struct to follow here: 415, as upstream.
    let err = plugins.patch("p", &PatchParams::default(), &Patch::Strategic(json!({"spec": {"tags": ["z"]}}))).await;
    assert!(matches!(&err, Err(kube::Error::Api(s)) if s.code == 415), "{err:?}");

    // The first drops its tag and port: the second's stay.
    let p = plugins
        .patch("p", &apply_as("one"), &Patch::Apply(plugin("spec", json!({"hosts": ["h1"], "selector": {"a": "1"}}))))
        .await
        .unwrap();
    assert_eq!(p.data["spec"]["tags"], json!(["y"]));
    assert_eq!(p.data["spec"]["ports"], json!([{"port": 80, "protocol": "UDP", "name": "dns"}]));
    assert_eq!(p.data["spec"]["groups"], json!([{"name": "g", "members": [{"id": 2, "role": "member"}]}]));
}
