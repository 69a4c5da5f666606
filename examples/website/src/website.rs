//! The custom resource as this plugin reads it: a serde type per the CRD's schema
//! (`deploy/crd.yaml`), made readable from the cache by implementing [`Resource`].

use serde::{Deserialize, Serialize};
use wasmcm_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use wasmcm_guest::{Kind, Resource};

/// A static site: `kubectl get websites` lists them.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Website {
    /// Name, namespace, uid, generation, finalizers, deletionTimestamp.
    pub metadata: ObjectMeta,
    /// What the user asks for.
    pub spec: WebsiteSpec,
    /// What the plugin reports; absent until its first status write.
    #[serde(default)]
    pub status: Option<WebsiteStatus>,
}

impl Resource for Website {
    fn kind() -> Kind {
        Kind::new("example.wasmcm.dev/v1", "Website")
    }
}

/// `spec`: the CRD requires `image` and defaults `replicas` to 1 and `content` to "".
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct WebsiteSpec {
    /// An image serving `/usr/share/nginx/html`, such as nginx.
    pub image: String,
    /// How many pods serve the site.
    #[serde(default = "one")]
    pub replicas: i32,
    /// The page, served as `index.html`.
    #[serde(default)]
    pub content: String,
}

fn one() -> i32 {
    1
}

/// `status`, written through the status subresource.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WebsiteStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Pods of the site's Deployment.
    #[serde(default)]
    pub replicas: i32,
    /// Of them, those ready (the `Ready` printer column).
    #[serde(default)]
    pub ready_replicas: i32,
    /// Of them, those running the current spec.
    #[serde(default)]
    pub updated_replicas: i32,
    /// `Ready` and `Progressing`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
