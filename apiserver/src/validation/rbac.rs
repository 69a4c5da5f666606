//! Roles, ClusterRoles and their bindings: `pkg/apis/rbac/validation`. Names are path segments,
//! as upstream's ValidateRBACName. It owns rules, role references and subjects; what a rule grants
//! is the authorizer's business (`crate::auth::rbac`), not validation's.

use serde_json::{Map, Value};
use wasmcm_core::validation::dns1123_subdomain;

use super::meta::{NameRule, Scope, meta, path_segment, selector};
use super::{Obj, V, child, go_strings, q, semantic_eq};

pub(crate) fn role(v: &mut V, obj: &Value, old: Option<&Value>, namespaced: bool) {
    let scope = if namespaced { Scope::Namespaced } else { Scope::Cluster };
    meta(v, obj, old, scope, NameRule::PathSegment, false);
    for (path, rule) in v.objs(obj.get("rules"), "rules") {
        policy_rule(v, rule, namespaced, &path);
    }
    if namespaced {
        return;
    }
    if let Some(aggregation) = v.obj(obj.get("aggregationRule"), "aggregationRule") {
        let selectors = v.objs(aggregation.get("clusterRoleSelectors"), "aggregationRule.clusterRoleSelectors");
        if selectors.is_empty() {
            v.required(
                "aggregationRule.clusterRoleSelectors",
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            );
        }
        for (path, sel) in selectors {
            selector(v, sel, &path);
        }
    }
}

fn policy_rule(v: &mut V, rule: &Obj, namespaced: bool, path: &str) {
    let list = |v: &mut V, k: &str| v.str_list(rule.get(k), &child(path, k));
    let (verbs, urls, groups, resources, names) = (
        list(v, "verbs"),
        list(v, "nonResourceURLs"),
        list(v, "apiGroups"),
        list(v, "resources"),
        list(v, "resourceNames"),
    );
    if verbs.is_empty() {
        v.required(&child(path, "verbs"), "verbs must contain at least one value");
    }
    if !urls.is_empty() {
        let field = child(path, "nonResourceURLs");
        if namespaced {
            v.invalid(&field, &go_strings(&urls), "namespaced rules cannot apply to non-resource URLs");
        }
        if !groups.is_empty() || !resources.is_empty() || !names.is_empty() {
            v.invalid(&field, &go_strings(&urls), "rules cannot apply to both regular resources and non-resource URLs");
        }
        return;
    }
    if groups.is_empty() {
        v.required(&child(path, "apiGroups"), "resource rules must supply at least one api group");
    }
    if resources.is_empty() {
        v.required(&child(path, "resources"), "resource rules must supply at least one resource");
    }
}

pub(crate) fn role_binding(v: &mut V, obj: &Value, old: Option<&Value>, namespaced: bool) {
    let scope = if namespaced { Scope::Namespaced } else { Scope::Cluster };
    meta(v, obj, old, scope, NameRule::PathSegment, false);
    let empty = Map::new();
    let role_ref = v.obj(obj.get("roleRef"), "roleRef").unwrap_or(&empty);
    let group = v.string(role_ref.get("apiGroup"), "roleRef.apiGroup");
    if group != "rbac.authorization.k8s.io" {
        v.unsupported("roleRef.apiGroup", &q(group), &["rbac.authorization.k8s.io"]);
    }
    let kind = v.string(role_ref.get("kind"), "roleRef.kind");
    let kinds: &[&str] = if namespaced { &["Role", "ClusterRole"] } else { &["ClusterRole"] };
    if !kinds.contains(&kind) {
        v.unsupported("roleRef.kind", &q(kind), kinds);
    }
    let name = v.string(role_ref.get("name"), "roleRef.name");
    if name.is_empty() {
        v.required("roleRef.name", "");
    } else {
        v.each("roleRef.name", &q(name), path_segment(name, false));
    }
    for (path, subject) in v.objs(obj.get("subjects"), "subjects") {
        let name = v.string(subject.get("name"), &child(&path, "name"));
        if name.is_empty() {
            v.required(&child(&path, "name"), "");
        }
        let group = v.string(subject.get("apiGroup"), &child(&path, "apiGroup"));
        match v.string(subject.get("kind"), &child(&path, "kind")) {
            "ServiceAccount" => {
                if !name.is_empty() {
                    v.each(&child(&path, "name"), &q(name), dns1123_subdomain(name));
                }
                if !group.is_empty() {
                    v.unsupported(&child(&path, "apiGroup"), &q(group), &[""]);
                }
                let ns = v.string(subject.get("namespace"), &child(&path, "namespace"));
                if !namespaced && ns.is_empty() {
                    v.required(&child(&path, "namespace"), "");
                }
            }
            "User" | "Group" if group != "rbac.authorization.k8s.io" => {
                v.unsupported(&child(&path, "apiGroup"), &q(group), &["rbac.authorization.k8s.io"]);
            }
            "User" | "Group" => {}
            other => v.unsupported(&child(&path, "kind"), &q(other), &["ServiceAccount", "User", "Group"]),
        }
    }
    // The role a binding grants is fixed: changing it means a new binding (upstream prints the
    // internal rbac.RoleRef with %#v).
    if let Some(old) = old {
        let old_ref = old.get("roleRef");
        if !semantic_eq(obj.get("roleRef"), old_ref) {
            let field = |k: &str| q(role_ref.get(k).and_then(Value::as_str).unwrap_or(""));
            let shown = format!(
                "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                field("apiGroup"),
                field("kind"),
                field("name")
            );
            v.invalid("roleRef", &shown, "cannot change roleRef");
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::validation::tests::{edit, run};
    use crate::validation::validate_kind as validate;
    use serde_json::json;

    #[test]
    fn roles_and_bindings() {
        let role = json!({"metadata": {"name": "system:reader", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        let creates = [
            ("valid (colons are fine)", json!({}), ""),
            ("slash in name", json!({"/metadata/name": "a/b"}), "Invalid metadata.name"),
            ("no verbs", json!({"/rules/0/verbs": []}), "Required rules[0].verbs"),
            ("no groups", json!({"/rules/0/apiGroups": null}), "Required rules[0].apiGroups"),
            (
                "urls in a namespace",
                json!({"/rules/1": {"verbs": ["get"], "nonResourceURLs": ["/x"]}}),
                "Invalid rules[1].nonResourceURLs",
            ),
        ];
        run("rbac.authorization.k8s.io/v1", "Role", &role, &creates, &[]);
        let cluster_role = json!({"metadata": {"name": "reader"},
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}]});
        let creates = [
            ("urls cluster-wide", json!({}), ""),
            ("both kinds of rule", json!({"/rules/0/resources": ["pods"]}), "Invalid rules[0].nonResourceURLs"),
            ("empty aggregation", json!({"/aggregationRule": {}}), "Required aggregationRule.clusterRoleSelectors"),
        ];
        run("rbac.authorization.k8s.io/v1", "ClusterRole", &cluster_role, &creates, &[]);

        let rb = json!({"metadata": {"name": "read", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "ctl"},
                {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]});
        let creates = [
            ("valid", json!({}), ""),
            (
                "no roleRef",
                json!({"/roleRef": null}),
                "NotSupported roleRef.apiGroup, NotSupported roleRef.kind, Required roleRef.name",
            ),
            ("kind", json!({"/roleRef/kind": "Group"}), "NotSupported roleRef.kind"),
            ("subject kind", json!({"/subjects/0/kind": "Robot"}), "NotSupported subjects[0].kind"),
            ("user group", json!({"/subjects/1/apiGroup": ""}), "NotSupported subjects[1].apiGroup"),
            ("unnamed", json!({"/subjects/0/name": ""}), "Required subjects[0].name"),
        ];
        let updates = [
            ("subjects change", json!({}), json!({"/subjects/1/name": "bob"}), ""),
            ("role changes", json!({}), json!({"/roleRef/name": "writer"}), "Invalid roleRef"),
        ];
        run("rbac.authorization.k8s.io/v1", "RoleBinding", &rb, &creates, &updates);
        let crb = json!({"metadata": {"name": "read"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "ctl", "namespace": "wasmcm"}]});
        let creates = [
            ("valid", json!({}), ""),
            ("role", json!({"/roleRef/kind": "Role"}), "NotSupported roleRef.kind"),
            (
                "service account without namespace",
                json!({"/subjects/0/namespace": null}),
                "Required subjects[0].namespace",
            ),
        ];
        run("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &crb, &creates, &[]);
        let message = &validate(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            &{
                let mut new = rb.clone();
                edit(&mut new, &json!({"/roleRef/name": "writer"}));
                new
            },
            Some(&rb),
        )[0]
        .message;
        assert_eq!(
            message,
            "Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"writer\"}: cannot change roleRef"
        );
    }
}
