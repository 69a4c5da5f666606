//! Finalizers: how a controller cleans up what ownerReferences cannot before its object goes.
//!
//! The garbage collector deletes a custom resource's owned children by itself; anything else
//! the controller did for the object (an entry in a shared registry, an external record) needs
//! a finalizer. The cycle, one reconcile at a time:
//!
//! 1. The object has no deletion timestamp and lacks the finalizer: [`add`] it and return an
//!    `update` intent of the object (nothing else in that reconcile: the update changes the
//!    resourceVersion any other write of the object would be preconditioned on; the watch
//!    brings the object back for the next reconcile).
//! 2. A delete sets `metadata.deletionTimestamp` ([`is_deleting`]) and the API server keeps the
//!    object while any finalizer remains. Clean up in one batch, then in the next batch
//!    [`remove`] the finalizer with an `update` intent: the host runs a batch only after the
//!    previous one succeeded, so the finalizer goes only once the cleanup is written, and the
//!    API server then completes the delete.
//!
//! ```
//! use serde_json::json;
//! use wasmcm_guest::finalizer;
//! use wasmcm_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//!
//! const FINALIZER: &str = "example.wasmcm.dev/registry";
//! let mut raw = json!({"apiVersion": "example.wasmcm.dev/v1", "kind": "Website",
//!                      "metadata": {"name": "blog", "namespace": "web", "resourceVersion": "7"}});
//! let meta: ObjectMeta = serde_json::from_value(raw["metadata"].clone()).unwrap();
//! if !finalizer::is_deleting(&meta) && !finalizer::has(&meta, FINALIZER) {
//!     assert!(finalizer::add(&mut raw, FINALIZER).unwrap());
//!     // return Intent::Update(raw.to_string()) and nothing else
//! }
//! assert_eq!(raw["metadata"]["finalizers"], json!([FINALIZER]));
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use crate::Error;

/// Whether the object carries `finalizer`.
///
/// ```
/// use wasmcm_guest::finalizer;
/// use wasmcm_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// let meta = ObjectMeta { finalizers: Some(vec!["example.wasmcm.dev/registry".into()]), ..Default::default() };
/// assert!(finalizer::has(&meta, "example.wasmcm.dev/registry"));
/// assert!(!finalizer::has(&ObjectMeta::default(), "example.wasmcm.dev/registry"));
/// ```
pub fn has(metadata: &ObjectMeta, finalizer: &str) -> bool {
    metadata.finalizers.iter().flatten().any(|f| f == finalizer)
}

/// Whether the object is being deleted (`metadata.deletionTimestamp` is set): time to clean
/// up and [`remove`] the finalizer, and not to add it or create children.
///
/// ```
/// use wasmcm_guest::finalizer;
/// use wasmcm_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// let now = wasmcm_guest::Instant::parse_rfc3339("2026-11-26T08:00:00Z").unwrap();
/// let deleting = ObjectMeta { deletion_timestamp: Some(now.time()), ..Default::default() };
/// assert!(finalizer::is_deleting(&deleting));
/// assert!(!finalizer::is_deleting(&ObjectMeta::default()));
/// ```
pub fn is_deleting(metadata: &ObjectMeta) -> bool {
    metadata.deletion_timestamp.is_some()
}

/// Adds `finalizer` to the object's JSON (`metadata.finalizers`) unless it is there already;
/// returns whether it changed, i.e. whether an `update` intent is needed. Fails only on an
/// object whose metadata or finalizers are not what Kubernetes JSON allows.
///
/// ```
/// use serde_json::json;
/// use wasmcm_guest::finalizer;
///
/// let mut raw = json!({"metadata": {"name": "blog", "finalizers": ["other.io/keep"]}});
/// assert!(finalizer::add(&mut raw, "example.wasmcm.dev/registry").unwrap());
/// assert!(!finalizer::add(&mut raw, "example.wasmcm.dev/registry").unwrap());
/// assert_eq!(raw["metadata"]["finalizers"], json!(["other.io/keep", "example.wasmcm.dev/registry"]));
/// assert!(finalizer::add(&mut json!({"kind": "NoMetadata"}), "x.io/y").is_err());
/// ```
pub fn add(object: &mut Value, finalizer: &str) -> Result<bool, Error> {
    let finalizers = finalizers(object)?;
    if finalizers.iter().any(|f| f.as_str() == Some(finalizer)) {
        return Ok(false);
    }
    finalizers.push(Value::String(finalizer.to_string()));
    Ok(true)
}

/// Removes `finalizer` from the object's JSON; returns whether it changed (whether an
/// `update` intent is needed). Other finalizers stay, in their order. Fails as [`add`] does.
///
/// ```
/// use serde_json::json;
/// use wasmcm_guest::finalizer;
///
/// let mut raw = json!({"metadata": {"name": "blog",
///     "finalizers": ["other.io/keep", "example.wasmcm.dev/registry"]}});
/// assert!(finalizer::remove(&mut raw, "example.wasmcm.dev/registry").unwrap());
/// assert!(!finalizer::remove(&mut raw, "example.wasmcm.dev/registry").unwrap());
/// assert_eq!(raw["metadata"]["finalizers"], json!(["other.io/keep"]));
/// ```
pub fn remove(object: &mut Value, finalizer: &str) -> Result<bool, Error> {
    let finalizers = finalizers(object)?;
    let before = finalizers.len();
    finalizers.retain(|f| f.as_str() != Some(finalizer));
    Ok(finalizers.len() != before)
}

/// A patch taking `finalizer` off the object `target` without reading it first, as KCM's Job
/// controller takes its tracking finalizer off pods: a strategic merge patch
/// `{"metadata": {"$deleteFromPrimitiveList/finalizers": [finalizer]}}`, which removes that
/// one entry from the list as it stands on the server, whatever else was added or removed
/// meanwhile, and is a no-op when it is not there. (Strategic merge serves built-in kinds;
/// for a custom resource, [`remove`] and an update.)
///
/// ```
/// use serde_json::json;
/// use wasmcm_guest::{Intent, Kind, ObjectRef, PatchType, finalizer};
///
/// let pod = ObjectRef { kind: Kind::new("v1", "Pod"), namespace: "demo".into(), name: "pi-x7k2q".into() };
/// let patch = finalizer::remove_patch(pod, "batch.kubernetes.io/job-tracking");
/// assert_eq!(patch.patch_type, PatchType::Strategic);
/// assert_eq!(
///     serde_json::from_str::<serde_json::Value>(&patch.body).unwrap(),
///     json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["batch.kubernetes.io/job-tracking"]}})
/// );
/// let intent = Intent::Patch(patch);
/// # let _ = intent;
/// ```
pub fn remove_patch(target: crate::ObjectRef, finalizer: &str) -> crate::Patch {
    let body = serde_json::json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [finalizer]}});
    crate::Patch::strategic(target, &body)
}

fn finalizers(object: &mut Value) -> Result<&mut Vec<Value>, Error> {
    let meta = object
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| Error::permanent("object has no metadata"))?;
    let list = meta.entry("finalizers").or_insert_with(|| Value::Array(Vec::new()));
    if list.is_null() {
        *list = Value::Array(Vec::new());
    }
    list.as_array_mut().ok_or_else(|| Error::permanent("metadata.finalizers is not a list"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn null_finalizers_are_an_empty_list_and_other_shapes_are_refused() {
        let mut raw = json!({"metadata": {"finalizers": null}});
        assert!(!remove(&mut raw, "a.io/b").unwrap());
        assert!(add(&mut raw, "a.io/b").unwrap());
        assert_eq!(raw["metadata"]["finalizers"], json!(["a.io/b"]));
        assert!(add(&mut json!({"metadata": {"finalizers": "a.io/b"}}), "a.io/b").is_err());
    }
}
