//! The RBAC of deploy/manifests is least privilege both ways, against the embedded cluster's
//! RBAC. The host's ClusterRole (02-clusterrole.yaml) only reads; each built-in plugin writes as
//! its own ServiceAccount (06-plugin-identities.yaml), which the host's Role (04-role.yaml) lets
//! it impersonate, as the plugin ConfigMap (07-configmap-plugins.yaml) says:
//!   - sufficient: a host acting as the ServiceAccount wasmcm/wasmcm (its token, the manifests'
//!     RBAC objects applied with the real kubectl, leader election through the Role) runs the
//!     built-in plugins of the ConfigMap through a whole Deployment rollout: create, new
//!     image, scale, rollback annotation; and the host itself may write nothing;
//!   - necessary (for the rules checked here): the replicaset plugin's ClusterRole minus one rule
//!     makes a scenario fail visibly with the API server's 403 Forbidden for that plugin's
//!     account: without `replicasets/status` update a ReplicaSet's status never converges;
//!     without pods `create` no pod is created; without events `create` everything still
//!     converges but no event is recorded (the writer treats events as best effort).

use crate::common;

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use wasmcm::ControllerConfig;
use wasmcm::LeaderConfig;
use wasmcm::Metrics;
use wasmcm::{Host, HostConfig};
use wasmcm_apiserver::Cluster;

/// The ClusterRole of the built-in plugin `plugin` in deploy/manifests.
fn plugin_role(plugin: &str) -> ClusterRole {
    let text = std::fs::read_to_string(common::manifest("06-plugin-identities.yaml")).unwrap();
    let objects: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).expect("06-plugin-identities.yaml");
    let name = format!("wasmcm-{plugin}");
    let role = objects.into_iter().find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == name.as_str());
    serde_json::from_value(role.unwrap_or_else(|| panic!("no ClusterRole {name}"))).unwrap()
}

/// The manifests' RBAC objects, with `role` replacing the ClusterRole of its name (`None`: as
/// they are), and a host acting as the ServiceAccount wasmcm/wasmcm.
async fn service_account(cluster: &Cluster, admin: &Client, role: Option<ClusterRole>) -> common::Deployed {
    let deployed = common::service_account(cluster).await;
    if let Some(mut role) = role {
        let roles = Api::<ClusterRole>::all(admin.clone());
        let name = role.metadata.name.clone().unwrap();
        role.metadata.resource_version = roles.get(&name).await.unwrap().metadata.resource_version;
        roles.replace(&name, &PostParams::default(), &role).await.unwrap();
    }
    deployed
}

/// The host with the built-in plugins as the manifests' ConfigMap has them (each writing as its
/// own ServiceAccount), electing itself through the Lease wasmcm/wasmcm.
async fn host(deployed: common::Deployed, controller: ControllerConfig) -> (Host, Arc<Metrics>) {
    let dir = common::plugins_dir();
    let paths = [dir.path().to_path_buf()];
    let client = deployed.client;
    let (versions, failures) =
        wasmcm::load_all(common::engine(), &paths, &wasmcm::Trust::of("wasmcm"), Some(&client)).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(versions.len(), wasmcm::builtin::names().count(), "every built-in");
    assert!(versions.iter().all(|v| v.spec.service_account.is_some()), "each with its own account");
    let mut config = deployed.config;
    config.controller = ControllerConfig { host: config.controller.host.clone(), ..controller };
    config.mode = wasmcm::Mode::Leader(LeaderConfig::new("wasmcm", "wasmcm", "x"));
    let metrics = Arc::new(Metrics::default());
    let host = Host::start(deployed.kube_config, versions, config, metrics.clone()).await.unwrap();
    (host, metrics)
}

/// Fails fast so that a 403 shows as a `ReconcileFailed` event within the test's patience.
fn impatient() -> ControllerConfig {
    ControllerConfig { report_after: 3, ..ControllerConfig::default() }
}

fn image(template: Option<&k8s_openapi::api::core::v1::PodTemplateSpec>) -> Option<String> {
    template?.spec.as_ref()?.containers.first()?.image.clone()
}

/// The events wasmcm recorded in `default`.
async fn wasmcm_events(admin: &Client) -> Vec<Event> {
    let listed = Api::<Event>::namespaced(admin.clone(), "default").list(&ListParams::default()).await.unwrap();
    listed
        .items
        .into_iter()
        .filter(|e| e.reporting_component.as_deref().is_some_and(|c| c.starts_with("wasmcm.dev/")))
        .collect()
}

/// Waits until the Deployment's rollout is complete at `replicas` with `image`: every replica
/// updated, ready and available, the old ReplicaSets scaled to 0. Returns its ReplicaSets.
async fn rolled_out(admin: &Client, replicas: i32, want: &str) -> Vec<ReplicaSet> {
    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), "default");
    let rss: Api<ReplicaSet> = Api::namespaced(admin.clone(), "default");
    common::eventually(&format!("the rollout of {want} at {replicas} replicas"), || async {
        let d = deployments.get("web").await.ok()?;
        let s = d.status.as_ref()?;
        let complete = s.observed_generation == d.metadata.generation
            && image(Some(&d.spec.template)).as_deref() == Some(want)
            && s.replicas == Some(replicas)
            && s.updated_replicas == Some(replicas)
            && s.ready_replicas == Some(replicas)
            && s.available_replicas == Some(replicas);
        if !complete {
            return None;
        }
        let owned: Vec<ReplicaSet> = rss
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .filter(|rs| {
                rs.metadata.owner_references.iter().flatten().any(|o| o.uid == d.metadata.uid.clone().unwrap())
            })
            .collect();
        let scaled = owned.iter().all(|rs| {
            let spec = rs.spec.replicas;
            let status = rs.status.as_ref().map(|s| s.replicas);
            if image(rs.spec.template.as_ref()).as_deref() == Some(want) {
                spec == Some(replicas) && status == Some(replicas)
            } else {
                spec == Some(0) && status == Some(0)
            }
        });
        let pods = common::web_pods(admin).await?;
        (scaled && pods == (replicas as usize, replicas as usize)).then_some(owned)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manifests_cluster_role_suffices_for_a_whole_deployment_rollout() {
    let (cluster, admin) = common::cluster().await;
    let deployed = service_account(&cluster, &admin, None).await;
    let own = deployed.client.clone();
    let (host, metrics) = host(deployed, ControllerConfig::default()).await;
    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), "default");

    deployments.create(&PostParams::default(), &common::web::<Deployment>(4, "web:1")).await.unwrap();
    let rss = rolled_out(&admin, 4, "web:1").await;
    assert_eq!(rss.len(), 1);

    // `kubectl set image deployment/web c=web:2`.
    let new_image = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "web:2"}]}}}});
    deployments.patch("web", &PatchParams::default(), &Patch::Merge(&new_image)).await.unwrap();
    let rss = rolled_out(&admin, 4, "web:2").await;
    assert_eq!(rss.len(), 2, "a new ReplicaSet, the old one scaled to 0");

    // `kubectl scale deployment/web --replicas 6`.
    deployments.patch("web", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 6}}))).await.unwrap();
    rolled_out(&admin, 6, "web:2").await;

    // Back to revision 1: the rollback plugin puts its template back and drops the annotation.
    let rollback = json!({"metadata": {"annotations": {"rollback.wasmcm.dev/to-revision": "1"}}});
    deployments.patch("web", &PatchParams::default(), &Patch::Merge(&rollback)).await.unwrap();
    let rss = rolled_out(&admin, 6, "web:1").await;
    assert_eq!(rss.len(), 2, "revision 1's ReplicaSet is reused");
    let d = deployments.get("web").await.unwrap();
    let annotations = d.metadata.annotations.unwrap_or_default();
    assert!(!annotations.contains_key("rollback.wasmcm.dev/to-revision"), "{annotations:?}");

    // Nothing was refused: every write the plugins asked for went through, and the events too.
    let events = wasmcm_events(&admin).await;
    let reasons: Vec<&str> = events.iter().filter_map(|e| e.reason.as_deref()).collect();
    assert!(reasons.contains(&"SuccessfulCreate") && reasons.contains(&"ScalingReplicaSet"), "{reasons:?}");
    for e in &events {
        let message = e.message.as_deref().unwrap_or_default().to_lowercase();
        assert!(!message.contains("forbidden"), "{:?}: {message}", e.reason);
        assert_eq!(e.type_.as_deref(), Some("Normal"), "{:?}: {message}", e.reason);
    }
    // It led through the Lease of the manifests' Role.
    let lease = Api::<Lease>::namespaced(admin.clone(), "wasmcm").get("wasmcm").await.unwrap();
    assert_eq!(lease.spec.and_then(|s| s.holder_identity).as_deref(), Some("x"));
    let text = metrics.encode();
    for plugin in ["replicaset", "deployment", "rollback"] {
        assert!(
            common::metric(&text, "wasmcm_reconciles_total", &[&format!("plugin=\"{plugin}\""), "outcome=\"success\""])
                > 0.0,
            "{plugin} reconciled:\n{text}"
        );
    }
    // All of it was written as the plugins' accounts: the host's own may write nothing.
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(
        json!({"metadata": {"name": "as-host"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    )
    .unwrap();
    let refused = Api::namespaced(own.clone(), "default").create(&PostParams::default(), &pod).await;
    assert!(matches!(refused, Err(kube::Error::Api(ref e)) if e.code == 403), "{refused:?}");
    let refused = Api::<Deployment>::namespaced(own, "default").delete("web", &Default::default()).await;
    assert!(matches!(refused, Err(kube::Error::Api(ref e)) if e.code == 403), "{refused:?}");
    host.shutdown().await;
}

/// The replicaset plugin's ClusterRole with `edit` applied to its rules.
fn without(edit: impl FnOnce(&mut Vec<k8s_openapi::api::rbac::v1::PolicyRule>)) -> ClusterRole {
    let mut role = plugin_role("replicaset");
    edit(role.rules.as_mut().expect("rules"));
    role
}

fn is_rule(rule: &k8s_openapi::api::rbac::v1::PolicyRule, group: &str, resource: &str) -> bool {
    rule.api_groups.iter().flatten().any(|g| g == group) && rule.resources.iter().flatten().any(|r| r == resource)
}

/// Waits for a `reason` event about the ReplicaSet web whose message says 403 Forbidden for the
/// replicaset plugin's ServiceAccount.
async fn forbidden_event(admin: &Client, reason: &str) -> String {
    common::eventually(&format!("a {reason} event saying forbidden"), || async {
        wasmcm_events(admin).await.into_iter().find_map(|e| {
            let message = e.message.unwrap_or_default();
            let about_web = e.involved_object.kind.as_deref() == Some("ReplicaSet")
                && e.involved_object.name.as_deref() == Some("web");
            // Refused to the plugin's own account, not to the host's.
            let as_plugin = message.contains("system:serviceaccount:wasmcm:wasmcm-replicaset");
            (e.reason.as_deref() == Some(reason)
                && about_web
                && as_plugin
                && message.to_lowercase().contains("forbidden"))
            .then_some(message)
        })
    })
    .await
}

async fn write_failed(metrics: &Metrics, plugin: &str) {
    common::eventually(&format!("{plugin} reconciles failing to write"), || async {
        let text = metrics.encode();
        let labels = [&format!("plugin=\"{plugin}\"") as &str, "outcome=\"write_failed\""];
        (common::metric(&text, "wasmcm_reconciles_total", &labels) > 0.0).then_some(())
    })
    .await;
}

/// The embedded cluster; a host whose replicaset plugin acts as a ServiceAccount whose ClusterRole
/// is the manifests' with `edit` applied to its rules; and the ReplicaSet web (2 pods) created.
async fn start_without(
    edit: impl FnOnce(&mut Vec<k8s_openapi::api::rbac::v1::PolicyRule>),
) -> (Cluster, Client, Host, Arc<Metrics>, Api<ReplicaSet>) {
    let (cluster, admin) = common::cluster().await;
    let deployed = service_account(&cluster, &admin, Some(without(edit))).await;
    let (host, metrics) = host(deployed, impatient()).await;
    let rss: Api<ReplicaSet> = Api::namespaced(admin.clone(), "default");
    rss.create(&PostParams::default(), &common::web::<ReplicaSet>(2, "i")).await.unwrap();
    (cluster, admin, host, metrics, rss)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_replicaset_status_update_the_status_never_converges() {
    let (_cluster, admin, host, metrics, rss) =
        start_without(|rules| rules.retain(|r| !is_rule(r, "apps", "replicasets/status"))).await;

    // The pods are created and become ready...
    common::eventually("2 ready pods", || async { (common::web_pods(&admin).await? == (2, 2)).then_some(()) }).await;
    // ...but writing the status is refused, visibly.
    write_failed(&metrics, "replicaset").await;
    let message = forbidden_event(&admin, "ReconcileFailed").await;
    assert!(message.contains("replicasets/status"), "{message}");
    let status = rss.get("web").await.unwrap().status.unwrap_or_default();
    assert_ne!(status.ready_replicas, Some(2), "the status was never written: {status:?}");
    assert_ne!(status.replicas, 2, "the status was never written: {status:?}");
    host.shutdown().await;
}

/// Creates that keep failing are reported as upstream reports them: FailedCreate events, and a
/// ReplicaFailure condition on the ReplicaSet's status (written although every create fails).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_pod_create_no_pod_is_created_and_the_replica_set_reports_replica_failure() {
    let (_cluster, admin, host, metrics, rss) = start_without(|rules| {
        for r in rules.iter_mut().filter(|r| is_rule(r, "", "pods")) {
            r.verbs.retain(|v| v != "create");
        }
    })
    .await;

    write_failed(&metrics, "replicaset").await;
    let message = forbidden_event(&admin, "FailedCreate").await;
    assert!(message.contains("pods"), "{message}");
    forbidden_event(&admin, "ReconcileFailed").await;
    let condition = common::eventually("ReplicaFailure on the ReplicaSet", || async {
        let status = rss.get("web").await.ok()?.status?;
        status.conditions?.into_iter().find(|c| c.type_.as_deref() == Some("ReplicaFailure"))
    })
    .await;
    assert_eq!((condition.status.as_deref(), condition.reason.as_deref()), (Some("True"), Some("FailedCreate")));
    assert!(condition.message.as_deref().is_some_and(|m| m.contains("forbidden")), "{condition:?}");
    assert_eq!(common::web_pods(&admin).await, Some((0, 0)), "no pod was created");

    // The failures repeat; as client-go's recorder counts them, they are one Event with a
    // series, written through events.k8s.io/v1 by the ReplicaSet plugin (kubectl describe's
    // From) of this host.
    let storm = common::eventually("the FailedCreate event counted", || async {
        let failed: Vec<Event> =
            wasmcm_events(&admin).await.into_iter().filter(|e| e.reason.as_deref() == Some("FailedCreate")).collect();
        failed.iter().any(|e| e.series.as_ref().and_then(|s| s.count).unwrap_or(0) >= 2).then_some(failed)
    })
    .await;
    assert_eq!(storm.len(), 1, "one Event, counted: {storm:?}");
    let event = &storm[0];
    assert_eq!(
        (event.reporting_component.as_deref(), event.reporting_instance.as_deref(), event.action.as_deref()),
        (Some("wasmcm.dev/replicaset"), Some("x"), Some("FailedCreate"))
    );
    assert!(event.event_time.is_some() && event.count.is_none(), "{event:?}");
    let modern = Api::<k8s_openapi::api::events::v1::Event>::namespaced(admin.clone(), "default")
        .get(event.metadata.name.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(modern.reporting_controller.as_deref(), Some("wasmcm.dev/replicaset"));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_event_create_everything_converges_but_no_event_is_recorded() {
    let (_cluster, admin, host, metrics, rss) =
        start_without(|rules| rules.retain(|r| !is_rule(r, "", "events"))).await;

    common::eventually("the ReplicaSet's status to converge", || async {
        let s = rss.get("web").await.ok()?.status?;
        (s.replicas == 2 && s.ready_replicas == Some(2) && s.available_replicas == Some(2)).then_some(())
    })
    .await;
    assert_eq!(common::web_pods(&admin).await, Some((2, 2)));
    let text = metrics.encode();
    assert!(common::metric(&text, "wasmcm_reconciles_total", &["plugin=\"replicaset\"", "outcome=\"success\""]) > 0.0);
    // Events are best effort: refused, they fail nothing, and none is recorded.
    let events = wasmcm_events(&admin).await;
    // (The SuccessfulCreate events were tried, and refused, when the pods were created: before
    // the reconciles that saw them ready.)
    assert!(events.is_empty(), "{events:?}");
    host.shutdown().await;
}

/// With `serviceAccount` in its manifest entry, a plugin's writes impersonate that account, so
/// the cluster's RBAC bounds each plugin on its own. The host here may read, impersonate two
/// accounts, and create ConfigMaps and Events itself, but not pods: the ReplicaSet plugin,
/// as an account that may manage pods, converges; the hostile plugin, as one that may do
/// nothing, gets the API server's 403 for the ConfigMap the host itself could have created.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_plugin_writes_as_its_own_service_account() {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
    use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
    let (cluster, admin) = common::cluster().await;
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": "wasmcm"}})).unwrap();
    let _ = Api::<Namespace>::all(admin.clone()).create(&PostParams::default(), &namespace).await;
    for sa in ["wasmcm", "rs-writer", "weak"] {
        let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": sa}})).unwrap();
        Api::<ServiceAccount>::namespaced(admin.clone(), "wasmcm")
            .create(&PostParams::default(), &account)
            .await
            .unwrap();
    }
    let roles = [
        (
            "host",
            "wasmcm",
            json!([
                {"apiGroups": ["", "apps"], "resources": ["pods", "replicasets", "configmaps"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": [""], "resources": ["configmaps", "events"], "verbs": ["create"]},
                {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
                {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"], "resourceNames": ["rs-writer", "weak"]},
            ]),
        ),
        (
            "rs-writer",
            "rs-writer",
            json!([
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete"]},
                {"apiGroups": ["apps"], "resources": ["replicasets/status"], "verbs": ["update"]},
                {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
            ]),
        ),
    ];
    for (role, account, rules) in roles {
        let r: ClusterRole = serde_json::from_value(json!({"metadata": {"name": role}, "rules": rules})).unwrap();
        Api::<ClusterRole>::all(admin.clone()).create(&PostParams::default(), &r).await.unwrap();
        let b: ClusterRoleBinding = serde_json::from_value(json!({
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "namespace": "wasmcm", "name": account}],
        }))
        .unwrap();
        Api::<ClusterRoleBinding>::all(admin.clone()).create(&PostParams::default(), &b).await.unwrap();
    }
    let token = cluster.service_account_token("wasmcm", "wasmcm").unwrap();
    let kubeconfig = kube::config::Kubeconfig::read_from(cluster.kubeconfig_for_token(&token).unwrap()).unwrap();
    let kube_config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();

    let as_account = |plugin: Arc<wasmcm::Plugin>, account: &str| {
        let mut v = wasmcm::Version::of(plugin);
        v.spec.service_account = Some((None, account.to_string()));
        v
    };
    let versions = vec![as_account(common::replicaset(), "rs-writer"), as_account(common::hostile(), "weak")];
    let mut controller = impatient();
    controller.host.namespace = Some("wasmcm".into());
    let config = HostConfig { controller, ..Default::default() };
    let metrics = Arc::new(Metrics::default());
    let host = Host::start(kube_config, versions, config, metrics.clone()).await.unwrap();

    let rss: Api<ReplicaSet> = Api::namespaced(admin.clone(), "default");
    rss.create(&PostParams::default(), &common::web(3, "nginx:1.27")).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    let plain: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "plain"}})).unwrap();
    cms.create(&PostParams::default(), &plain).await.unwrap();

    common::eventually("the ReplicaSet to converge through rs-writer's rights", || async {
        let s = rss.get("web").await.ok()?.status?;
        (s.ready_replicas == Some(3)).then_some(())
    })
    .await;
    common::eventually("the hostile plugin's write to be refused", || async {
        let failed = common::sample(
            &metrics.encode(),
            "wasmcm_reconciles_total",
            &["plugin=\"hostile\"", "outcome=\"write_failed\""],
        );
        failed.filter(|n| *n >= 1.0)
    })
    .await;
    assert!(cms.get_opt("report").await.unwrap().is_none(), "weak may create no ConfigMap, whatever the host may");
    let pods = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(admin.clone(), "default");
    let created_by_host = pods.list(&ListParams::default()).await.unwrap().items.len();
    assert_eq!(created_by_host, 3);
    host.shutdown().await;
}

/// A plugin whose scope lists namespaces is cached through informers of those namespaces
/// alone, so the host needs no more than a Role there: a host that may read and update
/// ConfigMaps in team-a only (no cluster-wide list) syncs the stamp plugin scoped to team-a,
/// which reconciles there, and caches none of team-b's ConfigMaps.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_plugin_scoped_to_namespaces_runs_on_their_namespaced_rbac_alone() {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let (cluster, admin) = common::cluster().await;
    let post = PostParams::default();
    for ns in ["wasmcm", "team-a", "team-b"] {
        let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        Api::<Namespace>::all(admin.clone()).create(&post, &namespace).await.unwrap();
    }
    let account: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "wasmcm"}})).unwrap();
    Api::<ServiceAccount>::namespaced(admin.clone(), "wasmcm").create(&post, &account).await.unwrap();
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "stamp"},
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "update"]},
            {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
        ],
    }))
    .unwrap();
    Api::<Role>::namespaced(admin.clone(), "team-a").create(&post, &role).await.unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "stamp"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "stamp"},
        "subjects": [{"kind": "ServiceAccount", "namespace": "wasmcm", "name": "wasmcm"}],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), "team-a").create(&post, &binding).await.unwrap();
    let stamped = |name: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": {"wasmcm.dev/stamp": "yes"}}})).unwrap()
    };
    for ns in ["team-a", "team-b"] {
        let cms = Api::<ConfigMap>::namespaced(admin.clone(), ns);
        cms.create(&post, &stamped("s")).await.unwrap();
        cms.create(&post, &stamped(&format!("only-{ns}"))).await.unwrap();
    }

    let deployed = common::as_host(&cluster).await;
    let stamp = common::engine().load_file(&common::guest("wasmcm_stamp.wasm"), wasmcm::Limits::default()).unwrap();
    let mut version = wasmcm::Version::of(Arc::new(stamp));
    version.spec.scope.namespaces = Some(["team-a".to_string()].into());
    version.spec.settings = r#"{"limit": 2}"#.into();
    let metrics = Arc::new(Metrics::default());
    let host = Host::start(deployed.kube_config, vec![version], deployed.config, metrics.clone()).await.unwrap();

    let team_a = Api::<ConfigMap>::namespaced(admin.clone(), "team-a");
    for name in ["s", "only-team-a"] {
        common::eventually(&format!("team-a/{name} stamped twice"), || async {
            let data = team_a.get(name).await.ok()?.data?;
            (data.get("count").map(String::as_str) == Some("2")).then_some(())
        })
        .await;
    }
    let team_b = Api::<ConfigMap>::namespaced(admin.clone(), "team-b");
    assert!(team_b.get("s").await.unwrap().data.is_none(), "team-b is outside the plugin's scope");
    let in_team_a = team_a.list(&ListParams::default()).await.unwrap().items.len() as f64;
    let text = metrics.encode();
    let cached: Vec<&str> = text.lines().filter(|l| l.starts_with("wasmcm_informer_objects{")).collect();
    assert_eq!(cached, [format!("wasmcm_informer_objects{{kind=\"v1/ConfigMap\",namespaces=\"team-a\"}} {in_team_a}")]);
    host.shutdown().await;
}
