//! Running as a ServiceAccount against the embedded cluster: the RBAC, Service and
//! PodDisruptionBudget kinds deploy manifests need, TokenRequest (`kubectl create token`), and
//! RBAC enforced on ServiceAccount tokens as kube-apiserver enforces it, through kube-rs and
//! the real kubectl v1.35 (installed by `scripts/install-kubectl.sh`; without it the kubectl
//! parts fail, they never skip).

use std::path::{Path, PathBuf};
use std::process::Output;

use futures_util::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};

use kube::Client;
use serde_json::{Value, json};
use wasmcm_apiserver::Cluster;
use wasmcm_test_support::client;

struct Env {
    cluster: Cluster,
    admin: Client,
}

async fn start() -> Env {
    let (cluster, admin) = wasmcm_test_support::cluster().await;
    Env { cluster, admin }
}

/// Runs kubectl with `kubeconfig`, off the async workers (the cluster serves on them).
fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    tokio::task::block_in_place(|| wasmcm_test_support::kubectl(kubeconfig, args, stdin))
}

/// kubectl's stdout; fails the test with stderr on a non-zero exit.
fn kubectl_ok(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let out = kubectl(kubeconfig, args, stdin);
    assert!(out.status.success(), "kubectl {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// kubectl's stderr; fails the test if it succeeded.
fn kubectl_fails(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let out = kubectl(kubeconfig, args, stdin);
    assert!(!out.status.success(), "kubectl {} should fail: {}", args.join(" "), String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Creates (as admin) what the JSON describes, through the path its kind is served at.
async fn create(env: &Env, object: Value) {
    let api_version = object["apiVersion"].as_str().unwrap();
    let kind = object["kind"].as_str().unwrap();
    let resource = match kind {
        "Role" => "roles",
        "ClusterRole" => "clusterroles",
        "RoleBinding" => "rolebindings",
        "ClusterRoleBinding" => "clusterrolebindings",
        "Namespace" => "namespaces",
        "ServiceAccount" => "serviceaccounts",
        "ConfigMap" => "configmaps",
        "Pod" => "pods",
        "ReplicaSet" => "replicasets",
        other => panic!("no path for {other}"),
    };
    let base = if api_version == "v1" { "/api/v1".to_string() } else { format!("/apis/{api_version}") };
    let path = match object.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) => format!("{base}/namespaces/{ns}/{resource}"),
        None => format!("{base}/{resource}"),
    };
    let (code, body) = raw(&env.admin, "POST", &path, Some(&object)).await;
    assert_eq!(code, 201, "creating {kind}: {body}");
}

async fn delete(env: &Env, path: &str) {
    let (code, body) = raw(&env.admin, "DELETE", path, None).await;
    assert_eq!(code, 200, "deleting {path}: {body}");
}

/// A request whose status code and body are returned as they are, error or not.
async fn raw(client: &Client, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let bytes = body.map(|b| serde_json::to_vec(b).unwrap()).unwrap_or_default();
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", "application/json")
        .body(kube::client::Body::from(bytes))
        .unwrap();
    let res = client.send(req).await.expect("the request gets an answer");
    let code = res.status().as_u16();
    let bytes = res.into_body().collect_bytes().await.unwrap();
    (code, serde_json::from_slice(&bytes).unwrap_or_else(|_| json!(String::from_utf8_lossy(&bytes))))
}

/// A ServiceAccount of its own, its token, a kubeconfig and a client presenting that token.
struct Account {
    token: String,
    kubeconfig: PathBuf,
    client: Client,
}

async fn namespace(env: &Env, name: &str) {
    let namespaces: Api<Namespace> = Api::all(env.admin.clone());
    if namespaces.get_opt(name).await.unwrap().is_none() {
        create(env, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})).await;
    }
}

async fn account(env: &Env, ns: &str, name: &str) -> Account {
    namespace(env, ns).await;
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}});
    let sas: Api<ServiceAccount> = Api::namespaced(env.admin.clone(), ns);
    if sas.get_opt(name).await.unwrap().is_none() {
        create(env, sa).await;
    }
    let token = issue(env, ns, name).await;
    let kubeconfig = env.cluster.kubeconfig_for_token(&token).expect("kubeconfig written");
    let client = client(&kubeconfig).await;
    Account { token, kubeconfig, client }
}

async fn issue(env: &Env, ns: &str, name: &str) -> String {
    let sas: Api<ServiceAccount> = Api::namespaced(env.admin.clone(), ns);
    let request: TokenRequest = serde_json::from_value(json!({"spec": {"audiences": []}})).unwrap();
    let answer = sas.create_token_request(name, &PostParams::default(), &request).await.expect("token issued");
    answer.status.and_then(|s| s.token).expect("a token")
}

fn status_of(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason, s.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn forbidden_status(message: &str, name: &str, group: &str, kind: &str) -> Value {
    let mut details = json!({});
    for (k, v) in [("name", name), ("group", group), ("kind", kind)] {
        if !v.is_empty() {
            details[k] = json!(v);
        }
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
        "reason": "Forbidden", "details": details, "code": 403})
}

const SA: &str = "system:serviceaccount:wasmcm:wasmcm";

const MANIFESTS: &str = "apiVersion: v1
kind: Namespace
metadata: {name: wasmcm}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: wasmcm, namespace: wasmcm}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: wasmcm}
rules:
- apiGroups: [apps]
  resources: [replicasets, deployments]
  verbs: [get, list, watch]
- apiGroups: [apps]
  resources: [replicasets/status]
  verbs: [update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: wasmcm}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: wasmcm}
subjects:
- {kind: ServiceAccount, name: wasmcm, namespace: wasmcm}
- {kind: User, name: alice}
- {kind: Group, name: devs}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: leader-election, namespace: wasmcm}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: leader-election, namespace: wasmcm}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leader-election}
subjects:
- {kind: ServiceAccount, name: wasmcm}
---
apiVersion: v1
kind: Service
metadata: {name: metrics, namespace: wasmcm}
spec:
  selector: {app: wasmcm}
  ports:
  - {name: metrics, port: 9090, targetPort: http-metrics}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: wasmcm, namespace: wasmcm}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: wasmcm}}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_apply_and_print_like_a_real_cluster() {
    let env = start().await;
    let admin = &env.cluster.kubeconfig;
    let applied = kubectl_ok(admin, &["apply", "-f", "-"], Some(MANIFESTS));
    for line in [
        "namespace/wasmcm created",
        "serviceaccount/wasmcm created",
        "clusterrole.rbac.authorization.k8s.io/wasmcm created",
        "clusterrolebinding.rbac.authorization.k8s.io/wasmcm created",
        "role.rbac.authorization.k8s.io/leader-election created",
        "rolebinding.rbac.authorization.k8s.io/leader-election created",
        "service/metrics created",
        "poddisruptionbudget.policy/wasmcm created",
    ] {
        assert!(applied.contains(line), "{line} in {applied}");
    }
    // Applying again changes nothing: defaulting and allocation leave no phantom diff.
    let again = kubectl_ok(admin, &["apply", "-f", "-"], Some(MANIFESTS));
    for kind in ["service/metrics", "rolebinding.rbac.authorization.k8s.io/leader-election"] {
        assert!(again.contains(&format!("{kind} unchanged")), "{again}");
    }
    assert!(kubectl(admin, &["diff", "-f", "-"], Some(MANIFESTS)).status.success(), "kubectl diff sees no change");

    // Server-side printing, as kube-apiserver's printers.
    let table = kubectl_ok(admin, &["get", "clusterroles,rolebindings,pdb,svc", "-n", "wasmcm"], None);
    let blocks: Vec<&str> = table.split("\n\n").collect();
    assert_eq!(blocks.len(), 4, "{table}");
    let header = |block: &str| block.lines().next().unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(header(blocks[0]), "NAME CREATED AT");
    assert!(blocks[0].contains("clusterrole.rbac.authorization.k8s.io/wasmcm"), "{table}");
    assert_eq!(header(blocks[1]), "NAME ROLE AGE");
    assert!(blocks[1].contains("rolebinding.rbac.authorization.k8s.io/leader-election   Role/leader-election"));
    assert_eq!(header(blocks[2]), "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE");
    let pdb: Vec<&str> = blocks[2].lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(pdb[..4], ["poddisruptionbudget.policy/wasmcm", "N/A", "1", "0"], "{table}");
    assert_eq!(header(blocks[3]), "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE");
    let svc: Vec<&str> = blocks[3].lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!((svc[0], svc[1], svc[3], svc[4]), ("service/metrics", "ClusterIP", "<none>", "9090/TCP"), "{table}");
    assert!(svc[2].starts_with("10.96."), "a ClusterIP is allocated: {table}");
    let wide = kubectl_ok(admin, &["get", "clusterrolebindings", "wasmcm", "-o", "wide"], None);
    let row: Vec<&str> = wide.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..2], ["wasmcm", "ClusterRole/wasmcm"]);
    assert_eq!(row[3..], ["alice", "devs", "wasmcm/wasmcm"], "{wide}");
    let wide = kubectl_ok(admin, &["get", "svc", "metrics", "-n", "wasmcm", "-o", "wide"], None);
    assert!(wide.lines().nth(1).unwrap().trim_end().ends_with("app=wasmcm"), "{wide}");

    // What reads back is what a real cluster stores.
    let svc: Value =
        serde_json::from_str(&kubectl_ok(admin, &["get", "svc", "metrics", "-n", "wasmcm", "-o", "json"], None))
            .unwrap();
    assert_eq!(svc["spec"]["clusterIPs"], json!([svc["spec"]["clusterIP"]]));
    assert_eq!(
        svc["spec"]["ports"],
        json!([{"name": "metrics", "port": 9090, "protocol": "TCP", "targetPort": "http-metrics"}])
    );
    assert_eq!(
        (&svc["spec"]["type"], &svc["spec"]["sessionAffinity"], &svc["spec"]["ipFamilies"], &svc["status"]),
        (&json!("ClusterIP"), &json!("None"), &json!(["IPv4"]), &json!({"loadBalancer": {}}))
    );
    let pdb: Value =
        serde_json::from_str(&kubectl_ok(admin, &["get", "pdb", "wasmcm", "-n", "wasmcm", "-o", "json"], None))
            .unwrap();
    assert_eq!(pdb["metadata"]["generation"], 1);
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    let rb: Value = serde_json::from_str(&kubectl_ok(
        admin,
        &["get", "rolebinding", "leader-election", "-n", "wasmcm", "-o", "json"],
        None,
    ))
    .unwrap();
    assert_eq!(rb["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    let crb: Value =
        serde_json::from_str(&kubectl_ok(admin, &["get", "clusterrolebinding", "wasmcm", "-o", "json"], None)).unwrap();
    assert_eq!(crb["subjects"][1], json!({"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}));

    // A replaced Service keeps its address; a second Service gets another one.
    let ip = svc["spec"]["clusterIP"].clone();
    let replaced = kubectl_ok(
        admin,
        &["replace", "-f", "-", "-o", "json"],
        Some(
            &MANIFESTS[MANIFESTS.find("apiVersion: v1\nkind: Service\n").unwrap()
                ..MANIFESTS.find("---\napiVersion: policy/v1").unwrap()],
        ),
    );
    assert_eq!(serde_json::from_str::<Value>(&replaced).unwrap()["spec"]["clusterIP"], ip);
    kubectl_ok(admin, &["create", "service", "nodeport", "web", "--tcp=80:8080", "-n", "wasmcm"], None);
    let web: Value =
        serde_json::from_str(&kubectl_ok(admin, &["get", "svc", "web", "-n", "wasmcm", "-o", "json"], None)).unwrap();
    assert_ne!(web["spec"]["clusterIP"], ip);
    let node_port = web["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&node_port), "{web}");
    let table = kubectl_ok(admin, &["get", "svc", "web", "-n", "wasmcm"], None);
    assert!(table.contains(&format!("80:{node_port}/TCP")), "{table}");

    // Typed kubectl create commands (they send protobuf).
    kubectl_ok(admin, &["create", "role", "reader", "--verb=get,list", "--resource=pods", "-n", "wasmcm"], None);
    kubectl_ok(admin, &["create", "rolebinding", "reader", "--role=reader", "--user=bob", "-n", "wasmcm"], None);
    kubectl_ok(admin, &["create", "clusterrole", "node-reader", "--verb=get", "--resource=nodes"], None);
    kubectl_ok(
        admin,
        &["create", "clusterrolebinding", "node-reader", "--clusterrole=node-reader", "--group=ops"],
        None,
    );
    kubectl_ok(admin, &["create", "pdb", "web", "--selector=app=web", "--min-available=50%", "-n", "wasmcm"], None);
    let table = kubectl_ok(admin, &["get", "rolebinding", "reader", "-n", "wasmcm", "-o", "wide"], None);
    assert!(table.contains("Role/reader") && table.contains("bob"), "{table}");

    // Validation as upstream: a binding needs its role, and the role it grants is fixed.
    let err = kubectl_fails(
        admin,
        &["create", "-f", "-"],
        Some("apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: x, namespace: wasmcm}\n"),
    );
    assert!(
        err.contains("roleRef.kind: Unsupported value: \"\": supported values: \"Role\", \"ClusterRole\""),
        "{err}"
    );
    assert!(err.contains("roleRef.name: Required value"), "{err}");
    let moved = MANIFESTS.replace("kind: Role, name: leader-election}", "kind: ClusterRole, name: wasmcm}");
    let err = kubectl_fails(admin, &["apply", "-f", "-"], Some(&moved));
    assert!(
        err.contains(
            "The RoleBinding \"leader-election\" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"wasmcm\"}: cannot change roleRef"
        ),
        "{err}"
    );
    let err = kubectl_fails(
        admin,
        &["create", "-f", "-"],
        Some(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: crb}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\nsubjects: [{kind: ServiceAccount, name: s}]\n",
        ),
    );
    assert!(err.contains("roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\""), "{err}");
    assert!(err.contains("subjects[0].namespace: Required value"), "{err}");
    let err = kubectl_fails(
        admin,
        &["create", "-f", "-"],
        Some(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: z, namespace: wasmcm}\nrules: [{verbs: [get], nonResourceURLs: [/metrics]}]\n",
        ),
    );
    assert!(err.contains("namespaced rules cannot apply to non-resource URLs"), "{err}");
    let err = kubectl_fails(
        admin,
        &["create", "-f", "-"],
        Some(
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: both, namespace: wasmcm}\nspec: {minAvailable: 1, maxUnavailable: 1}\n",
        ),
    );
    assert!(err.contains("minAvailable and maxUnavailable cannot be both set"), "{err}");
    let err = kubectl_fails(
        admin,
        &["create", "-f", "-"],
        Some("apiVersion: v1\nkind: Service\nmetadata: {name: 1bad, namespace: wasmcm}\nspec: {type: Fancy}\n"),
    );
    for cause in [
        "metadata.name: Invalid value: \"1bad\"",
        "spec.ports: Required value",
        "spec.type: Unsupported value: \"Fancy\"",
    ] {
        assert!(err.contains(cause), "{cause} in {err}");
    }

    kubectl_ok(admin, &["delete", "clusterrolebinding", "wasmcm"], None);
    kubectl_ok(admin, &["delete", "-n", "wasmcm", "svc/metrics", "pdb/wasmcm", "role/leader-election"], None);
    let left = kubectl_ok(admin, &["get", "svc,pdb,roles", "-n", "wasmcm", "-o", "name"], None);
    assert_eq!(
        left.lines().collect::<Vec<_>>(),
        ["service/web", "poddisruptionbudget.policy/web", "role.rbac.authorization.k8s.io/reader"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_token_issues_a_service_account_identity() {
    let env = start().await;
    let admin = &env.cluster.kubeconfig;
    kubectl_ok(admin, &["create", "namespace", "wasmcm"], None);
    kubectl_ok(admin, &["create", "serviceaccount", "wasmcm", "-n", "wasmcm"], None);
    let token = kubectl_ok(admin, &["create", "token", "wasmcm", "-n", "wasmcm"], None).trim().to_string();
    assert!(token.len() >= 32 && !token.contains(char::is_whitespace), "{token}");
    let kubeconfig = env.cluster.kubeconfig_for_token(&token).unwrap();
    let whoami: Value =
        serde_json::from_str(&kubectl_ok(&kubeconfig, &["auth", "whoami", "-o", "json"], None)).unwrap();
    assert_eq!(whoami["status"]["userInfo"]["username"], SA);
    assert_eq!(
        whoami["status"]["userInfo"]["groups"],
        json!(["system:serviceaccounts", "system:serviceaccounts:wasmcm", "system:authenticated"])
    );
    let admin_whoami = kubectl_ok(admin, &["auth", "whoami"], None);
    assert!(admin_whoami.contains("system:masters"), "{admin_whoami}");

    // The TokenRequest as the real server answers it.
    let sas: Api<ServiceAccount> = Api::namespaced(env.admin.clone(), "wasmcm");
    let request: TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 7200}})).unwrap();
    let answer = sas.create_token_request("wasmcm", &PostParams::default(), &request).await.unwrap();
    let spec = answer.spec.unwrap();
    assert_eq!(spec.expiration_seconds, Some(7200));
    assert_eq!(spec.audiences, Some(vec!["https://kubernetes.default.svc.cluster.local".to_string()]));
    let status = answer.status.unwrap();
    let expires = status.expiration_timestamp.unwrap().0.as_second() - jiff::Timestamp::now().as_second();
    assert!((7190..=7200).contains(&expires), "{expires}");

    let err = kubectl_fails(admin, &["create", "token", "nosuch", "-n", "wasmcm"], None);
    assert!(err.contains("serviceaccounts \"nosuch\" not found"), "{err}");
    let (code, _, message) =
        status_of(sas.create_token_request("nosuch", &PostParams::default(), &request).await.unwrap_err());
    assert_eq!((code, message.as_str()), (404, "serviceaccounts \"nosuch\" not found"));
    let err = kubectl_fails(admin, &["create", "token", "wasmcm", "-n", "wasmcm", "--duration=5m"], None);
    assert!(
        err.contains("spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes")
    );

    // An unknown token is refused outright.
    let stranger = env.cluster.kubeconfig_for_token("not-a-token").unwrap();
    let err = kubectl_fails(&stranger, &["get", "--raw", "/api"], None);
    assert!(err.contains("Unauthorized"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_without_bindings_may_only_discover() {
    let env = start().await;
    let sa = account(&env, "wasmcm", "wasmcm").await;

    // The exact Status kube-apiserver sends.
    let (code, body) = raw(&sa.client, "GET", "/api/v1/namespaces/default/pods", None).await;
    assert_eq!(code, 403);
    let message = format!(
        "pods is forbidden: User \"{SA}\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(body, forbidden_status(&message, "", "", "pods"));
    let (_, body) = raw(&sa.client, "GET", "/api/v1/pods?watch=true", None).await;
    let message = format!(
        "pods is forbidden: User \"{SA}\" cannot watch resource \"pods\" in API group \"\" at the cluster scope"
    );
    assert_eq!(body, forbidden_status(&message, "", "", "pods"));
    let (_, body) = raw(&sa.client, "GET", "/api/v1/namespaces/default/configmaps/kube-root", None).await;
    let message = format!(
        "configmaps \"kube-root\" is forbidden: User \"{SA}\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(body, forbidden_status(&message, "kube-root", "", "configmaps"));
    let (code, body) = raw(&sa.client, "GET", "/metrics", None).await;
    assert_eq!(code, 403);
    let message = format!("forbidden: User \"{SA}\" cannot get path \"/metrics\"");
    assert_eq!(body, forbidden_status(&message, "", "", ""));
    // Forbidden comes before not found: nothing leaks about what exists.
    let (code, _) = raw(&sa.client, "GET", "/apis/example.com/v1/widgets", None).await;
    assert_eq!(code, 403);

    // Discovery, OpenAPI and version are every authenticated user's.
    for path in ["/api", "/api/v1", "/apis", "/apis/apps/v1", "/version", "/openapi/v3", "/openapi/v2"] {
        let (code, body) = raw(&sa.client, "GET", path, None).await;
        assert_eq!(code, 200, "{path}: {body}");
    }
    let api = kubectl_ok(&sa.kubeconfig, &["get", "--raw", "/api"], None);
    assert!(api.contains("APIVersions"), "{api}");
    let err = kubectl_fails(&sa.kubeconfig, &["get", "pods", "-n", "default"], None);
    let message = format!(
        "pods is forbidden: User \"{SA}\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    assert!(err.contains(&format!("Error from server (Forbidden): {message}")), "{err}");

    // kube-rs sees a 403 Forbidden.
    let pods: Api<Pod> = Api::namespaced(sa.client.clone(), "default");
    let (code, reason, _) = status_of(pods.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert!(!sa.token.is_empty());
}

fn role(ns: &str, name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": ns}, "rules": rules})
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
        "rules": rules})
}

fn binding(ns: Option<&str>, name: &str, role_kind: &str, role: &str) -> Value {
    let subjects = json!([{"kind": "ServiceAccount", "name": "wasmcm", "namespace": "wasmcm"}]);
    let role_ref = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role});
    match ns {
        Some(ns) => json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": ns}, "roleRef": role_ref, "subjects": subjects}),
        None => json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name}, "roleRef": role_ref, "subjects": subjects}),
    }
}

fn pod(ns: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_binding_grants_in_its_namespace_only_and_changes_apply_at_once() {
    let env = start().await;
    let sa = account(&env, "wasmcm", "wasmcm").await;
    namespace(&env, "team-a").await;
    namespace(&env, "team-b").await;
    create(&env, pod("team-a", "p")).await;
    create(&env, pod("team-b", "p")).await;
    create(
        &env,
        role("team-a", "pod-reader", json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}])),
    )
    .await;
    create(&env, binding(Some("team-a"), "read-pods", "Role", "pod-reader")).await;

    let in_a: Api<Pod> = Api::namespaced(sa.client.clone(), "team-a");
    let in_b: Api<Pod> = Api::namespaced(sa.client.clone(), "team-b");
    assert_eq!(in_a.list(&ListParams::default()).await.unwrap().items.len(), 1);
    assert!(in_a.get("p").await.is_ok());
    let (code, _, message) = status_of(in_b.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert_eq!(
        message,
        format!(
            "pods is forbidden: User \"{SA}\" cannot list resource \"pods\" in API group \"\" in the namespace \"team-b\""
        )
    );
    let (code, _, message) = status_of(in_a.delete("p", &DeleteParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert_eq!(
        message,
        format!(
            "pods \"p\" is forbidden: User \"{SA}\" cannot delete resource \"pods\" in API group \"\" in the namespace \"team-a\""
        )
    );
    let (code, _, _) = status_of(in_a.watch(&WatchParams::default(), "0").await.map(drop).unwrap_err());
    assert_eq!(code, 403, "watch is a verb of its own");
    let everywhere: Api<Pod> = Api::all(sa.client.clone());
    let (code, _, message) = status_of(everywhere.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert!(message.ends_with("at the cluster scope"), "{message}");
    let kubectl_pods = kubectl_ok(&sa.kubeconfig, &["get", "pods", "-n", "team-a", "-o", "name"], None);
    assert_eq!(kubectl_pods.trim(), "pod/p");

    // Editing the role takes effect on the next request.
    let roles: Api<k8s_openapi::api::rbac::v1::Role> = Api::namespaced(env.admin.clone(), "team-a");
    let patch =
        json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]}]});
    roles.patch("pod-reader", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    let mut stream = in_a.watch(&WatchParams::default().timeout(2), "0").await.unwrap().boxed();
    assert!(stream.next().await.is_some(), "the watch opens");
    in_a.delete("p", &DeleteParams::default().grace_period(0)).await.unwrap();

    // A RoleBinding may grant a ClusterRole's rules, still only in its namespace.
    create(
        &env,
        cluster_role("cm-reader", json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}])),
    )
    .await;
    create(&env, binding(Some("team-b"), "read-cms", "ClusterRole", "cm-reader")).await;
    let cms_b: Api<ConfigMap> = Api::namespaced(sa.client.clone(), "team-b");
    let cms_a: Api<ConfigMap> = Api::namespaced(sa.client.clone(), "team-a");
    assert!(cms_b.list(&ListParams::default()).await.is_ok());
    assert_eq!(status_of(cms_a.list(&ListParams::default()).await.unwrap_err()).0, 403);

    // Removing the binding takes the grant away at once.
    delete(&env, "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings/read-pods").await;
    assert_eq!(status_of(in_a.list(&ListParams::default()).await.unwrap_err()).0, 403);

    // A binding to a role that does not exist grants nothing, and says so.
    create(&env, binding(Some("team-a"), "dangling", "Role", "missing")).await;
    let (code, _, message) = status_of(in_a.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert!(message.ends_with(": RBAC: role.rbac.authorization.k8s.io \"missing\" not found"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_role_binding_grants_everywhere() {
    let env = start().await;
    let sa = account(&env, "wasmcm", "wasmcm").await;
    namespace(&env, "team-a").await;
    create(&env, pod("team-a", "p")).await;
    let rules = json!([
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["*"]},
    ]);
    create(&env, cluster_role("reader", rules)).await;
    create(&env, binding(None, "reader", "ClusterRole", "reader")).await;
    let all: Api<Pod> = Api::all(sa.client.clone());
    assert!(!all.list(&ListParams::default()).await.unwrap().items.is_empty());
    for ns in ["team-a", "default", "kube-system"] {
        let pods: Api<Pod> = Api::namespaced(sa.client.clone(), ns);
        assert!(pods.list(&ListParams::default()).await.is_ok(), "{ns}");
    }
    let nodes: Api<Node> = Api::all(sa.client.clone());
    assert!(!nodes.list(&ListParams::default()).await.unwrap().items.is_empty());
    let pods: Api<Pod> = Api::namespaced(sa.client.clone(), "team-a");
    assert_eq!(
        status_of(
            pods.create(&PostParams::default(), &serde_json::from_value(pod("team-a", "q")).unwrap())
                .await
                .unwrap_err()
        )
        .0,
        403
    );
    let table = kubectl_ok(&sa.kubeconfig, &["get", "pods", "-A"], None);
    assert!(table.lines().any(|l| l.starts_with("team-a") && l.contains(" p ")), "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subresources_need_rules_of_their_own() {
    let env = start().await;
    let sa = account(&env, "wasmcm", "wasmcm").await;
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    create(&env, rs).await;
    let rules = json!([{"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": ["get", "list", "watch", "update", "patch"]}]);
    create(&env, cluster_role("wasmcm", rules)).await;
    create(&env, binding(None, "wasmcm", "ClusterRole", "wasmcm")).await;

    let rss: Api<ReplicaSet> = Api::namespaced(sa.client.clone(), "default");
    let mut current = rss.get("web").await.unwrap();
    current.status = Some(serde_json::from_value(json!({"replicas": 0, "observedGeneration": 1})).unwrap());
    let body = serde_json::to_value(&current).unwrap();
    let (code, status) =
        raw(&sa.client, "PUT", "/apis/apps/v1/namespaces/default/replicasets/web/status", Some(&body)).await;
    assert_eq!(code, 403);
    assert_eq!(
        status,
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"replicasets.apps \"web\" is forbidden: User \"system:serviceaccount:wasmcm:wasmcm\" cannot update resource \"replicasets/status\" in API group \"apps\" in the namespace \"default\"","reason":"Forbidden","details":{"name":"web","group":"apps","kind":"replicasets"},"code":403})
    );
    let (code, _) = raw(&sa.client, "GET", "/apis/apps/v1/namespaces/default/replicasets/web/scale", None).await;
    assert_eq!(code, 403, "scale is a subresource too");
    // The main resource's update is allowed.
    let patch = json!({"metadata": {"labels": {"touched": "yes"}}});
    rss.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();

    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(env.admin.clone());
    let patch = json!({"rules": [
        {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": ["get", "list", "watch", "update", "patch"]},
        {"apiGroups": ["apps"], "resources": ["replicasets/status"], "verbs": ["update"]},
    ]});
    roles.patch("wasmcm", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    let current = rss.get("web").await.unwrap();
    let mut body = serde_json::to_value(&current).unwrap();
    body["status"]["observedGeneration"] = json!(1);
    let (code, status) =
        raw(&sa.client, "PUT", "/apis/apps/v1/namespaces/default/replicasets/web/status", Some(&body)).await;
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["status"]["observedGeneration"], 1);
    let (code, _) =
        raw(&sa.client, "PATCH", "/apis/apps/v1/namespaces/default/replicasets/web/status", Some(&json!({}))).await;
    assert_eq!(code, 403, "patch is not update");

    // `*/status` covers every resource's status.
    let patch =
        json!({"rules": [{"apiGroups": ["apps"], "resources": ["*/status", "*/scale"], "verbs": ["get", "patch"]}]});
    roles.patch("wasmcm", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    let (code, _) = raw(&sa.client, "GET", "/apis/apps/v1/namespaces/default/replicasets/web/scale", None).await;
    assert_eq!(code, 200);
    assert_eq!(status_of(rss.get("web").await.unwrap_err()).0, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_names_limit_named_requests_only() {
    let env = start().await;
    let sa = account(&env, "wasmcm", "wasmcm").await;
    for name in ["wasmcm-plugins", "other"] {
        create(
            &env,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "wasmcm"}}),
        )
        .await;
    }
    let rules = json!([{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["wasmcm-plugins", "new"],
        "verbs": ["get", "list", "watch", "update", "patch", "delete", "create"]}]);
    create(&env, role("wasmcm", "plugins", rules)).await;
    create(&env, binding(Some("wasmcm"), "plugins", "Role", "plugins")).await;

    let cms: Api<ConfigMap> = Api::namespaced(sa.client.clone(), "wasmcm");
    assert!(cms.get("wasmcm-plugins").await.is_ok());
    let patch = json!({"data": {"k": "v"}});
    cms.patch("wasmcm-plugins", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    let (code, _, message) = status_of(cms.get("other").await.unwrap_err());
    assert_eq!(code, 403);
    assert!(message.starts_with("configmaps \"other\" is forbidden"), "{message}");
    // Neither a list nor a create names an object in its path.
    assert_eq!(status_of(cms.list(&ListParams::default()).await.unwrap_err()).0, 403);
    let new: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "new"}})).unwrap();
    assert_eq!(status_of(cms.create(&PostParams::default(), &new).await.unwrap_err()).0, 403);
    // A list or watch selecting one object by name is a request for that object.
    let one = ListParams::default().fields("metadata.name=wasmcm-plugins");
    assert_eq!(cms.list(&one).await.unwrap().items.len(), 1);
    let mut watch = cms
        .watch(&WatchParams::default().fields("metadata.name=wasmcm-plugins").timeout(1), "0")
        .await
        .unwrap()
        .boxed();
    assert!(watch.next().await.is_some());
    let other = ListParams::default().fields("metadata.name=other");
    assert_eq!(status_of(cms.list(&other).await.unwrap_err()).0, 403);
    cms.delete("wasmcm-plugins", &DeleteParams::default()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_can_i_asks_the_server() {
    let env = start().await;
    let sa = account(&env, "wasmcm", "wasmcm").await;
    create(
        &env,
        role(
            "wasmcm",
            "leases",
            json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "update"]}]),
        ),
    )
    .await;
    create(&env, binding(Some("wasmcm"), "leases", "Role", "leases")).await;
    let can_i = |args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend(args);
        let out = kubectl(&sa.kubeconfig, &all, None);
        (out.status.code(), String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    assert_eq!(can_i(&["update", "leases", "-n", "wasmcm"]), (Some(0), "yes".into()));
    assert_eq!(can_i(&["delete", "leases", "-n", "wasmcm"]), (Some(1), "no".into()));
    assert_eq!(can_i(&["update", "leases", "-n", "default"]), (Some(1), "no".into()));
    assert_eq!(can_i(&["get", "/api"]), (Some(0), "yes".into()));
    assert_eq!(can_i(&["get", "/metrics"]), (Some(1), "no".into()));
    let list = kubectl_ok(&sa.kubeconfig, &["auth", "can-i", "--list", "-n", "wasmcm"], None);
    assert!(list.lines().any(|l| l.starts_with("leases.coordination.k8s.io") && l.contains("[get update]")), "{list}");
    let out = kubectl(&env.cluster.kubeconfig, &["auth", "can-i", "*", "*"], None);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "yes", "the admin may do anything");

    // The admin may act as the ServiceAccount (`--as`), and then has only its rights.
    let admin = &env.cluster.kubeconfig;
    let as_sa = format!("--as={SA}");
    for (verb, ns, want) in [("update", "wasmcm", "yes"), ("delete", "wasmcm", "no"), ("update", "default", "no")] {
        let out = kubectl(admin, &["auth", "can-i", verb, "leases", "-n", ns, &as_sa], None);
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), want, "{verb} leases in {ns}");
    }
    let whoami = kubectl_ok(admin, &["auth", "whoami", &as_sa, "-o", "json"], None);
    let whoami: Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(
        whoami["status"]["userInfo"],
        json!({"username": SA, "groups": ["system:serviceaccounts", "system:serviceaccounts:wasmcm", "system:authenticated"]})
    );
    let err = kubectl_fails(admin, &["get", "pods", "-n", "wasmcm", &as_sa], None);
    assert!(err.contains(&format!("User \"{SA}\" cannot list resource \"pods\"")), "{err}");
    // The ServiceAccount may not act as anyone else.
    let err = kubectl_fails(&sa.kubeconfig, &["get", "pods", "--as=kubernetes-admin"], None);
    assert!(
        err.contains(&format!("users \"kubernetes-admin\" is forbidden: User \"{SA}\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope")),
        "{err}"
    );

    // The review's reason names the binding, as upstream's.
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"namespace": "wasmcm", "verb": "get", "group": "coordination.k8s.io", "resource": "leases"}}});
    let (code, answer) =
        raw(&sa.client, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", Some(&review)).await;
    assert_eq!(code, 201);
    assert_eq!(
        answer["status"],
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"leases/wasmcm\" of Role \"leases\" to ServiceAccount \"wasmcm/wasmcm\""})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_service_account_invalidates_its_tokens() {
    let env = start().await;
    let sa = account(&env, "wasmcm", "wasmcm").await;
    create(&env, role("wasmcm", "cms", json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}])))
        .await;
    create(&env, binding(Some("wasmcm"), "cms", "Role", "cms")).await;
    let cms: Api<ConfigMap> = Api::namespaced(sa.client.clone(), "wasmcm");
    assert!(cms.list(&ListParams::default()).await.is_ok());

    delete(&env, "/api/v1/namespaces/wasmcm/serviceaccounts/wasmcm").await;
    let (code, reason, _) = status_of(cms.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (401, "Unauthorized"));
    let err = kubectl_fails(&sa.kubeconfig, &["get", "--raw", "/api"], None);
    assert!(err.contains("Unauthorized"), "{err}");

    // A new ServiceAccount of the same name is someone else: the old token stays dead, while a
    // fresh token works through the same binding.
    create(
        &env,
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "wasmcm", "namespace": "wasmcm"}}),
    )
    .await;
    assert_eq!(status_of(cms.list(&ListParams::default()).await.unwrap_err()).0, 401);
    let token = env.cluster.service_account_token("wasmcm", "wasmcm").unwrap();
    assert_ne!(token, sa.token);
    let fresh = client(&env.cluster.kubeconfig_for_token(&token).unwrap()).await;
    let cms: Api<ConfigMap> = Api::namespaced(fresh, "wasmcm");
    assert!(cms.list(&ListParams::default()).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_roles_view_and_edit_grant_what_upstream_grants() {
    let env = start().await;
    let sa = account(&env, "wasmcm", "wasmcm").await;
    namespace(&env, "team").await;
    create(&env, pod("team", "p")).await;
    create(&env, binding(Some("team"), "viewers", "ClusterRole", "view")).await;

    // view reads workloads but not Secrets, and writes nothing.
    let pods: Api<Pod> = Api::namespaced(sa.client.clone(), "team");
    assert_eq!(pods.list(&ListParams::default()).await.unwrap().items.len(), 1);
    let can_i = |verb: &str, what: &str| {
        let out = kubectl(&sa.kubeconfig, &["auth", "can-i", verb, what, "-n", "team"], None);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(can_i("list", "deployments.apps"), "yes");
    assert_eq!(can_i("get", "secrets"), "no");
    assert_eq!(can_i("create", "configmaps"), "no");
    let cms: Api<ConfigMap> = Api::namespaced(sa.client.clone(), "team");
    let cm = serde_json::from_value(json!({"metadata": {"name": "c"}})).unwrap();
    assert_eq!(status_of(cms.create(&PostParams::default(), &cm).await.unwrap_err()).0, 403);

    // edit writes them, and Secrets, but not the namespace's RBAC.
    create(&env, binding(Some("team"), "editors", "ClusterRole", "edit")).await;
    cms.create(&PostParams::default(), &cm).await.expect("edit creates ConfigMaps");
    assert_eq!(can_i("create", "secrets"), "yes");
    assert_eq!(can_i("create", "rolebindings.rbac.authorization.k8s.io"), "no");
    assert_eq!(can_i("list", "pods"), "yes");
    // Only in the namespace bound.
    let out = kubectl(&sa.kubeconfig, &["auth", "can-i", "list", "pods", "-n", "default"], None);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no");
}
