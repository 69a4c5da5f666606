//! A plugin as a tenant: the namespaces its manifest lets it act in, whether that includes the
//! host's own namespace, and the cluster-scoped kinds it may write. The controller asks it of
//! every key before the plugin runs, the writer of every intent before it is sent.
//!
//! It owns the rule only. What a plugin declared it writes is the writer's check; which
//! namespaces exist and carry which labels is the Namespace informer's; how a kind's scope is
//! learnt is discovery's.

use std::collections::{BTreeMap, BTreeSet};

use wasmcm_guest::Kind;

/// What a manifest's `scope:` grants. The default is every namespace but the host's own, and
/// no cluster-scoped writes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scope {
    /// Only these namespaces, when given.
    pub namespaces: Option<BTreeSet<String>>,
    /// Only namespaces whose labels match, when given (both must hold when both are given).
    pub namespace_selector: Option<wasmcm_core::Selector>,
    /// The host's own namespace too (its ServiceAccount, Deployment, Lease and plugin
    /// ConfigMaps live there): a grant a manifest must spell out.
    pub host_namespace: bool,
    /// Cluster-scoped kinds the plugin may write.
    pub cluster_writes: Vec<Kind>,
}

/// What the host is in the cluster, which no plugin may borrow.
#[derive(Clone, Debug, Default)]
pub struct HostIdentity {
    /// The namespace the host runs in, when it runs in one (in a pod).
    pub namespace: Option<String>,
    /// The leader-election Lease, (namespace, name), or the prefix of the shard group's
    /// (`<name>-shard-<i>`, `<name>-member-<identity>`): never writable by a plugin.
    pub lease: Option<(String, String)>,
}

/// A scope applied to the host it runs in.
#[derive(Clone, Copy)]
pub(crate) struct Tenancy<'a> {
    pub(crate) scope: &'a Scope,
    pub(crate) host: &'a HostIdentity,
    /// A namespace's labels, for `namespace_selector` (`None`: no such namespace).
    pub(crate) namespace_labels: &'a (dyn Fn(&str) -> Option<BTreeMap<String, String>> + Sync),
}

impl Tenancy<'_> {
    /// Whether the plugin may act in `namespace`, as a key's or a write's.
    pub(crate) fn admits(&self, namespace: &str) -> Result<(), String> {
        if namespace.is_empty() {
            return Ok(());
        }
        if self.host.namespace.as_deref() == Some(namespace) && !self.scope.host_namespace {
            return Err(format!(
                "namespace {namespace:?} is the host's own, which the manifest does not grant (scope.hostNamespace)"
            ));
        }
        if let Some(list) = &self.scope.namespaces
            && !list.contains(namespace)
        {
            return Err(format!("namespace {namespace:?} is outside the plugin's scope.namespaces"));
        }
        if let Some(selector) = &self.scope.namespace_selector
            && !(self.namespace_labels)(namespace).is_some_and(|labels| selector.matches(&labels))
        {
            return Err(format!("namespace {namespace:?} does not match the plugin's scope.namespaceSelector"));
        }
        Ok(())
    }

    /// Whether the plugin may write `kind` `namespace/name`; `namespaced` as discovery says.
    pub(crate) fn admits_write(
        &self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        namespaced: bool,
    ) -> Result<(), String> {
        if !namespaced {
            if !self.scope.cluster_writes.contains(kind) {
                return Err(format!(
                    "{kind} is cluster-scoped, which the manifest does not grant (scope.clusterWrites)"
                ));
            }
            return Ok(());
        }
        self.admits(namespace)?;
        if let Some((lease_namespace, lease)) = &self.host.lease
            && kind.kind == "Lease"
            && kind.api_version.starts_with("coordination.k8s.io/")
            && namespace == lease_namespace
            && (name == lease
                || [format!("{lease}-shard-"), format!("{lease}-member-")].iter().any(|p| name.starts_with(p)))
        {
            return Err(format!("Lease {namespace}/{name} is the host's leader or shard lease"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(ns: &str) -> Option<BTreeMap<String, String>> {
        (ns == "team-a").then(|| [("tenant".to_string(), "a".to_string())].into())
    }

    #[test]
    fn the_host_namespace_and_lease_are_out_of_reach_unless_granted() {
        let host =
            HostIdentity { namespace: Some("wasmcm".into()), lease: Some(("kube-system".into(), "wasmcm".into())) };
        let scope = Scope::default();
        let t = Tenancy { scope: &scope, host: &host, namespace_labels: &labels };
        assert!(t.admits("default").is_ok());
        assert!(t.admits("wasmcm").unwrap_err().contains("host's own"));
        let lease = Kind::new("coordination.k8s.io/v1", "Lease");
        assert!(t.admits_write(&lease, "kube-system", "wasmcm", true).unwrap_err().contains("leader or shard lease"));
        assert!(t.admits_write(&lease, "kube-system", "other", true).is_ok());
        assert!(t.admits_write(&lease, "kube-system", "wasmcm-shard-3", true).unwrap_err().contains("shard lease"));
        let role = Kind::new("rbac.authorization.k8s.io/v1", "ClusterRole");
        assert!(t.admits_write(&role, "", "admin", false).unwrap_err().contains("cluster-scoped"));

        let granted = Scope { host_namespace: true, cluster_writes: vec![role.clone()], ..Scope::default() };
        let t = Tenancy { scope: &granted, host: &host, namespace_labels: &labels };
        assert!(t.admits("wasmcm").is_ok());
        assert!(t.admits_write(&role, "", "admin", false).is_ok());
    }

    #[test]
    fn a_list_and_a_selector_both_bound_the_namespaces() {
        let host = HostIdentity::default();
        let selector = wasmcm_core::Selector::from_label_selector(
            &serde_json::from_value(serde_json::json!({"matchLabels": {"tenant": "a"}})).unwrap(),
        )
        .unwrap();
        let scope = Scope {
            namespaces: Some(["team-a".to_string(), "team-b".to_string()].into()),
            namespace_selector: Some(selector),
            ..Scope::default()
        };
        let t = Tenancy { scope: &scope, host: &host, namespace_labels: &labels };
        assert!(t.admits("team-a").is_ok());
        assert!(t.admits("team-b").unwrap_err().contains("namespaceSelector"));
        assert!(t.admits("team-c").unwrap_err().contains("scope.namespaces"));
    }
}
