//! What a connection may hold the server for: the figures `listener` enforces (its module
//! documentation says why each is what it is) and `ClusterConfig::connections` sets.

use std::time::Duration;

/// The limits of the server's connections (`listener`'s documentation gives the defaults' reasons).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once.
    pub max: usize,
    /// From TCP accept to a finished TLS handshake.
    pub tls_handshake: Duration,
    /// From the connection's start (after TLS) to its first request read whole.
    pub first_request: Duration,
    /// With no request in progress.
    pub idle: Duration,
    /// For a request's body to arrive.
    pub body: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max: 2048,
            tls_handshake: Duration::from_secs(10),
            first_request: Duration::from_secs(32),
            idle: Duration::from_secs(120),
            body: Duration::from_secs(60),
        }
    }
}
