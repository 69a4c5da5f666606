//! One `Strategy` per resource: what kube-apiserver's `pkg/registry/<group>/<resource>/
//! strategy.go` holds for it, registered once per built-in type (`resources`), so that the
//! generic verbs ask the type instead of matching on its kind. Here so far: defaulting,
//! PrepareForCreate and PrepareForUpdate, how a status write is prepared, validation (the rules
//! are `validation`'s), the printer (`table`'s), the strategic merge schema (`patch`'s) and
//! the fields a list or watch may select by. Custom resources take [`Strategy::GENERIC`]: their
//! schema's pruning and defaulting is `custom`'s.
//!
//! Beside the table, what the workload kinds' strategies write beyond defaulting and validation
//! (pkg/registry/batch/job and pkg/registry/apps/daemonset strategy.go): a Job's generated
//! selector and pod labels, a DaemonSet's template generation.
//!
//! Server-owned metadata, status resets and `metadata.generation` are `api`'s, the defaults
//! themselves `defaults`', and whether the result is acceptable is `validation`'s. Input of the
//! wrong shape is left for validation to report.

use serde_json::{Map, Value, json};
use wasmcm_core::str_at;

use crate::defaults::{self, child_obj};
use crate::patch::{self, Fields};
use crate::registry::hooks::Cluster;
use crate::registry::{certificates, services};
use crate::storage::change::Key;
use crate::storage::query::Filter;
use crate::storage::query::{self, FieldRequirement};
use crate::table;
use crate::user::UserInfo;
use crate::validation::{self, Rules, StatusRules};
use wasmcm_core::{ApiError, Cause};

/// The labels the Job registry puts on a Job's pods: the legacy unprefixed pair and the
/// `batch.kubernetes.io/` pair (both still written in 1.35).
pub(crate) const JOB_NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
pub(crate) const CONTROLLER_UID_LABELS: [&str; 2] = ["controller-uid", "batch.kubernetes.io/controller-uid"];

/// A DaemonSet's `spec.templateGeneration`, which apps/v1 carries in this annotation.
pub(crate) const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// What one resource's registry strategy does besides storing.
#[derive(Debug)]
pub(crate) struct Strategy {
    /// `SetDefaults` of the type, on every decoded object (create, update, and a status write
    /// where `defaults_status`).
    pub defaults: fn(&mut Map<String, Value>),
    /// `PrepareForCreate`, after defaulting and after the server set name and uid.
    pub prepare_create: fn(&mut Value),
    /// `PrepareForUpdate` of the main resource, after defaulting, given the stored object.
    pub prepare_update: fn(&mut Value, &Value),
    /// A status write is defaulted as a decoded object is: the workload kinds, whose status
    /// defaults are counters Go always writes (a pod's phase and QoS class are its registry's on
    /// create, not a status write's).
    pub defaults_status: bool,
    /// A status write also takes `metadata.annotations`: upstream's Deployment status strategy
    /// resets only spec and labels, and the deployment controller relies on it to set its
    /// revision annotation; other kinds keep their metadata.
    pub status_takes_annotations: bool,
    /// The fields a field selector may name beyond `metadata.name` and `metadata.namespace`
    /// (the type's `GetAttrs`).
    pub selectable_fields: &'static [&'static str],
    /// Upstream's field label conversion: the stored field a selector's label addresses, for a
    /// type stored in another version's form (None: that label selects nothing).
    pub field_label: Option<fn(&str) -> Option<String>>,
    /// `Validate` and `ValidateUpdate` (`validation`'s rules for the kind).
    pub validate: Rules,
    /// The status strategy's `ValidateUpdate`.
    pub validate_status: StatusRules,
    /// Its printer for `kubectl get` (printers.go); None: the default convertor's name and age.
    pub printer: Option<&'static table::Builtin>,
    /// The patch strategies of its Go type's fields, for a strategic merge patch; None: it has
    /// no Go type (custom resources, which upstream answers 415).
    pub merge_schema: Option<Fields>,
    /// `DefaultGarbageCollectionPolicy` is OrphanDependents: batch/v1 Jobs keep their pods unless
    /// the delete asks for a propagation policy (for compatibility with old clients).
    pub orphans_by_default: bool,
    /// `ReturnDeletedObject`: a delete that removes the object at once answers with it rather
    /// than with a `Status` of success.
    pub returns_deleted_object: bool,
    /// A spec change bumps `metadata.generation` when the type has a status subresource; not
    /// for Services, which have one but no generation upstream.
    pub tracks_generation: bool,
    /// Made up on each request, never stored (ComponentStatus): get and list only.
    pub read_only: bool,
    /// The subresources it serves besides `status` and `scale` (which custom resources may
    /// have too, so `ResourceType` says): each has a handler of the same name in `subresources`.
    pub subresources: &'static [Subresource],
    /// Status is settable on create (a Node's: its strategy keeps all fields); other types
    /// start with none.
    pub status_on_create: bool,
    /// The part of `PrepareForCreate` that reads who asks (a CSR's requestor), run for a
    /// user's create request.
    pub requested_by: Option<fn(&mut Value, &UserInfo)>,
    /// What the storage does once a create is validated, before it is stored (`BeginCreate`):
    /// a Service's addresses, a CustomResourceDefinition made established. Causes refuse it.
    pub begin_create: Option<BeginCreate>,
    /// What an update keeps of the stored object whatever was sent (`BeginUpdate`: a Service's
    /// allocated addresses; a CSR's spec), before defaulting and before the field manager
    /// records the writer's fields, so that what is kept is not recorded as the writer's.
    pub begin_update: fn(&mut Value, &Value),
    /// The status strategy's `PrepareForUpdate` beyond the generic reset, given the stored
    /// object (a CSR's approval conditions stay as they were).
    pub prepare_status: fn(&mut Value, &Value),
    /// `AfterCreate`, `AfterUpdate` and `AfterDelete` of the storage, with the object written:
    /// a CustomResourceDefinition's types served and registered, then removed.
    pub after_create: Option<fn(&dyn Cluster, &Value)>,
    pub after_update: Option<fn(&dyn Cluster, &Value)>,
    pub after_delete: Option<fn(&dyn Cluster, &Value)>,
    /// What the server makes of it when it is loaded from a snapshot rather than written.
    pub restored: Option<fn(&dyn Cluster, &Value)>,
    /// `CheckGracefulDelete`: the grace period a delete gives the object (given the one the
    /// request asked for), which a shorter later delete may cut; None: removed at once.
    pub grace_period: Option<fn(&Value, Option<i64>) -> i64>,
    /// `BeforeDelete`'s refusal of a delete of this object, by name (the namespaces that may
    /// not be deleted).
    pub undeletable: fn(&str) -> Option<&'static str>,
    /// A delete only marks it, with what this writes, and its controller finishes it (a
    /// namespace: phase Terminating and the `kubernetes` finalizer, until it is emptied).
    pub finalized_on_delete: Option<fn(&mut Value)>,
}

/// A storage's `BeginCreate`: what it fills in of an object about to be stored, and why not.
pub(crate) type BeginCreate = fn(&dyn Cluster, &mut Value) -> Vec<Cause>;

/// A subresource a type serves besides `status` and `scale`, as discovery describes it.
#[derive(Debug)]
pub(crate) struct Subresource {
    pub name: &'static str,
    /// The (group, version, kind) it takes and answers with; None: the type's own.
    pub kind: Option<(&'static str, &'static str, &'static str)>,
    pub verbs: &'static [&'static str],
    /// Listed by discovery and OpenAPI (the kubelet proxies are not, here).
    pub discovered: bool,
}

impl Subresource {
    /// Read and written as the type's own kind: get, patch and update.
    const fn of_its_kind(name: &'static str) -> Subresource {
        Subresource { name, kind: None, verbs: &["get", "patch", "update"], discovered: true }
    }

    /// Created as another kind (an Eviction, a TokenRequest) and answered with it.
    const fn create(name: &'static str, group: &'static str, version: &'static str, kind: &'static str) -> Subresource {
        Subresource { name, kind: Some((group, version, kind)), verbs: &["create"], discovered: true }
    }

    /// Proxied to the kubelet upstream; answered with why there is nothing to proxy to.
    const fn proxied(name: &'static str) -> Subresource {
        Subresource { name, kind: None, verbs: &[], discovered: false }
    }
}

/// Two types share a strategy exactly when they are registered with the same one.
impl PartialEq for Strategy {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}
impl Eq for Strategy {}

impl Strategy {
    /// The generic registry's: nothing beyond what every type gets.
    pub(crate) const GENERIC: Strategy = Strategy {
        defaults: |_| {},
        prepare_create: |_| {},
        prepare_update: |_, _| {},
        defaults_status: false,
        status_takes_annotations: false,
        selectable_fields: &[],
        field_label: None,
        validate: validation::generic,
        validate_status: |_, _, _| {},
        printer: None,
        merge_schema: None,
        orphans_by_default: false,
        returns_deleted_object: false,
        tracks_generation: true,
        read_only: false,
        subresources: &[],
        status_on_create: false,
        requested_by: None,
        begin_create: None,
        begin_update: |_, _| {},
        prepare_status: |_, _| {},
        after_create: None,
        after_update: None,
        after_delete: None,
        restored: None,
        grace_period: None,
        undeletable: |_| None,
        finalized_on_delete: None,
    };

    /// Fills in the type's defaults, in place; input that is not an object is left alone.
    pub(crate) fn default(&self, object: &mut Value) {
        if let Some(obj) = object.as_object_mut() {
            (self.defaults)(obj);
        }
    }

    /// The subresource of this name it serves besides status and scale.
    pub(crate) fn subresource(&self, name: &str) -> Option<&'static Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// A field selector of this type, its labels checked and converted (`stored_field`).
    pub(crate) fn parse_field_selector(&self, s: &str) -> Result<Vec<FieldRequirement>, String> {
        query::parse_field_selector(s, |label| self.stored_field(label))
    }

    /// The stored field a selector's `label` addresses; None: `label` cannot select this type.
    pub(crate) fn stored_field(&self, label: &str) -> Option<String> {
        if let Some(convert) = self.field_label {
            return convert(label);
        }
        (matches!(label, "metadata.name" | "metadata.namespace") || self.selectable_fields.contains(&label))
            .then(|| label.to_owned())
    }
}

/// The built-in types' strategies, as `resources` registers them.
pub(crate) const POD: Strategy = Strategy {
    defaults: defaults::pod,
    selectable_fields: &[
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ],
    validate: validation::pods::pod,
    printer: Some(&table::POD),
    merge_schema: Some(patch::POD),
    returns_deleted_object: true,
    subresources: &[
        Subresource::of_its_kind("ephemeralcontainers"),
        Subresource::create("eviction", "policy", "v1", "Eviction"),
        // What kube-apiserver proxies to the kubelet; discovery lists none of them here.
        Subresource::proxied("log"),
        Subresource::proxied("exec"),
        Subresource::proxied("attach"),
        Subresource::proxied("portforward"),
    ],
    grace_period: Some(pod_grace_period),
    ..Strategy::GENERIC
};
pub(crate) const NAMESPACE: Strategy = Strategy {
    defaults: defaults::namespace,
    selectable_fields: &["status.phase"],
    validate: validation::core::namespace,
    printer: Some(&table::NAMESPACE),
    merge_schema: Some(patch::NAMESPACE),
    undeletable: |name| IMMORTAL_NAMESPACES.contains(&name).then_some("this namespace may not be deleted"),
    finalized_on_delete: Some(|namespace| {
        namespace["status"]["phase"] = json!("Terminating");
        // The namespace stays until the namespace controller (gc) has emptied it.
        if namespace.pointer("/spec/finalizers").and_then(Value::as_array).is_none_or(Vec::is_empty) {
            namespace["spec"]["finalizers"] = json!(["kubernetes"]);
        }
    }),
    ..Strategy::GENERIC
};
pub(crate) const NODE: Strategy = Strategy {
    defaults: defaults::node,
    selectable_fields: &["spec.unschedulable"],
    validate: validation::core::node,
    printer: Some(&table::NODE),
    merge_schema: Some(patch::NODE),
    status_on_create: true,
    ..Strategy::GENERIC
};
pub(crate) const SECRET: Strategy = Strategy {
    defaults: defaults::secret,
    selectable_fields: &["type"],
    validate: validation::core::secret,
    printer: Some(&table::SECRET),
    merge_schema: Some(patch::METADATA_ONLY),
    ..Strategy::GENERIC
};
pub(crate) const SERVICE: Strategy = Strategy {
    defaults: defaults::service,
    validate: validation::core::service,
    printer: Some(&table::SERVICE),
    merge_schema: Some(patch::SERVICE),
    returns_deleted_object: true,
    tracks_generation: false,
    begin_create: Some(services::allocate),
    begin_update: services::carry_over,
    ..Strategy::GENERIC
};
pub(crate) const REPLICATION_CONTROLLER: Strategy = Strategy {
    defaults: defaults::replication_controller,
    defaults_status: true,
    selectable_fields: &["status.replicas"],
    validate: validation::workloads::replication_controller,
    validate_status: |v, new, old| validation::workloads::status(v, "ReplicationController", new, old),
    printer: Some(&table::REPLICATION_CONTROLLER),
    merge_schema: Some(patch::WORKLOAD),
    ..Strategy::GENERIC
};
pub(crate) const EVENT: Strategy = Strategy {
    selectable_fields: &[
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ],
    validate: |v, object, _| validation::events::core_event(v, object),
    printer: Some(&table::EVENT),
    merge_schema: Some(patch::METADATA_ONLY),
    ..Strategy::GENERIC
};
/// events.k8s.io/v1's Events are stored as core/v1's: its field labels name core/v1 fields.
pub(crate) const EVENTS_V1_EVENT: Strategy = Strategy {
    field_label: Some(wasmcm_core::event::events_field_label),
    validate: validation::events::events_event,
    printer: Some(&table::EVENTS_V1_EVENT),
    merge_schema: Some(patch::METADATA_ONLY),
    ..Strategy::GENERIC
};
pub(crate) const DEPLOYMENT: Strategy = Strategy {
    defaults: defaults::deployment,
    status_takes_annotations: true,
    validate: |v, object, old| validation::apps::workload(v, object, old, "Deployment"),
    printer: Some(&table::DEPLOYMENT),
    merge_schema: Some(patch::WORKLOAD),
    ..Strategy::GENERIC
};
pub(crate) const REPLICA_SET: Strategy = Strategy {
    defaults: defaults::replica_set,
    defaults_status: true,
    selectable_fields: &["status.replicas"],
    validate: |v, object, old| validation::apps::workload(v, object, old, "ReplicaSet"),
    printer: Some(&table::REPLICA_SET),
    merge_schema: Some(patch::WORKLOAD),
    ..Strategy::GENERIC
};
pub(crate) const DAEMON_SET: Strategy = Strategy {
    defaults: defaults::daemon_set,
    prepare_create: |object| set_template_generation(object, 1),
    prepare_update: |new, old| {
        // The client's value is not taken: the generation moves on exactly when the
        // template changes.
        let old_generation = str_at(old, &format!("/metadata/annotations/{TEMPLATE_GENERATION}")).parse().unwrap_or(0);
        let changed = new.pointer("/spec/template") != old.pointer("/spec/template");
        set_template_generation(new, old_generation + i64::from(changed));
    },
    defaults_status: true,
    validate: validation::workloads::daemon_set,
    validate_status: |v, new, old| validation::workloads::status(v, "DaemonSet", new, old),
    printer: Some(&table::DAEMON_SET),
    merge_schema: Some(patch::WORKLOAD),
    ..Strategy::GENERIC
};
pub(crate) const STATEFUL_SET: Strategy = Strategy {
    defaults: defaults::stateful_set,
    defaults_status: true,
    validate: validation::workloads::stateful_set,
    validate_status: |v, new, old| validation::workloads::status(v, "StatefulSet", new, old),
    printer: Some(&table::STATEFUL_SET),
    merge_schema: Some(patch::WORKLOAD),
    ..Strategy::GENERIC
};
pub(crate) const JOB: Strategy = Strategy {
    defaults: defaults::job,
    prepare_create: |object| {
        generate_job_selector(object);
        // What upstream's defaulting does when the stored Job is read back: a Job created
        // without labels is shown with its pods' labels, the generated ones included.
        JOB.default(object);
    },
    defaults_status: true,
    selectable_fields: &["status.successful"],
    validate: validation::workloads::job,
    validate_status: |v, new, old| validation::workloads::status(v, "Job", new, old),
    printer: Some(&table::JOB),
    merge_schema: Some(patch::WORKLOAD),
    orphans_by_default: true,
    ..Strategy::GENERIC
};
pub(crate) const CRON_JOB: Strategy = Strategy {
    defaults: defaults::cron_job,
    defaults_status: true,
    validate: validation::workloads::cron_job,
    printer: Some(&table::CRON_JOB),
    merge_schema: Some(patch::CRON_JOB),
    ..Strategy::GENERIC
};
pub(crate) const POD_DISRUPTION_BUDGET: Strategy = Strategy {
    defaults: defaults::pod_disruption_budget,
    validate: validation::policy::pod_disruption_budget,
    printer: Some(&table::POD_DISRUPTION_BUDGET),
    merge_schema: Some(patch::POD_DISRUPTION_BUDGET),
    ..Strategy::GENERIC
};
pub(crate) const ROLE_BINDING: Strategy = Strategy {
    defaults: defaults::binding,
    validate: |v, object, old| validation::rbac::role_binding(v, object, old, true),
    printer: Some(&table::ROLE_BINDING),
    merge_schema: Some(patch::METADATA_ONLY),
    ..Strategy::GENERIC
};
pub(crate) const CLUSTER_ROLE_BINDING: Strategy = Strategy {
    defaults: defaults::binding,
    validate: |v, object, old| validation::rbac::role_binding(v, object, old, false),
    printer: Some(&table::CLUSTER_ROLE_BINDING),
    merge_schema: Some(patch::METADATA_ONLY),
    ..Strategy::GENERIC
};
pub(crate) const ROLE: Strategy = Strategy {
    validate: |v, object, old| validation::rbac::role(v, object, old, true),
    merge_schema: Some(patch::METADATA_ONLY),
    ..Strategy::GENERIC
};
pub(crate) const CLUSTER_ROLE: Strategy = Strategy {
    validate: |v, object, old| validation::rbac::role(v, object, old, false),
    merge_schema: Some(patch::METADATA_ONLY),
    ..Strategy::GENERIC
};
pub(crate) const CONFIG_MAP: Strategy = Strategy {
    validate: validation::core::config_map,
    printer: Some(&table::CONFIG_MAP),
    merge_schema: Some(patch::METADATA_ONLY),
    ..Strategy::GENERIC
};
pub(crate) const SERVICE_ACCOUNT: Strategy = Strategy {
    validate: validation::core::service_account,
    printer: Some(&table::SERVICE_ACCOUNT),
    merge_schema: Some(patch::SERVICE_ACCOUNT),
    returns_deleted_object: true,
    subresources: &[Subresource::create("token", "authentication.k8s.io", "v1", "TokenRequest")],
    ..Strategy::GENERIC
};
pub(crate) const LEASE: Strategy = Strategy {
    validate: validation::coordination::lease,
    printer: Some(&table::LEASE),
    merge_schema: Some(patch::METADATA_ONLY),
    ..Strategy::GENERIC
};
pub(crate) const API_SERVICE: Strategy = Strategy {
    validate: validation::apiregistration::api_service,
    printer: Some(&table::API_SERVICE),
    ..Strategy::GENERIC
};
pub(crate) const CERTIFICATE_SIGNING_REQUEST: Strategy = Strategy {
    validate: validation::certificates::certificate_signing_request,
    printer: Some(&table::CERTIFICATE_SIGNING_REQUEST),
    subresources: &[Subresource::of_its_kind("approval")],
    requested_by: Some(certificates::stamp_requestor),
    begin_update: certificates::keep_spec,
    prepare_status: certificates::status_update,
    ..Strategy::GENERIC
};
pub(crate) const CUSTOM_RESOURCE_DEFINITION: Strategy = Strategy {
    defaults: defaults::crd,
    validate: validation::apiextensions::crd,
    merge_schema: Some(patch::METADATA_ONLY),
    begin_create: Some(|cluster, crd| {
        establish_crd(crd, &cluster.now_rfc3339());
        Vec::new()
    }),
    after_create: Some(|cluster, crd| {
        cluster.serve_crd(crd, true);
        cluster.register_crd_groups();
    }),
    // An update may be the one that finishes a deletion (its last finalizer removed).
    after_update: Some(|cluster, crd| {
        cluster.serve_crd(crd, cluster.store().get(&crd_key(crd)).is_some());
        cluster.register_crd_groups();
    }),
    after_delete: Some(|cluster, crd| {
        cluster.serve_crd(crd, false);
        cluster.register_crd_groups();
        remove_custom_resources(cluster, crd);
    }),
    restored: Some(|cluster, crd| cluster.serve_crd(crd, true)),
    ..Strategy::GENERIC
};

pub(crate) const ENDPOINTS: Strategy =
    Strategy { printer: Some(&table::ENDPOINTS), merge_schema: Some(patch::METADATA_ONLY), ..Strategy::GENERIC };
pub(crate) const ENDPOINT_SLICE: Strategy =
    Strategy { printer: Some(&table::ENDPOINT_SLICE), merge_schema: Some(patch::METADATA_ONLY), ..Strategy::GENERIC };
pub(crate) const COMPONENT_STATUS: Strategy =
    Strategy { printer: Some(&table::COMPONENT_STATUS), read_only: true, ..Strategy::GENERIC };

/// The namespaces that exist from the start and may not be deleted.
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// A bound pod is deleted gracefully (the kubelet finishes it), over the grace period asked
/// for or its spec's; an unbound one at once.
fn pod_grace_period(pod: &Value, asked: Option<i64>) -> i64 {
    if str_at(pod, "/spec/nodeName").is_empty() {
        return 0;
    }
    asked
        .unwrap_or_else(|| pod.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(30))
        .max(0)
}

/// A CRD is served as soon as it is stored: names accepted, established.
fn establish_crd(crd: &mut Value, now: &str) {
    let cond = |t: &str, reason: &str, msg: &str| json!({"type": t, "status": "True", "lastTransitionTime": now, "reason": reason, "message": msg});
    crd["status"] = json!({
        "conditions": [
            cond("NamesAccepted", "NoConflicts", "no conflicts found"),
            cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": crd.pointer("/spec/names").cloned().unwrap_or(json!({})),
        "storedVersions": crd.pointer("/spec/versions").and_then(Value::as_array).map(|vs| {
            vs.iter().filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true)).filter_map(|v| v.get("name").cloned()).collect::<Vec<_>>()
        }).unwrap_or_default(),
    });
}

fn crd_key(crd: &Value) -> Key {
    Key {
        id: "apiextensions.k8s.io/customresourcedefinitions".into(),
        namespace: String::new(),
        name: str_at(crd, "/metadata/name").into(),
    }
}

/// What the CRD cleanup finalizer does upstream: a deleted CRD takes its objects with it.
fn remove_custom_resources(cluster: &dyn Cluster, crd: &Value) {
    let id = format!("{}/{}", str_at(crd, "/spec/group"), str_at(crd, "/spec/names/plural"));
    let (objects, _) = cluster.store().list(&id, None, &Filter::for_type(&id));
    for object in objects {
        let key = Key {
            id: id.clone(),
            namespace: str_at(&object, "/metadata/namespace").into(),
            name: str_at(&object, "/metadata/name").into(),
        };
        let _ = cluster.store().delete(&key, || ApiError::not_found("", &id, &key.name), |_| Ok(()));
    }
}

fn set_template_generation(object: &mut Value, generation: i64) {
    let Some(obj) = object.as_object_mut() else { return };
    if let Some(annotations) = child_obj(obj, "metadata").and_then(|m| child_obj(m, "annotations")) {
        annotations.insert(TEMPLATE_GENERATION.into(), json!(generation.to_string()));
    }
}

/// `generateSelectorIfNeeded`: unless `spec.manualSelector` is true, the pod template gets the
/// job-name and controller-uid labels (where the user did not set them; a conflicting value is
/// validation's to reject) and the selector gets `batch.kubernetes.io/controller-uid`.
fn generate_job_selector(job: &mut Value) {
    // Defaulting has made it false when unset; anything else is manual or for validation.
    if job.pointer("/spec/manualSelector") != Some(&json!(false)) {
        return;
    }
    let name = str_at(job, "/metadata/name").to_owned();
    let uid = str_at(job, "/metadata/uid").to_owned();
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let labels =
        child_obj(spec, "template").and_then(|t| child_obj(t, "metadata")).and_then(|m| child_obj(m, "labels"));
    if let Some(labels) = labels {
        for (keys, value) in [(JOB_NAME_LABELS, &name), (CONTROLLER_UID_LABELS, &uid)] {
            for key in keys {
                labels.entry(key).or_insert_with(|| json!(value));
            }
        }
    }
    let match_labels: Option<&mut Map<String, Value>> =
        child_obj(spec, "selector").and_then(|s| child_obj(s, "matchLabels"));
    if let Some(match_labels) = match_labels {
        match_labels.entry(CONTROLLER_UID_LABELS[1]).or_insert_with(|| json!(uid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::query::Filter;

    fn created(strategy: &Strategy, mut object: Value) -> Value {
        strategy.default(&mut object);
        (strategy.prepare_create)(&mut object);
        object
    }

    fn job(template_labels: Option<Value>) -> Value {
        let mut j = json!({"metadata": {"name": "pi", "uid": "u-1"}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "perl"}]}}}});
        if let Some(labels) = template_labels {
            j["spec"]["template"]["metadata"] = json!({"labels": labels});
        }
        j
    }

    #[test]
    fn a_job_gets_its_generated_selector_and_labels() {
        let j = created(&JOB, job(None));
        let want = json!({"batch.kubernetes.io/controller-uid": "u-1", "batch.kubernetes.io/job-name": "pi",
            "controller-uid": "u-1", "job-name": "pi"});
        assert_eq!(j["spec"]["template"]["metadata"]["labels"], want);
        assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}));
        // Read back with defaults: the Job's own labels are its pods'.
        assert_eq!(j["metadata"]["labels"], want);
        assert_eq!(j["spec"]["manualSelector"], json!(false));
    }

    #[test]
    fn a_job_keeps_its_own_labels_and_manual_selectors() {
        // Labels of the template given: those become the Job's before the generated ones exist.
        let j = created(&JOB, job(Some(json!({"app": "pi", "job-name": "other"}))));
        assert_eq!(j["metadata"]["labels"], json!({"app": "pi", "job-name": "other"}));
        assert_eq!(j["spec"]["template"]["metadata"]["labels"]["job-name"], "other");
        assert_eq!(j["spec"]["template"]["metadata"]["labels"]["controller-uid"], "u-1");

        let mut manual = job(Some(json!({"app": "pi"})));
        manual["spec"]["manualSelector"] = json!(true);
        manual["spec"]["selector"] = json!({"matchLabels": {"app": "pi"}});
        let j = created(&JOB, manual);
        assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"app": "pi"}}));
        assert_eq!(j["spec"]["template"]["metadata"]["labels"], json!({"app": "pi"}));
    }

    #[test]
    fn a_daemon_set_counts_template_generations() {
        let ds = json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}});
        let ds = created(&DAEMON_SET, ds);
        assert_eq!(ds["metadata"]["annotations"][TEMPLATE_GENERATION], "1");

        let mut same = ds.clone();
        same["metadata"]["annotations"][TEMPLATE_GENERATION] = json!("7");
        same["spec"]["minReadySeconds"] = json!(5);
        (DAEMON_SET.prepare_update)(&mut same, &ds);
        assert_eq!(same["metadata"]["annotations"][TEMPLATE_GENERATION], "1");

        let mut changed = ds.clone();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("x");
        (DAEMON_SET.prepare_update)(&mut changed, &ds);
        assert_eq!(changed["metadata"]["annotations"][TEMPLATE_GENERATION], "2");
    }

    #[test]
    fn odd_json_is_left_alone() {
        for (strategy, object) in [
            (&JOB, json!({"spec": {"template": 3}})),
            (&JOB, json!({"spec": {"template": {"metadata": {"labels": "x"}}, "selector": []}})),
            (&JOB, json!("job")),
            (&DAEMON_SET, json!({"metadata": {"annotations": 1}})),
        ] {
            let mut o = object.clone();
            (strategy.prepare_create)(&mut o);
            let old = o.clone();
            (strategy.prepare_update)(&mut o, &old);
        }
    }

    #[test]
    fn events_are_selected_by_the_field_names_of_the_version_asked_for() {
        let stored = json!({"involvedObject": {"name": "web"}, "source": {}, "reportingComponent": "wasmcm.dev/rs"});
        let select = |s: &str, strategy: &Strategy| {
            let fields = strategy.parse_field_selector(s)?;
            Ok::<bool, String>(Filter { fields, ..Default::default() }.matches(&stored))
        };
        assert_eq!(select("regarding.name=web,reportingController=wasmcm.dev/rs", &EVENTS_V1_EVENT), Ok(true));
        assert_eq!(select("involvedObject.name=web,reportingComponent=wasmcm.dev/rs", &EVENT), Ok(true));
        // `source` reads the reporting controller when no source component was written.
        assert_eq!(select("source=wasmcm.dev/rs", &EVENT), Ok(true));
        let legacy = json!({"source": {"component": "replicaset-controller"}, "reportingComponent": "x"});
        let fields = EVENT.parse_field_selector("source=replicaset-controller").unwrap();
        assert!(Filter { fields, ..Default::default() }.matches(&legacy));
        assert_eq!(
            select("involvedObject.name=web", &EVENTS_V1_EVENT),
            Err("field label not supported: involvedObject.name".into())
        );
        assert_eq!(select("regarding.name=web", &EVENT), Err("field label not supported: regarding.name".into()));
    }

    #[test]
    fn field_selectors_are_checked_against_the_kind() {
        let reqs = POD.parse_field_selector("status.phase=Running,spec.nodeName!=n1").unwrap();
        let f = Filter { fields: reqs, ..Default::default() };
        assert!(f.matches(&json!({"spec": {"nodeName": "n2"}, "status": {"phase": "Running"}})));
        assert!(!f.matches(&json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})));
        assert!(DEPLOYMENT.parse_field_selector("metadata.name=x").is_ok());
        assert_eq!(
            DEPLOYMENT.parse_field_selector("spec.replicas=1").unwrap_err(),
            "field label not supported: spec.replicas"
        );
    }
}
