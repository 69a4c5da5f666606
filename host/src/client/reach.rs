//! Whether the API server can be reached with the host's credentials, and what a failed request
//! means in a sentence: the probe behind `/readyz`'s `apiserver` check and the words the
//! informers and discovery use for a request that got no answer.
//!
//! It owns the probe (a GET of `/version` every [`PROBE_EVERY`]) and [`describe`]; it does
//! not retry or back off anything (each caller does, in its own loop), and it never makes the
//! host exit: an API server that comes back is served again without a restart.

use std::time::Duration;

use tokio::sync::watch;

/// How often the API server is probed, and how long one probe may take.
const PROBE_EVERY: Duration = Duration::from_secs(10);
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the last probe found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Reach {
    /// No probe has finished yet.
    #[default]
    Unknown,
    Reached,
    /// Why the API server could not be reached, in a sentence.
    Unreachable(String),
}

/// Probes the API server through `client` for as long as `reach` has a receiver, and logs each
/// change: a WARN when it stops answering, an INFO when it answers again.
pub async fn probe_api_server(client: kube::Client, reach: watch::Sender<Reach>) {
    loop {
        let now = match tokio::time::timeout(PROBE_TIMEOUT, client.apiserver_version()).await {
            Ok(Ok(_)) => Reach::Reached,
            Ok(Err(e)) => Reach::Unreachable(describe(&e)),
            Err(_) => Reach::Unreachable(format!("the API server did not answer within {PROBE_TIMEOUT:?}")),
        };
        let before = reach.borrow().clone();
        if now != before {
            match (&before, &now) {
                (_, Reach::Unreachable(why)) => tracing::warn!("{why}; /readyz reports not ready until it answers"),
                (Reach::Unreachable(_), Reach::Reached) => tracing::info!("the API server answers again"),
                _ => {}
            }
            reach.send_replace(now);
        }
        tokio::select! {
            () = tokio::time::sleep(PROBE_EVERY) => {}
            () = reach.closed() => return,
        }
    }
}

/// A failed request in a sentence that names its cause: the credentials refused (401), a
/// permission missing (403), another status with its message, or why no answer came
/// (connection refused, a TLS failure, a timeout) from the error's innermost causes.
pub(crate) fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if s.code == 401 => {
            format!("the API server refused the host's credentials (401 Unauthorized): {}", s.message)
        }
        kube::Error::Api(s) if s.code == 403 => format!("forbidden (403): {}", s.message),
        kube::Error::Api(s) => format!("the API server answered {} {}: {}", s.code, s.reason, s.message),
        other => {
            let mut causes: Vec<String> = Vec::new();
            let mut next: Option<&dyn std::error::Error> = Some(other);
            while let Some(e) = next {
                let text = e.to_string();
                // Wrappers often repeat their source's words; say each once.
                if !causes.last().is_some_and(|last| last.contains(&text)) {
                    causes.push(text);
                }
                next = e.source();
            }
            // The innermost causes name it ("tcp connect error: Connection refused"); the outer
            // ones are the client's wrappers ("ServiceError: client error (Connect)").
            let named = causes.len().saturating_sub(2);
            format!("cannot reach the API server: {}", causes[named..].join(": "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_closed_port_is_said_to_refuse_connections() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        let config = kube::Config::new(url.parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let e = client.apiserver_version().await.unwrap_err();
        let said = describe(&e);
        assert!(said.starts_with("cannot reach the API server: "), "{said}");
        assert!(said.contains("Connection refused"), "{said}");
    }
}
