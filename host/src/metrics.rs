//! Observability: the Prometheus metrics of the host (client-go's workqueue metric names,
//! reconciles by outcome and duration per plugin and version, leader status, informer object
//! counts) and the HTTP endpoint serving them with `/healthz` and `/readyz`. It records what
//! others report and reads nothing from the cluster.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tokio::sync::watch;

pub type Labels = Vec<(String, String)>;
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 1 ms … ~16 s, as client-go's workqueue buckets span.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

pub struct Metrics {
    registry: Registry,
    pub queue_depth: Family<Labels, Gauge>,
    pub queue_adds: Family<Labels, Counter>,
    pub queue_duration: HistogramFamily,
    pub work_duration: HistogramFamily,
    pub queue_retries: Family<Labels, Counter>,
    pub unfinished_work: Family<Labels, Gauge<f64, AtomicU64>>,
    pub longest_running: Family<Labels, Gauge<f64, AtomicU64>>,
    pub reconciles: Family<Labels, Counter>,
    pub reconcile_duration: HistogramFamily,
    pub intents_refused: Family<Labels, Counter>,
    pub leader: Gauge,
    pub informer_objects: Family<Labels, Gauge>,
    /// Gauges computed when scraped (in-flight work ages, informer sizes).
    refreshers: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let m = Metrics {
            queue_depth: Family::default(),
            queue_adds: Family::default(),
            queue_duration: Family::new_with_constructor(latency_histogram),
            work_duration: Family::new_with_constructor(latency_histogram),
            queue_retries: Family::default(),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
            reconciles: Family::default(),
            reconcile_duration: Family::new_with_constructor(latency_histogram),
            intents_refused: Family::default(),
            leader: Gauge::default(),
            informer_objects: Family::default(),
            refreshers: Mutex::new(Vec::new()),
            registry: Registry::default(),
        };
        registry.register("workqueue_depth", "Current depth of the work queue", m.queue_depth.clone());
        registry.register("workqueue_adds", "Total number of adds handled by the work queue", m.queue_adds.clone());
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in the work queue before being requested",
            m.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from the work queue takes",
            m.work_duration.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by the work queue",
            m.queue_retries.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
            m.unfinished_work.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds the longest running processor for the work queue has been running",
            m.longest_running.clone(),
        );
        registry.register("wasmcm_reconciles", "Reconciles by plugin, version and outcome", m.reconciles.clone());
        registry.register(
            "wasmcm_reconcile_duration_seconds",
            "Duration of a reconcile (plugin call and writes) by plugin and version",
            m.reconcile_duration.clone(),
        );
        registry.register(
            "wasmcm_intents_refused",
            "Intents refused by the writer (undeclared kind, other namespace, malformed), by plugin",
            m.intents_refused.clone(),
        );
        registry.register("wasmcm_leader", "1 while this host holds the leader lease", m.leader.clone());
        registry.register("wasmcm_informer_objects", "Objects in each informer's cache", m.informer_objects.clone());
        Metrics { registry, ..m }
    }
}

impl Metrics {
    pub fn on_scrape(&self, refresh: impl Fn() + Send + Sync + 'static) {
        if let Ok(mut r) = self.refreshers.lock() {
            r.push(Box::new(refresh));
        }
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        if let Ok(refreshers) = self.refreshers.lock() {
            for r in refreshers.iter() {
                r();
            }
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            return String::new();
        }
        out
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` (ready once every plugin's caches synced).
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    ready: watch::Receiver<bool>,
) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let (metrics, ready) = (metrics.clone(), ready.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let (metrics, ready) = (metrics.clone(), ready.clone());
                    async move {
                        let (code, content_type, body) = match req.uri().path() {
                            "/metrics" => {
                                (StatusCode::OK, "text/plain; version=0.0.4; charset=utf-8", metrics.encode())
                            }
                            "/healthz" | "/livez" => (StatusCode::OK, "text/plain", "ok".to_string()),
                            "/readyz" if *ready.borrow() => (StatusCode::OK, "text/plain", "ok".to_string()),
                            "/readyz" => {
                                (StatusCode::SERVICE_UNAVAILABLE, "text/plain", "caches not synced".to_string())
                            }
                            _ => (StatusCode::NOT_FOUND, "text/plain", "not found".to_string()),
                        };
                        let mut r = Response::new(Full::new(Bytes::from(body)));
                        *r.status_mut() = code;
                        r.headers_mut()
                            .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
                        Ok::<_, Infallible>(r)
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(bound)
}
