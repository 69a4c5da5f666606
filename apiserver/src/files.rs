//! The files the embedded cluster writes: its kubeconfig and the kubeconfigs of tokens it hands
//! out (`Cluster::kubeconfig_for_token`), each a `system:masters` or ServiceAccount credential.
//! The CA and serving keys and the tokens themselves stay in memory (`tls`, `auth`).
//!
//! No other user may read them at any moment: they are created in a directory made with mode
//! 0700 under the system temp dir, named `wasmcm-cluster-<pid>-<random>` (not predictable, so
//! nobody can make it first), and each file is created with `O_CREAT|O_EXCL` and mode 0600
//! (never written first and chmod'ed after). A kubeconfig at a path the caller gives is
//! written to a new 0600 file beside it and renamed over it. The directory goes when the
//! cluster does ([`PrivateDir`]'s drop); a process that ended without dropping it (killed,
//! `process::exit`) leaves it behind, so each start first removes the directories of earlier
//! runs whose process is gone, and never one of a process still running.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// What every directory of a cluster's files is named after.
const PREFIX: &str = "wasmcm-cluster-";
/// The file in each directory naming the process it belongs to: its pid and start time.
const OWNER_FILE: &str = "owner";

/// A cluster's directory of credential files, removed with everything in it when dropped.
#[derive(Debug)]
pub(crate) struct PrivateDir {
    dir: tempfile::TempDir,
}

impl PrivateDir {
    /// A new directory under `parent` (the system temp dir), after removing those of earlier
    /// runs whose process is gone.
    pub(crate) fn create(parent: &Path) -> anyhow::Result<PrivateDir> {
        let dir = private_builder(&format!("{PREFIX}{}-", std::process::id()))
            .tempdir_in(parent)
            .with_context(|| format!("creating a private directory in {}", parent.display()))?;
        let dir = PrivateDir { dir };
        if let Some(owner) = Owner::current() {
            dir.write_new(OWNER_FILE, &owner.to_string())?;
        }
        sweep(parent, dir.path());
        Ok(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `contents` to a new file `name` in the directory, readable by its owner only
    /// from its creation; fails if the file exists.
    pub(crate) fn write_new(&self, name: &str, contents: &str) -> anyhow::Result<PathBuf> {
        let path = self.path().join(name);
        write_exclusive(&path, contents)?;
        Ok(path)
    }
}

/// A cluster's credential files: its [`PrivateDir`], and its kubeconfig, in it or at the
/// caller's path. Dropped, it removes them: the directory, and the caller's file if it still
/// holds what was written there.
#[derive(Debug)]
pub(crate) struct ClusterFiles {
    dir: PrivateDir,
    kubeconfig: PathBuf,
    /// What was written at the caller's path, if the kubeconfig is there.
    at_callers_path: Option<String>,
}

impl ClusterFiles {
    /// The files of a new cluster under `temp` (the system temp dir), its kubeconfig
    /// (`contents`) at `kubeconfig` if given, else in the private directory.
    pub(crate) fn create(temp: &Path, kubeconfig: Option<&Path>, contents: &str) -> anyhow::Result<ClusterFiles> {
        let dir = PrivateDir::create(temp)?;
        let (kubeconfig, at_callers_path) = match kubeconfig {
            Some(path) => {
                write_replacing(path, contents)?;
                (path.to_path_buf(), Some(contents.to_string()))
            }
            None => (dir.write_new("kubeconfig", contents)?, None),
        };
        Ok(ClusterFiles { dir, kubeconfig, at_callers_path })
    }

    pub(crate) fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    pub(crate) fn dir(&self) -> &PrivateDir {
        &self.dir
    }
}

impl Drop for ClusterFiles {
    fn drop(&mut self) {
        if let Some(written) = &self.at_callers_path
            && std::fs::read_to_string(&self.kubeconfig).is_ok_and(|now| now == *written)
        {
            let _ = std::fs::remove_file(&self.kubeconfig);
        }
    }
}

fn private_builder(prefix: &str) -> tempfile::Builder<'_, '_> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Given to mkdir(2) itself (the umask can only take bits away), not set afterwards.
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    builder
}

/// Creates `path` (which must not exist) with mode 0600 and writes `contents` to it.
fn write_exclusive(path: &Path, contents: &str) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).with_context(|| format!("creating {}", path.display()))?;
    file.write_all(contents.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Writes a credential to `path`, a place the caller chose, replacing what is there: its
/// missing parent directories are made 0700, and the file is written as a new 0600 file in
/// the same directory, then renamed over `path`, so that neither an old file's mode nor a
/// moment between creating and restricting ever exposes it.
pub(crate) fn write_replacing(path: &Path, contents: &str) -> anyhow::Result<()> {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut dirs = std::fs::DirBuilder::new();
    dirs.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        dirs.mode(0o700);
    }
    dirs.create(parent).with_context(|| format!("creating {}", parent.display()))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("kubeconfig");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .make_in(parent, |p| options.open(p))
        .with_context(|| format!("creating a file in {}", parent.display()))?;
    temp.write_all(contents.as_bytes()).with_context(|| format!("writing {}", temp.path().display()))?;
    temp.persist(path).map_err(|e| e.error).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// A process, told apart from a later one given the same pid by its start time (in clock
/// ticks since boot, `/proc/<pid>/stat`'s 22nd field).
#[derive(Debug, PartialEq, Eq)]
struct Owner {
    pid: u32,
    start: u64,
}

impl Owner {
    fn current() -> Option<Owner> {
        let pid = std::process::id();
        Some(Owner { pid, start: start_time(pid)? })
    }

    fn parse(text: &str) -> Option<Owner> {
        let (pid, start) = text.trim().split_once(' ')?;
        Some(Owner { pid: pid.parse().ok()?, start: start.parse().ok()? })
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.pid, self.start)
    }
}

fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (2nd field) is in parentheses and may hold spaces: count after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the directory `dir` of this naming belongs to a process that is gone. Anything
/// unsure (no `/proc`, an owner file unreadable, a pid still running that may be the owner)
/// counts as alive: a live cluster's files are never removed.
fn abandoned(dir: &Path) -> bool {
    if !Path::new("/proc/self/stat").exists() {
        return false;
    }
    let Some(name) = dir.file_name().and_then(|n| n.to_str()) else { return false };
    // wasmcm-cluster-<pid>-<random>, and older versions' wasmcm-cluster-<pid>-<port>.
    let Some(pid) = name.strip_prefix(PREFIX).and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok())
    else {
        return false;
    };
    let Some(running_since) = start_time(pid) else { return true };
    match std::fs::read_to_string(dir.join(OWNER_FILE)).ok().as_deref().and_then(Owner::parse) {
        // The pid now names another process.
        Some(owner) => owner.pid == pid && owner.start != running_since,
        None => false,
    }
}

/// Removes the directories in `parent` of earlier runs whose process is gone: only this
/// naming's, only directories (not symlinks), only the current user's (`own` is one of
/// them, made just now), never `own`.
fn sweep(parent: &Path, own: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(uid) = std::fs::metadata(own).map(|m| m.uid()) else { return };
        let Ok(entries) = std::fs::read_dir(parent) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let ours = entry.file_name().to_str().is_some_and(|n| n.starts_with(PREFIX))
                && path != own
                && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == uid);
            if ours && abandoned(&path) {
                match std::fs::remove_dir_all(&path) {
                    Ok(()) => tracing::debug!("removed {} of a run that has ended", path.display()),
                    Err(e) => tracing::debug!("removing {} of a run that has ended: {e}", path.display()),
                }
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (parent, own);
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn private_directory_and_files() {
        let parent = tempfile::tempdir().unwrap();
        let dir = PrivateDir::create(parent.path()).unwrap();
        let name = dir.path().file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with(&format!("wasmcm-cluster-{}-", std::process::id())), "{name}");
        assert_eq!(mode(dir.path()), 0o700);
        let owner = std::fs::read_to_string(dir.path().join(OWNER_FILE)).unwrap();
        assert_eq!(Owner::parse(&owner), Owner::current());
        let file = dir.write_new("kubeconfig", "secret").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert!(dir.write_new("kubeconfig", "again").is_err(), "an existing file is never reused");
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists(), "the directory goes with the cluster");
    }

    #[test]
    fn a_replaced_file_is_new_and_private() {
        let parent = tempfile::tempdir().unwrap();
        let path = parent.path().join("a/b/kubeconfig");
        write_replacing(&path, "one").unwrap();
        assert_eq!(mode(parent.path().join("a").as_path()), 0o700);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_replacing(&path, "two").unwrap();
        assert_eq!((std::fs::read_to_string(&path).unwrap().as_str(), mode(&path)), ("two", 0o600));
        let left: Vec<_> =
            std::fs::read_dir(parent.path().join("a/b")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["kubeconfig"], "no temporary file is left");
    }

    #[test]
    fn only_directories_of_ended_runs_are_swept() {
        let parent = tempfile::tempdir().unwrap();
        let make = |name: &str, owner: Option<String>| {
            let d = parent.path().join(name);
            std::fs::create_dir(&d).unwrap();
            if let Some(o) = owner {
                std::fs::write(d.join(OWNER_FILE), o).unwrap();
            }
            d
        };
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let me = Owner::current().unwrap();
        let gone = make(&format!("wasmcm-cluster-{dead}-abc"), Some(format!("{dead} 1")));
        let old_format = make(&format!("wasmcm-cluster-{dead}-43121"), None);
        let reused = make(&format!("wasmcm-cluster-{}-xyz", me.pid), Some(format!("{} {}", me.pid, me.start + 1)));
        let live = make(&format!("wasmcm-cluster-{}-def", me.pid), Some(me.to_string()));
        let live_unsure = make(&format!("wasmcm-cluster-{}-ghi", me.pid), None);
        let other = make(&format!("wasmcm-other-{dead}-abc"), None);
        let own = PrivateDir::create(parent.path()).unwrap();
        for (dir, kept) in [
            (&gone, false),
            (&old_format, false),
            (&reused, false),
            (&live, true),
            (&live_unsure, true),
            (&other, true),
        ] {
            assert_eq!(dir.exists(), kept, "{}", dir.display());
        }
        assert!(own.path().exists());
    }
}
