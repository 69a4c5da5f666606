//! What a client cannot make the server hold, through raw HTTP as a hostile client sends it:
//! bodies past kube-apiserver's 3 MiB and objects past etcd's 1.5 MiB (upstream's answers), the
//! listener's timeouts and connection cap (while watches keep their connections), watch
//! timeouts of any size, and a write's work kept off the runtime that serves everyone else.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use wasmcm_apiserver::{Cluster, ClusterConfig, ConnectionLimits};
use wasmcm_test_support::PATIENCE;

/// A plain-HTTP cluster (loopback, no authentication) with these connection limits.
async fn plain(connections: ConnectionLimits) -> Cluster {
    Cluster::start(ClusterConfig { insecure_http: true, connections, ..ClusterConfig::default() })
        .await
        .expect("cluster starts")
}

/// Sends one HTTP/1.1 request on a new connection and reads the whole answer: its status and
/// JSON body.
async fn request(addr: SocketAddr, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).await.expect("connects");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    answer(&mut s).await
}

async fn answer(s: &mut TcpStream) -> (u16, Value) {
    let mut out = Vec::new();
    tokio::time::timeout(PATIENCE, s.read_to_end(&mut out)).await.expect("an answer").expect("reads");
    let text = String::from_utf8_lossy(&out);
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (code, serde_json::from_str(body).unwrap_or(Value::String(body.to_string())))
}

async fn json_request(addr: SocketAddr, method: &str, path: &str, content_type: &str, body: &Value) -> (u16, Value) {
    request(addr, method, path, content_type, &serde_json::to_vec(body).unwrap()).await
}

fn config_map(name: &str, bytes: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "x".repeat(bytes)}})
}

const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_past_3_mib_are_refused_before_they_are_read() {
    let cluster = plain(ConnectionLimits::default()).await;
    // A 52 MB body announced: answered at once, without waiting for (or buffering) the body.
    let mut s = TcpStream::connect(cluster.addr).await.unwrap();
    let head = format!(
        "POST {CONFIG_MAPS} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Content-Length: 52000000\r\n\r\n{{\"kind\":"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let (code, status) = answer(&mut s).await;
    assert_eq!(code, 413, "{status}");
    assert_eq!(status["reason"], "RequestEntityTooLarge");
    assert_eq!(status["message"], "Request entity too large: limit is 3145728");
}

/// A CRD of Blobs, whose spec and status hold anything.
async fn blobs_crd(addr: SocketAddr) {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "blobs.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "blobs", "singular": "blob", "kind": "Blob", "listKind": "BlobList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": open, "status": open}}}}]}});
    let (code, status) =
        json_request(addr, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", &crd)
            .await;
    assert_eq!(code, 201, "{status}");
}

fn blob(name: &str, bytes: usize) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": name}, "spec": {"a": "x".repeat(bytes)}})
}

const BLOBS: &str = "/apis/example.com/v1/namespaces/default/blobs";

/// Every write path refuses an object past 1.5 MiB as kube-apiserver passes on etcd's refusal
/// (a 500 without a reason: "Error from server: etcdserver: request is too large"), stores
/// nothing of it, and a dry run (which never reaches etcd) is answered as upstream answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_past_etcds_limit_are_refused_on_every_write() {
    let cluster = plain(ConnectionLimits::default()).await;
    let addr = cluster.addr;
    blobs_crd(addr).await;
    let too_large = |(code, status): (u16, Value), what: &str| {
        let shown: String = status.to_string().chars().take(300).collect();
        assert_eq!(code, 500, "{what}: {shown}");
        assert_eq!(status["message"], "etcdserver: request is too large", "{what}");
        assert!(status.get("reason").is_none(), "{what}: no reason, as upstream's: {shown}");
    };
    let json = "application/json";
    let big = 1_600_000;
    too_large(json_request(addr, "POST", BLOBS, json, &blob("big", big)).await, "create");
    let (code, _) = json_request(addr, "POST", &format!("{BLOBS}?dryRun=All"), json, &blob("big", big)).await;
    assert_eq!(code, 201, "a dry run is not stored, so etcd never sees it");
    let (code, _) = json_request(addr, "POST", BLOBS, json, &blob("b", 900_000)).await;
    assert_eq!(code, 201);
    let path = format!("{BLOBS}/b");
    too_large(json_request(addr, "PUT", &path, json, &blob("b", big)).await, "update");
    // Patches that double what is stored: the 52 MB of the report grew this way.
    let copy = json!([{"op": "copy", "from": "/spec/a", "path": "/spec/b"}]);
    too_large(json_request(addr, "PATCH", &path, "application/json-patch+json", &copy).await, "JSON patch");
    let merge = json!({"spec": {"b": "y".repeat(900_000)}});
    too_large(json_request(addr, "PATCH", &path, "application/merge-patch+json", &merge).await, "merge patch");
    let apply = format!("{path}?fieldManager=t&force=true");
    too_large(json_request(addr, "PATCH", &apply, "application/apply-patch+yaml", &blob("b", big)).await, "apply");
    let apply_new = format!("{BLOBS}/new?fieldManager=t");
    too_large(
        json_request(addr, "PATCH", &apply_new, "application/apply-patch+yaml", &blob("new", big)).await,
        "apply creating",
    );
    let mut with_status = blob("b", 1);
    with_status["status"] = json!({"a": "s".repeat(big)});
    too_large(json_request(addr, "PUT", &format!("{path}/status"), json, &with_status).await, "status");
    let status_patch = json!({"status": {"a": "s".repeat(big)}});
    too_large(
        json_request(addr, "PATCH", &format!("{path}/status"), "application/merge-patch+json", &status_patch).await,
        "status patch",
    );
    // Nothing of it was stored.
    let (code, stored) = request(addr, "GET", &path, "", b"").await;
    assert_eq!(code, 200);
    assert_eq!(stored["spec"].as_object().map(|s| s.keys().cloned().collect::<Vec<_>>()), Some(vec!["a".to_string()]));
    assert!(stored.get("status").is_none(), "{:?}", stored.get("status"));
    assert_eq!(request(addr, "GET", &format!("{BLOBS}/big"), "", b"").await.0, 404);
    assert_eq!(request(addr, "GET", &format!("{BLOBS}/new"), "", b"").await.0, 404);
}

/// The watches' field selector: ConfigMap `seen` (not the namespace's own root CA's).
const SEEN: &str = "&fieldSelector=metadata.name%3Dseen";

/// Opens a watch of ConfigMaps on a new connection, and reads its answer's head.
async fn open_watch(addr: SocketAddr, query: &str) -> (u16, BufReader<TcpStream>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {CONFIG_MAPS}?watch=true{query} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).await.unwrap();
    let code = line.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    loop {
        line.clear();
        r.read_line(&mut line).await.unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    (code, r)
}

/// The next watch event's type and object name, or None once the stream has ended.
async fn next_event(r: &mut BufReader<TcpStream>) -> Option<(String, String)> {
    let mut line = String::new();
    loop {
        line.clear();
        let n = tokio::time::timeout(PATIENCE, r.read_line(&mut line)).await.expect("a line").ok()?;
        if n == 0 {
            return None;
        }
        // Chunk sizes and blank lines between the events' JSON lines.
        if let Ok(event @ Value::Object(_)) = serde_json::from_str::<Value>(line.trim()) {
            let name = event.pointer("/object/metadata/name").and_then(Value::as_str).unwrap_or("");
            return Some((event["type"].as_str().unwrap_or("").to_string(), name.to_string()));
        }
        if line.trim() == "0" {
            return None;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_timeouts_of_any_size_are_clamped_not_fatal() {
    let cluster = plain(ConnectionLimits::default()).await;
    let addr = cluster.addr;
    // Not an int64: refused as upstream's query decoding refuses it.
    let (code, status) =
        request(addr, "GET", &format!("{CONFIG_MAPS}?watch=true&timeoutSeconds={}", u64::MAX), "", b"").await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["message"], "strconv.ParseInt: parsing \"18446744073709551615\": value out of range");
    // The largest int64, and 0 (no timeout of the client's: the server's default), both watch.
    let (huge, mut huge_events) = open_watch(addr, &format!("{SEEN}&timeoutSeconds={}", i64::MAX)).await;
    let (zero, mut zero_events) = open_watch(addr, &format!("{SEEN}&timeoutSeconds=0")).await;
    assert_eq!((huge, zero), (200, 200));
    let (code, _) = json_request(addr, "POST", CONFIG_MAPS, "application/json", &config_map("seen", 1)).await;
    assert_eq!(code, 201);
    let added = Some(("ADDED".to_string(), "seen".to_string()));
    assert_eq!(next_event(&mut huge_events).await, added, "the watch with the huge timeout runs");
    assert_eq!(next_event(&mut zero_events).await, added, "the watch with timeoutSeconds=0 runs");
    // A negative timeout ends the watch at once, as upstream's.
    let (code, mut ended) = open_watch(addr, "&fieldSelector=metadata.name%3Dnone&timeoutSeconds=-1").await;
    assert_eq!((code, next_event(&mut ended).await), (200, None));
}

/// Reads from `s` until the server closes it; fails the test if it never does.
async fn closed_by_server(mut s: TcpStream, what: &str) {
    let mut buf = vec![0u8; 4096];
    let closed = tokio::time::timeout(PATIENCE, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "{what}: the server kept the connection open");
}

fn short_limits(max: usize) -> ConnectionLimits {
    ConnectionLimits {
        max,
        tls_handshake: Duration::from_secs(1),
        first_request: Duration::from_secs(1),
        idle: Duration::from_secs(1),
        ..ConnectionLimits::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_completes_tls_is_dropped() {
    let cluster = Cluster::start(ClusterConfig { connections: short_limits(16), ..ClusterConfig::default() })
        .await
        .expect("cluster starts");
    let s = TcpStream::connect(cluster.addr).await.unwrap();
    closed_by_server(s, "TCP open, no TLS handshake").await;
    let mut s = TcpStream::connect(cluster.addr).await.unwrap();
    // The first bytes of a ClientHello, and then nothing.
    s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).await.unwrap();
    closed_by_server(s, "half a ClientHello").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_send_a_request_are_dropped() {
    let cluster = plain(short_limits(16)).await;
    let addr = cluster.addr;
    closed_by_server(TcpStream::connect(addr).await.unwrap(), "nothing sent").await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /api HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    closed_by_server(s, "headers never finished").await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    // HTTP/2's preface and an empty SETTINGS frame, and then no request.
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").await.unwrap();
    closed_by_server(s, "HTTP/2 without a request").await;
    // A keep-alive connection is closed once idle after its answer.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    closed_by_server(s, "idle after a request").await;
}

/// At the cap, a new client waits until a connection closes; a watch holds its connection for
/// as long as it runs, however long past the idle timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_capped_and_watches_keep_theirs() {
    let cluster = plain(short_limits(3)).await;
    let addr = cluster.addr;
    let late = "&fieldSelector=metadata.name%3Dlate";
    let (_, mut first) = open_watch(addr, late).await;
    let (_, second) = open_watch(addr, late).await;
    let (_, third) = open_watch(addr, late).await;
    let waiting = tokio::spawn(request(addr, "GET", "/version", "", b""));
    // Past the idle timeout: the watches are requests in progress, not idle connections.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!waiting.is_finished(), "a fourth connection is not served while three watches hold the cap");
    let (code, _) = {
        // Through a watch's own connection is no way to write; close one to make room.
        drop(second);
        tokio::time::timeout(PATIENCE, waiting).await.expect("served once a connection closed").unwrap()
    };
    assert_eq!(code, 200);
    let (code, _) = json_request(addr, "POST", CONFIG_MAPS, "application/json", &config_map("late", 1)).await;
    assert_eq!(code, 201);
    assert_eq!(next_event(&mut first).await, Some(("ADDED".into(), "late".into())), "the first watch still runs");
    drop(third);
}

/// Runs a cluster on a runtime of one thread of its own, as the host's runtime is when every
/// worker is taken: what a write computes must not run there, or every other request waits.
struct OneThread {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OneThread {
    fn start() -> OneThread {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let config = ClusterConfig { insecure_http: true, ..ClusterConfig::default() };
                let cluster = Cluster::start(config).await.expect("cluster starts");
                addr_tx.send(cluster.addr).unwrap();
                let _ = stopped.await;
                cluster.shutdown().await;
            });
        });
        OneThread { addr: addr_rx.recv().unwrap(), stop: Some(stop), thread: Some(thread) }
    }
}

impl Drop for OneThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A small patch of a large custom resource (a list-map of 12,000 items: patched, pruned,
/// defaulted, validated, its managed fields recomputed) takes the server a while; reads sent
/// meanwhile, one after another, are answered before it is. (Its managed fields name every
/// item, as kube-apiserver's do: at 20,000 items the object passed the 1.5 MiB it may be.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writes_work_does_not_hold_the_runtime() {
    let server = OneThread::start();
    let addr = server.addr;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "inventories.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "inventories", "singular": "inventory", "kind": "Inventory", "listKind": "InventoryList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
                "properties": {"spec": {"type": "object", "properties": {"items": {"type": "array",
                    "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string", "pattern": "^[a-z0-9-]+$"},
                        "count": {"type": "integer", "minimum": 0, "default": 1}}}}}}}}}}]}});
    let (code, status) =
        json_request(addr, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", &crd)
            .await;
    assert_eq!(code, 201, "{status}");
    let items: Vec<Value> = (0..12_000).map(|i| json!({"name": format!("item-{i}"), "count": i})).collect();
    let inventory = json!({"apiVersion": "example.com/v1", "kind": "Inventory", "metadata": {"name": "big"},
        "spec": {"items": items}});
    let path = "/apis/example.com/v1/namespaces/default/inventories";
    let (code, status) = json_request(addr, "POST", path, "application/json", &inventory).await;
    assert_eq!(code, 201, "{status}");
    let patch = json!({"metadata": {"labels": {"patched": "yes"}}});
    let write = tokio::spawn(async move {
        json_request(addr, "PATCH", &format!("{path}/big"), "application/merge-patch+json", &patch).await
    });
    let mut answered_meanwhile = 0;
    while !write.is_finished() {
        let (code, _) = request(addr, "GET", "/api/v1/namespaces/default", "", b"").await;
        assert_eq!(code, 200);
        if !write.is_finished() {
            answered_meanwhile += 1;
        }
    }
    let (code, status) = write.await.unwrap();
    assert_eq!(code, 200, "{status}");
    // A read may slip in before the write's work starts, and one or two be counted as the
    // write's answer travels; no more if the work holds the server's only thread.
    assert!(answered_meanwhile >= 10, "only {answered_meanwhile} reads were answered while the write was served");
}
