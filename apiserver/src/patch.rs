//! Applies PATCH request bodies the way kube-apiserver does: RFC 6902 JSON patch, RFC 7386 merge patch, and
//! Kubernetes strategic merge patch. The strategic half is a port of the apply side of
//! k8s.io/apimachinery/pkg/util/strategicpatch, driven by a table of the `patchStrategy`/`patchMergeKey` struct
//! tags of the built-in kinds this server serves (upstream reads them from the Go types by reflection).
//! JSON and merge patches are the `json-patch` crate's; no Rust crate implements strategic merge patch (kube-rs only
//! sends it), so that part is ported.

use std::collections::{HashMap, HashSet};

use json_patch::{PatchErrorKind, PatchOperation};
use serde_json::{Map, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchType {
    /// From the request Content-Type (parameters like ";charset=utf-8" ignored):
    /// application/json-patch+json, application/merge-patch+json,
    /// application/strategic-merge-patch+json, application/apply-patch+yaml (and +cbor).
    pub(crate) fn from_content_type(content_type: &str) -> Option<PatchType> {
        let media_type = content_type.split_once(';').map_or(content_type, |(media_type, _)| media_type);
        // Media types compare case-insensitively (RFC 9110 §8.3.1), so "Application/JSON-Patch+JSON" is valid.
        match media_type.trim().to_ascii_lowercase().as_str() {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Some(PatchType::Apply),
            _ => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum PatchError {
    /// The patch document is malformed or cannot be applied (the server answers 400 BadRequest, or 422 for a
    /// failed JSON-patch `test`): message as the real server words it where practical.
    #[error("{0}")]
    BadRequest(String),
    /// The server answers 415 UnsupportedMediaType (e.g. strategic merge on a custom resource).
    #[error("{0}")]
    Unsupported(String),
}

impl From<PatchError> for wasmcm_core::ApiError {
    fn from(e: PatchError) -> Self {
        match e {
            PatchError::BadRequest(m) => Self::bad_request(m),
            PatchError::Unsupported(m) => Self::unsupported_media_type(m),
        }
    }
}

/// Applies `patch` (raw request body bytes, JSON) of `patch_type` to `original` (the stored object, JSON) of the
/// given apiVersion/kind. Returns the patched object. Must never panic on any input.
pub(crate) fn apply(
    patch_type: PatchType,
    schema: Option<Fields>,
    kind: &str,
    original: &Value,
    patch: &[u8],
) -> Result<Value, PatchError> {
    let patched = match patch_type {
        PatchType::Json => json_patch(original, patch)?,
        PatchType::Merge => merge_patch(original, patch)?,
        PatchType::Strategic => {
            // Custom resources have no Go struct to carry patch strategies, so the real server refuses them (415).
            let schema = schema.ok_or_else(|| {
                PatchError::Unsupported(format!(
                    "strategic merge patch is not supported for {kind}; use --type merge or --type json"
                ))
            })?;
            strategic_merge_patch(original, patch, schema)?
        }
        // Merged by the schema with field ownership, not patched: `managed::apply`.
        PatchType::Apply => return Err(PatchError::BadRequest("an apply configuration is not a patch".into())),
    };
    keep_type_meta(original, patched)
}

/// kube-apiserver refuses larger JSON patches (with 413) to bound the work one request can cause.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

fn json_patch(original: &Value, body: &[u8]) -> Result<Value, PatchError> {
    let operations = match parse_body(body)? {
        // Go decodes `null` into a nil operation list, so the real server applies it as a no-op.
        Value::Null => Vec::new(),
        operations @ Value::Array(_) => {
            serde_json::from_value::<json_patch::Patch>(operations)
                .map_err(|e| bad(format!("invalid JSON patch: {e}")))?
                .0
        }
        other => {
            return Err(bad(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                json_kind(&other)
            )));
        }
    };
    if operations.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(bad(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            operations.len()
        )));
    }
    let mut document = original.clone();
    // The copy is dropped on failure, so `json_patch::patch`'s undo journal would only add a panic path.
    json_patch::patch_unsafe(&mut document, &operations).map_err(|e| json_patch_error(&operations, &e))?;
    Ok(document)
}

/// Words failures like evanphx/json-patch, which kube-apiserver uses, so clients see familiar messages.
fn json_patch_error(operations: &[PatchOperation], error: &json_patch::PatchError) -> PatchError {
    let path = &error.path;
    let (name, from) = match operations.get(error.operation) {
        Some(PatchOperation::Add(_)) => ("add", None),
        Some(PatchOperation::Remove(_)) => ("remove", None),
        Some(PatchOperation::Replace(_)) => ("replace", None),
        Some(PatchOperation::Move(op)) => ("move", Some(&op.from)),
        Some(PatchOperation::Copy(op)) => ("copy", Some(&op.from)),
        Some(PatchOperation::Test(_)) | None => ("test", None),
    };
    bad(match (&error.kind, from) {
        (PatchErrorKind::TestFailed, _) => format!("testing value {path} failed: test failed"),
        (PatchErrorKind::InvalidFromPointer, Some(from)) => {
            format!("{name} operation does not apply: doc is missing from path: \"{from}\": missing value")
        }
        (PatchErrorKind::InvalidPointer, _) => {
            format!("{name} operation does not apply: doc is missing path: \"{path}\": missing value")
        }
        _ => error.to_string(),
    })
}

fn merge_patch(original: &Value, body: &[u8]) -> Result<Value, PatchError> {
    let patch = parse_body(body)?;
    // RFC 7386 lets a non-object patch replace the whole document, which can never yield a valid object.
    if !patch.is_object() {
        return Err(bad("Invalid JSON Patch: a merge patch must be a JSON object"));
    }
    let mut document = original.clone();
    json_patch::merge(&mut document, &patch);
    Ok(document)
}

/// The server validates apiVersion/kind on its own; a patch that drops them must not make the object
/// unidentifiable, while one that changes them is left for that validation to reject.
fn keep_type_meta(original: &Value, patched: Value) -> Result<Value, PatchError> {
    let Value::Object(mut object) = patched else {
        return Err(bad("the patched document is not a JSON object"));
    };
    for field in ["apiVersion", "kind"] {
        if object.get(field).is_none_or(Value::is_null)
            && let Some(value) = original.get(field)
        {
            object.insert(field.to_owned(), value.clone());
        }
    }
    Ok(Value::Object(object))
}

fn parse_body(body: &[u8]) -> Result<Value, PatchError> {
    serde_json::from_slice(body).map_err(|e| bad(format!("invalid JSON in patch body: {e}")))
}

fn bad(message: impl Into<String>) -> PatchError {
    PatchError::BadRequest(message.into())
}

// ---------------------------------------------------------------------------------------------------------------
// Strategic merge patch: schema
// ---------------------------------------------------------------------------------------------------------------

/// How strategic merge treats one field, from its Go struct tags. A field missing from its table has no patch
/// strategy: objects merge key by key and lists are replaced whole, which is also what upstream does for the
/// untagged fields of these types.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Field {
    /// A struct-typed field whose own fields carry tags.
    Object(Fields),
    /// `patchStrategy:"merge"`: lists of objects matched by the merge key, or lists of scalars (no key) merged
    /// as a set. `retainKeys` strategies are not recorded: on apply upstream honours `$retainKeys` wherever it
    /// appears, so the tag only matters to clients computing patches.
    MergeList(Option<&'static str>, Fields),
    /// `patchStrategy:"replace"`: the patch's value replaces the field whole.
    Replace,
}

/// A kind's patch strategies by field (its `Strategy` names them).
pub(crate) type Fields = &'static [(&'static str, Field)];

const NO_FIELDS: Fields = &[];
const SET: Field = Field::MergeList(None, NO_FIELDS);

const fn keyed(key: &'static str) -> Field {
    Field::MergeList(Some(key), NO_FIELDS)
}

// k8s.io/apimachinery/pkg/apis/meta/v1 ObjectMeta.
const OBJECT_META: Fields = &[("finalizers", SET), ("ownerReferences", keyed("uid"))];
const METADATA: (&str, Field) = ("metadata", Field::Object(OBJECT_META));

// k8s.io/api/core/v1 Container and EphemeralContainerCommon (same tags; resizePolicy and the rest are atomic).
const CONTAINER: Fields = &[
    ("env", keyed("name")),
    ("ports", keyed("containerPort")),
    ("volumeDevices", keyed("devicePath")),
    ("volumeMounts", keyed("mountPath")),
];

const CONTAINERS: Field = Field::MergeList(Some("name"), CONTAINER);

const POD_SPEC: Fields = &[
    ("containers", CONTAINERS),
    ("ephemeralContainers", CONTAINERS),
    ("hostAliases", keyed("ip")),
    ("imagePullSecrets", keyed("name")),
    ("initContainers", CONTAINERS),
    ("resourceClaims", keyed("name")),
    ("schedulingGates", keyed("name")),
    ("topologySpreadConstraints", keyed("topologyKey")),
    ("volumes", keyed("name")),
];

const POD_STATUS: Fields = &[
    ("conditions", keyed("type")),
    ("hostIPs", keyed("ip")),
    ("podIPs", keyed("ip")),
    ("resourceClaimStatuses", keyed("name")),
];

const CONDITIONS_STATUS: Fields = &[("conditions", keyed("type"))];

const POD_TEMPLATE_SPEC: Fields = &[METADATA, ("spec", Field::Object(POD_SPEC))];

pub(crate) const POD: Fields = &[METADATA, ("spec", Field::Object(POD_SPEC)), ("status", Field::Object(POD_STATUS))];

pub(crate) const NODE: Fields = &[
    METADATA,
    ("spec", Field::Object(&[("podCIDRs", SET)])),
    ("status", Field::Object(&[("addresses", keyed("type")), ("conditions", keyed("type"))])),
];

pub(crate) const NAMESPACE: Fields = &[METADATA, ("status", Field::Object(CONDITIONS_STATUS))];

pub(crate) const SERVICE_ACCOUNT: Fields = &[METADATA, ("secrets", keyed("name"))];

// apps/v1 Deployment, ReplicaSet, DaemonSet and StatefulSet, batch/v1 Job and v1 ReplicationController share
// every tagged path: a pod template and status conditions merged by type (a StatefulSet's volumeClaimTemplates
// and a Job's podFailurePolicy rules are untagged, hence replaced).
pub(crate) const WORKLOAD: Fields = &[
    METADATA,
    ("spec", Field::Object(&[("template", Field::Object(POD_TEMPLATE_SPEC))])),
    ("status", Field::Object(CONDITIONS_STATUS)),
];

// batch/v1 CronJob: the job template's metadata and pod template; status.active is atomic.
pub(crate) const CRON_JOB: Fields = &[
    METADATA,
    (
        "spec",
        Field::Object(&[(
            "jobTemplate",
            Field::Object(&[METADATA, ("spec", Field::Object(&[("template", Field::Object(POD_TEMPLATE_SPEC))]))]),
        )]),
    ),
];

// k8s.io/api/core/v1 ServiceSpec ports (merge key port) and ServiceStatus conditions.
pub(crate) const SERVICE: Fields =
    &[METADATA, ("spec", Field::Object(&[("ports", keyed("port"))])), ("status", Field::Object(CONDITIONS_STATUS))];

// k8s.io/api/policy/v1: the selector is replaced whole, so kubectl apply always sends it.
pub(crate) const POD_DISRUPTION_BUDGET: Fields =
    &[METADATA, ("spec", Field::Object(&[("selector", Field::Replace)])), ("status", Field::Object(CONDITIONS_STATUS))];

// Kinds with no tagged field outside ObjectMeta (CRD conditions and versions are untagged, hence atomic;
// Endpoints' subsets and an EndpointSlice's endpoints and ports are atomic lists), and autoscaling/v1 Scale.
pub(crate) const METADATA_ONLY: Fields = &[METADATA];

fn lookup(fields: Fields, name: &str) -> Option<Field> {
    fields.iter().find(|(field, _)| *field == name).map(|(_, field)| *field)
}

fn object_fields(field: Option<Field>) -> Fields {
    match field {
        Some(Field::Object(fields)) => fields,
        _ => NO_FIELDS,
    }
}

fn merge_key(field: Option<Field>) -> Option<&'static str> {
    match field {
        Some(Field::MergeList(key, _)) => key,
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Strategic merge patch: algorithm (upstream names in the doc comments, for cross-reading)
// ---------------------------------------------------------------------------------------------------------------

const DIRECTIVE: &str = "$patch";
const DELETE: &str = "delete";
const REPLACE: &str = "replace";
const MERGE: &str = "merge";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

const BAD_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
const BAD_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
const BAD_SET_ELEMENT_ORDER: &str = "invalid patch format of setElementOrder list";

fn strategic_merge_patch(original: &Value, body: &[u8], schema: Fields) -> Result<Value, PatchError> {
    let patch = match parse_body(body)? {
        Value::Object(patch) => patch,
        // Go unmarshals `null` into an empty map: a no-op patch.
        Value::Null => Map::new(),
        other => {
            return Err(bad(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(&other)
            )));
        }
    };
    let Value::Object(original) = original else {
        return Err(bad("invalid JSON document"));
    };
    merge_map(original.clone(), patch, schema).map(Value::Object)
}

/// `mergeMap` with the server-side options (MergeParallelList and IgnoreUnmatchedNulls both on).
fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    fields: Fields,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        match directive.as_str() {
            Some(REPLACE) => {}
            // Upstream leaves an empty map in place rather than removing the key.
            Some(DELETE) => return Ok(Map::new()),
            // `merge` included: the API conventions call it the default, yet upstream's mergeMap rejects it.
            _ => return Err(unknown_patch_type(directive, &Value::Object(patch.clone()))),
        }
        patch.remove(DIRECTIVE);
        return Ok(sanitize_map(patch));
    }
    apply_retain_keys(&mut original, &mut patch)?;
    apply_set_element_order(&mut original, &mut patch, fields)?;
    let mut deletions = Vec::new();
    for (key, value) in patch {
        if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            deletions.push((key, value));
            continue;
        }
        if value.is_null() {
            original.remove(&key);
            continue;
        }
        let field = lookup(fields, &key);
        let merged = match (original.remove(&key), value) {
            (_, value) if matches!(field, Some(Field::Replace)) => sanitize(value),
            (Some(Value::Object(current)), Value::Object(value)) => {
                Value::Object(merge_map(current, value, object_fields(field))?)
            }
            (Some(Value::Array(current)), Value::Array(value)) => Value::Array(merge_list(current, value, field)?),
            (_, value) => sanitize(value),
        };
        original.insert(key, merged);
    }
    // Upstream interleaves these with the lists they name in Go's random map order; going last makes a value
    // that a patch both adds and deletes reliably deleted.
    for (key, value) in deletions {
        let name = directive_target(&key, DELETE_FROM_PRIMITIVE_LIST, BAD_PRIMITIVE_LIST)?;
        let Value::Array(doomed) = value else { return Err(bad(BAD_PRIMITIVE_LIST)) };
        // Deliberately narrower than upstream, which on a list that is missing (or untagged) stores the deletion
        // list itself as the field's value.
        if let Some(Value::Array(list)) = original.get_mut(name) {
            let doomed: HashSet<String> = doomed.iter().map(Value::to_string).collect();
            list.retain(|item| !doomed.contains(&item.to_string()));
        }
    }
    Ok(original)
}

/// `applyRetainKeysDirective`: keys of the original map not listed are cleared before merging, and a patch that
/// sets an unlisted key contradicts itself.
fn apply_retain_keys(original: &mut Map<String, Value>, patch: &mut Map<String, Value>) -> Result<(), PatchError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else { return Ok(()) };
    let Value::Array(retain) = retain else { return Err(bad(BAD_RETAIN_KEYS)) };
    let retain: HashSet<&str> = retain.iter().filter_map(Value::as_str).collect();
    let retained = |key: &str| retain.contains(key);
    let contradicts = patch.iter().any(|(key, value)| {
        !value.is_null()
            && !key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            && !key.starts_with(SET_ELEMENT_ORDER)
            && !retained(key)
    });
    if contradicts {
        return Err(bad(BAD_RETAIN_KEYS));
    }
    original.retain(|key, _| retained(key));
    Ok(())
}

/// `mergePatchIntoOriginal`: each `$setElementOrder/<field>` merges its list (if the patch has one) and then
/// imposes the given order; the list is taken out of the patch so the main loop does not merge it again.
fn apply_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    fields: Fields,
) -> Result<(), PatchError> {
    let directives: Vec<String> = patch.keys().filter(|key| key.starts_with(SET_ELEMENT_ORDER)).cloned().collect();
    for directive in directives {
        let Some(order) = patch.remove(&directive) else { continue };
        let Value::Array(order) = order else { return Err(expected_list(&order)) };
        let name = directive_target(&directive, SET_ELEMENT_ORDER, BAD_SET_ELEMENT_ORDER)?;
        let current = match original.remove(name) {
            None | Some(Value::Null) => None,
            Some(Value::Array(list)) => Some(list),
            Some(other) => return Err(expected_list(&other)),
        };
        let incoming = match patch.remove(name) {
            None => None,
            Some(Value::Array(list)) => Some(list),
            Some(other) => return Err(expected_list(&other)),
        };
        let field = lookup(fields, name);
        let key = merge_key(field);
        check_order(incoming.as_deref().unwrap_or_default(), &order, key)?;
        let server_order = current.clone().unwrap_or_default();
        let merged = match (current, incoming) {
            (None, None) => continue,
            (Some(current), None) => current,
            // Upstream takes a list new to the object verbatim; merging it into nothing gives the same items
            // while still resolving its directives.
            (current, Some(incoming)) => merge_list(current.unwrap_or_default(), incoming, field)?,
        };
        original.insert(name.to_owned(), Value::Array(reorder(merged, &order, &server_order, key)?));
    }
    Ok(())
}

/// `validatePatchWithSetOrderList`: the patch list's items (deletions aside) must appear in the order list, in
/// the same relative order.
fn check_order(incoming: &[Value], order: &[Value], key: Option<&str>) -> Result<(), PatchError> {
    if incoming.is_empty() || order.is_empty() {
        return Ok(());
    }
    let mut kept = Vec::with_capacity(incoming.len());
    for item in incoming {
        if key.is_some() {
            if !item.is_object() {
                return Err(expected_map(item));
            }
            if item.get(DIRECTIVE).and_then(Value::as_str) == Some(DELETE) {
                continue;
            }
        }
        kept.push(item);
    }
    let (mut at_patch, mut at_order) = (0, 0);
    while let (Some(item), Some(ordered)) = (kept.get(at_patch), order.get(at_order)) {
        if item.get(DIRECTIVE).is_some() {
            at_patch += 1;
            continue;
        }
        if identity(item, key)? == identity(ordered, key)? {
            at_patch += 1;
        }
        at_order += 1;
    }
    if at_patch < kept.len() {
        return Err(bad(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            Value::from(incoming.to_vec()),
            Value::from(order.to_vec())
        )));
    }
    Ok(())
}

/// `mergeSliceHandler`: only lists tagged `patchStrategy:"merge"` are merged; every other list is replaced.
fn merge_list(current: Vec<Value>, incoming: Vec<Value>, field: Option<Field>) -> Result<Vec<Value>, PatchError> {
    match field {
        Some(Field::MergeList(key, fields)) => merge_lists(current, incoming, key, fields),
        _ => Ok(incoming.into_iter().map(sanitize).collect()),
    }
}

/// `mergeSlice`: scalars are merged as a set; objects are matched by merge key and merged recursively, after the
/// list's `$patch` elements are applied.
fn merge_lists(
    current: Vec<Value>,
    incoming: Vec<Value>,
    key: Option<&str>,
    fields: Fields,
) -> Result<Vec<Value>, PatchError> {
    if current.is_empty() && incoming.is_empty() {
        return Ok(current);
    }
    if !elements_are_objects(&current, &incoming)? {
        let mut seen = HashSet::new();
        let merged = current.iter().chain(&incoming).filter(|item| seen.insert(item.to_string())).cloned().collect();
        return reorder(merged, &incoming, &current, key);
    }
    let Some(key) = key else { return Err(bad("cannot merge lists without merge key")) };
    let (server, incoming) = apply_list_directives(current, incoming, key)?;
    let mut merged = server.clone();
    // Upstream merges a patch item into the first item with its key, and later patch items with the same key
    // into that one (or into an earlier patch item).
    let mut slots = HashMap::new();
    for (at, existing) in merged.iter().enumerate() {
        if let Some(id) = existing.get(key) {
            slots.entry(id.to_string()).or_insert(at);
        }
    }
    for item in &incoming {
        let id = identity(item, Some(key))?.to_string();
        match slots.get(&id).and_then(|&at| merged.get_mut(at)) {
            Some(slot) => {
                *slot = match (std::mem::take(slot), item.clone()) {
                    (Value::Object(existing), Value::Object(item)) => Value::Object(merge_map(existing, item, fields)?),
                    (_, item) => sanitize(item),
                }
            }
            None => {
                slots.insert(id, merged.len());
                merged.push(sanitize(item.clone()));
            }
        }
    }
    reorder(merged, &incoming, &server, Some(key))
}

/// `mergeSliceWithSpecialElements`: `$patch` elements delete every item with their merge key, or make the rest
/// of the patch list replace the whole list.
fn apply_list_directives(
    mut server: Vec<Value>,
    incoming: Vec<Value>,
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::with_capacity(incoming.len());
    let mut doomed = HashSet::new();
    let mut replace = false;
    for item in incoming {
        let Some(directive) = item.get(DIRECTIVE) else {
            plain.push(item);
            continue;
        };
        match directive.as_str() {
            Some(DELETE) => {
                doomed.insert(identity(&item, Some(key))?.to_string());
            }
            // Other `$patch` elements are still pruned, so keep scanning.
            Some(REPLACE) => replace = true,
            Some(MERGE) => return Err(bad("merging lists cannot yet be specified in the patch")),
            _ => return Err(unknown_patch_type(directive, &item)),
        }
    }
    if replace {
        return Ok((plain.into_iter().map(sanitize).collect(), Vec::new()));
    }
    if !doomed.is_empty() {
        server.retain(|existing| existing.get(key).is_none_or(|id| !doomed.contains(&id.to_string())));
    }
    Ok((server, plain))
}

/// `normalizeElementOrder`: items named by the patch (or by `$setElementOrder`) take that order, the others keep
/// the server's, and the two runs are interleaved so that a server-only item stays ahead of a patch item only
/// if it was ahead of it on the server. So items new to the server come before the remaining server-only ones,
/// i.e. a plain patch adding a container or finalizer prepends it, exactly as upstream does.
fn reorder(
    merged: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Result<Vec<Value>, PatchError> {
    let (patch_positions, server_positions) = (positions(patch_order, key)?, positions(server_order, key)?);
    let mut named = Vec::new();
    let mut server_only = Vec::new();
    for item in merged {
        let id = identity(&item, key)?.to_string();
        let (patch_at, server_at) = (patch_positions.get(&id).copied(), server_positions.get(&id).copied());
        match patch_at {
            Some(patch_at) => named.push((patch_at, server_at, item)),
            None => server_only.push((server_at, item)),
        }
    }
    named.sort_by_key(|(patch_at, _, _)| *patch_at);
    server_only.sort_by_key(|(server_at, _)| server_at.unwrap_or(usize::MAX));
    let mut result = Vec::with_capacity(named.len() + server_only.len());
    let (mut named, mut server_only) = (named.into_iter().peekable(), server_only.into_iter().peekable());
    loop {
        let server_first = match (server_only.peek(), named.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((server_at, _)), Some((_, named_at, _))) => {
                matches!((server_at, named_at), (Some(server_at), Some(named_at)) if server_at < named_at)
            }
        };
        let next =
            if server_first { server_only.next().map(|(_, item)| item) } else { named.next().map(|(_, _, item)| item) };
        result.extend(next);
    }
    Ok(result)
}

/// What a list item is matched by: its merge key's value, or the item itself in a list without a merge key.
fn identity<'v>(item: &'v Value, key: Option<&str>) -> Result<&'v Value, PatchError> {
    let Some(key) = key else { return Ok(item) };
    match item {
        Value::Object(map) => {
            map.get(key).ok_or_else(|| bad(format!("map: {item} does not contain declared merge key: {key}")))
        }
        other => Err(expected_map(other)),
    }
}

/// The first position of each identity in `list`, which must all have one. Identities are hashed through their
/// JSON text (equal scalars print alike): upstream's linear lookups make merging quadratic in the list length,
/// which a request body should not be able to exploit.
fn positions(list: &[Value], key: Option<&str>) -> Result<HashMap<String, usize>, PatchError> {
    let mut positions = HashMap::with_capacity(list.len());
    for (at, item) in list.iter().enumerate() {
        positions.entry(identity(item, key)?.to_string()).or_insert(at);
    }
    Ok(positions)
}

/// `sliceElementType`: both lists together must hold one JSON type, and not lists.
fn elements_are_objects(current: &[Value], incoming: &[Value]) -> Result<bool, PatchError> {
    let mut kinds = current.iter().chain(incoming).map(json_kind);
    let Some(first) = kinds.next() else { return Ok(false) };
    if first == "array" {
        return Err(bad("lists of lists are not supported"));
    }
    if kinds.any(|kind| kind != first) {
        return Err(bad("list element types are not identical"));
    }
    Ok(first == "object")
}

/// `extractKey`: the field a `<prefix>/<field>` directive names.
fn directive_target<'k>(key: &'k str, prefix: &str, malformed: &str) -> Result<&'k str, PatchError> {
    match key.split_once('/') {
        Some((head, field)) if head == prefix => Ok(field),
        _ => Err(bad(malformed)),
    }
}

/// Patch content stored without being merged. Upstream copies it verbatim and relies on the typed decode that
/// follows to drop directive keys (unknown fields) and nulls; this server stores JSON, so drop them here.
fn sanitize(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(sanitize_map(map)),
        Value::Array(items) => Value::Array(items.into_iter().map(sanitize).collect()),
        scalar => scalar,
    }
}

fn sanitize_map(map: Map<String, Value>) -> Map<String, Value> {
    map.into_iter()
        .filter(|(key, value)| !value.is_null() && !is_directive(key))
        .map(|(key, value)| (key, sanitize(value)))
        .collect()
}

fn is_directive(key: &str) -> bool {
    key == DIRECTIVE
        || key == RETAIN_KEYS
        || key.starts_with(SET_ELEMENT_ORDER)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

fn unknown_patch_type(directive: &Value, map: &Value) -> PatchError {
    let directive = directive.as_str().map_or_else(|| directive.to_string(), str::to_owned);
    bad(format!("unknown patch type: {directive} in map: {map}"))
}

fn expected_list(actual: &Value) -> PatchError {
    bad(format!("expected a []interface {{}}, but received a {}", go_type(actual)))
}

fn expected_map(actual: &Value) -> PatchError {
    bad(format!("expected a map[string]interface {{}}, but received a {}", go_type(actual)))
}

/// The Go type name upstream's messages report for a decoded JSON value.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(number) if number.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A patch of `api_version` and `kind`, under its registered strategy's schema (a Scale's is
    /// the one `api` patches the scale subresource with).
    fn apply(
        patch_type: PatchType,
        api_version: &str,
        kind: &str,
        original: &Value,
        patch: &[u8],
    ) -> Result<Value, PatchError> {
        let schema = match (api_version, kind) {
            ("autoscaling/v1", "Scale") => Some(METADATA_ONLY),
            _ => crate::registry::resources::Registry::default()
                .by_kind(api_version, kind)
                .and_then(|t| t.strategy.merge_schema),
        };
        super::apply(patch_type, schema, kind, original, patch)
    }

    fn run(
        patch_type: PatchType,
        api_version: &str,
        kind: &str,
        original: &Value,
        patch: &Value,
    ) -> Result<Value, PatchError> {
        apply(patch_type, api_version, kind, original, patch.to_string().as_bytes())
    }

    fn strategic(api_version: &str, kind: &str, original: &Value, patch: Value) -> Result<Value, PatchError> {
        run(PatchType::Strategic, api_version, kind, original, &patch)
    }

    fn deployment_patch(original: &Value, patch: Value) -> Value {
        strategic("apps/v1", "Deployment", original, patch).unwrap()
    }

    fn pod_patch(original: &Value, patch: Value) -> Value {
        strategic("v1", "Pod", original, patch).unwrap()
    }

    fn bad_request(result: Result<Value, PatchError>) -> String {
        match result {
            Err(PatchError::BadRequest(message)) => message,
            other => panic!("expected BadRequest, got {other:?}"),
        }
    }

    fn template_spec(deployment: &Value) -> &Value {
        &deployment["spec"]["template"]["spec"]
    }

    fn keys_of<'v>(list: &'v Value, key: &str) -> Vec<&'v Value> {
        list.as_array().unwrap().iter().map(|item| &item[key]).collect()
    }

    fn assert_no_directives(value: &Value) {
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    assert!(!is_directive(key), "directive {key} left in output");
                    assert!(!value.is_null(), "null left under {key}");
                    assert_no_directives(value);
                }
            }
            Value::Array(items) => items.iter().for_each(assert_no_directives),
            _ => {}
        }
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "namespace": "default",
                "labels": {"app": "web", "tier": "front"},
                "annotations": {"note": "keep"},
                "finalizers": ["a.example/one", "b.example/two"],
                "ownerReferences": [{"apiVersion": "v1", "kind": "Thing", "name": "owner", "uid": "u1"}]
            },
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": "x:1",
                                "args": ["--a", "--b"],
                                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                                "ports": [
                                    {"containerPort": 80, "protocol": "TCP"},
                                    {"containerPort": 443, "protocol": "TCP"}
                                ],
                                "volumeMounts": [
                                    {"name": "data", "mountPath": "/data"},
                                    {"name": "cfg", "mountPath": "/etc/cfg", "readOnly": true}
                                ]
                            },
                            {"name": "sidecar", "image": "s:1"}
                        ],
                        "tolerations": [{"key": "k1", "operator": "Exists"}, {"key": "k2", "operator": "Exists"}],
                        "nodeSelector": {"disk": "ssd"},
                        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "cfg"}}]
                    }
                }
            },
            "status": {
                "replicas": 2,
                "conditions": [
                    {"type": "Available", "status": "True"},
                    {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}
                ]
            }
        })
    }

    #[test]
    fn patch_type_from_content_type() {
        assert_eq!(PatchType::from_content_type("application/json-patch+json"), Some(PatchType::Json));
        assert_eq!(PatchType::from_content_type("application/merge-patch+json; charset=utf-8"), Some(PatchType::Merge));
        assert_eq!(
            PatchType::from_content_type("application/strategic-merge-patch+json;charset=UTF-8"),
            Some(PatchType::Strategic)
        );
        assert_eq!(PatchType::from_content_type("application/apply-patch+yaml"), Some(PatchType::Apply));
        assert_eq!(PatchType::from_content_type(" Application/Merge-Patch+JSON "), Some(PatchType::Merge));
        assert_eq!(PatchType::from_content_type("application/json"), None);
        assert_eq!(PatchType::from_content_type(""), None);
    }

    #[test]
    fn json_patch_add_replace_remove_copy_move() {
        let config_map =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v", "old": "x"}});
        let patch = json!([
            {"op": "add", "path": "/metadata/labels", "value": {"a": "1"}},
            {"op": "replace", "path": "/data/k", "value": "w"},
            {"op": "remove", "path": "/data/old"},
            {"op": "test", "path": "/metadata/name", "value": "c"},
            {"op": "copy", "from": "/data/k", "path": "/data/copied"},
            {"op": "move", "from": "/data/copied", "path": "/data/moved"}
        ]);
        let patched = run(PatchType::Json, "v1", "ConfigMap", &config_map, &patch).unwrap();
        assert_eq!(
            patched,
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "c", "labels": {"a": "1"}},
                "data": {"k": "w", "moved": "w"}
            })
        );
    }

    #[test]
    fn json_patch_failures_are_bad_requests() {
        let config_map =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
        let json_patch = |patch: Value| run(PatchType::Json, "v1", "ConfigMap", &config_map, &patch);
        assert_eq!(
            bad_request(json_patch(json!([
                {"op": "replace", "path": "/data/k", "value": "changed"},
                {"op": "test", "path": "/metadata/name", "value": "other"}
            ]))),
            "testing value /metadata/name failed: test failed"
        );
        assert_eq!(
            bad_request(json_patch(json!([{"op": "remove", "path": "/data/missing"}]))),
            "remove operation does not apply: doc is missing path: \"/data/missing\": missing value"
        );
        assert!(
            bad_request(json_patch(json!([{"op": "replace", "path": "/spec/x", "value": 1}]))).starts_with("replace")
        );
        assert!(bad_request(json_patch(json!([{"op": "move", "from": "/nope", "path": "/x"}]))).contains("from path"));
        assert!(bad_request(json_patch(json!([{"op": "frobnicate", "path": "/x"}]))).starts_with("invalid JSON patch"));
        assert!(
            bad_request(json_patch(json!([{"op": "add", "path": "data", "value": 1}])))
                .starts_with("invalid JSON patch")
        );
        assert_eq!(
            bad_request(json_patch(json!({"op": "add", "path": "/x", "value": 1}))),
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        );
        let not_json = apply(PatchType::Json, "v1", "ConfigMap", &config_map, b"[{\"op\":");
        assert!(bad_request(not_json).starts_with("invalid JSON in patch body"));
        // Go decodes `null` as an empty operation list.
        assert_eq!(json_patch(Value::Null).unwrap(), config_map);
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let original = deployment();
        let patch = json!({
            "metadata": {"labels": {"tier": null, "new": "1"}},
            "spec": {"strategy": {"rollingUpdate": null}, "template": {"spec": {"containers": [{"name": "only"}]}}}
        });
        let patched = run(PatchType::Merge, "apps/v1", "Deployment", &original, &patch).unwrap();
        let mut expected = deployment();
        expected["metadata"]["labels"] = json!({"app": "web", "new": "1"});
        expected["spec"]["strategy"] = json!({"type": "RollingUpdate"});
        // Lists are replaced whole by a merge patch, whatever their strategic merge strategy.
        expected["spec"]["template"]["spec"]["containers"] = json!([{"name": "only"}]);
        assert_eq!(patched, expected);

        assert!(bad_request(run(PatchType::Merge, "apps/v1", "Deployment", &original, &json!([1]))).contains("object"));
        assert!(bad_request(apply(PatchType::Merge, "v1", "Pod", &original, b"{")).starts_with("invalid JSON"));
    }

    #[test]
    fn merge_patch_works_on_custom_resources() {
        let widget =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}});
        let patched =
            run(PatchType::Merge, "example.com/v1", "Widget", &widget, &json!({"spec": {"size": 2}})).unwrap();
        assert_eq!(patched["spec"], json!({"size": 2}));
    }

    #[test]
    fn strategic_merge_on_custom_or_unknown_kinds_is_unsupported() {
        let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
        match strategic("example.com/v1", "Widget", &widget, json!({"metadata": {"labels": {"a": "b"}}})) {
            Err(PatchError::Unsupported(message)) => assert_eq!(
                message,
                "strategic merge patch is not supported for Widget; use --type merge or --type json"
            ),
            other => panic!("expected Unsupported, got {other:?}"),
        }
        // A built-in kind at a version this server does not serve has no schema either.
        assert!(matches!(
            strategic("apps/v1beta1", "Deployment", &deployment(), json!({})),
            Err(PatchError::Unsupported(_))
        ));
    }

    #[test]
    fn strategic_malformed_bodies_are_bad_requests() {
        let original = deployment();
        let body = |bytes: &[u8]| apply(PatchType::Strategic, "apps/v1", "Deployment", &original, bytes);
        assert!(bad_request(body(b"not json")).starts_with("invalid JSON in patch body"));
        assert!(bad_request(body(b"")).starts_with("invalid JSON in patch body"));
        assert_eq!(
            bad_request(body(b"[{\"op\":\"add\"}]")),
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
        assert_eq!(
            bad_request(body(b"\"x\"")),
            "json: cannot unmarshal string into Go value of type map[string]interface {}"
        );
        assert_eq!(body(b"null").unwrap(), original);
        assert_eq!(body(b"{}").unwrap(), original);
    }

    #[test]
    fn kubectl_set_image_changes_only_that_container() {
        let patched = deployment_patch(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "x:2"}]}}}}),
        );
        let mut expected = deployment();
        expected["spec"]["template"]["spec"]["containers"][0]["image"] = json!("x:2");
        assert_eq!(patched, expected);
    }

    #[test]
    fn kubectl_rollout_restart_adds_template_annotation() {
        let patch = json!({"spec": {"template": {"metadata": {"annotations": {
            "kubectl.kubernetes.io/restartedAt": "2025-01-02T03:04:05Z"
        }}}}});
        let patched = deployment_patch(&deployment(), patch.clone());
        let mut expected = deployment();
        expected["spec"]["template"]["metadata"]["annotations"] =
            json!({"kubectl.kubernetes.io/restartedAt": "2025-01-02T03:04:05Z"});
        assert_eq!(patched, expected);
        // A second restart overwrites the timestamp and keeps everything else.
        let again = json!({"spec": {"template": {"metadata": {"annotations": {
            "kubectl.kubernetes.io/restartedAt": "2025-02-03T04:05:06Z"
        }}}}});
        let restarted = deployment_patch(&patched, again);
        assert_eq!(
            restarted["spec"]["template"]["metadata"],
            json!({"labels": {"app": "web"}, "annotations": {"kubectl.kubernetes.io/restartedAt": "2025-02-03T04:05:06Z"}})
        );
    }

    #[test]
    fn kubectl_label_and_annotate() {
        let labelled = deployment_patch(
            &deployment(),
            json!({"metadata": {"labels": {"tier": null, "env": "prod", "app": "web2"}, "annotations": {"owner": "me"}}}),
        );
        assert_eq!(labelled["metadata"]["labels"], json!({"app": "web2", "env": "prod"}));
        assert_eq!(labelled["metadata"]["annotations"], json!({"note": "keep", "owner": "me"}));
        let unannotated =
            deployment_patch(&labelled, json!({"metadata": {"annotations": {"note": null, "owner": null}}}));
        assert_eq!(unannotated["metadata"]["annotations"], json!({}));
        // Removing a label that is not there is a no-op, and a null never lands in the object.
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}});
        let patched =
            strategic("v1", "Namespace", &namespace, json!({"metadata": {"labels": {"gone": null}}})).unwrap();
        assert_eq!(patched, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns", "labels": {}}}));
    }

    #[test]
    fn containers_merge_by_name_keeping_server_order() {
        let patched = deployment_patch(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "sidecar", "image": "s:2"},
                {"name": "extra", "image": "e:1"}
            ]}}}}),
        );
        let containers = &template_spec(&patched)["containers"];
        assert_eq!(keys_of(containers, "name"), [&json!("app"), &json!("sidecar"), &json!("extra")]);
        assert_eq!(containers[0], template_spec(&deployment())["containers"][0]);
        assert_eq!(containers[1], json!({"name": "sidecar", "image": "s:2"}));
    }

    #[test]
    fn new_list_items_are_placed_before_server_only_items_like_upstream() {
        // kubernetes.io "Update API Objects in Place Using kubectl patch": the added container comes first.
        let patched = deployment_patch(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "patch-demo-ctr-2", "image": "redis"}]}}}}),
        );
        let names = keys_of(&template_spec(&patched)["containers"], "name");
        assert_eq!(names, [&json!("patch-demo-ctr-2"), &json!("app"), &json!("sidecar")]);
    }

    #[test]
    fn upstream_order_preservation_cases() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "1"}, {"name": "2", "image": "b"}, {"name": "3"}
        ]}});
        let patched = pod_patch(
            &pod,
            json!({"spec": {"containers": [
                {"name": "3", "image": "c"}, {"name": "1", "image": "a"}, {"name": "2", "workingDir": "x"}
            ]}}),
        );
        assert_eq!(
            patched["spec"]["containers"],
            json!([{"name": "3", "image": "c"}, {"name": "1", "image": "a"}, {"name": "2", "image": "b", "workingDir": "x"}])
        );
        let patched = pod_patch(
            &pod,
            json!({"spec": {"containers": [{"name": "3", "image": "c"}, {"name": "1", "image": "a"}]}}),
        );
        assert_eq!(
            patched["spec"]["containers"],
            json!([{"name": "2", "image": "b"}, {"name": "3", "image": "c"}, {"name": "1", "image": "a"}])
        );
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"podCIDRs": ["1", "2", "3"]}});
        let patched = strategic("v1", "Node", &node, json!({"spec": {"podCIDRs": ["3", "1"]}})).unwrap();
        assert_eq!(patched["spec"]["podCIDRs"], json!(["2", "3", "1"]));
        let patched = strategic("v1", "Node", &node, json!({"spec": {"podCIDRs": ["3", "1", "2"]}})).unwrap();
        assert_eq!(patched["spec"]["podCIDRs"], json!(["3", "1", "2"]));
    }

    #[test]
    fn env_ports_and_volume_mounts_merge_by_their_keys() {
        let patched = deployment_patch(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [{
                "name": "app",
                "env": [{"name": "B", "value": "two"}, {"name": "C", "value": "3"}],
                "ports": [{"containerPort": 443, "name": "https"}],
                "volumeMounts": [{"mountPath": "/etc/cfg", "readOnly": null, "subPath": "x"}]
            }]}}}}),
        );
        let app = &template_spec(&patched)["containers"][0];
        assert_eq!(
            app["env"],
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "two"}, {"name": "C", "value": "3"}])
        );
        assert_eq!(
            app["ports"],
            json!([{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP", "name": "https"}])
        );
        assert_eq!(
            app["volumeMounts"],
            json!([{"name": "data", "mountPath": "/data"}, {"name": "cfg", "mountPath": "/etc/cfg", "subPath": "x"}])
        );
        assert_eq!(app["args"], json!(["--a", "--b"]));
    }

    #[test]
    fn init_and_ephemeral_containers_volumes_and_pull_secrets_merge_by_name() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
            "initContainers": [{"name": "init", "image": "i:1", "env": [{"name": "X", "value": "1"}]}],
            "ephemeralContainers": [{"name": "debug", "image": "busybox"}],
            "imagePullSecrets": [{"name": "reg"}],
            "volumes": [{"name": "v", "emptyDir": {}}]
        }});
        let patched = pod_patch(
            &pod,
            json!({"spec": {
                "initContainers": [{"name": "init", "env": [{"name": "Y", "value": "2"}]}],
                "ephemeralContainers": [{"name": "debug", "stdin": true}],
                "imagePullSecrets": [{"name": "reg"}, {"name": "reg2"}],
                "volumes": [{"name": "w", "secret": {"secretName": "s"}}]
            }}),
        );
        assert_eq!(
            patched["spec"],
            json!({
                "initContainers": [{"name": "init", "image": "i:1", "env": [{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}]}],
                "ephemeralContainers": [{"name": "debug", "image": "busybox", "stdin": true}],
                "imagePullSecrets": [{"name": "reg"}, {"name": "reg2"}],
                "volumes": [{"name": "w", "secret": {"secretName": "s"}}, {"name": "v", "emptyDir": {}}]
            })
        );
    }

    #[test]
    fn lists_without_merge_strategy_are_replaced() {
        let patched = deployment_patch(
            &deployment(),
            json!({"spec": {"template": {"spec": {
                "tolerations": [{"key": "k3", "operator": "Exists"}],
                "containers": [{"name": "app", "args": ["--c"], "command": ["run"]}]
            }}}}),
        );
        let spec = template_spec(&patched);
        assert_eq!(spec["tolerations"], json!([{"key": "k3", "operator": "Exists"}]));
        assert_eq!(spec["containers"][0]["args"], json!(["--c"]));
        assert_eq!(spec["containers"][0]["command"], json!(["run"]));
        // Maps without a strategy merge key by key.
        let patched =
            deployment_patch(&deployment(), json!({"spec": {"template": {"spec": {"nodeSelector": {"zone": "a"}}}}}));
        assert_eq!(template_spec(&patched)["nodeSelector"], json!({"disk": "ssd", "zone": "a"}));
    }

    #[test]
    fn conditions_merge_by_type() {
        let patched = deployment_patch(
            &deployment(),
            json!({"status": {"replicas": 3, "conditions": [
                {"type": "Progressing", "status": "False"},
                {"type": "ReplicaFailure", "status": "True"}
            ]}}),
        );
        assert_eq!(
            patched["status"],
            json!({"replicas": 3, "conditions": [
                {"type": "Available", "status": "True"},
                {"type": "Progressing", "status": "False", "reason": "NewReplicaSetAvailable"},
                {"type": "ReplicaFailure", "status": "True"}
            ]})
        );

        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": {
            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}],
            "podIPs": [{"ip": "10.0.0.1"}],
            "containerStatuses": [{"name": "a", "ready": false}, {"name": "b", "ready": false}]
        }});
        let patched = pod_patch(
            &pod,
            json!({"status": {
                "$setElementOrder/conditions": [{"type": "PodScheduled"}, {"type": "Ready"}],
                "conditions": [{"type": "Ready", "status": "True"}],
                "podIPs": [{"ip": "fd00::1"}],
                "containerStatuses": [{"name": "a", "ready": true}]
            }}),
        );
        assert_eq!(
            patched["status"],
            json!({
                "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
                "podIPs": [{"ip": "fd00::1"}, {"ip": "10.0.0.1"}],
                "containerStatuses": [{"name": "a", "ready": true}]
            })
        );

        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {
            "conditions": [{"type": "Ready", "status": "False"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.2"}, {"type": "Hostname", "address": "n"}]
        }});
        let patched = strategic(
            "v1",
            "Node",
            &node,
            json!({"status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "addresses": [{"type": "Hostname", "address": "node-1"}]
            }}),
        )
        .unwrap();
        assert_eq!(patched["status"]["conditions"], json!([{"type": "Ready", "status": "True"}]));
        assert_eq!(
            patched["status"]["addresses"],
            json!([{"type": "InternalIP", "address": "10.0.0.2"}, {"type": "Hostname", "address": "node-1"}])
        );

        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}, "status": {
            "phase": "Terminating", "conditions": [{"type": "NamespaceDeletionContentFailure", "status": "False"}]
        }});
        let patched = strategic(
            "v1",
            "Namespace",
            &namespace,
            json!({"status": {"conditions": [{"type": "NamespaceDeletionContentFailure", "status": "True"}]}}),
        )
        .unwrap();
        assert_eq!(
            patched["status"],
            json!({"phase": "Terminating", "conditions": [{"type": "NamespaceDeletionContentFailure", "status": "True"}]})
        );
    }

    #[test]
    fn owner_references_merge_by_uid() {
        let patched = deployment_patch(
            &deployment(),
            json!({"metadata": {"ownerReferences": [
                {"uid": "u1", "controller": true},
                {"apiVersion": "v1", "kind": "Other", "name": "second", "uid": "u2"}
            ]}}),
        );
        assert_eq!(
            patched["metadata"]["ownerReferences"],
            json!([
                {"apiVersion": "v1", "kind": "Thing", "name": "owner", "uid": "u1", "controller": true},
                {"apiVersion": "v1", "kind": "Other", "name": "second", "uid": "u2"}
            ])
        );
        let orphaned =
            deployment_patch(&patched, json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "u1"}]}}));
        assert_eq!(keys_of(&orphaned["metadata"]["ownerReferences"], "uid"), [&json!("u2")]);
    }

    #[test]
    fn finalizers_merge_as_a_set_and_delete_from_primitive_list() {
        let original = deployment();
        let finalizers =
            |patch: Value| deployment_patch(&original, json!({"metadata": patch}))["metadata"]["finalizers"].clone();
        assert_eq!(
            finalizers(json!({"finalizers": ["b.example/two", "c.example/three"]})),
            json!(["a.example/one", "b.example/two", "c.example/three"])
        );
        // Upstream puts items the server lacks ahead of the server-only ones.
        assert_eq!(
            finalizers(json!({"finalizers": ["c.example/three"]})),
            json!(["c.example/three", "a.example/one", "b.example/two"])
        );
        assert_eq!(
            finalizers(json!({"$deleteFromPrimitiveList/finalizers": ["a.example/one"]})),
            json!(["b.example/two"])
        );
        // kubectl apply's form: order, additions and deletions together.
        assert_eq!(
            finalizers(json!({
                "$setElementOrder/finalizers": ["b.example/two", "c.example/three"],
                "$deleteFromPrimitiveList/finalizers": ["a.example/one"],
                "finalizers": ["c.example/three"]
            })),
            json!(["b.example/two", "c.example/three"])
        );
        assert_eq!(finalizers(json!({"finalizers": null})), Value::Null);
        // Deleting from a list the object does not have changes nothing.
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        assert_eq!(pod_patch(&pod, json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}})), pod);
        assert_eq!(
            bad_request(strategic(
                "v1",
                "Pod",
                &pod,
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}})
            )),
            BAD_PRIMITIVE_LIST
        );
        assert_eq!(
            bad_request(strategic(
                "v1",
                "Pod",
                &pod,
                json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["x"]}})
            )),
            BAD_PRIMITIVE_LIST
        );
    }

    #[test]
    fn null_deletes_keys_at_any_depth() {
        let patched = deployment_patch(
            &deployment(),
            json!({"metadata": {"annotations": {"note": null}}, "spec": {"strategy": {"rollingUpdate": null}, "template": {"spec": {
                "containers": [{"name": "app", "args": null, "env": null}],
                "nodeSelector": null
            }}}}),
        );
        assert_eq!(patched["metadata"]["annotations"], json!({}));
        assert_eq!(patched["spec"]["strategy"], json!({"type": "RollingUpdate"}));
        let app = &template_spec(&patched)["containers"][0];
        assert!(app.get("args").is_none() && app.get("env").is_none());
        assert!(template_spec(&patched).get("nodeSelector").is_none());
    }

    #[test]
    fn patch_replace_directive() {
        let patched = deployment_patch(
            &deployment(),
            json!({"metadata": {"labels": {"$patch": "replace", "fresh": "1", "skip": null}}}),
        );
        assert_eq!(patched["metadata"]["labels"], json!({"fresh": "1"}));
        let patched = deployment_patch(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "solo", "image": "z"}, {"$patch": "replace"}]}}}}),
        );
        assert_eq!(template_spec(&patched)["containers"], json!([{"name": "solo", "image": "z"}]));
        let emptied = deployment_patch(
            &deployment(),
            json!({"spec": {"template": {"spec": {"volumes": [{"$patch": "replace"}]}}}}),
        );
        assert_eq!(template_spec(&emptied)["volumes"], json!([]));
        // At the top level the whole object is replaced; apiVersion and kind survive for the server's own checks.
        let replaced = deployment_patch(&deployment(), json!({"$patch": "replace", "metadata": {"name": "web"}}));
        assert_eq!(replaced, json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}));
    }

    #[test]
    fn patch_delete_directive() {
        let patched = deployment_patch(&deployment(), json!({"spec": {"strategy": {"$patch": "delete"}}}));
        assert_eq!(patched["spec"]["strategy"], json!({}));
        let patched = deployment_patch(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "app", "env": [{"name": "A", "$patch": "delete"}]},
                {"name": "sidecar", "$patch": "delete"},
                {"name": "not-there", "$patch": "delete"}
            ]}}}}),
        );
        let containers = &template_spec(&patched)["containers"];
        assert_eq!(keys_of(containers, "name"), [&json!("app")]);
        assert_eq!(containers[0]["env"], json!([{"name": "B", "value": "2"}]));
        // Every item carrying the merge key goes, duplicates included.
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "1"}, {"name": "1"}, {"name": "2", "image": "a"}, {"name": "3"}
        ]}});
        let patched = pod_patch(&pod, json!({"spec": {"containers": [{"name": "1", "$patch": "delete"}]}}));
        assert_eq!(patched["spec"]["containers"], json!([{"name": "2", "image": "a"}, {"name": "3"}]));
        assert!(
            bad_request(strategic("v1", "Pod", &pod, json!({"spec": {"containers": [{"$patch": "delete"}]}})))
                .ends_with("does not contain declared merge key: name")
        );
    }

    #[test]
    fn patch_merge_and_unknown_directives_are_rejected_like_upstream() {
        let original = deployment();
        let message = bad_request(strategic(
            "apps/v1",
            "Deployment",
            &original,
            json!({"metadata": {"labels": {"$patch": "merge"}}}),
        ));
        assert!(message.starts_with("unknown patch type: merge in map:"), "{message}");
        assert_eq!(
            bad_request(strategic(
                "apps/v1",
                "Deployment",
                &original,
                json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "merge"}]}}}})
            )),
            "merging lists cannot yet be specified in the patch"
        );
        let message = bad_request(strategic(
            "apps/v1",
            "Deployment",
            &original,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "frob"}]}}}}),
        ));
        assert!(message.starts_with("unknown patch type: frob in map:"), "{message}");
        assert!(
            bad_request(strategic("apps/v1", "Deployment", &original, json!({"$patch": 1})))
                .starts_with("unknown patch type: 1")
        );
    }

    #[test]
    fn set_element_order_directive() {
        // kubectl apply dropping the sidecar.
        let patched = deployment_patch(
            &deployment(),
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "app"}],
                "containers": [{"$patch": "delete", "name": "sidecar"}]
            }}}}),
        );
        assert_eq!(keys_of(&template_spec(&patched)["containers"], "name"), [&json!("app")]);
        // Pure reordering, without the list itself in the patch.
        let patched = deployment_patch(
            &deployment(),
            json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}]}}}}),
        );
        let containers = &template_spec(&patched)["containers"];
        assert_eq!(keys_of(containers, "name"), [&json!("sidecar"), &json!("app")]);
        assert_eq!(containers[1], template_spec(&deployment())["containers"][0]);
        // Adding an env var in the middle, server-only vars keep their place relative to the rest.
        let patched = deployment_patch(
            &deployment(),
            json!({"spec": {"template": {"spec": {"containers": [{
                "name": "app",
                "$setElementOrder/env": [{"name": "A"}, {"name": "N"}, {"name": "B"}],
                "env": [{"name": "N", "value": "new"}]
            }]}}}}),
        );
        assert_eq!(
            keys_of(&template_spec(&patched)["containers"][0]["env"], "name"),
            [&json!("A"), &json!("N"), &json!("B")]
        );
        // Upstream: "$setElementOrder contains item that is not present in the list to be merged".
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "1"}, {"name": "3"}]}});
        let patched = pod_patch(
            &pod,
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "3"}, {"name": "2"}, {"name": "1"}],
                "containers": [{"name": "3", "image": "3"}, {"name": "1", "image": "1"}]
            }}),
        );
        assert_eq!(patched["spec"]["containers"], json!([{"name": "3", "image": "3"}, {"name": "1", "image": "1"}]));
        let node =
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"podCIDRs": ["1", "3"]}});
        let patched =
            strategic("v1", "Node", &node, json!({"spec": {"$setElementOrder/podCIDRs": ["3", "2", "1"]}})).unwrap();
        assert_eq!(patched["spec"]["podCIDRs"], json!(["3", "1"]));
        // A list new to the object.
        let patched = pod_patch(
            &pod,
            json!({"spec": {"$setElementOrder/volumes": [{"name": "a"}, {"name": "b"}], "volumes": [{"name": "a"}, {"name": "b"}]}}),
        );
        assert_eq!(patched["spec"]["volumes"], json!([{"name": "a"}, {"name": "b"}]));
    }

    #[test]
    fn set_element_order_errors() {
        let original = deployment();
        let message = bad_request(strategic(
            "apps/v1",
            "Deployment",
            &original,
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "app"}],
                "containers": [{"name": "sidecar", "image": "s:2"}]
            }}}}),
        ));
        assert!(message.starts_with("The order in patch list:"), "{message}");
        assert_eq!(
            bad_request(strategic(
                "apps/v1",
                "Deployment",
                &original,
                json!({"metadata": {"$setElementOrder/finalizers": "x"}})
            )),
            "expected a []interface {}, but received a string"
        );
        assert_eq!(
            bad_request(strategic(
                "apps/v1",
                "Deployment",
                &original,
                json!({"metadata": {"$setElementOrderfinalizers": []}})
            )),
            BAD_SET_ELEMENT_ORDER
        );
        assert!(
            bad_request(strategic(
                "apps/v1",
                "Deployment",
                &original,
                json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"image": "x"}]}}}})
            ))
            .ends_with("does not contain declared merge key: name")
        );
    }

    #[test]
    fn retain_keys_directive() {
        // kubectl apply switching the rollout strategy.
        let patched = deployment_patch(
            &deployment(),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": null, "type": "Recreate"}}}),
        );
        assert_eq!(patched["spec"]["strategy"], json!({"type": "Recreate"}));
        // Switching a volume's source.
        let patched = deployment_patch(
            &deployment(),
            json!({"spec": {"template": {"spec": {"volumes": [
                {"$retainKeys": ["name", "secret"], "name": "cfg", "secret": {"secretName": "s"}}
            ]}}}}),
        );
        assert_eq!(
            template_spec(&patched)["volumes"],
            json!([{"name": "data", "emptyDir": {}}, {"name": "cfg", "secret": {"secretName": "s"}}])
        );
        let original = deployment();
        assert_eq!(
            bad_request(strategic(
                "apps/v1",
                "Deployment",
                &original,
                json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}})
            )),
            BAD_RETAIN_KEYS
        );
        assert_eq!(
            bad_request(strategic(
                "apps/v1",
                "Deployment",
                &original,
                json!({"spec": {"strategy": {"$retainKeys": "type"}}})
            )),
            BAD_RETAIN_KEYS
        );
    }

    #[test]
    fn directives_never_reach_the_result() {
        let patch = json!({"spec": {"template": {"spec": {"containers": [{
            "name": "new",
            "$setElementOrder/env": [{"name": "X"}],
            "env": [{"name": "X", "value": "1"}],
            "resources": {"$patch": "replace", "limits": {"cpu": "1"}},
            "securityContext": {"$retainKeys": ["runAsUser"], "runAsUser": 1, "privileged": null},
            "$deleteFromPrimitiveList/args": ["x"]
        }], "affinity": {"$patch": "delete"}, "tolerations": [{"$patch": "replace"}]}}}});
        let patched = deployment_patch(&deployment(), patch);
        assert_no_directives(&patched);
        let new = &template_spec(&patched)["containers"][0];
        assert_eq!(
            new,
            &json!({
                "name": "new",
                "env": [{"name": "X", "value": "1"}],
                "resources": {"limits": {"cpu": "1"}},
                "securityContext": {"runAsUser": 1}
            })
        );
    }

    #[test]
    fn type_meta_is_kept_unless_the_patch_sets_it() {
        let original = deployment();
        let merged =
            run(PatchType::Merge, "apps/v1", "Deployment", &original, &json!({"apiVersion": null, "kind": null}))
                .unwrap();
        assert_eq!(merged, original);
        let removed =
            run(PatchType::Json, "apps/v1", "Deployment", &original, &json!([{"op": "remove", "path": "/kind"}]))
                .unwrap();
        assert_eq!(removed, original);
        let emptied = deployment_patch(&original, json!({"$patch": "delete"}));
        assert_eq!(emptied, json!({"apiVersion": "apps/v1", "kind": "Deployment"}));
        let changed = deployment_patch(&original, json!({"kind": "StatefulSet"}));
        assert_eq!(changed["kind"], "StatefulSet");
        let replaced = run(
            PatchType::Json,
            "apps/v1",
            "Deployment",
            &original,
            &json!([{"op": "replace", "path": "", "value": 5}]),
        );
        assert!(bad_request(replaced).contains("not a JSON object"));
    }

    #[test]
    fn malformed_merge_lists_are_bad_requests() {
        let original = deployment();
        let strategic_patch = |patch: Value| bad_request(strategic("apps/v1", "Deployment", &original, patch));
        assert!(
            strategic_patch(json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}))
                .ends_with("does not contain declared merge key: name")
        );
        assert_eq!(
            strategic_patch(json!({"spec": {"template": {"spec": {"containers": ["app"]}}}})),
            "list element types are not identical"
        );
        // Like upstream, only the first element is checked for being a list; later ones just differ in type.
        assert_eq!(
            strategic_patch(json!({"metadata": {"finalizers": [["a"]]}})),
            "list element types are not identical"
        );
        assert_eq!(
            strategic_patch(json!({"metadata": {"finalizers": ["a", 1]}})),
            "list element types are not identical"
        );
        assert_eq!(
            strategic_patch(json!({"metadata": {"finalizers": [{"a": 1}]}})),
            "list element types are not identical"
        );
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": []}});
        assert_eq!(
            bad_request(strategic("v1", "Pod", &pod, json!({"metadata": {"finalizers": [{"a": 1}]}}))),
            "cannot merge lists without merge key"
        );
        assert_eq!(
            bad_request(strategic("v1", "Pod", &pod, json!({"metadata": {"finalizers": [["a"]]}}))),
            "lists of lists are not supported"
        );
        // A type mismatch with the stored value is a replacement, as upstream does.
        let patched =
            deployment_patch(&original, json!({"spec": {"template": {"spec": {"containers": {"name": "x"}}}}}));
        assert_eq!(template_spec(&patched)["containers"], json!({"name": "x"}));
    }

    #[test]
    fn metadata_only_kinds() {
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["f1"]}, "data": {"a": "1", "b": "2"}});
        let patched = strategic(
            "v1",
            "ConfigMap",
            &config_map,
            json!({"metadata": {"finalizers": ["f2"]}, "data": {"a": null, "c": "3"}}),
        )
        .unwrap();
        assert_eq!(
            patched,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["f2", "f1"]}, "data": {"b": "2", "c": "3"}})
        );
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "w.example.com"},
            "spec": {"versions": [{"name": "v1", "served": true}, {"name": "v2", "served": true}]}});
        let patched = strategic(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            &crd,
            json!({"spec": {"versions": [{"name": "v1", "served": false}]}}),
        )
        .unwrap();
        assert_eq!(patched["spec"]["versions"], json!([{"name": "v1", "served": false}]));
        let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}});
        let patched =
            strategic("coordination.k8s.io/v1", "Lease", &lease, json!({"spec": {"holderIdentity": "b"}})).unwrap();
        assert_eq!(patched["spec"], json!({"holderIdentity": "b", "leaseDurationSeconds": 15}));
        let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web"}, "spec": {"replicas": 1}});
        let patched = strategic("autoscaling/v1", "Scale", &scale, json!({"spec": {"replicas": 5}})).unwrap();
        assert_eq!(patched["spec"]["replicas"], 5);
        let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}, "series": {"count": 1}});
        let patched = strategic("events.k8s.io/v1", "Event", &event, json!({"series": {"count": 2}})).unwrap();
        assert_eq!(patched["series"]["count"], 2);
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}, "secrets": [{"name": "t1"}]});
        let patched = strategic("v1", "ServiceAccount", &account, json!({"secrets": [{"name": "t2"}]})).unwrap();
        assert_eq!(patched["secrets"], json!([{"name": "t2"}, {"name": "t1"}]));
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "dg=="}});
        assert!(strategic("v1", "Secret", &secret, json!({"stringData": {"x": "y"}})).is_ok());
        let core_event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "count": 1});
        assert_eq!(strategic("v1", "Event", &core_event, json!({"count": 2})).unwrap()["count"], 2);
    }

    #[test]
    fn replica_set_template_uses_pod_rules() {
        let mut replica_set = deployment();
        replica_set["kind"] = json!("ReplicaSet");
        let patched = strategic(
            "apps/v1",
            "ReplicaSet",
            &replica_set,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "value": "9"}]}]}}}}),
        )
        .unwrap();
        assert_eq!(
            template_spec(&patched)["containers"][0]["env"],
            json!([{"name": "A", "value": "9"}, {"name": "B", "value": "2"}])
        );
    }

    #[test]
    fn long_lists_merge_in_reasonable_time() {
        let count = 20_000;
        let finalizers: Vec<Value> = (0..count).map(|i| json!(format!("f{i}"))).collect();
        let containers: Vec<Value> = (0..count).map(|i| json!({"name": format!("c{i}")})).collect();
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": finalizers},
            "spec": {"containers": containers}});
        let reversed = |list: &[Value]| Value::from(list.iter().rev().cloned().collect::<Vec<_>>());
        let patch = json!({
            "metadata": {"finalizers": reversed(&finalizers), "$deleteFromPrimitiveList/finalizers": finalizers[..count / 2]},
            "spec": {"$setElementOrder/containers": reversed(&containers), "containers": reversed(&containers)}
        });
        let started = std::time::Instant::now();
        let patched = pod_patch(&pod, patch);
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
        assert_eq!(patched["metadata"]["finalizers"].as_array().unwrap().len(), count / 2);
        assert_eq!(patched["spec"]["containers"][0]["name"], format!("c{}", count - 1));
    }

    #[test]
    fn never_panics_on_odd_input() {
        let bodies: &[&[u8]] = &[
            b"",
            b"\x00\xff",
            b"1e999",
            b"[]",
            b"[null]",
            b"{}",
            br#"{"$patch": 5}"#,
            br#"{"$patch": "delete", "$retainKeys": ["x"]}"#,
            br#"{"$retainKeys": "x"}"#,
            br#"{"$setElementOrder/": []}"#,
            br#"{"$setElementOrder/metadata": [{"name": "x"}]}"#,
            br#"{"$deleteFromPrimitiveList/": [1]}"#,
            br#"{"metadata": {"finalizers": {"a": 1}}}"#,
            br#"{"metadata": {"finalizers": [null, null]}}"#,
            br#"{"metadata": {"$setElementOrder/finalizers": [["x"]], "finalizers": ["x"]}}"#,
            br#"{"metadata": {"$deleteFromPrimitiveList/finalizers": null}}"#,
            br#"{"metadata": {"ownerReferences": [{"uid": {"nested": [1]}}, {"uid": null}]}}"#,
            br#"{"spec": {"template": {"spec": {"containers": [1, 2]}}}}"#,
            br#"{"spec": {"template": {"spec": {"containers": [[{"name": "a"}]]}}}}"#,
            br#"{"spec": {"template": {"spec": {"containers": [{"name": {"x": 1}}, {"$patch": "replace"}]}}}}"#,
            br#"{"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "app"}, 7], "containers": [{"$patch": "x"}]}}}}"#,
            br#"{"spec": {"template": {"spec": {"$setElementOrder/tolerations": [{"key": "k1"}], "tolerations": [{"key": "k1"}]}}}}"#,
            br#"{"spec": {"template": {"spec": {"$setElementOrder/containers": [], "containers": []}}}}"#,
            br#"[{"op": "move", "from": "/spec", "path": "/spec/x"}]"#,
            br#"[{"op": "remove", "path": "/spec/template/spec/containers/-"}]"#,
            br#"[{"op": "add", "path": "/spec/template/spec/containers/99", "value": 1}]"#,
            br#"[{"op": "test", "path": "/nope", "value": null}]"#,
        ];
        let mut deep = String::new();
        for _ in 0..120 {
            deep.push_str(r#"{"a":"#);
        }
        deep.push('1');
        deep.push_str(&"}".repeat(120));
        let originals = [deployment(), json!({}), json!(5), json!([1]), Value::Null];
        let patch_types = [PatchType::Json, PatchType::Merge, PatchType::Strategic, PatchType::Apply];
        for original in &originals {
            for patch_type in patch_types {
                for body in bodies.iter().copied().chain([deep.as_bytes()]) {
                    let _ = apply(patch_type, "apps/v1", "Deployment", original, body);
                    let _ = apply(patch_type, "v1", "Pod", original, body);
                }
            }
        }
    }
}
