//! The RBAC a plugin needs on a cluster, derived from what it declares (`describe()`), so
//! that a team's plugin runs in-cluster as its own least-privileged identity, as the built-ins
//! do (deploy/manifests/06-plugin-identities.yaml):
//!
//! - **its identity**: a ServiceAccount, and a ClusterRole allowing the writer's calls (create =
//!   POST, update = PUT, delete = DELETE, update-status = PUT on `/status` where the kind has
//!   one) on exactly the kinds it declares it writes, `update` on its primary's `finalizers`
//!   when it owns children (their controller ownerReference sets `blockOwnerDeletion`, which
//!   the OwnerReferencesPermissionEnforcement admission plugin checks), and `create` on Events;
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

use crate::runtime::discovery::Resource;

/// Whose RBAC it is, and where.
#[derive(Clone, Debug)]
pub struct Identities {
    /// The namespace the host runs in, where the plugin's ServiceAccount is created.
    pub namespace: String,
    /// The plugin's ServiceAccount: what its manifest entry's `serviceAccount` names.
    pub service_account: String,
    /// The host's ServiceAccount, in the same namespace.
    pub host_service_account: String,
}

/// The objects granting `plugin` what it declares, each kind resolved by `resolve`: in order,
/// the plugin's ServiceAccount, ClusterRole and ClusterRoleBinding, the host's ClusterRole and
/// ClusterRoleBinding to read the plugin's kinds, and the Role and RoleBinding letting the
/// host impersonate the plugin.
pub fn plugin_rbac(
    plugin: &wasmcm_guest::PluginInfo,
    who: &Identities,
    mut resolve: impl FnMut(&Kind) -> Result<Resource, String>,
) -> Result<Vec<Value>, String> {
    let labels = json!({"app.kubernetes.io/part-of": "wasmcm", "wasmcm.dev/plugin": plugin.name});
    let sa = &who.service_account;
    let reads_name = format!("{sa}-host-reads");
    let host = json!({"kind": "ServiceAccount", "name": who.host_service_account, "namespace": who.namespace});
    let meta = |name: &str, namespaced: bool| {
        let mut m = json!({"name": name, "labels": labels});
        if namespaced {
            m["namespace"] = json!(who.namespace);
        }
        m
    };
    let role_ref =
        |kind: &str, name: &str| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name});

    let mut writes = Rules::default();
    for kind in &plugin.writes {
        let r = resolve(kind)?;
        writes.add(&r, &r.api.plural, &["create", "update", "delete"]);
        if r.subresources.iter().any(|s| s == "status") {
            writes.add(&r, &format!("{}/status", r.api.plural), &["update"]);
        }
    }
    if !plugin.owns.is_empty() {
        let r = resolve(&plugin.primary)?;
        writes.add(&r, &format!("{}/finalizers", r.api.plural), &["update"]);
    }
    writes.push("", "events", &["create"]);

    let mut reads = Rules::default();
    for kind in std::iter::once(&plugin.primary).chain(&plugin.owns).chain(plugin.watched_kinds()) {
        let r = resolve(kind)?;
        reads.add(&r, &r.api.plural, &["list", "watch"]);
    }

    Ok(vec![
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(sa, true),
            // Never mounted: the host impersonates it, nothing runs as it.
            "automountServiceAccountToken": false,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(sa, false),
            "rules": writes.0,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta(sa, false),
            "roleRef": role_ref("ClusterRole", sa),
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": who.namespace}],
        }),
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
    ])
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
            namespaced: true,
            subresources: subresources.into_iter().map(String::from).collect(),
        })
    }

    fn who() -> Identities {
        Identities {
            namespace: "wasmcm".into(),
            service_account: "wasmcm-replicaset".into(),
            host_service_account: "wasmcm".into(),
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
            contract: "0".into(),
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
                r#"/pods ["create","update","delete"]"#,
                r#"/pods/status ["update"]"#,
                r#"apps/replicasets ["create","update","delete"]"#,
                r#"apps/replicasets/status ["update"]"#,
                r#"apps/replicasets/finalizers ["update"]"#,
                r#"/events ["create"]"#,
            ]
        );
        assert_eq!(rules(&objects[3]), [r#"apps/replicasets ["list","watch"]"#, r#"/pods ["list","watch"]"#]);
        assert_eq!(objects[5]["rules"][0]["resourceNames"], json!(["wasmcm-replicaset"]));
        assert_eq!(
            objects[6]["subjects"][0],
            json!({"kind": "ServiceAccount", "name": "wasmcm", "namespace": "wasmcm"})
        );
        assert_eq!(objects[2]["subjects"][0]["name"], "wasmcm-replicaset");
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
