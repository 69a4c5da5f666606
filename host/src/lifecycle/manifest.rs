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
//!                                     # {configMap: {namespace: wasmcm, name: plugins, key: rs.wasm}}
//!   sha256: 3f1c…                     # refused on mismatch
//!   enabled: true
//!   limits: {memory: 256Mi, deadline: 2s, workers: 5}
//!   capabilities: {reads: [apps/v1/ReplicaSet, v1/Pod], writes: [v1/Pod]}   # narrows describe()
//!   serviceAccount: my-plugin         # its writes impersonate this ServiceAccount (of the
//!                                     # host's namespace, or namespace/name)
//!   scope:                            # default: every namespace but the host's own
//!     namespaces: [team-a, team-b]    # and/or
//!     namespaceSelector: {matchLabels: {tenant: a}}
//!     hostNamespace: false            # the host's namespace only when true
//!     clusterWrites: [rbac.authorization.k8s.io/v1/ClusterRole]   # none by default
//!   settings: {any: json}
//!   rollout: {strategy: Shadow, agreements: 100, duration: 5m, abandonOnMismatch: true}
//!   revert: {window: 20, maxFailures: 5}
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use wasmcm_guest::Kind;

use crate::writes::scope::Scope;

pub(crate) const API_VERSION: &str = "wasmcm.dev/v1alpha1";

/// Largest plugin accepted from a ConfigMap: the API server's limit for a whole ConfigMap.
pub(crate) const MAX_CONFIGMAP_PLUGIN_BYTES: usize = 1 << 20;

/// Largest `settings` document; settings are configuration, not data.
const MAX_SETTINGS_BYTES: usize = 64 << 10;

/// The built-in plugins, loaded through the same path as any other.
pub(crate) const DEFAULT_MANIFEST: &str = r#"
apiVersion: wasmcm.dev/v1alpha1
kind: PluginList
items:
- metadata: {name: replicaset}
  spec: {source: {builtin: replicaset}}
- metadata: {name: deployment}
  spec: {source: {builtin: deployment}}
- metadata: {name: rollback}
  spec: {source: {builtin: rollback}}
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
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Builtin(n) => write!(f, "built-in plugin {n}"),
            Source::File(p) => write!(f, "{}", p.display()),
            Source::ConfigMap { namespace, name, key } => write!(f, "ConfigMap {namespace}/{name} key {key}"),
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
    cluster_writes: Option<Vec<String>>,
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
    let source = match (raw.source.builtin, raw.source.file, raw.source.config_map) {
        (Some(b), None, None) => Source::Builtin(b),
        (None, Some(f), None) => {
            let path = PathBuf::from(&f);
            Source::File(match origin.dir {
                Some(dir) if path.is_relative() => dir.join(path),
                _ => path,
            })
        }
        (None, None, Some(cm)) => {
            let namespace = cm.namespace.unwrap_or_else(|| origin.namespace.to_string());
            Source::ConfigMap { namespace, name: cm.name, key: cm.key }
        }
        _ => return Err("spec.source needs exactly one of builtin, file, configMap".into()),
    };
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
    let scope = to_scope(raw.scope)?;
    let service_account = raw
        .service_account
        .map(|sa| {
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
        })
        .transpose()?;
    let settings = match raw.settings {
        None => "{}".to_string(),
        Some(v @ serde_json::Value::Object(_)) => v.to_string(),
        Some(_) => return Err("spec.settings must be an object".into()),
    };
    if settings.len() > MAX_SETTINGS_BYTES {
        return Err(format!("spec.settings is {} bytes; at most {MAX_SETTINGS_BYTES}", settings.len()));
    }
    let rollout = match raw.rollout {
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
    };
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

fn to_scope(raw: RawScope) -> Result<Scope, String> {
    let namespaces = raw
        .namespaces
        .map(|list| {
            list.into_iter()
                .map(|ns| match wasmcm_core::validation::dns1123_label(&ns).first() {
                    Some(why) => Err(format!("spec.scope.namespaces: {ns:?} is not a namespace name: {why}")),
                    None => Ok(ns),
                })
                .collect::<Result<_, _>>()
        })
        .transpose()?;
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
    Ok(Scope { namespaces, namespace_selector, host_namespace: raw.host_namespace, cluster_writes })
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
                Ok(found) => {
                    for spec in found {
                        specs.retain(|s| s.name != spec.name);
                        specs.push(spec);
                    }
                }
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
            ("apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {name: Bad_Name}\nspec: {source: {file: a}}\n".into(), "must be a DNS label"),
            ("{{{".into(), "invalid YAML"),
        ] {
            let e = parse(&text, &origin()).expect_err(&text).to_string();
            assert!(e.starts_with("m.yaml") && e.contains(expected), "{text}\n→ {e}");
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
        assert_eq!(names, [("replicaset", true), ("rollback", true), ("deployment", false), ("extra", true)]);
        assert_eq!(specs[3].source, Source::File(dir.path().join("extra.wasm")));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].file.ends_with("c.yaml"), "{}", errors[0]);
    }
}
