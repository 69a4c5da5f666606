//! Kinds resolved to the resources that serve them, through the API's discovery, once per
//! kind: the informers and the writer ask the same cache.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kube::api::{ApiResource, GroupVersionKind};
use wasmcm_core::Kind;

/// A resource, whether its objects live in namespaces, and its subresources (`status`,
/// `scale`, ...).
#[derive(Clone, Debug)]
pub struct Resource {
    pub api: ApiResource,
    pub namespaced: bool,
    pub subresources: Vec<String>,
}

#[derive(Clone)]
pub struct Discovery {
    client: kube::Client,
    resolved: Arc<Mutex<BTreeMap<Kind, Resource>>>,
}

impl Discovery {
    pub fn new(client: kube::Client) -> Self {
        Discovery { client, resolved: Arc::default() }
    }

    /// The resource serving `kind`, or why the cluster serves none.
    pub async fn resolve(&self, kind: &Kind) -> Result<Resource, String> {
        if let Some(r) = self.resolved.lock().unwrap_or_else(|e| e.into_inner()).get(kind) {
            return Ok(r.clone());
        }
        let (group, version) = kind.api_version.split_once('/').unwrap_or(("", kind.api_version.as_str()));
        let gvk = GroupVersionKind::gvk(group, version, &kind.kind);
        let (api, caps) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|e| format!("kind {kind} is not served by the cluster: {e}"))?;
        let resource = Resource {
            api,
            namespaced: caps.scope == kube::discovery::Scope::Namespaced,
            subresources: caps.subresources.into_iter().map(|(sub, _)| sub.plural).collect(),
        };
        self.resolved.lock().unwrap_or_else(|e| e.into_inner()).insert(kind.clone(), resource.clone());
        Ok(resource)
    }
}
