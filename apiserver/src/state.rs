//! The server's shared state: what the HTTP layer and the cluster's own loops (kubelet, garbage
//! collector, disruption, control plane) all read and write — the store, the registry of
//! resource types, issued tokens, faults, the audit, connection limits — and where time and
//! randomness come from.
//!
//! A leaf: it names the types it holds and imports nothing that uses it, so every layer above
//! can take a `&State` without an import circle. Behaviour lives in the modules that use it.

use std::time::Duration;

use wasmcm_core::clock::Clock;

use crate::registry::{hooks, resources};
use crate::storage::store;
use crate::{audit, faults, limits, tokens};

/// Shared by the HTTP layer and the cluster's own loops.
pub(crate) struct State {
    pub store: store::Store,
    pub registry: resources::Registry,
    /// The admin token. `None` only in the explicit plain-HTTP loopback mode.
    pub token: Option<String>,
    /// ServiceAccount tokens issued through TokenRequest.
    pub tokens: tokens::Tokens,
    pub server_address: String,
    pub faults: faults::Faults,
    pub sources: Sources,
    /// Who writes, and who holds the audited Lease meanwhile; `None` records nothing.
    pub audit: Option<audit::Audit>,
    /// `shardSelector` is served (`ClusterConfig::sharded_list_watch`).
    pub sharded_list_watch: bool,
    /// What a connection may hold the server for (`ClusterConfig::connections`).
    pub limits: limits::ConnectionLimits,
    /// Run after every write of a CustomResourceDefinition, once the registry serves what it
    /// now says: the control plane's crdregistration, which keeps an APIService per served
    /// custom group-version (`control_plane::sync_crd_api_services`). Given by whoever assembles
    /// the server, so that the verb layer calls the control plane without depending on it.
    pub crd_registration: fn(&State),
}

/// Where the server gets the time and the randomness of what it makes up (timestamps, uids,
/// generated names, cluster IPs): the system's (with the configured clock, which a test may
/// speed up), or a fixed time and a seeded sequence, so that an offline run is reproducible.
pub(crate) enum Sources {
    System(Clock),
    Fixed { now: jiff::Timestamp, seq: std::sync::atomic::AtomicU64 },
}

impl State {
    pub(crate) fn new(store: store::Store, sources: Sources, crd_registration: fn(&State)) -> Self {
        State {
            store,
            registry: resources::Registry::default(),
            token: None,
            tokens: tokens::Tokens::default(),
            server_address: String::new(),
            faults: faults::Faults::default(),
            sources,
            audit: None,
            sharded_list_watch: true,
            limits: limits::ConnectionLimits::default(),
            crd_registration,
        }
    }

    pub(crate) fn now(&self) -> jiff::Timestamp {
        match &self.sources {
            Sources::System(clock) => clock.now(),
            Sources::Fixed { now, .. } => *now,
        }
    }

    /// How long, in real time, the cluster's clock takes to advance by `span` (a test clock runs
    /// faster than the system's).
    pub(crate) fn real(&self, span: Duration) -> Duration {
        match &self.sources {
            Sources::System(clock) => clock.real(span),
            Sources::Fixed { .. } => span,
        }
    }

    /// Now in whole seconds, RFC 3339, as objects are stamped.
    pub(crate) fn now_rfc3339(&self) -> String {
        let now = self.now();
        jiff::Timestamp::from_second(now.as_second()).unwrap_or(now).to_string()
    }

    /// Random bytes, or the next ones of the seeded sequence (splitmix64).
    pub(crate) fn fill(&self, buf: &mut [u8]) {
        match &self.sources {
            Sources::System(_) => {
                let _ = getrandom::fill(buf);
            }
            Sources::Fixed { seq, .. } => {
                for chunk in buf.chunks_mut(8) {
                    let n = seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed).wrapping_add(1);
                    let mut z = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    z ^= z >> 31;
                    chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
                }
            }
        }
    }

    pub(crate) fn new_uid(&self) -> String {
        let mut b = [0u8; 16];
        self.fill(&mut b);
        wasmcm_core::names::uid(b)
    }

    /// A generateName suffix.
    pub(crate) fn name_suffix(&self) -> String {
        let mut b = [0u8; 5];
        self.fill(&mut b);
        wasmcm_core::names::suffix(&b)
    }
}

impl hooks::Cluster for State {
    fn store(&self) -> &store::Store {
        &self.store
    }

    fn now_rfc3339(&self) -> String {
        State::now_rfc3339(self)
    }

    fn fill(&self, buf: &mut [u8]) {
        State::fill(self, buf)
    }

    fn serve_crd(&self, crd: &serde_json::Value, present: bool) {
        self.registry.sync_crd(crd, present);
    }

    fn register_crd_groups(&self) {
        (self.crd_registration)(self)
    }
}
