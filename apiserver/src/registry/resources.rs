//! The resource types the embedded API server serves: built-ins, plus custom resources added
//! by CustomResourceDefinitions. Owns naming (group, version, plural, kind) and which
//! subresources a type has, and where an object lives ([`Target`]: its type, namespace and
//! name); knows nothing about stored objects.

use std::sync::RwLock;

use serde_json::{Value, json};
use wasmcm_core::{ApiError, Kind};

use crate::registry::strategy::{self, Strategy};
use crate::storage::change::Key;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResourceType {
    /// "" for the core group.
    pub group: String,
    pub version: String,
    /// Plural, lowercase: "pods".
    pub resource: String,
    pub kind: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub status: bool,
    pub scale: bool,
    /// Set for custom resources: the CRD's additionalPrinterColumns of this version.
    pub printer_columns: Option<Value>,
    /// Answered at once and never stored (SelfSubjectAccessReview and the other reviews):
    /// create is the only verb.
    pub create_only: bool,
    /// Set for custom resources: the structural schema of this version (see `custom`).
    pub schema: Option<crate::custom::CustomSchema>,
    /// What its registry does besides storing.
    pub strategy: &'static Strategy,
}

impl ResourceType {
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// The kind it serves, with its group and version.
    pub(crate) fn gvk(&self) -> Kind {
        Kind::new(&self.api_version(), &self.kind)
    }

    /// Storage identity: one per group and resource, whatever the version. events.k8s.io's
    /// Events are the core group's (one internal type upstream, served under two names).
    pub(crate) fn id(&self) -> String {
        let group = if self.group == "events.k8s.io" && self.resource == "events" { "" } else { &self.group };
        format!("{group}/{}", self.resource)
    }

    pub(crate) fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    pub(crate) fn verbs(&self) -> Vec<&'static str> {
        if self.create_only {
            return vec!["create"];
        }
        if self.strategy.read_only {
            return vec!["get", "list"];
        }
        vec!["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    }

    /// What server-side apply and managed fields walk its objects by: a custom resource's
    /// structural schema (its list types, map keys and map types), else the built-in kind's.
    pub(crate) fn merge_type(&self) -> crate::managed::Ty<'_> {
        match &self.schema {
            Some(schema) => crate::managed::Ty::of_custom(schema.root()),
            None => crate::managed::Ty::of_kind(&self.api_version(), &self.kind),
        }
    }

    /// Kinds whose spec changes bump `metadata.generation` (status is a subresource, and the
    /// strategy says so).
    pub(crate) fn tracks_generation(&self) -> bool {
        // Custom resources always do (apiextensions' strategy), status subresource or not.
        (self.status && self.strategy.tracks_generation) || self.schema.is_some()
    }
}

#[allow(clippy::too_many_arguments)]
fn builtin(
    group: &str,
    version: &str,
    resource: &str,
    kind: &str,
    namespaced: bool,
    short: &[&str],
    status: bool,
    scale: bool,
    categories: &[&str],
) -> ResourceType {
    ResourceType {
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        kind: kind.into(),
        singular: kind.to_lowercase(),
        namespaced,
        short_names: short.iter().map(|s| s.to_string()).collect(),
        categories: categories.iter().map(|s| s.to_string()).collect(),
        status,
        scale,
        printer_columns: None,
        create_only: false,
        schema: None,
        strategy: &Strategy::GENERIC,
    }
}

impl ResourceType {
    /// Registered with `strategy`.
    fn with(self, strategy: &'static Strategy) -> Self {
        ResourceType { strategy, ..self }
    }
}

/// A kind served only for create: a review answered from the request (see `auth`).
fn review(group: &str, resource: &str, kind: &str) -> ResourceType {
    ResourceType { create_only: true, ..builtin(group, "v1", resource, kind, false, &[], false, false, &[]) }
}

fn builtins() -> Vec<ResourceType> {
    vec![
        builtin("", "v1", "namespaces", "Namespace", false, &["ns"], true, false, &[]).with(&strategy::NAMESPACE),
        builtin("", "v1", "componentstatuses", "ComponentStatus", false, &["cs"], false, false, &[])
            .with(&strategy::COMPONENT_STATUS),
        builtin("", "v1", "nodes", "Node", false, &["no"], true, false, &[]).with(&strategy::NODE),
        builtin("", "v1", "pods", "Pod", true, &["po"], true, false, &["all"]).with(&strategy::POD),
        builtin("", "v1", "replicationcontrollers", "ReplicationController", true, &["rc"], true, true, &["all"])
            .with(&strategy::REPLICATION_CONTROLLER),
        builtin("", "v1", "events", "Event", true, &["ev"], false, false, &[]).with(&strategy::EVENT),
        builtin("", "v1", "configmaps", "ConfigMap", true, &["cm"], false, false, &[]).with(&strategy::CONFIG_MAP),
        builtin("", "v1", "secrets", "Secret", true, &[], false, false, &[]).with(&strategy::SECRET),
        builtin("", "v1", "serviceaccounts", "ServiceAccount", true, &["sa"], false, false, &[])
            .with(&strategy::SERVICE_ACCOUNT),
        builtin("", "v1", "services", "Service", true, &["svc"], true, false, &["all"]).with(&strategy::SERVICE),
        builtin("", "v1", "endpoints", "Endpoints", true, &["ep"], false, false, &[]).with(&strategy::ENDPOINTS),
        builtin(
            "apiregistration.k8s.io",
            "v1",
            "apiservices",
            "APIService",
            false,
            &[],
            true,
            false,
            &["api-extensions"],
        )
        .with(&strategy::API_SERVICE),
        builtin("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true, &[], false, false, &[])
            .with(&strategy::ENDPOINT_SLICE),
        builtin("apps", "v1", "daemonsets", "DaemonSet", true, &["ds"], true, false, &["all"])
            .with(&strategy::DAEMON_SET),
        builtin("apps", "v1", "deployments", "Deployment", true, &["deploy"], true, true, &["all"])
            .with(&strategy::DEPLOYMENT),
        builtin("apps", "v1", "replicasets", "ReplicaSet", true, &["rs"], true, true, &["all"])
            .with(&strategy::REPLICA_SET),
        builtin("apps", "v1", "statefulsets", "StatefulSet", true, &["sts"], true, true, &["all"])
            .with(&strategy::STATEFUL_SET),
        builtin("events.k8s.io", "v1", "events", "Event", true, &["ev"], false, false, &[])
            .with(&strategy::EVENTS_V1_EVENT),
        builtin("batch", "v1", "cronjobs", "CronJob", true, &["cj"], true, false, &["all"]).with(&strategy::CRON_JOB),
        builtin("batch", "v1", "jobs", "Job", true, &[], true, false, &["all"]).with(&strategy::JOB),
        builtin("coordination.k8s.io", "v1", "leases", "Lease", true, &[], false, false, &[]).with(&strategy::LEASE),
        builtin("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, &["pdb"], true, false, &[])
            .with(&strategy::POD_DISRUPTION_BUDGET),
        builtin(
            "certificates.k8s.io",
            "v1",
            "certificatesigningrequests",
            "CertificateSigningRequest",
            false,
            &["csr"],
            true,
            false,
            &[],
        )
        .with(&strategy::CERTIFICATE_SIGNING_REQUEST),
        builtin("rbac.authorization.k8s.io", "v1", "roles", "Role", true, &[], false, false, &[]).with(&strategy::ROLE),
        builtin("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true, &[], false, false, &[])
            .with(&strategy::ROLE_BINDING),
        builtin("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false, &[], false, false, &[])
            .with(&strategy::CLUSTER_ROLE),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            false,
            &[],
            false,
            false,
            &[],
        )
        .with(&strategy::CLUSTER_ROLE_BINDING),
        review("authentication.k8s.io", "tokenreviews", "TokenReview"),
        review("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview"),
        review("authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview"),
        review("authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview"),
        builtin(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            &["crd", "crds"],
            true,
            false,
            &["api-extensions"],
        )
        .with(&strategy::CUSTOM_RESOURCE_DEFINITION),
    ]
}

/// Where an object lives.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub rt: ResourceType,
    /// Empty for cluster-scoped types.
    pub namespace: String,
    pub name: String,
}

impl Target {
    pub(crate) fn key(&self) -> Key {
        Key { id: self.rt.id(), namespace: self.namespace.clone(), name: self.name.clone() }
    }

    pub(crate) fn not_found(&self) -> ApiError {
        ApiError::not_found(&self.rt.group, &self.rt.resource, &self.name)
    }
}

/// The served types. Built-ins are fixed; custom resources come and go with their CRDs.
pub(crate) struct Registry {
    types: RwLock<Vec<ResourceType>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry { types: RwLock::new(builtins()) }
    }
}

impl Registry {
    pub(crate) fn all(&self) -> Vec<ResourceType> {
        self.types.read().map(|t| t.clone()).unwrap_or_default()
    }

    /// The type served at `/{group}/{version}/{resource}`.
    pub(crate) fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<ResourceType> {
        self.types
            .read()
            .ok()?
            .iter()
            .find(|t| t.group == group && t.version == version && t.resource == resource)
            .cloned()
    }

    /// A type stored under `id` ("group/resource"), in whichever version comes first.
    pub(crate) fn by_id(&self, id: &str) -> Option<ResourceType> {
        let (group, resource) = id.split_once('/')?;
        self.types.read().ok()?.iter().find(|t| t.group == group && t.resource == resource).cloned()
    }

    pub(crate) fn by_kind(&self, api_version: &str, kind: &str) -> Option<ResourceType> {
        self.types.read().ok()?.iter().find(|t| t.api_version() == api_version && t.kind == kind).cloned()
    }

    /// Groups in discovery order, each with its versions (preferred first).
    pub(crate) fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for t in self.all() {
            match groups.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) if !versions.contains(&t.version) => versions.push(t.version.clone()),
                Some(_) => {}
                None => groups.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        groups
    }

    /// Serves (or stops serving) the versions of a CustomResourceDefinition. A CRD that is
    /// not Established-worthy (no served version) serves nothing.
    pub(crate) fn sync_crd(&self, crd: &Value, present: bool) {
        let group = crd.pointer("/spec/group").and_then(Value::as_str).unwrap_or("").to_string();
        let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
        let plural = names.get("plural").and_then(Value::as_str).unwrap_or("").to_string();
        let Ok(mut types) = self.types.write() else { return };
        types.retain(|t| !(t.group == group && t.resource == plural && t.printer_columns.is_some()));
        if !present || group.is_empty() || plural.is_empty() {
            return;
        }
        let strs = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
                .unwrap_or_default()
        };
        for v in crd.pointer("/spec/versions").and_then(Value::as_array).into_iter().flatten() {
            if v.get("served").and_then(Value::as_bool) != Some(true) {
                continue;
            }
            let kind = names.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
            types.push(ResourceType {
                group: group.clone(),
                version: v.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                resource: plural.clone(),
                singular: names
                    .get("singular")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .unwrap_or_else(|| kind.to_lowercase()),
                kind,
                namespaced: crd.pointer("/spec/scope").and_then(Value::as_str) != Some("Cluster"),
                short_names: strs(names.get("shortNames")),
                categories: strs(names.get("categories")),
                status: v.pointer("/subresources/status").is_some(),
                scale: v.pointer("/subresources/scale").is_some(),
                printer_columns: Some(v.get("additionalPrinterColumns").cloned().unwrap_or(json!([]))),
                create_only: false,
                schema: Some(crate::custom::CustomSchema::of_version(v)),
                strategy: &Strategy::GENERIC,
            });
        }
    }
}
