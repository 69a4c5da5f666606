//! A request's attributes as kube-apiserver's RequestInfoFactory reads them from the request
//! line: verb (the list, watch and deletecollection forms included), API group and version,
//! namespace, resource, subresource, name, or a non-resource path. Parsed once per request and
//! read by authorization, audit and dispatch, so that they cannot disagree.

use std::collections::HashMap;

use crate::storage::query::query_bool;

/// What a request asks to do: what authorization, audit and dispatch read of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RequestInfo {
    /// False for paths outside the resource API (`/api`, `/apis/apps/v1`, `/version`, ...).
    pub resource_request: bool,
    /// get, list, watch, create, update, patch, delete, deletecollection; for a non-resource
    /// path the lowercased HTTP method.
    pub verb: String,
    pub path: String,
    pub group: String,
    pub version: String,
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// Upstream's `Parts`: the path from the resource on (resource, name, subresource, and
    /// whatever follows, which nothing serves).
    pub parts: Vec<String>,
    /// The path went through `/namespaces/{namespace}/` to another resource, rather than
    /// naming a namespace.
    pub namespaced_path: bool,
}

impl RequestInfo {
    /// Upstream's RequestInfoFactory.NewRequestInfo over a request line.
    pub(crate) fn of_request(method: &str, path: &str, query: &HashMap<String, String>) -> RequestInfo {
        let mut a = RequestInfo { verb: method.to_ascii_lowercase(), path: path.to_string(), ..Default::default() };
        let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        if parts.len() < 3 {
            return a;
        }
        let mut rest: &[&str] = match parts[0] {
            "api" => &parts[1..],
            "apis" if parts.len() >= 4 => {
                a.group = parts[1].to_string();
                &parts[2..]
            }
            _ => return a,
        };
        a.resource_request = true;
        a.version = rest[0].to_string();
        rest = &rest[1..];
        // The deprecated /watch/ prefix makes any GET a watch.
        let mut verb = match method {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "",
        };
        if rest.first() == Some(&"watch") {
            verb = "watch";
            rest = &rest[1..];
        }
        if rest.first() == Some(&"namespaces")
            && let Some(ns) = rest.get(1)
        {
            a.namespace = ns.to_string();
            // /namespaces/{ns}/status and /finalize are subresources of the namespace itself.
            if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
                rest = &rest[2..];
                a.namespaced_path = true;
            }
        }
        a.resource = rest.first().map(|s| s.to_string()).unwrap_or_default();
        a.name = rest.get(1).map(|s| s.to_string()).unwrap_or_default();
        a.subresource = rest.get(2).map(|s| s.to_string()).unwrap_or_default();
        a.parts = rest.iter().map(|s| s.to_string()).collect();
        if a.name.is_empty() && verb == "get" {
            verb = if query_bool(query, "watch") { "watch" } else { "list" };
            // A list or watch of one object by name is authorized as that object.
            if let Some(name) = query.get("fieldSelector").and_then(|s| exact_name(s)) {
                a.name = name;
            }
        }
        if a.name.is_empty() && verb == "delete" {
            verb = "deletecollection";
        }
        a.verb = verb.to_string();
        a
    }
}

/// `fieldSelector.RequiresExactMatch("metadata.name")`, for names valid as a path segment.
pub(crate) fn exact_name(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        if term.contains("!=") {
            return None;
        }
        let (field, value) = term.split_once("==").or_else(|| term.split_once('='))?;
        (field.trim() == "metadata.name"
            && !matches!(value, "." | "..")
            && !value.contains('/')
            && !value.contains('%'))
        .then(|| value.to_string())
    })
}
