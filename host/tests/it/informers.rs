//! Shared informers against the embedded cluster: sync, changes with their previous state,
//! the plugin cache view, and recovery from dropped watches and compaction.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::broadcast::Receiver;
use wasmcm::{Change, Discovery, Informers, PluginCache};
use wasmcm_apiserver::{Cluster, ClusterConfig};
use wasmcm_guest::{Cache, Kind, Selector};

async fn start() -> (Cluster, Client) {
    let cluster = Cluster::start(ClusterConfig::default()).await.unwrap();
    let client = wasmcm_test_support::client(&cluster.kubeconfig).await;
    (cluster, client)
}

async fn next(rx: &mut Receiver<Change>, name: &str) -> Change {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let c = rx.recv().await.unwrap();
            if c.object.name == name {
                return c;
            }
        }
    })
    .await
    .expect("a change arrives")
}

fn cm(name: &str, app: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"app": app}}, "data": {"k": "v"}})).unwrap()
}

#[tokio::test]
async fn informers_sync_share_and_report_changes() {
    let (_cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &cm("before", "web")).await.unwrap();

    let informers = Informers::new(client.clone(), Discovery::new(client.clone()));
    let kind = Kind::new("v1", "ConfigMap");
    let informer = informers.informer(&kind);
    let again = informers.informer(&kind);
    assert!(std::sync::Arc::ptr_eq(&informer, &again), "one informer per kind, shared");
    tokio::time::timeout(Duration::from_secs(20), informer.wait_synced()).await.expect("syncs");
    assert!(informer.get("default", "before").is_some(), "the initial list is in the store");

    let mut rx = informer.subscribe();
    cms.create(&PostParams::default(), &cm("a", "web")).await.unwrap();
    let c = next(&mut rx, "a").await;
    assert!(!c.deleted && c.old.is_none());
    cms.patch("a", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "w"}}))).await.unwrap();
    let c = next(&mut rx, "a").await;
    assert!(c.old.is_some_and(|o| o.resource_version != c.object.resource_version));
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    assert!(next(&mut rx, "a").await.deleted);

    let cache = PluginCache::new([informer.clone()]);
    let json = cache.get(&kind, "default", "before").expect("served from the store");
    assert!(json.contains("\"name\":\"before\""));
    let web = Selector { match_labels: vec![("app".into(), "web".into())], ..Default::default() };
    assert_eq!(cache.list(&kind, "default", &web).len(), 1);
    assert!(cache.get(&Kind::new("v1", "Secret"), "default", "x").is_none(), "undeclared kinds are not in the view");
}

#[tokio::test]
async fn informers_recover_from_dropped_watches_and_compaction() {
    let (cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &cm("doomed", "web")).await.unwrap();
    let informers = Informers::new(client.clone(), Discovery::new(client.clone()));
    let informer = informers.informer(&Kind::new("v1", "ConfigMap"));
    informer.wait_synced().await;
    let mut rx = informer.subscribe();

    // Cut the watch, forget the history, and change things meanwhile: the informer must
    // re-list and still report the deletion it could not see.
    cluster.compact();
    cluster.drop_watches();
    cms.delete("doomed", &DeleteParams::default()).await.unwrap();
    cms.create(&PostParams::default(), &cm("born", "web")).await.unwrap();
    cluster.compact();
    assert!(next(&mut rx, "doomed").await.deleted);
    next(&mut rx, "born").await;
    assert!(informer.get("default", "doomed").is_none());
    assert!(informer.get("default", "born").is_some());
}

#[tokio::test]
async fn the_controller_index_follows_adoption_release_and_deletion() {
    let (_cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut uids = Vec::new();
    for owner in ["owner-1", "owner-2"] {
        let created = cms.create(&PostParams::default(), &cm(owner, "owner")).await.unwrap();
        uids.push(created.metadata.uid.unwrap());
    }
    let owned_by = |uid: &str, controller: bool| {
        json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid, "controller": controller}]}})
    };
    for (name, owner) in [("b", Some(0)), ("a", Some(0)), ("c", Some(1)), ("d", None)] {
        cms.create(&PostParams::default(), &cm(name, "web")).await.unwrap();
        if let Some(i) = owner {
            cms.patch(name, &PatchParams::default(), &Patch::Merge(owned_by(&uids[i], true))).await.unwrap();
        }
    }
    let informers = Informers::new(client.clone(), Discovery::new(client.clone()));
    let kind = Kind::new("v1", "ConfigMap");
    let informer = informers.informer(&kind);
    informer.wait_synced().await;
    let cache = PluginCache::new([informer.clone()]);
    let names = |uid: &str, orphans: bool| -> Vec<String> {
        cache
            .list_controlled(&kind, "default", uid, orphans)
            .iter()
            .map(|j| serde_json::from_str::<serde_json::Value>(j).unwrap()["metadata"]["name"].as_str().unwrap().into())
            .collect()
    };
    assert_eq!(names(&uids[0], false), ["a", "b"]);
    assert_eq!(names(&uids[0], true), ["a", "b", "d", "owner-1", "owner-2"], "then the orphans, by name");
    assert_eq!(names(&uids[1], false), ["c"]);
    assert!(names(&uids[1], true).contains(&"d".to_string()));
    assert!(cache.list_controlled(&kind, "kube-system", &uids[0], false).is_empty(), "one namespace only");

    let mut rx = informer.subscribe();
    // Released (a non-controller reference is not a controller), adopted by the other, deleted.
    cms.patch("a", &PatchParams::default(), &Patch::Merge(owned_by(&uids[0], false))).await.unwrap();
    next(&mut rx, "a").await;
    cms.patch("d", &PatchParams::default(), &Patch::Merge(owned_by(&uids[1], true))).await.unwrap();
    next(&mut rx, "d").await;
    cms.delete("c", &DeleteParams::default()).await.unwrap();
    next(&mut rx, "c").await;
    assert_eq!(names(&uids[0], false), ["b"]);
    assert_eq!(names(&uids[1], false), ["d"]);
    assert_eq!(names(&uids[1], true), ["d", "a", "owner-1", "owner-2"]);
    let (json, other) = informer.bytes();
    assert!(json > 0 && other > 0, "the memory figures count what is cached: {json} {other}");
}

#[tokio::test]
async fn selector_lists_through_the_label_index_match_a_scan_as_labels_change() {
    let (_cluster, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let labels = |app: &str, tier: &str| json!({"metadata": {"labels": {"app": app, "tier": tier}}});
    for (i, app) in ["web", "db", "web", "web", "db", "cache"].iter().enumerate() {
        cms.create(&PostParams::default(), &cm(&format!("cm-{i}"), app)).await.unwrap();
    }
    let informers = Informers::new(client.clone(), Discovery::new(client.clone()));
    let kind = Kind::new("v1", "ConfigMap");
    let informer = informers.informer(&kind);
    informer.wait_synced().await;
    let selectors = ["app=web", "app=web,tier=front", "app in (db),tier", "tier=front", "app=none", "app!=web", "app"];
    // The index is asked for equality requirements only; a scan of the namespace is the truth.
    let check = |when: &str| {
        for s in selectors {
            let selector = Selector::parse(s).unwrap();
            let listed: Vec<String> = informer.list("default", &selector).iter().map(|o| o.name.clone()).collect();
            let scanned: Vec<String> = informer
                .list("default", &Selector::everything())
                .iter()
                .filter(|o| selector.matches(&o.labels))
                .map(|o| o.name.clone())
                .collect();
            assert_eq!(listed, scanned, "{when}: {s}");
        }
    };
    check("synced");
    let mut rx = informer.subscribe();
    cms.patch("cm-0", &PatchParams::default(), &Patch::Merge(labels("db", "front"))).await.unwrap();
    next(&mut rx, "cm-0").await;
    cms.patch("cm-2", &PatchParams::default(), &Patch::Merge(labels("web", "front"))).await.unwrap();
    next(&mut rx, "cm-2").await;
    cms.delete("cm-3", &DeleteParams::default()).await.unwrap();
    next(&mut rx, "cm-3").await;
    check("after relabels and a deletion");
    let web: Vec<String> =
        informer.list("default", &Selector::parse("app=web").unwrap()).iter().map(|o| o.name.clone()).collect();
    assert_eq!(web, ["cm-2"]);
    assert!(informer.list("kube-system", &Selector::parse("app=web").unwrap()).is_empty(), "one namespace only");
}

/// An informer of listed namespaces lists and watches each of them alone: it holds their
/// objects and no others, is shared by whoever asks for the same namespaces, re-lists each
/// after compaction without losing the others' objects, and is fresh once every namespace
/// has listed again. A cluster-scoped kind asked for in namespaces is cached whole.
#[tokio::test]
async fn an_informer_of_listed_namespaces_caches_those_alone() {
    use k8s_openapi::api::core::v1::Namespace;
    let (cluster, client) = start().await;
    for ns in ["a", "b", "c"] {
        let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
        Api::<ConfigMap>::namespaced(client.clone(), ns).create(&PostParams::default(), &cm("x", "web")).await.unwrap();
    }
    let informers = Informers::new(client.clone(), Discovery::new(client.clone()));
    let kind = Kind::new("v1", "ConfigMap");
    let listed: std::collections::BTreeSet<String> = ["a".to_string(), "b".to_string()].into();
    let informer = informers.informer_in(&kind, Some(&listed));
    assert!(std::sync::Arc::ptr_eq(&informer, &informers.informer_in(&kind, Some(&listed))), "shared");
    assert!(!std::sync::Arc::ptr_eq(&informer, &informers.informer(&kind)), "not the cluster-wide one");
    tokio::time::timeout(Duration::from_secs(20), informer.wait_synced()).await.expect("syncs");
    assert_eq!(informer.namespaces(), Some(&listed));
    let cached: std::collections::BTreeSet<String> =
        informer.list("", &Selector::everything()).iter().map(|o| o.namespace.clone()).collect();
    assert_eq!(cached, listed);

    let mut rx = informer.subscribe();
    cluster.compact();
    cluster.drop_watches();
    Api::<ConfigMap>::namespaced(client.clone(), "a").delete("x", &DeleteParams::default()).await.unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), "b").create(&PostParams::default(), &cm("y", "web")).await.unwrap();
    cluster.compact();
    let mut seen = vec![next(&mut rx, "x").await];
    assert!(seen[0].deleted && seen[0].object.namespace == "a", "{:?}", seen[0]);
    seen.push(next(&mut rx, "y").await);
    let since = tokio::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(20), informer.fresh_since(since)).await.expect("every namespace re-lists");
    while let Ok(change) = rx.try_recv() {
        seen.push(change);
    }
    // Each namespace's re-list judges its own objects: b's stay, never deleted in passing.
    let b_deleted: Vec<_> = seen.iter().filter(|c| c.deleted && c.object.namespace == "b").collect();
    assert!(b_deleted.is_empty(), "{b_deleted:?}");
    assert!(informer.get("a", "x").is_none());
    assert!(informer.get("b", "x").is_some() && informer.get("b", "y").is_some(), "b's objects kept");
    assert!(informer.get("c", "x").is_none());

    let whole = informers.informer_in(&Kind::new("v1", "Namespace"), Some(&listed));
    tokio::time::timeout(Duration::from_secs(20), whole.wait_synced()).await.expect("syncs");
    assert_eq!(whole.namespaces(), None, "a cluster-scoped kind is cached whole");
    assert!(whole.get("", "c").is_some());
}
