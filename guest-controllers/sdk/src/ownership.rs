//! Controller references: who controls an object, and the adopt/release decision of
//! apimachinery's `ControllerRefManager.ClaimObject`.
//!
//! An object a plugin creates for a primary carries a controller ownerReference to it
//! ([`new_controller_ref`], [`with_owner_ref`]): that is what routes the child's changes back to
//! the primary's key, what [`Cache::list_controlled`](crate::Cache::list_controlled) finds, what
//! makes the host count the create until its cache has seen it, and what lets the API server's
//! garbage collector delete the child with its owner. Children matching an owner's selector but
//! controlled by nobody are adopted, and children that stop matching released ([`claim`]).
//!
//! ```
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//! use serde_json::json;
//! use wasmcm_guest::ownership::{Claim, claim, new_controller_ref, with_owner_ref, without_owner_ref};
//!
//! let owner = ObjectMeta { name: Some("web".into()), namespace: Some("demo".into()), uid: Some("u1".into()), ..Default::default() };
//! let owner_ref = new_controller_ref("apps/v1", "ReplicaSet", &owner);
//!
//! // An orphan the owner's selector matches is adopted: the update adds the reference.
//! let orphan = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "demo"}});
//! let orphan_meta: ObjectMeta = serde_json::from_value(orphan["metadata"].clone()).unwrap();
//! assert_eq!(claim(&owner, &orphan_meta, true), Claim::Adopt);
//! let adopted = with_owner_ref(orphan, &owner_ref).unwrap();
//! assert_eq!(adopted["metadata"]["ownerReferences"][0]["controller"], true);
//!
//! // Once it no longer matches, it is released: the update drops the reference.
//! let adopted_meta: ObjectMeta = serde_json::from_value(adopted["metadata"].clone()).unwrap();
//! assert_eq!(claim(&owner, &adopted_meta, true), Claim::Owned);
//! assert_eq!(claim(&owner, &adopted_meta, false), Claim::Release);
//! let released = without_owner_ref(adopted, "u1").unwrap();
//! assert_eq!(released["metadata"]["ownerReferences"], json!([]));
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::Value;

use crate::Error;

/// The ownerReference with `controller: true`, if any: the object's controller.
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references.iter().flatten().find(|r| r.controller == Some(true))
}

/// `metav1.NewControllerRef`: a controller reference to `owner`, of `api_version` and `kind`,
/// with `blockOwnerDeletion` (foreground deletion of the owner waits for the child).
pub fn new_controller_ref(api_version: &str, kind: &str, owner: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: owner.name.clone().unwrap_or_default(),
        uid: owner.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// What a controller should do with a candidate child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Ours and matching.
    Owned,
    /// An orphan that matches: set our controller reference.
    Adopt,
    /// Ours but no longer matching: drop our controller reference.
    Release,
    /// Someone else's, or not ours to take.
    Ignore,
}

/// What to do with `child`, a candidate for `owner`'s control whose labels `matches` (or not)
/// the owner's selector: `ControllerRefManager.ClaimObject`. Owners being deleted adopt and
/// release nothing, children being deleted are not adopted, and a namespaced owner adopts only
/// in its own namespace.
pub fn claim(owner: &ObjectMeta, child: &ObjectMeta, matches: bool) -> Claim {
    let owner_deleting = owner.deletion_timestamp.is_some();
    match controller_of(child) {
        Some(r) if Some(&r.uid) != owner.uid.as_ref() => Claim::Ignore,
        Some(_) if matches => Claim::Owned,
        Some(_) if owner_deleting => Claim::Ignore,
        Some(_) => Claim::Release,
        None if owner_deleting || !matches || child.deletion_timestamp.is_some() => Claim::Ignore,
        None if owner.namespace.as_deref().is_some_and(|ns| !ns.is_empty()) && owner.namespace != child.namespace => {
            Claim::Ignore
        }
        None => Claim::Adopt,
    }
}

fn owner_refs(raw: &mut Value) -> Result<&mut Vec<Value>, Error> {
    let meta = raw
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| Error::permanent("object has no metadata"))?;
    let refs = meta.entry("ownerReferences").or_insert_with(|| Value::Array(Vec::new()));
    if refs.is_null() {
        *refs = Value::Array(Vec::new());
    }
    refs.as_array_mut().ok_or_else(|| Error::permanent("metadata.ownerReferences is not a list"))
}

/// The child's JSON with `r` appended to its ownerReferences: a child to create, or an orphan
/// to adopt by an update. A permanent [`Error`] when the JSON has no `metadata` object.
pub fn with_owner_ref(mut raw: Value, r: &OwnerReference) -> Result<Value, Error> {
    let r = serde_json::to_value(r).map_err(|e| Error::permanent(e.to_string()))?;
    owner_refs(&mut raw)?.push(r);
    Ok(raw)
}

/// The child's JSON without the ownerReference of `uid`: a child to release by an update.
pub fn without_owner_ref(mut raw: Value, uid: &str) -> Result<Value, Error> {
    owner_refs(&mut raw)?.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    fn meta(uid: &str, owner: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            uid: Some(uid.into()),
            namespace: Some("ns".into()),
            owner_references: owner.map(|o| {
                vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "ReplicaSet".into(),
                    name: "o".into(),
                    uid: o.into(),
                    controller: Some(true),
                    block_owner_deletion: None,
                }]
            }),
            ..Default::default()
        }
    }

    #[test]
    fn claim_follows_controller_ref_manager() {
        let owner = meta("rs", None);
        assert_eq!(claim(&owner, &meta("p", Some("rs")), true), Claim::Owned);
        assert_eq!(claim(&owner, &meta("p", Some("rs")), false), Claim::Release);
        assert_eq!(claim(&owner, &meta("p", Some("other")), true), Claim::Ignore);
        assert_eq!(claim(&owner, &meta("p", None), true), Claim::Adopt);
        assert_eq!(claim(&owner, &meta("p", None), false), Claim::Ignore);
        let mut deleting_child = meta("p", None);
        deleting_child.deletion_timestamp = Some(Time(Default::default()));
        assert_eq!(claim(&owner, &deleting_child, true), Claim::Ignore);
        let mut deleting_owner = owner.clone();
        deleting_owner.deletion_timestamp = Some(Time(Default::default()));
        assert_eq!(claim(&deleting_owner, &meta("p", None), true), Claim::Ignore);
        assert_eq!(claim(&deleting_owner, &meta("p", Some("rs")), false), Claim::Ignore);
        let mut elsewhere = meta("p", None);
        elsewhere.namespace = Some("other".into());
        assert_eq!(claim(&owner, &elsewhere, true), Claim::Ignore);
    }

    #[test]
    fn owner_refs_are_added_and_removed_in_json() {
        let r = new_controller_ref(
            "apps/v1",
            "ReplicaSet",
            &ObjectMeta { name: Some("rs".into()), uid: Some("u1".into()), ..Default::default() },
        );
        let pod = json!({"metadata": {"name": "p", "ownerReferences": [{"uid": "other"}]}, "extra": 1});
        let adopted = with_owner_ref(pod, &r).unwrap();
        assert_eq!(adopted["metadata"]["ownerReferences"][1]["uid"], "u1");
        assert_eq!(adopted["metadata"]["ownerReferences"][1]["controller"], true);
        assert_eq!(adopted["extra"], 1);
        let released = without_owner_ref(adopted, "u1").unwrap();
        assert_eq!(released["metadata"]["ownerReferences"], json!([{"uid": "other"}]));
    }
}
