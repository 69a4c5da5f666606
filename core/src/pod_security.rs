//! The Pod Security Standards as `k8s.io/pod-security-admission/policy` checks them: the
//! `privileged`, `baseline` and `restricted` levels, each check with upstream's id, reason and
//! detail, so that a refusal reads as the PodSecurity admission plugin's does (`privileged
//! (container "c" must not set securityContext.privileged=true)`).
//!
//! The checks are those of upstream's `latest` policy version as of Kubernetes 1.36 (policy
//! 1.35): the host probe check (1.34), the user-namespace relaxations of `procMount`,
//! `runAsNonRoot` and `runAsUser` (1.35), the Windows exemptions of the restricted checks (1.25),
//! the newer sysctls and SELinux types. Older policy versions are not modelled.
//!
//! Pure functions over a pod's `metadata` and `spec` as JSON (a Pod's, or a workload's
//! `spec.template`): no I/O. A field of the wrong JSON type counts as absent, as the API server
//! refuses such an object anyway. Which objects are checked, at which level, is the caller's.

use std::collections::BTreeSet;

use serde_json::Value;

/// A Pod Security Standards level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// No check.
    Privileged,
    /// Known privilege escalations prevented.
    Baseline,
    /// Hardening best practice, on top of baseline.
    Restricted,
}

impl Level {
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// A check that forbade the pod: its id, and upstream's `ForbiddenReason` and `ForbiddenDetail`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub check: &'static str,
    pub reason: String,
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.detail.is_empty() { f.write_str(&self.reason) } else { write!(f, "{} ({})", self.reason, self.detail) }
    }
}

/// `(reason, detail)` when the check forbids the pod.
type Forbidden = Option<(String, String)>;
type CheckFn = fn(&Value, &Value) -> Forbidden;

struct Check {
    id: &'static str,
    restricted: bool,
    /// A baseline check a restricted one replaces at the restricted level (upstream's
    /// `OverrideCheckIDs`).
    overridden: bool,
    run: CheckFn,
}

/// Upstream's checks, in the order it registers them (its files' names).
const CHECKS: &[Check] = &[
    Check { id: "allowPrivilegeEscalation", restricted: true, overridden: false, run: allow_privilege_escalation },
    Check { id: "appArmorProfile", restricted: false, overridden: false, run: app_armor_profile },
    Check { id: "capabilities_baseline", restricted: false, overridden: true, run: capabilities_baseline },
    Check { id: "capabilities_restricted", restricted: true, overridden: false, run: capabilities_restricted },
    Check { id: "hostNamespaces", restricted: false, overridden: false, run: host_namespaces },
    Check { id: "hostPathVolumes", restricted: false, overridden: true, run: host_path_volumes },
    Check { id: "hostPorts", restricted: false, overridden: false, run: host_ports },
    Check { id: "hostProbesAndHostLifecycle", restricted: false, overridden: false, run: host_probes_and_lifecycle },
    Check { id: "privileged", restricted: false, overridden: false, run: privileged },
    Check { id: "procMount", restricted: false, overridden: true, run: proc_mount_baseline },
    Check { id: "procMount_restricted", restricted: true, overridden: false, run: proc_mount_restricted },
    Check { id: "restrictedVolumes", restricted: true, overridden: false, run: restricted_volumes },
    Check { id: "runAsNonRoot", restricted: true, overridden: false, run: run_as_non_root },
    Check { id: "runAsUser", restricted: true, overridden: false, run: run_as_user },
    Check { id: "seLinuxOptions", restricted: false, overridden: false, run: se_linux_options },
    Check { id: "seccompProfile_baseline", restricted: false, overridden: true, run: seccomp_profile_baseline },
    Check { id: "seccompProfile_restricted", restricted: true, overridden: false, run: seccomp_profile_restricted },
    Check { id: "sysctls", restricted: false, overridden: false, run: sysctls },
    Check { id: "windowsHostProcess", restricted: false, overridden: false, run: windows_host_process },
];

/// What forbids a pod of `metadata` and `spec` at `level`: none when it is allowed. In
/// upstream's order: the baseline checks no restricted one replaces, then the others of the
/// level (the replaced baseline ones, or the restricted ones).
pub fn evaluate(level: Level, metadata: &Value, spec: &Value) -> Vec<Violation> {
    let then: fn(&Check) -> bool = match level {
        Level::Privileged => return Vec::new(),
        Level::Baseline => |c| !c.restricted && c.overridden,
        Level::Restricted => |c| c.restricted,
    };
    let first = CHECKS.iter().filter(|c| !c.restricted && !c.overridden);
    first
        .chain(CHECKS.iter().filter(|c| then(c)))
        .filter_map(|c| (c.run)(metadata, spec).map(|(reason, detail)| Violation { check: c.id, reason, detail }))
        .collect()
}

/// Upstream's aggregate message of several violations (`AggregateCheckResult.ForbiddenDetail`):
/// `host ports (8080, 9090), privileged (...)`.
pub fn forbidden_detail(violations: &[Violation]) -> String {
    violations.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

// ---------------------------------------------------------------------------------------------
// Helpers: upstream's `joinQuote`, `pluralize` and `visitContainers`.

fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    items.iter().map(|s| format!("\"{}\"", s.as_ref())).collect::<Vec<_>>().join(", ")
}

fn pluralize<'a>(singular: &'a str, plural: &'a str, count: usize) -> &'a str {
    if count == 1 { singular } else { plural }
}

/// `container "a"` / `containers "a", "b"`.
fn containers_named(names: &[&str]) -> String {
    format!("{} {}", pluralize("container", "containers", names.len()), join_quote(names))
}

/// Init containers, containers, then ephemeral containers, as upstream visits them.
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |f| spec.get(f).and_then(Value::as_array).into_iter().flatten())
}

fn name(container: &Value) -> &str {
    container.get("name").and_then(Value::as_str).unwrap_or("")
}

fn security_context(container: &Value) -> Option<&Value> {
    container.get("securityContext").filter(|v| v.is_object())
}

fn pod_security_context(spec: &Value) -> Option<&Value> {
    spec.get("securityContext").filter(|v| v.is_object())
}

fn at<'a>(v: Option<&'a Value>, path: &str) -> Option<&'a Value> {
    v?.pointer(path).filter(|v| !v.is_null())
}

fn bool_at(v: Option<&Value>, path: &str) -> Option<bool> {
    at(v, path)?.as_bool()
}

fn str_at<'a>(v: Option<&'a Value>, path: &str) -> Option<&'a str> {
    at(v, path)?.as_str()
}

fn strings(v: Option<&Value>) -> impl Iterator<Item = &str> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
}

/// Pods that run in a user namespace (`hostUsers: false`), which some checks relax for.
fn user_namespaced(spec: &Value) -> bool {
    spec.get("hostUsers").and_then(Value::as_bool) == Some(false)
}

fn windows(spec: &Value) -> bool {
    spec.pointer("/os/name").and_then(Value::as_str) == Some("windows")
}

fn forbid(reason: impl Into<String>, detail: impl Into<String>) -> Forbidden {
    Some((reason.into(), detail.into()))
}

// ---------------------------------------------------------------------------------------------
// Baseline.

/// check_privileged.go.
fn privileged(_: &Value, spec: &Value) -> Forbidden {
    let bad: Vec<&str> =
        containers(spec).filter(|c| bool_at(security_context(c), "/privileged") == Some(true)).map(name).collect();
    if bad.is_empty() {
        return None;
    }
    forbid("privileged", format!("{} must not set securityContext.privileged=true", containers_named(&bad)))
}

/// check_hostNamespaces.go.
fn host_namespaces(_: &Value, spec: &Value) -> Forbidden {
    let set: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .into_iter()
        .filter(|f| spec.get(*f).and_then(Value::as_bool) == Some(true))
        .map(|f| format!("{f}=true"))
        .collect();
    if set.is_empty() {
        return None;
    }
    forbid("host namespaces", set.join(", "))
}

/// check_hostPorts.go.
fn host_ports(_: &Value, spec: &Value) -> Forbidden {
    let mut bad = Vec::new();
    let mut ports = BTreeSet::new();
    for c in containers(spec) {
        let mut valid = true;
        for p in c.get("ports").and_then(Value::as_array).into_iter().flatten() {
            match p.get("hostPort").and_then(Value::as_i64) {
                Some(0) | None => {}
                Some(port) => {
                    valid = false;
                    ports.insert(port.to_string());
                }
            }
        }
        if !valid {
            bad.push(name(c));
        }
    }
    if bad.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    forbid(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_named(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        ),
    )
}

/// check_hostPathVolumes.go.
fn host_path_volumes(_: &Value, spec: &Value) -> Forbidden {
    let bad: Vec<&str> = volumes(spec).filter(|v| present(v, "hostPath")).map(name).collect();
    if bad.is_empty() {
        return None;
    }
    forbid("hostPath volumes", format!("{} {}", pluralize("volume", "volumes", bad.len()), join_quote(&bad)))
}

fn volumes(spec: &Value) -> impl Iterator<Item = &Value> {
    spec.get("volumes").and_then(Value::as_array).into_iter().flatten()
}

fn present(v: &Value, field: &str) -> bool {
    v.get(field).is_some_and(|f| !f.is_null())
}

const CAPABILITIES_ALLOWED: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// check_capabilities_baseline.go.
fn capabilities_baseline(_: &Value, spec: &Value) -> Forbidden {
    let mut bad = Vec::new();
    let mut added = BTreeSet::new();
    for c in containers(spec) {
        let mut valid = true;
        for cap in strings(at(security_context(c), "/capabilities/add")) {
            if !CAPABILITIES_ALLOWED.contains(&cap) {
                valid = false;
                added.insert(cap);
            }
        }
        if !valid {
            bad.push(name(c));
        }
    }
    if bad.is_empty() {
        return None;
    }
    let added: Vec<&str> = added.into_iter().collect();
    forbid(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_named(&bad),
            join_quote(&added)
        ),
    )
}

/// check_procMount_baseline.go (1.35): any mount type in a user namespace, else only Default.
fn proc_mount_baseline(metadata: &Value, spec: &Value) -> Forbidden {
    if user_namespaced(spec) {
        return None;
    }
    proc_mount_restricted(metadata, spec)
}

/// check_seccompProfile_baseline.go (1.19): the field, not the old annotations.
fn seccomp_profile_baseline(_: &Value, spec: &Value) -> Forbidden {
    let mut setters = Vec::new();
    let mut values = BTreeSet::new();
    if let Some(t) = at(pod_security_context(spec), "/seccompProfile") {
        let t = t.get("type").and_then(Value::as_str).unwrap_or("");
        if !valid_seccomp(t) {
            setters.push("pod".to_string());
            values.insert(t);
        }
    }
    let mut bad = Vec::new();
    for c in containers(spec) {
        if let Some(t) = at(security_context(c), "/seccompProfile") {
            let t = t.get("type").and_then(Value::as_str).unwrap_or("");
            if !valid_seccomp(t) {
                bad.push(name(c));
                values.insert(t);
            }
        }
    }
    if !bad.is_empty() {
        setters.push(containers_named(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    let values: Vec<&str> = values.into_iter().collect();
    forbid(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters.join(" and "),
            join_quote(&values)
        ),
    )
}

fn valid_seccomp(t: &str) -> bool {
    t == "Localhost" || t == "RuntimeDefault"
}

const SELINUX_TYPES: [&str; 5] = ["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"];

/// check_seLinuxOptions.go (1.31).
fn se_linux_options(_: &Value, spec: &Value) -> Forbidden {
    let mut types = BTreeSet::new();
    let (mut user, mut role) = (false, false);
    let mut valid = |opts: &Value| {
        let mut ok = true;
        let t = opts.get("type").and_then(Value::as_str).unwrap_or("");
        if !SELINUX_TYPES.contains(&t) {
            ok = false;
            types.insert(t.to_string());
        }
        if opts.get("user").and_then(Value::as_str).is_some_and(|u| !u.is_empty()) {
            ok = false;
            user = true;
        }
        if opts.get("role").and_then(Value::as_str).is_some_and(|r| !r.is_empty()) {
            ok = false;
            role = true;
        }
        ok
    };
    let mut setters = Vec::new();
    if let Some(opts) = at(pod_security_context(spec), "/seLinuxOptions")
        && !valid(opts)
    {
        setters.push("pod".to_string());
    }
    let bad: Vec<&str> = containers(spec)
        .filter(|c| at(security_context(c), "/seLinuxOptions").is_some_and(|o| !valid(o)))
        .map(name)
        .collect();
    if !bad.is_empty() {
        setters.push(containers_named(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !types.is_empty() {
        let types: Vec<String> = types.into_iter().collect();
        data.push(format!("{} {}", pluralize("type", "types", types.len()), join_quote(&types)));
    }
    if user {
        data.push("user may not be set".into());
    }
    if role {
        data.push("role may not be set".into());
    }
    forbid(
        "seLinuxOptions",
        format!("{} set forbidden securityContext.seLinuxOptions: {}", setters.join(" and "), data.join("; ")),
    )
}

/// The safe sysctls of policy 1.32 (1.0's five, 1.27's, 1.29's and 1.32's additions).
const SYSCTLS_ALLOWED: [&str; 12] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
];

/// check_sysctls.go.
fn sysctls(_: &Value, spec: &Value) -> Forbidden {
    let bad: Vec<&str> = at(pod_security_context(spec), "/sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| s.get("name").and_then(Value::as_str).unwrap_or(""))
        .filter(|n| !SYSCTLS_ALLOWED.contains(n))
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbid("forbidden sysctls", bad.join(", "))
}

const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// check_appArmorProfile.go: the field (pod and containers) and the deprecated annotations.
fn app_armor_profile(metadata: &Value, spec: &Value) -> Forbidden {
    let allowed_type = |t: &str| t == "RuntimeDefault" || t == "Localhost";
    let mut setters = Vec::new();
    let mut values = BTreeSet::new();
    if let Some(p) = at(pod_security_context(spec), "/appArmorProfile") {
        let t = p.get("type").and_then(Value::as_str).unwrap_or("");
        if !allowed_type(t) {
            setters.push("pod".to_string());
            values.insert(t.to_string());
        }
    }
    let mut bad = Vec::new();
    for c in containers(spec) {
        if let Some(p) = at(security_context(c), "/appArmorProfile") {
            let t = p.get("type").and_then(Value::as_str).unwrap_or("");
            if !allowed_type(t) {
                bad.push(name(c));
                values.insert(t.to_string());
            }
        }
    }
    if !bad.is_empty() {
        setters.push(containers_named(&bad));
    }
    let mut annotations: Vec<String> = metadata
        .get("annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(APPARMOR_ANNOTATION_PREFIX))
        .filter_map(|(k, v)| {
            let v = v.as_str().unwrap_or("");
            let allowed = v.is_empty() || v == "runtime/default" || v.starts_with("localhost/");
            (!allowed).then(|| format!("{k}={v:?}"))
        })
        .collect();
    let mut values: Vec<String> = values.into_iter().collect();
    if !annotations.is_empty() {
        annotations.sort();
        setters.push(pluralize("annotation", "annotations", annotations.len()).to_string());
        values.extend(annotations);
    }
    if setters.is_empty() {
        return None;
    }
    forbid(
        pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", values.len()),
        format!("{} must not set AppArmor profile type to {}", setters.join(" and "), join_quote(&values)),
    )
}

/// check_windowsHostProcess.go.
fn windows_host_process(_: &Value, spec: &Value) -> Forbidden {
    let host_process = |sc: Option<&Value>| bool_at(sc, "/windowsOptions/hostProcess") == Some(true);
    let mut setters = Vec::new();
    if host_process(pod_security_context(spec)) {
        setters.push("pod".to_string());
    }
    let bad: Vec<&str> = containers(spec).filter(|c| host_process(security_context(c))).map(name).collect();
    if !bad.is_empty() {
        setters.push(containers_named(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    forbid(
        "hostProcess",
        format!("{} must not set securityContext.windowsOptions.hostProcess=true", setters.join(" and ")),
    )
}

/// check_hostProbesAndhostLifecycle.go (1.34): no `host` in probes and lifecycle handlers.
fn host_probes_and_lifecycle(_: &Value, spec: &Value) -> Forbidden {
    let mut bad = BTreeSet::new();
    let mut hosts = BTreeSet::new();
    for c in containers(spec) {
        let handlers =
            ["/livenessProbe", "/readinessProbe", "/startupProbe", "/lifecycle/postStart", "/lifecycle/preStop"];
        for handler in handlers {
            for action in ["httpGet", "tcpSocket"] {
                if let Some(host) = str_at(Some(c), &format!("{handler}/{action}/host")).filter(|h| !h.is_empty()) {
                    bad.insert(name(c));
                    hosts.insert(host);
                }
            }
        }
    }
    if bad.is_empty() {
        return None;
    }
    let bad: Vec<&str> = bad.into_iter().collect();
    let hosts: Vec<&str> = hosts.into_iter().collect();
    forbid(
        "probe or lifecycle host",
        format!(
            "{} {} {} {}",
            containers_named(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("probe or lifecycle host", "probe or lifecycle hosts", hosts.len()),
            join_quote(&hosts)
        ),
    )
}

// ---------------------------------------------------------------------------------------------
// Restricted.

/// check_procMount_restricted.go: only the Default mount type, user namespace or not.
fn proc_mount_restricted(_: &Value, spec: &Value) -> Forbidden {
    let mut bad = Vec::new();
    let mut types = BTreeSet::new();
    for c in containers(spec) {
        if let Some(t) = str_at(security_context(c), "/procMount")
            && t != "Default"
        {
            bad.push(name(c));
            types.insert(t);
        }
    }
    if bad.is_empty() {
        return None;
    }
    let types: Vec<&str> = types.into_iter().collect();
    forbid(
        "procMount",
        format!("{} must not set securityContext.procMount to {}", containers_named(&bad), join_quote(&types)),
    )
}

/// check_allowPrivilegeEscalation.go (1.25: Windows pods exempt).
fn allow_privilege_escalation(_: &Value, spec: &Value) -> Forbidden {
    if windows(spec) {
        return None;
    }
    let bad: Vec<&str> = containers(spec)
        .filter(|c| bool_at(security_context(c), "/allowPrivilegeEscalation") != Some(false))
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbid(
        "allowPrivilegeEscalation != false",
        format!("{} must set securityContext.allowPrivilegeEscalation=false", containers_named(&bad)),
    )
}

/// check_runAsNonRoot.go (1.35: pods in a user namespace exempt).
fn run_as_non_root(_: &Value, spec: &Value) -> Forbidden {
    if user_namespaced(spec) {
        return None;
    }
    let mut setters = Vec::new();
    let mut pod_non_root = false;
    match bool_at(pod_security_context(spec), "/runAsNonRoot") {
        Some(false) => setters.push("pod".to_string()),
        Some(true) => pod_non_root = true,
        None => {}
    }
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for c in containers(spec) {
        match bool_at(security_context(c), "/runAsNonRoot") {
            Some(false) => explicit.push(name(c)),
            Some(true) => {}
            None if !pod_non_root => implicit.push(name(c)),
            None => {}
        }
    }
    if !explicit.is_empty() {
        setters.push(containers_named(&explicit));
    }
    if !setters.is_empty() {
        let detail = format!("{} must not set securityContext.runAsNonRoot=false", setters.join(" and "));
        return forbid("runAsNonRoot != true", detail);
    }
    if !implicit.is_empty() {
        let detail = format!("pod or {} must set securityContext.runAsNonRoot=true", containers_named(&implicit));
        return forbid("runAsNonRoot != true", detail);
    }
    None
}

/// check_runAsUser.go (1.35: pods in a user namespace exempt).
fn run_as_user(_: &Value, spec: &Value) -> Forbidden {
    if user_namespaced(spec) {
        return None;
    }
    let root = |sc: Option<&Value>| at(sc, "/runAsUser").and_then(Value::as_i64) == Some(0);
    let mut setters = Vec::new();
    if root(pod_security_context(spec)) {
        setters.push("pod".to_string());
    }
    let bad: Vec<&str> = containers(spec).filter(|c| root(security_context(c))).map(name).collect();
    if !bad.is_empty() {
        setters.push(containers_named(&bad));
    }
    if setters.is_empty() {
        return None;
    }
    forbid("runAsUser=0", format!("{} must not set runAsUser=0", setters.join(" and ")))
}

/// check_seccompProfile_restricted.go (1.25: Windows pods exempt).
fn seccomp_profile_restricted(_: &Value, spec: &Value) -> Forbidden {
    if windows(spec) {
        return None;
    }
    let mut setters = Vec::new();
    let mut values = BTreeSet::new();
    let mut pod_set = false;
    if let Some(p) = at(pod_security_context(spec), "/seccompProfile") {
        let t = p.get("type").and_then(Value::as_str).unwrap_or("");
        if valid_seccomp(t) {
            pod_set = true;
        } else {
            setters.push("pod".to_string());
            values.insert(t);
        }
    }
    let (mut explicit, mut implicit) = (Vec::new(), Vec::new());
    for c in containers(spec) {
        match at(security_context(c), "/seccompProfile") {
            Some(p) => {
                let t = p.get("type").and_then(Value::as_str).unwrap_or("");
                if !valid_seccomp(t) {
                    explicit.push(name(c));
                    values.insert(t);
                }
            }
            None if !pod_set => implicit.push(name(c)),
            None => {}
        }
    }
    if !explicit.is_empty() {
        setters.push(containers_named(&explicit));
    }
    if !setters.is_empty() {
        let values: Vec<&str> = values.into_iter().collect();
        let detail = format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters.join(" and "),
            join_quote(&values)
        );
        return forbid("seccompProfile", detail);
    }
    if !implicit.is_empty() {
        let detail = format!(
            "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
            containers_named(&implicit)
        );
        return forbid("seccompProfile", detail);
    }
    None
}

/// check_capabilities_restricted.go (1.25: Windows pods exempt).
fn capabilities_restricted(_: &Value, spec: &Value) -> Forbidden {
    if windows(spec) {
        return None;
    }
    let (mut missing_drop, mut adding) = (Vec::new(), Vec::new());
    let mut forbidden = BTreeSet::new();
    for c in containers(spec) {
        let Some(caps) = at(security_context(c), "/capabilities") else {
            missing_drop.push(name(c));
            continue;
        };
        if !strings(caps.get("drop")).any(|d| d == "ALL") {
            missing_drop.push(name(c));
        }
        let mut added = false;
        for cap in strings(caps.get("add")).filter(|a| *a != "NET_BIND_SERVICE") {
            added = true;
            forbidden.insert(cap);
        }
        if added {
            adding.push(name(c));
        }
    }
    let mut details = Vec::new();
    if !missing_drop.is_empty() {
        details
            .push(format!("{} must set securityContext.capabilities.drop=[\"ALL\"]", containers_named(&missing_drop)));
    }
    if !adding.is_empty() {
        let forbidden: Vec<&str> = forbidden.into_iter().collect();
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_named(&adding),
            join_quote(&forbidden)
        ));
    }
    if details.is_empty() {
        return None;
    }
    forbid("unrestricted capabilities", details.join("; "))
}

/// The volume types restricted pods may use.
const VOLUMES_ALLOWED: [&str; 9] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// The other types upstream names, in the order it looks for them.
const VOLUMES_RESTRICTED: [&str; 21] = [
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

/// check_restrictedVolumes.go.
fn restricted_volumes(_: &Value, spec: &Value) -> Forbidden {
    let mut bad = Vec::new();
    let mut types = BTreeSet::new();
    for v in volumes(spec) {
        if VOLUMES_ALLOWED.iter().any(|t| present(v, t)) {
            continue;
        }
        bad.push(name(v));
        types.insert(VOLUMES_RESTRICTED.into_iter().find(|t| present(v, t)).unwrap_or("unknown"));
    }
    if bad.is_empty() {
        return None;
    }
    let types: Vec<&str> = types.into_iter().collect();
    forbid(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("restricted volume type", "restricted volume types", types.len()),
            join_quote(&types)
        ),
    )
}

#[cfg(test)]
mod tests {
    //! Upstream's test tables (`policy/check_*_test.go`) restated as data: each case's pod,
    //! and the reason and detail upstream expects of the check it tests.

    use super::*;
    use serde_json::json;

    /// Runs `check` on each `(case, pod, reason, detail)`; an empty reason expects it allowed.
    fn table(check: CheckFn, cases: &[(&str, Value, &str, &str)]) {
        for (case, pod, reason, detail) in cases {
            let metadata = pod.get("metadata").cloned().unwrap_or(json!({}));
            let spec = pod.get("spec").cloned().unwrap_or(json!({}));
            match check(&metadata, &spec) {
                None => assert!(reason.is_empty(), "{case}: allowed, expected {reason}"),
                Some((r, d)) => {
                    assert_eq!((r.as_str(), d.as_str()), (*reason, *detail), "{case}");
                }
            }
        }
    }

    fn sc(v: Value) -> Value {
        json!({"securityContext": v})
    }

    /// `containers` named `a`, `b`, … with these security contexts (`null`: none).
    fn named(contexts: &[Value]) -> Vec<Value> {
        contexts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut c = if c.is_null() { json!({}) } else { sc(c.clone()) };
                c["name"] = json!(((b'a' + i as u8) as char).to_string());
                c
            })
            .collect()
    }

    #[test]
    fn privileged_table() {
        let pod = json!({"spec": {"containers": named(&[
            Value::Null, json!({}), json!({"privileged": false}), json!({"privileged": true}), json!({"privileged": true}),
        ])}});
        table(
            privileged,
            &[("privileged", pod, "privileged", r#"containers "d", "e" must not set securityContext.privileged=true"#)],
        );
    }

    #[test]
    fn host_namespaces_table() {
        table(
            host_namespaces,
            &[(
                "multiple host namespaces",
                json!({"spec": {"hostNetwork": true, "hostIPC": true, "hostPID": true}}),
                "host namespaces",
                "hostNetwork=true, hostPID=true, hostIPC=true",
            )],
        );
    }

    #[test]
    fn host_ports_table() {
        let port = |p: i64| json!({"hostPort": p});
        table(
            host_ports,
            &[
                (
                    "one container, one host port",
                    json!({"spec": {"containers": [
                        {"name": "a", "ports": [port(0)]},
                        {"name": "b", "ports": [port(0), port(20)]},
                    ]}}),
                    "hostPort",
                    r#"container "b" uses hostPort 20"#,
                ),
                (
                    "multiple containers, multiple host port",
                    json!({"spec": {"containers": [
                        {"name": "a", "ports": [port(0)]},
                        {"name": "b", "ports": [port(0), port(10), port(20)]},
                        {"name": "c", "ports": [port(0), port(10), port(30)]},
                    ]}}),
                    "hostPort",
                    r#"containers "b", "c" use hostPorts 10, 20, 30"#,
                ),
            ],
        );
    }

    #[test]
    fn host_path_volumes_table() {
        table(
            host_path_volumes,
            &[(
                "host path volumes",
                json!({"spec": {"volumes": [
                    {"name": "a", "hostPath": {}}, {"name": "b", "hostPath": {}}, {"name": "c", "emptyDir": {}},
                ]}}),
                "hostPath volumes",
                r#"volumes "a", "b""#,
            )],
        );
    }

    #[test]
    fn capabilities_baseline_table() {
        table(
            capabilities_baseline,
            &[(
                "multiple containers",
                json!({"spec": {"containers": named(&[
                    json!({"capabilities": {"add": ["FOO", "BAR"]}}),
                    json!({"capabilities": {"add": ["BAR", "BAZ"]}}),
                ])}}),
                "non-default capabilities",
                r#"containers "a", "b" must not include "BAR", "BAZ", "FOO" in securityContext.capabilities.add"#,
            )],
        );
    }

    #[test]
    fn proc_mount_tables() {
        let containers = |host_users: bool| {
            json!({"spec": {"hostUsers": host_users, "containers": named(&[
                Value::Null, json!({}), json!({"procMount": "Default"}), json!({"procMount": "Unmasked"}),
                json!({"procMount": "other"}),
            ])}})
        };
        let detail = r#"containers "d", "e" must not set securityContext.procMount to "Unmasked", "other""#;
        table(
            proc_mount_baseline,
            &[
                ("procMount", containers(true), "procMount", detail),
                ("procMount with userns", containers(false), "", ""),
            ],
        );
        // Restricted forbids it whether or not the pod has a user namespace.
        table(
            proc_mount_restricted,
            &[
                ("procMount", containers(true), "procMount", detail),
                ("procMount", containers(false), "procMount", detail),
            ],
        );
    }

    #[test]
    fn seccomp_profile_baseline_table() {
        let profile = |t: &str| json!({"seccompProfile": {"type": t}});
        let containers = |pod: &str| {
            json!({"spec": {"securityContext": profile(pod), "containers": named(&[
                Value::Null, json!({}), profile("Unconfined"), profile("Unconfined"), profile("RuntimeDefault"),
                profile("RuntimeDefault"),
            ])}})
        };
        table(
            seccomp_profile_baseline,
            &[
                (
                    "pod seccomp invalid",
                    json!({"spec": {"securityContext": profile("Unconfined"), "containers": [{"name": "a"}]}}),
                    "seccompProfile",
                    r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#,
                ),
                (
                    "containers seccomp invalid",
                    containers("RuntimeDefault"),
                    "seccompProfile",
                    r#"containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#,
                ),
                (
                    "pod and containers seccomp invalid",
                    containers("Unconfined"),
                    "seccompProfile",
                    r#"pod and containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#,
                ),
            ],
        );
    }

    #[test]
    fn se_linux_options_table() {
        let opts = |o: Value| json!({"seLinuxOptions": o});
        let allowed = [
            opts(json!({"type": "container_t"})),
            opts(json!({"type": "container_init_t"})),
            opts(json!({"type": "container_kvm_t"})),
            opts(json!({"type": "container_engine_t"})),
        ];
        let bad = [opts(json!({"type": "bar"})), opts(json!({"user": "bar"})), opts(json!({"role": "baz"}))];
        let all: Vec<Value> = allowed.iter().chain(&bad).cloned().collect();
        let pod_opts = opts(json!({"type": "foo", "user": "bar", "role": "baz"}));
        table(
            se_linux_options,
            &[
                (
                    "invalid pod and containers",
                    json!({"spec": {"securityContext": pod_opts, "containers": named(&all)}}),
                    "seLinuxOptions",
                    r#"pod and containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set"#,
                ),
                (
                    "invalid pod",
                    json!({"spec": {"securityContext": pod_opts, "containers": named(&allowed)}}),
                    "seLinuxOptions",
                    r#"pod set forbidden securityContext.seLinuxOptions: type "foo"; user may not be set; role may not be set"#,
                ),
                (
                    "invalid containers",
                    json!({"spec": {"securityContext": opts(json!({})), "containers": named(&all)}}),
                    "seLinuxOptions",
                    r#"containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: type "bar"; user may not be set; role may not be set"#,
                ),
                (
                    "bad type",
                    json!({"spec": {"securityContext": opts(json!({"type": "bad"}))}}),
                    "seLinuxOptions",
                    r#"pod set forbidden securityContext.seLinuxOptions: type "bad""#,
                ),
                (
                    "bad user",
                    json!({"spec": {"securityContext": opts(json!({"user": "bad"}))}}),
                    "seLinuxOptions",
                    "pod set forbidden securityContext.seLinuxOptions: user may not be set",
                ),
                (
                    "bad role",
                    json!({"spec": {"securityContext": opts(json!({"role": "bad"}))}}),
                    "seLinuxOptions",
                    "pod set forbidden securityContext.seLinuxOptions: role may not be set",
                ),
            ],
        );
    }

    #[test]
    fn sysctls_table() {
        let pod = |names: &[&str]| {
            let s: Vec<Value> = names.iter().map(|n| json!({"name": n, "value": "1"})).collect();
            json!({"spec": {"securityContext": {"sysctls": s}}})
        };
        table(
            sysctls,
            &[
                ("forbidden sysctls", pod(&["a", "b"]), "forbidden sysctls", "a, b"),
                ("new supported sysctls (1.27)", pod(&["net.ipv4.ip_local_reserved_ports"]), "", ""),
                (
                    "new supported sysctls (1.29)",
                    pod(&["net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout"]),
                    "",
                    "",
                ),
                ("new supported sysctls (1.32)", pod(&["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"]), "", ""),
            ],
        );
    }

    #[test]
    fn app_armor_profile_table() {
        let annotated = |annotations: Value| json!({"metadata": {"annotations": annotations}, "spec": {}});
        let prefix = APPARMOR_ANNOTATION_PREFIX;
        let profile = |t: &str| json!({"appArmorProfile": {"type": t}});
        table(
            app_armor_profile,
            &[
                (
                    "container with default AppArmor + extra annotations",
                    annotated(json!({format!("{prefix}test"): "runtime/default", "env": "prod"})),
                    "",
                    "",
                ),
                (
                    "container with local AppArmor + extra annotations",
                    annotated(json!({format!("{prefix}test"): "localhost/sec-profile01", "env": "dev"})),
                    "",
                    "",
                ),
                ("container with no AppArmor annotations", annotated(json!({"env": "dev"})), "", ""),
                ("container with no annotations", json!({}), "", ""),
                ("pod with runtime default", json!({"spec": {"securityContext": profile("RuntimeDefault")}}), "", ""),
                (
                    "container with localhost profile",
                    json!({"spec": {"containers": [{"name": "foo", "securityContext": profile("RuntimeDefault")}]}}),
                    "",
                    "",
                ),
                (
                    "unconfined pod",
                    json!({"spec": {"securityContext": profile("Unconfined")}}),
                    "forbidden AppArmor profile",
                    r#"pod must not set AppArmor profile type to "Unconfined""#,
                ),
                (
                    "unconfined container",
                    json!({"spec": {"securityContext": profile("RuntimeDefault"),
                                "containers": [{"name": "foo", "securityContext": profile("Unconfined")}]}}),
                    "forbidden AppArmor profile",
                    r#"container "foo" must not set AppArmor profile type to "Unconfined""#,
                ),
                (
                    "unconfined init container",
                    json!({"spec": {"securityContext": profile("RuntimeDefault"), "containers": [{"name": "foo"}],
                                "initContainers": [{"name": "bar", "securityContext": profile("Unconfined")}]}}),
                    "forbidden AppArmor profile",
                    r#"container "bar" must not set AppArmor profile type to "Unconfined""#,
                ),
                (
                    "multiple containers",
                    annotated(json!({
                        format!("{prefix}"): "bogus", format!("{prefix}a"): "", format!("{prefix}b"): "runtime/default",
                        format!("{prefix}c"): "localhost/", format!("{prefix}d"): "localhost/foo",
                        format!("{prefix}e"): "unconfined", format!("{prefix}f"): "unknown",
                    })),
                    "forbidden AppArmor profiles",
                    concat!(
                        r#"annotations must not set AppArmor profile type to "#,
                        r#""container.apparmor.security.beta.kubernetes.io/="bogus"", "#,
                        r#""container.apparmor.security.beta.kubernetes.io/e="unconfined"", "#,
                        r#""container.apparmor.security.beta.kubernetes.io/f="unknown"""#,
                    ),
                ),
            ],
        );
    }

    #[test]
    fn windows_host_process_table() {
        let host_process = |v: Option<bool>| json!({"windowsOptions": {"hostProcess": v}});
        table(
            windows_host_process,
            &[(
                "host process",
                json!({"spec": {"securityContext": host_process(Some(true)), "containers": named(&[
                    Value::Null, json!({}), json!({"windowsOptions": {}}), host_process(Some(false)),
                    host_process(Some(true)), host_process(Some(true)),
                ])}}),
                "hostProcess",
                r#"pod and containers "e", "f" must not set securityContext.windowsOptions.hostProcess=true"#,
            )],
        );
    }

    #[test]
    fn host_probes_and_lifecycle_table() {
        let container = |name: &str, field: &str, action: &str, host: Option<&str>| {
            let mut c = json!({"name": name});
            let handler = match host {
                Some(h) => json!({action: {"host": h}}),
                None => json!({action: {}}),
            };
            match field.split_once('.') {
                Some((lifecycle, hook)) => c[lifecycle] = json!({hook: handler}),
                None => c[field] = handler,
            }
            c
        };
        let pod = |containers: Vec<Value>| json!({"spec": {"containers": containers}});
        let one =
            |name: &str, field: &str, action: &str, host: &str| pod(vec![container(name, field, action, Some(host))]);
        let reason = "probe or lifecycle host";
        let mut unset = container("a", "livenessProbe", "httpGet", None);
        unset["readinessProbe"] = json!({"tcpSocket": {}});
        unset["lifecycle"] = json!({"postStart": {"httpGet": {}}});
        let mut local = container("a", "livenessProbe", "httpGet", Some("127.0.0.1"));
        local["readinessProbe"] = json!({"tcpSocket": {"host": "::1"}});
        local["startupProbe"] = json!({"httpGet": {"host": "localhost"}});
        let mut invalid2 = container("invalid2", "lifecycle.preStop", "tcpSocket", Some("b.com"));
        invalid2["startupProbe"] = json!({"httpGet": {"host": "a.com"}});
        table(
            host_probes_and_lifecycle,
            &[
                ("valid pod with unset hosts", pod(vec![unset]), "", ""),
                (
                    "invalid pod with local host IP as probe host",
                    pod(vec![local]),
                    reason,
                    r#"container "a" uses probe or lifecycle hosts "127.0.0.1", "::1", "localhost""#,
                ),
                (
                    "invalid httpget host in liveness probe",
                    one("a", "livenessProbe", "httpGet", "invalid.host"),
                    reason,
                    r#"container "a" uses probe or lifecycle host "invalid.host""#,
                ),
                (
                    "invalid tcpsocket host in readiness probe",
                    one("b", "readinessProbe", "tcpSocket", "invalid.host"),
                    reason,
                    r#"container "b" uses probe or lifecycle host "invalid.host""#,
                ),
                (
                    "invalid httpget host in startup probe",
                    one("c", "startupProbe", "httpGet", "invalid.host"),
                    reason,
                    r#"container "c" uses probe or lifecycle host "invalid.host""#,
                ),
                (
                    "invalid poststart tcpsocket host",
                    one("d", "lifecycle.postStart", "tcpSocket", "invalid.host"),
                    reason,
                    r#"container "d" uses probe or lifecycle host "invalid.host""#,
                ),
                (
                    "invalid prestop httpget host",
                    one("e", "lifecycle.preStop", "httpGet", "another.invalid.host"),
                    reason,
                    r#"container "e" uses probe or lifecycle host "another.invalid.host""#,
                ),
                (
                    "multiple containers with multiple invalid hosts",
                    pod(vec![
                        json!({"name": "valid"}),
                        container("invalid1", "livenessProbe", "httpGet", Some("a.com")),
                        invalid2,
                    ]),
                    reason,
                    r#"containers "invalid1", "invalid2" use probe or lifecycle hosts "a.com", "b.com""#,
                ),
                (
                    "invalid ipv4 host in probe",
                    one("a", "livenessProbe", "httpGet", "8.8.8.8"),
                    reason,
                    r#"container "a" uses probe or lifecycle host "8.8.8.8""#,
                ),
                (
                    "invalid ipv6 host in probe",
                    one("a", "livenessProbe", "tcpSocket", "2001:4860:4860::8888"),
                    reason,
                    r#"container "a" uses probe or lifecycle host "2001:4860:4860::8888""#,
                ),
                (
                    "invalid host in initcontainer",
                    json!({"spec": {"initContainers": [container("init", "livenessProbe", "httpGet", Some("invalid.init.host"))]}}),
                    reason,
                    r#"container "init" uses probe or lifecycle host "invalid.init.host""#,
                ),
            ],
        );
    }

    #[test]
    fn allow_privilege_escalation_table() {
        table(
            allow_privilege_escalation,
            &[
                (
                    "multiple containers",
                    json!({"spec": {"containers": [
                        {"name": "a"}, sc_named("b", json!({"allowPrivilegeEscalation": null})),
                        sc_named("c", json!({"allowPrivilegeEscalation": true})),
                        sc_named("d", json!({"allowPrivilegeEscalation": false})),
                    ]}}),
                    "allowPrivilegeEscalation != false",
                    r#"containers "a", "b", "c" must set securityContext.allowPrivilegeEscalation=false"#,
                ),
                ("windows pod", json!({"spec": {"os": {"name": "windows"}, "containers": [{"name": "a"}]}}), "", ""),
            ],
        );
    }

    fn sc_named(name: &str, context: Value) -> Value {
        json!({"name": name, "securityContext": context})
    }

    #[test]
    fn run_as_non_root_table() {
        let non_root = |v: bool| json!({"runAsNonRoot": v});
        table(
            run_as_non_root,
            &[
                (
                    "no explicit runAsNonRoot",
                    json!({"spec": {"containers": [{"name": "a"}]}}),
                    "runAsNonRoot != true",
                    r#"pod or container "a" must set securityContext.runAsNonRoot=true"#,
                ),
                (
                    "pod runAsNonRoot=false",
                    json!({"spec": {"securityContext": non_root(false), "containers": [{"name": "a"}]}}),
                    "runAsNonRoot != true",
                    "pod must not set securityContext.runAsNonRoot=false",
                ),
                (
                    "containers runAsNonRoot=false",
                    json!({"spec": {"securityContext": non_root(true), "containers": named(&[
                        Value::Null, json!({}), non_root(false), non_root(false), non_root(true), non_root(true),
                    ])}}),
                    "runAsNonRoot != true",
                    r#"containers "c", "d" must not set securityContext.runAsNonRoot=false"#,
                ),
                (
                    "pod nil, container fallthrough",
                    json!({"spec": {"containers": [
                        {"name": "a"}, sc_named("b", json!({})), sc_named("d", non_root(true)), sc_named("e", non_root(true)),
                    ]}}),
                    "runAsNonRoot != true",
                    r#"pod or containers "a", "b" must set securityContext.runAsNonRoot=true"#,
                ),
                ("host users false allowed", json!({"spec": {"hostUsers": false}}), "", ""),
            ],
        );
    }

    #[test]
    fn run_as_user_table() {
        let user = |u: i64| json!({"runAsUser": u});
        table(
            run_as_user,
            &[
                (
                    "pod runAsUser=0",
                    json!({"spec": {"securityContext": user(0), "containers": [{"name": "a"}]}}),
                    "runAsUser=0",
                    "pod must not set runAsUser=0",
                ),
                (
                    "pod runAsUser=non-zero",
                    json!({"spec": {"securityContext": user(1000), "containers": [{"name": "a"}]}}),
                    "",
                    "",
                ),
                ("pod runAsUser=nil", json!({"spec": {"securityContext": {}, "containers": [{"name": "a"}]}}), "", ""),
                (
                    "containers runAsUser=0",
                    json!({"spec": {"securityContext": user(1000), "containers": named(&[
                        Value::Null, json!({}), user(0), user(0), user(1), user(1),
                    ])}}),
                    "runAsUser=0",
                    r#"containers "c", "d" must not set runAsUser=0"#,
                ),
                (
                    "containers runAsUser=non-zero",
                    json!({"spec": {"containers": [
                        sc_named("c", user(1)), sc_named("d", user(2)), sc_named("e", user(3)), sc_named("f", user(4)),
                    ]}}),
                    "",
                    "",
                ),
                (
                    "UserNamespacesPodSecurityStandards enabled without HostUsers",
                    json!({"spec": {"hostUsers": false}}),
                    "",
                    "",
                ),
                (
                    "UserNamespacesPodSecurityStandards enabled with HostUsers",
                    json!({"spec": {"securityContext": user(0), "containers": [{"name": "a"}], "hostUsers": true}}),
                    "runAsUser=0",
                    "pod must not set runAsUser=0",
                ),
            ],
        );
    }

    #[test]
    fn seccomp_profile_restricted_table() {
        let profile = |t: &str| json!({"seccompProfile": {"type": t}});
        table(
            seccomp_profile_restricted,
            &[
                (
                    "no explicit seccomp",
                    json!({"spec": {"containers": [{"name": "a"}]}}),
                    "seccompProfile",
                    r#"pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
                ),
                (
                    "pod seccomp invalid",
                    json!({"spec": {"securityContext": profile("Unconfined"), "containers": [{"name": "a"}]}}),
                    "seccompProfile",
                    r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#,
                ),
                (
                    "containers seccomp invalid",
                    json!({"spec": {"securityContext": profile("RuntimeDefault"), "containers": named(&[
                        Value::Null, json!({}), profile("Unconfined"), profile("Unconfined"), profile("RuntimeDefault"),
                        profile("RuntimeDefault"),
                    ])}}),
                    "seccompProfile",
                    r#"containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#,
                ),
                (
                    "pod nil, container fallthrough",
                    json!({"spec": {"containers": [
                        {"name": "a"}, sc_named("b", json!({})), sc_named("d", profile("RuntimeDefault")),
                        sc_named("e", profile("RuntimeDefault")),
                    ]}}),
                    "seccompProfile",
                    r#"pod or containers "a", "b" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
                ),
            ],
        );
    }

    #[test]
    fn capabilities_restricted_table() {
        table(
            capabilities_restricted,
            &[(
                "multiple containers",
                json!({"spec": {"containers": named(&[
                    json!({"capabilities": {"add": ["FOO", "BAR"]}}),
                    json!({"capabilities": {"add": ["BAR", "BAZ"]}}),
                    json!({"capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"], "drop": ["ALL", "FOO"]}}),
                ])}}),
                "unrestricted capabilities",
                concat!(
                    r#"containers "a", "b" must set securityContext.capabilities.drop=["ALL"]; "#,
                    r#"containers "a", "b", "c" must not include "BAR", "BAZ", "CHOWN", "FOO" in securityContext.capabilities.add"#,
                ),
            )],
        );
    }

    #[test]
    fn restricted_volumes_table() {
        let mut vols: Vec<Value> =
            VOLUMES_ALLOWED.iter().enumerate().map(|(i, t)| json!({"name": format!("a{}", i + 1), *t: {}})).collect();
        vols.extend(VOLUMES_RESTRICTED.iter().enumerate().map(|(i, t)| json!({"name": format!("b{}", i + 1), *t: {}})));
        vols.push(json!({"name": "c1"}));
        table(
            restricted_volumes,
            &[(
                "host path volumes",
                json!({"spec": {"volumes": vols}}),
                "restricted volume types",
                concat!(
                    r#"volumes "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10", "b11", "b12", "b13", "b14", "#,
                    r#""b15", "b16", "b17", "b18", "b19", "b20", "b21", "c1" use restricted volume types "#,
                    r#""awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "fc", "flexVolume", "#,
                    r#""flocker", "gcePersistentDisk", "gitRepo", "glusterfs", "hostPath", "iscsi", "nfs", "#,
                    r#""photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "unknown", "#,
                    r#""vsphereVolume""#,
                ),
            )],
        );
    }

    #[test]
    fn levels_run_their_checks_and_restricted_replaces_the_baseline_ones_it_tightens() {
        let pod = json!({"hostNetwork": true, "containers": [{"name": "c", "image": "x",
            "securityContext": {"privileged": true, "capabilities": {"add": ["NET_RAW"]}}}],
            "volumes": [{"name": "h", "hostPath": {"path": "/"}}]});
        let ids = |level| evaluate(level, &json!({}), &pod).iter().map(|v| v.check).collect::<Vec<_>>();
        assert!(ids(Level::Privileged).is_empty());
        assert_eq!(ids(Level::Baseline), ["hostNamespaces", "privileged", "capabilities_baseline", "hostPathVolumes"]);
        assert_eq!(
            ids(Level::Restricted),
            [
                "hostNamespaces",
                "privileged",
                "allowPrivilegeEscalation",
                "capabilities_restricted",
                "restrictedVolumes",
                "runAsNonRoot",
                "seccompProfile_restricted"
            ]
        );
        let message = forbidden_detail(&evaluate(Level::Baseline, &json!({}), &pod)[..2]);
        assert_eq!(
            message,
            r#"host namespaces (hostNetwork=true), privileged (container "c" must not set securityContext.privileged=true)"#
        );
        // An ordinary pod passes baseline; restricted asks for more.
        let plain = json!({"containers": [{"name": "c", "image": "nginx"}]});
        assert!(evaluate(Level::Baseline, &json!({}), &plain).is_empty());
        let hardened = json!({"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "image": "nginx", "securityContext":
                {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]});
        assert!(evaluate(Level::Restricted, &json!({}), &hardened).is_empty());
        assert_eq!(Level::parse("baseline"), Some(Level::Baseline));
        assert_eq!(Level::parse("Baseline"), None);
    }
}
