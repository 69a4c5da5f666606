//! The embedded API server through a real client (kube-rs over HTTPS with the written
//! kubeconfig): CRUD, subresources, optimistic concurrency, watch semantics, garbage
//! collection, the simulated kubelet, what a new cluster holds, and what bad requests get.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Namespace, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};
use wasmcm_apiserver::{Cluster, FaultConfig};
use wasmcm_test_support::{PATIENCE, eventually};

async fn start() -> (Cluster, Client) {
    wasmcm_test_support::cluster().await
}

/// The resourceVersion the whole store is at, as a list reports it.
async fn store_rv(client: &Client) -> String {
    let (_, list) = raw(client, "GET", "/api/v1/namespaces/default/configmaps", "application/json", "").await;
    list["metadata"]["resourceVersion"].as_str().expect("a list's resourceVersion").to_string()
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}},
        },
    }))
    .unwrap()
}

fn api_error(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn crud_generation_status_and_scale() {
    let (_cluster, client) = start().await;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let created = deploys.create(&PostParams::default(), &deployment("web", 2)).await.unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.is_some() && meta.creation_timestamp.is_some() && meta.resource_version.is_some());
    assert_eq!(meta.generation, Some(1));

    // Spec changes bump generation; status writes and label changes do not.
    let patched =
        deploys.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 4}}))).await.unwrap();
    assert_eq!(patched.metadata.generation, Some(2));
    let labelled = deploys
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})))
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(2));
    let mut with_status = labelled.clone();
    with_status.status = Some(serde_json::from_value(json!({"replicas": 4, "observedGeneration": 2})).unwrap());
    let st = deploys.replace_status("web", &PostParams::default(), &with_status).await.unwrap();
    assert_eq!(st.status.as_ref().and_then(|s| s.replicas), Some(4));
    assert_eq!(st.metadata.generation, Some(2));
    // Writes to the main resource ignore status.
    let mut sneaky = st.clone();
    sneaky.status = Some(serde_json::from_value(json!({"replicas": 99})).unwrap());
    let replaced = deploys.replace("web", &PostParams::default(), &sneaky).await.unwrap();
    assert_eq!(replaced.status.as_ref().and_then(|s| s.replicas), Some(4));

    assert_eq!(replaced.metadata.resource_version, st.metadata.resource_version, "a no-op write stores nothing");

    // Optimistic concurrency: a stale resourceVersion is a 409 Conflict.
    deploys
        .patch("web", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"z": "1"}}})))
        .await
        .unwrap();
    let (code, reason) = api_error(deploys.replace("web", &PostParams::default(), &st).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (409, "Conflict"));

    // /scale reads and writes spec.replicas.
    let scale = deploys.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(4));
    deploys.patch_scale("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 1}}))).await.unwrap();
    assert_eq!(deploys.get("web").await.unwrap().spec.replicas, Some(1));

    // Lists honour label selectors.
    deploys.create(&PostParams::default(), &deployment("api", 1)).await.unwrap();
    let web = deploys.list(&ListParams::default().labels("app=web")).await.unwrap();
    assert_eq!(web.items.len(), 1);
    assert_eq!(deploys.list(&ListParams::default().labels("app in (web,api)")).await.unwrap().items.len(), 2);
    assert_eq!(deploys.list(&ListParams::default().labels("app!=web")).await.unwrap().items.len(), 1);

    deploys.delete("web", &DeleteParams::default()).await.unwrap();
    let (code, _) = api_error(deploys.get("web").await.unwrap_err());
    assert_eq!(code, 404);
}

#[tokio::test]
async fn pods_are_scheduled_started_and_deleted_gracefully() {
    let (_cluster, client) = start().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "terminationGracePeriodSeconds": 1},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let running = eventually("the pod to run", || async {
        let p = pods.get("p").await.ok()?;
        let status = p.status.clone()?;
        let ready = status.conditions?.iter().any(|c| c.type_ == "Ready" && c.status == "True");
        (status.phase.as_deref() == Some("Running") && ready).then_some(p)
    })
    .await;
    assert!(running.spec.as_ref().and_then(|s| s.node_name.clone()).is_some_and(|n| n.starts_with("wasmcm-node-")));
    assert!(running.status.as_ref().and_then(|s| s.pod_ip.clone()).is_some());

    pods.delete("p", &DeleteParams::default()).await.unwrap();
    let terminating = pods.get("p").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some(), "a bound pod terminates gracefully");
    eventually("the pod to be gone", || async { pods.get("p").await.is_err().then_some(()) }).await;
}

#[tokio::test]
async fn deleting_an_owner_collects_its_dependents_unless_orphaned() {
    let (_cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let owner = |name: &str| -> ConfigMap { serde_json::from_value(json!({"metadata": {"name": name}})).unwrap() };
    let child = |name: &str, owner: &ConfigMap| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name, "uid": owner.metadata.uid,
            "controller": true, "blockOwnerDeletion": true}]}}))
        .unwrap()
    };
    let a = cms.create(&PostParams::default(), &owner("a")).await.unwrap();
    cms.create(&PostParams::default(), &child("a-child", &a)).await.unwrap();
    let b = cms.create(&PostParams::default(), &owner("b")).await.unwrap();
    cms.create(&PostParams::default(), &child("b-child", &b)).await.unwrap();

    cms.delete("a", &DeleteParams::background()).await.unwrap();
    eventually("a-child to be collected", || async { cms.get("a-child").await.is_err().then_some(()) }).await;

    cms.delete("b", &DeleteParams::orphan()).await.unwrap();
    eventually("b to be gone", || async { cms.get("b").await.is_err().then_some(()) }).await;
    let orphan = cms.get("b-child").await.expect("an orphaned dependent stays");
    assert!(orphan.metadata.owner_references.unwrap_or_default().is_empty());

    let c = cms.create(&PostParams::default(), &owner("c")).await.unwrap();
    cms.create(&PostParams::default(), &child("c-child", &c)).await.unwrap();
    cms.delete("c", &DeleteParams::foreground()).await.unwrap();
    eventually("c and its child to be gone", || async {
        (cms.get("c").await.is_err() && cms.get("c-child").await.is_err()).then_some(())
    })
    .await;
}

#[tokio::test]
async fn namespaces_must_exist_and_deleting_one_deletes_its_contents() {
    let (_cluster, client) = start().await;
    let nss: Api<Namespace> = Api::all(client.clone());
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
    let (code, _) = api_error(cms.create(&PostParams::default(), &cm).await.unwrap_err());
    assert_eq!(code, 404, "creating in a missing namespace");

    nss.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap())
        .await
        .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    nss.delete("team", &DeleteParams::default()).await.unwrap();
    // As upstream: Terminating with the `kubernetes` finalizer, its content kept for the
    // namespace controller's grace period, new content refused meanwhile.
    let ns = nss.get("team").await.unwrap();
    assert_eq!(ns.status.and_then(|s| s.phase).as_deref(), Some("Terminating"));
    assert_eq!(ns.spec.and_then(|s| s.finalizers), Some(vec!["kubernetes".to_owned()]));
    cms.get("x").await.expect("the content stays for the grace period");
    let other: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "y"}})).unwrap();
    let kube::Error::Api(refused) = cms.create(&PostParams::default(), &other).await.unwrap_err() else {
        panic!("an API error")
    };
    assert_eq!(
        (refused.code, refused.message.as_str()),
        (
            403,
            "configmaps \"y\" is forbidden: unable to create new content in namespace team because it is being terminated"
        )
    );
    eventually("the namespace and its content to be gone", || async {
        (nss.get("team").await.is_err() && cms.get("x").await.is_err()).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_new_cluster_has_what_kube_apiserver_makes_at_start() {
    let (cluster, client) = start().await;
    // default/kubernetes names this server, on the first address of the service range.
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let kubernetes = services.get("kubernetes").await.expect("default/kubernetes");
    let spec = kubernetes.spec.expect("a spec");
    assert_eq!(spec.cluster_ip.as_deref(), Some("10.96.0.1"));
    assert_eq!(spec.ports.expect("ports")[0].port, 443);
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "default");
    let subset = endpoints.get("kubernetes").await.expect("its Endpoints").subsets.expect("a subset").remove(0);
    let address = subset.addresses.expect("an address").remove(0).ip;
    assert_eq!(address, cluster.addr.ip().to_string());
    assert_eq!(subset.ports.expect("a port")[0].port, i32::from(cluster.addr.port()));
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let slice = slices.get("kubernetes").await.expect("its EndpointSlice");
    assert_eq!(slice.endpoints.expect("endpoints")[0].addresses, vec![address]);

    // The default RBAC policy is stored, so it can be read and listed.
    let roles: Api<ClusterRole> = Api::all(client.clone());
    for name in ["cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user"] {
        roles.get(name).await.unwrap_or_else(|e| panic!("ClusterRole {name}: {e}"));
    }
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let admins = bindings.get("cluster-admin").await.expect("the cluster-admin binding");
    assert_eq!(admins.subjects.expect("subjects")[0].name, "system:masters");

    // The system namespaces may not be deleted; a new one may.
    let nss: Api<Namespace> = Api::all(client.clone());
    for name in ["default", "kube-system", "kube-public"] {
        let e = nss.delete(name, &DeleteParams::default()).await.expect_err("an immortal namespace");
        let kube::Error::Api(status) = e else { panic!("an API error") };
        assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
        assert_eq!(status.message, format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted"));
    }
    nss.get("default").await.expect("default is still there");

    // Nodes are Ready from the start, and a boolean field selector matches an unset field.
    let nodes: Api<Node> = Api::all(client.clone());
    eventually("the nodes", || async {
        let list = nodes.list(&ListParams::default().fields("spec.unschedulable=false")).await.ok()?;
        let ready = |n: &Node| {
            n.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "Ready").map(|c| c.status == "True")
        };
        (list.items.len() == 3 && list.items.iter().all(|n| ready(n) == Some(true))).then_some(())
    })
    .await;
    assert!(nodes.list(&ListParams::default().fields("spec.unschedulable=true")).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn deleting_answers_a_status_or_the_object_as_upstream_does() {
    let (_cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = cms
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap())
        .await
        .unwrap();
    // A ConfigMap's registry answers a Status of success naming what went.
    let status = cms.delete("x", &DeleteParams::default()).await.unwrap().right().expect("a Status");
    assert_eq!(status.status, Some(kube::core::response::StatusSummary::Success));
    let details = status.details.expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str(), details.uid),
        ("x", "configmaps", cm.metadata.uid.unwrap())
    );
    // A Deployment's (apps) also names its group; one being deleted in the foreground is returned.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments.create(&PostParams::default(), &deployment("d", 0)).await.unwrap();
    let status = deployments.delete("d", &DeleteParams::default()).await.unwrap().right().expect("a Status");
    assert_eq!(status.details.expect("details").group, "apps");
    deployments.create(&PostParams::default(), &deployment("f", 1)).await.unwrap();
    let pending = deployments.delete("f", &DeleteParams::foreground()).await.unwrap().left().expect("the object");
    assert!(pending.metadata.deletion_timestamp.is_some());
    // A Pod's registry returns the deleted object (here gracefully, so still there).
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    pods.create(&PostParams::default(), &serde_json::from_value(pod).unwrap()).await.unwrap();
    let deleted = pods.delete("p", &DeleteParams::default()).await.unwrap().left().expect("the Pod");
    assert_eq!(deleted.metadata.name.as_deref(), Some("p"));
}

#[tokio::test]
async fn watches_resume_in_order_and_answer_410_after_compaction() {
    let (cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let start_rv = cms.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    for i in 0..5 {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("cm-{i}")}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    cms.delete("cm-0", &DeleteParams::default()).await.unwrap();
    let mut stream = cms.watch(&WatchParams::default().timeout(5), &start_rv).await.unwrap().boxed();
    let mut seen = Vec::new();
    while seen.len() < 6 {
        match stream.try_next().await.unwrap().expect("the stream stays open") {
            WatchEvent::Added(cm) => seen.push(format!("ADDED {}", cm.metadata.name.unwrap())),
            WatchEvent::Deleted(cm) => seen.push(format!("DELETED {}", cm.metadata.name.unwrap())),
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, ["ADDED cm-0", "ADDED cm-1", "ADDED cm-2", "ADDED cm-3", "ADDED cm-4", "DELETED cm-0"]);

    cluster.compact();
    let mut stream = cms.watch(&WatchParams::default(), &start_rv).await.unwrap().boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!(e.code, 410),
        other => panic!("expected 410 Gone, got {other:?}"),
    }
}

#[tokio::test]
async fn watch_lines_carry_the_type_before_the_object_as_kube_apiserver_writes_them() {
    // Clients decode `object` straight into their type only when `type` came first (kube-rs's
    // adjacently tagged WatchEvent); the host keeps objects as served on that path.
    let (_cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let start_rv = cms.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "typed"}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    for path in [
        format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={start_rv}&timeoutSeconds=1"),
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0&timeoutSeconds=1".to_string(),
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1&timeoutSeconds=1".to_string(),
    ] {
        let req = http::Request::builder().uri(&path).body(Vec::new()).unwrap();
        let body = client.request_text(req).await.unwrap();
        let lines: Vec<&str> = body.lines().collect();
        assert!(!lines.is_empty(), "{path}: no events");
        for line in lines {
            assert!(line.starts_with(r#"{"type":""#), "{path}: {line}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_thousand_concurrent_writes_reach_a_watcher_exactly_once_in_order() {
    let (_cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let start_rv = cms.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    let watcher = {
        let cms = cms.clone();
        let start_rv = start_rv.clone();
        tokio::spawn(async move {
            let mut seen: BTreeMap<String, u64> = BTreeMap::new();
            let mut last_rv = 0u64;
            let mut stream = cms.watch(&WatchParams::default().timeout(290), &start_rv).await.unwrap().boxed();
            while seen.len() < 10_000 {
                let cm = match stream.try_next().await.unwrap() {
                    Some(WatchEvent::Added(cm)) => cm,
                    // kube asks for bookmarks; a slow run gets one every few seconds.
                    Some(WatchEvent::Bookmark(_)) => continue,
                    other => panic!("only ADDED and BOOKMARK expected, got {other:?}"),
                };
                let rv: u64 = cm.metadata.resource_version.unwrap().parse().unwrap();
                assert!(rv > last_rv, "resourceVersions must increase: {rv} after {last_rv}");
                last_rv = rv;
                assert!(seen.insert(cm.metadata.name.unwrap(), rv).is_none(), "an event was delivered twice");
            }
            seen
        })
    };
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let cms = cms.clone();
            tokio::spawn(async move {
                for i in 0..1250 {
                    let cm: ConfigMap = serde_json::from_value(
                        json!({"metadata": {"name": format!("w{w}-{i:04}")}, "data": {"i": i.to_string()}}),
                    )
                    .unwrap();
                    cms.create(&PostParams::default(), &cm).await.unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let seen = tokio::time::timeout(PATIENCE, watcher).await.expect("the watcher finishes").unwrap();
    assert_eq!(seen.len(), 10_000);
}

/// A GET whose status and body are returned as they are: a watch's stream, a list, an error.
async fn get_text(client: &Client, path: &str) -> (u16, String) {
    let req = http::Request::builder().uri(path).body(kube::client::Body::from(Vec::new())).unwrap();
    let res = client.send(req).await.expect("the request gets an answer");
    let code = res.status().as_u16();
    let bytes = res.into_body().collect_bytes().await.unwrap();
    (code, String::from_utf8_lossy(&bytes).into_owned())
}

/// The names of a watch stream's objects; `None` when the body is not one event a line.
fn watched_names(body: &str) -> Option<Vec<String>> {
    body.lines()
        .map(|l| {
            let event: Value = serde_json::from_str(l).ok()?;
            event["type"].as_str()?;
            Some(event["object"]["metadata"]["name"].as_str()?.to_string())
        })
        .collect::<Option<Vec<_>>>()
        .filter(|names| !names.is_empty())
}

#[tokio::test]
async fn a_request_is_served_as_the_verb_it_was_authorized_as() {
    // Authorization and serving read one parse of the request: `?watch=` as upstream's
    // parameter codec decodes a bool (only absent, `0` and `false` in any case are false), and
    // the deprecated `/watch/` prefix, which upstream still serves. `?watch=True` was
    // authorized as a watch and served as a list; the prefix was authorized and answered 404.
    let (_cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in ["cm-a", "cm-b"] {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    const CMS: &str = "/api/v1/namespaces/default/configmaps";
    let watches = ["watch=true", "watch=True", "watch=TRUE", "watch=1", "watch=t", "watch=yes", "watch="];
    let lists = ["watch=false", "watch=False", "watch=0", "limit=500"];
    for (query, watch) in watches.iter().map(|q| (q, true)).chain(lists.iter().map(|q| (q, false))) {
        let (code, body) = get_text(&client, &format!("{CMS}?{query}&resourceVersion=0&timeoutSeconds=1")).await;
        assert_eq!(code, 200, "{query}: {body}");
        if watch {
            let names = watched_names(&body).unwrap_or_else(|| panic!("{query}: a watch, not {body}"));
            assert!(names.contains(&"cm-a".to_string()), "{query}: {names:?}");
        } else {
            assert!(body.contains(r#""kind":"ConfigMapList""#), "{query}: a list, not {body}");
        }
    }

    let (code, body) =
        get_text(&client, "/api/v1/watch/namespaces/default/configmaps?resourceVersion=0&timeoutSeconds=1").await;
    assert_eq!(code, 200, "{body}");
    let names = watched_names(&body).unwrap_or_else(|| panic!("a watch, not {body}"));
    assert!(names.contains(&"cm-a".to_string()) && names.contains(&"cm-b".to_string()), "{names:?}");
    let (code, body) = get_text(&client, "/api/v1/watch/configmaps?resourceVersion=0&timeoutSeconds=1").await;
    assert_eq!(code, 200, "{body}");
    assert!(watched_names(&body).is_some_and(|n| n.contains(&"cm-b".to_string())), "all namespaces: {body}");
    // One object: a watch of the collection through its name, as upstream's ListResource.
    for path in [
        "/api/v1/watch/namespaces/default/configmaps/cm-a?resourceVersion=0&timeoutSeconds=1",
        "/api/v1/watch/namespaces/default/configmaps/cm-a?resourceVersion=0&timeoutSeconds=1&fieldSelector=metadata.name%3Dcm-a",
    ] {
        let (code, body) = get_text(&client, path).await;
        assert_eq!(code, 200, "{path}: {body}");
        assert_eq!(watched_names(&body), Some(vec!["cm-a".to_string()]), "{path}: {body}");
    }
    let mismatched = "/api/v1/watch/namespaces/default/configmaps/cm-a?fieldSelector=metadata.name%3Dcm-b";
    let (code, body) = raw(&client, "GET", mismatched, "", "").await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["message"], "fieldSelector metadata.name doesn't match requested name");
    let (code, _) = raw(&client, "POST", "/api/v1/watch/namespaces/default/configmaps", "application/json", "{}").await;
    assert_eq!(code, 405, "only GET watches");
    let (code, _) = raw(&client, "GET", "/api/v1/watch/namespaces/default/configmaps/cm-a/status", "", "").await;
    assert_eq!(code, 404, "a watch has no subresources");

    // Nothing is served past a subresource. Authorization took this for the node's status, and
    // the node's status was served, whatever followed in the path.
    let nodes: Api<Node> = Api::all(client.clone());
    let node =
        eventually("a node", || async { nodes.list(&ListParams::default()).await.ok()?.items.pop()?.metadata.name })
            .await;
    let (code, _) = raw(&client, "GET", &format!("/api/v1/nodes/{node}/status"), "", "").await;
    assert_eq!(code, 200);
    let (code, body) = raw(&client, "GET", &format!("/api/v1/nodes/{node}/status/anything"), "", "").await;
    assert_eq!(code, 404, "{body}");
}

/// Raw requests for what a typed client cannot send.
async fn raw(client: &Client, method: &str, path: &str, content_type: &str, body: &str) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", content_type)
        .body(body.as_bytes().to_vec())
        .unwrap();
    match client.request::<Value>(req).await {
        Ok(v) => (200, v),
        Err(kube::Error::Api(s)) => (s.code, json!({"reason": s.reason, "message": s.message})),
        Err(e) => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn bad_requests_get_the_right_status_and_change_nothing() {
    let (_cluster, client) = start().await;
    // Let the cluster's own start-up writes (nodes, default ServiceAccounts) land first.
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::all(client.clone());
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    eventually("start-up to settle", || async {
        let settled = sas.list(&ListParams::default()).await.ok()?.items.len() == 4
            && nodes.list(&ListParams::default()).await.ok()?.items.len() == 3;
        settled.then_some(())
    })
    .await;
    let rv_before = store_rv(&client).await;
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ok"}}"#;
    let cases: Vec<(&str, &str, &str, String, u16)> = vec![
        ("malformed JSON", "POST", "/api/v1/namespaces/default/configmaps", "{not json".into(), 400),
        (
            "wrong kind in body",
            "POST",
            "/api/v1/namespaces/default/configmaps",
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#.into(),
            400,
        ),
        ("missing namespace", "POST", "/api/v1/namespaces/nope/configmaps", cm.into(), 404),
        ("unknown resource", "GET", "/api/v1/namespaces/default/widgets", String::new(), 404),
        ("unknown group", "GET", "/apis/example.com/v1/widgets", String::new(), 404),
        ("method not allowed", "POST", "/api/v1/namespaces/default/configmaps/ok", cm.into(), 405),
        (
            "invalid name",
            "POST",
            "/api/v1/namespaces/default/configmaps",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#.into(),
            422,
        ),
        (
            "selector not matching the template",
            "POST",
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"selector": {"matchLabels": {"app": "a"}},
                            "template": {"metadata": {"labels": {"app": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
            .to_string(),
            422,
        ),
    ];
    for (what, method, path, body, code) in cases {
        let (got, status) = raw(&client, method, path, "application/json", &body).await;
        assert_eq!(got, code, "{what}: {status}");
        assert!(status["reason"].as_str().is_some_and(|r| !r.is_empty()), "{what}: a Status with a reason");
    }
    let (code, status) = raw(&client, "POST", "/api/v1/namespaces/default/configmaps", "text/csv", "a,b").await;
    assert_eq!((code, status["reason"].as_str()), (415, Some("UnsupportedMediaType")));
    assert_eq!(store_rv(&client).await, rv_before, "rejected requests must not write");

    // YAML bodies are accepted where kubectl may send them.
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n";
    let (code, created) = raw(&client, "POST", "/api/v1/namespaces/default/configmaps", "application/yaml", yaml).await;
    assert_eq!(code, 200, "{created}");
    assert_eq!(created["data"]["k"], "v");
}

/// The admin kubeconfig's user, changed by `f`, as a client.
async fn client_as(cluster: &Cluster, f: impl Fn(&mut kube::config::AuthInfo)) -> Client {
    let mut kubeconfig = Kubeconfig::read_from(&cluster.kubeconfig).unwrap();
    for user in &mut kubeconfig.auth_infos {
        f(user.auth_info.as_mut().unwrap());
    }
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.unwrap();
    Client::try_from(config).unwrap()
}

#[tokio::test]
async fn requests_without_the_token_or_the_client_certificate_are_refused() {
    let (cluster, _client) = start().await;
    let client = client_as(&cluster, |auth| {
        auth.token = Some("wrong".to_string().into());
        (auth.client_certificate_data, auth.client_key_data) = (None, None);
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let (code, reason) = api_error(cms.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (401, "Unauthorized"));
}

/// The admin kubeconfig carries a client certificate of the cluster's CA, as kubeadm's and
/// kind's do: a client that sends no token (kube-rs's bare TLS connectors) is the admin by it,
/// named as upstream's x509 authenticator names it; a certificate of another CA fails the
/// handshake.
#[tokio::test]
async fn the_admin_client_certificate_authenticates_without_a_token() {
    let (cluster, _client) = start().await;
    let client = client_as(&cluster, |auth| auth.token = None).await;
    let review: serde_json::Value = client
        .request(
            http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
                .header("content-type", "application/json")
                .body(br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(review["status"]["userInfo"]["username"], "kubernetes-admin", "{review}");
    assert_eq!(review["status"]["userInfo"]["groups"], json!(["system:masters", "system:authenticated"]));

    let foreign = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "kubernetes-admin");
    let forged = params.self_signed(&foreign).unwrap();
    use base64::Engine as _;
    let client = client_as(&cluster, |auth| {
        auth.token = None;
        auth.client_certificate_data = Some(base64::engine::general_purpose::STANDARD.encode(forged.pem()));
        auth.client_key_data = Some(base64::engine::general_purpose::STANDARD.encode(foreign.serialize_pem()).into());
    })
    .await;
    let refused = Api::<ConfigMap>::namespaced(client, "default").list(&ListParams::default()).await.unwrap_err();
    assert!(!matches!(refused, kube::Error::Api(_)), "refused in the handshake: {refused:?}");
}

#[tokio::test]
async fn injected_faults_fail_writes_delay_requests_and_drop_watches() {
    let (cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = |name: &str| -> ConfigMap { serde_json::from_value(json!({"metadata": {"name": name}})).unwrap() };

    cluster.set_faults(FaultConfig { write_error_rate: 1.0, ..Default::default() });
    for i in 0..10 {
        let (code, _) = api_error(cms.create(&PostParams::default(), &cm(&format!("f{i}"))).await.unwrap_err());
        assert!([409, 429, 500].contains(&code), "{code}");
    }
    assert!(cms.list(&ListParams::default()).await.is_ok(), "reads are not failed");
    assert!(cms.list(&ListParams::default()).await.unwrap().items.is_empty(), "failed writes wrote nothing");

    cluster.set_faults(FaultConfig { latency: Duration::from_millis(200), ..Default::default() });
    let t = std::time::Instant::now();
    cms.create(&PostParams::default(), &cm("slow")).await.unwrap();
    assert!(t.elapsed() >= Duration::from_millis(200));

    cluster.set_faults(Default::default());
    let rv = cms.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    let mut stream = cms.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    cluster.drop_watches();
    let ended =
        tokio::time::timeout(Duration::from_secs(10), async { while let Ok(Some(_)) = stream.try_next().await {} })
            .await;
    assert!(ended.is_ok(), "a dropped watch stream ends");
}

#[tokio::test]
async fn custom_resources_are_served_like_built_ins() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    let (_cluster, client) = start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]}],
        },
    }))
    .unwrap();
    let created = crds.create(&PostParams::default(), &crd).await.unwrap();
    let established = created.status.unwrap().conditions.unwrap();
    assert!(established.iter().any(|c| c.type_ == "Established" && c.status == "True"));

    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("example.com", "v1", "Widget"), "widgets");
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let w: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3},
    }))
    .unwrap();
    let w = widgets.create(&PostParams::default(), &w).await.unwrap();
    assert_eq!(w.metadata.generation, Some(1), "a status subresource means generation is tracked");
    assert_eq!(widgets.list(&ListParams::default()).await.unwrap().items.len(), 1);

    let req = http::Request::builder()
        .uri("/apis/example.com/v1/namespaces/default/widgets")
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .unwrap();
    let table: Value = client.request(req).await.unwrap();
    let columns: Vec<&str> =
        table["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(columns.contains(&"Size"), "{columns:?}");
    assert_eq!(table["rows"][0]["cells"][0], "w1");

    crds.delete("widgets.example.com", &DeleteParams::default()).await.unwrap();
    let (code, _) = api_error(widgets.get("w1").await.unwrap_err());
    assert_eq!(code, 404, "deleting a CRD stops serving it and removes its objects");
}

#[tokio::test]
async fn crash_looping_and_slow_to_ready_pods_can_be_simulated() {
    let (_cluster, client) = start().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = |name: &str, image: &str, annotations: Value| -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name, "annotations": annotations},
            "spec": {"containers": [{"name": "c", "image": image}]}}))
        .unwrap()
    };
    pods.create(&PostParams::default(), &pod("crash", "app:fail", json!({}))).await.unwrap();
    pods.create(&PostParams::default(), &pod("slow", "app:1", json!({"wasmcm.dev/ready-after-seconds": "2"})))
        .await
        .unwrap();
    let status = |p: &Pod| p.status.clone().unwrap_or_default();
    let ready =
        |p: &Pod| status(p).conditions.unwrap_or_default().iter().any(|c| c.type_ == "Ready" && c.status == "True");
    let crashed = eventually("restarts to grow", || async {
        let p = pods.get("crash").await.ok()?;
        let cs = status(&p).container_statuses?.into_iter().next()?;
        (cs.restart_count >= 1).then_some((p, cs))
    })
    .await;
    assert!(!ready(&crashed.0));
    let waiting = crashed.1.state.and_then(|s| s.waiting).map(|w| w.reason.unwrap_or_default());
    assert_eq!(waiting.as_deref(), Some("CrashLoopBackOff"));

    let running = eventually("slow to run", || async {
        let p = pods.get("slow").await.ok()?;
        (status(&p).phase.as_deref() == Some("Running")).then_some(p)
    })
    .await;
    assert!(!ready(&running), "not ready right after starting");
    eventually("slow to become ready", || async { pods.get("slow").await.ok().filter(|p| ready(p)) }).await;
}

#[tokio::test]
async fn kube_runtime_watchers_stream_lists_and_resume() {
    use kube::runtime::watcher;
    let (_cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..3 {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("pre-{i}")}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    for config in [watcher::Config::default(), watcher::Config::default().streaming_lists()] {
        let mut events = watcher(cms.clone(), config).boxed();
        let mut initial = Vec::new();
        loop {
            match events.try_next().await.unwrap().unwrap() {
                watcher::Event::Init => {}
                watcher::Event::InitApply(cm) => initial.push(cm.metadata.name.unwrap()),
                watcher::Event::InitDone => break,
                other => panic!("unexpected {other:?}"),
            }
        }
        let live = initial.iter().filter(|n| n.starts_with("live-")).count();
        initial.retain(|n| n.starts_with("pre-"));
        initial.sort();
        assert_eq!(initial, ["pre-0", "pre-1", "pre-2"]);
        let name = format!("live-{live}");
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
        match events.try_next().await.unwrap().unwrap() {
            watcher::Event::Apply(cm) => assert_eq!(cm.metadata.name.unwrap(), name),
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn lists_page_with_limit_and_continue_and_filter_by_fields() {
    let (_cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..7 {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("page-{i}")}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(3);
    let mut pages = 0;
    loop {
        let page = cms.list(&params).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 3);
        names.extend(page.items.into_iter().filter_map(|c| c.metadata.name).filter(|n| n.starts_with("page-")));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    assert!(pages >= 3, "{pages} pages");
    assert_eq!(names, (0..7).map(|i| format!("page-{i}")).collect::<Vec<_>>(), "every item once, in order");

    let one = cms.list(&ListParams::default().fields("metadata.name=page-3")).await.unwrap();
    assert_eq!(one.items.len(), 1);
    let others = cms.list(&ListParams::default().fields("metadata.name!=page-3")).await.unwrap();
    assert!(others.items.iter().all(|c| c.metadata.name.as_deref() != Some("page-3")));
    let (code, _) = api_error(cms.list(&ListParams::default().fields("data.x=1")).await.unwrap_err());
    assert_eq!(code, 400, "unsupported field selectors are refused");

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    )
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    eventually("the pod to run", || async {
        let running = pods.list(&ListParams::default().fields("status.phase=Running")).await.ok()?;
        (running.items.len() == 1).then_some(())
    })
    .await;
    let node = pods.get("p").await.unwrap().spec.unwrap().node_name.unwrap();
    let on_node = pods.list(&ListParams::default().fields(&format!("spec.nodeName={node}"))).await.unwrap();
    assert_eq!(on_node.items.len(), 1);
}

/// Every page of a list answers the first page's resourceVersion (kube-apiserver serves the
/// pages from that snapshot), so a watch from it shows a change made, while paging, to an object
/// already listed. Answering each page's own version lost that change for good.
#[tokio::test]
async fn a_paged_list_answers_its_first_pages_version_so_a_watch_misses_nothing() {
    let (_cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..4 {
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("page-{i}")}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let first = cms.list(&ListParams::default().limit(2)).await.unwrap();
    let listed_at = first.metadata.resource_version.clone().unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    // Changed after it was listed, before the last page.
    cms.patch("page-0", &PatchParams::default(), &Patch::Merge(json!({"data": {"changed": "yes"}}))).await.unwrap();
    let rest = cms.list(&ListParams::default().limit(2).continue_token(&token)).await.unwrap();
    assert_eq!(rest.metadata.resource_version.as_deref(), Some(listed_at.as_str()), "every page: the first's version");
    let mut events = cms.watch(&WatchParams::default(), &listed_at).await.unwrap().boxed();
    let event = tokio::time::timeout(PATIENCE, events.try_next()).await.unwrap().unwrap().unwrap();
    match event {
        WatchEvent::Modified(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("page-0")),
        other => panic!("the change made while paging, not {other:?}"),
    }
}

/// KEP-5866's `shardSelector`: shards of the namespace hash split lists and watches exactly, the
/// list echoes the selector in `metadata.shardInfo`, and a bad selector is refused.
#[tokio::test]
async fn a_shard_selector_splits_lists_and_watches_by_namespace_hash() {
    use wasmcm_core::{ShardField, ShardSelector};
    let (cluster, client) = start().await;
    let names: Vec<String> = (0..8).map(|i| format!("shard-ns-{i}")).collect();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for ns in &names {
        namespaces
            .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap())
            .await
            .unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        cms.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "c"}})).unwrap())
            .await
            .unwrap();
    }
    let halves = [0, 1].map(|i| ShardSelector::of_shards(ShardField::Namespace, [i], 2).to_string());
    let mut seen = Vec::new();
    for half in &halves {
        let path = format!("/api/v1/configmaps?shardSelector={}", urlencoding(half));
        let text = client.request_text(http::Request::get(path).body(Vec::new()).unwrap()).await.unwrap();
        let list: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(list["metadata"]["shardInfo"]["selector"], json!(half));
        let mine: Vec<String> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["metadata"]["namespace"].as_str().unwrap().to_string())
            .filter(|ns| names.contains(ns))
            .collect();
        seen.extend(mine);
    }
    seen.sort();
    assert_eq!(seen, names, "each namespace's objects in exactly one half");
    // Exactly the namespaces named by their hashes.
    let two = ShardSelector::of_values(ShardField::Namespace, ["shard-ns-2", "shard-ns-5"]).to_string();
    let path = format!("/api/v1/configmaps?watch=true&resourceVersion=0&shardSelector={}", urlencoding(&two));
    let mut watch =
        client.request_events::<ConfigMap>(http::Request::get(path).body(Vec::new()).unwrap()).await.unwrap().boxed();
    let mut added = Vec::new();
    while added.len() < 2 {
        match tokio::time::timeout(PATIENCE, watch.try_next()).await.unwrap().unwrap().unwrap() {
            WatchEvent::Added(cm) => added.push(cm.metadata.namespace.unwrap()),
            WatchEvent::Bookmark(_) => {}
            other => panic!("{other:?}"),
        }
    }
    added.sort();
    assert_eq!(added, ["shard-ns-2", "shard-ns-5"]);
    let bad = client
        .request_text(
            http::Request::get("/api/v1/configmaps?shardSelector=shardRange(object.metadata.name,%270x0%27,%270x1%27)")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap_err();
    let text = format!("{bad:?}");
    assert_eq!(api_error(bad).0, 400);
    assert!(text.contains("invalid shardSelector: unsupported field"), "{text}");
    drop(cluster);
}

fn urlencoding(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn label_selected_lists_follow_label_changes_and_a_history_bounded_by_bytes_answers_410() {
    let config = wasmcm_apiserver::ClusterConfig { history_bytes: 40_000, ..wasmcm_test_support::quick_config() };
    let cluster = Cluster::start(config).await.unwrap();
    let client = wasmcm_test_support::client(&cluster.kubeconfig).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = |name: &str, tier: &str| -> ConfigMap {
        serde_json::from_value(
            json!({"metadata": {"name": name, "labels": {"tier": tier}}, "data": {"x": "y".repeat(2000)}}),
        )
        .unwrap()
    };
    let start_rv = cms.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    for i in 0..6 {
        cms.create(&PostParams::default(), &cm(&format!("c{i}"), if i % 2 == 0 { "web" } else { "db" })).await.unwrap();
    }
    let names = |list: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        list.items.into_iter().filter_map(|c| c.metadata.name).collect()
    };
    assert_eq!(names(cms.list(&ListParams::default().labels("tier=web")).await.unwrap()), ["c0", "c2", "c4"]);
    let mut web = cms.watch(&WatchParams::default().labels("tier=web").timeout(10), "0").await.unwrap().boxed();
    let mut initial = Vec::new();
    while initial.len() < 3 {
        if let WatchEvent::Added(c) = web.try_next().await.unwrap().unwrap() {
            initial.push(c.metadata.name.unwrap());
        }
    }
    initial.sort();
    assert_eq!(initial, ["c0", "c2", "c4"]);

    let relabel = |tier: &str| Patch::Merge(json!({"metadata": {"labels": {"tier": tier}}}));
    cms.patch("c0", &PatchParams::default(), &relabel("db")).await.unwrap();
    cms.patch("c1", &PatchParams::default(), &relabel("web")).await.unwrap();
    cms.delete("c2", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match web.try_next().await.unwrap().unwrap() {
            WatchEvent::Added(c) => seen.push(format!("ADDED {}", c.metadata.name.unwrap())),
            WatchEvent::Deleted(c) => seen.push(format!("DELETED {}", c.metadata.name.unwrap())),
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, ["DELETED c0", "ADDED c1", "DELETED c2"]);
    assert_eq!(names(cms.list(&ListParams::default().labels("tier=web")).await.unwrap()), ["c1", "c4"]);
    assert_eq!(
        names(cms.list(&ListParams::default().labels("tier in (web,db)")).await.unwrap()),
        ["c0", "c1", "c3", "c4", "c5"]
    );
    assert_eq!(names(cms.list(&ListParams::default().labels("tier=web").limit(1)).await.unwrap()), ["c1"]);

    // ~12 KB of changes made since start_rv counted twice over, then more: past 40 KB.
    for i in 0..10 {
        cms.patch("c3", &PatchParams::default(), &Patch::Merge(json!({"data": {"n": i.to_string()}}))).await.unwrap();
    }
    let mut stream = cms.watch(&WatchParams::default(), &start_rv).await.unwrap().boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!(e.code, 410),
        other => panic!("expected 410 Gone, got {other:?}"),
    }
    let recent = cms.get("c3").await.unwrap().metadata.resource_version.unwrap();
    cms.patch("c3", &PatchParams::default(), &Patch::Merge(json!({"data": {"n": "last"}}))).await.unwrap();
    let mut stream = cms.watch(&WatchParams::default().timeout(5), &recent).await.unwrap().boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Modified(c)) => assert_eq!(c.data.unwrap()["n"], "last"),
        other => panic!("expected the last change, got {other:?}"),
    }
}
