//! The cluster's own housekeeping, as kube-controller-manager's garbage collector, namespace
//! controller and service-account controller do it: dependents of deleted owners go
//! (background), foreground deletion waits for dependents, orphaning strips ownerReferences,
//! a terminating namespace is emptied and then removed, and every namespace has a `default`
//! ServiceAccount.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use wasmcm_core::str_at;

use super::State;
use super::api::{self, DeleteOptions, Target};
use super::change::Key;

fn deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
}

fn has_finalizer(v: &Value, f: &str) -> bool {
    v.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|l| l.iter().any(|x| x == f))
}

fn target_of(state: &State, key: &Key) -> Option<Target> {
    let (group, resource) = key.id.split_once('/')?;
    let rt = state.registry.all().into_iter().find(|t| t.group == group && t.resource == resource)?;
    Some(Target { rt, namespace: key.namespace.clone(), name: key.name.clone() })
}

pub(crate) async fn run(state: Arc<State>) {
    loop {
        let notified = state.store.changed.notified();
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        // One pass per burst of changes, not one per change.
        tokio::time::sleep(Duration::from_millis(100)).await;
        pass(&state);
    }
}

/// One scan over every object. Each step writes through `api`; a conflict waits for the next
/// pass.
pub(crate) fn pass(state: &State) {
    let all = state.store.snapshot();
    let by_uid: HashMap<&str, &(Key, Arc<Value>)> = all.iter().map(|e| (str_at(&e.1, "/metadata/uid"), e)).collect();
    let mut referenced: HashSet<String> = HashSet::new();
    let background = DeleteOptions { propagation_policy: Some("Background".into()), ..Default::default() };
    let foreground = DeleteOptions { propagation_policy: Some("Foreground".into()), ..Default::default() };

    for (key, object) in &all {
        let refs = object.pointer("/metadata/ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default();
        if refs.is_empty() {
            continue;
        }
        let owners: Vec<&Arc<Value>> =
            refs.iter().filter_map(|r| by_uid.get(str_at(r, "/uid")).map(|e| &e.1)).collect();
        for r in &refs {
            referenced.insert(str_at(r, "/uid").to_string());
        }
        let Some(target) = target_of(state, key) else { continue };
        if owners.is_empty() {
            if !deleting(object) {
                log_err(
                    api::delete(state, &target, &background).map(drop),
                    key,
                    "deleting a dependent of a deleted owner",
                );
            }
            continue;
        }
        let orphaning: Vec<&str> = owners
            .iter()
            .filter(|o| deleting(o) && has_finalizer(o, "orphan"))
            .map(|o| str_at(o, "/metadata/uid"))
            .collect();
        if !orphaning.is_empty() {
            let result = state.store.update(
                &key.clone(),
                || api_missing(key),
                |cur| {
                    let mut v = cur.clone();
                    if let Some(list) = v.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut) {
                        list.retain(|r| !orphaning.contains(&str_at(r, "/uid")));
                    }
                    Ok(Some(v))
                },
            );
            log_err(result.map(drop), key, "orphaning a dependent");
            continue;
        }
        let owner_going = owners.iter().any(|o| deleting(o) && has_finalizer(o, "foregroundDeletion"));
        if owner_going && !deleting(object) {
            log_err(api::delete(state, &target, &foreground).map(drop), key, "deleting a dependent in the foreground");
        }
    }

    for (key, object) in &all {
        if !deleting(object) {
            continue;
        }
        let uid = str_at(object, "/metadata/uid");
        for finalizer in ["foregroundDeletion", "orphan"] {
            if has_finalizer(object, finalizer) && !referenced.contains(uid) {
                let result = state.store.update(
                    key,
                    || api_missing(key),
                    |cur| {
                        let mut v = cur.clone();
                        if let Some(list) = v.pointer_mut("/metadata/finalizers").and_then(Value::as_array_mut) {
                            list.retain(|f| f != finalizer);
                        }
                        Ok(Some(v))
                    },
                );
                log_err(result.map(drop), key, "removing a deletion finalizer");
            }
        }
    }

    for (key, ns) in all.iter().filter(|(k, _)| k.id == "/namespaces") {
        let name = &key.name;
        if deleting(ns) {
            let content = state.store.keys_in_namespace(name);
            if content.is_empty() {
                let result = state.store.update(
                    key,
                    || api_missing(key),
                    |cur| {
                        let mut v = cur.clone();
                        v["spec"]["finalizers"] = json!([]);
                        Ok(Some(v))
                    },
                );
                log_err(result.map(drop), key, "finalizing a namespace");
            }
            for k in content {
                let Some(target) = target_of(state, &k) else { continue };
                if state.store.get(&k).is_some_and(|o| !deleting(&o)) {
                    log_err(api::delete(state, &target, &background).map(drop), &k, "emptying a terminating namespace");
                }
            }
        } else {
            ensure_service_account(state, name);
        }
    }
}

fn ensure_service_account(state: &State, namespace: &str) {
    let key = Key { id: "/serviceaccounts".into(), namespace: namespace.into(), name: "default".into() };
    if state.store.get(&key).is_some() {
        return;
    }
    let Some(rt) = state.registry.lookup("", "v1", "serviceaccounts") else { return };
    let sa =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": namespace}});
    match api::create(state, &rt, namespace, sa, false) {
        Ok(_) => {}
        Err(e) if e.code == 409 || e.code == 403 || e.code == 404 => {}
        Err(e) => tracing::warn!(namespace, "creating the default ServiceAccount: {e}"),
    }
}

fn api_missing(key: &Key) -> wasmcm_core::ApiError {
    wasmcm_core::ApiError::not_found("", &key.id, &key.name)
}

fn log_err(result: Result<(), wasmcm_core::ApiError>, key: &Key, what: &str) {
    match result {
        Ok(()) => {}
        Err(e) if e.is_not_found() || e.is_conflict() => {}
        Err(e) => tracing::warn!(object = %format!("{}/{}/{}", key.id, key.namespace, key.name), "{what}: {e}"),
    }
}
