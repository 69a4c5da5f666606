//! A real OCI registry on loopback: the CNCF distribution registry (Debian's `docker-registry`,
//! which `scripts/install-image-tools.sh` installs) serving plain HTTP on a free port, with its
//! configuration, storage and log in a tempdir of its own, and optionally htpasswd Basic
//! authentication. A [`Registry`] owns the process: dropping it kills the registry and removes
//! what it stored.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

const USERNAME: &str = "wasmcm";
const PASSWORD: &str = "wasmcm-test-password";
/// [`USERNAME`] with a bcrypt hash of [`PASSWORD`], made once by
/// `htpasswd -nbB wasmcm wasmcm-test-password` (apache2-utils). The registry accepts only
/// bcrypt, and a fresh Debian machine has neither htpasswd nor a bcrypt library (python3-bcrypt
/// is not installed; Python's `crypt` is gone in 3.13), so the hash is committed, not made.
const HTPASSWD: &str = "wasmcm:$2y$05$D2cX6/8OSvoxi1BUc5pg2uosgp6vlAUXWhCNaXe8YcYhQH7E6T.cC\n";

/// Long enough for the registry to start on a loaded 2-core machine.
const START_PATIENCE: Duration = Duration::from_secs(30);

/// A running `docker-registry serve`, killed on drop.
pub struct Registry {
    child: Child,
    port: u16,
    dir: TempDir,
}

impl Registry {
    /// Starts a registry, behind Basic authentication as [`Registry::username`] and
    /// [`Registry::password`] if `auth`, and waits until `/v2/` answers (200, or 401 with
    /// `auth`). Panics, with the tail of the registry's log, if it does not within 30 s.
    pub fn start(auth: bool) -> Registry {
        for attempt in 1.. {
            let mut registry = Registry::spawn(auth);
            match registry.wait_ready(if auth { 401 } else { 200 }) {
                Ok(()) => return registry,
                // The free port was taken between our probe and the registry's bind.
                Err(log) if attempt < 3 && log.contains("address already in use") => continue,
                // Panicking with `registry` alive kills it.
                Err(log) => panic!("docker-registry did not start on {}; its log ends:\n{log}", registry.address()),
            }
        }
        unreachable!()
    }

    /// The user that an `auth` registry admits.
    pub fn username(&self) -> &'static str {
        USERNAME
    }

    /// [`Registry::username`]'s password.
    pub fn password(&self) -> &'static str {
        PASSWORD
    }

    /// `127.0.0.1:PORT`, where the registry serves plain HTTP.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Where the filesystem driver keeps the bytes of the blob `digest` (`sha256:HEX`), so
    /// that a test can corrupt a stored blob: `<root>/docker/registry/v2/blobs/sha256/<HEX's
    /// first two>/<HEX>/data`.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or_else(|| panic!("{digest} is not a sha256 digest"));
        self.root().join("docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("storage")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("registry.log")
    }

    /// Writes the configuration (and the htpasswd file with `auth`) into a fresh tempdir and
    /// starts the registry on a port that was free a moment ago.
    fn spawn(auth: bool) -> Registry {
        let dir = tempfile::tempdir().expect("a tempdir");
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        // YAML reads JSON's double-quoted strings, so paths need no escaping of their own.
        let quote = |path: &Path| serde_json::to_string(path.to_str().expect("a UTF-8 tempdir")).expect("a string");
        let mut config = format!(
            "version: 0.1\n\
             log:\n  level: warn\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
             http:\n  addr: 127.0.0.1:{port}\n  secret: wasmcm-test\n",
            quote(&dir.path().join("storage"))
        );
        if auth {
            let htpasswd = dir.path().join("htpasswd");
            std::fs::write(&htpasswd, HTPASSWD).expect("htpasswd written");
            config += &format!("auth:\n  htpasswd:\n    realm: wasmcm-test\n    path: {}\n", quote(&htpasswd));
        }
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).expect("config.yml written");
        let log = File::create(dir.path().join("registry.log")).expect("registry.log created");
        let child = Command::new(binary())
            .arg("serve")
            .arg(&config_path)
            // REGISTRY_* variables would override config.yml, and the registry needs nothing else.
            .env_clear()
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("registry.log"))
            .stderr(log)
            .spawn()
            .expect("docker-registry runs");
        Registry { child, port, dir }
    }

    /// Polls `GET /v2/` until it answers `status`; the log's tail if the registry exits or the
    /// patience runs out first.
    fn wait_ready(&mut self, status: u16) -> Result<(), String> {
        let deadline = Instant::now() + START_PATIENCE;
        loop {
            let last = match get_status(&self.address(), "/v2/") {
                Ok(got) if got == status => return Ok(()),
                Ok(got) => format!("status {got}, not {status}"),
                Err(e) => e.to_string(),
            };
            let exited = self.child.try_wait().expect("docker-registry's status");
            if exited.is_some() || Instant::now() > deadline {
                let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
                let lines: Vec<&str> = log.lines().collect();
                let tail = lines[lines.len().saturating_sub(40)..].join("\n");
                let how = exited.map_or(format!("after {START_PATIENCE:?}"), |s| format!("exited {s}"));
                return Err(format!("({how}; GET /v2/: {last})\n{tail}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `docker-registry` on PATH, else in /usr/bin (where Debian puts it); missing, it fails the
/// test: registry tests never skip.
fn binary() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .map(|dir| dir.join("docker-registry"))
        .find(|bin| bin.is_file())
        .expect("docker-registry is missing: run scripts/install-image-tools.sh (make test does)")
}

/// The status of an HTTP/1.0 `GET path` (no dependency for one request).
fn get_status(address: &str, path: &str) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    // "HTTP/1.0 200 OK"
    response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP response: {response:?}")))
}
