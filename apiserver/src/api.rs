//! What each API verb does to stored objects, as kube-apiserver's generic registry and the
//! built-in strategies do it: server-owned metadata, defaulting, validation, optimistic
//! concurrency, status/spec separation, `/scale`, graceful and finalizer-driven deletion.
//!
//! Plain functions over [`State`], called by the HTTP layer and by the cluster's own loops
//! (kubelet, garbage collector) alike. No HTTP here.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::State;
use crate::managed::{self, Writer};
use crate::patch::{self, PatchType};
use crate::registry::resources::{ResourceType, Target};
use crate::storage::change::Key;
use crate::{custom, table, validation};
use wasmcm_core::{ApiError, Cause, event, meta_mut, spec_part, str_at};

/// Who takes ownership of the fields a write changes (`metadata.managedFields`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ownership<'a> {
    /// The server's own loops (kubelet, garbage collector): no one takes the fields it changes.
    Unrecorded,
    /// A request: its manager takes the fields it sets, as an `Update`.
    Update(&'a Writer),
    /// The object carries its final managedFields already (a server-side apply).
    Applied,
}

impl Ownership<'_> {
    /// Records a change from `old` (`None`: created) to `new`.
    fn record(self, rt: &ResourceType, old: Option<&Value>, new: &mut Value) -> Result<(), ApiError> {
        match self {
            Ownership::Update(writer) => managed::track_update(old, new, rt.merge_type(), writer, rt.status),
            Ownership::Applied => Ok(()),
            Ownership::Unrecorded => {
                let kept = old.and_then(|o| o.pointer("/metadata/managedFields")).cloned();
                match kept {
                    Some(fields) => meta_mut(new).insert("managedFields".into(), fields),
                    None => meta_mut(new).remove("managedFields"),
                };
                Ok(())
            }
        }
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    /// "Background", "Foreground" or "Orphan".
    pub propagation_policy: Option<String>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    pub dry_run: bool,
}

fn check_kind(rt: &ResourceType, object: &mut Value) -> Result<(), ApiError> {
    if !object.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON or YAML object"));
    }
    let api_version = rt.api_version();
    match object.get("apiVersion").and_then(Value::as_str) {
        Some(v) if v != api_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({api_version})"
            )));
        }
        _ => object["apiVersion"] = json!(api_version),
    }
    match object.get("kind").and_then(Value::as_str) {
        Some(k) if k != rt.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                rt.kind
            )));
        }
        _ => object["kind"] = json!(rt.kind),
    }
    // A custom resource is pruned and defaulted as it is decoded.
    custom::decode(rt.schema.as_ref(), &rt.gvk(), object)
}

fn invalid(rt: &ResourceType, name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(&rt.group, &rt.kind, name, causes)
}

fn validate(rt: &ResourceType, object: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    let mut causes = validation::validate(rt.strategy.validate, object, old);
    causes.extend(custom::validate(rt.schema.as_ref(), object, old));
    if causes.is_empty() { Ok(()) } else { Err(invalid(rt, str_at(object, "/metadata/name"), causes)) }
}

/// NamespaceLifecycle admission: `object` of `rt` may be created in `namespace`.
fn namespace_usable(state: &State, rt: &ResourceType, namespace: &str, object: &Value) -> Result<(), ApiError> {
    let key = Key { id: "/namespaces".into(), namespace: String::new(), name: namespace.into() };
    match state.store.get(&key) {
        None => Err(ApiError::not_found("", "namespaces", namespace)),
        Some(ns) if ns.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) => {
            Err(ApiError::forbidden_on(
                &rt.group,
                &rt.resource,
                str_at(object, "/metadata/name"),
                &format!("unable to create new content in namespace {namespace} because it is being terminated"),
            ))
        }
        Some(_) => Ok(()),
    }
}

/// `stored` as `rt` serves it, or None if as stored: a custom resource is defaulted as it is
/// read, as upstream's storage decoder does it; an Event read through events.k8s.io/v1 is
/// converted from the core/v1 form both Event APIs share one storage in (see `to_stored`).
pub(crate) fn served(rt: &ResourceType, stored: &Value) -> Option<Value> {
    if events_v1(rt) {
        return Some(event::convert(stored, event::EVENTS));
    }
    custom::default_stored(rt.schema.as_ref(), stored)
}

/// `object`, written through `rt`, in the form it is stored in: kube-apiserver keeps one
/// storage for core/v1 and events.k8s.io/v1 Events (they are one internal type), so an Event
/// written through either is listed, watched and field-selected through both.
fn to_stored(rt: &ResourceType, object: Value) -> Value {
    if events_v1(rt) { event::convert(&object, event::CORE) } else { object }
}

/// Whether `rt` is events.k8s.io's Event. Asked for every object read (lists, watches), so by
/// its fields rather than a formatted apiVersion.
fn events_v1(rt: &ResourceType) -> bool {
    rt.group == "events.k8s.io" && rt.version == "v1" && rt.kind == "Event"
}

pub(crate) fn get(state: &State, t: &Target) -> Result<Arc<Value>, ApiError> {
    let stored = state.store.get(&t.key()).ok_or_else(|| t.not_found())?;
    Ok(served(&t.rt, &stored).map(Arc::new).unwrap_or(stored))
}

/// POST. `namespace` is the request's; the object's must match or be empty.
pub(crate) fn create(
    state: &State,
    rt: &ResourceType,
    namespace: &str,
    mut object: Value,
    dry_run: bool,
    owner: Ownership<'_>,
) -> Result<Arc<Value>, ApiError> {
    check_kind(rt, &mut object)?;
    if rt.namespaced {
        let ns = str_at(&object, "/metadata/namespace");
        if !ns.is_empty() && ns != namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        namespace_usable(state, rt, namespace, &object)?;
        meta_mut(&mut object).insert("namespace".into(), json!(namespace));
    } else {
        meta_mut(&mut object).remove("namespace");
    }
    let generate =
        str_at(&object, "/metadata/name").is_empty() && !str_at(&object, "/metadata/generateName").is_empty();
    if generate {
        let prefix = str_at(&object, "/metadata/generateName").to_string();
        meta_mut(&mut object).insert("name".into(), json!(format!("{prefix}{}", state.name_suffix())));
    }
    let now = state.now_rfc3339();
    let m = meta_mut(&mut object);
    m.insert("uid".into(), json!(state.new_uid()));
    m.insert("creationTimestamp".into(), json!(now));
    for server_owned in ["deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"] {
        m.remove(server_owned);
    }
    if rt.tracks_generation() {
        m.insert("generation".into(), json!(1));
    }
    // Status is not settable on create; strategies start it empty (defaults may seed it).
    // A Node's is (upstream's node strategy keeps all fields on create).
    if rt.status
        && !rt.strategy.status_on_create
        && let Some(o) = object.as_object_mut()
    {
        o.remove("status");
    }
    rt.strategy.default(&mut object);
    owner.record(rt, None, &mut object)?;
    // After the writer's fields are recorded: upstream's field manager runs before the
    // registry strategy, so what the strategy writes belongs to no manager.
    (rt.strategy.prepare_create)(&mut object);
    validate(rt, &object, None)?;
    if let Some(begin) = rt.strategy.begin_create {
        let causes = begin(state, &mut object);
        if !causes.is_empty() {
            return Err(invalid(rt, str_at(&object, "/metadata/name"), causes));
        }
    }
    let name = str_at(&object, "/metadata/name").to_string();
    let target =
        Target { rt: rt.clone(), namespace: if rt.namespaced { namespace.into() } else { String::new() }, name };
    if dry_run {
        return Ok(Arc::new(object));
    }
    let created = state.store.create(target.key(), to_stored(rt, object), || {
        ApiError::already_exists(&rt.group, &rt.resource, &target.name)
    })?;
    if let Some(after) = rt.strategy.after_create {
        after(state, &created);
    }
    Ok(created)
}

fn check_rv(t: &Target, wanted: &str, current: &Value) -> Result<(), ApiError> {
    if !wanted.is_empty() && wanted != str_at(current, "/metadata/resourceVersion") {
        return Err(ApiError::stale(&t.rt.group, &t.rt.resource, &t.name));
    }
    Ok(())
}

/// The main resource's update rules, from a proposed new object and the stored one.
fn prepare_update(
    t: &Target,
    mut new: Value,
    current: &Value,
    owner: Ownership<'_>,
) -> Result<Option<Value>, ApiError> {
    check_kind(&t.rt, &mut new)?;
    let name = str_at(&new, "/metadata/name");
    if !name.is_empty() && name != t.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            t.name
        )));
    }
    check_rv(t, str_at(&new, "/metadata/resourceVersion"), current)?;
    let current_meta = current.get("metadata").cloned().unwrap_or(json!({}));
    let m = meta_mut(&mut new);
    m.insert("name".into(), json!(t.name));
    for owned in
        ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "namespace"]
    {
        match current_meta.get(owned) {
            Some(v) => m.insert(owned.into(), v.clone()),
            None => m.remove(owned),
        };
    }
    if t.rt.status {
        match current.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }
    (t.rt.strategy.begin_update)(&mut new, current);
    t.rt.strategy.default(&mut new);
    owner.record(&t.rt, Some(current), &mut new)?;
    (t.rt.strategy.prepare_update)(&mut new, current);
    validate(&t.rt, &new, Some(current))?;
    // A custom resource without a status subresource counts its status as content too.
    let content = |o: &Value| {
        let mut m = spec_part(o);
        if t.rt.schema.is_some() && !t.rt.status {
            m.insert("status".into(), o.get("status").cloned().unwrap_or(Value::Null));
        }
        m
    };
    if t.rt.tracks_generation() && content(&new) != content(current) {
        let generation = current_meta.get("generation").and_then(Value::as_i64).unwrap_or(0) + 1;
        meta_mut(&mut new).insert("generation".into(), json!(generation));
    }
    meta_mut(&mut new)
        .insert("resourceVersion".into(), current_meta.get("resourceVersion").cloned().unwrap_or(json!("")));
    // A no-op write stores nothing and spends no resourceVersion, as the real server.
    if new == *current {
        return Ok(None);
    }
    Ok(Some(new))
}

fn prepare_status_update(
    t: &Target,
    new: Value,
    current: &Value,
    owner: Ownership<'_>,
) -> Result<Option<Value>, ApiError> {
    check_rv(t, str_at(&new, "/metadata/resourceVersion"), current)?;
    let mut new = new;
    if t.rt.schema.is_some() {
        check_kind(&t.rt, &mut new)?;
    }
    let mut updated = current.clone();
    updated["status"] = new.get("status").cloned().unwrap_or(json!({}));
    if let Ownership::Applied = owner {
        match new.pointer("/metadata/managedFields") {
            Some(fields) => meta_mut(&mut updated).insert("managedFields".into(), fields.clone()),
            None => meta_mut(&mut updated).remove("managedFields"),
        };
    }
    if t.rt.strategy.status_takes_annotations {
        match new.pointer("/metadata/annotations") {
            Some(a) if a.as_object().is_some_and(|m| !m.is_empty()) => {
                meta_mut(&mut updated).insert("annotations".into(), a.clone());
            }
            _ => {
                meta_mut(&mut updated).remove("annotations");
            }
        }
    }
    // Decoding defaults the new status (counters Go always writes) before the field manager
    // sees it; the status strategy validates it against the stored object. Only for the
    // workload kinds whose status defaults are all decode defaults: a pod's phase and QoS
    // class are the pod registry's on create, not a status write's.
    if t.rt.strategy.defaults_status {
        t.rt.strategy.default(&mut updated);
    }
    (t.rt.strategy.prepare_status)(&mut updated, current);
    owner.record(&t.rt, Some(current), &mut updated)?;
    let mut causes = validation::validate_status(t.rt.strategy.validate_status, &updated, current);
    causes.extend(custom::validate_status(t.rt.schema.as_ref(), &updated, current));
    if !causes.is_empty() {
        return Err(invalid(&t.rt, &t.name, causes));
    }
    Ok(if updated == *current { None } else { Some(updated) })
}

pub(crate) fn update(
    state: &State,
    t: &Target,
    new: Value,
    dry_run: bool,
    owner: Ownership<'_>,
) -> Result<Arc<Value>, ApiError> {
    // Prepared again from the request's object if the stored one changes meanwhile.
    write(state, t, dry_run, |current| prepare_update(t, new.clone(), current, owner))
}

pub(crate) fn update_status(
    state: &State,
    t: &Target,
    new: Value,
    dry_run: bool,
    owner: Ownership<'_>,
) -> Result<Arc<Value>, ApiError> {
    write(state, t, dry_run, |current| prepare_status_update(t, new.clone(), current, owner))
}

/// A request's write of the object at `t`: `f` makes the new object of the stored one, outside
/// the store's lock (it decodes, patches, defaults and validates), again if the stored object
/// changed meanwhile (see `Store::guaranteed_update`).
fn write(
    state: &State,
    t: &Target,
    dry_run: bool,
    mut f: impl FnMut(&Value) -> Result<Option<Value>, ApiError>,
) -> Result<Arc<Value>, ApiError> {
    if dry_run {
        let current = get(state, t)?;
        return Ok(f(&current)?.map(Arc::new).unwrap_or(current));
    }
    let written = state.store.guaranteed_update(
        &t.key(),
        || t.not_found(),
        |stored| {
            let current = served(&t.rt, stored);
            Ok(f(current.as_ref().unwrap_or(stored))?.map(|new| to_stored(&t.rt, new)))
        },
    )?;
    if let Some(after) = t.rt.strategy.after_update {
        after(state, &written);
    }
    Ok(written)
}

/// Which part of an object a patch addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Main,
    Status,
    Scale,
}

pub(crate) fn patch(
    state: &State,
    t: &Target,
    part: Part,
    ty: PatchType,
    body: &[u8],
    dry_run: bool,
    owner: Ownership<'_>,
) -> Result<Arc<Value>, ApiError> {
    let apply = |doc: &Value, schema: Option<patch::Fields>, kind: &str| {
        patch::apply(ty, schema, kind, doc, body).map_err(ApiError::from)
    };
    let result = write(state, t, dry_run, |current| match part {
        Part::Main => {
            let patched = apply(current, t.rt.strategy.merge_schema, &t.rt.kind)?;
            prepare_update(t, patched, current, owner)
        }
        Part::Status => {
            let patched = apply(current, t.rt.strategy.merge_schema, &t.rt.kind)?;
            prepare_status_update(t, patched, current, owner)
        }
        Part::Scale => {
            let scale = scale_of_type(&t.rt, current);
            let patched = apply(&scale, Some(patch::METADATA_ONLY), "Scale")?;
            apply_scale(t, patched, current, owner)
        }
    })?;
    Ok(if part == Part::Scale { Arc::new(scale_of_type(&t.rt, &result)) } else { result })
}

/// A server-side apply (`application/apply-patch+yaml`) of `config` by `writer`: merged into
/// the object by its schema, or creating it when there is none (`true`: created).
pub(crate) fn apply(
    state: &State,
    t: &Target,
    part: Part,
    mut config: Value,
    dry_run: bool,
    writer: &Writer,
    force: bool,
) -> Result<(Arc<Value>, bool), ApiError> {
    if part != Part::Scale {
        custom::check_apply_fields(t.rt.schema.as_ref(), &t.rt.gvk(), &config)?;
    }
    check_kind(&t.rt, &mut config)?;
    // kube-apiserver checks the name of the object the apply made (its checkName): a
    // configuration without one applies to the object of the URL, and cannot create one.
    let name = str_at(&config, "/metadata/name").to_string();
    let mismatch = |name: &str| {
        ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            t.name
        ))
    };
    if !name.is_empty() && name != t.name {
        return Err(mismatch(&name));
    }
    if part == Part::Scale {
        return Err(ApiError::unsupported_media_type("server-side apply of the scale subresource is not supported"));
    }
    let ty = t.rt.merge_type();
    if part == Part::Main && state.store.get(&t.key()).is_none() {
        if name.is_empty() {
            return Err(mismatch(""));
        }
        let object = managed::apply(None, &config, ty, writer, force, t.rt.status)?;
        match create(state, &t.rt, &t.namespace, object, dry_run, Ownership::Applied) {
            Ok(created) => return Ok((created, true)),
            // Created meanwhile: apply to it.
            Err(e) if e.reason == "AlreadyExists" => {}
            Err(e) => return Err(e),
        }
    }
    let written = write(state, t, dry_run, |current| {
        let applied = managed::apply(Some(current), &config, ty, writer, force, t.rt.status)?;
        match part {
            Part::Status => prepare_status_update(t, applied, current, Ownership::Applied),
            _ => prepare_update(t, applied, current, Ownership::Applied),
        }
    })?;
    Ok((written, false))
}

/// The autoscaling/v1 Scale of an object of this type: a custom resource's at its CRD's paths.
pub(crate) fn scale_of_type(rt: &ResourceType, object: &Value) -> Value {
    custom::scale_of(rt.schema.as_ref(), object).unwrap_or_else(|| scale_of(object))
}

/// The autoscaling/v1 Scale of a Deployment, ReplicaSet, StatefulSet or ReplicationController,
/// with the selector as `labels.Selector.String()` prints it.
pub(crate) fn scale_of(object: &Value) -> Value {
    let selector = object.pointer("/spec/selector");
    let selector = if str_at(object, "/kind") == "ReplicationController" {
        // A plain label map (labels.SelectorFromSet).
        table::label_set_string(selector)
    } else {
        table::selector_string(selector).unwrap_or_default()
    };
    let mut scale_meta = json!({});
    for f in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = object.pointer(&format!("/metadata/{f}")) {
            scale_meta[f] = v.clone();
        }
    }
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": scale_meta,
        "spec": {"replicas": object.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0)},
        "status": {"replicas": object.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0), "selector": selector},
    })
}

fn apply_scale(t: &Target, scale: Value, current: &Value, owner: Ownership<'_>) -> Result<Option<Value>, ApiError> {
    check_rv(t, str_at(&scale, "/metadata/resourceVersion"), current)?;
    let replicas = scale.pointer("/spec/replicas").and_then(Value::as_i64).ok_or_else(|| {
        invalid(
            &t.rt,
            &t.name,
            vec![Cause {
                reason: "FieldValueRequired".into(),
                field: "spec.replicas".into(),
                message: "Required value".into(),
            }],
        )
    })?;
    if replicas < 0 {
        return Err(invalid(
            &t.rt,
            &t.name,
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                field: "spec.replicas".into(),
                message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            }],
        ));
    }
    let mut new = current.clone();
    if !custom::set_replicas(t.rt.schema.as_ref(), &mut new, replicas) {
        new["spec"]["replicas"] = json!(replicas);
    }
    prepare_update(t, new, current, owner)
}

pub(crate) fn update_scale(
    state: &State,
    t: &Target,
    scale: Value,
    dry_run: bool,
    owner: Ownership<'_>,
) -> Result<Arc<Value>, ApiError> {
    let result = write(state, t, dry_run, |current| apply_scale(t, scale.clone(), current, owner))?;
    Ok(Arc::new(scale_of_type(&t.rt, &result)))
}

/// The outcome of a DELETE: the object is gone, or it is terminating (graceful pod deletion,
/// finalizers, namespace content cleanup) and this is its current state.
pub(crate) enum Deleted {
    Gone(Arc<Value>),
    Pending(Arc<Value>),
}

/// The `Warning` a delete answers with: the Job registry's, when its pods are kept by default.
pub(crate) fn delete_warning(rt: &ResourceType, opts: &DeleteOptions) -> Option<&'static str> {
    (opts.propagation_policy.is_none() && rt.strategy.orphans_by_default).then_some(
        "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove \
         them or set propagationPolicy=Orphan to suppress this warning",
    )
}

/// A delete's preconditions (`Preconditions.Check`): the uid and resourceVersion it names.
pub(crate) fn preconditions(t: &Target, opts: &DeleteOptions, current: &Value) -> Result<(), ApiError> {
    if let Some(uid) = &opts.precondition_uid
        && uid != str_at(current, "/metadata/uid")
    {
        let why = format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            str_at(current, "/metadata/uid")
        );
        return Err(ApiError::conflict(&t.rt.group, &t.rt.resource, &t.name, &why));
    }
    if let Some(rv) = &opts.precondition_rv
        && rv != str_at(current, "/metadata/resourceVersion")
    {
        let why = format!(
            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
            str_at(current, "/metadata/resourceVersion")
        );
        return Err(ApiError::conflict(&t.rt.group, &t.rt.resource, &t.name, &why));
    }
    Ok(())
}

pub(crate) fn delete(state: &State, t: &Target, opts: &DeleteOptions) -> Result<Deleted, ApiError> {
    let current = get(state, t)?;
    let check = |current: &Value| preconditions(t, opts, current);
    check(&current)?;
    let strategy = t.rt.strategy;
    if let Some(why) = (strategy.undeletable)(&t.name) {
        return Err(ApiError::forbidden_on(&t.rt.group, &t.rt.resource, &t.name, why));
    }
    let deleting = current.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null());
    let grace = strategy.grace_period.map_or(0, |grace| grace(&current, opts.grace_period_seconds));
    let extra_finalizer = match opts.propagation_policy.as_deref() {
        Some("Foreground") => Some("foregroundDeletion"),
        Some("Orphan") => Some("orphan"),
        None if t.rt.strategy.orphans_by_default => Some("orphan"),
        _ => None,
    };
    let has_finalizers =
        current.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
    let graceful = grace > 0 || has_finalizers || extra_finalizer.is_some() || strategy.finalized_on_delete.is_some();
    if opts.dry_run {
        return Ok(if graceful { Deleted::Pending(current) } else { Deleted::Gone(current) });
    }
    if deleting {
        // Already terminating: a shorter grace period (e.g. the kubelet's final 0) may still apply.
        let current_grace =
            current.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0);
        if strategy.grace_period.is_some() && grace < current_grace && !has_finalizers {
            if grace == 0 {
                return state.store.delete(&t.key(), || t.not_found(), check).map(Deleted::Gone);
            }
            let updated = state.store.update(
                &t.key(),
                || t.not_found(),
                |cur| {
                    check(cur)?;
                    let mut v = cur.clone();
                    let m = meta_mut(&mut v);
                    m.insert("deletionGracePeriodSeconds".into(), json!(grace));
                    m.insert("deletionTimestamp".into(), json!(after_seconds(state, grace)));
                    Ok(Some(v))
                },
            )?;
            return Ok(Deleted::Pending(updated));
        }
        return Ok(Deleted::Pending(current));
    }
    if !graceful {
        return state.store.delete(&t.key(), || t.not_found(), check).map(Deleted::Gone).inspect(|_| {
            if let Some(after) = strategy.after_delete {
                after(state, &current);
            }
        });
    }
    let updated = state.store.update(
        &t.key(),
        || t.not_found(),
        |cur| {
            check(cur)?;
            let mut v = cur.clone();
            if let Some(finalized) = strategy.finalized_on_delete {
                finalized(&mut v);
            }
            let m = meta_mut(&mut v);
            m.insert("deletionTimestamp".into(), json!(after_seconds(state, grace)));
            m.insert("deletionGracePeriodSeconds".into(), json!(grace));
            if let Some(f) = extra_finalizer {
                let finalizers = m.entry("finalizers").or_insert_with(|| json!([]));
                if let Some(list) = finalizers.as_array_mut()
                    && !list.iter().any(|x| x == f)
                {
                    list.push(json!(f));
                }
            }
            Ok(Some(v))
        },
    )?;
    // Gone only if this update finished the deletion: a garbage collector that removes the object
    // a moment later (a foreground deletion with no dependents) does not change the answer,
    // which upstream's registry gives from the update it made.
    Ok(if crate::storage::store::deletion_complete(&updated) {
        Deleted::Gone(updated)
    } else {
        Deleted::Pending(updated)
    })
}

fn after_seconds(state: &State, seconds: i64) -> String {
    let at = state.now().as_second() + seconds;
    jiff::Timestamp::from_second(at).map(|t| t.to_string()).unwrap_or_default()
}
