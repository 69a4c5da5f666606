//! Compiled plugins kept on disk, so a restart with unchanged plugins skips the compiler, and
//! compiled functions kept on disk, so a plugin that changed compiles only what changed.
//!
//! An artefact is native code that wasmtime maps and runs without checking it, so one is used
//! only if this host made it for exactly these component bytes: each file ends in an
//! HMAC-SHA256 (ring) over the engine's compatibility hash, the component's SHA-256 and the
//! artefact, under a key kept outside the cache directory. Whoever can write the cache
//! directory but not the key can only make the host recompile. Files are created with
//! `O_EXCL` and mode 0600 under unpredictable names, and read only when owned by this user
//! and writable by no one else; anything else is discarded, with a warning, and recompiled.
//!
//! The functions (`functions/`, Cranelift's incremental cache) are kept the same way, each
//! tagged over Cranelift's key for it (which covers the function's code, the target and the
//! compiler's settings) and its compiled form. They matter for the large components of Python
//! and JavaScript plugins: every build of one carries the same interpreter (tens of thousands
//! of functions) with a new snapshot beside it, and without them each build, each hot swap
//! of a new version, recompiled the interpreter.

use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use ring::hmac;
use sha2::{Digest, Sha256};
use wasmtime::CacheStore;
use wasmtime::component::Component;

/// Bytes of the tag at the end of every artefact.
const TAG: usize = 32;
/// Larger files are not read: no compiled plugin comes near.
const MAX_ARTEFACT_BYTES: u64 = 1 << 30;
/// The disk the compiled functions may take (blocks, as an emptyDir's `sizeLimit` counts): the
/// built-ins' take about 36 MiB, an interpreter's (a Python or JavaScript plugin) about 80 (14,000
/// small files, half of it block padding), and each build adds those that changed (and a few
/// whose keys differ between compiles). Past this, the oldest are removed (at a process's first
/// new function) until half remain. The built-ins and one interpreter of each language fit: at
/// 128 MiB they did not, and each new version of a Python plugin evicted the JavaScript
/// interpreter's functions, which the next JavaScript build compiled again (20 s of CPU), and
/// the other way round. deploy/'s cache is 512 MiB: these and the compiled plugins.
const MAX_FUNCTION_BYTES: u64 = 256 << 20;

/// The cache's directory and key, opened before the engine exists: the engine is built with
/// the [`Functions`] it compiles through.
pub(crate) struct CacheDir {
    dir: PathBuf,
    key: hmac::Key,
}

pub(crate) struct Precompiled {
    dir: PathBuf,
    engine_hash: String,
    key: hmac::Key,
}

/// Cranelift's incremental cache on disk: one file a compiled function.
#[derive(Debug)]
pub(crate) struct Functions {
    dir: PathBuf,
    key: hmac::Key,
    /// Pruned at this process's first new function: a process that compiles nothing new (a
    /// one-shot command, a host whose plugins are all cached) neither grows the store nor walks it.
    pruned: std::sync::Once,
}

/// This process's effective user, which must own the cache and its files.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Refuses a path owned by another user than this host's or root (an image's read-only
/// files), or that others may write.
fn private(meta: &std::fs::Metadata, what: &Path, others_may_read: bool) -> anyhow::Result<()> {
    let forbidden = if others_may_read { 0o022 } else { 0o077 };
    if meta.uid() != euid() && meta.uid() != 0 {
        anyhow::bail!("{} is owned by uid {}, not this host's {} (or root)", what.display(), meta.uid(), euid());
    }
    if meta.mode() & forbidden != 0 {
        anyhow::bail!("{} has mode {:o}: open to other users", what.display(), meta.mode() & 0o777);
    }
    Ok(())
}

impl CacheDir {
    /// The cache in `dir`, authenticated with the key in `key_file` (created, 0600, if absent);
    /// the key may not live in the cache directory.
    pub(crate) fn open(dir: &Path, key_file: &Path) -> anyhow::Result<Self> {
        let dir = private_dir(dir)?;
        let key_dir = key_file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(key_dir)?;
        if key_dir.canonicalize()?.starts_with(&dir) {
            anyhow::bail!(
                "the precompiled cache's key {} must not be inside the cache {}",
                key_file.display(),
                dir.display()
            );
        }
        let key = hmac::Key::new(hmac::HMAC_SHA256, &load_or_create_key(key_file)?);
        Ok(CacheDir { dir, key })
    }

    /// The compiled functions' store, in `functions/` of the cache.
    pub(crate) fn functions(&self) -> anyhow::Result<Functions> {
        let dir = self.dir.join("functions");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        private(&std::fs::symlink_metadata(&dir)?, &dir, false)?;
        Ok(Functions { dir, key: self.key.clone(), pruned: std::sync::Once::new() })
    }

    /// The compiled plugins of `engine`.
    pub(crate) fn precompiled(self, engine: &wasmtime::Engine) -> Precompiled {
        // DefaultHasher::new() has fixed keys: the same engine settings give the same name.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_hash = format!("{:016x}", hasher.finish());
        Precompiled { dir: self.dir, engine_hash, key: self.key }
    }
}

impl Precompiled {
    fn path(&self, digest: &str) -> PathBuf {
        self.dir.join(format!("{digest}-{}.cwasm", self.engine_hash))
    }

    /// What the tag covers: which engine, which component, which artefact.
    fn message(&self, digest: &str, artefact: &[u8]) -> Vec<u8> {
        let artefact = ring::digest::digest(&ring::digest::SHA256, artefact);
        [self.engine_hash.as_bytes(), b"\0", digest.as_bytes(), b"\0", artefact.as_ref()].concat()
    }

    pub(crate) fn load_or_compile(
        &self,
        engine: &wasmtime::Engine,
        bytes: &[u8],
        digest: &str,
    ) -> wasmtime::Result<(Component, bool)> {
        let path = self.path(digest);
        match self.read(&path, digest) {
            Ok(Some(artefact)) => {
                // SAFETY: the artefact carries a valid tag under this host's key for this
                // engine and these component bytes: it is what `Component::serialize` gave
                // this host for them. wasmtime checks its header once more.
                match unsafe { Component::deserialize(engine, artefact) } {
                    Ok(c) => return Ok((c, true)),
                    Err(e) => tracing::warn!(path = %path.display(), "recompiling: precompiled plugin refused: {e:#}"),
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), "recompiling: precompiled plugin not trusted: {e:#}");
                let _ = std::fs::remove_file(&path);
            }
        }
        let component = Component::new(engine, bytes)?;
        if let Err(e) = self.store(&path, digest, &component) {
            tracing::warn!(path = %path.display(), "cannot keep the compiled plugin: {e:#}");
        }
        Ok((component, false))
    }

    /// The artefact without its tag, if the file is there and authentic.
    fn read(&self, path: &Path, digest: &str) -> anyhow::Result<Option<Vec<u8>>> {
        read_tagged(path, &self.key, |artefact| self.message(digest, artefact))
            .map_err(|e| e.context(format!("component sha256 {digest}")))
    }

    fn store(&self, path: &Path, digest: &str, component: &Component) -> anyhow::Result<()> {
        let artefact = component.serialize()?;
        let tag = hmac::sign(&self.key, &self.message(digest, &artefact));
        write_tagged(path, &artefact, tag.as_ref(), true)
    }
}

impl Functions {
    /// Cranelift's keys are long: a file is named by the key's SHA-256, under a directory of its
    /// first two hex digits.
    fn path(&self, key: &[u8]) -> PathBuf {
        let name = hex::encode(Sha256::digest(key));
        self.dir.join(&name[..2]).join(&name)
    }

    fn message(key: &[u8], compiled: &[u8]) -> Vec<u8> {
        let compiled = ring::digest::digest(&ring::digest::SHA256, compiled);
        [b"function\0".as_slice(), &Sha256::digest(key), compiled.as_ref()].concat()
    }
}

impl CacheStore for Functions {
    fn get(&self, key: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
        let path = self.path(key);
        match read_tagged(&path, &self.key, |compiled| Self::message(key, compiled)) {
            Ok(found) => found.map(Into::into),
            Err(e) => {
                tracing::warn!(path = %path.display(), "recompiling a function: compiled function not trusted: {e:#}");
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        self.pruned.call_once(|| {
            let removed = prune(&self.dir, MAX_FUNCTION_BYTES);
            if removed > 0 {
                tracing::info!(dir = %self.dir.display(), removed, "removed the oldest compiled functions");
            }
        });
        let path = self.path(key);
        let tag = hmac::sign(&self.key, &Self::message(key, &value));
        let written = path
            .parent()
            .ok_or_else(|| anyhow::anyhow!("no directory"))
            .and_then(|d| Ok(std::fs::DirBuilder::new().recursive(true).mode(0o700).create(d)?))
            .and_then(|()| write_tagged(&path, &value, tag.as_ref(), false));
        if let Err(e) = &written {
            tracing::debug!(path = %path.display(), "cannot keep a compiled function: {e:#}");
        }
        written.is_ok()
    }
}

/// Removes the oldest files of `dir`'s shards, oldest first (then by name), until their blocks
/// take at most half of `budget`, if they take more; returns how many.
fn prune(dir: &Path, budget: u64) -> usize {
    let mut files = Vec::new();
    for shard in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(shard.path()).into_iter().flatten().flatten() {
            if let Ok(meta) = file.metadata() {
                files.push((meta.modified().unwrap_or(std::time::UNIX_EPOCH), file.path(), meta.blocks() * 512));
            }
        }
    }
    let mut total: u64 = files.iter().map(|f| f.2).sum();
    if total <= budget {
        return 0;
    }
    files.sort();
    let mut removed = 0;
    for (_, path, len) in files {
        if total <= budget / 2 {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
            removed += 1;
        }
    }
    removed
}

/// The content of `path` without its tag, if the file is there, private to this user and its
/// tag is `key`'s over `message(content)`.
fn read_tagged(path: &Path, key: &hmac::Key, message: impl Fn(&[u8]) -> Vec<u8>) -> anyhow::Result<Option<Vec<u8>>> {
    let mut file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        anyhow::bail!("not a regular file");
    }
    private(&meta, path, false)?;
    if meta.len() > MAX_ARTEFACT_BYTES {
        anyhow::bail!("{} bytes, more than any compiled plugin", meta.len());
    }
    let mut content = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut content)?;
    let Some(split) = content.len().checked_sub(TAG) else { anyhow::bail!("too short to carry a tag") };
    let (artefact, tag) = content.split_at(split);
    if hmac::verify(key, &message(artefact), tag).is_err() {
        anyhow::bail!("its tag is not this host's");
    }
    content.truncate(split);
    Ok(Some(content))
}

/// Writes `content` to `path` in one step (a private temporary file renamed over it), so a
/// reader never sees half of it; the pulled-plugin cache keeps its files so too.
pub(crate) fn write_private(path: &Path, content: &[u8]) -> anyhow::Result<()> {
    write_tagged(path, content, &[], false)
}

/// Writes to a new file under an unpredictable name, then renames: concurrent hosts never
/// read a half file, and nobody can plant the file being written. A compiled function is not
/// synced (a component has tens of thousands): one torn by a crash fails its tag and is
/// compiled again.
fn write_tagged(path: &Path, content: &[u8], tag: &[u8], durable: bool) -> anyhow::Result<()> {
    let mut suffix = [0u8; 12];
    getrandom::fill(&mut suffix).map_err(|e| anyhow::anyhow!("no randomness for a file name: {e}"))?;
    let tmp = path.with_extension(format!("tmp.{}", hex::encode(suffix)));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(content)?;
        f.write_all(tag)?;
        if durable { f.sync_all() } else { Ok(()) }
    };
    if let Err(e) = write().and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.into());
    }
    Ok(())
}

/// `dir` if it is this user's and no one else may write it; else (an emptyDir is root's, mode
/// 0777) a private directory of this user's inside it.
fn private_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    let create = |d: &Path| {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(d)
            .map_err(|e| anyhow::anyhow!("cannot create the precompiled cache {}: {e}", d.display()))
    };
    create(dir)?;
    let dir = dir.canonicalize()?;
    if private(&std::fs::metadata(&dir)?, &dir, true).is_ok() {
        return Ok(dir);
    }
    let own = dir.join(format!("uid-{}", euid()));
    create(&own)?;
    let meta = std::fs::symlink_metadata(&own)?;
    if !meta.is_dir() {
        anyhow::bail!("{} is not a directory", own.display());
    }
    private(&meta, &own, false)?;
    Ok(own)
}

/// 32 random bytes, from `path` or written there (O_EXCL, 0600) on first use.
fn load_or_create_key(path: &Path) -> anyhow::Result<Vec<u8>> {
    let created =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(path);
    match created {
        Ok(mut f) => {
            let mut key = vec![0u8; 32];
            getrandom::fill(&mut key).map_err(|e| anyhow::anyhow!("no randomness for a key: {e}"))?;
            f.write_all(&key)?;
            f.sync_all()?;
            tracing::info!(key = %path.display(), "created the precompiled cache's key");
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path)?;
            private(&f.metadata()?, path, true)?;
            let mut key = Vec::new();
            Read::by_ref(&mut f).take(4096).read_to_end(&mut key)?;
            if key.len() < 32 {
                anyhow::bail!("the precompiled cache's key {} has {} bytes; at least 32", path.display(), key.len());
            }
            Ok(key)
        }
        Err(e) => Err(anyhow::anyhow!("cannot create the precompiled cache's key {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_removes_the_oldest_until_half_the_budget_remains() {
        let dir = tempfile::tempdir().unwrap();
        let now = std::time::SystemTime::now();
        for (i, shard) in ["aa", "bb", "aa", "cc"].iter().enumerate() {
            std::fs::create_dir_all(dir.path().join(shard)).unwrap();
            let path = dir.path().join(shard).join(format!("f{i}"));
            std::fs::write(&path, [1u8; 100]).unwrap();
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(now - std::time::Duration::from_secs(100 - i as u64)).unwrap();
        }
        let block = std::fs::metadata(dir.path().join("aa/f0")).unwrap().blocks() * 512;
        assert_eq!(prune(dir.path(), 4 * block), 0, "within the budget");
        assert_eq!(prune(dir.path(), 4 * block - 1), 3, "down to half of it");
        assert!(dir.path().join("cc/f3").exists(), "the newest is kept");
        assert!(!dir.path().join("aa/f2").exists());
    }
}
