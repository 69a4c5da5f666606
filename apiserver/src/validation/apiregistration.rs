//! APIServices: kube-aggregator's `pkg/apis/apiregistration/validation`. It owns the name
//! (`<version>.<group>`, which the spec must match) and the priorities.

use serde_json::{Map, Value};

use super::meta::{NameRule, Scope, meta};
use super::{V, q};

pub(crate) fn api_service(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Cluster, NameRule::PathSegment, false);
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let Some((version, group)) = name.split_once('.') else {
        if !name.is_empty() {
            v.invalid("metadata.name", &q(name), "name must be version.group");
        }
        return;
    };
    let empty = Map::new();
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);
    let spec_version = v.string(spec.get("version"), "spec.version");
    let spec_group = v.string(spec.get("group"), "spec.group");
    if spec_version.is_empty() {
        v.required("spec.version", "");
    }
    if spec_version != version {
        v.invalid(
            "metadata.name",
            &q(name),
            &format!("must be spec.version+\".\"+spec.group: {:?}", format!("{spec_version}.{spec_group}")),
        );
    }
    if spec_group != group {
        v.invalid(
            "metadata.name",
            &q(name),
            &format!("must be spec.version+\".\"+spec.group: {:?}", format!("{spec_version}.{spec_group}")),
        );
    }
    match v.int(spec.get("groupPriorityMinimum"), "spec.groupPriorityMinimum") {
        Some(p) if p <= 0 => {
            v.invalid("spec.groupPriorityMinimum", &p.to_string(), "must be positive and less than 20000")
        }
        Some(p) if p > 20000 => {
            v.invalid("spec.groupPriorityMinimum", &p.to_string(), "must be positive and less than 20000")
        }
        _ => {}
    }
    match v.int(spec.get("versionPriority"), "spec.versionPriority") {
        Some(p) if p <= 0 => v.invalid("spec.versionPriority", &p.to_string(), "must be positive and less than 1000"),
        Some(p) if p > 1000 => v.invalid("spec.versionPriority", &p.to_string(), "must be positive and less than 1000"),
        _ => {}
    }
}
