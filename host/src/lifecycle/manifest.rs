//! Plugin manifests: which plugins to run, where their bytes come from, the digest they are
//! pinned to, their limits, the capabilities they are narrowed to, their settings, and how a
//! new version of them is rolled out. Parsing and validation only: reading plugin bytes and
//! compiling them is `loader`'s, running them the controller's.
//!
//! ```yaml
//! apiVersion: wasmcm.dev/v1alpha1
//! kind: Plugin                 # or PluginList with `items`, or several YAML documents
//! metadata: {name: replicaset}
//! spec:
//!   source: {file: replicaset.wasm}   # or {builtin: replicaset}, or
//!                                     # {configMap: {namespace: wasmcm, name: plugins, key: rs.wasm}}, or
//!                                     # {oci: registry.example/team/rs:1.2@sha256:…}
//!   sha256: 3f1c…                     # refused on mismatch
//!   enabled: true
//!   limits: {memory: 256Mi, deadline: 2s, workers: 5}
//!   capabilities: {reads: [apps/v1/ReplicaSet, v1/Pod], writes: [v1/Pod]}   # narrows describe()
//!   serviceAccount: my-plugin         # its writes impersonate this ServiceAccount (of the
//!                                     # host's namespace, or namespace/name)
//!   scope:                            # default: every namespace but the withheld ones
//!     namespaces: [team-a, team-b]    # only these, and/or
//!     namespaceSelector: {matchLabels: {tenant: a}}   # only those matching
//!     grant: [kube-system]            # withheld namespaces, granted by name (below)
//!     hostNamespace: false            # the host's namespace only when true (or granted)
//!     clusterWrites: [rbac.authorization.k8s.io/v1/ClusterRole]   # none by default
//!     serviceAccounts: [default, builder]   # what its pods and pod templates may run as
//!     podSecurity: baseline           # privileged | baseline | restricted
//!   settings: {any: json}
//!   rollout: {strategy: Shadow, agreements: 100, duration: 5m, abandonOnMismatch: true}
//!   revert: {window: 20, maxFailures: 5}
//! ```
//!
//! The default scope withholds the namespaces an operator would not hand a plugin: the system
//! namespaces (kube-system, kube-public, kube-node-lease), the host's own and the namespace of
//! its Leases. `grant` names those it may act in all the same (`grant: [kube-system]` with no
//! `namespaces` is every namespace plus kube-system); neither `namespaces` nor
//! `namespaceSelector` reaches a withheld namespace without it, and a `namespaces` list naming
//! a system namespace it does not grant is refused as a mistake. `hostNamespace: true` grants
//! the host's own whatever its name.
//!
//! The pods a plugin writes, and the pod templates of the workloads it writes (Deployments,
//! ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs, ReplicationControllers,
//! PodTemplates), may run only as the ServiceAccounts `serviceAccounts` lists (`["*"]`: any),
//! and must meet the Pod Security Standards level `podSecurity`. A plugin's defaults are
//! `[default]` and `baseline`; a `builtin:` source's are `["*"]` and `privileged`, because the
//! built-ins copy templates their users wrote, which the cluster's own admission (Pod Security
//! included) already applied to when the users wrote them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use wasmcm_guest::Kind;

use crate::writes::scope::{SYSTEM_NAMESPACES, Scope, ServiceAccounts};

pub(crate) const API_VERSION: &str = "wasmcm.dev/v1alpha1";

/// Largest plugin accepted from a ConfigMap: the API server's limit for a whole ConfigMap.
pub(crate) const MAX_CONFIGMAP_PLUGIN_BYTES: usize = 1 << 20;

/// Largest `settings` document; settings are configuration, not data.
const MAX_SETTINGS_BYTES: usize = 64 << 10;

/// The built-in plugins, loaded through the same path as any other. They are
/// kube-controller-manager's controllers, which act in every namespace: each is granted the
/// system namespaces (CoreDNS's Deployment lives in kube-system; kube-public and
/// kube-node-lease hold no workloads on a kubeadm cluster, but one created there is reconciled
/// as KCM would), any ServiceAccount and any pod (they copy templates their users wrote). The
/// host's own namespace stays withheld: a deployment that runs the host through them grants it
/// in its own manifest (deploy/manifests/07-configmap-plugins.yaml).
pub(crate) const DEFAULT_MANIFEST: &str = r#"
apiVersion: wasmcm.dev/v1alpha1
kind: PluginList
items:
- metadata: {name: replicaset}
  spec:
    source: {builtin: replicaset}
    scope: {grant: [kube-system, kube-public, kube-node-lease], serviceAccounts: ["*"], podSecurity: privileged}
- metadata: {name: deployment}
  spec:
    source: {builtin: deployment}
    scope: {grant: [kube-system, kube-public, kube-node-lease], serviceAccounts: ["*"], podSecurity: privileged}
- metadata: {name: rollback}
  spec:
    source: {builtin: rollback}
    scope: {grant: [kube-system, kube-public, kube-node-lease], serviceAccounts: ["*"], podSecurity: privileged}
- metadata: {name: job}
  spec:
    source: {builtin: job}
    scope: {grant: [kube-system, kube-public, kube-node-lease], serviceAccounts: ["*"], podSecurity: privileged}
- metadata: {name: cronjob}
  spec:
    source: {builtin: cronjob}
    scope: {grant: [kube-system, kube-public, kube-node-lease], serviceAccounts: ["*"], podSecurity: privileged}
- metadata: {name: ttlafterfinished}
  spec:
    source: {builtin: ttlafterfinished}
    scope: {grant: [kube-system, kube-public, kube-node-lease], serviceAccounts: ["*"], podSecurity: privileged}
"#;

/// One plugin as the manifest describes it, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct PluginSpec {
    pub name: String,
    /// The manifest file it came from (`None` for the default manifest).
    pub manifest: Option<PathBuf>,
    pub source: Source,
    pub sha256: Option<String>,
    pub enabled: bool,
    pub memory_bytes: usize,
    pub deadline: Duration,
    /// Workers for this plugin; the host's `--workers` when the manifest says nothing.
    pub workers: Option<usize>,
    pub reads: Option<Vec<Kind>>,
    pub writes: Option<Vec<Kind>>,
    /// Where it may act.
    pub scope: Scope,
    /// The ServiceAccount its writes impersonate, (namespace, name); namespace `None` is the
    /// host's.
    pub service_account: Option<(Option<String>, String)>,
    /// JSON object text.
    pub settings: String,
    pub rollout: RolloutStrategy,
    pub revert: Revert,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    Builtin(String),
    /// Absolute, or resolved against the manifest's directory.
    File(PathBuf),
    ConfigMap {
        namespace: String,
        name: String,
        key: String,
    },
    /// A WebAssembly OCI artifact: `registry/repository[:tag][@sha256:…]`, as written.
    Oci(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Builtin(n) => write!(f, "built-in plugin {n}"),
            Source::File(p) => write!(f, "{}", p.display()),
            Source::ConfigMap { namespace, name, key } => write!(f, "ConfigMap {namespace}/{name} key {key}"),
            Source::Oci(reference) => write!(f, "oci://{reference}"),
        }
    }
}

/// How a new version of a running plugin takes over.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum RolloutStrategy {
    /// Promoted as soon as it is compiled and found compatible.
    #[default]
    Immediate,
    /// Runs beside the live version on the same requests, its writes compared and never
    /// performed; promoted after `agreements` agreeing reconciles (or once `duration` has passed
    /// with at least one), never while it has disagreed.
    Shadow { agreements: Option<u64>, duration: Option<Duration>, abandon_on_mismatch: bool },
}

/// Auto-revert of a newly promoted version: during its first `window` reconciles, more than
/// `max_failures` traps or errors bring the previous version back. `window: 0` turns it off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Revert {
    pub window: u64,
    pub max_failures: u64,
}

impl Default for Revert {
    fn default() -> Self {
        Revert { window: 20, max_failures: 5 }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {reason}", plugin.as_ref().map(|p| format!(": plugin {p}")).unwrap_or_default())]
pub struct ManifestError {
    pub file: String,
    pub plugin: Option<String>,
    pub reason: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Document {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    spec: Option<serde_json::Value>,
    #[serde(default)]
    items: Option<Vec<Item>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Item {
    metadata: Metadata,
    spec: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Metadata {
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSpec {
    source: RawSource,
    sha256: Option<String>,
    #[serde(default = "yes")]
    enabled: bool,
    #[serde(default)]
    limits: RawLimits,
    #[serde(default)]
    capabilities: RawCapabilities,
    #[serde(default)]
    scope: RawScope,
    service_account: Option<String>,
    settings: Option<serde_json::Value>,
    rollout: Option<RawRollout>,
    revert: Option<RawRevert>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSource {
    builtin: Option<String>,
    file: Option<String>,
    config_map: Option<RawConfigMap>,
    oci: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfigMap {
    namespace: Option<String>,
    name: String,
    key: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    memory: Option<String>,
    deadline: Option<String>,
    workers: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawCapabilities {
    reads: Option<Vec<String>>,
    writes: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawScope {
    namespaces: Option<Vec<String>>,
    namespace_selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    #[serde(default)]
    host_namespace: bool,
    grant: Option<Vec<String>>,
    cluster_writes: Option<Vec<String>>,
    service_accounts: Option<Vec<String>>,
    pod_security: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawRollout {
    strategy: String,
    agreements: Option<u64>,
    duration: Option<String>,
    #[serde(default)]
    abandon_on_mismatch: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawRevert {
    window: u64,
    max_failures: u64,
}

/// Where a manifest is read from, for relative paths and for the host's own namespace.
pub(crate) struct Origin<'a> {
    /// Shown in errors.
    pub file: &'a str,
    /// Directory relative `file:` sources are resolved against.
    pub dir: Option<&'a Path>,
    /// Namespace of a `configMap:` source that names none (the host's own).
    pub namespace: &'a str,
}

/// Parses a manifest text: a Plugin, a PluginList, or several documents of either.
pub(crate) fn parse(text: &str, origin: &Origin) -> Result<Vec<PluginSpec>, ManifestError> {
    let err = |plugin: Option<&str>, reason: String| ManifestError {
        file: origin.file.to_string(),
        plugin: plugin.map(str::to_string),
        reason,
    };
    let docs: Vec<Document> = serde_saphyr::from_multiple(text).map_err(|e| err(None, format!("invalid YAML: {e}")))?;
    let mut specs = Vec::new();
    for doc in docs {
        if doc.api_version != API_VERSION {
            return Err(err(None, format!("apiVersion {:?} is not {API_VERSION}", doc.api_version)));
        }
        let items = match (doc.kind.as_str(), doc.metadata, doc.spec, doc.items) {
            ("Plugin", Some(metadata), Some(spec), None) => vec![Item { metadata, spec }],
            ("Plugin", ..) => return Err(err(None, "a Plugin has metadata.name and spec (and no items)".into())),
            ("PluginList", None, None, Some(items)) => items,
            ("PluginList", ..) => return Err(err(None, "a PluginList has items only".into())),
            (other, ..) => return Err(err(None, format!("kind {other:?} is neither Plugin nor PluginList"))),
        };
        for item in items {
            let name = item.metadata.name;
            let spec = to_spec(&name, item.spec, origin).map_err(|reason| err(Some(&name), reason))?;
            if specs.iter().any(|s: &PluginSpec| s.name == name) {
                return Err(err(Some(&name), "defined twice in one manifest".into()));
            }
            specs.push(spec);
        }
    }
    Ok(specs)
}

fn to_spec(name: &str, spec: serde_json::Value, origin: &Origin) -> Result<PluginSpec, String> {
    if let Some(why) = wasmcm_core::validation::dns1123_label(name).first() {
        return Err(format!("name {name:?} must be a DNS label: {why}"));
    }
    let raw: RawSpec = serde_json::from_value(spec).map_err(|e| format!("spec: {e}"))?;
    let source = to_source(raw.source, origin)?;
    let sha256 = match raw.sha256 {
        Some(d) if d.len() == 64 && d.chars().all(|c| c.is_ascii_hexdigit()) => Some(d.to_ascii_lowercase()),
        Some(d) => return Err(format!("spec.sha256 {d:?} is not 64 hex digits")),
        None => None,
    };
    let defaults = crate::engine::Limits::default();
    let memory_bytes = match raw.limits.memory {
        Some(m) => wasmcm_core::quantity::nanos(&m)
            .map(|n| n / 1_000_000_000)
            .filter(|b| (1 << 20..=4 << 30).contains(b))
            .map(|b| b as usize)
            .ok_or_else(|| format!("spec.limits.memory {m:?}: a quantity between 1Mi and 4Gi, e.g. 256Mi"))?,
        None => defaults.memory_bytes,
    };
    let deadline = match raw.limits.deadline {
        Some(d) => parse_duration(&d)
            .filter(|d| !d.is_zero() && *d <= Duration::from_secs(300))
            .ok_or_else(|| format!("spec.limits.deadline {d:?}: a duration up to 5m, e.g. 2s or 500ms"))?,
        None => defaults.deadline,
    };
    let workers = match raw.limits.workers {
        Some(w @ 1..=64) => Some(w),
        Some(w) => return Err(format!("spec.limits.workers {w}: between 1 and 64")),
        None => None,
    };
    let kinds = |field: &str, list: Option<Vec<String>>| -> Result<Option<Vec<Kind>>, String> {
        list.map(|l| {
            l.iter()
                .map(|k| {
                    parse_kind(k).ok_or_else(|| format!("spec.capabilities.{field}: {k:?} is not apiVersion/Kind"))
                })
                .collect()
        })
        .transpose()
    };
    let scope = to_scope(raw.scope, matches!(source, Source::Builtin(_)))?;
    let service_account = raw.service_account.map(to_service_account).transpose()?;
    let settings = match raw.settings {
        None => "{}".to_string(),
        Some(v @ serde_json::Value::Object(_)) => v.to_string(),
        Some(_) => return Err("spec.settings must be an object".into()),
    };
    if settings.len() > MAX_SETTINGS_BYTES {
        return Err(format!("spec.settings is {} bytes; at most {MAX_SETTINGS_BYTES}", settings.len()));
    }
    let rollout = to_rollout(raw.rollout)?;
    let revert = match raw.revert {
        Some(r) if r.window > 0 && r.max_failures >= r.window => {
            return Err("spec.revert.maxFailures must be below window (or window 0 to turn it off)".into());
        }
        Some(r) => Revert { window: r.window, max_failures: r.max_failures },
        None => Revert::default(),
    };
    Ok(PluginSpec {
        name: name.to_string(),
        manifest: origin.dir.map(|_| PathBuf::from(origin.file)),
        source,
        sha256,
        enabled: raw.enabled,
        memory_bytes,
        deadline,
        workers,
        reads: kinds("reads", raw.capabilities.reads)?,
        writes: kinds("writes", raw.capabilities.writes)?,
        scope,
        service_account,
        settings,
        rollout,
        revert,
    })
}

/// `spec.source`: exactly one of a built-in, a file (relative to its manifest's directory), a
/// ConfigMap (in the host's namespace unless it names one) or an OCI reference.
fn to_source(raw: RawSource, origin: &Origin) -> Result<Source, String> {
    Ok(match (raw.builtin, raw.file, raw.config_map, raw.oci) {
        (Some(b), None, None, None) => Source::Builtin(b),
        (None, Some(f), None, None) => {
            let path = PathBuf::from(&f);
            Source::File(match origin.dir {
                Some(dir) if path.is_relative() => dir.join(path),
                None if path.is_relative() => {
                    return Err(format!(
                        "spec.source.file {f:?}: an absolute path (no manifest directory to resolve it against)"
                    ));
                }
                _ => path,
            })
        }
        (None, None, Some(cm), None) => {
            let namespace = cm.namespace.unwrap_or_else(|| origin.namespace.to_string());
            Source::ConfigMap { namespace, name: cm.name, key: cm.key }
        }
        (None, None, None, Some(reference)) => {
            crate::lifecycle::oci::parse(&reference).map_err(|e| format!("spec.source.oci: {e}"))?;
            Source::Oci(reference)
        }
        _ => return Err("spec.source needs exactly one of builtin, file, configMap, oci".into()),
    })
}

/// `spec.serviceAccount`, `[namespace/]name`.
fn to_service_account(sa: String) -> Result<(Option<String>, String), String> {
    let (namespace, name) = match sa.split_once('/') {
        Some((ns, name)) => (Some(ns.to_string()), name.to_string()),
        None => (None, sa.clone()),
    };
    let bad = namespace.iter().chain([&name]).find_map(|part| {
        wasmcm_core::validation::dns1123_subdomain(part).first().map(|why| format!("{part:?}: {why}"))
    });
    match bad {
        Some(why) => Err(format!("spec.serviceAccount {sa:?} is not [namespace/]name: {why}")),
        None => Ok((namespace, name)),
    }
}

/// `spec.rollout`: Immediate (the default), or Shadow with agreements, a duration or both.
fn to_rollout(raw: Option<RawRollout>) -> Result<RolloutStrategy, String> {
    Ok(match raw {
        None => RolloutStrategy::Immediate,
        Some(r) if r.strategy == "Immediate" => RolloutStrategy::Immediate,
        Some(r) if r.strategy == "Shadow" => {
            let duration = r
                .duration
                .map(|d| parse_duration(&d).ok_or_else(|| format!("spec.rollout.duration {d:?} is not a duration")))
                .transpose()?;
            if r.agreements.is_none() && duration.is_none() {
                return Err("spec.rollout: Shadow needs agreements or duration (or both)".into());
            }
            RolloutStrategy::Shadow { agreements: r.agreements, duration, abandon_on_mismatch: r.abandon_on_mismatch }
        }
        Some(r) => return Err(format!("spec.rollout.strategy {:?}: Immediate or Shadow", r.strategy)),
    })
}

/// `builtin`: the source is a built-in plugin, whose pods default to any account and level.
fn to_scope(raw: RawScope, builtin: bool) -> Result<Scope, String> {
    let namespace_names = |field: &str, list: Vec<String>| -> Result<std::collections::BTreeSet<String>, String> {
        list.into_iter()
            .map(|ns| match wasmcm_core::validation::dns1123_label(&ns).first() {
                Some(why) => Err(format!("spec.scope.{field}: {ns:?} is not a namespace name: {why}")),
                None => Ok(ns),
            })
            .collect()
    };
    let grant = namespace_names("grant", raw.grant.unwrap_or_default())?;
    let namespaces = raw.namespaces.map(|list| namespace_names("namespaces", list)).transpose()?;
    if let Some(ns) =
        namespaces.iter().flatten().find(|ns| SYSTEM_NAMESPACES.contains(&ns.as_str()) && !grant.contains(*ns))
    {
        return Err(format!(
            "spec.scope.namespaces: {ns:?} is a system namespace, which the default scope withholds: grant it by \
             name in spec.scope.grant"
        ));
    }
    let namespace_selector = raw
        .namespace_selector
        .map(|ls| {
            wasmcm_core::Selector::from_label_selector(&ls).map_err(|e| format!("spec.scope.namespaceSelector: {e}"))
        })
        .transpose()?;
    let cluster_writes = raw
        .cluster_writes
        .unwrap_or_default()
        .iter()
        .map(|k| parse_kind(k).ok_or_else(|| format!("spec.scope.clusterWrites: {k:?} is not apiVersion/Kind")))
        .collect::<Result<_, _>>()?;
    let service_accounts = match raw.service_accounts {
        None if builtin => ServiceAccounts::Any,
        None => Scope::default().service_accounts,
        Some(list) if list.iter().any(|a| a == "*") => {
            if list.len() > 1 {
                return Err("spec.scope.serviceAccounts: \"*\" allows any account and stands alone".into());
            }
            ServiceAccounts::Any
        }
        Some(list) => ServiceAccounts::Only(
            list.into_iter()
                .map(|a| match wasmcm_core::validation::dns1123_subdomain(&a).first() {
                    Some(why) => Err(format!("spec.scope.serviceAccounts: {a:?} is not a ServiceAccount name: {why}")),
                    None => Ok(a),
                })
                .collect::<Result<_, _>>()?,
        ),
    };
    let pod_security = match raw.pod_security {
        None if builtin => wasmcm_core::pod_security::Level::Privileged,
        None => Scope::default().pod_security,
        Some(level) => wasmcm_core::pod_security::Level::parse(&level)
            .ok_or_else(|| format!("spec.scope.podSecurity {level:?}: privileged, baseline or restricted"))?,
    };
    Ok(Scope {
        namespaces,
        namespace_selector,
        host_namespace: raw.host_namespace,
        grant,
        cluster_writes,
        service_accounts,
        pod_security,
    })
}

/// `apps/v1/ReplicaSet`, `v1/Pod`.
pub(crate) fn parse_kind(s: &str) -> Option<Kind> {
    let (api_version, kind) = s.rsplit_once('/')?;
    (!api_version.is_empty() && !kind.is_empty()).then(|| Kind::new(api_version, kind))
}

/// `500ms`, `2s`, `5m`, `1h30m` (jiff's friendly format).
fn parse_duration(s: &str) -> Option<Duration> {
    let d: jiff::SignedDuration = s.parse().ok()?;
    Duration::try_from(d).ok()
}

/// The manifests of a `--plugins` path: a file, or every `.yaml`/`.yml`/`.json` file of a
/// directory in name order.
pub(crate) fn files(path: &Path) -> Result<Vec<PathBuf>, ManifestError> {
    let err = |reason: String| ManifestError { file: path.display().to_string(), plugin: None, reason };
    let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot read: {e}")))?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| err(format!("cannot read the directory: {e}")))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// Reads one manifest file.
pub(crate) fn read(path: &Path, namespace: &str) -> Result<Vec<PluginSpec>, ManifestError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ManifestError {
        file: file.clone(),
        plugin: None,
        reason: format!("cannot read: {e}"),
    })?;
    parse(&text, &Origin { file: &file, dir: Some(path.parent().unwrap_or(Path::new("."))), namespace })
}

/// The entry of the Plugin object `name` (`plugins.wasmcm.dev`), by the manifests' rules; a
/// `file:` source is an absolute path on the host.
pub(crate) fn from_object(name: &str, spec: serde_json::Value, namespace: &str) -> Result<PluginSpec, ManifestError> {
    let file = format!("Plugin {name}");
    let origin = Origin { file: &file, dir: None, namespace };
    to_spec(name, spec, &origin).map_err(|reason| ManifestError {
        file: file.clone(),
        plugin: Some(name.into()),
        reason,
    })
}

/// `specs` with `over` laid over them: an entry of the same name replaces the earlier one.
pub(crate) fn overlay(mut specs: Vec<PluginSpec>, over: Vec<PluginSpec>) -> Vec<PluginSpec> {
    for spec in over {
        specs.retain(|s| s.name != spec.name);
        specs.push(spec);
    }
    specs
}

/// The plugins to run: the default manifest, then each `--plugins` path in order, a later
/// definition of a name replacing an earlier one. Files that fail are reported and skipped.
pub fn resolve_plugins(paths: &[PathBuf], namespace: &str) -> (Vec<PluginSpec>, Vec<ManifestError>) {
    let origin = Origin { file: "default manifest", dir: None, namespace };
    let mut specs = parse(DEFAULT_MANIFEST, &origin).unwrap_or_default();
    let mut errors = Vec::new();
    for path in paths {
        let files = match files(path) {
            Ok(f) => f,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        for file in files {
            match read(&file, namespace) {
                Ok(found) => specs = overlay(specs, found),
                Err(e) => errors.push(e),
            }
        }
    }
    (specs, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin<'static> {
        Origin { file: "m.yaml", dir: Some(Path::new("/etc/wasmcm")), namespace: "wasmcm" }
    }

    #[test]
    fn the_default_manifest_names_every_builtin() {
        let specs = parse(DEFAULT_MANIFEST, &Origin { file: "default", dir: None, namespace: "" }).unwrap();
        let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, crate::engine::builtin::names().collect::<Vec<_>>());
        assert!(specs.iter().all(|s| s.enabled && s.rollout == RolloutStrategy::Immediate));
    }

    #[test]
    fn a_full_spec_parses() {
        let text = r#"
apiVersion: wasmcm.dev/v1alpha1
kind: Plugin
metadata: {name: stamp}
spec:
  source: {file: stamp.wasm}
  sha256: ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789
  limits: {memory: 64Mi, deadline: 250ms, workers: 2}
  capabilities: {reads: [v1/ConfigMap], writes: []}
  settings: {limit: 3}
  rollout: {strategy: Shadow, agreements: 10, abandonOnMismatch: true}
  revert: {window: 10, maxFailures: 2}
"#;
        let s = &parse(text, &origin()).unwrap()[0];
        assert_eq!(s.source, Source::File("/etc/wasmcm/stamp.wasm".into()));
        assert_eq!(s.sha256.as_deref(), Some("abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"));
        assert_eq!((s.memory_bytes, s.deadline, s.workers), (64 << 20, Duration::from_millis(250), Some(2)));
        assert_eq!(s.reads, Some(vec![Kind::new("v1", "ConfigMap")]));
        assert_eq!(s.writes, Some(vec![]));
        assert_eq!(s.settings, r#"{"limit":3}"#);
        assert_eq!(
            s.rollout,
            RolloutStrategy::Shadow { agreements: Some(10), duration: None, abandon_on_mismatch: true }
        );
        assert_eq!(s.revert, Revert { window: 10, max_failures: 2 });
    }

    #[test]
    fn lists_and_documents_and_configmaps() {
        let text = r#"
apiVersion: wasmcm.dev/v1alpha1
kind: PluginList
items:
- metadata: {name: a}
  spec: {source: {configMap: {name: plugins, key: a.wasm}}, enabled: false}
---
apiVersion: wasmcm.dev/v1alpha1
kind: Plugin
metadata: {name: b}
spec: {source: {builtin: replicaset}}
"#;
        let specs = parse(text, &origin()).unwrap();
        assert_eq!(
            specs[0].source,
            Source::ConfigMap { namespace: "wasmcm".into(), name: "plugins".into(), key: "a.wasm".into() }
        );
        assert!(!specs[0].enabled);
        assert_eq!(specs[1].source, Source::Builtin("replicaset".into()));
    }

    #[test]
    fn bad_manifests_say_where_and_why() {
        let doc = |spec: &str| {
            format!("apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {{name: p}}\nspec: {spec}\n")
        };
        for (text, expected) in [
            ("apiVersion: v1\nkind: Plugin\n".to_string(), "apiVersion \"v1\" is not wasmcm.dev/v1alpha1"),
            ("apiVersion: wasmcm.dev/v1alpha1\nkind: Pod\n".into(), "kind \"Pod\" is neither"),
            (doc("{source: {}}"), "m.yaml: plugin p: spec.source needs exactly one"),
            (doc("{source: {file: a, builtin: b}}"), "exactly one of"),
            (doc("{source: {file: a}, sha256: abc}"), "spec.sha256 \"abc\" is not 64 hex digits"),
            (doc("{source: {file: a}, limits: {memory: lots}}"), "spec.limits.memory \"lots\""),
            (doc("{source: {file: a}, limits: {deadline: forever}}"), "spec.limits.deadline \"forever\""),
            (doc("{source: {file: a}, limits: {workers: 0}}"), "spec.limits.workers 0"),
            (doc("{source: {file: a}, capabilities: {reads: [Pod]}}"), "\"Pod\" is not apiVersion/Kind"),
            (doc("{source: {file: a}, settings: [1]}"), "spec.settings must be an object"),
            (doc("{source: {file: a}, rollout: {strategy: Shadow}}"), "needs agreements or duration"),
            (doc("{source: {file: a}, rollout: {strategy: Canary}}"), "Immediate or Shadow"),
            (doc("{source: {file: a}, revert: {window: 3, maxFailures: 3}}"), "maxFailures must be below window"),
            (doc("{source: {file: a}, colour: blue}"), "unknown field `colour`"),
            (doc("{source: {file: a}, scope: {grant: [Kube_System]}}"), "spec.scope.grant: \"Kube_System\" is not a namespace name"),
            (
                doc("{source: {file: a}, scope: {namespaces: [team-a, kube-system]}}"),
                "spec.scope.namespaces: \"kube-system\" is a system namespace, which the default scope withholds: grant it by name in spec.scope.grant",
            ),
            (doc("{source: {file: a}, scope: {serviceAccounts: [\"*\", x]}}"), "\"*\" allows any account and stands alone"),
            (doc("{source: {file: a}, scope: {serviceAccounts: [a/b]}}"), "spec.scope.serviceAccounts: \"a/b\" is not a ServiceAccount name"),
            (doc("{source: {file: a}, scope: {podSecurity: strict}}"), "spec.scope.podSecurity \"strict\": privileged, baseline or restricted"),
            ("apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {name: Bad_Name}\nspec: {source: {file: a}}\n".into(), "must be a DNS label"),
            ("{{{".into(), "invalid YAML"),
        ] {
            let e = parse(&text, &origin()).expect_err(&text).to_string();
            assert!(e.starts_with("m.yaml") && e.contains(expected), "{text}\n→ {e}");
        }
    }

    #[test]
    fn scopes_parse_with_their_defaults() {
        use wasmcm_core::pod_security::Level;
        let text = r#"
apiVersion: wasmcm.dev/v1alpha1
kind: PluginList
items:
- metadata: {name: plain}
  spec: {source: {file: p.wasm}}
- metadata: {name: granted}
  spec:
    source: {file: p.wasm}
    scope: {grant: [kube-system], namespaces: [kube-system, team-a], serviceAccounts: [builder, default], podSecurity: restricted}
- metadata: {name: anything}
  spec: {source: {file: p.wasm}, scope: {serviceAccounts: ["*"], podSecurity: privileged}}
- metadata: {name: builtin}
  spec: {source: {builtin: replicaset}}
- metadata: {name: narrowed-builtin}
  spec: {source: {builtin: replicaset}, scope: {serviceAccounts: [default], podSecurity: baseline}}
"#;
        let specs = parse(text, &origin()).unwrap();
        let only = |names: &[&str]| ServiceAccounts::Only(names.iter().map(|n| n.to_string()).collect());
        assert_eq!(specs[0].scope, Scope::default());
        assert_eq!(
            (&specs[0].scope.service_accounts, specs[0].scope.pod_security),
            (&only(&["default"]), Level::Baseline)
        );
        let granted = &specs[1].scope;
        assert_eq!(granted.grant, ["kube-system".to_string()].into());
        assert_eq!(granted.namespaces, Some(["kube-system".to_string(), "team-a".to_string()].into()));
        assert_eq!(
            (&granted.service_accounts, granted.pod_security),
            (&only(&["builder", "default"]), Level::Restricted)
        );
        assert_eq!(
            (&specs[2].scope.service_accounts, specs[2].scope.pod_security),
            (&ServiceAccounts::Any, Level::Privileged)
        );
        assert_eq!(
            (&specs[3].scope.service_accounts, specs[3].scope.pod_security),
            (&ServiceAccounts::Any, Level::Privileged)
        );
        assert!(specs[3].scope.grant.is_empty(), "a built-in source grants no namespace by itself");
        assert_eq!(
            (&specs[4].scope.service_accounts, specs[4].scope.pod_security),
            (&only(&["default"]), Level::Baseline)
        );
    }

    #[test]
    fn the_default_manifest_grants_the_builtins_the_system_namespaces_and_any_pod() {
        let specs = parse(DEFAULT_MANIFEST, &Origin { file: "default", dir: None, namespace: "" }).unwrap();
        for s in &specs {
            let grant: Vec<&str> = s.scope.grant.iter().map(String::as_str).collect();
            assert_eq!(grant, ["kube-node-lease", "kube-public", "kube-system"], "{}", s.name);
            assert!(!s.scope.host_namespace && s.scope.namespaces.is_none(), "{}", s.name);
            assert_eq!(s.scope.service_accounts, ServiceAccounts::Any);
            assert_eq!(s.scope.pod_security, wasmcm_core::pod_security::Level::Privileged);
        }
    }

    #[test]
    fn later_paths_override_by_name_and_broken_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write(
            "a.yaml",
            "apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {name: deployment}\nspec: {source: {builtin: deployment}, enabled: false}\n",
        );
        write(
            "b.yaml",
            "apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {name: extra}\nspec: {source: {file: extra.wasm}}\n",
        );
        write("c.yaml", "not: a manifest\n");
        write("notes.txt", "ignored");
        let (specs, errors) = resolve_plugins(&[dir.path().to_path_buf()], "wasmcm");
        let names: Vec<_> = specs.iter().map(|s| (s.name.as_str(), s.enabled)).collect();
        assert_eq!(
            names,
            [
                ("replicaset", true),
                ("rollback", true),
                ("job", true),
                ("cronjob", true),
                ("ttlafterfinished", true),
                ("deployment", false),
                ("extra", true)
            ]
        );
        assert_eq!(specs[6].source, Source::File(dir.path().join("extra.wasm")));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].file.ends_with("c.yaml"), "{}", errors[0]);
    }
}
