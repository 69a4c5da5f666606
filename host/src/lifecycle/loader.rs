//! From a manifest entry to a plugin version ready to run: reads the component (built into
//! the binary, a file, or a ConfigMap key), checks the digest pin, compiles it through the
//! engine (and its precompiled cache) on a blocking thread, and applies the manifest's name,
//! capabilities, limits and settings. It never touches running controllers: offering a
//! version to one is the caller's decision.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::engine::{Engine, Limits, Plugin};
use crate::lifecycle::manifest::{MAX_CONFIGMAP_PLUGIN_BYTES, PluginSpec, Source};
use crate::lifecycle::objects::PluginObjects;

/// A loaded plugin with the manifest entry that made it.
pub struct Version {
    pub plugin: Arc<Plugin>,
    pub spec: PluginSpec,
}

impl Version {
    /// A plugin loaded by other means, run with the manifest defaults (tests, benchmarks).
    pub fn of(plugin: Arc<Plugin>) -> Version {
        let defaults = Limits::default();
        let info = plugin.info();
        let spec = PluginSpec {
            name: info.name.clone(),
            manifest: None,
            source: Source::Builtin(info.name.clone()),
            sha256: None,
            enabled: true,
            memory_bytes: defaults.memory_bytes,
            deadline: defaults.deadline,
            workers: None,
            reads: None,
            writes: None,
            scope: Default::default(),
            service_account: None,
            settings: "{}".into(),
            rollout: Default::default(),
            revert: Default::default(),
        };
        Version { plugin, spec }
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Same bytes run the same way: offering it again changes nothing.
    pub fn same_as(&self, other: &Version) -> bool {
        self.plugin.digest() == other.plugin.digest() && self.same_spec(&other.spec)
    }

    /// The same manifest entry, wherever it was read from.
    pub fn same_spec(&self, spec: &PluginSpec) -> bool {
        let ignore_origin = |s: &PluginSpec| PluginSpec { manifest: None, ..s.clone() };
        ignore_origin(&self.spec) == ignore_origin(spec)
    }
}

/// A plugin that did not load, and why.
#[derive(Clone, Debug, thiserror::Error)]
#[error("plugin {plugin}: {message}")]
pub struct LoadFailure {
    pub plugin: String,
    pub reason: Reason,
    /// Says which file or object and why.
    pub message: String,
}

/// Why a plugin did not load, as a Kubernetes condition's reason says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Its source is one the host may not read (`--require-pins`, a ConfigMap elsewhere).
    NotTrusted,
    /// No built-in of that name, or no such artifact in its registry.
    NotFound,
    /// Its file, ConfigMap or registry cannot be read, or holds no plugin.
    Unreadable,
    /// Its bytes are not the ones its manifest pins.
    DigestMismatch,
    /// Not a component the host can run: not WebAssembly, another contract, rights it may not have.
    InvalidComponent,
    /// Its manifest entry or Plugin object breaks a rule (a relative file, an unknown field).
    InvalidSpec,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotTrusted => "NotTrusted",
            Reason::NotFound => "NotFound",
            Reason::Unreadable => "Unreadable",
            Reason::DigestMismatch => "DigestMismatch",
            Reason::InvalidComponent => "InvalidComponent",
            Reason::InvalidSpec => "InvalidSpec",
        }
    }
}

/// Largest plugin file read: a Rust controller is under 1 MiB, a Python one (componentize-py,
/// the interpreter inside) about 18 MiB, a JavaScript one (componentize-js) about 12 MiB.
pub(crate) const MAX_PLUGIN_FILE_BYTES: u64 = 64 << 20;

/// Where plugins may come from, checked before their bytes are read.
#[derive(Clone, Debug, Default)]
pub struct Trust {
    /// The host's namespace: ConfigMap sources that name none are read from it, and those
    /// that name another are refused unless listed in `configmap_namespaces`.
    pub namespace: String,
    pub configmap_namespaces: Vec<String>,
    /// Refuse a file, ConfigMap or OCI plugin whose manifest entry pins no sha256 (and, for
    /// OCI, whose reference names no digest); built-ins are part of the binary.
    pub require_pins: bool,
    /// How OCI sources are pulled.
    pub registries: crate::lifecycle::oci::Registries,
}

impl Trust {
    /// Pins optional, ConfigMaps from `namespace` only.
    pub fn of(namespace: &str) -> Trust {
        Trust { namespace: namespace.into(), ..Trust::default() }
    }

    fn check(&self, spec: &PluginSpec) -> Result<(), String> {
        let pinned = match &spec.source {
            Source::Builtin(_) => true,
            Source::Oci(reference) => {
                spec.sha256.is_some() || crate::lifecycle::oci::parse(reference).is_ok_and(|r| r.digest().is_some())
            }
            _ => spec.sha256.is_some(),
        };
        if self.require_pins && !pinned {
            let what = match spec.source {
                Source::Oci(_) => "neither its reference names a digest (…@sha256:…) nor its entry pins a sha256",
                _ => "the manifest entry pins no sha256",
            };
            return Err(format!("{}: --require-pins: {what}", spec.source));
        }
        if let Source::ConfigMap { namespace, .. } = &spec.source
            && *namespace != self.namespace
            && !self.configmap_namespaces.contains(namespace)
        {
            return Err(format!(
                "{}: plugins are read from ConfigMaps in the host's namespace {:?} only (--plugin-configmap-namespaces allows others)",
                spec.source, self.namespace
            ));
        }
        Ok(())
    }
}

/// The component bytes of `spec`, if `trust` lets them be read. ConfigMap sources need a client.
pub(crate) async fn read(
    spec: &PluginSpec,
    trust: &Trust,
    client: Option<&kube::Client>,
) -> Result<Vec<u8>, LoadFailure> {
    let fail = |reason: Reason| move |message: String| LoadFailure { plugin: spec.name.clone(), reason, message };
    trust.check(spec).map_err(fail(Reason::NotTrusted))?;
    let unreadable = fail(Reason::Unreadable);
    match &spec.source {
        Source::Builtin(name) => crate::engine::builtin::get(name).map(<[u8]>::to_vec).ok_or_else(|| {
            let known = crate::engine::builtin::names().collect::<Vec<_>>().join(", ");
            fail(Reason::NotFound)(format!("no built-in plugin {name:?} (built-ins: {known})"))
        }),
        Source::File(path) => read_capped(path).await.map_err(|e| unreadable(format!("{}: {e}", path.display()))),
        Source::ConfigMap { namespace, name, key } => {
            let Some(client) = client else {
                return Err(unreadable(format!("{}: ConfigMap sources need a cluster", spec.source)));
            };
            let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
                kube::Api::namespaced(client.clone(), namespace);
            let cm = api.get(name).await.map_err(|e| unreadable(format!("{}: {e}", spec.source)))?;
            configmap_bytes(&cm, key).map_err(|e| unreadable(format!("{}: {e}", spec.source)))
        }
        Source::Oci(reference) => trust
            .registries
            .pull(reference, client, &trust.namespace)
            .await
            .map_err(|e| LoadFailure { plugin: spec.name.clone(), reason: e.reason, message: e.message }),
    }
}

/// A file's bytes, refusing anything larger than a plugin can be (`/dev/zero` included).
async fn read_capped(path: &std::path::Path) -> Result<Vec<u8>, String> {
    use tokio::io::AsyncReadExt;
    let file = tokio::fs::File::open(path).await.map_err(|e| format!("cannot read: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_PLUGIN_FILE_BYTES + 1).read_to_end(&mut bytes).await.map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_PLUGIN_FILE_BYTES {
        return Err(format!("more than {} MiB; not a controller plugin", MAX_PLUGIN_FILE_BYTES >> 20));
    }
    Ok(bytes)
}

/// A plugin from a ConfigMap's `binaryData` (or, for a text-safe component, `data`).
pub fn configmap_bytes(cm: &k8s_openapi::api::core::v1::ConfigMap, key: &str) -> Result<Vec<u8>, String> {
    let bytes = match (cm.binary_data.as_ref().and_then(|d| d.get(key)), cm.data.as_ref().and_then(|d| d.get(key))) {
        (Some(b), _) => b.0.clone(),
        (None, Some(text)) => text.as_bytes().to_vec(),
        (None, None) => return Err(format!("has no key {key:?} in binaryData")),
    };
    if bytes.len() > MAX_CONFIGMAP_PLUGIN_BYTES {
        return Err(format!(
            "{} bytes; a ConfigMap holds at most 1 MiB (the API server's limit for a whole ConfigMap), so a \
             component built from Python or JavaScript (about 18 and 13 MB: it carries its interpreter) cannot \
             come from one: give it as a file (on a deployed host, a volume)",
            bytes.len()
        ));
    }
    Ok(bytes)
}

/// Verifies the digest pin and compiles `bytes`; blocking (compiling takes up to seconds).
pub(crate) fn compile(engine: &Engine, spec: &PluginSpec, bytes: &[u8]) -> Result<Version, LoadFailure> {
    let fail = |reason: Reason| move |message: String| LoadFailure { plugin: spec.name.clone(), reason, message };
    if let Some(pin) = &spec.sha256 {
        let actual = hex::encode(Sha256::digest(bytes));
        if &actual != pin {
            return Err(fail(Reason::DigestMismatch)(format!(
                "{}: digest mismatch: the manifest pins sha256 {pin}, the component is {actual}",
                spec.source
            )));
        }
    }
    let limits = Limits { memory_bytes: spec.memory_bytes, deadline: spec.deadline };
    let invalid = fail(Reason::InvalidComponent);
    let plugin = engine.load(&spec.source.to_string(), bytes, limits).map_err(|e| invalid(e.to_string()))?;
    let plugin = plugin
        .configure(&spec.name, spec.reads.as_deref(), spec.writes.as_deref())
        .map_err(|e| invalid(format!("{}: {e}", spec.source)))?;
    Ok(Version { plugin: Arc::new(plugin), spec: spec.clone() })
}

/// `read` then `compile` off the async threads.
pub(crate) async fn load(
    engine: &Engine,
    spec: &PluginSpec,
    trust: &Trust,
    client: Option<&kube::Client>,
) -> Result<Version, LoadFailure> {
    let bytes = read(spec, trust, client).await?;
    let (engine, owned) = (engine.clone(), spec.clone());
    tokio::task::spawn_blocking(move || compile(&engine, &owned, &bytes)).await.map_err(|e| LoadFailure {
        plugin: spec.name.clone(),
        reason: Reason::InvalidComponent,
        message: format!("compile task failed: {e}"),
    })?
}

/// Every enabled plugin of the default manifest and `paths`, loaded, and what failed: each
/// failure names its file or source, its plugin and the reason.
pub async fn load_all(
    engine: &Engine,
    paths: &[std::path::PathBuf],
    trust: &Trust,
    client: Option<&kube::Client>,
) -> (Vec<Version>, Vec<String>) {
    let loaded = load_plugins(engine, paths, None, trust, client).await;
    let failures = loaded.manifest_errors.into_iter().chain(loaded.failed.iter().map(ToString::to_string)).collect();
    (loaded.versions, failures)
}

/// What [`load_plugins`] made of the manifests.
pub struct Loaded {
    pub versions: Vec<Version>,
    /// Manifest files that could not be read as a whole, each naming its file and why.
    pub manifest_errors: Vec<String>,
    /// The enabled plugins that did not load.
    pub failed: Vec<LoadFailure>,
    /// Entries that did not read, by plugin (also among `manifest_errors`).
    pub invalid: Vec<(String, String)>,
}

/// Every enabled plugin of the default manifest and `paths`, with `objects` over them, loaded
/// or failed.
pub async fn load_plugins(
    engine: &Engine,
    paths: &[std::path::PathBuf],
    objects: Option<&PluginObjects>,
    trust: &Trust,
    client: Option<&kube::Client>,
) -> Loaded {
    let (specs, manifest_errors) = crate::lifecycle::objects::desired(paths, objects, &trust.namespace);
    let mut loaded = Loaded {
        versions: Vec::new(),
        manifest_errors: manifest_errors.iter().map(|e| e.to_string()).collect(),
        failed: Vec::new(),
        invalid: manifest_errors.iter().filter_map(|e| Some((e.plugin.clone()?, e.to_string()))).collect(),
    };
    for spec in specs.iter().filter(|s| s.enabled) {
        match load(engine, spec, trust, client).await {
            Ok(v) => {
                let c = v.plugin.compiled();
                tracing::info!(
                    plugin = %spec.name,
                    version = %v.plugin.info().version,
                    digest = %v.plugin.digest(),
                    cached = c.cached,
                    "loaded in {:.1} ms",
                    c.duration.as_secs_f64() * 1e3
                );
                loaded.versions.push(v);
            }
            Err(e) => loaded.failed.push(e),
        }
    }
    loaded
}
