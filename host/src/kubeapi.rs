//! The live API behind the writer: a kube-rs client, kinds resolved to resources through
//! discovery (cached), KCM's client-side rate limit (`--kube-api-qps 20 --kube-api-burst 30`),
//! and Kubernetes errors mapped to [`ApiError`]. It performs exactly the calls the writer asks
//! for; it decides nothing.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams, Preconditions};
use serde_json::{Value, json};
use tokio::time::{Duration, Instant};
use wasmcm_guest::{Event, EventType, Kind, ObjectRef};

use crate::writer::Api as WriterApi;
use wasmcm_core::ApiError;

/// Where the kubelet mounts a pod's ServiceAccount credentials (`token`, `ca.crt`, `namespace`).
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The ServiceAccount credential directory: `$WASMCM_SERVICEACCOUNT_DIR`, else
/// [`SERVICE_ACCOUNT_DIR`].
pub fn service_account_dir() -> std::path::PathBuf {
    std::env::var_os("WASMCM_SERVICEACCOUNT_DIR")
        .filter(|d| !d.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| SERVICE_ACCOUNT_DIR.into())
}

/// The in-cluster client configuration, as `kube::Config::incluster()` builds it but from the
/// credentials in `dir`: the API server at `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`
/// (an IPv6 address bracketed), trusted through `dir/ca.crt`, authenticated by the bearer token
/// in `dir/token`. The token is given to kube as a file, which it re-reads, so a rotated
/// (projected) token is picked up; so is a rotated `ca.crt`.
pub fn in_cluster_config(dir: &std::path::Path) -> anyhow::Result<kube::Config> {
    use anyhow::Context;
    let host = std::env::var("KUBERNETES_SERVICE_HOST").context("KUBERNETES_SERVICE_HOST is not set")?;
    let port = std::env::var("KUBERNETES_SERVICE_PORT").context("KUBERNETES_SERVICE_PORT is not set")?;
    let port: u16 = port.trim().parse().with_context(|| format!("KUBERNETES_SERVICE_PORT {port:?}"))?;
    let url = in_cluster_url(&host, port)?;
    let ca_file = dir.join("ca.crt");
    let ca = std::fs::read_to_string(&ca_file).with_context(|| format!("reading {}", ca_file.display()))?;
    let certs = pem_certificates(&ca).with_context(|| format!("{}: invalid PEM", ca_file.display()))?;
    if certs.is_empty() {
        anyhow::bail!("{}: no PEM certificate", ca_file.display());
    }
    let token_file = dir.join("token");
    // Fail now, clearly, rather than on the first request.
    std::fs::metadata(&token_file).with_context(|| format!("reading {}", token_file.display()))?;
    let mut config = kube::Config::new(url);
    config.root_cert = Some(certs);
    config.root_cert_file = Some(ca_file);
    config.auth_info.token_file = Some(token_file.to_string_lossy().into_owned());
    if let Ok(ns) = std::fs::read_to_string(dir.join("namespace"))
        && !ns.trim().is_empty()
    {
        config.default_namespace = ns.trim().to_string();
    }
    Ok(config)
}

/// `https://host:port`, an IPv6 address bracketed.
fn in_cluster_url(host: &str, port: u16) -> anyhow::Result<hyper::Uri> {
    let host = host.trim();
    let authority = match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(ip)) => format!("[{ip}]:{port}"),
        _ => format!("{host}:{port}"),
    };
    format!("https://{authority}").parse().map_err(|e| anyhow::anyhow!("API server address {authority}: {e}"))
}

/// The DER bytes of every `CERTIFICATE` block of a PEM bundle.
fn pem_certificates(pem: &str) -> Result<Vec<Vec<u8>>, rustls::pki_types::pem::Error> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    CertificateDer::pem_slice_iter(pem.as_bytes()).map(|c| c.map(|c| c.to_vec())).collect()
}

/// Client-side limit on API calls.
#[derive(Clone, Debug)]
pub struct ClientRate {
    pub qps: f64,
    pub burst: u32,
}

impl Default for ClientRate {
    fn default() -> Self {
        ClientRate { qps: 20.0, burst: 30 }
    }
}

struct Bucket {
    tokens: f64,
    last: Instant,
}

pub struct KubeApi {
    client: kube::Client,
    resources: Mutex<HashMap<Kind, (ApiResource, bool)>>,
    rate: ClientRate,
    bucket: Mutex<Bucket>,
    /// Who records the events (`source.component`, `reportingInstance`).
    component: String,
    instance: String,
    /// Writes are refused unless this says the host leads: a host that lost its lease
    /// must never write, even with a reconcile still in flight.
    leading: Option<tokio::sync::watch::Receiver<bool>>,
}

fn api_error(e: kube::Error) -> ApiError {
    match e {
        kube::Error::Api(s) => ApiError::new(s.code, &s.reason, s.message.clone()),
        other => ApiError::new(503, "ServiceUnavailable", format!("the API server could not be reached: {other}")),
    }
}

impl KubeApi {
    pub fn new(client: kube::Client, rate: ClientRate, instance: &str) -> Self {
        let bucket = Bucket { tokens: f64::from(rate.burst), last: Instant::now() };
        KubeApi {
            client,
            resources: Mutex::new(HashMap::new()),
            rate,
            bucket: Mutex::new(bucket),
            component: "wasmcm".into(),
            instance: instance.into(),
            leading: None,
        }
    }

    /// Gates every write on `leading`.
    pub fn gated_by(mut self, leading: tokio::sync::watch::Receiver<bool>) -> Self {
        self.leading = Some(leading);
        self
    }

    fn check_leading(&self) -> Result<(), ApiError> {
        match &self.leading {
            Some(l) if !*l.borrow() => Err(ApiError::new(503, "NotLeader", "this host does not hold the leader lease")),
            _ => Ok(()),
        }
    }

    /// Waits for a token of the client-side rate limit.
    async fn throttle(&self) {
        let wait = {
            let mut b = self.bucket.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            b.tokens =
                (b.tokens + now.duration_since(b.last).as_secs_f64() * self.rate.qps).min(f64::from(self.rate.burst));
            b.last = now;
            b.tokens -= 1.0;
            if b.tokens >= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-b.tokens / self.rate.qps) }
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    async fn api(&self, kind: &Kind, namespace: &str) -> Result<Api<DynamicObject>, ApiError> {
        self.check_leading()?;
        let cached = self.resources.lock().unwrap_or_else(|e| e.into_inner()).get(kind).cloned();
        let (resource, namespaced) = match cached {
            Some(r) => r,
            None => {
                let (group, version) = kind.api_version.split_once('/').unwrap_or(("", kind.api_version.as_str()));
                let gvk = GroupVersionKind::gvk(group, version, &kind.kind);
                let (resource, caps) = kube::discovery::pinned_kind(&self.client, &gvk)
                    .await
                    .map_err(|e| ApiError::new(404, "NotFound", format!("kind {kind} is not served: {e}")))?;
                let namespaced = caps.scope == kube::discovery::Scope::Namespaced;
                self.resources
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(kind.clone(), (resource.clone(), namespaced));
                (resource, namespaced)
            }
        };
        self.throttle().await;
        Ok(if namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &resource)
        } else {
            Api::all_with(self.client.clone(), &resource)
        })
    }

    async fn target(&self, object: &Value) -> Result<(Api<DynamicObject>, DynamicObject), ApiError> {
        let kind = Kind::of_object(object);
        let ns = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
        let api = self.api(&kind, ns).await?;
        let dynamic: DynamicObject =
            serde_json::from_value(object.clone()).map_err(|e| ApiError::bad_request(format!("object: {e}")))?;
        Ok((api, dynamic))
    }
}

fn name_of(o: &DynamicObject) -> String {
    o.metadata.name.clone().unwrap_or_default()
}

fn to_value(o: DynamicObject) -> Result<Value, ApiError> {
    serde_json::to_value(o).map_err(|e| ApiError::internal(e.to_string()))
}

impl WriterApi for KubeApi {
    async fn create(&self, object: Value) -> Result<Value, ApiError> {
        let (api, o) = self.target(&object).await?;
        to_value(api.create(&PostParams::default(), &o).await.map_err(api_error)?)
    }

    async fn update(&self, object: Value) -> Result<Value, ApiError> {
        let (api, o) = self.target(&object).await?;
        to_value(api.replace(&name_of(&o), &PostParams::default(), &o).await.map_err(api_error)?)
    }

    async fn update_status(&self, object: Value) -> Result<Value, ApiError> {
        let (api, o) = self.target(&object).await?;
        to_value(api.replace_status(&name_of(&o), &PostParams::default(), &o).await.map_err(api_error)?)
    }

    fn delete(&self, target: &ObjectRef, uid: Option<&str>) -> impl Future<Output = Result<(), ApiError>> + Send {
        let (target, uid) = (target.clone(), uid.map(String::from));
        async move {
            let api = self.api(&target.kind, &target.namespace).await?;
            let params = DeleteParams {
                preconditions: uid.map(|uid| Preconditions { uid: Some(uid), resource_version: None }),
                ..DeleteParams::default()
            };
            api.delete(&target.name, &params).await.map(drop).map_err(api_error)
        }
    }

    fn record_event(&self, event: &Event, uid: Option<&str>) -> impl Future<Output = Result<(), ApiError>> + Send {
        let event = event.clone();
        let uid = uid.map(String::from);
        async move {
            let now = wasmcm_core::now_rfc3339();
            let r = &event.regarding;
            let mut suffix = [0u8; 8];
            let _ = getrandom::fill(&mut suffix);
            let body = json!({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": format!("{}.{}", r.name, hex::encode(suffix)), "namespace": r.namespace},
                "involvedObject": {"apiVersion": r.kind.api_version, "kind": r.kind.kind, "namespace": r.namespace,
                                   "name": r.name, "uid": uid},
                "reason": event.reason,
                "message": event.message,
                "type": match event.event_type { EventType::Normal => "Normal", EventType::Warning => "Warning" },
                "source": {"component": self.component},
                "reportingComponent": self.component,
                "reportingInstance": self.instance,
                "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            });
            self.create(body).await.map(drop)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_cluster_urls_bracket_ipv6() {
        assert_eq!(in_cluster_url("10.96.0.1", 443).unwrap().to_string(), "https://10.96.0.1:443/");
        assert_eq!(in_cluster_url("fd00::1", 6443).unwrap().to_string(), "https://[fd00::1]:6443/");
        assert_eq!(
            in_cluster_url("kubernetes.default.svc", 443).unwrap().to_string(),
            "https://kubernetes.default.svc:443/"
        );
    }

    #[test]
    fn pem_bundles_give_every_certificate() {
        let pem = "junk\n-----BEGIN CERTIFICATE-----\nAAEC\nAw==\n-----END CERTIFICATE-----\n\
                   -----BEGIN CERTIFICATE-----\nBAU=\n-----END CERTIFICATE-----\n";
        assert_eq!(pem_certificates(pem).unwrap(), vec![vec![0, 1, 2, 3], vec![4, 5]]);
        assert!(pem_certificates("-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n").is_err());
    }
}
