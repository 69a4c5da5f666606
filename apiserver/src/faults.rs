//! Fault injection for reliability tests: failed writes (409/429/500), added latency, dropped
//! watch streams. Off by default; the server's own loops (kubelet, garbage collector) are
//! never subject to it, only clients over HTTP.

use std::sync::Mutex;
use std::time::Duration;

use hyper::Method;
use tokio::sync::watch;

use wasmcm_core::ApiError;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultConfig {
    /// Probability (0..=1) that a write (POST, PUT, PATCH, DELETE) fails with 409, 429 or 500.
    pub write_error_rate: f64,
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

pub(crate) struct Faults {
    config: Mutex<FaultConfig>,
    drops: watch::Sender<u64>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults { config: Mutex::new(FaultConfig::default()), drops: watch::channel(0).0 }
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
        let rate = self.config().write_error_rate;
        if rate <= 0.0 || !matches!(*method, Method::POST | Method::PUT | Method::PATCH | Method::DELETE) {
            return None;
        }
        if random_unit() >= rate {
            return None;
        }
        Some(match (random_unit() * 3.0) as u8 {
            0 => ApiError::new(
                409,
                "Conflict",
                "injected fault: the object has been modified; please apply your changes to the latest version and try again",
            ),
            1 => ApiError::new(429, "TooManyRequests", "injected fault: too many requests, please try again later"),
            _ => ApiError::internal("injected fault: internal error"),
        })
    }

    pub(crate) fn latency(&self) -> Option<Duration> {
        Some(self.config().latency).filter(|d| !d.is_zero())
    }

    /// Changes whenever open watches must be dropped.
    pub(crate) fn watch_drop_signal(&self) -> watch::Receiver<u64> {
        self.drops.subscribe()
    }

    pub(crate) fn drop_watches(&self) {
        self.drops.send_modify(|n| *n += 1);
    }
}
