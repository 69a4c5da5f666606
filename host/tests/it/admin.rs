//! The admin endpoint of the real `wasmcm run` under a flood of idle connections, and the CLI
//! that talks to it: the token goes only where it is needed and stays on loopback, token files
//! must be private, and what plugins say reaches the terminal escaped.

use crate::common;
use crate::common::wasmcm;
use crate::record::start_host;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// HTTP/2 with prior knowledge: the client preface and an empty SETTINGS frame.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
/// An HTTP/1 request whose headers never end.
const H1_PARTIAL: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: x\r\n";

/// A plugin manifest of the stamp test guest at `wasm`.
fn stamp_manifest(dir: &Path, wasm: &Path) -> PathBuf {
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::write(
        plugins.join("stamp.yaml"),
        format!(
            "apiVersion: wasmcm.dev/v1alpha1\nkind: Plugin\nmetadata: {{name: stamp}}\n\
             spec: {{source: {{file: {}}}, settings: {{limit: 3}}}}\n",
            wasm.display()
        ),
    )
    .unwrap();
    plugins
}

/// `count` connections to `addr` that each sent `hello` and then nothing.
async fn idle_connections(addr: SocketAddr, count: usize, hello: &[u8]) -> Vec<TcpStream> {
    let mut idle = Vec::with_capacity(count);
    for _ in 0..count {
        let mut s = TcpStream::connect(addr).await.expect("the kernel completes the handshake");
        s.write_all(hello).await.unwrap();
        idle.push(s);
    }
    idle
}

/// `/healthz` and `/readyz`, each within the second the issue asks for (a kubelet probe waits
/// `timeoutSeconds`, 1 by default).
async fn probes_answer(addr: SocketAddr, beside: &str) {
    for path in ["/healthz", "/readyz"] {
        let started = Instant::now();
        let answer =
            tokio::time::timeout(Duration::from_secs(1), wasmcm::admin_request(addr, http::Method::GET, path, None))
                .await;
        assert!(matches!(answer, Ok(Ok((200, _)))), "{path} beside {beside}: {answer:?} after {:?}", started.elapsed());
    }
}

/// Reads `stream` until the host closes it; how long that took.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut sink = [0u8; 4096];
    tokio::time::timeout(limit, async {
        while let Ok(n) = stream.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await
    .ok()
    .map(|()| started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probes_answer_beside_600_idle_connections_and_idle_ones_are_closed_in_seconds() {
    let (cluster, _client) = common::cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let plugins = stamp_manifest(dir.path(), &common::guest("wasmcm_stamp.wasm"));
    let (_host, address) = start_host(&cluster, &plugins, &dir.path().join("admin-token"));
    let addr: SocketAddr = address.parse().unwrap();
    probes_answer(addr, "nothing").await;

    // More idle HTTP/2 connections (prior knowledge: preface and SETTINGS, then silence) than
    // the host serves at once: each new one takes the place of the one idle longest.
    let h2 = idle_connections(addr, 600, H2_PREFACE).await;
    probes_answer(addr, "600 idle HTTP/2 connections").await;
    drop(h2);
    // The same with HTTP/1 requests whose headers never end.
    let h1 = idle_connections(addr, 600, H1_PARTIAL).await;
    probes_answer(addr, "600 HTTP/1 connections sending their headers slowly").await;
    drop(h1);

    // An idle connection is closed within seconds, not at the end of its 60 s lifetime.
    for (what, hello) in [("HTTP/2", H2_PREFACE), ("HTTP/1", H1_PARTIAL), ("silent", &b""[..])] {
        let mut idle = idle_connections(addr, 1, hello).await.pop().unwrap();
        let closed = closed_within(&mut idle, Duration::from_secs(30)).await;
        assert!(closed.is_some(), "an idle {what} connection was still open after 30 s");
    }
}

/// Accepts connections on loopback and keeps what each sent, to see whether a token came.
struct Witness {
    addr: SocketAddr,
    heard: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Witness {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = heard.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let sink = sink.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await;
                    if let Ok(Ok(n)) = n {
                        sink.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n[]").await;
                });
            }
        });
        Witness { addr, heard }
    }

    fn heard(&self) -> String {
        String::from_utf8_lossy(&self.heard.lock().unwrap()).into_owned()
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
}

/// A control character anywhere but at the end of a line.
fn raw_control(text: &str) -> Option<char> {
    text.chars().find(|c| c.is_control() && *c != '\n')
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_keeps_its_token_to_loopback_and_to_private_files_and_prints_what_plugins_say_escaped() {
    // A release of the stamp plugin whose version clears the screen, forges a line and opens
    // an 8-bit CSI.
    const VERSION: &str = "1.0\u{1b}[2J\nforged\u{9b}31m";
    const SHOWN: &str = r"1.0\u{1b}[2J\nforged\u{9b}31m";
    let dir = tempfile::tempdir().unwrap();
    let stamp = std::fs::read(common::guest("wasmcm_stamp.wasm")).unwrap();
    let hostile = dir.path().join("stamp-hostile.wasm");
    std::fs::write(&hostile, wasmcm_stamp::variant(&stamp, "v1", VERSION).expect("the version fits")).unwrap();
    let hostile_arg = hostile.to_str().unwrap();

    // Offline: plugins inspect.
    let run = wasmcm(&["plugins", "inspect", hostile_arg]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(raw_control(&run.stdout), None, "{:?}", run.stdout);
    let first = run.stdout.lines().next().unwrap();
    assert!(first.starts_with(&format!("stamp {SHOWN} (contract ")), "{first}");

    // simulate's JSON: serde_json escapes the C0 controls, the C1 one is escaped too, and it
    // is the same JSON.
    let state = dir.path().join("state.yaml");
    std::fs::write(
        &state,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default, labels: {wasmcm.dev/stamp: \"yes\"}}\n",
    )
    .unwrap();
    let run = wasmcm(&["simulate", "--plugin", hostile_arg, "--state", state.to_str().unwrap(), "--key", "default/c"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(raw_control(&run.stdout), None, "{:?}", run.stdout);
    let out: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(out["plugin"]["version"], VERSION);

    // On a running host: plugins list needs the token, and shows the version escaped on its
    // own row.
    let (cluster, _client) = common::cluster().await;
    let plugins = stamp_manifest(dir.path(), &hostile);
    let token = dir.path().join("admin-token");
    let (_host, address) = start_host(&cluster, &plugins, &token);
    let addr: SocketAddr = address.parse().unwrap();
    let (code, body) = wasmcm::admin_request(addr, http::Method::GET, "/plugins", None).await.unwrap();
    assert_eq!(code, 401, "GET /plugins quotes what plugins wrote: {body}");
    let token_arg = token.to_str().unwrap();
    let list = |address: &str, token: &str| {
        let (address, token) = (address.to_string(), token.to_string());
        tokio::task::spawn_blocking(move || {
            wasmcm(&["plugins", "list", "--address", &address, "--admin-token-file", &token])
        })
    };
    let run = list(&address, token_arg).await.unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(raw_control(&run.stdout), None, "{:?}", run.stdout);
    let row = run.stdout.lines().find(|l| l.starts_with("stamp ")).unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(row.contains(SHOWN), "{row}");
    assert!(!run.stdout.lines().any(|l| l.starts_with("forged")), "no line forged: {}", run.stdout);

    // The token is never sent beyond loopback: refused before anything is sent (0.0.0.0 would
    // reach the witness on this machine).
    let witness = Witness::start().await;
    let beyond = format!("0.0.0.0:{}", witness.addr.port());
    let run = list(&beyond, token_arg).await.unwrap();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("refusing to send the admin token to {beyond}"))
            && run.stderr.contains("kubectl -n <namespace> port-forward"),
        "{}",
        run.stderr
    );
    assert_eq!(witness.heard(), "", "nothing reached the address");

    // Token files must be private, the user's own and long enough, as ssh wants of keys.
    chmod(&token, 0o640);
    let run = list(&address, token_arg).await.unwrap();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("permissions 0640 for the admin token {token_arg} are too open"))
            && run.stderr.contains("must not be accessible by group or others"),
        "{}",
        run.stderr
    );
    chmod(&token, 0o600);
    let short = dir.path().join("short-token");
    std::fs::write(&short, "0123456789").unwrap();
    chmod(&short, 0o600);
    let run = list(&address, short.to_str().unwrap()).await.unwrap();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("the admin token {} has 10 bytes; a token has at least 32", short.display())),
        "{}",
        run.stderr
    );
    assert_eq!(list(&address, token_arg).await.unwrap().code, 0, "the private token still works");
}

/// `/readyz` says whether the API server answers: ready with `[+]apiserver ok` while it does,
/// 503 with the cause while it does not, said once in the log (it was 200 throughout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_is_not_ready_while_the_api_server_cannot_be_reached_and_says_why() {
    let (cluster, _client) = common::cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let token = dir.path().join("admin-token");
    let (_host, address) = tokio::task::block_in_place(|| start_host(&cluster, &plugins, &token));
    let addr: SocketAddr = address.parse().unwrap();
    let readyz = || async move { common::http_get(addr, "/readyz").await };
    common::eventually("a ready host that reached the API server", || async {
        let (code, body) = readyz().await;
        (code == 200 && body.contains("[+]apiserver ok\n")).then_some(())
    })
    .await;

    cluster.shutdown().await;
    let body = common::eventually("an unready host", || async {
        let (code, body) = readyz().await;
        (code == 503).then_some(body)
    })
    .await;
    assert!(body.contains("[+]started ok\n[-]apiserver failed: cannot reach the API server: "), "{body}");
    assert!(body.contains("Connection refused") && body.ends_with("readyz check failed\n"), "{body}");
    tokio::time::sleep(Duration::from_secs(11)).await;
    let log = std::fs::read_to_string(dir.path().join("host.log")).unwrap();
    assert_eq!(log.matches("/readyz reports not ready until it answers").count(), 1, "said once: {log}");
}
