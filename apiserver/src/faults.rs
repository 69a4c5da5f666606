//! Fault injection for reliability tests: failed writes (409/429/500), added latency, dropped
//! watch streams, a stalled server. Off by default; the server's own loops (kubelet, garbage
//! collector) are never subject to it, only clients over HTTP. What it injected is counted, so
//! a soak can say what it went through.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hyper::Method;
use tokio::sync::watch;
use tokio::time::Instant;

use wasmcm_core::ApiError;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultConfig {
    /// Probability (0..=1) that a write (POST, PUT, PATCH, DELETE) fails instead of being served.
    pub write_error_rate: f64,
    /// The codes a failed write gets, one drawn at random for each: among 409, 429 and 500
    /// [default: all three].
    pub write_error_codes: Vec<u16>,
    /// Added to every request.
    pub latency: Duration,
    /// Close every open watch this often.
    pub watch_drop_interval: Option<Duration>,
    /// Forget the watch history this often, so resuming watchers get 410 and must re-list.
    pub compact_interval: Option<Duration>,
    /// Hold back every watch event this long (a lagging watch cache): clients act on stale
    /// caches, which is what expectations exist for.
    pub watch_delay: Duration,
}

/// What was injected since the server started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Writes failed, by code (409, 429, 500).
    pub write_errors: [(u16, u64); 3],
    /// Requests delayed by `latency`.
    pub delayed: u64,
    /// Times every watch was dropped.
    pub watch_drops: u64,
    /// Times the watch history was forgotten.
    pub compactions: u64,
    /// Stalls, and the requests they answered 504 without serving.
    pub stalls: u64,
    pub stalled_requests: u64,
}

const CODES: [u16; 3] = [409, 429, 500];

pub(crate) struct Faults {
    config: Mutex<FaultConfig>,
    drops: watch::Sender<u64>,
    /// Until when nothing is served.
    stalled_until: watch::Sender<Option<Instant>>,
    write_errors: [AtomicU64; 3],
    delayed: AtomicU64,
    compactions: AtomicU64,
    stalls: AtomicU64,
    stalled_requests: AtomicU64,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            config: Mutex::new(FaultConfig::default()),
            drops: watch::channel(0).0,
            stalled_until: watch::channel(None).0,
            write_errors: Default::default(),
            delayed: AtomicU64::new(0),
            compactions: AtomicU64::new(0),
            stalls: AtomicU64::new(0),
            stalled_requests: AtomicU64::new(0),
        }
    }
}

fn random_unit() -> f64 {
    let mut b = [0u8; 4];
    let _ = getrandom::fill(&mut b);
    f64::from(u32::from_le_bytes(b)) / f64::from(u32::MAX)
}

impl Faults {
    pub(crate) fn config(&self) -> FaultConfig {
        self.config.lock().map(|c| c.clone()).unwrap_or_default()
    }

    pub(crate) fn set(&self, config: FaultConfig) {
        if let Ok(mut c) = self.config.lock() {
            *c = config;
        }
    }

    /// A failure to answer instead of serving the request, if one is due.
    pub(crate) fn on_request(&self, method: &Method) -> Option<ApiError> {
        let config = self.config();
        if config.write_error_rate <= 0.0
            || !matches!(*method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE)
        {
            return None;
        }
        if random_unit() >= config.write_error_rate {
            return None;
        }
        let codes: Vec<u16> = CODES.into_iter().filter(|c| config.write_error_codes.contains(c)).collect();
        let codes = if codes.is_empty() { CODES.to_vec() } else { codes };
        let code = codes[((random_unit() * codes.len() as f64) as usize).min(codes.len() - 1)];
        if let Some(i) = CODES.iter().position(|c| *c == code) {
            self.write_errors[i].fetch_add(1, Ordering::Relaxed);
        }
        Some(match code {
            409 => ApiError::new(
                409,
                "Conflict",
                "injected fault: the object has been modified; please apply your changes to the latest version and try again",
            ),
            429 => ApiError::new(429, "TooManyRequests", "injected fault: too many requests, please try again later"),
            _ => ApiError::internal("injected fault: internal error"),
        })
    }

    pub(crate) fn latency(&self) -> Option<Duration> {
        let latency = Some(self.config().latency).filter(|d| !d.is_zero());
        if latency.is_some() {
            self.delayed.fetch_add(1, Ordering::Relaxed);
        }
        latency
    }

    /// Changes whenever open watches must be dropped.
    pub(crate) fn watch_drop_signal(&self) -> watch::Receiver<u64> {
        self.drops.subscribe()
    }

    pub(crate) fn drop_watches(&self) {
        self.drops.send_modify(|n| *n += 1);
    }

    pub(crate) fn compacted(&self) {
        self.compactions.fetch_add(1, Ordering::Relaxed);
    }

    /// Serves nothing for `duration` from now: see [`Faults::stalled`].
    pub(crate) fn stall(&self, duration: Duration) {
        self.stalls.fetch_add(1, Ordering::Relaxed);
        self.stalled_until.send_replace(Some(Instant::now() + duration));
        self.drop_watches();
    }

    /// While the server is stalled, a request waits for the stall to end and is then answered
    /// 504 without being served, as kube-apiserver's timeout filter answers a request its
    /// storage did not complete (that one may still be applied later; this one never is, so a
    /// test knows what happened). `None` when not stalled.
    pub(crate) async fn stalled(&self) -> Option<ApiError> {
        let until = (*self.stalled_until.borrow()).filter(|u| *u > Instant::now())?;
        self.stalled_requests.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep_until(until).await;
        Some(ApiError::new(
            504,
            "Timeout",
            "injected fault: the server stalled: the request did not complete within the allotted timeout",
        ))
    }

    pub(crate) fn counts(&self) -> FaultCounts {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        FaultCounts {
            write_errors: [0, 1, 2].map(|i| (CODES[i], n(&self.write_errors[i]))),
            delayed: n(&self.delayed),
            watch_drops: *self.drops.borrow(),
            compactions: n(&self.compactions),
            stalls: n(&self.stalls),
            stalled_requests: n(&self.stalled_requests),
        }
    }
}
