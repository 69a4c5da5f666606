//! A token bucket with the semantics of golang.org/x/time/rate's `Reserve`, which both of
//! client-go's limiters here rely on: the workqueue's overall retry limit (10 qps, burst 100)
//! and the client's (`--kube-api-qps`, `--kube-api-burst`). A reservation never fails: it takes
//! a token now, or one not yet earned (the balance goes negative), and says how long to wait
//! for it. The rate-limiting crates refuse a request that does not conform instead
//! (governor's GCRA, ratelimit's `try_wait`), which would lose client-go's queue-in-order
//! pacing, so it is written here once.

use std::sync::Mutex;

use tokio::time::{Duration, Instant};

pub(crate) struct TokenBucket {
    qps: f64,
    burst: u32,
    /// (tokens, when they were counted).
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A full bucket of `burst` tokens, refilled at `qps`.
    pub(crate) fn new(qps: f64, burst: u32) -> Self {
        TokenBucket { qps, burst, state: Mutex::new((f64::from(burst), Instant::now())) }
    }

    /// Takes a token; returns how long to wait before using it.
    pub(crate) fn reserve(&self) -> Duration {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (tokens, last) = *state;
        let tokens = (tokens + now.duration_since(last).as_secs_f64() * self.qps).min(f64::from(self.burst)) - 1.0;
        *state = (tokens, now);
        if tokens >= 0.0 || self.qps <= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-tokens / self.qps) }
    }

    /// Takes a token if one is there (client-go's passive limiter, `TryAccept`).
    pub(crate) fn try_accept(&self) -> bool {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (tokens, last) = *state;
        let tokens = (tokens + now.duration_since(last).as_secs_f64() * self.qps).min(f64::from(self.burst));
        let accepted = tokens >= 1.0;
        *state = (if accepted { tokens - 1.0 } else { tokens }, now);
        accepted
    }

    /// Waits for a token.
    pub(crate) async fn wait(&self) {
        let delay = self.reserve();
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_passes_then_tokens_come_at_the_rate() {
        let bucket = TokenBucket::new(10.0, 3);
        let delays: Vec<Duration> = (0..5).map(|_| bucket.reserve()).collect();
        assert_eq!(delays[..3], [Duration::ZERO; 3]);
        // Reservations queue up: the 4th waits one token's time, the 5th two.
        assert_eq!((delays[3].as_millis(), delays[4].as_millis()), (100, 200));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(bucket.reserve(), Duration::ZERO, "refilled, but never past the burst");
    }
}
