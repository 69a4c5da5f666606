//! The API server's write rules without a server, for `wasmcm simulate`: objects are loaded as
//! they are (a restore: no defaulting, no validation, their resourceVersions kept), and writes
//! go through the same code as over HTTP — server-owned metadata, defaulting, validation,
//! optimistic concurrency, status subresources, graceful deletion — at a fixed time, with
//! names and uids drawn from a seeded sequence, so one input always gives one output.
//!
//! No loops run: no kubelet, no garbage collector. What every cluster starts with (its
//! namespaces, `default/kubernetes`, the default RBAC policy), the namespaces the loaded
//! objects are in, and an open CRD for each custom kind loaded without its CRD exist without
//! being listed in [`Offline::objects`].

use std::collections::BTreeSet;

use serde_json::{Value, json};
use wasmcm_core::{ApiError, Kind, str_at};

use crate::State;
use crate::api::{self, DeleteOptions};
use crate::bootstrap::bootstrap;
use crate::registry::resources::ResourceType;
use crate::registry::resources::Target;
use crate::state::Sources;
use crate::storage::change::Key;
use crate::storage::store::Store;

pub struct Offline {
    state: State,
    /// Namespaces made to exist, not loaded: left out of [`Offline::objects`].
    implicit: BTreeSet<Key>,
}

impl Offline {
    /// A server holding `objects`, whose clock stands at `now`.
    pub fn new(objects: Vec<Value>, now: jiff::Timestamp) -> Result<Self, String> {
        let sources = Sources::Fixed { now, seq: Default::default() };
        let state = State::new(Store::default(), sources, crate::controllers::control_plane::sync_crd_api_services);
        bootstrap(&state).map_err(|e| e.to_string())?;
        let mut offline = Offline { implicit: state.store.snapshot().into_iter().map(|(k, _)| k).collect(), state };
        // CRDs first, so their custom resources have a type to be stored as.
        let (crds, others): (Vec<Value>, Vec<Value>) = objects
            .into_iter()
            .partition(|o| Kind::of_object(o) == Kind::new("apiextensions.k8s.io/v1", "CustomResourceDefinition"));
        for object in crds.into_iter().chain(others) {
            offline.restore(object)?;
        }
        Ok(offline)
    }

    fn restore(&mut self, object: Value) -> Result<(), String> {
        let kind = Kind::of_object(&object);
        if self.resource_type(&kind).is_err() && kind.api_version.contains('/') {
            self.define(&kind, !str_at(&object, "/metadata/namespace").is_empty())?;
        }
        let rt = self.resource_type(&kind).map_err(|e| e.message)?;
        let namespace = if rt.namespaced { str_at(&object, "/metadata/namespace").to_string() } else { String::new() };
        if rt.namespaced && namespace.is_empty() {
            return Err(format!("{kind} {}: metadata.namespace is missing", str_at(&object, "/metadata/name")));
        }
        let key = Key { id: rt.id(), namespace: namespace.clone(), name: str_at(&object, "/metadata/name").into() };
        if !namespace.is_empty() {
            let ns = Key { id: "/namespaces".into(), namespace: String::new(), name: namespace.clone() };
            if self.state.store.get(&ns).is_none() {
                let ns_object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
                let rt = self.resource_type(&Kind::new("v1", "Namespace")).map_err(|e| e.message)?;
                api::create(&self.state, &rt, "", ns_object, false, api::Ownership::Unrecorded)
                    .map_err(|e| e.message)?;
                self.implicit.insert(ns);
            }
        }
        self.implicit.remove(&key);
        if let Some(restored) = rt.strategy.restored {
            restored(&self.state, &object);
        }
        self.state.store.restore(key, object);
        Ok(())
    }

    /// Serves `kind`, a custom resource the snapshot holds no CRD for (a recording holds what
    /// the plugin read, not its CRDs), as a CRD with an open schema and a status subresource
    /// would: its writes are stored as they come, unvalidated, and status only through
    /// `/status`. The CRD is left out of [`Offline::objects`].
    fn define(&mut self, kind: &Kind, namespaced: bool) -> Result<(), String> {
        let (group, version) = kind.api_version.split_once('/').unwrap_or(("", &kind.api_version));
        let singular = kind.kind.to_lowercase();
        let plural = format!("{singular}s");
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {
                "group": group,
                "names": {"kind": kind.kind, "listKind": format!("{}List", kind.kind), "plural": plural, "singular": singular},
                "scope": if namespaced { "Namespaced" } else { "Cluster" },
                "versions": [{
                    "name": version, "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                    "subresources": {"status": {}},
                }],
            },
        });
        let key = Key {
            id: "apiextensions.k8s.io/customresourcedefinitions".into(),
            namespace: String::new(),
            name: format!("{plural}.{group}"),
        };
        if self.state.store.get(&key).is_some() {
            return Err(format!("no {kind} is served: the snapshot's CRD {} lacks it", key.name));
        }
        self.state.registry.sync_crd(&crd, true);
        self.state.store.restore(key.clone(), crd);
        self.implicit.insert(key);
        Ok(())
    }

    fn resource_type(&self, kind: &Kind) -> Result<ResourceType, ApiError> {
        self.state.registry.by_kind(&kind.api_version, &kind.kind).ok_or_else(|| {
            ApiError::new(
                404,
                "NotFound",
                format!("the server could not find the requested resource: no {kind} is served"),
            )
        })
    }

    /// Whether objects of `kind` live in namespaces.
    pub fn namespaced(&self, kind: &Kind) -> Result<bool, ApiError> {
        Ok(self.resource_type(kind)?.namespaced)
    }

    fn target(&self, kind: &Kind, namespace: &str, name: &str) -> Result<Target, ApiError> {
        let rt = self.resource_type(kind)?;
        let namespace = if rt.namespaced { namespace.to_string() } else { String::new() };
        Ok(Target { rt, namespace, name: name.to_string() })
    }

    fn target_of(&self, object: &Value) -> Result<Target, ApiError> {
        self.target(&Kind::of_object(object), str_at(object, "/metadata/namespace"), str_at(object, "/metadata/name"))
    }

    /// POST: returns the object as stored (its generated name, uid, defaults).
    pub fn create(&self, object: Value) -> Result<Value, ApiError> {
        let rt = self.resource_type(&Kind::of_object(&object))?;
        let namespace = str_at(&object, "/metadata/namespace").to_string();
        Ok(api::create(&self.state, &rt, &namespace, object, false, api::Ownership::Unrecorded)?.as_ref().clone())
    }

    /// PUT of the main resource.
    pub fn update(&self, object: Value) -> Result<Value, ApiError> {
        let t = self.target_of(&object)?;
        Ok(api::update(&self.state, &t, object, false, api::Ownership::Unrecorded)?.as_ref().clone())
    }

    /// PUT of the status subresource.
    pub fn update_status(&self, object: Value) -> Result<Value, ApiError> {
        let t = self.target_of(&object)?;
        Ok(api::update_status(&self.state, &t, object, false, api::Ownership::Unrecorded)?.as_ref().clone())
    }

    /// DELETE, with a uid precondition and a propagation policy (`Background`, `Foreground`,
    /// `Orphan`) if given.
    pub fn delete(
        &self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        uid: Option<&str>,
        propagation: Option<&str>,
    ) -> Result<(), ApiError> {
        let t = self.target(kind, namespace, name)?;
        let opts = DeleteOptions {
            precondition_uid: uid.map(String::from),
            propagation_policy: propagation.map(String::from),
            ..Default::default()
        };
        api::delete(&self.state, &t, &opts).map(drop)
    }

    /// PATCH of the object, or of its status subresource, with `body` sent as `content_type`
    /// (`application/json-patch+json`, `…/merge-patch+json`, `…/strategic-merge-patch+json`).
    pub fn patch(
        &self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        content_type: &str,
        body: &[u8],
        status: bool,
    ) -> Result<Value, ApiError> {
        let t = self.target(kind, namespace, name)?;
        let ty = crate::patch::PatchType::from_content_type(content_type)
            .filter(|ty| *ty != crate::patch::PatchType::Apply)
            .ok_or_else(|| ApiError::unsupported_media_type(format!("not a patch type: {content_type:?}")))?;
        let part = if status { api::Part::Status } else { api::Part::Main };
        Ok(api::patch(&self.state, &t, part, ty, body, false, api::Ownership::Unrecorded)?.as_ref().clone())
    }

    pub fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<Value> {
        let t = self.target(kind, namespace, name).ok()?;
        api::get(&self.state, &t).ok().map(|v| v.as_ref().clone())
    }

    /// Every object held, by type, namespace and name.
    pub fn objects(&self) -> Vec<Value> {
        let all = self.state.store.snapshot();
        all.into_iter().filter(|(k, _)| !self.implicit.contains(k)).map(|(_, v)| v.as_ref().clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_kind_without_its_crd_is_served_openly_and_not_listed() {
        let now: jiff::Timestamp = "2026-11-26T10:00:00Z".parse().unwrap();
        let site = json!({"apiVersion": "example.com/v1", "kind": "Site", "metadata": {"name": "a", "namespace": "d",
            "resourceVersion": "7", "uid": "u1", "generation": 1}, "spec": {"anything": [1, {"goes": true}]}});
        let offline = Offline::new(vec![site.clone()], now).unwrap();
        assert_eq!(
            offline.objects(),
            std::slice::from_ref(&site),
            "the made-up CRD and namespace are not objects of the snapshot"
        );
        let kind = Kind::new("example.com/v1", "Site");
        assert!(offline.namespaced(&kind).unwrap());
        let mut changed = offline.get(&kind, "d", "a").unwrap();
        changed["status"] = json!({"ready": true});
        changed["spec"]["anything"] = json!("changed");
        let stored = offline.update_status(changed).unwrap();
        assert_eq!(stored["status"]["ready"], true);
        assert_eq!(stored["spec"], site["spec"], "status is written through /status only");
        let cluster = json!({"apiVersion": "example.com/v1", "kind": "Zone", "metadata": {"name": "z"}});
        assert!(!Offline::new(vec![cluster], now).unwrap().namespaced(&Kind::new("example.com/v1", "Zone")).unwrap());
        let core = json!({"apiVersion": "v1", "kind": "Gadget", "metadata": {"name": "g"}});
        assert!(Offline::new(vec![core], now).err().unwrap().contains("no v1/Gadget is served"));
    }
}
