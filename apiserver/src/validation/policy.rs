//! PodDisruptionBudgets: `pkg/apis/policy/validation`. It owns the budget's spec; the selector format
//! is `meta`'s and the int-or-percent rule `apps`', as upstream borrows them.

use serde_json::{Map, Value};

use super::apps::int_or_percent;
use super::meta::{NameRule, Scope, meta, selector};
use super::{V, child, json_short, q};

pub(crate) fn pod_disruption_budget(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    let empty = Map::new();
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);
    let set = |k: &str| spec.get(k).is_some_and(|x| !x.is_null());
    if set("minAvailable") && set("maxUnavailable") {
        let shown = json_short(&Value::Object(spec.clone()));
        v.invalid("spec", &shown, "minAvailable and maxUnavailable cannot be both set");
    }
    for field in ["minAvailable", "maxUnavailable"] {
        if !set(field) {
            continue;
        }
        let path = child("spec", field);
        if let Some(n) = int_or_percent(v, spec.get(field), &path)
            && n.percent().is_some_and(|p| p > 100)
        {
            v.invalid(&path, &n.shown(), "must not be greater than 100%");
        }
    }
    if let Some(sel) = v.obj(spec.get("selector"), "spec.selector") {
        selector(v, sel, "spec.selector");
    }
    let policy = v.string(spec.get("unhealthyPodEvictionPolicy"), "spec.unhealthyPodEvictionPolicy");
    if !policy.is_empty() && !["AlwaysAllow", "IfHealthyBudget"].contains(&policy) {
        v.unsupported("spec.unhealthyPodEvictionPolicy", &q(policy), &["AlwaysAllow", "IfHealthyBudget"]);
    }
}

#[cfg(test)]
mod tests {
    use crate::validation::tests::run;
    use serde_json::json;

    #[test]
    fn disruption_budgets() {
        let pdb = json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}});
        let creates = [
            ("valid", json!({}), ""),
            ("both", json!({"/spec/maxUnavailable": 1}), "Invalid spec"),
            ("over 100%", json!({"/spec/minAvailable": "150%"}), "Invalid spec.minAvailable"),
            ("negative", json!({"/spec/minAvailable": -1}), "Invalid spec.minAvailable"),
            (
                "policy",
                json!({"/spec/unhealthyPodEvictionPolicy": "Never"}),
                "NotSupported spec.unhealthyPodEvictionPolicy",
            ),
        ];
        run("policy/v1", "PodDisruptionBudget", &pdb, &creates, &[]);
    }
}
