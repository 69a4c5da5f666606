//! OCI sources: plugins as WebAssembly OCI artifacts in a registry, pulled by the loader and
//! published by `wasmcm plugins push`. The layout is the CNCF wasm artifact's (an OCI image
//! manifest, config `application/vnd.wasm.config.v0+json`, one `application/wasm` layer;
//! the older `application/vnd.wasm.content.layer.v1+wasm` layer pulls too). The distribution
//! protocol (auth challenges, tokens, chunked uploads, the digest check of every manifest and
//! blob) is oci-client's.
//!
//! Owns: parsing references, credentials (docker config JSON from Secrets of the host's
//! namespace, as imagePullSecrets are, or from the pusher's `~/.docker/config.json`), the
//! choice of plain HTTP (loopback registries and `--insecure-registries`, as Docker does), and
//! the cache of pulled bytes by digest. Content-addressed, the cache is trusted only after its
//! bytes hash to their name: a pinned reference whose manifest and layer are cached loads with
//! the registry down. It never checks a manifest entry's `sha256` pin nor compiles (the
//! loader's).

use std::path::{Path, PathBuf};

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use sha2::{Digest, Sha256};

use crate::lifecycle::loader::{MAX_PLUGIN_FILE_BYTES, Reason};

/// The CNCF wasm artifact's config and layer media types.
pub(crate) const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub(crate) const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// Layer type of the artifacts wasm-to-oci and Kubewarden push.
const LEGACY_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";

/// `reference` as the registry protocol reads it. A reference naming no registry is Docker
/// Hub's, as in a Pod's `image`.
pub(crate) fn parse(reference: &str) -> Result<Reference, String> {
    reference.parse::<Reference>().map_err(|e| format!("{reference:?} is not an OCI reference: {e}"))
}

/// How the host reaches registries.
#[derive(Clone, Debug, Default)]
pub struct Registries {
    /// Secrets (`kubernetes.io/dockerconfigjson`) of the host's namespace whose credentials
    /// pulls present, first match first, as a Pod's imagePullSecrets.
    pub secrets: Vec<String>,
    /// Registries (`host[:port]`) spoken in plain HTTP besides loopback ones.
    pub insecure: Vec<String>,
    /// Pulled manifests and layers, by digest (`<dir>/sha256/<hex>`); none: pulled each load.
    pub cache: Option<PathBuf>,
}

/// A pull that failed: the reason the loader reports and what happened.
pub(crate) struct PullError {
    pub reason: Reason,
    pub message: String,
}

fn unreadable(message: String) -> PullError {
    PullError { reason: Reason::Unreadable, message }
}

impl Registries {
    fn client(&self, reference: &Reference) -> Client {
        // reqwest's TLS takes the process's default provider: ring, which the kube client
        // builds too. Already installed is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let registry = reference.resolve_registry();
        let plain = is_loopback(registry) || self.insecure.iter().any(|r| r == registry);
        let protocol = if plain { ClientProtocol::Http } else { ClientProtocol::Https };
        Client::new(ClientConfig {
            protocol,
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(30)),
            platform_resolver: None,
            user_agent: concat!("wasmcm/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        })
    }

    /// The component `reference` names: from the cache when pinned by digest and cached,
    /// else from its registry (then cached).
    pub(crate) async fn pull(
        &self,
        reference: &str,
        kube: Option<&kube::Client>,
        namespace: &str,
    ) -> Result<Vec<u8>, PullError> {
        let parsed = parse(reference).map_err(|e| PullError { reason: Reason::InvalidSpec, message: e })?;
        if let Some(bytes) = parsed.digest().and_then(|d| self.cached_component(d)) {
            return Ok(bytes);
        }
        let auth = match kube {
            Some(kube) => self.auth(parsed.resolve_registry(), kube, namespace).await.map_err(unreadable)?,
            None => RegistryAuth::Anonymous,
        };
        let client = self.client(&parsed);
        let accepted = [OCI_IMAGE_MEDIA_TYPE];
        let (manifest_bytes, digest) =
            client.pull_manifest_raw(&parsed, &auth, &accepted).await.map_err(|e| failed(reference, "manifest", e))?;
        let layer = wasm_layer(&manifest_bytes).map_err(|e| unreadable(format!("{reference}: {e}")))?;
        let bytes = match self.cached(&layer.digest) {
            Some(bytes) => bytes,
            None => {
                let mut out = Vec::with_capacity(layer.size.max(0) as usize);
                client.pull_blob(&parsed, &layer, &mut out).await.map_err(|e| failed(reference, "layer", e))?;
                out
            }
        };
        if bytes.len() as i64 != layer.size {
            return Err(PullError {
                reason: Reason::DigestMismatch,
                message: format!("{reference}: layer is {} bytes, its manifest says {}", bytes.len(), layer.size),
            });
        }
        self.store(&layer.digest, &bytes);
        self.store(&digest, &manifest_bytes);
        Ok(bytes)
    }

    /// The component of a cached manifest, if both it and its layer are cached intact.
    fn cached_component(&self, manifest_digest: &str) -> Option<Vec<u8>> {
        let manifest = self.cached(manifest_digest)?;
        let layer = wasm_layer(&manifest).ok()?;
        self.cached(&layer.digest)
    }

    fn path(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        let valid = hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
        valid.then(|| self.cache.as_ref().map(|dir| dir.join("sha256").join(hex)))?
    }

    /// Cached bytes named `digest`, only if they hash to it.
    fn cached(&self, digest: &str) -> Option<Vec<u8>> {
        let bytes = std::fs::read(self.path(digest)?).ok()?;
        (sha256(&bytes) == digest).then_some(bytes)
    }

    /// Keeps `bytes` under `digest`; a cache that cannot be written only costs a pull.
    fn store(&self, digest: &str, bytes: &[u8]) {
        let Some(path) = self.path(digest) else { return };
        if path.exists() {
            return;
        }
        let written = path
            .parent()
            .ok_or_else(|| anyhow::anyhow!("no parent"))
            .and_then(|dir| Ok(std::fs::create_dir_all(dir)?))
            .and_then(|()| crate::engine::write_private(&path, bytes));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), "not caching a pulled plugin: {e}");
        }
    }

    /// Credentials for `registry` from the first of the host's registry Secrets that has some.
    async fn auth(&self, registry: &str, kube: &kube::Client, namespace: &str) -> Result<RegistryAuth, String> {
        let api: kube::Api<k8s_openapi::api::core::v1::Secret> = kube::Api::namespaced(kube.clone(), namespace);
        for name in &self.secrets {
            let secret =
                api.get(name).await.map_err(|e| format!("registry credentials: Secret {namespace}/{name}: {e}"))?;
            let data = secret.data.unwrap_or_default();
            let Some(config) = data.get(".dockerconfigjson").or_else(|| data.get(".dockercfg")) else {
                return Err(format!(
                    "registry credentials: Secret {namespace}/{name} has no .dockerconfigjson (make it with \
                     kubectl create secret docker-registry)"
                ));
            };
            let found = credentials(&config.0, registry)
                .map_err(|e| format!("registry credentials: Secret {namespace}/{name}: {e}"))?;
            if let Some(auth) = found {
                return Ok(auth);
            }
        }
        Ok(RegistryAuth::Anonymous)
    }
}

/// Publishes `component` at `reference` as a CNCF wasm artifact and returns the manifest's
/// digest. The same bytes always make the same manifest (the config's `created` is
/// `SOURCE_DATE_EPOCH`, or the epoch), so a rebuild that changed nothing pushes the same digest.
pub async fn push_plugin(registries: &Registries, component: &[u8], reference: &str) -> anyhow::Result<String> {
    let parsed = parse(reference).map_err(anyhow::Error::msg)?;
    let auth = local_auth(parsed.resolve_registry())?;
    if parsed.digest().is_some() {
        anyhow::bail!("{reference}: push to a tag (registry/repository:tag); the digest is the registry's answer");
    }
    let layer = ImageLayer::new(component.to_vec(), LAYER_MEDIA_TYPE.into(), None);
    let config = Config::new(wasm_config(component, &layer.sha256_digest())?, CONFIG_MEDIA_TYPE.into(), None);
    let mut manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, None);
    manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.into());
    // Pushed as these bytes, so the digest returned is the one the registry serves.
    let manifest_bytes = serde_json::to_vec(&manifest)?;
    let client = registries.client(&parsed);
    client.store_auth_if_needed(parsed.resolve_registry(), &auth).await;
    let pushing = async {
        client.push_blob(&parsed, layer.data.clone(), &manifest.layers[0].digest).await?;
        client.push_blob(&parsed, config.data.clone(), &manifest.config.digest).await?;
        let content_type = http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE);
        client.push_manifest_raw(&parsed, manifest_bytes.clone(), content_type).await
    };
    pushing.await.map_err(|e| anyhow::anyhow!("pushing {reference}: {}", describe(&e)))?;
    Ok(sha256(&manifest_bytes))
}

/// The config of the wasm artifact layout: what it is, its layer, and the component's world.
fn wasm_config(component: &[u8], layer_digest: &str) -> anyhow::Result<Vec<u8>> {
    let (imports, exports) = world(component)?;
    let created = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    Ok(serde_json::to_vec(&serde_json::json!({
        "created": created.to_string(),
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer_digest],
        "component": {"imports": imports, "exports": exports},
    }))?)
}

/// The top-level imports and exports of a component; an error if `bytes` is not a component.
fn world(bytes: &[u8]) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    use wasmparser::Payload;
    if !wasmparser::Parser::is_component(bytes) {
        anyhow::bail!("not a WebAssembly component (a plugin is built as one: cargo plugin, componentize-py, jco)");
    }
    let (mut imports, mut exports, mut depth) = (Vec::new(), Vec::new(), 0usize);
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(s) if depth == 0 => {
                for i in s {
                    imports.push(i?.name.name.to_string());
                }
            }
            Payload::ComponentExportSection(s) if depth == 0 => {
                for e in s {
                    exports.push(e?.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok((imports, exports))
}

/// The one wasm layer of an image manifest.
fn wasm_layer(manifest: &[u8]) -> Result<oci_client::manifest::OciDescriptor, String> {
    let manifest: OciImageManifest =
        serde_json::from_slice(manifest).map_err(|e| format!("not an OCI image manifest: {e}"))?;
    let wasm: Vec<_> = manifest
        .layers
        .into_iter()
        .filter(|l| l.media_type == LAYER_MEDIA_TYPE || l.media_type == LEGACY_LAYER_MEDIA_TYPE)
        .collect();
    let [layer] = <[_; 1]>::try_from(wasm)
        .map_err(|w| format!("not a WebAssembly artifact: {} layers of type {LAYER_MEDIA_TYPE}, not one", w.len()))?;
    if layer.size < 0 || layer.size as u64 > MAX_PLUGIN_FILE_BYTES {
        return Err(format!("its layer is {} bytes; not a controller plugin", layer.size));
    }
    Ok(layer)
}

/// The reason and words for a failed pull: a digest that does not match is tampering (or a
/// wrong pin), not an outage.
fn failed(reference: &str, what: &str, e: OciDistributionError) -> PullError {
    let reason = match &e {
        OciDistributionError::DigestError(_) => Reason::DigestMismatch,
        OciDistributionError::ImageManifestNotFoundError(_) => Reason::NotFound,
        OciDistributionError::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|e| {
                use oci_client::errors::OciErrorCode::*;
                matches!(e.code, ManifestUnknown | BlobUnknown | NameUnknown | NotFound)
            }) =>
        {
            Reason::NotFound
        }
        _ => Reason::Unreadable,
    };
    PullError { reason, message: format!("{reference}: pulling its {what}: {}", describe(&e)) }
}

/// oci-client's error with the causes it wraps (reqwest's say "connection refused" only there).
fn describe(e: &OciDistributionError) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = s.source();
    }
    text
}

/// Credentials for `registry` in docker config JSON (`{"auths": {...}}`, or the older
/// `.dockercfg` map), keys matched as the kubelet matches them: by host[:port], any scheme or
/// path ignored.
pub(crate) fn credentials(config: &[u8], registry: &str) -> Result<Option<RegistryAuth>, String> {
    #[derive(serde::Deserialize)]
    struct Entry {
        auth: Option<String>,
        username: Option<String>,
        password: Option<String>,
        identitytoken: Option<String>,
    }
    let value: serde_json::Value =
        serde_json::from_slice(config).map_err(|e| format!("not docker config JSON: {e}"))?;
    let auths = value.get("auths").cloned().unwrap_or(value);
    let auths: std::collections::BTreeMap<String, Entry> =
        serde_json::from_value(auths).map_err(|e| format!("not docker config JSON: {e}"))?;
    let host = |key: &str| {
        let key = key.split_once("://").map_or(key, |(_, rest)| rest);
        key.split('/').next().unwrap_or(key).to_string()
    };
    let wanted = docker_hub(registry);
    let Some((_, entry)) = auths.iter().find(|(k, _)| docker_hub(&host(k)) == wanted) else {
        return Ok(None);
    };
    if let Some(token) = &entry.identitytoken {
        return Ok(Some(RegistryAuth::Bearer(token.clone())));
    }
    let (username, password) = match (&entry.username, &entry.password, &entry.auth) {
        (Some(u), Some(p), _) => (u.clone(), p.clone()),
        (_, _, Some(auth)) => {
            use base64::Engine as _;
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .map_err(|e| format!("auths.{registry}.auth is not base64: {e}"))?;
            let text = String::from_utf8(decoded).map_err(|_| format!("auths.{registry}.auth is not text"))?;
            let (u, p) = text.split_once(':').ok_or_else(|| format!("auths.{registry}.auth is not user:password"))?;
            (u.to_string(), p.to_string())
        }
        _ => return Err(format!("auths.{registry} has neither auth nor username and password")),
    };
    Ok(Some(RegistryAuth::Basic(username, password)))
}

/// Docker Hub under any of its names.
fn docker_hub(registry: &str) -> &str {
    match registry {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" => "docker.io",
        other => other,
    }
}

/// The pusher's credentials for `registry`: `$DOCKER_CONFIG/config.json` or
/// `~/.docker/config.json`, as docker, helm and oras read them.
fn local_auth(registry: &str) -> anyhow::Result<RegistryAuth> {
    let dir = std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".docker")));
    let Some(path) = dir.map(|d| d.join("config.json")) else { return Ok(RegistryAuth::Anonymous) };
    match std::fs::read(&path) {
        Ok(bytes) => Ok(credentials(&bytes, registry)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
            .unwrap_or(RegistryAuth::Anonymous)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(RegistryAuth::Anonymous),
        Err(e) => Err(anyhow::anyhow!("{}: {e}", path.display())),
    }
}

/// `127.0.0.1:5000`, `localhost`, `[::1]:5000`: spoken in plain HTTP, as Docker does.
fn is_loopback(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => registry.rsplit_once(':').map_or(registry, |(h, _)| h),
    };
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_match_by_host_as_the_kubelet_does() {
        let config = br#"{"auths": {"https://reg.example:5000/v1/": {"auth": "dTpw"},
                                    "index.docker.io": {"username": "hub", "password": "pw"},
                                    "tok.example": {"identitytoken": "t"}}}"#;
        assert_eq!(credentials(config, "reg.example:5000").unwrap(), Some(RegistryAuth::Basic("u".into(), "p".into())));
        assert_eq!(credentials(config, "docker.io").unwrap(), Some(RegistryAuth::Basic("hub".into(), "pw".into())));
        assert_eq!(credentials(config, "tok.example").unwrap(), Some(RegistryAuth::Bearer("t".into())));
        assert_eq!(credentials(config, "reg.example").unwrap(), None);
        assert!(credentials(b"{\"auths\": {\"a\": {\"auth\": \"!!\"}}}", "a").unwrap_err().contains("base64"));
        assert!(credentials(b"[]", "a").unwrap_err().contains("docker config JSON"));
    }

    #[test]
    fn loopback_registries_are_plain_http() {
        for r in ["127.0.0.1:5000", "localhost:5000", "localhost", "[::1]:5000", "127.1.2.3"] {
            assert!(is_loopback(r), "{r}");
        }
        for r in ["reg.example:5000", "10.0.0.1:5000", "ghcr.io"] {
            assert!(!is_loopback(r), "{r}");
        }
    }

    #[test]
    fn references_parse_or_say_why() {
        let r = parse(
            "127.0.0.1:5000/team/stamp:v1@sha256:0123456789012345678901234567890123456789012345678901234567890123",
        )
        .unwrap();
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "team/stamp");
        assert!(r.digest().is_some());
        assert!(parse("Not A Reference").unwrap_err().contains("not an OCI reference"));
    }

    #[test]
    fn only_components_are_pushed_and_their_world_is_recorded() {
        assert!(world(b"\0asm\x01\0\0\0").unwrap_err().to_string().contains("not a WebAssembly component"));
        let stamp = crate::engine::builtin::get("replicaset").expect("a built-in");
        let (imports, exports) = world(stamp).unwrap();
        assert!(exports.iter().any(|e| e.starts_with("wasmcm:reconciler/controller@")), "{exports:?}");
        assert!(!imports.is_empty());
        let config: serde_json::Value = serde_json::from_slice(&wasm_config(stamp, "sha256:00").unwrap()).unwrap();
        assert_eq!(config["created"], "1970-01-01T00:00:00Z");
        assert_eq!(config["layerDigests"][0], "sha256:00");
    }
}
