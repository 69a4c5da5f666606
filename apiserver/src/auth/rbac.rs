//! Authorization of the embedded API server, as kube-apiserver's RBAC authorizer decides it:
//! the request's attributes (a port of apiserver's RequestInfoFactory: verb, API group,
//! resource, subresource, name, namespace, or a non-resource path), the rules that apply to
//! the user from the stored ClusterRoleBindings and the namespace's RoleBindings, and the 403
//! a denied request gets, worded as upstream's.
//!
//! Rules are read from the store on every request, so role and binding changes apply to the
//! next request with nothing to invalidate. ClusterRole aggregation is not run: an aggregated
//! ClusterRole grants the rules stored in it. The default policy (system:discovery,
//! system:basic-user, cluster-admin, ...) is stored at start by `bootstrap`, so it is read,
//! listed and changed as any other; members of system:masters (the kubeconfig's admin) are
//! allowed everything besides, as upstream's privileged-group authorizer does.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::State;
use crate::request_info::RequestInfo;
use crate::storage::change::Key;
use crate::storage::query::Filter;
use crate::user::UserInfo;
use wasmcm_core::{ApiError, Details, str_at};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const PRIVILEGED_GROUP: &str = "system:masters";

/// The outcome, with upstream's reason: which binding allowed it, or why rules could not be
/// read (a binding naming a missing role).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// One binding's grant to the user: where it comes from, as upstream describes it, and the
/// rules of the role it references.
struct Grant {
    source: String,
    role: Arc<Value>,
}

impl Grant {
    fn rules(&self) -> impl Iterator<Item = &Value> {
        self.role.get("rules").and_then(Value::as_array).into_iter().flatten()
    }
}

/// Go's `%q` for the names in messages.
fn q(s: &str) -> String {
    format!("{s:?}")
}

/// The first subject of `binding` that is the user (`binding_namespace` is where a
/// ServiceAccount without a namespace lives: the RoleBinding's).
fn subject_for<'a>(user: &UserInfo, binding: &'a Value, binding_namespace: &str) -> Option<&'a Value> {
    binding.get("subjects").and_then(Value::as_array)?.iter().find(|s| {
        let name = str_at(s, "/name");
        match str_at(s, "/kind") {
            "User" => user.name == name,
            "Group" => user.groups.iter().any(|g| g == name),
            "ServiceAccount" => {
                let ns = match str_at(s, "/namespace") {
                    "" => binding_namespace,
                    ns => ns,
                };
                !ns.is_empty() && user.name == format!("system:serviceaccount:{ns}:{name}")
            }
            _ => false,
        }
    })
}

fn describe_subject(subject: &Value, binding_namespace: &str) -> String {
    let (kind, name) = (str_at(subject, "/kind"), str_at(subject, "/name"));
    match (kind, str_at(subject, "/namespace")) {
        ("ServiceAccount", "") => format!("{kind} {}", q(&format!("{name}/{binding_namespace}"))),
        ("ServiceAccount", ns) => format!("{kind} {}", q(&format!("{name}/{ns}"))),
        _ => format!("{kind} {}", q(name)),
    }
}

/// The role a binding references, or upstream's lister error.
fn role_of(state: &State, binding: &Value, binding_namespace: &str) -> Result<Arc<Value>, String> {
    let name = str_at(binding, "/roleRef/name");
    let (resource, namespace) = match str_at(binding, "/roleRef/kind") {
        "Role" => ("roles", binding_namespace),
        "ClusterRole" => ("clusterroles", ""),
        other => return Err(format!("unsupported role reference kind: {}", q(other))),
    };
    let key = Key { id: format!("{RBAC_GROUP}/{resource}"), namespace: namespace.into(), name: name.into() };
    state.store.get(&key).ok_or_else(|| {
        let singular = resource.trim_end_matches('s');
        format!("{singular}.{RBAC_GROUP} {} not found", q(name))
    })
}

/// Every grant to `user` that counts in `namespace` ("" for cluster-scoped requests and
/// non-resource paths), in upstream's order: ClusterRoleBindings, then the namespace's
/// RoleBindings. Also the errors met resolving them.
fn grants(state: &State, user: &UserInfo, namespace: &str) -> (Vec<Grant>, Vec<String>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let id = format!("{RBAC_GROUP}/clusterrolebindings");
    for binding in state.store.list(&id, None, &Filter::for_type(&id)).0 {
        let Some(subject) = subject_for(user, &binding, "") else { continue };
        match role_of(state, &binding, "") {
            Ok(role) => out.push(Grant {
                source: format!(
                    "ClusterRoleBinding {} of {} {} to {}",
                    q(str_at(&binding, "/metadata/name")),
                    str_at(&binding, "/roleRef/kind"),
                    q(str_at(&binding, "/roleRef/name")),
                    describe_subject(subject, "")
                ),
                role,
            }),
            Err(e) => errors.push(e),
        }
    }
    if namespace.is_empty() {
        return (out, errors);
    }
    let id = format!("{RBAC_GROUP}/rolebindings");
    for binding in state.store.list(&id, Some(namespace), &Filter::for_type(&id)).0 {
        let Some(subject) = subject_for(user, &binding, namespace) else { continue };
        match role_of(state, &binding, namespace) {
            Ok(role) => out.push(Grant {
                source: format!(
                    "RoleBinding {} of {} {} to {}",
                    q(&format!("{}/{namespace}", str_at(&binding, "/metadata/name"))),
                    str_at(&binding, "/roleRef/kind"),
                    q(str_at(&binding, "/roleRef/name")),
                    describe_subject(subject, namespace)
                ),
                role,
            }),
            Err(e) => errors.push(e),
        }
    }
    (out, errors)
}

fn strings<'a>(rule: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    rule.get(field).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
}

fn has(rule: &Value, field: &str, wanted: &str) -> bool {
    strings(rule, field).any(|v| v == "*" || v == wanted)
}

/// Upstream's RuleAllows with VerbMatches, APIGroupMatches, ResourceMatches (including
/// `*/subresource`), ResourceNameMatches and NonResourceURLMatches (trailing `*` prefixes).
fn rule_allows(a: &RequestInfo, rule: &Value) -> bool {
    if !has(rule, "verbs", &a.verb) {
        return false;
    }
    if !a.resource_request {
        return strings(rule, "nonResourceURLs").any(|url| {
            url == "*" || url == a.path || url.strip_suffix('*').is_some_and(|prefix| a.path.starts_with(prefix))
        });
    }
    let combined =
        if a.subresource.is_empty() { a.resource.clone() } else { format!("{}/{}", a.resource, a.subresource) };
    let resource_matches = strings(rule, "resources").any(|r| {
        r == "*" || r == combined || (!a.subresource.is_empty() && r.strip_prefix("*/") == Some(&a.subresource))
    });
    // A rule naming objects never matches a request without a name (create, list).
    let names_match = rule.get("resourceNames").and_then(Value::as_array).is_none_or(Vec::is_empty)
        || strings(rule, "resourceNames").any(|n| n == a.name);
    has(rule, "apiGroups", &a.group) && resource_matches && names_match
}

/// Whether `user` may do what `a` describes.
pub(crate) fn authorize(state: &State, user: &UserInfo, a: &RequestInfo) -> Decision {
    if user.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
        return Decision { allowed: true, reason: String::new() };
    }
    let (grants, errors) = grants(state, user, if a.resource_request { &a.namespace } else { "" });
    if let Some(grant) = grants.iter().find(|g| g.rules().any(|r| rule_allows(a, r))) {
        return Decision { allowed: true, reason: format!("RBAC: allowed by {}", grant.source) };
    }
    let reason = match errors.as_slice() {
        [] => String::new(),
        [one] => format!("RBAC: {one}"),
        many => format!("RBAC: [{}]", many.join(", ")),
    };
    Decision { allowed: false, reason }
}

/// The rules `user` holds in `namespace`, for SelfSubjectRulesReview: (resource rules,
/// non-resource rules, evaluation errors).
pub(crate) fn rules_for(state: &State, user: &UserInfo, namespace: &str) -> (Vec<Value>, Vec<Value>, Vec<String>) {
    let (grants, errors) = grants(state, user, namespace);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    if user.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
        // What the cluster-admin ClusterRole bound to system:masters upstream grants.
        resource_rules.push(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        non_resource_rules.push(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
    }
    for rule in grants.iter().flat_map(Grant::rules) {
        let pick = |fields: &[&str]| {
            let mut out = serde_json::Map::new();
            for f in fields {
                if let Some(v) = rule.get(*f).filter(|v| v.as_array().is_some_and(|a| !a.is_empty())) {
                    out.insert((*f).into(), v.clone());
                }
            }
            Value::Object(out)
        };
        if rule.get("nonResourceURLs").and_then(Value::as_array).is_some_and(|a| !a.is_empty()) {
            non_resource_rules.push(pick(&["verbs", "nonResourceURLs"]));
        } else {
            resource_rules.push(pick(&["verbs", "apiGroups", "resources", "resourceNames"]));
        }
    }
    (resource_rules, non_resource_rules, errors)
}

/// The 403 of a denied request: upstream's `responsewriters.Forbidden` with
/// `apierrors.NewForbidden`.
pub(crate) fn forbidden(user: &UserInfo, a: &RequestInfo, reason: &str) -> ApiError {
    let what = if !a.resource_request {
        format!("User {} cannot {} path {}", q(&user.name), a.verb, q(&a.path))
    } else {
        let resource =
            if a.subresource.is_empty() { a.resource.clone() } else { format!("{}/{}", a.resource, a.subresource) };
        let scope = if a.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {}", q(&a.namespace))
        };
        format!(
            "User {} cannot {} resource {} in API group {} {scope}",
            q(&user.name),
            a.verb,
            q(&resource),
            q(&a.group)
        )
    };
    // Upstream escapes these so the message is safe to show in HTML.
    let what = what.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let err = if reason.is_empty() { what } else { format!("{what}: {reason}") };
    if !a.resource_request {
        let details = Details { name: a.name.clone(), ..Default::default() };
        return ApiError { details: Some(Box::new(details)), ..ApiError::forbidden(format!("forbidden: {err}")) };
    }
    ApiError::forbidden_on(&a.group, &a.resource, &a.name, &err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(method: &str, path: &str, query: &[(&str, &str)]) -> RequestInfo {
        let query = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        RequestInfo::of_request(method, path, &query)
    }

    #[test]
    fn request_attributes_follow_request_info() {
        let a = attrs("GET", "/api/v1/namespaces/default/pods", &[]);
        assert_eq!((a.verb.as_str(), a.resource.as_str(), a.namespace.as_str()), ("list", "pods", "default"));
        assert!(a.resource_request);
        let a = attrs("GET", "/api/v1/pods", &[("watch", "true")]);
        assert_eq!((a.verb.as_str(), a.namespace.as_str()), ("watch", ""));
        let a = attrs("GET", "/api/v1/namespaces/ns/pods", &[("watch", "1"), ("fieldSelector", "metadata.name=p")]);
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("watch", "p"));
        // As upstream's parameter codec: only `0` and `false` (any case) are false.
        for (watch, verb) in [("yes", "watch"), ("", "watch"), ("True", "watch"), ("FALSE", "list"), ("0", "list")] {
            assert_eq!(attrs("GET", "/api/v1/pods", &[("watch", watch)]).verb, verb, "watch={watch:?}");
        }
        let a = attrs("GET", "/api/v1/watch/namespaces/ns/pods/p", &[]);
        assert_eq!(
            (a.verb.as_str(), a.namespace.as_str(), a.resource.as_str(), a.name.as_str()),
            ("watch", "ns", "pods", "p")
        );
        let a = attrs("PUT", "/apis/apps/v1/namespaces/default/replicasets/web/status", &[]);
        assert_eq!(
            (a.verb.as_str(), a.group.as_str(), a.resource.as_str(), a.name.as_str(), a.subresource.as_str()),
            ("update", "apps", "replicasets", "web", "status")
        );
        let a = attrs("DELETE", "/api/v1/namespaces/default/configmaps", &[]);
        assert_eq!(a.verb, "deletecollection");
        let a = attrs("POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", &[]);
        assert_eq!(
            (a.verb.as_str(), a.resource.as_str(), a.subresource.as_str()),
            ("create", "serviceaccounts", "token")
        );
        // A namespace is its own namespace; its status is a subresource, not a resource type.
        let a = attrs("GET", "/api/v1/namespaces/team", &[]);
        assert_eq!((a.resource.as_str(), a.name.as_str(), a.namespace.as_str()), ("namespaces", "team", "team"));
        let a = attrs("PUT", "/api/v1/namespaces/team/status", &[]);
        assert_eq!((a.resource.as_str(), a.subresource.as_str()), ("namespaces", "status"));
        for path in ["/api", "/api/v1", "/apis/apps/v1", "/version", "/openapi/v3/apis/apps/v1"] {
            let a = attrs("GET", path, &[]);
            assert!(!a.resource_request, "{path}");
            assert_eq!(a.verb, "get");
        }
    }

    #[test]
    fn rules_match_as_upstream() {
        let get = attrs("GET", "/apis/apps/v1/namespaces/ns/deployments/web", &[]);
        let status = attrs("PUT", "/apis/apps/v1/namespaces/ns/replicasets/web/status", &[]);
        let create = attrs("POST", "/apis/apps/v1/namespaces/ns/deployments", &[]);
        let deployments = json!({"verbs": ["get", "create"], "apiGroups": ["apps"], "resources": ["deployments"]});
        assert!(rule_allows(&get, &deployments) && rule_allows(&create, &deployments));
        assert!(!rule_allows(&status, &deployments));
        let wild = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]});
        assert!(rule_allows(&status, &wild));
        let any_status = json!({"verbs": ["update"], "apiGroups": ["apps"], "resources": ["*/status"]});
        assert!(rule_allows(&status, &any_status));
        let rs_status = json!({"verbs": ["update"], "apiGroups": ["apps"], "resources": ["replicasets/status"]});
        assert!(rule_allows(&status, &rs_status));
        let core = json!({"verbs": ["get", "create"], "apiGroups": [""], "resources": ["deployments"]});
        assert!(!rule_allows(&get, &core));
        let named = json!({"verbs": ["get", "create"], "apiGroups": ["apps"], "resources": ["deployments"],
            "resourceNames": ["web"]});
        assert!(rule_allows(&get, &named) && !rule_allows(&create, &named));
        let other = json!({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments"],
            "resourceNames": ["api"]});
        assert!(!rule_allows(&get, &other));
        let urls = json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*", "/version"]});
        assert!(rule_allows(&attrs("GET", "/apis/apps/v1", &[]), &urls));
        assert!(rule_allows(&attrs("GET", "/version", &[]), &urls));
        assert!(!rule_allows(&attrs("GET", "/metrics", &[]), &urls));
        assert!(!rule_allows(&get, &urls), "non-resource rules never grant resources");
    }

    #[test]
    fn forbidden_messages_are_upstreams() {
        let user = UserInfo {
            name: "system:serviceaccount:wasmcm:wasmcm".into(),
            uid: String::new(),
            groups: vec!["system:authenticated".into()],
        };
        let e = forbidden(&user, &attrs("PUT", "/apis/apps/v1/namespaces/default/replicasets/web/status", &[]), "");
        assert_eq!(
            e.to_status(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"replicasets.apps \"web\" is forbidden: User \"system:serviceaccount:wasmcm:wasmcm\" cannot update resource \"replicasets/status\" in API group \"apps\" in the namespace \"default\"","reason":"Forbidden","details":{"name":"web","group":"apps","kind":"replicasets"},"code":403})
        );
        let e = forbidden(&user, &attrs("GET", "/api/v1/pods", &[]), "");
        assert_eq!(
            e.message,
            "pods is forbidden: User \"system:serviceaccount:wasmcm:wasmcm\" cannot list resource \"pods\" in API group \"\" at the cluster scope"
        );
        let e = forbidden(&user, &attrs("GET", "/metrics", &[]), "");
        assert_eq!(e.message, "forbidden: User \"system:serviceaccount:wasmcm:wasmcm\" cannot get path \"/metrics\"");
        assert_eq!(e.to_status()["details"], json!({}));
    }
}
