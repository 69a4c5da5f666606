//! The live API behind the writer: one plugin's kube-rs client (its own identity, fenced by the
//! leader's lease: `client::clients`), kinds resolved through the shared [`Discovery`], KCM's
//! client-side rate limit (`--kube-api-qps 20 --kube-api-burst 30`) and a cap on writes in
//! flight, each plugin's own, and Kubernetes errors mapped to [`ApiError`]. The rate limit
//! covers the discovery requests a plugin's writes cause too (a kind not yet resolved, or no
//! longer remembered as unserved), so declaring writes of a kind nobody serves buys a plugin no
//! requests beyond its budget. It performs exactly the calls the writer asks for; it decides
//! nothing.

use std::future::Future;

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy};
use serde_json::{Value, json};
use wasmcm_core::{ApiError, event};
use wasmcm_guest::{Event, EventType, Kind, ObjectRef, PatchType, Propagation};

use crate::client::clients::{Deposed, deposed};
use crate::client::discovery::Discovery;
use crate::client::rate::TokenBucket;
use crate::writes::events::{Correlator, Decision, micro_time};
use crate::writes::writer::WriteApi;

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

/// Writes one plugin may have in flight at once.
const MAX_IN_FLIGHT: usize = 32;

pub struct KubeApi {
    client: kube::Client,
    discovery: Discovery,
    bucket: TokenBucket,
    in_flight: tokio::sync::Semaphore,
    /// Who records the events: `reportingController` (`wasmcm.dev/deployment`) and
    /// `reportingInstance`, and through core/v1 `source.component` (`deployment-controller`,
    /// as KCM names its controllers).
    component: String,
    controller: String,
    instance: String,
    /// Held while an event is correlated and written: one at a time, as client-go's
    /// broadcaster writes them, so a count never patches an Event still being created.
    events: tokio::sync::Mutex<Correlator>,
}

fn api_error(e: kube::Error) -> ApiError {
    match e {
        kube::Error::Api(s) => ApiError::new(s.code, &s.reason, s.message.clone()),
        e if deposed(&e) => ApiError::new(503, "NotLeader", Deposed.to_string()),
        other => ApiError::new(503, "ServiceUnavailable", format!("the API server could not be reached: {other}")),
    }
}

impl KubeApi {
    /// The writes of one plugin through `client` (see `client::clients`), within `rate` and
    /// `MAX_IN_FLIGHT` of its own: as kube-controller-manager gives each controller its own
    /// client and rate limiter, one plugin's flood of writes delays only itself. `plugin` names
    /// who records its events (None: the host itself).
    pub(crate) fn new(
        client: kube::Client,
        discovery: Discovery,
        rate: &ClientRate,
        instance: &str,
        plugin: Option<&str>,
    ) -> Self {
        let (component, controller) = match plugin {
            Some(name) => (format!("{name}-controller"), format!("wasmcm.dev/{name}")),
            None => ("wasmcm".to_owned(), "wasmcm.dev/host".to_owned()),
        };
        KubeApi {
            client,
            discovery,
            bucket: TokenBucket::new(rate.qps, rate.burst),
            in_flight: tokio::sync::Semaphore::new(MAX_IN_FLIGHT),
            component,
            controller,
            instance: instance.into(),
            events: tokio::sync::Mutex::new(Correlator::default()),
        }
    }

    /// The API for `kind`, once this client's budget allows a call; the permit is held for
    /// the call.
    async fn api(
        &self,
        kind: &Kind,
        namespace: &str,
    ) -> Result<(Api<DynamicObject>, tokio::sync::SemaphorePermit<'_>), ApiError> {
        let resource = self.resolve(kind).await?;
        let permit = self.in_flight.acquire().await.map_err(|_| ApiError::internal("the writer is closed"))?;
        self.bucket.wait().await;
        let api = if resource.namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &resource.api)
        } else {
            Api::all_with(self.client.clone(), &resource.api)
        };
        Ok((api, permit))
    }

    /// The resource of `kind`, any discovery request it takes charged to this client's budget.
    async fn resolve(&self, kind: &Kind) -> Result<crate::client::discovery::Resource, ApiError> {
        self.discovery.resolve_within(kind, &self.bucket).await.map_err(|why| ApiError::new(404, "NotFound", why))
    }

    async fn target(
        &self,
        object: &Value,
    ) -> Result<(Api<DynamicObject>, DynamicObject, tokio::sync::SemaphorePermit<'_>), ApiError> {
        let kind = Kind::of_object(object);
        let ns = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
        let dynamic: DynamicObject =
            serde_json::from_value(object.clone()).map_err(|e| ApiError::bad_request(format!("object: {e}")))?;
        let (api, permit) = self.api(&kind, ns).await?;
        Ok((api, dynamic, permit))
    }
}

fn name_of(o: &DynamicObject) -> String {
    o.metadata.name.clone().unwrap_or_default()
}

fn to_value(o: DynamicObject) -> Result<Value, ApiError> {
    serde_json::to_value(o).map_err(|e| ApiError::internal(e.to_string()))
}

impl WriteApi for KubeApi {
    async fn create(&self, object: Value) -> Result<Value, ApiError> {
        let (api, o, _permit) = self.target(&object).await?;
        to_value(api.create(&PostParams::default(), &o).await.map_err(api_error)?)
    }

    async fn update(&self, object: Value) -> Result<Value, ApiError> {
        let (api, o, _permit) = self.target(&object).await?;
        to_value(api.replace(&name_of(&o), &PostParams::default(), &o).await.map_err(api_error)?)
    }

    async fn update_status(&self, object: Value) -> Result<Value, ApiError> {
        let (api, o, _permit) = self.target(&object).await?;
        to_value(api.replace_status(&name_of(&o), &PostParams::default(), &o).await.map_err(api_error)?)
    }

    async fn namespaced(&self, kind: &Kind) -> Result<bool, ApiError> {
        Ok(self.resolve(kind).await?.namespaced)
    }

    fn delete(
        &self,
        target: &ObjectRef,
        uid: Option<&str>,
        propagation: Option<Propagation>,
    ) -> impl Future<Output = Result<(), ApiError>> + Send {
        let (target, uid) = (target.clone(), uid.map(String::from));
        async move {
            let (api, _permit) = self.api(&target.kind, &target.namespace).await?;
            let params = DeleteParams {
                preconditions: uid.map(|uid| Preconditions { uid: Some(uid), resource_version: None }),
                propagation_policy: propagation.map(|p| match p {
                    Propagation::Orphan => PropagationPolicy::Orphan,
                    Propagation::Background => PropagationPolicy::Background,
                    Propagation::Foreground => PropagationPolicy::Foreground,
                }),
                ..DeleteParams::default()
            };
            api.delete(&target.name, &params).await.map(drop).map_err(api_error)
        }
    }

    fn patch(
        &self,
        target: &ObjectRef,
        patch_type: PatchType,
        body: Value,
        status: bool,
    ) -> impl Future<Output = Result<Value, ApiError>> + Send {
        let target = target.clone();
        async move {
            let patch = match patch_type {
                PatchType::Json => Patch::Json(
                    serde_json::from_value(body).map_err(|e| ApiError::bad_request(format!("JSON patch: {e}")))?,
                ),
                PatchType::Merge => Patch::Merge(body),
                PatchType::Strategic => Patch::Strategic(body),
            };
            let (api, _permit) = self.api(&target.kind, &target.namespace).await?;
            let params = PatchParams::default();
            let patched = match status {
                true => api.patch_status(&target.name, &params, &patch).await,
                false => api.patch(&target.name, &params, &patch).await,
            };
            to_value(patched.map_err(api_error)?)
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
                "reportingComponent": self.controller,
                "reportingInstance": self.instance,
                "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            });
            let mut correlator = self.events.lock().await;
            let decision = correlator.correlate(body);
            // events.k8s.io/v1 where the cluster serves it, as client-go's events adapter
            // chooses; core/v1 on a cluster older than that.
            let modern = Kind::new(event::EVENTS, "Event");
            let (kind, decision) = match self.resolve(&modern).await {
                Ok(_) => (modern, decision.events_v1(&micro_time(jiff::Timestamp::now()))),
                Err(_) => (Kind::new(event::CORE, "Event"), decision),
            };
            match decision {
                Decision::Skip => {
                    tracing::debug!(reason = %event.reason, "event dropped: too many about {}/{}", r.namespace, r.name);
                }
                Decision::Create(event) => {
                    self.create(event).await?;
                }
                Decision::Patch { namespace, name, patch, event } => {
                    let (api, _permit) = self.api(&kind, &namespace).await?;
                    match api.patch(&name, &PatchParams::default(), &Patch::Strategic(patch)).await {
                        Ok(_) => {}
                        // Deleted meanwhile (a TTL, a user): recorded anew under the same name.
                        Err(kube::Error::Api(s)) if s.code == 404 => {
                            self.create(event).await?;
                        }
                        Err(e) => return Err(api_error(e)),
                    }
                }
            }
            Ok(())
        }
    }
}
