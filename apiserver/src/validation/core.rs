//! The core (`v1`) kinds other than Pods and Events: Namespaces, Nodes, ServiceAccounts,
//! ConfigMaps, Secrets and Services, as `pkg/apis/core/validation/validation.go` checks them, with
//! the update rules of their registry strategies. Pods (`pods`) and Events (`events`, upstream's
//! `events.go`) are of the same group, in files of their own.
//!
//! It owns these kinds' own fields; metadata is `meta`'s. The config-key format lives here since
//! ConfigMaps and Secrets define it (pods' env references use it too).

use serde_json::{Map, Value};
use wasmcm_core::validation::{dns1123_label, dns1123_subdomain, label_value, max_len, qualified_name, regex_error};

use super::meta::{NameRule, Scope, kube_finalizer, labels, meta};
use super::{
    DUPLICATE, V, child, deep_empty, go_strings, idx, json_short, key, one_of, port_name, port_number, q, semantic_eq,
    text,
};

pub(super) const MAX_SECRET_SIZE: usize = 1024 * 1024;

/// A taint's effect; pods' tolerations accept the same ones.
pub(super) fn taint_effect(v: &mut V, effect: &str, field: &str) {
    one_of(v, field, effect, &["NoSchedule", "PreferNoSchedule", "NoExecute"]);
}

pub(super) fn config_key(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len(253));
    }
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')) {
        let msg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
        errs.push(regex_error(msg, "[-._a-zA-Z0-9]+", &["key.name", "KEY_NAME", "key-name"]));
    }
    match s {
        "." => errs.push("must not be '.'".into()),
        ".." => errs.push("must not be '..'".into()),
        _ if s.starts_with("..") => errs.push("must not start with '..'".into()),
        _ => {}
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// The other core kinds.

pub(crate) fn namespace(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Cluster, NameRule::Label, true);
    let path = "spec.finalizers";
    for f in v.str_list(obj.pointer("/spec/finalizers"), path) {
        v.each(path, &q(f), qualified_name(f));
        kube_finalizer(v, f, path);
    }
}

pub(crate) fn node(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Cluster, NameRule::Subdomain, true);
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (tpath, t) in v.objs(obj.pointer("/spec/taints"), "spec.taints") {
        let k = v.string(t.get("key"), &child(&tpath, "key"));
        v.each(&child(&tpath, "key"), &q(k), qualified_name(k));
        let value = v.string(t.get("value"), &child(&tpath, "value"));
        let errs = label_value(value);
        if !errs.is_empty() {
            v.invalid(&child(&tpath, "value"), &q(value), &errs.join(";"));
        }
        let effect = v.string(t.get("effect"), &child(&tpath, "effect"));
        taint_effect(v, effect, &child(&tpath, "effect"));
        if seen.contains(&(k, effect)) {
            let shown = json_short(&Value::Object(t.clone()));
            v.add(DUPLICATE, &tpath, format!("Duplicate value: {shown}: taints must be unique by key and effect pair"));
        } else {
            seen.push((k, effect));
        }
    }
}

pub(crate) fn service_account(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
}

pub(crate) fn config_map(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    let data = v.str_map(obj.get("data"), "data").unwrap_or_default();
    let binary = v.str_map(obj.get("binaryData"), "binaryData").unwrap_or_default();
    let mut total = 0;
    for (k, value) in &data {
        v.each(&key("data", k), &q(k), config_key(k));
        if binary.iter().any(|(b, _)| b == k) {
            v.invalid(&key("data", k), &q(k), "duplicate of key present in binaryData");
        }
        total += value.len();
    }
    for (k, value) in &binary {
        v.each(&key("binaryData", k), &q(k), config_key(k));
        total += decoded_len(v, value, &key("binaryData", k));
    }
    if total > MAX_SECRET_SIZE {
        v.too_long("", MAX_SECRET_SIZE);
    }
    immutable_contents(v, obj, old, &["data", "binaryData"]);
}

pub(crate) fn secret(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    // Defaulting folds stringData into data; what is left here did not convert.
    let _ = v.str_map(obj.get("stringData"), "stringData");
    let data = v.str_map(obj.get("data"), "data").unwrap_or_default();
    let mut total = 0;
    for (k, value) in &data {
        v.each(&key("data", k), &q(k), config_key(k));
        total += decoded_len(v, value, &key("data", k));
    }
    if total > MAX_SECRET_SIZE {
        v.too_long("data", MAX_SECRET_SIZE);
    }
    let has = |k: &str| data.iter().any(|(name, _)| *name == k);
    let kind = v.string(obj.get("type"), "type");
    let missing: &[&str] = match kind {
        "kubernetes.io/service-account-token" => {
            if text(Some(obj), "/metadata/annotations/kubernetes.io~1service-account.name").is_empty() {
                v.required("metadata.annotations[kubernetes.io/service-account.name]", "");
            }
            &[]
        }
        "kubernetes.io/dockercfg" if !has(".dockercfg") => &[".dockercfg"],
        "kubernetes.io/dockerconfigjson" if !has(".dockerconfigjson") => &[".dockerconfigjson"],
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => &["username", "password"],
        "kubernetes.io/ssh-auth" if data.iter().all(|(k, val)| *k != "ssh-privatekey" || val.is_empty()) => {
            &["ssh-privatekey"]
        }
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        _ => &[],
    };
    for k in missing.iter().filter(|k| !(kind == "kubernetes.io/tls" && has(k))) {
        v.required(&key("data", k), "");
    }
    if let Some(old) = old {
        let old_type = text(Some(old), "/type");
        if !kind.is_empty() && kind != old_type {
            v.invalid("type", &q(kind), "field is immutable");
        }
    }
    immutable_contents(v, obj, old, &["data"]);
}

/// Length of base64 data once decoded; invalid base64 is what the real server's decoder refuses.
fn decoded_len(v: &mut V, data: &str, field: &str) -> usize {
    // Go's decoder skips line breaks, as wrapped base64 from some tools has them.
    let bytes: Vec<u8> = data.bytes().filter(|b| *b != b'\n' && *b != b'\r').collect();
    let body = bytes.iter().position(|b| *b == b'=').unwrap_or(bytes.len());
    let bad = bytes.iter().position(|b| !(b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/' || *b == b'='));
    let bad = bad.or_else(|| {
        // Padding only at the end, at most two, and whole 4-byte groups.
        let padding = bytes.len() - body;
        (bytes[body..].iter().any(|b| *b != b'=') || padding > 2 || !bytes.len().is_multiple_of(4)).then_some(body)
    });
    if let Some(at) = bad {
        v.invalid(field, "\"<secret contents redacted>\"", &format!("illegal base64 data at input byte {at}"));
        return 0;
    }
    bytes.len() / 4 * 3 - (bytes.len() - body)
}

/// ConfigMaps and Secrets marked immutable may not change their contents or be unmarked.
fn immutable_contents(v: &mut V, obj: &Value, old: Option<&Value>, fields: &[&str]) {
    let Some(old) = old else { return };
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    if obj.get("immutable").and_then(Value::as_bool) != Some(true) {
        v.forbidden("immutable", "field is immutable when `immutable` is set");
    }
    for field in fields {
        if !semantic_eq(obj.get(*field), old.get(*field)) {
            v.forbidden(field, "field is immutable when `immutable` is set");
        }
    }
}
// ---------------------------------------------------------------------------------------------
// Services (pkg/apis/core/validation: ValidateService, ValidateServiceUpdate).

pub(crate) fn service(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Dns1035, true);
    let empty = Map::new();
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);
    let ty = v.string(spec.get("type"), "spec.type");
    let cluster_ip = v.string(spec.get("clusterIP"), "spec.clusterIP");
    let cluster_ips = v.str_list(spec.get("clusterIPs"), "spec.clusterIPs");
    let headless = cluster_ip == "None";
    let ports = v.objs(spec.get("ports"), "spec.ports");
    if ports.is_empty() && !headless && ty != "ExternalName" {
        v.required("spec.ports", "");
    }
    if ty == "ExternalName" {
        if !cluster_ips.is_empty() {
            v.forbidden("spec.clusterIPs", "may not be set for ExternalName services");
        }
        if !deep_empty(spec.get("ipFamilies")) {
            v.forbidden("spec.ipFamilies", "may not be set for ExternalName services");
        }
        if spec.get("ipFamilyPolicy").is_some_and(|p| !p.is_null()) {
            v.forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services");
        }
        let external = v.string(spec.get("externalName"), "spec.externalName");
        let cname = external.strip_suffix('.').unwrap_or(external);
        if cname.is_empty() {
            v.required("spec.externalName", "");
        } else {
            v.each("spec.externalName", &q(cname), dns1123_subdomain(cname));
        }
    }
    for (i, ip) in cluster_ips.iter().enumerate() {
        if *ip != "None" && ip.parse::<std::net::IpAddr>().is_err() {
            v.invalid(
                &idx("spec.clusterIPs", i),
                &q(ip),
                "must be a valid IP address (e.g. 10.9.8.7 or 2001:db8::ffff)",
            );
        }
    }
    if !cluster_ip.is_empty() && cluster_ips.first().is_some_and(|first| *first != cluster_ip) {
        v.invalid("spec.clusterIPs", &go_strings(&cluster_ips), "element [0] must match clusterIP");
    } else if cluster_ips.is_empty()
        && !cluster_ip.is_empty()
        && cluster_ip != "None"
        && cluster_ip.parse::<std::net::IpAddr>().is_err()
    {
        v.invalid("spec.clusterIPs[0]", &q(cluster_ip), "must be a valid IP address (e.g. 10.9.8.7 or 2001:db8::ffff)");
    }

    let mut names: Vec<&str> = Vec::new();
    for (ppath, p) in &ports {
        let name = v.string(p.get("name"), &child(ppath, "name"));
        if ports.len() > 1 && name.is_empty() {
            v.required(&child(ppath, "name"), "");
        } else if !name.is_empty() {
            v.each(&child(ppath, "name"), &q(name), dns1123_label(name));
            if names.contains(&name) {
                v.duplicate(&child(ppath, "name"), &q(name));
            } else {
                names.push(name);
            }
        }
        let port = v.int(p.get("port"), &child(ppath, "port")).unwrap_or(0);
        port_number(v, &child(ppath, "port"), port);
        let protocol = v.string(p.get("protocol"), &child(ppath, "protocol"));
        one_of(v, &child(ppath, "protocol"), protocol, &["SCTP", "TCP", "UDP"]);
        let target = child(ppath, "targetPort");
        match p.get("targetPort") {
            Some(Value::String(s)) => v.each(&target, &q(s), port_name(s)),
            Some(Value::Null) | None => {}
            Some(other) => {
                if let Some(n) = v.int(Some(other), &target) {
                    port_number(v, &target, n);
                }
            }
        }
        let node_port = v.int(p.get("nodePort"), &child(ppath, "nodePort")).unwrap_or(0);
        if node_port != 0 {
            if ty == "ClusterIP" {
                v.forbidden(&child(ppath, "nodePort"), "may not be used when `type` is 'ClusterIP'");
            } else {
                port_number(v, &child(ppath, "nodePort"), node_port);
            }
        }
    }
    labels(v, spec.get("selector"), "spec.selector");
    let affinity = v.string(spec.get("sessionAffinity"), "spec.sessionAffinity");
    one_of(v, "spec.sessionAffinity", affinity, &["ClientIP", "None"]);
    one_of(v, "spec.type", ty, &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]);

    // The primary address is fixed once allocated, unless the type goes to or from
    // ExternalName (upstream's validateUpgradeDowngradeClusterIPs).
    if let Some(old) = old {
        let old_ips: Vec<&str> = old
            .pointer("/spec/clusterIPs")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let old_type = text(Some(old), "/spec/type");
        if ty != "ExternalName"
            && old_type != "ExternalName"
            && let (Some(new_first), Some(old_first)) = (cluster_ips.first(), old_ips.first())
            && new_first != old_first
        {
            v.invalid("spec.clusterIPs[0]", &go_strings(&cluster_ips), "may not change once set");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::tests::run;
    use serde_json::json;

    #[test]
    fn namespaces_nodes_service_accounts() {
        let ns = json!({"metadata": {"name": "team-a"}, "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"}});
        let creates = [
            ("valid", json!({}), ""),
            ("dots", json!({"/metadata/name": "team.a"}), "Invalid metadata.name"),
            ("too long", json!({"/metadata/name": "a".repeat(64)}), "Invalid metadata.name"),
            ("namespaced", json!({"/metadata/namespace": "default"}), "Forbidden metadata.namespace"),
            ("spec finalizer", json!({"/spec/finalizers": ["foo"]}), "Invalid spec.finalizers"),
        ];
        run("v1", "Namespace", &ns, &creates, &[("finalized", json!({}), json!({"/spec/finalizers": []}), "")]);

        let node = json!({"metadata": {"name": "node-1.example.com"},
            "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}});
        let creates = [
            ("valid", json!({}), ""),
            ("bad name", json!({"/metadata/name": "Node_1"}), "Invalid metadata.name"),
            ("taint effect", json!({"/spec/taints/0/effect": "Maybe"}), "NotSupported spec.taints[0].effect"),
            ("taint without effect", json!({"/spec/taints/0/effect": null}), "Required spec.taints[0].effect"),
            (
                "duplicate taint",
                json!({"/spec/taints/1": {"key": "a", "value": "b", "effect": "NoSchedule"}}),
                "Duplicate spec.taints[1]",
            ),
        ];
        run("v1", "Node", &node, &creates, &[("labels", json!({}), json!({"/metadata/labels": {"zone": "a"}}), "")]);

        let sa = json!({"metadata": {"name": "builder", "namespace": "ci"}});
        let creates =
            [("valid", json!({}), ""), ("bad name", json!({"/metadata/name": "Builder"}), "Invalid metadata.name")];
        run("v1", "ServiceAccount", &sa, &creates, &[]);
    }

    #[test]
    fn config_maps_and_secrets() {
        let cm = json!({"metadata": {"name": "cfg", "namespace": "default"}, "data": {"app.conf": "x", "KEY_1": "y"},
            "binaryData": {"b.bin": "AAEC"}});
        let creates = [
            ("valid", json!({}), ""),
            ("bad key", json!({"/data/a b": "x"}), "Invalid data[a b]"),
            ("dot dot key", json!({"/data/..x": "x"}), "Invalid data[..x]"),
            ("key in both", json!({"/data/b.bin": "x"}), "Invalid data[b.bin]"),
            ("bad base64", json!({"/binaryData/b.bin": "AAE"}), "Invalid binaryData[b.bin]"),
            ("value not a string", json!({"/data/n": 1}), "Invalid data[n]"),
            ("too big", json!({"/data/big": "x".repeat(MAX_SECRET_SIZE)}), "TooLong "),
        ];
        let immutable = json!({"/immutable": true});
        let updates = [
            ("mutable", json!({}), json!({"/data/app.conf": "z"}), ""),
            ("immutable data", immutable.clone(), json!({"/immutable": true, "/data/app.conf": "z"}), "Forbidden data"),
            ("unmarked", immutable.clone(), json!({}), "Forbidden immutable"),
        ];
        run("v1", "ConfigMap", &cm, &creates, &updates);

        let secret = json!({"metadata": {"name": "creds", "namespace": "default"}, "type": "Opaque",
            "data": {"password": "aHVudGVyMg=="}});
        let token = json!({"/type": "kubernetes.io/service-account-token",
            "/metadata/annotations/kubernetes.io~1service-account.name": "default"});
        let creates = [
            ("valid", json!({}), ""),
            ("bad key", json!({"/data/pass word": "eA=="}), "Invalid data[pass word]"),
            ("not base64", json!({"/data/password": "hunter2!"}), "Invalid data[password]"),
            ("tls", json!({"/type": "kubernetes.io/tls", "/data/tls.crt": ""}), "Required data[tls.key]"),
            ("basic auth", json!({"/type": "kubernetes.io/basic-auth"}), ""),
            (
                "token",
                json!({"/type": "kubernetes.io/service-account-token"}),
                "Required metadata.annotations[kubernetes.io/service-account.name]",
            ),
            ("token for an account", token, ""),
            ("leftover stringData", json!({"/stringData": {"a": 1}}), "Invalid stringData[a]"),
        ];
        let updates = [
            ("type change", json!({}), json!({"/type": "kubernetes.io/basic-auth"}), "Invalid type"),
            ("immutable", immutable, json!({"/immutable": true, "/data/password": "eA=="}), "Forbidden data"),
        ];
        run("v1", "Secret", &secret, &creates, &updates);
    }

    #[test]
    fn services() {
        let svc = json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"type": "ClusterIP", "sessionAffinity": "None", "selector": {"app": "web"},
                "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}]}});
        let creates = [
            ("valid", json!({}), ""),
            ("name must start with a letter", json!({"/metadata/name": "1web"}), "Invalid metadata.name"),
            ("no ports", json!({"/spec/ports": []}), "Required spec.ports"),
            (
                "headless needs no ports",
                json!({"/spec/ports": [], "/spec/clusterIP": "None", "/spec/clusterIPs": ["None"]}),
                "",
            ),
            ("named target port", json!({"/spec/ports/0/targetPort": "http"}), ""),
            ("bad port", json!({"/spec/ports/0/port": 0}), "Invalid spec.ports[0].port"),
            (
                "second port unnamed",
                json!({"/spec/ports/1": {"port": 81, "protocol": "TCP", "name": ""}, "/spec/ports/0/name": "a"}),
                "Required spec.ports[1].name",
            ),
            ("protocol", json!({"/spec/ports/0/protocol": "HTTP"}), "NotSupported spec.ports[0].protocol"),
            ("node port on ClusterIP", json!({"/spec/ports/0/nodePort": 30080}), "Forbidden spec.ports[0].nodePort"),
            ("type", json!({"/spec/type": "Fancy"}), "NotSupported spec.type"),
            ("bad IP", json!({"/spec/clusterIPs": ["ten"], "/spec/clusterIP": "ten"}), "Invalid spec.clusterIPs[0]"),
            (
                "external name",
                json!({"/spec/type": "ExternalName", "/spec/clusterIP": null, "/spec/clusterIPs": null}),
                "Required spec.externalName",
            ),
        ];
        let updates = [
            ("keeps its address", json!({}), json!({"/spec/ports/0/port": 81}), ""),
            (
                "address changed",
                json!({}),
                json!({"/spec/clusterIP": "10.96.0.11", "/spec/clusterIPs": ["10.96.0.11"]}),
                "Invalid spec.clusterIPs[0]",
            ),
        ];
        run("v1", "Service", &svc, &creates, &updates);
    }
}
