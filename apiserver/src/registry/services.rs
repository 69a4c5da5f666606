//! Address allocation for Services, as the service registry's allocators do it: a ClusterIP
//! from the service range (10.96.0.0/12, kubeadm's default; only 10.96.x.y is handed out) for
//! every Service that needs one, NodePorts from 30000-32767 for NodePort and LoadBalancer
//! Services, and allocated values carried over on update when the client leaves them out (a
//! `kubectl replace` of an applied manifest does). Nothing routes traffic to these addresses:
//! they exist so manifests apply and read back as on a real cluster.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::registry::hooks::Cluster;
use crate::storage::query::Filter;
use wasmcm_core::Cause;

const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

fn kind(service: &Value) -> &str {
    service.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP")
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default()
}

fn random_u16(state: &dyn Cluster) -> u16 {
    let mut b = [0u8; 2];
    state.fill(&mut b);
    u16::from_le_bytes(b)
}

/// What the other Services in the cluster hold: (cluster IPs, node ports).
fn in_use(state: &dyn Cluster, namespace: &str, name: &str) -> (HashSet<String>, HashSet<i64>) {
    let (services, _) = state.store().list("/services", None, &Filter::for_type("/services"));
    let mut ips = HashSet::new();
    let mut ports = HashSet::new();
    for s in services.iter().filter(|s| {
        s.pointer("/metadata/namespace").and_then(Value::as_str) != Some(namespace)
            || s.pointer("/metadata/name").and_then(Value::as_str) != Some(name)
    }) {
        ips.extend(strings(s.pointer("/spec/clusterIPs")));
        for p in s.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten() {
            ports.extend(p.get("nodePort").and_then(Value::as_i64));
        }
    }
    (ips, ports)
}

/// Fills in the clusterIP, clusterIPs, IP family fields and node ports of a Service being
/// created (already defaulted). A requested address another Service holds is refused as
/// upstream's allocator refuses it.
pub(crate) fn allocate(state: &dyn Cluster, service: &mut Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let ty = kind(service).to_owned();
    if ty == "ExternalName" || !service.get("spec").is_some_and(Value::is_object) {
        return causes;
    }
    let namespace = service.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").to_owned();
    let name = service.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_owned();
    let (used_ips, used_ports) = in_use(state, &namespace, &name);
    let spec = &mut service["spec"];

    let requested = match spec.get("clusterIP").and_then(Value::as_str).filter(|ip| !ip.is_empty()) {
        Some(ip) => Some(ip.to_owned()),
        None => strings(spec.get("clusterIPs")).into_iter().next().filter(|ip| !ip.is_empty()),
    };
    let ip = match requested {
        Some(ip) if ip != "None" && used_ips.contains(&ip) => {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                field: "spec.clusterIPs".into(),
                message: format!(
                    "Invalid value: []string{{{ip:?}}}: failed to allocate IP {ip}: provided IP is already allocated"
                ),
            });
            return causes;
        }
        Some(ip) => ip,
        None => {
            // Random, as upstream's bitmap allocator; 10.96.0.1 is the `kubernetes` Service's.
            let start = random_u16(state);
            let free = (0..=u16::MAX)
                .map(|i| start.wrapping_add(i))
                .map(|n| format!("10.96.{}.{}", n >> 8, n & 0xff))
                .find(|ip| !used_ips.contains(ip) && !ip.ends_with(".0") && !ip.ends_with(".255") && ip != "10.96.0.1");
            match free {
                Some(ip) => ip,
                None => {
                    causes.push(Cause {
                        reason: "FieldValueInvalid".into(),
                        field: "spec.clusterIPs".into(),
                        message: "Invalid value: []string(nil): failed to allocate IP: range is full".into(),
                    });
                    return causes;
                }
            }
        }
    };
    spec["clusterIP"] = json!(ip);
    if strings(spec.get("clusterIPs")).is_empty() {
        spec["clusterIPs"] = json!([ip]);
    }
    if spec.get("ipFamilies").is_none_or(Value::is_null) {
        spec["ipFamilies"] = json!(["IPv4"]);
    }
    if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
        spec["ipFamilyPolicy"] = json!("SingleStack");
    }

    if matches!(ty.as_str(), "NodePort" | "LoadBalancer") {
        let mut taken = used_ports;
        let requested: Vec<i64> = spec
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
            .collect();
        for (i, port) in requested.iter().enumerate() {
            if !taken.insert(*port) {
                causes.push(Cause {
                    reason: "FieldValueInvalid".into(),
                    field: format!("spec.ports[{i}].nodePort"),
                    message: format!("Invalid value: {port}: provided port is already allocated"),
                });
            }
        }
        for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
            if port.get("nodePort").and_then(Value::as_i64).is_some_and(|p| p != 0) || !port.is_object() {
                continue;
            }
            let span = NODE_PORTS.end() - NODE_PORTS.start() + 1;
            let start = i64::from(random_u16(state)) % span;
            if let Some(free) = (0..span).map(|i| NODE_PORTS.start() + (start + i) % span).find(|p| !taken.contains(p))
            {
                taken.insert(free);
                port["nodePort"] = json!(free);
            }
        }
    }
    causes
}

/// An update that leaves out what was allocated keeps it (upstream's `patchAllocatedValues`).
pub(crate) fn carry_over(new: &mut Value, old: &Value) {
    if kind(new) == "ExternalName" || kind(old) == "ExternalName" || !new.get("spec").is_some_and(Value::is_object) {
        return;
    }
    let node_ports = matches!(kind(new), "NodePort" | "LoadBalancer");
    let spec = &mut new["spec"];
    let unset = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v.as_str() == Some(""));
    if unset(spec.get("clusterIP")) && strings(spec.get("clusterIPs")).is_empty() {
        for field in ["clusterIP", "clusterIPs"] {
            if let Some(v) = old.pointer(&format!("/spec/{field}")) {
                spec[field] = v.clone();
            }
        }
    }
    for field in ["ipFamilies", "ipFamilyPolicy"] {
        if unset(spec.get(field))
            && let Some(v) = old.pointer(&format!("/spec/{field}"))
        {
            spec[field] = v.clone();
        }
    }
    if !node_ports {
        return;
    }
    let old_ports = old.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default();
    for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
        if port.get("nodePort").and_then(Value::as_i64).is_some_and(|p| p != 0) {
            continue;
        }
        let same = old_ports.iter().find(|o| {
            o.get("port") == port.get("port")
                && o.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
                    == port.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
        });
        if let Some(node_port) = same.and_then(|o| o.get("nodePort")).filter(|p| p.is_i64())
            && port.is_object()
        {
            port["nodePort"] = node_port.clone();
        }
    }
}
