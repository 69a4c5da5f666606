//! The RBAC a plugin needs on a cluster, derived from what it declares (`describe()`), so
//! that a team's plugin runs in-cluster as its own least-privileged identity, as the built-ins
//! do (deploy/manifests/06-plugin-identities.yaml):
//!
//! - **its identity**: a ServiceAccount, and a ClusterRole allowing the writer's calls (create =
//!   POST, update = PUT, delete = DELETE, update-status = PUT on `/status` where the kind has
//!   one, and for a plugin of contract 0.4 patch = PATCH of both) on exactly the kinds it
//!   declares it writes, `update` on its primary's `finalizers`
//!   when it owns children (their controller ownerReference sets `blockOwnerDeletion`, which
//!   the OwnerReferencesPermissionEnforcement admission plugin checks), and `create` on Events.
//!   When its manifest's scope lists namespaces, those rights are a Role and RoleBinding in each
//!   of them instead, and only the cluster-scoped kinds it writes (its `clusterWrites`) keep a
//!   ClusterRole: RBAC then bounds its writes where the manifest does;
//! - **the host's reads** of the kinds it caches for the plugin (its primary, owned and watched
//!   kinds: `list`, `watch`), bound to the host's ServiceAccount;
//! - **the host's right to impersonate** exactly that ServiceAccount, in the host's namespace.
//!
//! Resource names come from the cluster's discovery (a custom kind's CRD must be applied
//! first), never from guessing plurals. It renders objects and talks to nothing; `wasmcm
//! plugins rbac` resolves the kinds and prints them.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use wasmcm_core::Kind;

use crate::client::discovery::Resource;

/// Whose RBAC it is, and where.
#[derive(Clone, Debug)]
pub struct Identities {
    /// The namespace the host runs in, where the plugin's ServiceAccount is created.
    pub namespace: String,
    /// The plugin's ServiceAccount: what its manifest entry's `serviceAccount` names.
    pub service_account: String,
    /// The host's ServiceAccount, in the same namespace.
    pub host_service_account: String,
    /// The namespaces its manifest's scope lists (`scope.namespaces`), where alone it may write
    /// namespaced kinds; `None`: everywhere (a ClusterRole).
    pub writes_in: Option<BTreeSet<String>>,
}

/// The objects granting `plugin` what it declares, each kind resolved by `resolve`: in order,
/// the plugin's ServiceAccount; its ClusterRole and ClusterRoleBinding (when it writes
/// everywhere, or writes cluster-scoped kinds); its Role and RoleBinding in each namespace of
/// [`Identities::writes_in`]; the host's ClusterRole and ClusterRoleBinding to read the
/// plugin's kinds; and the Role and RoleBinding letting the host impersonate the plugin.
pub fn plugin_rbac(
    plugin: &wasmcm_guest::PluginInfo,
    who: &Identities,
    mut resolve: impl FnMut(&Kind) -> Result<Resource, String>,
) -> Result<Vec<Value>, String> {
    let labels = json!({"app.kubernetes.io/part-of": "wasmcm", "wasmcm.dev/plugin": plugin.name});
    let sa = &who.service_account;
    let reads_name = format!("{sa}-host-reads");
    let host = json!({"kind": "ServiceAccount", "name": who.host_service_account, "namespace": who.namespace});
    let meta_in = |name: &str, namespace: Option<&str>| {
        let mut m = json!({"name": name, "labels": labels});
        if let Some(namespace) = namespace {
            m["namespace"] = json!(namespace);
        }
        m
    };
    let meta = |name: &str, namespaced: bool| meta_in(name, namespaced.then_some(who.namespace.as_str()));
    let role_ref =
        |kind: &str, name: &str| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name});
    let subject = json!([{"kind": "ServiceAccount", "name": sa, "namespace": who.namespace}]);

    // Rules on namespaced resources, and on cluster-scoped ones (which only a ClusterRole grants).
    let (mut writes, mut cluster_writes) = (Rules::default(), Rules::default());
    // A plugin of contract 0.3.0 cannot patch.
    let patches = !plugin.contract.starts_with("0.3.");
    let (verbs, status_verbs): (&[&str], &[&str]) = match patches {
        true => (&["create", "update", "patch", "delete"], &["update", "patch"]),
        false => (&["create", "update", "delete"], &["update"]),
    };
    for kind in &plugin.writes {
        let r = resolve(kind)?;
        let rules = if r.namespaced { &mut writes } else { &mut cluster_writes };
        rules.add(&r, &r.api.plural, verbs);
        if r.subresources.iter().any(|s| s == "status") {
            rules.add(&r, &format!("{}/status", r.api.plural), status_verbs);
        }
    }
    if !plugin.owns.is_empty() {
        let r = resolve(&plugin.primary)?;
        let rules = if r.namespaced { &mut writes } else { &mut cluster_writes };
        rules.add(&r, &format!("{}/finalizers", r.api.plural), &["update"]);
    }
    // events.k8s.io/v1 where the cluster serves it, core/v1 before (see `writes/events.rs`).
    writes.push("", "events", &["create", "patch"]);
    writes.push("events.k8s.io", "events", &["create", "patch"]);

    let mut reads = Rules::default();
    for kind in std::iter::once(&plugin.primary).chain(&plugin.owns).chain(plugin.watched_kinds()) {
        let r = resolve(kind)?;
        reads.add(&r, &r.api.plural, &["list", "watch"]);
    }

    let mut objects = vec![json!({
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(sa, true),
        // Never mounted: the host impersonates it, nothing runs as it.
        "automountServiceAccountToken": false,
    })];
    let cluster_rules = match &who.writes_in {
        None => {
            writes.0.extend(cluster_writes.0);
            Some(writes.0.clone())
        }
        Some(_) => (!cluster_writes.0.is_empty()).then_some(cluster_writes.0),
    };
    if let Some(rules) = cluster_rules {
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(sa, false),
            "rules": rules,
        }));
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta(sa, false),
            "roleRef": role_ref("ClusterRole", sa), "subjects": subject,
        }));
    }
    for namespace in who.writes_in.iter().flatten() {
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta_in(sa, Some(namespace)),
            "rules": writes.0,
        }));
        objects.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": meta_in(sa, Some(namespace)),
            "roleRef": role_ref("Role", sa), "subjects": subject,
        }));
    }
    objects.extend([
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(&reads_name, false),
            "rules": reads.0,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": meta(&reads_name, false),
            "roleRef": role_ref("ClusterRole", &reads_name),
            "subjects": [host],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": meta(&format!("{sa}-impersonate"), true),
            "rules": [{"apiGroups": [""], "resources": ["serviceaccounts"], "resourceNames": [sa], "verbs": ["impersonate"]}],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": meta(&format!("{sa}-impersonate"), true),
            "roleRef": role_ref("Role", &format!("{sa}-impersonate")),
            "subjects": [host],
        }),
    ]);
    Ok(objects)
}

/// PolicyRules in the order first asked for, each (group, resource, verbs) once.
#[derive(Default)]
struct Rules(Vec<Value>, BTreeSet<(String, String)>);

impl Rules {
    fn add(&mut self, r: &Resource, resource: &str, verbs: &[&str]) {
        self.push(&r.api.group, resource, verbs);
    }

    fn push(&mut self, group: &str, resource: &str, verbs: &[&str]) {
        if self.1.insert((group.to_string(), resource.to_string())) {
            self.0.push(json!({"apiGroups": [group], "resources": [resource], "verbs": verbs}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ApiResource;
    use wasmcm_guest::{Changes, PluginInfo, Watch};

    fn resolve(kind: &Kind) -> Result<Resource, String> {
        let (plural, subresources) = match kind.kind.as_str() {
            "Deployment" => ("deployments", vec!["status", "scale"]),
            "ClusterRole" => ("clusterroles", vec![]),
            "ReplicaSet" => ("replicasets", vec!["status", "scale"]),
            "Pod" => ("pods", vec!["status", "eviction", "log"]),
            "ConfigMap" => ("configmaps", vec![]),
            _ => return Err(format!("kind {kind} is not served by the cluster")),
        };
        let (group, version) = kind.api_version.split_once('/').unwrap_or(("", &kind.api_version));
        Ok(Resource {
            api: ApiResource {
                group: group.into(),
                version: version.into(),
                api_version: kind.api_version.clone(),
                kind: kind.kind.clone(),
                plural: plural.into(),
            },
            namespaced: kind.kind != "ClusterRole",
            subresources: subresources.into_iter().map(String::from).collect(),
        })
    }

    fn who() -> Identities {
        Identities {
            namespace: "wasmcm".into(),
            service_account: "wasmcm-replicaset".into(),
            host_service_account: "wasmcm".into(),
            writes_in: None,
        }
    }

    fn replicaset() -> PluginInfo {
        PluginInfo {
            name: "replicaset".into(),
            version: "1".into(),
            primary: Kind::new("apps/v1", "ReplicaSet"),
            owns: vec![Kind::new("v1", "Pod")],
            watches: vec![],
            writes: vec![Kind::new("v1", "Pod"), Kind::new("apps/v1", "ReplicaSet")],
            contract: wasmcm_guest::CONTRACT_VERSION.into(),
        }
    }

    #[test]
    fn a_plugin_may_write_what_it_declares_and_the_host_reads_what_it_caches() {
        let objects = plugin_rbac(&replicaset(), &who(), resolve).unwrap();
        let kinds: Vec<&str> = objects.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding"
            ]
        );
        let rules = |o: &Value| -> Vec<String> {
            o["rules"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    format!(
                        "{}/{} {}",
                        r["apiGroups"][0].as_str().unwrap(),
                        r["resources"][0].as_str().unwrap(),
                        r["verbs"]
                    )
                })
                .collect()
        };
        assert_eq!(
            rules(&objects[1]),
            [
                r#"/pods ["create","update","patch","delete"]"#,
                r#"/pods/status ["update","patch"]"#,
                r#"apps/replicasets ["create","update","patch","delete"]"#,
                r#"apps/replicasets/status ["update","patch"]"#,
                r#"apps/replicasets/finalizers ["update"]"#,
                r#"/events ["create","patch"]"#,
                r#"events.k8s.io/events ["create","patch"]"#,
            ]
        );
        // A plugin of contract 0.3.0 sends no patches.
        let older = PluginInfo { contract: "0.3.0".into(), ..replicaset() };
        let objects = plugin_rbac(&older, &who(), resolve).unwrap();
        assert_eq!(rules(&objects[1])[..2], [r#"/pods ["create","update","delete"]"#, r#"/pods/status ["update"]"#]);
        assert_eq!(rules(&objects[3]), [r#"apps/replicasets ["list","watch"]"#, r#"/pods ["list","watch"]"#]);
        assert_eq!(objects[5]["rules"][0]["resourceNames"], json!(["wasmcm-replicaset"]));
        assert_eq!(
            objects[6]["subjects"][0],
            json!({"kind": "ServiceAccount", "name": "wasmcm", "namespace": "wasmcm"})
        );
        assert_eq!(objects[2]["subjects"][0]["name"], "wasmcm-replicaset");
    }

    fn rules(o: &Value) -> Vec<String> {
        o["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                format!(
                    "{}/{} {}",
                    r["apiGroups"][0].as_str().unwrap(),
                    r["resources"][0].as_str().unwrap(),
                    r["verbs"]
                )
            })
            .collect()
    }

    #[test]
    fn a_plugin_scoped_to_namespaces_writes_through_a_role_in_each() {
        let who = Identities { writes_in: Some(["team-b".to_string(), "team-a".to_string()].into()), ..who() };
        let objects = plugin_rbac(&replicaset(), &who, resolve).unwrap();
        let kinds: Vec<String> = objects
            .iter()
            .map(|o| format!("{} {}", o["kind"].as_str().unwrap(), o["metadata"]["namespace"].as_str().unwrap_or("")))
            .collect();
        assert_eq!(
            kinds,
            [
                "ServiceAccount wasmcm",
                "Role team-a",
                "RoleBinding team-a",
                "Role team-b",
                "RoleBinding team-b",
                "ClusterRole ",
                "ClusterRoleBinding ",
                "Role wasmcm",
                "RoleBinding wasmcm",
            ]
        );
        assert_eq!(rules(&objects[1]), rules(&objects[3]));
        assert_eq!(rules(&objects[1]).len(), 7, "{:?}", rules(&objects[1]));
        assert_eq!(
            objects[2]["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "wasmcm-replicaset"})
        );
        assert_eq!(
            objects[2]["subjects"][0],
            json!({"kind": "ServiceAccount", "name": "wasmcm-replicaset", "namespace": "wasmcm"})
        );
        assert!(
            rules(&objects[5]).iter().all(|r| r.ends_with(r#"["list","watch"]"#)),
            "the host's reads stay cluster-wide"
        );

        // Cluster-scoped kinds it writes can only be granted by a ClusterRole, with nothing else in it.
        let info = PluginInfo {
            writes: vec![Kind::new("v1", "Pod"), Kind::new("rbac.authorization.k8s.io/v1", "ClusterRole")],
            ..replicaset()
        };
        let objects = plugin_rbac(&info, &who, resolve).unwrap();
        assert_eq!(objects[1]["kind"], "ClusterRole");
        assert_eq!(
            rules(&objects[1]),
            [r#"rbac.authorization.k8s.io/clusterroles ["create","update","patch","delete"]"#]
        );
        assert_eq!(objects[3]["kind"], "Role");
        assert!(!rules(&objects[3]).iter().any(|r| r.contains("clusterroles")), "{:?}", rules(&objects[3]));
    }

    #[test]
    fn no_finalizers_without_children_and_no_status_where_the_kind_has_none() {
        let info = PluginInfo {
            owns: vec![],
            watches: vec![Watch::new(Kind::new("v1", "Pod"), Changes::NONE)],
            writes: vec![Kind::new("v1", "ConfigMap")],
            primary: Kind::new("v1", "ConfigMap"),
            ..replicaset()
        };
        let objects = plugin_rbac(&info, &who(), resolve).unwrap();
        let text = objects[1]["rules"].to_string();
        assert!(!text.contains("finalizers") && !text.contains("status"), "{text}");
        assert_eq!(objects[3]["rules"].as_array().unwrap().len(), 2, "configmaps and pods read");
    }

    #[test]
    fn a_kind_the_cluster_does_not_serve_is_an_error_naming_it() {
        let info = PluginInfo { writes: vec![Kind::new("example.com/v1", "Website")], ..replicaset() };
        let err = plugin_rbac(&info, &who(), resolve).unwrap_err();
        assert!(err.contains("example.com/v1/Website"), "{err}");
    }
}
