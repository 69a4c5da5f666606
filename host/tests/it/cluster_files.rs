//! The embedded cluster's credential files (`wasmcm cluster`, the real binary): never readable
//! by another user at any moment, gone when it stops, and those of runs that died swept away
//! by the next. Run with a umask of 0, which hides nothing a mode at creation does not, and
//! watched with inotify from before the process starts, which sees every change of mode
//! (a chmod is an IN_ATTRIB event) however fast it follows the creation.

use std::ffi::CString;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// An inotify watch of one directory.
struct Watch(std::os::fd::OwnedFd);

impl Watch {
    fn new(dir: &Path) -> Watch {
        use std::os::fd::FromRawFd as _;
        // SAFETY: plain system calls; the descriptor is owned from here on.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(fd >= 0, "inotify_init1: {}", std::io::Error::last_os_error());
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let path = CString::new(dir.as_os_str().as_bytes()).unwrap();
        let mask = libc::IN_CREATE | libc::IN_ATTRIB | libc::IN_MOVED_TO | libc::IN_CLOSE_WRITE;
        // SAFETY: a valid descriptor and a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(std::os::fd::AsRawFd::as_raw_fd(&fd), path.as_ptr(), mask) };
        assert!(wd >= 0, "inotify_add_watch: {}", std::io::Error::last_os_error());
        Watch(fd)
    }

    /// The events so far: (name in the directory, mask).
    fn events(&self) -> Vec<(String, u32)> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: reads into a buffer of the length given.
            let n = unsafe { libc::read(std::os::fd::AsRawFd::as_raw_fd(&self.0), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return out;
            }
            let mut at = 0;
            while at + 16 <= n as usize {
                let word = |i: usize| u32::from_ne_bytes(buf[at + i..at + i + 4].try_into().unwrap());
                let (mask, len) = (word(4), word(12) as usize);
                let name = &buf[at + 16..at + 16 + len];
                let name = String::from_utf8_lossy(name).trim_end_matches('\0').to_string();
                out.push((name, mask));
                at += 16 + len;
            }
        }
    }
}

/// A `wasmcm cluster` process, killed if the test ends without stopping it.
struct Running(Option<Child>);

impl Running {
    fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, Child::id)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `wasmcm cluster` with `args`, its temp dir `temp`, a umask of 0; and the kubeconfig it
/// printed.
fn cluster(temp: &Path, args: &[&str]) -> (Running, PathBuf) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wasmcm"));
    cmd.arg("cluster").args(args).env("TMPDIR", temp).env("RUST_LOG", "warn").stdout(Stdio::piped());
    // SAFETY: umask is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("wasmcm runs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let child = Running(Some(child));
    let kubeconfig = loop {
        let line = lines.next().expect("wasmcm prints its kubeconfig").unwrap();
        if let Some(path) = line.strip_prefix("kubeconfig: ") {
            break PathBuf::from(path);
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, kubeconfig)
}

/// Ctrl-C, and the exit it makes.
fn interrupt(mut running: Running) {
    let Some(mut child) = running.0.take() else { return };
    let pid = child.id() as libc::pid_t;
    // SAFETY: a signal to our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

#[test]
fn the_kubeconfig_is_never_readable_by_another_user_and_is_gone_at_exit() {
    let temp = tempfile::tempdir().unwrap();
    // Its default place: a directory of its own in the temp dir.
    let watch = Watch::new(temp.path());
    let (child, kubeconfig) = cluster(temp.path(), &[]);
    let dir = kubeconfig.parent().unwrap().to_path_buf();
    assert_eq!(dir.parent(), Some(temp.path()));
    let name = dir.file_name().unwrap().to_str().unwrap().to_string();
    let events = watch.events();
    assert!(
        events.iter().any(|(n, m)| *n == name && m & libc::IN_CREATE != 0 && m & libc::IN_ISDIR != 0),
        "{events:?}"
    );
    // Made 0700 by mkdir itself: never chmod'ed (IN_ATTRIB), so never wider, and nothing in
    // it was ever reachable by another user.
    assert!(events.iter().all(|(_, m)| m & libc::IN_ATTRIB == 0), "a mode changed after creation: {events:?}");
    assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    assert_eq!(mode(&kubeconfig), 0o600);
    assert!(name.starts_with(&format!("wasmcm-cluster-{}-", child.id())), "{name}: not predictable from the pid");
    interrupt(child);
    assert!(!dir.exists(), "{} is removed at exit", dir.display());

    // A place of the caller's: replaced by a file new and 0600 from its creation (a file
    // written and then chmod'ed shows as IN_ATTRIB), removed at exit.
    let mine = temp.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = mine.join("kubeconfig");
    std::fs::write(&path, "old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let watch = Watch::new(&mine);
    let (child, kubeconfig) = cluster(temp.path(), &["--kubeconfig", path.to_str().unwrap()]);
    assert_eq!(kubeconfig, path);
    let events = watch.events();
    assert!(events.iter().all(|(_, m)| m & libc::IN_ATTRIB == 0), "a mode changed after creation: {events:?}");
    assert_eq!(mode(&path), 0o600);
    assert!(std::fs::read_to_string(&path).unwrap().contains("token: "));
    interrupt(child);
    assert!(!path.exists(), "the kubeconfig written at the caller's path is removed at exit");
    let left: Vec<_> = std::fs::read_dir(temp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["mine"], "the private directory of the second run is gone too");
}

/// The start time of process `pid` (`/proc/<pid>/stat`'s 22nd field), as the cluster records
/// its own.
fn start_time(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat[stat.rfind(')').unwrap() + 1..].split_whitespace().nth(19).unwrap().to_string()
}

#[test]
fn a_start_sweeps_away_the_files_of_runs_that_died_but_not_of_live_ones() {
    let temp = tempfile::tempdir().unwrap();
    let dead = {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let me = std::process::id();
    let made = |name: String, owner: Option<String>| {
        let dir = temp.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("kubeconfig"), "token: x").unwrap();
        if let Some(owner) = owner {
            std::fs::write(dir.join("owner"), owner).unwrap();
        }
        dir
    };
    let crashed = made(format!("wasmcm-cluster-{dead}-a1b2c3"), Some(format!("{dead} 12345")));
    // What earlier versions left: named after the pid and port.
    let old = made(format!("wasmcm-cluster-{dead}-41234"), None);
    let live = made(format!("wasmcm-cluster-{me}-d4e5f6"), Some(format!("{me} {}", start_time(me))));
    let (child, kubeconfig) = cluster(temp.path(), &[]);
    assert!(!crashed.exists() && !old.exists(), "the directories of a dead process are swept");
    assert!(live.join("kubeconfig").exists(), "a live process's are not");
    assert!(kubeconfig.exists());
    interrupt(child);
}
