//! The Website's children as it wants them, and how a live child is brought back to that
//! without touching what others (the API server's defaults, other controllers, users) set.

use serde_json::{Value, json};
use wasmcm_guest::ownership::new_controller_ref;
use wasmcm_guest::{Error, Resource};

use crate::{VERSION, Website};

/// Marks every child with the release that last wrote it.
pub const VERSION_ANNOTATION: &str = "example.wasmcm.dev/controller-version";

/// The container serving the site, in the Deployment's pod template.
pub const CONTAINER: &str = "web";

/// The ConfigMap holding a Website's page.
pub fn content_name(website: &str) -> String {
    format!("{website}-content")
}

/// The page as served: the spec's content, and from release 0.2.0 on a footer naming the
/// release (the visible difference of the second version).
pub fn page(site: &Website) -> String {
    match cfg!(feature = "v2") {
        true => format!("{}\n<footer>served by website {VERSION}</footer>\n", site.spec.content),
        false => site.spec.content.clone(),
    }
}

/// The labels of the site's pods, which the Deployment selects by.
fn pod_labels(name: &str) -> Value {
    json!({"app.kubernetes.io/name": "website", "app.kubernetes.io/instance": name})
}

/// Metadata of a child: named after the site, in its namespace, controlled by it.
fn metadata(site: &Website, name: &str) -> Result<Value, Error> {
    let owner = new_controller_ref(&Website::kind().api_version, &Website::kind().kind, &site.metadata);
    let owner = serde_json::to_value(owner).map_err(|e| Error::permanent(format!("ownerReference: {e}")))?;
    let site_name = site.metadata.name.as_deref().unwrap_or_default();
    let mut labels = pod_labels(site_name);
    labels["app.kubernetes.io/managed-by"] = json!("website");
    Ok(json!({
        "name": name,
        "namespace": site.metadata.namespace,
        "labels": labels,
        "annotations": {VERSION_ANNOTATION: VERSION},
        "ownerReferences": [owner],
    }))
}

/// The ConfigMap `<name>-content` with the page as `index.html`.
pub fn content(site: &Website) -> Result<Value, Error> {
    let name = content_name(site.metadata.name.as_deref().unwrap_or_default());
    Ok(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(site, &name)?,
        "data": {"index.html": page(site)},
    }))
}

/// The Deployment `<name>`: `spec.replicas` pods of `spec.image` serving the content
/// ConfigMap from nginx's document root.
pub fn deployment(site: &Website) -> Result<Value, Error> {
    let name = site.metadata.name.as_deref().unwrap_or_default();
    Ok(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(site, name)?,
        "spec": {
            "replicas": site.spec.replicas,
            "selector": {"matchLabels": pod_labels(name)},
            "template": {
                "metadata": {"labels": pod_labels(name)},
                "spec": {
                    "containers": [{
                        "name": CONTAINER,
                        "image": site.spec.image,
                        "ports": [{"name": "http", "containerPort": 80}],
                        "volumeMounts": [{"name": "content", "mountPath": "/usr/share/nginx/html", "readOnly": true}],
                    }],
                    "volumes": [{"name": "content", "configMap": {"name": content_name(name)}}],
                },
            },
        },
    }))
}

/// Sets in `live` the fields this plugin owns, from `desired` (both of one kind); returns
/// whether anything changed, i.e. whether an update is needed. A comparison of whole objects
/// would never settle: the API server adds defaults and status, and others may add labels.
pub fn converge(live: &mut Value, desired: &Value) -> bool {
    let before = live.clone();
    for map in ["labels", "annotations"] {
        if let Some(want) = desired["metadata"][map].as_object() {
            if !live["metadata"][map].is_object() {
                live["metadata"][map] = json!({});
            }
            for (k, v) in want {
                live["metadata"][map][k] = v.clone();
            }
        }
    }
    match desired["kind"].as_str() {
        Some("ConfigMap") => live["data"] = desired["data"].clone(),
        Some("Deployment") => {
            live["spec"]["replicas"] = desired["spec"]["replicas"].clone();
            let image = desired["spec"]["template"]["spec"]["containers"][0]["image"].clone();
            let containers = live.pointer_mut("/spec/template/spec/containers").and_then(Value::as_array_mut);
            match containers.and_then(|cs| cs.iter_mut().find(|c| c["name"] == CONTAINER)) {
                Some(container) => container["image"] = image,
                // Someone removed ours: the template as this plugin makes it.
                None => live["spec"]["template"] = desired["spec"]["template"].clone(),
            }
        }
        _ => {}
    }
    *live != before
}
