//! The `pods/ephemeralcontainers` subresource (what `kubectl debug` writes to), as upstream's
//! ephemeral-containers strategy: an update or patch of the Pod through it changes
//! `spec.ephemeralContainers` and nothing else, and may only add ephemeral containers (see
//! `validation::validate_ephemeral_containers_update`). No simulated container runs them.

use std::sync::Arc;

use serde_json::{Value, json};
use wasmcm_core::{ApiError, str_at};

use crate::State;
use crate::patch::{self, PatchType};
use crate::registry::resources::Target;
use crate::registry::strategy;
use crate::validation;

/// `dropNonEphemeralContainerUpdates`, defaulting and validation, from the pod `sent` and the
/// stored one.
fn prepare(target: &Target, sent: &Value, current: &Value) -> Result<Option<Value>, ApiError> {
    for (field, wanted) in [("apiVersion", "v1"), ("kind", "Pod")] {
        match sent.get(field).and_then(Value::as_str) {
            Some(given) if !given.is_empty() && given != wanted => {
                return Err(ApiError::bad_request(format!(
                    "the {} in the data ({given}) does not match the expected {} ({wanted})",
                    if field == "kind" { "kind" } else { "API version" },
                    if field == "kind" { "kind" } else { "API version" },
                )));
            }
            _ => {}
        }
    }
    let name = str_at(sent, "/metadata/name");
    if !name.is_empty() && name != target.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            target.name
        )));
    }
    let rv = str_at(sent, "/metadata/resourceVersion");
    if !rv.is_empty() && rv != str_at(current, "/metadata/resourceVersion") {
        return Err(ApiError::stale("", "pods", &target.name));
    }
    let mut pod = current.clone();
    match sent.pointer("/spec/ephemeralContainers").filter(|e| !e.is_null()) {
        Some(list) => pod["spec"]["ephemeralContainers"] = list.clone(),
        None => {
            if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("ephemeralContainers");
            }
        }
    }
    strategy::POD.default(&mut pod);
    let causes = validation::validate_ephemeral_containers_update(&pod, current);
    if !causes.is_empty() {
        return Err(ApiError::invalid("", "Pod", &target.name, causes));
    }
    Ok((pod != *current).then_some(pod))
}

/// `f` runs outside the store's lock (it may patch a large pod), as `api`'s writes do.
fn write(
    state: &State,
    target: &Target,
    dry_run: bool,
    mut f: impl FnMut(&Value) -> Result<Option<Value>, ApiError>,
) -> Result<Arc<Value>, ApiError> {
    let not_found = || ApiError::not_found("", "pods", &target.name);
    if dry_run {
        let current = state.store.get(&target.key()).ok_or_else(not_found)?;
        return Ok(f(&current)?.map(Arc::new).unwrap_or(current));
    }
    state.store.guaranteed_update(&target.key(), not_found, f)
}

/// `PUT .../pods/{name}/ephemeralcontainers`.
pub(crate) fn update(state: &State, target: &Target, sent: Value, dry_run: bool) -> Result<Arc<Value>, ApiError> {
    if !sent.is_object() {
        return Err(ApiError::bad_request("the request body must be a JSON or YAML object"));
    }
    write(state, target, dry_run, |current| prepare(target, &sent, current))
}

/// `PATCH .../pods/{name}/ephemeralcontainers` (JSON, merge or strategic merge patch of the Pod).
pub(crate) fn patch(
    state: &State,
    target: &Target,
    ty: PatchType,
    body: &[u8],
    dry_run: bool,
) -> Result<Arc<Value>, ApiError> {
    if ty == PatchType::Apply {
        return Err(ApiError::unsupported_media_type(
            "server-side apply of the ephemeralcontainers subresource is not supported",
        ));
    }
    write(state, target, dry_run, |current| {
        let patched = patch::apply(ty, strategy::POD.merge_schema, "Pod", current, body)?;
        let mut sent = patched;
        // A patch is applied to the stored pod: its version is the one it was based on.
        sent["metadata"]["resourceVersion"] = json!(str_at(current, "/metadata/resourceVersion"));
        prepare(target, &sent, current)
    })
}
