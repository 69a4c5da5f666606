//! A plugin for the hot-swap tests whose version and behaviour are bytes in its data section,
//! so a test makes a new release of it by rewriting those bytes (`variant`), without another
//! build. It reconciles ConfigMaps labelled `wasmcm.dev/stamp`: each reconcile writes its
//! stamp and a count of reconciles into the data, and each write wakes the next reconcile, so
//! every such ConfigMap is reconciled continuously and its count says how often.
//!
//! Stamp `trap` panics on every call. Settings: `{"limit": N}` stops at count N. Broken
//! releases for the loading tests: version `trap` makes `describe()` panic, and version
//! `contract-X.Y.Z` declares contract X.Y.Z. Version `watch-secrets` also reads Secrets (and is
//! woken by none of their changes): an informer a host without that right cannot sync.

use wasmcm_guest::{
    CONTRACT_VERSION, Cache, Changes, Controller, Error, Intent, Kind, Outcome, PluginInfo, Request, Watch,
};

/// `<prefix><value>` padded with '.' to a fixed length, so a variant is the same size.
const MARKER_LEN: usize = 48;
pub const STAMP_PREFIX: &str = "wasmcm-test-stamp=";
pub const VERSION_PREFIX: &str = "wasmcm-test-version=";
static STAMP: [u8; MARKER_LEN] = *b"wasmcm-test-stamp=v1............................";
static VERSION: [u8; MARKER_LEN] = *b"wasmcm-test-version=1.0.0.......................";

pub const LABEL: &str = "wasmcm.dev/stamp";

/// The value after `prefix` in a marker, read at run time so rewritten bytes take effect.
fn marker(bytes: &'static [u8; MARKER_LEN], prefix: &str) -> String {
    let bytes: &[u8] = std::hint::black_box(bytes);
    let text = String::from_utf8_lossy(bytes);
    text.strip_prefix(prefix).unwrap_or(&text).trim_end_matches('.').to_string()
}

/// The bytes of the component as built, with the stamp and version markers rewritten: a new
/// release of this plugin. `None` when a value does not fit or the markers are not found.
pub fn variant(component: &[u8], stamp: &str, version: &str) -> Option<Vec<u8>> {
    let mut out = component.to_vec();
    for (original, prefix, value) in [(&STAMP, STAMP_PREFIX, stamp), (&VERSION, VERSION_PREFIX, version)] {
        let mut new = format!("{prefix}{value}").into_bytes();
        if new.len() > MARKER_LEN {
            return None;
        }
        new.resize(MARKER_LEN, b'.');
        let at = out.windows(MARKER_LEN).position(|w| w == original)?;
        out[at..at + MARKER_LEN].copy_from_slice(&new);
    }
    Some(out)
}

pub struct Stamp;

impl Controller for Stamp {
    fn describe() -> PluginInfo {
        let version = marker(&VERSION, VERSION_PREFIX);
        if version == "trap" {
            panic!("version {version} traps in describe()");
        }
        let contract = version.strip_prefix("contract-").unwrap_or(CONTRACT_VERSION).to_string();
        // `writes-N`: N more kinds it may write, a declaration as large as a release cares to make.
        let more = version.strip_prefix("writes-").and_then(|n| n.parse::<usize>().ok()).unwrap_or(0);
        let watches = match version.as_str() {
            "watch-secrets" => vec![Watch::new(Kind::new("v1", "Secret"), Changes::NONE)],
            _ => vec![],
        };
        let mut writes = vec![Kind::new("v1", "ConfigMap")];
        writes.extend((0..more).map(|i| Kind::new("example.com/v1", &format!("Kind{i}"))));
        PluginInfo {
            name: "stamp".into(),
            version,
            primary: Kind::new("v1", "ConfigMap"),
            owns: vec![],
            watches,
            writes,
            contract,
        }
    }

    fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
        let stamp = marker(&STAMP, STAMP_PREFIX);
        if stamp == "trap" {
            panic!("stamp {stamp} traps on every call");
        }
        let Some(json) = cache.get(&Kind::new("v1", "ConfigMap"), &request.namespace, &request.name) else {
            return Ok(Outcome::default());
        };
        let mut cm: serde_json::Value =
            serde_json::from_str(&json).map_err(|e| Error::permanent(format!("ConfigMap: {e}")))?;
        if cm.pointer(&format!("/metadata/labels/{}", LABEL.replace('/', "~1"))).is_none() {
            return Ok(Outcome::default());
        }
        let count: u64 = cm.pointer("/data/count").and_then(|c| c.as_str()).and_then(|c| c.parse().ok()).unwrap_or(0);
        let limit = serde_json::from_str::<serde_json::Value>(&request.settings)
            .ok()
            .and_then(|s| s.get("limit").and_then(|l| l.as_u64()));
        if limit.is_some_and(|l| count >= l) {
            return Ok(Outcome::default());
        }
        let data = cm
            .as_object_mut()
            .and_then(|o| o.entry("data").or_insert_with(|| serde_json::json!({})).as_object_mut().map(std::mem::take));
        let mut data = data.unwrap_or_default();
        data.insert("stamp".into(), stamp.into());
        data.insert("count".into(), (count + 1).to_string().into());
        cm["data"] = data.into();
        Ok(Outcome { batches: vec![vec![Intent::Update(cm.to_string())]], requeue_after_ms: None })
    }
}

#[cfg(target_arch = "wasm32")]
wasmcm_guest::export_plugin!(Stamp);
