//! Leases: `pkg/apis/coordination/validation`. It owns the lease spec; metadata is `meta`'s.

use serde_json::Value;

use super::V;
use super::meta::{NameRule, Scope, meta};

pub(crate) fn lease(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    let Some(spec) = v.obj(obj.get("spec"), "spec") else { return };
    if let Some(d) = v.int(spec.get("leaseDurationSeconds"), "spec.leaseDurationSeconds").filter(|d| *d <= 0) {
        v.invalid("spec.leaseDurationSeconds", &d.to_string(), "must be greater than 0");
    }
    let transitions = v.int(spec.get("leaseTransitions"), "spec.leaseTransitions");
    v.nonnegative("spec.leaseTransitions", transitions);
}

#[cfg(test)]
mod tests {
    use crate::validation::tests::run;
    use serde_json::json;

    #[test]
    fn leases() {
        let lease = json!({"metadata": {"name": "ctl", "namespace": "kube-system"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 0}});
        let creates = [
            ("valid", json!({}), ""),
            ("zero duration", json!({"/spec/leaseDurationSeconds": 0}), "Invalid spec.leaseDurationSeconds"),
            ("no duration", json!({"/spec/leaseDurationSeconds": null}), ""),
            ("negative transitions", json!({"/spec/leaseTransitions": -1}), "Invalid spec.leaseTransitions"),
        ];
        let renew = json!({"/spec/renewTime": "2024-01-01T00:00:00.000000Z"});
        run("coordination.k8s.io/v1", "Lease", &lease, &creates, &[("renew", json!({}), renew, "")]);
    }
}
