//! The SDK for writing Kubernetes controllers as **wasmcm plugins**: the contract
//! (`wit/reconciler.wit`, [`CONTRACT_VERSION`]) as plain Rust types, the read-only [`Cache`]
//! view a controller reads the cluster through, Kubernetes helpers ([`ownership`], [`pod`],
//! [`json`], [`time`]), and [`export_plugin!`], which turns a [`Controller`] into a
//! WebAssembly component the wasmcm host loads.
//!
//! A plugin is pure controller logic. The host owns everything that talks to the cluster —
//! informer caches, work queues, retries, leader election, the API writes — and calls the
//! plugin with one key at a time: the plugin reads what it needs from the cache and returns the
//! writes it wants, which the host checks against what the plugin declared and performs.
//! Natively (unit tests, benchmarks) the same code runs against a [`MemoryCache`], so a plugin
//! is tested with plain `cargo test`.
//!
//! This page builds a first plugin; the [`guide`] explains the model it runs in — when
//! reconciles happen, what batches, requeues and errors do, what the cache view promises and
//! does not, why a reconcile must be deterministic, and the limits of the sandbox.
//!
//! # A first plugin
//!
//! A plugin implements [`Controller`]: [`describe`](Controller::describe) says what it
//! reconciles and may touch, [`reconcile`](Controller::reconcile) computes, for one object of
//! its primary kind, what should be written. This one keeps, for every `Greeting` (a custom
//! resource `example.com/v1`), a ConfigMap `<name>-greeting` holding the greeting's
//! `spec.message`, and records in the greeting's status which generation it acted on. It is
//! tested at the end against a [`MemoryCache`], as a plugin's unit tests are.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//! use serde_json::{Value, json};
//! use wasmcm_guest::ownership::{new_controller_ref, with_owner_ref};
//! use wasmcm_guest::{
//!     CONTRACT_VERSION, Cache, CacheExt, Controller, Error, Intent, Kind, Outcome, PluginInfo, Request,
//! };
//!
//! pub struct Greeter;
//!
//! fn greeting() -> Kind {
//!     Kind::new("example.com/v1", "Greeting")
//! }
//!
//! impl Controller for Greeter {
//!     fn describe() -> PluginInfo {
//!         PluginInfo {
//!             name: "greeter".into(),
//!             version: "0.1.0".into(),
//!             // Keys are Greetings; a change of one, or of a ConfigMap one controls, wakes it.
//!             primary: greeting(),
//!             owns: vec![Kind::of::<ConfigMap>()],
//!             watches: vec![],
//!             // Greeting for its status. The host refuses writes of any other kind.
//!             writes: vec![greeting(), Kind::of::<ConfigMap>()],
//!             contract: CONTRACT_VERSION.into(),
//!         }
//!     }
//!
//!     fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
//!         // Deleted: the API server's garbage collector deletes what it controlled.
//!         let Some(json) = cache.get(&greeting(), &request.namespace, &request.name) else {
//!             return Ok(Outcome::default());
//!         };
//!         let greeting: Value = serde_json::from_str(&json).map_err(|e| Error::retryable(e.to_string()))?;
//!         let meta: ObjectMeta = serde_json::from_value(greeting["metadata"].clone())
//!             .map_err(|e| Error::permanent(format!("metadata: {e}")))?;
//!         // Retrying cannot fix a spec: the next change of the Greeting brings it back.
//!         let Some(message) = greeting.pointer("/spec/message").and_then(Value::as_str) else {
//!             return Err(Error::permanent("spec.message is required"));
//!         };
//!
//!         let mut outcome = Outcome::default();
//!         let uid = meta.uid.as_deref().unwrap_or_default();
//!         let children = cache.list_controlled_as::<ConfigMap>(&request.namespace, uid, false)?;
//!         match children.first() {
//!             None => {
//!                 let child = json!({
//!                     "apiVersion": "v1",
//!                     "kind": "ConfigMap",
//!                     "metadata": {"name": format!("{}-greeting", request.name), "namespace": request.namespace},
//!                     "data": {"message": message},
//!                 });
//!                 let owner = new_controller_ref("example.com/v1", "Greeting", &meta);
//!                 outcome.push_batch(vec![Intent::Create(with_owner_ref(child, &owner)?.to_string())]);
//!             }
//!             Some(child) => {
//!                 let current = child.value.data.as_ref().and_then(|d| d.get("message"));
//!                 if current.map(String::as_str) != Some(message) {
//!                     // Starting from the JSON as read keeps its resourceVersion: if the cache
//!                     // was stale, the update fails with a conflict and is retried.
//!                     let mut updated = child.raw()?;
//!                     updated["data"] = json!({"message": message});
//!                     outcome.push_batch(vec![Intent::Update(updated.to_string())]);
//!                 }
//!             }
//!         }
//!         // A later batch: the status is written only once the ConfigMap write succeeded.
//!         let generation = meta.generation.unwrap_or(0);
//!         if greeting.pointer("/status/observedGeneration").and_then(Value::as_i64) != Some(generation) {
//!             let mut with_status = greeting.clone();
//!             with_status["status"] = json!({"observedGeneration": generation});
//!             outcome.push_batch(vec![Intent::UpdateStatus(with_status.to_string())]);
//!         }
//!         Ok(outcome)
//!     }
//! }
//!
//! // Makes the crate, built for wasm32-unknown-unknown, a component exporting Greeter.
//! wasmcm_guest::export_plugin!(Greeter);
//!
//! // The unit test: a cache holding one Greeting.
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use wasmcm_guest::{Instant, MemoryCache};
//!
//! let hello = json!({
//!     "apiVersion": "example.com/v1", "kind": "Greeting",
//!     "metadata": {"name": "hello", "namespace": "demo", "uid": "u1", "generation": 1},
//!     "spec": {"message": "Hi!"},
//! });
//! let mut cache = MemoryCache::from_objects(&[hello.clone()])?;
//! let request = Request::new("demo", "hello", Instant::parse_rfc3339("2026-11-26T10:00:00Z")?);
//!
//! // First the ConfigMap, controlled by the Greeting; then, in a batch of its own, the status.
//! let outcome = Greeter::reconcile(&request, &cache)?;
//! assert_eq!(outcome.batches.len(), 2);
//! let Intent::Create(created) = &outcome.batches[0][0] else { panic!("not a create: {outcome:?}") };
//! let mut created: Value = serde_json::from_str(created)?;
//! assert_eq!(created["metadata"]["name"], "hello-greeting");
//! assert_eq!(created["data"]["message"], "Hi!");
//! assert_eq!(created["metadata"]["ownerReferences"][0]["uid"], "u1");
//! assert!(matches!(&outcome.batches[1][..], [Intent::UpdateStatus(_)]));
//!
//! // The host performed both writes and its cache shows them: nothing is left to do.
//! created["metadata"]["uid"] = json!("c1");
//! cache.insert(&created)?;
//! let mut observed = hello.clone();
//! observed["status"] = json!({"observedGeneration": 1});
//! cache.insert(&observed)?;
//! assert_eq!(Greeter::reconcile(&request, &cache)?, Outcome::default());
//!
//! // A new message (generation 2): the ConfigMap is updated, then the status.
//! observed["metadata"]["generation"] = json!(2);
//! observed["spec"]["message"] = json!("Hello!");
//! cache.insert(&observed)?;
//! let outcome = Greeter::reconcile(&request, &cache)?;
//! let Intent::Update(updated) = &outcome.batches[0][0] else { panic!("not an update: {outcome:?}") };
//! assert_eq!(serde_json::from_str::<Value>(updated)?["data"]["message"], "Hello!");
//! assert_eq!(outcome.batches.len(), 2);
//!
//! // A Greeting without a message is refused for good; a deleted one needs nothing.
//! cache.insert(&json!({"apiVersion": "example.com/v1", "kind": "Greeting",
//!                      "metadata": {"name": "mute", "namespace": "demo", "uid": "u2"}}))?;
//! let error = Greeter::reconcile(&Request::new("demo", "mute", request.now), &cache).unwrap_err();
//! assert!(!error.retryable && error.message.contains("spec.message"));
//! assert_eq!(Greeter::reconcile(&Request::new("demo", "gone", request.now), &cache)?, Outcome::default());
//! # Ok(())
//! # }
//! ```
//!
//! # Build, test, try
//!
//! A plugin is a library crate of `crate-type = ["cdylib", "rlib"]` (the `cdylib` is the
//! component, the `rlib` lets native tests and tools link it) depending on `wasmcm-guest`,
//! `serde_json` and, for typed reads of built-in kinds, the `k8s-openapi` version this crate
//! depends on (with a Kubernetes version feature, e.g. `latest`). Then:
//!
//! 1. **Build** for `wasm32-unknown-unknown`, linked by `wasm-component-ld` (shipped with the
//!    Rust toolchain) straight into a component that imports nothing but the contract. This
//!    repository's `.cargo/config.toml` does it for every crate under it; a crate elsewhere
//!    needs the same in its own `.cargo/config.toml`:
//!
//!    ```toml
//!    [target.wasm32-unknown-unknown]
//!    linker = "wasm-component-ld"
//!    rustflags = ["-C", "link-arg=-zstack-size=262144"]
//!    ```
//!
//!    (the stack size is the built-ins': a smaller initial memory makes each call cheaper),
//!    with the target installed (`rustup target add wasm32-unknown-unknown`, or `targets` in a
//!    `rust-toolchain.toml`). `cargo build --release --target wasm32-unknown-unknown` (or just
//!    `cargo build --release` with `[build] target = "wasm32-unknown-unknown"` in that file)
//!    writes `target/wasm32-unknown-unknown/release/<crate>.wasm`.
//! 2. **Unit-test** natively with `cargo test`: call [`Controller::reconcile`] with a
//!    [`Request`] and a [`MemoryCache`] holding the objects of the case, and assert on the
//!    [`Outcome`] — as the example above. A [`MemoryCache`] answers reads only: it checks none
//!    of the sandbox's rules (declared kinds, read caps, deadline, memory).
//! 3. **Try** the built component offline with `wasmcm simulate --plugin <file>.wasm --state
//!    <snapshot.yaml> --key <namespace>/<name> [--now <RFC 3339>]`: one reconcile in the real
//!    sandbox against a snapshot (a Kubernetes `List` or multi-document YAML), its writes
//!    applied by the embedded API server's write path (defaulting, validation, status
//!    subresources), the actions, events and resulting state printed as JSON.
//! 4. **Run** it: name the file in a plugin manifest (`wasmcm run --plugins <manifest>`; the
//!    repository's docs/plugins.md describes manifests, pins, scopes, hot swap and shadow rollouts).
//!
//! # Where things are
//!
//! - [`guide`]: the reconcile model, capabilities, batches, requeue, errors and retries, the
//!   cache view, determinism and limits.
//! - The contract's types, at the crate root: [`Controller`], [`PluginInfo`] and [`Watch`],
//!   [`Request`], [`Outcome`] and [`Intent`], [`Error`]; [`log`] for logging through the host.
//! - [`cache`]: the [`Cache`] trait, typed reads ([`CacheExt`]), [`MemoryCache`].
//! - [`ownership`]: controller references and adoption; [`pod`]: pod predicates and pods from
//!   templates; [`json`]: merge patches; [`time`]: [`Instant`].
//! - Custom resources: [`Resource`] makes a plugin's own type of one readable with
//!   [`CacheExt`]; [`finalizer`] and [`conditions`] for the finalizer cycle and status
//!   conditions.
//! - [`Kind`], [`Selector`]: re-exported from `wasmcm-core`, which the host shares.
#![warn(missing_docs)]

// Lets the generated bindings name this crate the same way from inside and from plugins.
extern crate self as wasmcm_guest;

#[cfg(target_arch = "wasm32")]
pub mod arena;
pub mod cache;
#[cfg(target_arch = "wasm32")]
pub mod component;
pub mod conditions;
pub mod finalizer;
#[doc = include_str!("guide.md")]
pub mod guide {}
pub mod json;
pub mod ownership;
pub mod pod;
pub mod resource;
pub mod time;

pub use cache::{Cache, CacheExt, MemoryCache, Object, controller_uid};
pub use k8s_openapi;
pub use resource::Resource;
pub use time::Instant;
/// A kind as the API names it, and as [`PluginInfo`] declares them and [`Cache`] reads take
/// them: [`Kind::of`] for a k8s-openapi type, [`Kind::new`] for any other (a custom resource).
///
/// ```
/// use k8s_openapi::api::apps::v1::Deployment;
/// use wasmcm_guest::Kind;
///
/// assert_eq!(Kind::of::<Deployment>(), Kind::new("apps/v1", "Deployment"));
/// let widget = Kind::new("example.com/v1", "Widget");
/// assert_eq!(widget.group(), "example.com");
/// assert_eq!(widget.to_string(), "example.com/v1/Widget");
/// assert_eq!(Kind::new("v1", "Pod").group(), "");
/// ```
pub use wasmcm_core::Kind;
/// A label selector, as [`Cache::list`] takes it: made from an object's `spec.selector` with
/// [`Selector::from_label_selector`], or from kubectl's `-l` syntax with [`Selector::parse`].
///
/// ```
/// use std::collections::BTreeMap;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
/// use wasmcm_guest::{Operator, Selector};
///
/// let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
///     pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
/// };
/// let spec: LabelSelector = serde_json::from_value(serde_json::json!({
///     "matchLabels": {"app": "web"},
///     "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "edge"]}],
/// }))
/// .unwrap();
/// let selector = Selector::from_label_selector(&spec).unwrap();
/// assert!(selector.matches(&labels(&[("app", "web"), ("tier", "edge")])));
/// assert!(!selector.matches(&labels(&[("app", "web")])));
/// assert_eq!(selector.match_expressions[0].operator, Operator::In);
///
/// // kubectl's syntax; the empty selector matches everything.
/// let parsed = Selector::parse("app=web,tier in (front,edge)").unwrap();
/// assert!(parsed.matches(&labels(&[("app", "web"), ("tier", "front")])));
/// assert!(Selector::everything().matches(&labels(&[])));
/// assert!(Selector::parse("app in (web").is_err());
/// ```
pub use wasmcm_core::Selector;
pub use wasmcm_core::{Operator, Requirement};

/// The contract version these types implement (`wasmcm:reconciler@…` in `wit/reconciler.wit`).
/// A plugin declares it in [`PluginInfo::contract`]; the host loads plugins of this contract and
/// of 0.3.0 (without [`Intent::Patch`] and [`DeleteTarget::propagation`]) and refuses any other.
pub const CONTRACT_VERSION: &str = "0.4.0";

/// One object by kind, namespace and name, as [`DeleteTarget`] and [`Event`] name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    /// The object's kind.
    pub kind: Kind,
    /// Its namespace; empty for a cluster-scoped object (or, in a delete, for the key's).
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// What a plugin is and may do: the answer of [`Controller::describe`]. The host reads it once,
/// when it loads the plugin, and holds the plugin to it: it reads only `primary`, `owns` and
/// `watches` kinds (any other read traps), writes only `writes` kinds (any other write is
/// refused), and is woken by changes of those kinds. A plugin manifest may narrow the kinds
/// read and written (`capabilities`), never widen them. See the [guide](guide#describe-and-capabilities).
///
/// ```
/// use wasmcm_guest::{CONTRACT_VERSION, Changes, Kind, PluginInfo, Watch};
///
/// let info = PluginInfo {
///     name: "deployment".into(),
///     version: "1.2.0".into(),
///     primary: Kind::new("apps/v1", "Deployment"),
///     owns: vec![Kind::new("apps/v1", "ReplicaSet")],
///     // Pods are read, and only their deletions wake the Deployment above them.
///     watches: vec![Watch::new(Kind::new("v1", "Pod"), Changes::DELETED)],
///     writes: vec![Kind::new("apps/v1", "Deployment"), Kind::new("apps/v1", "ReplicaSet")],
///     contract: CONTRACT_VERSION.into(),
/// };
/// assert_eq!(info.watched_kinds().collect::<Vec<_>>(), [&Kind::new("v1", "Pod")]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginInfo {
    /// The plugin's name, a DNS label (`[a-z0-9-]`, at most 63 characters). It names the plugin
    /// where no manifest does (`wasmcm simulate`, `wasmcm plugins inspect`); in a running host
    /// the manifest's `metadata.name` names it.
    pub name: String,
    /// Its version, free text of at most 256 bytes (`env!("CARGO_PKG_VERSION")` serves).
    pub version: String,
    /// The kind it reconciles: every key is `namespace/name` of an object of this kind, and
    /// every change of such an object wakes its key.
    pub primary: Kind,
    /// Kinds whose objects it controls (a controller ownerReference to a primary): every
    /// change of one wakes its controller's key, and an orphan (no controller) wakes every
    /// primary in its namespace whose `spec.selector` matches it, for adoption.
    pub owns: Vec<Kind>,
    /// Other kinds it reads, and which of their changes wake the primary above the object.
    pub watches: Vec<Watch>,
    /// Kinds it may create, update, update the status of, or delete. Events may always be
    /// recorded.
    pub writes: Vec<Kind>,
    /// The contract it was built against: [`CONTRACT_VERSION`].
    pub contract: String,
}

impl PluginInfo {
    /// The kinds of `watches`.
    pub fn watched_kinds(&self) -> impl Iterator<Item = &Kind> {
        self.watches.iter().map(|w| &w.kind)
    }
}

/// A kind read beyond the primary and owned ones, and which of its changes wake the primary
/// above an object of it: its controller, when that is a primary, or its controller's
/// controller, when its controller is of an owned kind (a Pod of a ReplicaSet of a
/// Deployment). Changes of objects with no such primary above them wake nothing.
///
/// ```
/// use wasmcm_guest::{Changes, Kind, Watch};
///
/// let pods = Watch::new(Kind::new("v1", "Pod"), Changes::DELETED);
/// assert_eq!(pods.to_string(), "v1/Pod (wakes on deleted)");
/// assert_eq!(Watch::new(Kind::new("v1", "Secret"), Changes::NONE).to_string(), "v1/Secret (wakes on nothing)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watch {
    /// The kind read.
    pub kind: Kind,
    /// The changes that wake a key; [`Changes::NONE`] makes the kind readable only.
    pub wake_on: Changes,
}

impl Watch {
    /// Watches `kind`, woken by the changes of `wake_on`.
    pub fn new(kind: Kind, wake_on: Changes) -> Self {
        Watch { kind, wake_on }
    }
}

impl std::fmt::Display for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on: Vec<&str> =
            [(self.wake_on.created, "created"), (self.wake_on.updated, "updated"), (self.wake_on.deleted, "deleted")]
                .into_iter()
                .filter_map(|(on, name)| on.then_some(name))
                .collect();
        match on.is_empty() {
            true => write!(f, "{} (wakes on nothing)", self.kind),
            false => write!(f, "{} (wakes on {})", self.kind, on.join(", ")),
        }
    }
}

/// Kinds of change, as the contract's `changes` flags: which changes of a watched kind wake
/// a key ([`Watch::wake_on`]).
///
/// ```
/// use wasmcm_guest::Changes;
///
/// let created_or_deleted = Changes { created: true, deleted: true, ..Changes::NONE };
/// assert!(!created_or_deleted.updated);
/// assert_eq!(Changes::default(), Changes::NONE);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// An object appeared in the cache.
    pub created: bool,
    /// An object in the cache changed (any field, status included).
    pub updated: bool,
    /// An object left the cache (it was deleted, not merely marked for deletion: that is an
    /// update).
    pub deleted: bool,
}

impl Changes {
    /// No change wakes: the kind is read only.
    pub const NONE: Changes = Changes { created: false, updated: false, deleted: false };
    /// Every change wakes.
    pub const ALL: Changes = Changes { created: true, updated: true, deleted: true };
    /// Only deletions wake (KCM's deployment controller and its pods).
    pub const DELETED: Changes = Changes { created: false, updated: false, deleted: true };
}

/// What one reconcile is asked: the key, the time, and what the host knows of the last
/// attempt. See the [guide](guide#the-reconcile-model).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The namespace of the primary object to reconcile (empty for a cluster-scoped kind).
    pub namespace: String,
    /// Its name. The object may no longer exist: a deletion wakes its key too.
    pub name: String,
    /// The host's clock when the reconcile started; a plugin has no other.
    pub now: Instant,
    /// Why the writes of the previous reconcile of this key failed, if they did (an intent
    /// refused, or the API's answer to the first write that failed, e.g. `create v1/Pod
    /// demo/web-x: …`), so the plugin can report it in status. `None` once a reconcile's
    /// writes all succeed.
    pub previous_failure: Option<String>,
    /// The `settings` of the plugin's manifest, a JSON object (`{}` when none).
    pub settings: String,
}

impl Request {
    /// A first attempt at `namespace/name` with no settings, as tests and tools make them.
    ///
    /// ```
    /// use wasmcm_guest::{Instant, Request};
    ///
    /// let request = Request::new("demo", "web", Instant { seconds: 1_800_000_000, nanoseconds: 0 });
    /// assert_eq!((request.previous_failure, request.settings.as_str()), (None, "{}"));
    /// ```
    pub fn new(namespace: &str, name: &str, now: Instant) -> Self {
        Request { namespace: namespace.into(), name: name.into(), now, previous_failure: None, settings: "{}".into() }
    }
}

/// One write a reconcile asks for. Objects are Kubernetes JSON with `apiVersion` and `kind`; a
/// missing `metadata.namespace` is the key's. Every write must be of a kind declared in
/// [`PluginInfo::writes`] and in the key's namespace, or the host refuses it (which fails its
/// batch). See the [guide](guide#intents-and-batches).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Intent {
    /// POST the object; `metadata.generateName` is honoured. The host counts creates of objects
    /// controlled by the primary and holds the key until its cache has seen them; for Pods it
    /// records SuccessfulCreate / FailedCreate events on the primary, as KCM's PodControl does.
    Create(String),
    /// PUT the object, with its `metadata.resourceVersion` as precondition (a stale one fails
    /// with a conflict, which is retried). The status in it is ignored by kinds with a status
    /// subresource: use [`Intent::UpdateStatus`].
    Update(String),
    /// PUT to the status subresource: status changes, and whatever else the kind's status
    /// strategy lets through, never spec.
    UpdateStatus(String),
    /// DELETE an object; already gone counts as done. For Pods the host records
    /// SuccessfulDelete / FailedDelete events on the primary.
    Delete(DeleteTarget),
    /// Record an Event about an object of the key's namespace.
    Event(Event),
    /// PATCH an object: the API server applies the patch to the object as it stands, so
    /// nothing needs reading first and only what the patch names changes (contract 0.4.0).
    Patch(Patch),
}

/// What [`Intent::Patch`] sends: a patch of one object, or of its status subresource. The host
/// refuses a patch that could change the pods a Pod or workload runs when the plugin's scope
/// limits them (an update is checked whole instead), or that touches the host's shard-group
/// labels; a target already gone fails its batch (404).
///
/// ```
/// use serde_json::json;
/// use wasmcm_guest::{Intent, Kind, ObjectRef, Patch, PatchType};
///
/// let pod = ObjectRef { kind: Kind::new("v1", "Pod"), namespace: "demo".into(), name: "web-1".into() };
/// // A label set without reading the pod; only if it is still at resourceVersion 42.
/// let labelled = Patch::merge(pod.clone(), &json!({"metadata": {"labels": {"tier": "web"}}})).with_resource_version("42");
/// assert_eq!((labelled.patch_type, labelled.resource_version.as_deref()), (PatchType::Merge, Some("42")));
/// // A condition added to the status subresource.
/// let status = Patch::strategic(pod.clone(), &json!({"status": {"conditions": [{"type": "Checked", "status": "True"}]}})).to_status();
/// assert!(status.status);
/// // RFC 6902 operations.
/// let ops = Patch::json(pod, &json!([{"op": "remove", "path": "/metadata/annotations/old"}]));
/// let intents = vec![Intent::Patch(labelled), Intent::Patch(status), Intent::Patch(ops)];
/// # let _ = intents;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Patch {
    /// The object; an empty namespace means the key's.
    pub target: ObjectRef,
    /// How the API server applies [`body`](Patch::body).
    pub patch_type: PatchType,
    /// The patch document, JSON: a list of operations for [`PatchType::Json`], an object
    /// otherwise.
    pub body: String,
    /// When given, a precondition: the patch applies only while the object is still at this
    /// resourceVersion (409 Conflict otherwise, retried as any conflict).
    pub resource_version: Option<String>,
    /// Patch the status subresource instead of the object.
    pub status: bool,
}

impl Patch {
    fn new(target: ObjectRef, patch_type: PatchType, body: &serde_json::Value) -> Self {
        Patch { target, patch_type, body: body.to_string(), resource_version: None, status: false }
    }

    /// An RFC 7386 JSON merge patch: objects merge key by key, `null` removes a key, anything
    /// else (lists included) replaces.
    pub fn merge(target: ObjectRef, body: &serde_json::Value) -> Self {
        Self::new(target, PatchType::Merge, body)
    }

    /// A Kubernetes strategic merge patch: as a merge patch, but lists of built-in kinds merge
    /// by their keys (containers by name, …) and `$patch`, `$deleteFromPrimitiveList/<field>`
    /// and `$setElementOrder/<field>` directives apply. Built-in kinds only.
    pub fn strategic(target: ObjectRef, body: &serde_json::Value) -> Self {
        Self::new(target, PatchType::Strategic, body)
    }

    /// An RFC 6902 JSON patch: `body` is the list of operations.
    pub fn json(target: ObjectRef, operations: &serde_json::Value) -> Self {
        Self::new(target, PatchType::Json, operations)
    }

    /// The same patch, applied only while the object is at `resource_version`.
    pub fn with_resource_version(mut self, resource_version: impl Into<String>) -> Self {
        self.resource_version = Some(resource_version.into());
        self
    }

    /// The same patch, of the status subresource.
    pub fn to_status(mut self) -> Self {
        self.status = true;
        self
    }
}

/// How the API server applies a [`Patch`]: the Content-Type it is sent with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 6902 JSON patch (`application/json-patch+json`).
    Json,
    /// RFC 7386 JSON merge patch (`application/merge-patch+json`).
    Merge,
    /// Kubernetes strategic merge patch (`application/strategic-merge-patch+json`).
    Strategic,
}

/// What [`Intent::Delete`] deletes.
///
/// ```
/// use wasmcm_guest::{DeleteTarget, Intent, Kind, ObjectRef, Propagation};
///
/// // Only the pod of this uid: a pod recreated under the same name survives.
/// let pod = ObjectRef { kind: Kind::new("v1", "Pod"), namespace: "demo".into(), name: "web-1".into() };
/// let delete = Intent::Delete(DeleteTarget::new(pod, Some("0c5a…".into())));
/// // A Job and, in the background, its pods (a Job's own default orphans them).
/// let job = ObjectRef { kind: Kind::new("batch/v1", "Job"), namespace: "demo".into(), name: "nightly-29000".into() };
/// let delete_job = Intent::Delete(DeleteTarget { propagation: Some(Propagation::Background), ..DeleteTarget::new(job, None) });
/// # let _ = (delete, delete_job);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteTarget {
    /// The object; an empty namespace means the key's.
    pub target: ObjectRef,
    /// When given, a precondition: only the object of this uid is deleted.
    pub uid: Option<String>,
    /// How its dependents go (`DeleteOptions.propagationPolicy`); `None`: the server's default
    /// for the kind (batch/v1 Jobs and CronJobs orphan theirs). Contract 0.4.0.
    pub propagation: Option<Propagation>,
}

impl DeleteTarget {
    /// A delete of `target` (with `uid` as precondition when given) under the server's default
    /// propagation.
    pub fn new(target: ObjectRef, uid: Option<String>) -> Self {
        DeleteTarget { target, uid, propagation: None }
    }
}

/// `DeleteOptions.propagationPolicy`: what a delete does with the objects whose ownerReferences
/// name the deleted one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Leave them, without the ownerReference.
    Orphan,
    /// Delete the object now, its dependents after (the garbage collector).
    Background,
    /// Delete the dependents first; the object stays, being deleted, until they are gone.
    Foreground,
}

impl Propagation {
    /// As the API names it: `Orphan`, `Background`, `Foreground`.
    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::Orphan => "Orphan",
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
        }
    }
}

/// The type of an [`Event`], as `kubectl describe` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something needs attention.
    Warning,
}

/// An Event for [`Intent::Event`]. Events are recorded after the batches have run, and a
/// failure to record one fails nothing.
///
/// ```
/// use wasmcm_guest::{Event, EventType, Intent, Kind, ObjectRef};
///
/// let event = Intent::Event(Event {
///     regarding: ObjectRef { kind: Kind::new("example.com/v1", "Greeting"), namespace: "demo".into(), name: "hello".into() },
///     event_type: EventType::Warning,
///     reason: "InvalidSpec".into(),
///     message: "spec.message is required".into(),
/// });
/// # let _ = event;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The object the event is about, in the key's namespace.
    pub regarding: ObjectRef,
    /// Normal or Warning.
    pub event_type: EventType,
    /// A short UpperCamelCase reason (`SuccessfulCreate`).
    pub reason: String,
    /// What happened, for people.
    pub message: String,
}

/// What a reconcile returns: writes in batches, and whether to come back without a change.
/// The host runs the writes of a batch concurrently and stops before the next batch after any
/// failure, so later batches may rely on earlier ones having succeeded. See the
/// [guide](guide#intents-and-batches).
///
/// ```
/// use wasmcm_guest::{Intent, Outcome};
///
/// let mut outcome = Outcome::default();
/// outcome.push_batch(vec![Intent::Create(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#.into())]);
/// outcome.push_batch(vec![]); // nothing to do at this step: no batch
/// outcome.push_batch(vec![Intent::UpdateStatus(r#"{"apiVersion":"example.com/v1","kind":"Greeting"}"#.into())]);
/// outcome.requeue_after_ms = Some(30_000);
/// assert_eq!(outcome.batches.len(), 2);
/// assert_eq!(outcome.intents().count(), 2);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The writes, batch by batch: the writes of one batch may run concurrently, and a failure
    /// in a batch stops every later batch.
    pub batches: Vec<Vec<Intent>>,
    /// Reconcile this key again this many milliseconds after [`Request::now`] even if nothing
    /// changes (a deadline to check, a condition to time out): the time the reconcile and its
    /// writes took counts towards it. Honoured once every write succeeded.
    pub requeue_after_ms: Option<u64>,
}

impl Outcome {
    /// Adds a batch, skipping empty ones so the host sees only real steps.
    pub fn push_batch(&mut self, batch: Vec<Intent>) {
        if !batch.is_empty() {
            self.batches.push(batch);
        }
    }

    /// Every intent, batch after batch.
    pub fn intents(&self) -> impl Iterator<Item = &Intent> {
        self.batches.iter().flatten()
    }
}

/// Why a reconcile failed, and whether trying again can help. See the
/// [guide](guide#errors-and-retries).
///
/// ```
/// use wasmcm_guest::Error;
///
/// // Retried with backoff (5 ms doubling to 1000 s) until it succeeds.
/// let later = Error::retryable("the Secret it names is not in the cache yet");
/// assert!(later.retryable);
/// // Not retried until the object (or something that wakes its key) changes.
/// let never = Error::permanent("spec.replicas must not be negative");
/// assert!(!never.retryable);
/// assert_eq!(never.to_string(), "spec.replicas must not be negative");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// What went wrong, for the host's log and the `ReconcileFailed` event (at most 4096 bytes
    /// are kept).
    pub message: String,
    /// Whether retrying the same key later can help.
    pub retryable: bool,
}

impl Error {
    /// A failure that may pass: the host retries the key with backoff, for as long as it fails.
    pub fn retryable(message: impl Into<String>) -> Self {
        Error { message: message.into(), retryable: true }
    }

    /// A failure retrying cannot fix (an invalid spec): the host logs it and leaves the key
    /// until a change wakes it.
    pub fn permanent(message: impl Into<String>) -> Self {
        Error { message: message.into(), retryable: false }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The level of a [`log`] line, as the host's `tracing` levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Step-by-step detail.
    Trace,
    /// What a reconcile decided and why.
    Debug,
    /// Notable, and rare.
    Info,
    /// Something is off, but the reconcile goes on.
    Warn,
    /// Something failed.
    Error,
}

/// A controller: pure logic over a cache view, exported as a plugin by [`export_plugin!`].
/// Both functions are static: a plugin instance lives for exactly one call, so there is no
/// `self` to keep anything in. See the [crate example](crate#a-first-plugin).
pub trait Controller {
    /// What the plugin is and may read and write. Called once when the host loads the plugin;
    /// it must not depend on anything but the build.
    fn describe() -> PluginInfo;

    /// One reconcile of `request`'s key: reads through `cache`, and returns the writes that
    /// bring the cluster towards what the primary object asks for, or an error. Must be a
    /// function of the request and what the cache holds; see the
    /// [guide](guide#determinism).
    fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error>;
}

/// Logs a line through the host, which tags it with the plugin and the key being reconciled
/// (at most 100 lines or 64 KiB per call, 4096 bytes per line; the rest are dropped). Natively
/// it writes warnings and errors to stderr and drops the rest, so tests stay quiet.
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    component::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    if level >= Level::Warn {
        eprintln!("[{level:?}] {message}");
    }
}

/// Exports a [`Controller`] as the plugin's component: the contract's `describe` and
/// `reconcile`, with the host's cache behind the [`Cache`] the controller reads and panics
/// reported through the host's log (the trap then carries the panic message). Call it once, at
/// the top level of the plugin crate:
///
/// ```
/// # use wasmcm_guest::{Cache, Controller, Error, Outcome, PluginInfo, Request};
/// # struct MyController;
/// # impl Controller for MyController {
/// #     fn describe() -> PluginInfo { unimplemented!() }
/// #     fn reconcile(_: &Request, _: &dyn Cache) -> Result<Outcome, Error> { unimplemented!() }
/// # }
/// wasmcm_guest::export_plugin!(MyController);
/// ```
///
/// It does this when the crate is built for `wasm32-unknown-unknown`. On any other target
/// (native tests, this documentation) it only checks that the type implements [`Controller`],
/// so the call needs no `#[cfg(target_arch = "wasm32")]` of its own.
#[cfg(not(target_arch = "wasm32"))]
#[macro_export]
macro_rules! export_plugin {
    ($controller:ty) => {
        const _: fn() -> $crate::PluginInfo = <$controller as $crate::Controller>::describe;
    };
}
