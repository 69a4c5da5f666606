//! `website`: an example wasmcm plugin for a custom resource, written as a platform team would
//! write its own controller.
//!
//! A `Website` (`example.wasmcm.dev/v1`, `deploy/crd.yaml`) asks for a static site: an image
//! serving `/usr/share/nginx/html`, a number of replicas and the page's content. The plugin
//! reconciles each Website into
//!
//! - two **owned children**, controlled by the Website (ownerReferences with `controller:
//!   true`, so the garbage collector deletes them with it): a ConfigMap `<name>-content`
//!   holding the page and a Deployment `<name>` running the image with that ConfigMap mounted
//!   (the built-in deployment and replicaset plugins then run its pods);
//! - its **status**: the Deployment's replica counts, `observedGeneration`, and the `Ready`
//!   and `Progressing` conditions;
//! - an entry in the namespace's **registry**, a ConfigMap (`website-registry`, or the
//!   manifest's `settings.registry`) shared by every Website of the namespace and owned by
//!   none, so the garbage collector cannot clean it: a **finalizer** keeps a deleted Website
//!   until the plugin has removed its entry.
//!
//! Everything the plugin does is in [`reconcile`]; [`children`] builds the children and
//! [`status`] the status. With the cargo feature `v2` it builds as its second release.

pub mod children;
pub mod status;
mod website;

pub use website::{Website, WebsiteSpec, WebsiteStatus};

use serde_json::Value;
use wasmcm_guest::k8s_openapi::api::apps::v1::Deployment;
use wasmcm_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmcm_guest::{
    CONTRACT_VERSION, Cache, CacheExt, Controller, Error, Intent, Object, Outcome, PluginInfo, Request, Resource,
    controller_uid, finalizer,
};

/// This release. The feature `v2` builds the next one, whose pages carry a footer.
pub const VERSION: &str = if cfg!(feature = "v2") { "0.2.0" } else { "0.1.0" };

/// Held by every Website until its registry entry is removed.
pub const FINALIZER: &str = "example.wasmcm.dev/registry";

/// The registry ConfigMap's name when the manifest's settings name none.
pub const DEFAULT_REGISTRY: &str = "website-registry";

/// The plugin.
pub struct WebsiteController;

impl Controller for WebsiteController {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "website".into(),
            version: VERSION.into(),
            primary: Website::kind(),
            // Their changes wake the Website that controls them; the registry ConfigMap has no
            // controller and wakes nothing.
            owns: vec![Deployment::kind(), ConfigMap::kind()],
            watches: vec![],
            // Website: its finalizer and status; ConfigMap: content and registry.
            writes: vec![Website::kind(), Deployment::kind(), ConfigMap::kind()],
            contract: CONTRACT_VERSION.into(),
        }
    }

    fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
        reconcile(request, cache)
    }
}

#[cfg(target_arch = "wasm32")]
wasmcm_guest::export_plugin!(WebsiteController);

/// The manifest's `settings` this plugin reads.
#[derive(serde::Deserialize, Default)]
struct Settings {
    /// The registry ConfigMap's name in each namespace.
    registry: Option<String>,
}

/// One reconcile of the Website `request.namespace/request.name`.
pub fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
    let mut outcome = Outcome::default();
    let Some(site) = cache.get_as::<Website>(&request.namespace, &request.name)? else {
        // Gone: its children go with it (ownerReferences), and the finalizer saw to the
        // registry before the API server let it go.
        return Ok(outcome);
    };
    let settings: Settings = serde_json::from_str(&request.settings)
        .map_err(|e| Error::permanent(format!("settings: {e} (expected {{\"registry\": \"<name>\"}})")))?;
    let registry_name = settings.registry.as_deref().unwrap_or(DEFAULT_REGISTRY);
    let registry = cache.get_as::<ConfigMap>(&request.namespace, registry_name)?;
    let meta = &site.value.metadata;

    if finalizer::is_deleting(meta) {
        if finalizer::has(meta, FINALIZER) {
            // The entry first; the finalizer only once that write succeeded (a later batch).
            outcome.push_batch(registry_entry(&site, registry.as_ref(), registry_name, None)?.into_iter().collect());
            let mut raw = site.raw()?;
            finalizer::remove(&mut raw, FINALIZER)?;
            outcome.push_batch(vec![Intent::Update(raw.to_string())]);
        }
        return Ok(outcome);
    }
    if !finalizer::has(meta, FINALIZER) {
        // Nothing else this time: the update changes the resourceVersion that a status write
        // would be preconditioned on, and its watch event brings the Website back at once.
        let mut raw = site.raw()?;
        finalizer::add(&mut raw, FINALIZER)?;
        outcome.push_batch(vec![Intent::Update(raw.to_string())]);
        return Ok(outcome);
    }

    let uid = meta.uid.as_deref().unwrap_or_default();
    let content = cache.get_as::<ConfigMap>(&request.namespace, &children::content_name(&request.name))?;
    let deployment = cache.get_as::<Deployment>(&request.namespace, &request.name)?;
    let mut problems = Vec::new();
    let mut child_writes = Vec::new();
    for (live, desired) in [
        (content.as_ref().map(|c| &c.json), children::content(&site.value)?),
        (deployment.as_ref().map(|d| &d.json), children::deployment(&site.value)?),
    ] {
        let Some(live) = live else {
            child_writes.push(Intent::Create(desired.to_string()));
            continue;
        };
        let mut live: Value = serde_json::from_str(live).map_err(|e| Error::retryable(format!("cached child: {e}")))?;
        if live.get("metadata").and_then(controller_uid) != Some(uid) {
            // Never take over what someone else made: say so in status instead.
            let (kind, name) = (desired["kind"].as_str(), desired["metadata"]["name"].as_str());
            let (kind, name) = (kind.unwrap_or_default(), name.unwrap_or_default());
            problems.push(format!("{kind} {name} exists and is not controlled by this Website"));
        } else if children::converge(&mut live, &desired) {
            child_writes.push(Intent::Update(live.to_string()));
        }
    }
    let pending = !child_writes.is_empty();
    let registry_write = registry_entry(&site, registry.as_ref(), registry_name, Some(&site.value.spec.image))?;
    outcome.push_batch(child_writes.into_iter().chain(registry_write).collect());

    // After the children's writes: a status write is not attempted when they fail.
    let deployment = deployment.as_ref().map(|d| &d.value);
    if let Some(new_status) = status::compute(&site.value, deployment, pending, &problems, request.now) {
        let mut raw = site.raw()?;
        raw["status"] = serde_json::to_value(new_status).map_err(|e| Error::permanent(format!("status: {e}")))?;
        outcome.push_batch(vec![Intent::UpdateStatus(raw.to_string())]);
    }
    Ok(outcome)
}

/// The write that makes the registry hold `image` for this Website (`None`: no entry), if one
/// is needed. The registry is created by the first Website of a namespace and never deleted.
fn registry_entry(
    site: &Object<Website>,
    registry: Option<&Object<ConfigMap>>,
    registry_name: &str,
    image: Option<&str>,
) -> Result<Option<Intent>, Error> {
    let name = site.value.metadata.name.as_deref().unwrap_or_default();
    let current = registry.and_then(|r| r.value.data.as_ref()?.get(name)).map(String::as_str);
    if current == image {
        return Ok(None);
    }
    let Some(registry) = registry else {
        let namespace = site.value.metadata.namespace.as_deref().unwrap_or_default();
        let created = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": registry_name, "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "website"}},
            "data": {name: image},
        });
        return Ok(Some(Intent::Create(created.to_string())));
    };
    let mut raw = registry.raw()?;
    if !raw.get("data").is_some_and(Value::is_object) {
        raw["data"] = serde_json::json!({});
    }
    match image {
        Some(image) => raw["data"][name] = Value::String(image.into()),
        None => {
            if let Some(data) = raw["data"].as_object_mut() {
                data.remove(name);
            }
        }
    }
    Ok(Some(Intent::Update(raw.to_string())))
}

#[cfg(test)]
mod tests;
