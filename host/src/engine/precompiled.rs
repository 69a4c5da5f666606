//! Compiled plugins kept on disk, so a restart with unchanged plugins skips the compiler.
//!
//! A file is named by the component's SHA-256 and a hash of the engine's compatibility
//! settings (which include the wasmtime version), so a changed plugin or a differently
//! configured engine never picks up a stale artefact; wasmtime checks the header again on
//! load and anything it refuses is recompiled.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use wasmtime::component::Component;

pub(crate) struct Precompiled {
    dir: PathBuf,
    engine_hash: String,
}

impl Precompiled {
    pub(crate) fn new(engine: &wasmtime::Engine, dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create the precompiled cache {}: {e}", dir.display()))?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(Precompiled { dir: dir.to_path_buf(), engine_hash: format!("{:016x}", hasher.finish()) })
    }

    fn path(&self, digest: &str) -> PathBuf {
        self.dir.join(format!("{digest}-{}.cwasm", self.engine_hash))
    }

    pub(crate) fn load_or_compile(
        &self,
        engine: &wasmtime::Engine,
        bytes: &[u8],
        digest: &str,
    ) -> wasmtime::Result<(Component, bool)> {
        let path = self.path(digest);
        if path.exists() {
            // SAFETY: the file was written by `Component::serialize` of this same engine
            // configuration into the host's own cache directory (named by digest and engine
            // hash); wasmtime validates its header and refuses other engines' artefacts.
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(c) => return Ok((c, true)),
                Err(e) => tracing::warn!(path = %path.display(), "recompiling: precompiled plugin refused: {e:#}"),
            }
        }
        let component = Component::new(engine, bytes)?;
        if let Err(e) = self.store(&path, &component) {
            tracing::warn!(path = %path.display(), "cannot keep the compiled plugin: {e:#}");
        }
        Ok((component, false))
    }

    /// Writes to a temporary file and renames, so concurrent hosts never read a half file.
    fn store(&self, path: &Path, component: &Component) -> anyhow::Result<()> {
        let bytes = component.serialize()?;
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = path.with_extension(format!("tmp.{}.{seq}", std::process::id()));
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    }
}
