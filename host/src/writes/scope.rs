//! A plugin as a tenant: the namespaces its manifest lets it act in (by default every namespace
//! but those an operator would not hand a plugin: the system namespaces, the host's own and its
//! Leases'), the cluster-scoped kinds it may write, and the pods it may make the cluster run
//! (their ServiceAccounts, and a Pod Security Standards level). The controller asks it of every
//! key before the plugin runs, the writer of every intent before it is sent.
//!
//! It owns the rule only. What a plugin declared it writes is the writer's check; which
//! namespaces exist and carry which labels is the Namespace informer's; how a kind's scope is
//! learnt is discovery's; what each Pod Security Standards check forbids is
//! `wasmcm_core::pod_security`'s.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use wasmcm_core::pod_security::{self, Level};
use wasmcm_guest::{Kind, ObjectRef};

/// Namespaces of the cluster itself, withheld from every plugin whose manifest does not grant
/// them by name.
pub(crate) const SYSTEM_NAMESPACES: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];

/// The ServiceAccounts a plugin's pods and pod templates may run as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServiceAccounts {
    /// Any (`"*"`): the built-ins, which copy templates their users wrote.
    Any,
    /// These names, in the pod's namespace.
    Only(BTreeSet<String>),
}

impl ServiceAccounts {
    fn allows(&self, name: &str) -> bool {
        match self {
            ServiceAccounts::Any => true,
            ServiceAccounts::Only(names) => names.contains(name),
        }
    }
}

impl std::fmt::Display for ServiceAccounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServiceAccounts::Any => f.write_str("[\"*\"]"),
            ServiceAccounts::Only(names) => write!(f, "[{}]", names.iter().cloned().collect::<Vec<_>>().join(", ")),
        }
    }
}

/// What a manifest's `scope:` grants. The default is every namespace but the withheld ones (the
/// system namespaces, the host's, its Leases'), no cluster-scoped writes, and pods that run as
/// the ServiceAccount `default` and meet the `baseline` Pod Security Standard.
#[derive(Clone, Debug, PartialEq)]
pub struct Scope {
    /// Only these namespaces, when given.
    pub namespaces: Option<BTreeSet<String>>,
    /// Only namespaces whose labels match, when given (both must hold when both are given).
    pub namespace_selector: Option<wasmcm_core::Selector>,
    /// The host's own namespace too (its ServiceAccount, Deployment, Lease and plugin
    /// ConfigMaps live there): a grant a manifest must spell out.
    pub host_namespace: bool,
    /// Namespaces the default scope withholds, granted by name. Neither a list nor a selector
    /// reaches them without it.
    pub grant: BTreeSet<String>,
    /// Cluster-scoped kinds the plugin may write.
    pub cluster_writes: Vec<Kind>,
    /// The ServiceAccounts the pods it writes (and its workloads' pod templates) may name.
    pub service_accounts: ServiceAccounts,
    /// The Pod Security Standards level those pods and templates must meet.
    pub pod_security: Level,
}

impl Default for Scope {
    fn default() -> Self {
        Scope {
            namespaces: None,
            namespace_selector: None,
            host_namespace: false,
            grant: BTreeSet::new(),
            cluster_writes: Vec::new(),
            service_accounts: ServiceAccounts::Only(["default".to_string()].into()),
            pod_security: Level::Baseline,
        }
    }
}

/// What the host is in the cluster, which no plugin may borrow.
#[derive(Clone, Debug, Default)]
pub struct HostIdentity {
    /// The namespace the host runs in: the pod's, else `wasmcm run --namespace`'s (always set
    /// by the binary; `None` only in tests and simulations of a host that has none).
    pub namespace: Option<String>,
    /// The leader-election Lease, (namespace, name), and the prefix of the shard group's
    /// (`<name>-shard-<i>`, `<name>-member-<identity>`): never writable by a plugin, whether or
    /// not this host elects a leader or shards.
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
    /// Why the default scope withholds `namespace`, if it does.
    fn withheld(&self, namespace: &str) -> Option<&'static str> {
        if self.host.namespace.as_deref() == Some(namespace) {
            Some("the host's own")
        } else if SYSTEM_NAMESPACES.contains(&namespace) {
            Some("a system namespace")
        } else if self.host.lease.as_ref().is_some_and(|(ns, _)| ns == namespace) {
            Some("the namespace of the host's Leases")
        } else {
            None
        }
    }

    /// Whether the plugin may act in `namespace`, as a key's or a write's.
    pub(crate) fn admits(&self, namespace: &str) -> Result<(), String> {
        if namespace.is_empty() {
            return Ok(());
        }
        if let Some(what) = self.withheld(namespace) {
            let host_own = self.host.namespace.as_deref() == Some(namespace);
            let granted = self.scope.grant.contains(namespace) || (host_own && self.scope.host_namespace);
            if !granted {
                let how = if host_own {
                    format!("scope.hostNamespace, or scope.grant: [{namespace}]")
                } else {
                    format!("scope.grant: [{namespace}]")
                };
                return Err(format!(
                    "namespace {namespace:?} is {what}, which the default scope withholds and the manifest does not \
                     grant ({how})"
                ));
            }
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

    /// Whether an event of the cluster-scoped primary `primary` may regard `regarding`: the
    /// primary itself, or an object in a namespace the plugin may act in. (A namespaced
    /// primary's events regard objects of its own namespace: the writer's check.)
    pub(crate) fn admits_event(&self, primary: &ObjectRef, regarding: &ObjectRef) -> Result<(), String> {
        if regarding == primary {
            return Ok(());
        }
        if regarding.namespace.is_empty() {
            return Err(format!(
                "events of {} {} regard it or objects in namespaces it may act in, not the cluster-scoped {} {}",
                primary.kind, primary.name, regarding.kind, regarding.name
            ));
        }
        self.admits(&regarding.namespace)
    }

    /// Whether the pods `object` (a `kind`) makes the cluster run are ones the plugin may write:
    /// a Pod, or the pod template of a workload, running as a ServiceAccount the manifest allows
    /// and meeting its Pod Security Standards level. Other kinds carry no pods.
    pub(crate) fn admits_pods(&self, kind: &Kind, object: &Value) -> Result<(), String> {
        let Some(pointer) = pod_template(kind) else { return Ok(()) };
        // Without a template the API server refuses the object; nothing runs.
        let Some(template) = (if pointer.is_empty() { Some(object) } else { object.pointer(pointer) }) else {
            return Ok(());
        };
        let null = Value::Null;
        let spec = template.get("spec").unwrap_or(&null);
        let at = |field: &str| {
            let base = pointer.trim_start_matches('/').replace('/', ".");
            if base.is_empty() { field.to_string() } else { format!("{base}.{field}") }
        };
        let accounts = &self.scope.service_accounts;
        let named: Vec<(&str, &str)> = ["serviceAccountName", "serviceAccount"]
            .into_iter()
            .filter_map(|f| spec.get(f).and_then(Value::as_str).filter(|s| !s.is_empty()).map(|s| (f, s)))
            .collect();
        if named.is_empty() && !accounts.allows("default") {
            return Err(format!(
                "{} is unset: the pod would run as ServiceAccount \"default\", which the manifest does not allow \
                 (scope.serviceAccounts: {accounts})",
                at("spec.serviceAccountName")
            ));
        }
        if let Some((field, account)) = named.iter().find(|(_, account)| !accounts.allows(account)) {
            return Err(format!(
                "{} {account:?}: the pod would run as that ServiceAccount, which the manifest does not allow \
                 (scope.serviceAccounts: {accounts})",
                at(&format!("spec.{field}"))
            ));
        }
        let level = self.scope.pod_security;
        let violations = pod_security::evaluate(level, template.get("metadata").unwrap_or(&null), spec);
        if !violations.is_empty() {
            let what = if pointer.is_empty() { "the pod".to_string() } else { at("") };
            return Err(format!(
                "{} violates PodSecurity \"{}:latest\" (scope.podSecurity): {}",
                what.trim_end_matches('.'),
                level.as_str(),
                pod_security::forbidden_detail(&violations)
            ));
        }
        Ok(())
    }
}

/// The places in an object that decide the pods it makes run, under its pod template's pointer:
/// what `admits_pods` reads (the spec; the annotations, which Pod Security Standards read).
const POD_FIELDS: [&str; 2] = ["/spec", "/metadata/annotations"];

impl Tenancy<'_> {
    /// Whether a patch of a `kind` may be sent: one that could change the pods it runs (its
    /// pod template's spec or annotations, or what holds them) only when the scope lets the
    /// plugin run any pod, since the host cannot check a patch's outcome as it checks a whole
    /// object. `json`: `body` is an RFC 6902 list of operations; else a (strategic) merge patch.
    pub(crate) fn admits_pod_patch(&self, kind: &Kind, json: bool, body: &Value) -> Result<(), String> {
        let Some(template) = pod_template(kind) else { return Ok(()) };
        let open = self.scope.service_accounts == ServiceAccounts::Any && self.scope.pod_security == Level::Privileged;
        if open {
            return Ok(());
        }
        let fields = POD_FIELDS.map(|f| format!("{template}{f}"));
        let touched = fields.iter().find(|field| {
            let field = tokens(field);
            if json {
                let ops = body.as_array().map(Vec::as_slice).unwrap_or_default();
                ops.iter().any(|op| {
                    ["path", "from"].iter().filter_map(|k| op.get(*k).and_then(Value::as_str)).any(|path| {
                        let path = tokens(path);
                        path.starts_with(&field) || field.starts_with(&path)
                    })
                })
            } else {
                merge_touches(body, &field)
            }
        });
        match touched {
            None => Ok(()),
            Some(field) => Err(format!(
                "the patch may change {} of the pods a {kind} runs, which the host checks only in a whole object \
                 under a scope that limits them (scope.serviceAccounts: {}, scope.podSecurity: {}): send an update",
                field.trim_start_matches('/').replace('/', "."),
                self.scope.service_accounts,
                self.scope.pod_security.as_str()
            )),
        }
    }
}

/// The reference tokens of an RFC 6901 JSON pointer.
fn tokens(pointer: &str) -> Vec<String> {
    if pointer.is_empty() {
        return Vec::new();
    }
    pointer.trim_start_matches('/').split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect()
}

/// Whether a merge or strategic merge patch `doc` reaches the field at `path`: it sets it, or
/// replaces or deletes something holding it (a non-object on the way, or a directive there:
/// `$patch`, `$retainKeys`, `$deleteFromPrimitiveList/<next>` and the like).
fn merge_touches(doc: &Value, path: &[String]) -> bool {
    let Some((next, rest)) = path.split_first() else { return true };
    let Some(map) = doc.as_object() else { return true };
    let directive = map.keys().any(|k| {
        k.starts_with('$')
            && (k == "$patch" || k == "$retainKeys" || k.rsplit_once('/').is_some_and(|(_, f)| f == next))
    });
    directive || map.get(next).is_some_and(|v| merge_touches(v, rest))
}

/// Where objects of `kind` hold the pods they make run: `""` for a Pod itself, else the JSON
/// pointer of the pod template (its `metadata` and `spec`). `None`: no pods.
fn pod_template(kind: &Kind) -> Option<&'static str> {
    let group = kind.api_version.rsplit_once('/').map_or("", |(group, _)| group);
    match (group, kind.kind.as_str()) {
        ("", "Pod") => Some(""),
        ("", "PodTemplate") => Some("/template"),
        ("", "ReplicationController")
        | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job") => Some("/spec/template"),
        ("batch", "CronJob") => Some("/spec/jobTemplate/spec/template"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(ns: &str) -> Option<BTreeMap<String, String>> {
        (ns == "team-a").then(|| [("tenant".to_string(), "a".to_string())].into())
    }

    fn host() -> HostIdentity {
        HostIdentity { namespace: Some("wasmcm".into()), lease: Some(("leases".into(), "wasmcm".into())) }
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
        let role = Kind::new("rbac.authorization.k8s.io/v1", "ClusterRole");
        assert!(t.admits_write(&role, "", "admin", false).unwrap_err().contains("cluster-scoped"));

        let granted = Scope {
            host_namespace: true,
            grant: ["kube-system".to_string()].into(),
            cluster_writes: vec![role.clone()],
            ..Scope::default()
        };
        let t = Tenancy { scope: &granted, host: &host, namespace_labels: &labels };
        assert!(t.admits("wasmcm").is_ok());
        assert!(t.admits_write(&role, "", "admin", false).is_ok());
        // A granted namespace is the plugin's, but never the host's Leases in it.
        assert!(t.admits_write(&lease, "kube-system", "wasmcm", true).unwrap_err().contains("leader or shard lease"));
        assert!(t.admits_write(&lease, "kube-system", "other", true).is_ok());
        assert!(t.admits_write(&lease, "kube-system", "wasmcm-shard-3", true).unwrap_err().contains("shard lease"));
        assert!(t.admits_write(&lease, "kube-system", "wasmcm-member-x", true).unwrap_err().contains("shard lease"));
    }

    #[test]
    fn the_default_scope_withholds_the_system_namespaces_and_the_hosts_until_granted_by_name() {
        let host = host();
        let scope = Scope::default();
        let t = Tenancy { scope: &scope, host: &host, namespace_labels: &labels };
        for (ns, why, grant) in [
            ("kube-system", "a system namespace", "scope.grant: [kube-system]"),
            ("kube-public", "a system namespace", "scope.grant: [kube-public]"),
            ("kube-node-lease", "a system namespace", "scope.grant: [kube-node-lease]"),
            ("wasmcm", "the host's own", "scope.hostNamespace, or scope.grant: [wasmcm]"),
            ("leases", "the namespace of the host's Leases", "scope.grant: [leases]"),
        ] {
            let e = t.admits(ns).unwrap_err();
            assert!(e.contains(&format!("namespace {ns:?} is {why}")) && e.contains(grant), "{e}");
        }
        assert!(t.admits("default").is_ok() && t.admits("team-a").is_ok() && t.admits("").is_ok());

        // Every namespace plus kube-system: the grant adds it, the rest stays as it was.
        let plus = Scope { grant: ["kube-system".to_string(), "wasmcm".to_string()].into(), ..Scope::default() };
        let t = Tenancy { scope: &plus, host: &host, namespace_labels: &labels };
        assert!(t.admits("kube-system").is_ok() && t.admits("default").is_ok() && t.admits("wasmcm").is_ok());
        assert!(t.admits("kube-public").is_err() && t.admits("leases").is_err());

        // A selector matching a withheld namespace does not grant it, nor does a list naming it.
        let selector = wasmcm_core::Selector::from_label_selector(
            &serde_json::from_value(json!({"matchLabels": {"tenant": "a"}})).unwrap(),
        )
        .unwrap();
        let everywhere = |ns: &str| Some([("tenant".to_string(), "a".to_string())].into()).filter(|_| !ns.is_empty());
        let scope = Scope {
            namespace_selector: Some(selector),
            namespaces: Some(["kube-system".to_string(), "team-a".to_string()].into()),
            ..Scope::default()
        };
        let t = Tenancy { scope: &scope, host: &host, namespace_labels: &everywhere };
        assert!(t.admits("team-a").is_ok());
        assert!(t.admits("kube-system").unwrap_err().contains("scope.grant: [kube-system]"));
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

    #[test]
    fn events_of_a_cluster_scoped_primary_regard_it_or_namespaces_in_scope() {
        let host = host();
        let scope = Scope::default();
        let t = Tenancy { scope: &scope, host: &host, namespace_labels: &labels };
        let ns =
            |name: &str| ObjectRef { kind: Kind::new("v1", "Namespace"), namespace: String::new(), name: name.into() };
        let pod =
            |namespace: &str| ObjectRef { kind: Kind::new("v1", "Pod"), namespace: namespace.into(), name: "p".into() };
        let primary = ns("team-a");
        assert!(t.admits_event(&primary, &primary).is_ok());
        assert!(t.admits_event(&primary, &pod("team-a")).is_ok());
        assert!(t.admits_event(&primary, &pod("kube-system")).unwrap_err().contains("system namespace"));
        let e = t.admits_event(&primary, &ns("other")).unwrap_err();
        assert!(e.contains("not the cluster-scoped v1/Namespace other"), "{e}");
    }

    fn pod(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    }

    fn container(security: Value) -> Value {
        json!({"containers": [{"name": "c", "image": "nginx", "securityContext": security}]})
    }

    #[test]
    fn pods_and_templates_run_as_allowed_accounts_at_the_allowed_level() {
        let host = host();
        let scope = Scope::default();
        let t = Tenancy { scope: &scope, host: &host, namespace_labels: &labels };
        let pod_kind = Kind::new("v1", "Pod");
        assert!(t.admits_pods(&pod_kind, &pod(container(json!({})))).is_ok(), "default account, baseline");
        let mut foreign = container(json!({}));
        foreign["serviceAccountName"] = json!("clusterrole-aggregation-controller");
        let e = t.admits_pods(&pod_kind, &pod(foreign.clone())).unwrap_err();
        assert_eq!(
            e,
            "spec.serviceAccountName \"clusterrole-aggregation-controller\": the pod would run as that \
             ServiceAccount, which the manifest does not allow (scope.serviceAccounts: [default])"
        );
        let mut deprecated = container(json!({}));
        deprecated["serviceAccount"] = json!("admin");
        assert!(t.admits_pods(&pod_kind, &pod(deprecated)).unwrap_err().starts_with("spec.serviceAccount \"admin\""));

        let e = t.admits_pods(&pod_kind, &pod(container(json!({"privileged": true})))).unwrap_err();
        assert_eq!(
            e,
            "the pod violates PodSecurity \"baseline:latest\" (scope.podSecurity): privileged (container \"c\" must \
             not set securityContext.privileged=true)"
        );

        // Every workload kind's template, at its own place.
        let template = json!({"metadata": {"labels": {"a": "b"}}, "spec": foreign});
        for (api_version, kind, object, field) in [
            ("apps/v1", "Deployment", json!({"spec": {"template": template}}), "spec.template.spec"),
            ("apps/v1", "ReplicaSet", json!({"spec": {"template": template}}), "spec.template.spec"),
            ("apps/v1", "StatefulSet", json!({"spec": {"template": template}}), "spec.template.spec"),
            ("apps/v1", "DaemonSet", json!({"spec": {"template": template}}), "spec.template.spec"),
            ("batch/v1", "Job", json!({"spec": {"template": template}}), "spec.template.spec"),
            (
                "batch/v1",
                "CronJob",
                json!({"spec": {"jobTemplate": {"spec": {"template": template}}}}),
                "spec.jobTemplate.spec.template.spec",
            ),
            ("v1", "ReplicationController", json!({"spec": {"template": template}}), "spec.template.spec"),
            ("v1", "PodTemplate", json!({"template": template}), "template.spec"),
        ] {
            let e = t.admits_pods(&Kind::new(api_version, kind), &object).unwrap_err();
            assert!(
                e.starts_with(&format!("{field}.serviceAccountName \"clusterrole-aggregation-controller\"")),
                "{kind}: {e}"
            );
        }
        let privileged = json!({"spec": {"template": {"spec": container(json!({"privileged": true}))}}});
        let e = t.admits_pods(&Kind::new("apps/v1", "Deployment"), &privileged).unwrap_err();
        assert!(e.starts_with("spec.template violates PodSecurity \"baseline:latest\""), "{e}");
        assert!(t.admits_pods(&Kind::new("v1", "ConfigMap"), &privileged).is_ok(), "no pods in a ConfigMap");

        // The built-ins' grant: any account, privileged.
        let builtin =
            Scope { service_accounts: ServiceAccounts::Any, pod_security: Level::Privileged, ..Scope::default() };
        let t = Tenancy { scope: &builtin, host: &host, namespace_labels: &labels };
        let mut both = container(json!({"privileged": true}));
        both["serviceAccountName"] = json!("coredns");
        assert!(t.admits_pods(&pod_kind, &pod(both)).is_ok());

        // An account list without `default`: an unset account is refused, a listed one allowed.
        let listed = Scope {
            service_accounts: ServiceAccounts::Only(["builder".to_string()].into()),
            pod_security: Level::Restricted,
            ..Scope::default()
        };
        let t = Tenancy { scope: &listed, host: &host, namespace_labels: &labels };
        assert!(t.admits_pods(&pod_kind, &pod(container(json!({})))).unwrap_err().contains("is unset"));
        let mut builder = container(json!({}));
        builder["serviceAccountName"] = json!("builder");
        let e = t.admits_pods(&pod_kind, &pod(builder)).unwrap_err();
        assert!(e.contains("\"restricted:latest\"") && e.contains("allowPrivilegeEscalation != false"), "{e}");
    }

    #[test]
    fn patches_may_change_the_pods_a_workload_runs_only_under_an_open_scope() {
        let host = host();
        let scope = Scope::default();
        let t = Tenancy { scope: &scope, host: &host, namespace_labels: &labels };
        let (pod, deployment) = (Kind::new("v1", "Pod"), Kind::new("apps/v1", "Deployment"));
        let finalizer =
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["batch.kubernetes.io/job-tracking"]}});
        assert!(t.admits_pod_patch(&pod, false, &finalizer).is_ok(), "metadata beside the annotations");
        assert!(t.admits_pod_patch(&pod, false, &json!({"metadata": {"labels": {"a": "b"}}})).is_ok());
        assert!(t.admits_pod_patch(&deployment, false, &json!({"spec": {"replicas": 3}})).is_ok());
        assert!(t.admits_pod_patch(&Kind::new("v1", "ConfigMap"), false, &json!({"spec": 1})).is_ok());
        let json_ok = json!([{"op": "remove", "path": "/metadata/finalizers/0"}, {"op": "replace", "path": "/spec/replicas", "value": 2}]);
        assert!(t.admits_pod_patch(&deployment, true, &json_ok).is_ok());
        for (kind, json, body) in [
            (&pod, false, json!({"spec": {"containers": [{"name": "c", "securityContext": {"privileged": true}}]}})),
            (
                &pod,
                false,
                json!({"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}}}),
            ),
            (&pod, false, json!({"metadata": {"$patch": "replace", "name": "p"}})),
            (&pod, false, json!({"spec": null})),
            (&deployment, false, json!({"spec": {"template": {"spec": {"serviceAccountName": "admin"}}}})),
            (&deployment, false, json!({"spec": {"$retainKeys": ["replicas"], "replicas": 1}})),
            (&deployment, false, json!({"spec": {"template": null}})),
            (
                &deployment,
                true,
                json!([{"op": "replace", "path": "/spec/template/spec/serviceAccountName", "value": "admin"}]),
            ),
            (&deployment, true, json!([{"op": "replace", "path": "/spec", "value": {}}])),
            (
                &deployment,
                true,
                json!([{"op": "copy", "from": "/metadata/annotations/x", "path": "/spec/template/metadata/annotations/y"}]),
            ),
            (&pod, true, json!([{"op": "add", "path": "", "value": {}}])),
        ] {
            let e = t.admits_pod_patch(kind, json, &body).unwrap_err();
            assert!(e.contains(&format!("of the pods a {kind} runs")) && e.ends_with("send an update"), "{body}: {e}");
        }
        let e = t.admits_pod_patch(&deployment, false, &json!({"spec": {"template": {"spec": {}}}})).unwrap_err();
        assert_eq!(
            e,
            "the patch may change spec.template.spec of the pods a apps/v1/Deployment runs, which the host checks \
             only in a whole object under a scope that limits them (scope.serviceAccounts: [default], \
             scope.podSecurity: baseline): send an update"
        );
        let open =
            Scope { service_accounts: ServiceAccounts::Any, pod_security: Level::Privileged, ..Scope::default() };
        let t = Tenancy { scope: &open, host: &host, namespace_labels: &labels };
        assert!(t.admits_pod_patch(&deployment, false, &json!({"spec": {"template": {"spec": {}}}})).is_ok());
    }
}
