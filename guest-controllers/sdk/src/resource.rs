//! Which kind a Rust type is, so typed reads work for custom resources as for built-ins.
//!
//! [`CacheExt`](crate::CacheExt)'s typed reads (`get_as`, `list_as`, `list_controlled_as`)
//! take any type that is a [`Resource`] and deserializes from JSON. Every k8s-openapi type
//! already is one; a plugin's own serde type of its custom resource becomes one with a
//! three-line impl naming the CRD's `apiVersion` and `kind`, and is then read, listed and
//! declared in `describe()` like a Deployment.

use crate::Kind;

/// A type whose objects are of one API kind: what the typed reads need to ask the cache for.
///
/// Implemented for every k8s-openapi resource type; implement it for your custom resource's
/// type with the CRD's group/version and kind:
///
/// ```
/// use serde::Deserialize;
/// use wasmcm_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// use wasmcm_guest::{CacheExt, Kind, MemoryCache, Resource};
///
/// #[derive(Deserialize)]
/// struct Website {
///     metadata: ObjectMeta,
///     spec: WebsiteSpec,
/// }
///
/// #[derive(Deserialize)]
/// struct WebsiteSpec {
///     image: String,
/// }
///
/// impl Resource for Website {
///     fn kind() -> Kind {
///         Kind::new("example.wasmcm.dev/v1", "Website")
///     }
/// }
///
/// let cache = MemoryCache::from_objects(&[serde_json::json!({
///     "apiVersion": "example.wasmcm.dev/v1", "kind": "Website",
///     "metadata": {"name": "blog", "namespace": "web"},
///     "spec": {"image": "nginx:1.27"},
/// })])
/// .unwrap();
/// let blog = cache.get_as::<Website>("web", "blog").unwrap().expect("cached");
/// assert_eq!(blog.value.spec.image, "nginx:1.27");
/// assert_eq!(blog.value.metadata.name.as_deref(), Some("blog"));
/// ```
pub trait Resource {
    /// The kind, as `describe()` declares it and the cache is asked for it.
    ///
    /// ```
    /// use wasmcm_guest::k8s_openapi::api::apps::v1::Deployment;
    /// use wasmcm_guest::{Kind, Resource};
    ///
    /// assert_eq!(Deployment::kind(), Kind::new("apps/v1", "Deployment"));
    /// ```
    fn kind() -> Kind;
}

impl<T: k8s_openapi::Resource> Resource for T {
    fn kind() -> Kind {
        Kind::of::<T>()
    }
}
