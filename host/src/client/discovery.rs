//! Kinds resolved to the resources that serve them, through the API's discovery: the informers,
//! the writers and `plugins rbac` ask the same cache.
//!
//! A kind found is kept for the life of the process. A kind the cluster does not serve (its
//! group-version unknown, or without that kind) is remembered as such for [`MISS_TTL`], so a
//! plugin that declares writes of a kind nobody serves costs one discovery request per TTL, not
//! one per intent (client-go's memory-cached discovery instead asks again on every miss). Other
//! failures (the server unreachable, a 5xx) are not remembered. A CRD installed meanwhile is
//! seen by the writers once the miss expires, or at once when an informer of its kind finds it
//! first: informers ask past a remembered miss ([`Discovery::resolve_fresh`]), on their own
//! backoff of at most 30 s, the TTL's length.
//!
//! Concurrent resolutions of one kind share one request. A plugin's writer makes every request
//! it causes wait for a token of its own client rate limit ([`Discovery::resolve_within`]);
//! the token is taken before the kind's request is shared, so that one plugin's exhausted
//! budget never holds up another's resolution.
//!
//! It owns the cache and the discovery requests, nothing else.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{ApiResource, GroupVersionKind};
use tokio::time::Instant;
use wasmcm_core::Kind;

use crate::client::rate::TokenBucket;

/// How long a kind found unserved is taken to stay so before discovery is asked again.
pub(crate) const MISS_TTL: Duration = Duration::from_secs(30);

/// A resource, whether its objects live in namespaces, and its subresources (`status`,
/// `scale`, ...).
#[derive(Clone, Debug)]
pub struct Resource {
    pub api: ApiResource,
    pub namespaced: bool,
    pub subresources: Vec<String>,
}

#[derive(Default)]
struct Known {
    found: BTreeMap<Kind, Resource>,
    /// Kinds not served: when that was learnt, the number of the request that learnt it, and
    /// the answer.
    missed: BTreeMap<Kind, (Instant, u64, String)>,
    /// Requests sent so far.
    asked: u64,
    /// One lock per kind, held by whoever asks the server about it.
    asking: BTreeMap<Kind, Arc<tokio::sync::Mutex<()>>>,
}

#[derive(Clone)]
pub struct Discovery {
    client: kube::Client,
    known: Arc<Mutex<Known>>,
}

impl Discovery {
    pub fn new(client: kube::Client) -> Self {
        Discovery { client, known: Arc::default() }
    }

    /// The resource serving `kind`, or why the cluster serves none.
    pub async fn resolve(&self, kind: &Kind) -> Result<Resource, String> {
        self.lookup(kind, true, || async {}).await
    }

    /// As [`Discovery::resolve`], any request it sends first waiting for a token of `bucket`.
    pub(crate) async fn resolve_within(&self, kind: &Kind, bucket: &TokenBucket) -> Result<Resource, String> {
        self.lookup(kind, true, || bucket.wait()).await
    }

    /// As [`Discovery::resolve`], but asking the server again about a kind remembered as not
    /// served (an informer waiting for its CRD, on its own backoff).
    pub(crate) async fn resolve_fresh(&self, kind: &Kind) -> Result<Resource, String> {
        self.lookup(kind, false, || async {}).await
    }

    /// Whether the cluster lately answered that it does not serve `kind` (rather than not
    /// answering at all).
    pub(crate) fn unserved(&self, kind: &Kind) -> bool {
        self.known().missed.get(kind).is_some_and(|(at, _, _)| at.elapsed() < MISS_TTL)
    }

    /// Whether `kind` lives in namespaces, if it has been resolved.
    pub(crate) fn known_namespaced(&self, kind: &Kind) -> Option<bool> {
        self.known().found.get(kind).map(|r| r.namespaced)
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The answer in the cache: a resource found, or a miss younger than the TTL (and, unless
    /// `honour_miss`, learnt by a request sent after the `since`th).
    fn cached(&self, kind: &Kind, honour_miss: bool, since: u64) -> Option<Result<Resource, String>> {
        let known = self.known();
        if let Some(r) = known.found.get(kind) {
            return Some(Ok(r.clone()));
        }
        let (at, request, why) = known.missed.get(kind)?;
        let fresh = at.elapsed() < MISS_TTL && (honour_miss || *request > since);
        fresh.then(|| Err(why.clone()))
    }

    async fn lookup<F: Future<Output = ()>>(
        &self,
        kind: &Kind,
        honour_miss: bool,
        charge: impl FnOnce() -> F,
    ) -> Result<Resource, String> {
        let since = self.known().asked;
        if let Some(answer) = self.cached(kind, honour_miss, since) {
            return answer;
        }
        charge().await;
        let lock = self.known().asking.entry(kind.clone()).or_default().clone();
        let _asking = lock.lock().await;
        // Whoever held the lock before may have just asked.
        if let Some(answer) = self.cached(kind, honour_miss, since) {
            return answer;
        }
        let (group, version) = kind.api_version.split_once('/').unwrap_or(("", kind.api_version.as_str()));
        let gvk = GroupVersionKind::gvk(group, version, &kind.kind);
        let request = {
            let mut known = self.known();
            known.asked += 1;
            known.asked
        };
        match kube::discovery::pinned_kind(&self.client, &gvk).await {
            Ok((api, caps)) => {
                let resource = Resource {
                    api,
                    namespaced: caps.scope == kube::discovery::Scope::Namespaced,
                    subresources: caps.subresources.into_iter().map(|(sub, _)| sub.plural).collect(),
                };
                let mut known = self.known();
                known.missed.remove(kind);
                known.found.insert(kind.clone(), resource.clone());
                Ok(resource)
            }
            Err(e) => {
                let unserved = not_served(&e);
                let why = if unserved {
                    format!("kind {kind} is not served by the cluster: {e}")
                } else {
                    format!("cannot look up kind {kind}: {}", super::reach::describe(&e))
                };
                if unserved {
                    let mut known = self.known();
                    known.missed.retain(|_, (at, _, _)| at.elapsed() < MISS_TTL);
                    known.missed.insert(kind.clone(), (Instant::now(), request, why.clone()));
                }
                Err(why)
            }
        }
    }
}

/// Whether discovery answered that the kind is not served (rather than not answering).
fn not_served(e: &kube::Error) -> bool {
    match e {
        kube::Error::Discovery(_) => true,
        kube::Error::Api(status) => status.code == 404,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A client whose server serves only `v1` with ConfigMaps, and counts the requests.
    fn counting_client() -> (kube::Client, Arc<AtomicUsize>) {
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
            counted.fetch_add(1, Ordering::SeqCst);
            let path = request.uri().path().to_string();
            async move {
                let (code, body) = if path == "/api/v1" {
                    let list = serde_json::json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                        {"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap",
                         "verbs": ["get", "list"]}]});
                    (200, list.to_string())
                } else {
                    let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                        "reason": "NotFound", "code": 404, "message": "the server could not find the requested resource"});
                    (404, status.to_string())
                };
                let response = http::Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(kube::client::Body::from(body.into_bytes()));
                response.map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
            }
        });
        (kube::Client::new(service, "default"), requests)
    }

    #[tokio::test(start_paused = true)]
    async fn a_miss_is_remembered_for_its_ttl_and_a_find_for_good() {
        let (client, requests) = counting_client();
        let discovery = Discovery::new(client);
        let widget = Kind::new("example.com/v1", "Widget");
        for _ in 0..100 {
            let why = discovery.resolve(&widget).await.unwrap_err();
            assert!(why.starts_with("kind example.com/v1/Widget is not served by the cluster"), "{why}");
        }
        assert_eq!(requests.load(Ordering::SeqCst), 1, "one request for 100 misses");
        // An informer asks past the miss (a CRD may have come); its answer is shared.
        discovery.resolve_fresh(&widget).await.unwrap_err();
        assert_eq!(requests.load(Ordering::SeqCst), 2);
        tokio::time::advance(MISS_TTL).await;
        discovery.resolve(&widget).await.unwrap_err();
        assert_eq!(requests.load(Ordering::SeqCst), 3, "asked again once the miss expired");

        let cm = Kind::new("v1", "ConfigMap");
        for _ in 0..10 {
            assert!(discovery.resolve(&cm).await.unwrap().namespaced);
        }
        tokio::time::advance(MISS_TTL * 10).await;
        discovery.resolve(&cm).await.unwrap();
        assert_eq!(requests.load(Ordering::SeqCst), 4, "a kind found is kept");
        // A kind missing from a served group-version is a miss too.
        let other = Kind::new("v1", "Nothing");
        discovery.resolve(&other).await.unwrap_err();
        discovery.resolve(&other).await.unwrap_err();
        assert_eq!(requests.load(Ordering::SeqCst), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_misses_share_a_request() {
        let (client, requests) = counting_client();
        let discovery = Discovery::new(client);
        let widget = Kind::new("example.com/v1", "Widget");
        let all = futures_util::future::join_all((0..50).map(|_| discovery.resolve(&widget))).await;
        assert!(all.iter().all(Result::is_err));
        assert_eq!(requests.load(Ordering::SeqCst), 1);
    }

    /// Each request a writer's resolution causes takes a token of the plugin's bucket: with
    /// the bucket spent, the next unknown kind waits for the next token before it is asked.
    #[tokio::test(start_paused = true)]
    async fn requests_wait_for_the_callers_bucket() {
        let (client, requests) = counting_client();
        let discovery = Discovery::new(client);
        let bucket = TokenBucket::new(1.0, 1);
        let kinds: Vec<Kind> = (0..3).map(|i| Kind::new("example.com/v1", &format!("Kind{i}"))).collect();
        let started = Instant::now();
        for kind in &kinds {
            discovery.resolve_within(kind, &bucket).await.unwrap_err();
        }
        assert_eq!(requests.load(Ordering::SeqCst), 3);
        assert_eq!(started.elapsed(), Duration::from_secs(2), "the 2nd and 3rd waited a token each");
        // Remembered misses cost no request, and so no token.
        let again = Instant::now();
        for kind in &kinds {
            discovery.resolve_within(kind, &bucket).await.unwrap_err();
        }
        assert_eq!((requests.load(Ordering::SeqCst), again.elapsed()), (3, Duration::ZERO));
    }
}
