//! The smaller APIs a kube-apiserver serves beside the workload kinds, through kube-rs and the
//! real kubectl: pod eviction under PodDisruptionBudgets and `kubectl drain`, TokenReview,
//! CertificateSigningRequests and `kubectl certificate`, APIServices and ComponentStatuses,
//! and the ephemeral containers subresource.

use std::path::Path;
use std::process::Output;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenReview};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Node, Pod, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::Client;
use kube::api::{Api, EvictParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wasmcm_apiserver::Cluster;
use wasmcm_test_support::eventually;

async fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    let kubeconfig = kubeconfig.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        wasmcm_test_support::kubectl(&kubeconfig, &args, None)
    })
    .await
    .expect("kubectl runs")
}

async fn kubectl_ok(kubeconfig: &Path, args: &[&str]) -> String {
    let out = kubectl(kubeconfig, args).await;
    assert!(out.status.success(), "kubectl {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A ReplicaSet `name` (no controller runs here to make its pods: see [`owned_pod`]).
async fn replica_set(client: &Client, name: &str, replicas: i32) -> ReplicaSet {
    let rs: ReplicaSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}},
        },
    }))
    .unwrap();
    Api::namespaced(client.clone(), "default").create(&PostParams::default(), &rs).await.unwrap()
}

/// A pod of `rs`, as its controller would make it.
async fn owned_pod(client: &Client, rs: &ReplicaSet, name: &str) {
    let rs_name = rs.metadata.name.clone().unwrap();
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": rs_name}, "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs_name,
            "uid": rs.metadata.uid, "controller": true, "blockOwnerDeletion": true,
        }]},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}], "terminationGracePeriodSeconds": 1},
    }))
    .unwrap();
    Api::<Pod>::namespaced(client.clone(), "default").create(&PostParams::default(), &pod).await.unwrap();
}

fn budget(name: &str, app: &str, min_available: Value) -> PodDisruptionBudget {
    serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }))
    .unwrap()
}

/// The budget's status once it reads `want` (its counters as JSON).
async fn status_becomes(pdbs: &Api<PodDisruptionBudget>, name: &str, want: Value) -> Value {
    eventually(&format!("{name}'s status {want}"), || async {
        let pdb = serde_json::to_value(pdbs.get(name).await.ok()?).ok()?;
        let status = pdb.get("status")?.clone();
        let matches = want.as_object()?.iter().all(|(k, v)| status.get(k) == Some(v));
        matches.then_some(status)
    })
    .await
}

async fn ready_pods(pods: &Api<Pod>, app: &str) -> Vec<Pod> {
    let list = pods.list(&ListParams::default().labels(&format!("app={app}"))).await.expect("pods list");
    list.items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .collect()
}

fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn start() -> (Cluster, Client) {
    wasmcm_test_support::cluster().await
}

/// A client that does not retry 429s by itself (kube-rs's default layer would, for minutes):
/// to see the refusal itself.
async fn no_retry_client(cluster: &Cluster) -> Client {
    let mut config = wasmcm_test_support::config(&cluster.kubeconfig).await;
    config.default_retry = false;
    Client::try_from(config).expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evictions_honour_the_pod_disruption_budget_the_server_keeps_current() {
    let (cluster, client) = start().await;
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let rs = replica_set(&client, "web", 3).await;
    for i in 0..3 {
        owned_pod(&client, &rs, &format!("web-{i}")).await;
    }
    pdbs.create(&PostParams::default(), &budget("web", "web", json!(2))).await.unwrap();

    let status = status_becomes(
        &pdbs,
        "web",
        json!({"expectedPods": 3, "currentHealthy": 3, "desiredHealthy": 2, "disruptionsAllowed": 1, "observedGeneration": 1}),
    )
    .await;
    let condition = &status["conditions"][0];
    assert_eq!(
        (&condition["type"], &condition["status"], &condition["reason"]),
        (&json!("DisruptionAllowed"), &json!("True"), &json!("SufficientPods")),
        "{status}"
    );

    let names = ["web-0", "web-1"];
    // One disruption allowed: the first eviction deletes the pod and spends it at once.
    pods.evict(names[0], &EvictParams::default()).await.expect("the first eviction is allowed");
    let pdb = serde_json::to_value(pdbs.get("web").await.unwrap()).unwrap();
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0, "{pdb}");
    // Counted as going: in disruptedPods until the controller sees it terminating.
    assert!(pdb["status"]["disruptedPods"].get(names[0]).is_some() || pdb["status"]["currentHealthy"] == 2, "{pdb}");
    let evicted = pods.get_opt(names[0]).await.unwrap();
    if let Some(pod) = evicted {
        let conditions = pod.status.and_then(|s| s.conditions).unwrap_or_default();
        assert!(
            conditions
                .iter()
                .any(|c| c.type_ == "DisruptionTarget" && c.reason.as_deref() == Some("EvictionByEvictionAPI")),
            "{conditions:?}"
        );
        assert!(pod.metadata.deletion_timestamp.is_some());
    }

    // The next one would take the application below its budget: 429, with the budget's cause.
    let impatient: Api<Pod> = Api::namespaced(no_retry_client(&cluster).await, "default");
    let refused = api_error(impatient.evict(names[1], &EvictParams::default()).await.unwrap_err());
    assert_eq!((refused.code, refused.reason.as_str()), (429, "TooManyRequests"));
    assert_eq!(refused.message, "Cannot evict pod as it would violate the pod's disruption budget.");
    let cause = &refused.details.expect("details").causes[0];
    assert_eq!(cause.reason, "DisruptionBudget");
    // 3 until the controller has seen the evicted pod terminating, 2 after.
    assert!(cause.message.starts_with("The disruption budget web needs 2 healthy pods and has "), "{}", cause.message);
    assert!(pods.get_opt(names[1]).await.unwrap().is_some_and(|p| p.metadata.deletion_timestamp.is_none()));

    // Once a replacement is ready, the budget allows one again.
    owned_pod(&client, &rs, "web-3").await;
    status_becomes(&pdbs, "web", json!({"currentHealthy": 3, "disruptionsAllowed": 1})).await;

    // A dry run spends nothing and deletes nothing.
    pods.evict(
        names[1],
        &EvictParams { post_options: PostParams { dry_run: true, ..Default::default() }, ..Default::default() },
    )
    .await
    .expect("a dry-run eviction is allowed");
    assert_eq!(serde_json::to_value(pdbs.get("web").await.unwrap()).unwrap()["status"]["disruptionsAllowed"], 1);
    assert!(pods.get_opt(names[1]).await.unwrap().is_some_and(|p| p.metadata.deletion_timestamp.is_none()));

    // A pod two budgets select cannot be evicted at all.
    pdbs.create(&PostParams::default(), &budget("web-too", "web", json!("50%"))).await.unwrap();
    // A percentage counts against the controller's replicas.
    status_becomes(&pdbs, "web-too", json!({"expectedPods": 3, "desiredHealthy": 2, "observedGeneration": 1})).await;
    // Upstream answers this one with a Status of failure (201), not an error: client-go turns
    // it into one, kube-rs hands it back.
    let refused = pods.evict(names[1], &EvictParams::default()).await.expect("a Status");
    assert_eq!((refused.status, refused.code), (Some(kube::core::response::StatusSummary::Failure), 500));
    assert_eq!(
        refused.message,
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
    pdbs.delete("web-too", &Default::default()).await.unwrap();

    // A pod with no budget is simply deleted; one that is not running needs no budget.
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "lonely"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    pods.evict("lonely", &EvictParams::default()).await.expect("no budget: evicted");
    let missing = api_error(pods.evict("nobody", &EvictParams::default()).await.unwrap_err());
    assert_eq!(missing.code, 404);

    // maxUnavailable counts against the controller's replicas too.
    let replica_sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    replica_sets.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 4}}))).await.unwrap();
    pdbs.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"minAvailable": null, "maxUnavailable": "50%"}})),
    )
    .await
    .unwrap();
    status_becomes(
        &pdbs,
        "web",
        json!({"expectedPods": 4, "desiredHealthy": 2, "currentHealthy": 3, "disruptionsAllowed": 1, "observedGeneration": 2}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_drain_cordons_a_node_and_evicts_its_pods_within_their_budget() {
    let (cluster, client) = start().await;
    let kubeconfig = cluster.kubeconfig.clone();
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let nodes: Api<Node> = Api::all(client.clone());
    let rs = replica_set(&client, "web", 3).await;
    for i in 0..3 {
        owned_pod(&client, &rs, &format!("web-{i}")).await;
    }
    // No disruption allowed: drain cannot finish.
    pdbs.create(&PostParams::default(), &budget("web", "web", json!(3))).await.unwrap();
    status_becomes(&pdbs, "web", json!({"currentHealthy": 3, "disruptionsAllowed": 0})).await;
    let node = ready_pods(&pods, "web").await[0].spec.as_ref().and_then(|s| s.node_name.clone()).expect("bound");

    let out =
        kubectl(&kubeconfig, &["drain", &node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=3s"]).await;
    assert!(!out.status.success(), "drain finished against a budget allowing nothing");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Cannot evict pod as it would violate the pod's disruption budget."), "{stderr}");
    let cordoned = nodes.get(&node).await.unwrap();
    assert_eq!(cordoned.spec.and_then(|s| s.unschedulable), Some(true));
    let printed = kubectl_ok(&kubeconfig, &["get", "node", &node]).await;
    assert!(printed.contains("Ready,SchedulingDisabled"), "{printed}");

    // With a disruption allowed, drain evicts, retrying on 429 while the budget catches up.
    pdbs.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"minAvailable": 2}}))).await.unwrap();
    let out =
        kubectl_ok(&kubeconfig, &["drain", &node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=90s"])
            .await;
    assert!(out.contains(&format!("node/{node} drained")), "{out}");
    // Nothing runs on the drained node, and nothing new is bound to it.
    let on_node = |p: &Pod| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node.as_str());
    eventually("the drained node's pod to be gone", || async {
        let all = pods.list(&ListParams::default()).await.ok()?;
        (!all.items.iter().any(on_node)).then_some(())
    })
    .await;
    for i in 3..6 {
        owned_pod(&client, &rs, &format!("web-{i}")).await;
    }
    eventually("five ready pods", || async { (ready_pods(&pods, "web").await.len() == 5).then_some(()) }).await;
    assert!(!ready_pods(&pods, "web").await.iter().any(on_node), "a pod was bound to a cordoned node");
    // A pod that tolerates the cordon may still go there.
    let tolerant: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "tolerant"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}],
                 "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]},
    }))
    .unwrap();
    // Five pods on two nodes: the least loaded is the cordoned one, empty.
    pods.create(&PostParams::default(), &tolerant).await.unwrap();
    eventually("the tolerant pod to be bound to the cordoned node", || async {
        let p = pods.get("tolerant").await.ok()?;
        on_node(&p).then_some(())
    })
    .await;
    kubectl_ok(&kubeconfig, &["uncordon", &node]).await;
    assert_eq!(nodes.get(&node).await.unwrap().spec.and_then(|s| s.unschedulable), None);
}

async fn review_token(client: &Client, token: &str, audiences: &[&str]) -> Value {
    let reviews: Api<TokenReview> = Api::all(client.clone());
    let mut spec = json!({"token": token});
    if !audiences.is_empty() {
        spec["audiences"] = json!(audiences);
    }
    let review: TokenReview =
        serde_json::from_value(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}))
            .unwrap();
    let answer = reviews.create(&PostParams::default(), &review).await.expect("a TokenReview is answered");
    serde_json::to_value(answer).unwrap()["status"].clone()
}

#[tokio::test]
async fn token_reviews_validate_the_servers_own_tokens() {
    let (cluster, client) = start().await;
    let admin = review_token(&client, cluster.token.as_deref().expect("a TLS cluster has a token"), &[]).await;
    assert_eq!(admin["authenticated"], true, "{admin}");
    assert_eq!(admin["user"]["username"], "kubernetes-admin");
    assert_eq!(admin["user"]["groups"], json!(["system:masters", "system:authenticated"]));
    assert_eq!(admin["audiences"], json!(["https://kubernetes.default.svc.cluster.local"]));

    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let account: ServiceAccount =
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}))
            .unwrap();
    let account = accounts.create(&PostParams::default(), &account).await.unwrap();
    let token = cluster.service_account_token("default", "robot").unwrap();
    let robot = review_token(&client, &token, &[]).await;
    assert_eq!(robot["authenticated"], true, "{robot}");
    assert_eq!(robot["user"]["username"], "system:serviceaccount:default:robot");
    assert_eq!(robot["user"]["uid"], json!(account.metadata.uid));
    assert_eq!(
        robot["user"]["groups"],
        json!(["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"])
    );

    // A token for another audience is valid for that one only.
    let request: TokenRequest = serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": ["vault"]},
    }))
    .unwrap();
    let vault = accounts.create_token_request("robot", &PostParams::default(), &request).await.unwrap();
    let vault_token = vault.status.and_then(|s| s.token).expect("a token");
    let refused = review_token(&client, &vault_token, &[]).await;
    assert_eq!(refused.get("authenticated"), None, "{refused}");
    assert_eq!(
        refused["error"],
        "[invalid bearer token, token audiences [\"vault\"] is invalid for the target audiences [\"https://kubernetes.default.svc.cluster.local\"]]"
    );
    // Nor does it authenticate requests to this API.
    let vault_client = wasmcm_test_support::client(&cluster.kubeconfig_for_token(&vault_token).unwrap()).await;
    let denied = Api::<ServiceAccount>::namespaced(vault_client, "default").get("robot").await.unwrap_err();
    assert_eq!(api_error(denied).code, 401);
    let accepted = review_token(&client, &vault_token, &["vault", "other"]).await;
    assert_eq!((&accepted["authenticated"], &accepted["audiences"]), (&json!(true), &json!(["vault"])), "{accepted}");

    let unknown = review_token(&client, "not-a-token", &[]).await;
    assert_eq!(unknown, json!({"user": {}, "error": "invalid bearer token"}));

    // Reviewing tokens is for those the API server delegates to (system:auth-delegator).
    let robot_client = wasmcm_test_support::client(&cluster.kubeconfig_for_token(&token).unwrap()).await;
    let reviews: Api<TokenReview> = Api::all(robot_client.clone());
    let review: TokenReview = serde_json::from_value(
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}),
    )
    .unwrap();
    assert_eq!(api_error(reviews.create(&PostParams::default(), &review).await.unwrap_err()).code, 403);
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "robot-delegator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"},
        "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone()).create(&PostParams::default(), &binding).await.unwrap();
    let own = review_token(&robot_client, &token, &[]).await;
    assert_eq!(own["user"]["username"], "system:serviceaccount:default:robot");

    // A token dies with its ServiceAccount.
    accounts.delete("robot", &Default::default()).await.unwrap();
    let gone = review_token(&client, &token, &[]).await;
    assert_eq!(gone["error"], "[invalid bearer token, service account token has been invalidated]");
    let missing = api_error(
        Api::<TokenReview>::all(client.clone())
            .create(
                &PostParams::default(),
                &serde_json::from_value(
                    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {}}),
                )
                .unwrap(),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!((missing.code, missing.message.as_str()), (400, "token is required for TokenReview in authentication"));
}

fn csr_pem() -> String {
    let key = rcgen::KeyPair::generate().expect("a key");
    let params = rcgen::CertificateParams::new(vec!["robot.example".to_string()]).expect("params");
    params.serialize_request(&key).expect("a CSR").pem().expect("PEM")
}

fn csr_manifest(name: &str, pem: &str) -> Value {
    use base64::Engine as _;
    json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(pem),
            "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["client auth"],
            "expirationSeconds": 86400,
            "username": "someone-else",
        },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_signing_requests_are_approved_or_denied_with_kubectl() {
    let (cluster, client) = start().await;
    let kubeconfig = cluster.kubeconfig.clone();
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    for name in ["alice", "bob"] {
        let csr: CertificateSigningRequest = serde_json::from_value(csr_manifest(name, &csr_pem())).unwrap();
        let created = csrs.create(&PostParams::default(), &csr).await.unwrap();
        // The requestor is who asked, whatever the client claimed.
        assert_eq!(created.spec.username.as_deref(), Some("kubernetes-admin"));
        assert_eq!(created.spec.groups, Some(vec!["system:masters".to_string(), "system:authenticated".to_string()]));
    }
    let printed = kubectl_ok(&kubeconfig, &["get", "csr"]).await;
    let header: Vec<&str> = printed.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]);
    assert!(
        printed.lines().any(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            cells.first() == Some(&"alice")
                && cells[2..] == ["kubernetes.io/kube-apiserver-client", "kubernetes-admin", "24h", "Pending"]
        }),
        "{printed}"
    );

    let out = kubectl_ok(&kubeconfig, &["certificate", "approve", "alice"]).await;
    assert!(out.contains("certificatesigningrequest.certificates.k8s.io/alice approved"), "{out}");
    let out = kubectl_ok(&kubeconfig, &["certificate", "deny", "bob"]).await;
    assert!(out.contains("certificatesigningrequest.certificates.k8s.io/bob denied"), "{out}");
    let alice = serde_json::to_value(csrs.get("alice").await.unwrap()).unwrap();
    let condition = &alice["status"]["conditions"][0];
    assert_eq!(
        (&condition["type"], &condition["status"], &condition["reason"]),
        (&json!("Approved"), &json!("True"), &json!("KubectlApprove"))
    );
    assert!(condition["lastTransitionTime"].is_string() && condition["lastUpdateTime"].is_string(), "{alice}");
    let printed = kubectl_ok(&kubeconfig, &["get", "csr", "alice", "bob", "--no-headers"]).await;
    let conditions: Vec<&str> = printed.lines().filter_map(|l| l.split_whitespace().last()).collect();
    assert_eq!(conditions, ["Approved", "Denied"]);

    // kube-rs approves by a patch of the approval subresource; it touches the conditions only.
    let carol: CertificateSigningRequest = serde_json::from_value(csr_manifest("carol", &csr_pem())).unwrap();
    csrs.create(&PostParams::default(), &carol).await.unwrap();
    let approve = json!({
        "spec": {"signerName": "example.com/other"},
        "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "KubeRsApprove", "message": "by kube-rs"}]},
    });
    let approved = csrs.patch_approval("carol", &PatchParams::default(), &Patch::Merge(approve)).await.unwrap();
    let conditions = approved.status.and_then(|s| s.conditions).unwrap_or_default();
    let [condition] = conditions.as_slice() else { panic!("{conditions:?}") };
    assert_eq!((condition.type_.as_str(), condition.reason.as_deref()), ("Approved", Some("KubeRsApprove")));
    assert_eq!(approved.spec.signer_name, "kubernetes.io/kube-apiserver-client", "the spec is not the approval's");

    // Approved and Denied exclude each other; kubectl refuses to flip one without --force, the
    // server refuses both at once.
    let out = kubectl(&kubeconfig, &["certificate", "deny", "alice"]).await;
    assert!(!out.status.success());
    let mut both = alice.clone();
    both["status"]["conditions"].as_array_mut().unwrap().push(json!({"type": "Denied", "status": "True"}));
    let (code, answer) =
        raw_put(&client, "/apis/certificates.k8s.io/v1/certificatesigningrequests/alice/approval", &both).await;
    assert_eq!(code, 422, "{answer}");
    assert!(
        answer["message"].as_str().unwrap().contains("Approved and Denied conditions are mutually exclusive"),
        "{answer}"
    );

    // The status subresource does not approve; the main resource changes neither spec nor status.
    let mut sneaky = serde_json::to_value(csrs.get("bob").await.unwrap()).unwrap();
    sneaky["status"] = json!({"conditions": [{"type": "Approved", "status": "True", "reason": "Sneaky"}]});
    let (code, answer) =
        raw_put(&client, "/apis/certificates.k8s.io/v1/certificatesigningrequests/bob/status", &sneaky).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["status"]["conditions"][0]["type"], "Denied", "{answer}");
    assert_eq!(answer["status"]["conditions"].as_array().unwrap().len(), 1, "{answer}");
    csrs.patch("bob", &PatchParams::default(), &Patch::Merge(json!({"spec": {"signerName": "example.com/other"}})))
        .await
        .unwrap();
    assert_eq!(csrs.get("bob").await.unwrap().spec.signer_name, "kubernetes.io/kube-apiserver-client");

    // Validation: a PEM request, a signer, known usages.
    let mut bad = csr_manifest("bad", "not a PEM");
    bad["spec"]["signerName"] = json!("");
    bad["spec"]["usages"] = json!(["client auth", "flying"]);
    bad["spec"]["expirationSeconds"] = json!(60);
    let refused =
        api_error(csrs.create(&PostParams::default(), &serde_json::from_value(bad).unwrap()).await.unwrap_err());
    assert_eq!(refused.code, 422);
    let fields: Vec<String> =
        refused.details.unwrap().causes.into_iter().map(|c| format!("{} {}", c.reason, c.field)).collect();
    assert_eq!(
        fields,
        [
            "FieldValueInvalid spec.request",
            "FieldValueInvalid spec.expirationSeconds",
            "FieldValueNotSupported spec.usages[1]",
            "FieldValueRequired spec.signerName",
        ]
    );
}

async fn raw_put(client: &Client, path: &str, body: &Value) -> (u16, Value) {
    let request = http::Request::put(path)
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(body).unwrap())
        .unwrap();
    match client.request::<Value>(request).await {
        Ok(v) => (200, v),
        Err(kube::Error::Api(s)) => (s.code, json!({"reason": s.reason, "message": s.message})),
        Err(e) => panic!("{e:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_gets_component_statuses_and_api_services() {
    let (cluster, client) = start().await;
    let kubeconfig = cluster.kubeconfig.clone();
    let out = kubectl(&kubeconfig, &["get", "cs"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("v1 ComponentStatus is deprecated in v1.19+"));
    let rows: Vec<Vec<String>> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["NAME", "STATUS", "MESSAGE", "ERROR"],
            vec!["scheduler", "Healthy", "ok"],
            vec!["controller-manager", "Healthy", "ok"],
            vec!["etcd-0", "Healthy", "ok"],
        ]
    );
    let (code, _) = raw_put(&client, "/api/v1/componentstatuses/scheduler", &json!({})).await;
    assert_eq!(code, 405);

    let printed = kubectl_ok(&kubeconfig, &["get", "apiservices"]).await;
    let rows: Vec<Vec<&str>> = printed.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["NAME", "SERVICE", "AVAILABLE", "AGE"]);
    for name in ["v1.", "v1.apps", "v1.policy", "v1.certificates.k8s.io", "v1.apiregistration.k8s.io"] {
        assert!(rows.iter().any(|r| r[..3] == [name, "Local", "True"]), "{name} in {printed}");
    }
    let services: Api<APIService> = Api::all(client.clone());
    let apps = services.get("v1.apps").await.unwrap();
    let spec = apps.spec.expect("a spec");
    assert_eq!((spec.group.as_deref(), spec.group_priority_minimum, spec.version_priority), (Some("apps"), 17800, 15));
    assert!(spec.service.is_none());
    let available = &apps.status.and_then(|s| s.conditions).unwrap_or_default()[0];
    assert_eq!(
        (available.type_.as_str(), available.status.as_str(), available.reason.as_deref()),
        ("Available", "True", Some("Local"))
    );

    // A CRD's group-version gets one too while it is served (crdregistration).
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let widgets = serde_json::to_value(services.get("v1.example.com").await.unwrap()).unwrap();
    assert_eq!(
        (
            &widgets["spec"]["groupPriorityMinimum"],
            &widgets["spec"]["versionPriority"],
            &widgets["status"]["conditions"][0]["status"]
        ),
        (&json!(1000), &json!(100), &json!("True"))
    );
    crds.delete("widgets.example.com", &Default::default()).await.unwrap();
    eventually("the CRD's APIService to go", || async {
        services.get_opt("v1.example.com").await.unwrap().is_none().then_some(())
    })
    .await;

    // Each kind of this module is discovered, with its short names and subresources.
    let resources = kubectl_ok(&kubeconfig, &["api-resources", "--no-headers"]).await;
    for (name, group) in [
        ("apiservices", "apiregistration.k8s.io/v1"),
        ("componentstatuses", "v1"),
        ("certificatesigningrequests", "certificates.k8s.io/v1"),
        ("tokenreviews", "authentication.k8s.io/v1"),
    ] {
        assert!(
            resources.lines().any(|l| l.split_whitespace().next() == Some(name) && l.contains(group)),
            "{name} in {resources}"
        );
    }
    let discovery = kubectl_ok(&kubeconfig, &["get", "--raw", "/api/v1"]).await;
    let discovery: Value = serde_json::from_str(&discovery).unwrap();
    let eviction = discovery["resources"].as_array().unwrap().iter().find(|r| r["name"] == "pods/eviction").cloned();
    assert_eq!(eviction.map(|e| (e["group"].clone(), e["kind"].clone())), Some((json!("policy"), json!("Eviction"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemeral_containers_are_only_added_through_their_subresource() {
    let (cluster, client) = start().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();

    // kubectl debug adds one with a strategic merge patch of the subresource.
    let out = kubectl_ok(
        &cluster.kubeconfig,
        &["debug", "app", "--image=busybox:1.36", "--target=main", "--container=debugger"],
    )
    .await;
    assert!(!out.contains("error"), "{out}");
    let debugged = serde_json::to_value(pods.get("app").await.unwrap()).unwrap();
    let added = &debugged["spec"]["ephemeralContainers"][0];
    assert_eq!(
        (&added["name"], &added["image"], &added["targetContainerName"]),
        (&json!("debugger"), &json!("busybox:1.36"), &json!("main"))
    );
    assert_eq!(added["terminationMessagePolicy"], "File", "defaulted as any container: {added}");

    let path = "/api/v1/namespaces/default/pods/app/ephemeralcontainers";
    let with = |extra: Value| {
        let mut pod = debugged.clone();
        pod["spec"]["ephemeralContainers"].as_array_mut().unwrap().push(extra);
        pod
    };
    // Ports, probes and resources are not for ephemeral containers; names are unique.
    let (code, answer) = raw_put(
        &client,
        path,
        &with(json!({"name": "main", "image": "busybox", "ports": [{"containerPort": 80}],
                      "readinessProbe": {"exec": {"command": ["true"]}}})),
    )
    .await;
    assert_eq!(code, 422, "{answer}");
    let message = answer["message"].as_str().unwrap();
    for expected in [
        "spec.ephemeralContainers[1].name: Duplicate value: \"main\"",
        "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container",
        "spec.ephemeralContainers[1].readinessProbe: Forbidden: cannot be set for an Ephemeral Container",
    ] {
        assert!(message.contains(expected), "{expected} in {message}");
    }
    // Nor are they removed or changed once there.
    let mut removed = debugged.clone();
    removed["spec"]["ephemeralContainers"] = json!([]);
    let (code, answer) = raw_put(&client, path, &removed).await;
    assert_eq!(code, 422, "{answer}");
    assert!(
        answer["message"].as_str().unwrap().contains("existing ephemeral containers \"debugger\" may not be removed")
    );

    // Through the subresource only the ephemeral containers change; through the pod, they don't.
    let mut sneaky = with(json!({"name": "second", "image": "busybox"}));
    sneaky["spec"]["containers"][0]["image"] = json!("nginx:1.28");
    sneaky["metadata"]["labels"] = json!({"sneaky": "yes"});
    let (code, answer) = raw_put(&client, path, &sneaky).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["spec"]["ephemeralContainers"].as_array().unwrap().len(), 2);
    assert_eq!(answer["spec"]["containers"][0]["image"], "nginx:1.27");
    assert!(answer["metadata"].get("labels").is_none(), "{answer}");
    let refused = api_error(
        pods.patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"ephemeralContainers": [{"name": "third", "image": "busybox"}]}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(refused.code, 422);
}
