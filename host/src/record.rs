//! Recordings of one reconcile, what `wasmcm plugins record` takes from a running host and
//! `wasmcm simulate` replays: the request the plugin was given (its key, the host's clock, its
//! settings, the previous failure), every cache call it made with the objects the cache
//! answered, and what it returned — one JSON document (`kind: Recording`).
//!
//! A replay answers each call exactly as recorded (a call made twice gets its answers in the
//! recorded order; a selector of the same meaning makes the same call, whatever the order of its
//! requirements and values and whether a label is in `matchLabels` or an `In` of one value), so
//! the same plugin returns the same outcome, and where another version's
//! outcome differs, that difference is the version's own. A call the recording lacks (a changed
//! plugin reading something else) is answered from the objects the recording holds, as a cache
//! holding only those would.
//!
//! The host replays a live reconcile's reads to a shadow candidate the same way
//! ([`RecordingCache::replay`]): the two are compared on the same answers.
//!
//! It records and replays reads and compares outcomes; it neither calls plugins nor writes.
//! A recording holds whatever the plugin read (Secrets too, if it reads them): the admin
//! endpoint hands one out only with the admin token, and `wasmcm plugins record -o` writes it
//! with mode 0600 ([`write_private`]).
//!
//! A recording to replay may come from anyone (a bug report), so reading one is bounded: an
//! object is held once however many answers name it (a 3 MB recording whose answers named one
//! object a million times once took more than 6 GiB, a copy per naming), and a replay refuses,
//! naming the cap, a recording of more than
//!
//! - [`MAX_RECORDING_BYTES`] (256 MiB) of text, or (JSON) more than [`MAX_JSON_VALUES`]
//!   (8,000,000) values or [`MAX_JSON_MAPS`] (1,000,000) objects (`{...}`) in all, which bounds
//!   what parsing it takes (YAML is bounded by its parser's own budget);
//! - [`MAX_OBJECTS`] (100,000) objects;
//! - [`MAX_READS`] (100,000) calls;
//! - [`MAX_ANSWERED`] (1,000,000) objects named by all the calls' answers together, or
//!   [`MAX_ANSWERED_BYTES`] (256 MiB) of objects handed out by them, twice what one live call
//!   may read (the engine's limit).
//!
//! A real reconcile comes nowhere near these: one live call may read at most 128 MiB, and a
//! list at most 20,000 objects.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use serde_json::{Value, json};
use wasmcm_core::{Kind, Operator, Requirement, Selector};
use wasmcm_guest::{Cache, Instant, MemoryCache, Outcome, Request};

use crate::engine::{CallError, Plugin};
use crate::outcome::{outcome_diff, outcome_from_json, outcome_json};

/// The recording's `apiVersion` and `kind`.
pub const API_VERSION: &str = "wasmcm.dev/v1alpha1";
pub const KIND: &str = "Recording";

/// What a replay reads at most: see the module doc.
pub const MAX_RECORDING_BYTES: usize = 256 << 20;
pub const MAX_JSON_VALUES: usize = 8_000_000;
pub const MAX_JSON_MAPS: usize = 1_000_000;
pub const MAX_OBJECTS: usize = 100_000;
pub const MAX_READS: usize = 100_000;
pub const MAX_ANSWERED: usize = 1_000_000;
pub const MAX_ANSWERED_BYTES: usize = 256 << 20;

/// Refuses a state text (a recording or objects) that `wasmcm simulate` would not read: more
/// than [`MAX_RECORDING_BYTES`], or JSON of more than [`MAX_JSON_VALUES`] values or
/// [`MAX_JSON_MAPS`] objects, counted without building them. Malformed JSON passes, for the
/// parser to name its fault.
pub fn check_size(text: &str) -> Result<(), String> {
    if text.len() > MAX_RECORDING_BYTES {
        return Err(format!("{} bytes: over the cap of {} MiB a replay reads", text.len(), MAX_RECORDING_BYTES >> 20));
    }
    if !text.trim_start().starts_with(['{', '[']) {
        return Ok(());
    }
    let counts = std::cell::Cell::new((0, 0));
    let mut json = serde_json::Deserializer::from_str(text);
    match Count(&counts).deserialize(&mut json) {
        Err(e) if counts.get().0 > MAX_JSON_VALUES || counts.get().1 > MAX_JSON_MAPS => Err(e.to_string()),
        _ => Ok(()),
    }
}

/// Counts the values and maps of JSON text as it is read, and stops past the caps.
struct Count<'a>(&'a std::cell::Cell<(usize, usize)>);

impl Count<'_> {
    fn bump<E: serde::de::Error>(&self, map: bool) -> Result<(), E> {
        let (values, maps) = self.0.get();
        let counts = (values + 1, maps + usize::from(map));
        self.0.set(counts);
        if counts.0 > MAX_JSON_VALUES {
            return Err(E::custom(format!("more than {MAX_JSON_VALUES} JSON values: over the cap a replay reads")));
        }
        if counts.1 > MAX_JSON_MAPS {
            return Err(E::custom(format!("more than {MAX_JSON_MAPS} JSON objects: over the cap a replay reads")));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.bump(false)
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.bump(false)
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.bump(false)
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.bump(false)
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
        self.bump(false)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.bump(false)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.bump(false)?;
        while seq.next_element_seed(Count(self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.bump(true)?;
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(Count(self.0))?;
        }
        Ok(())
    }
}

/// One cache call, as the contract's `cache` interface takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    Get { kind: Kind, namespace: String, name: String },
    List { kind: Kind, namespace: String, selector: Selector },
    ListControlled { kind: Kind, namespace: String, owner_uid: String, orphans: bool },
}

fn selector_json(s: &Selector) -> Value {
    let labels: serde_json::Map<String, Value> =
        s.match_labels.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
    let expressions: Vec<Value> = s
        .match_expressions
        .iter()
        .map(|r| json!({"key": r.key, "operator": r.operator.name(), "values": r.values}))
        .collect();
    json!({"matchLabels": labels, "matchExpressions": expressions})
}

fn selector_from_json(v: &Value) -> Result<Selector, String> {
    let match_labels = match v.get("matchLabels") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| {
                v.as_str().map(|v| (k.clone(), v.to_string())).ok_or(format!("matchLabels.{k}: not a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("matchLabels: not an object".into()),
    };
    let mut match_expressions = Vec::new();
    for (i, r) in v.get("matchExpressions").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let key = r.get("key").and_then(Value::as_str).ok_or(format!("matchExpressions[{i}].key is missing"))?;
        let name = r.get("operator").and_then(Value::as_str);
        let Some(operator) = name.and_then(Operator::parse) else {
            return Err(format!("matchExpressions[{i}].operator {name:?}: In, NotIn, Exists or DoesNotExist"));
        };
        let values = r.get("values").and_then(Value::as_array).into_iter().flatten();
        let values = values.map(|v| v.as_str().map(str::to_string)).collect::<Option<Vec<_>>>();
        let values = values.ok_or(format!("matchExpressions[{i}].values: not a list of strings"))?;
        match_expressions.push(Requirement { key: key.into(), operator, values });
    }
    Ok(Selector { match_labels, match_expressions })
}

impl Call {
    fn json(&self) -> Value {
        match self {
            Call::Get { kind, namespace, name } => json!({
                "call": "get", "apiVersion": kind.api_version, "kind": kind.kind, "namespace": namespace, "name": name,
            }),
            Call::List { kind, namespace, selector } => json!({
                "call": "list", "apiVersion": kind.api_version, "kind": kind.kind, "namespace": namespace,
                "selector": selector_json(selector),
            }),
            Call::ListControlled { kind, namespace, owner_uid, orphans } => json!({
                "call": "listControlled", "apiVersion": kind.api_version, "kind": kind.kind, "namespace": namespace,
                "ownerUid": owner_uid, "orphans": orphans,
            }),
        }
    }

    fn from_json(v: &Value) -> Result<Call, String> {
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string).ok_or(format!("{k} is missing"));
        let kind = Kind { api_version: text("apiVersion")?, kind: text("kind")? };
        let namespace = v.get("namespace").and_then(Value::as_str).unwrap_or("").to_string();
        match text("call")?.as_str() {
            "get" => Ok(Call::Get { kind, namespace, name: text("name")? }),
            "list" => Ok(Call::List {
                kind,
                namespace,
                selector: selector_from_json(v.get("selector").unwrap_or(&Value::Null))
                    .map_err(|e| format!("selector.{e}"))?,
            }),
            "listControlled" => Ok(Call::ListControlled {
                kind,
                namespace,
                owner_uid: text("ownerUid")?,
                orphans: v.get("orphans").and_then(Value::as_bool).unwrap_or(false),
            }),
            other => Err(format!("call {other:?}: get, list or listControlled")),
        }
    }

    /// The same call always has the same key, however its selector was written: its labels
    /// and requirements are ANDed sets, a label `k: v` is the requirement `k In [v]`, and a
    /// requirement's values are a set too, so their form, order and repeats mean nothing.
    fn key(&self) -> String {
        let Call::List { kind, namespace, selector } = self else { return self.json().to_string() };
        let labels = selector.match_labels.iter().map(|(key, value)| Requirement {
            key: key.clone(),
            operator: Operator::In,
            values: vec![value.clone()],
        });
        let mut requirements: Vec<Requirement> = labels.chain(selector.match_expressions.iter().cloned()).collect();
        for r in &mut requirements {
            r.values.sort();
            r.values.dedup();
        }
        requirements
            .sort_by(|a, b| (&a.key, a.operator.name(), &a.values).cmp(&(&b.key, b.operator.name(), &b.values)));
        requirements.dedup();
        let selector = Selector { match_labels: Vec::new(), match_expressions: requirements };
        Call::List { kind: kind.clone(), namespace: namespace.clone(), selector }.json().to_string()
    }
}

/// One call and the objects it answered, as the plugin received them (shared: an object named
/// by many answers is held once).
#[derive(Clone, Debug)]
struct Read {
    call: Call,
    objects: Vec<Arc<str>>,
}

/// A cache that passes every call through and notes it with its answer.
pub(crate) struct RecordingCache {
    inner: Arc<dyn Cache + Send + Sync>,
    reads: Mutex<Vec<Read>>,
}

impl RecordingCache {
    pub(crate) fn new(inner: Arc<dyn Cache + Send + Sync>) -> Self {
        RecordingCache { inner, reads: Mutex::default() }
    }

    fn note(&self, call: Call, objects: &[String]) {
        let read = Read { call, objects: objects.iter().map(|o| Arc::from(o.as_str())).collect() };
        self.reads.lock().unwrap_or_else(|e| e.into_inner()).push(read);
    }

    fn take(&self) -> Vec<Read> {
        std::mem::take(&mut *self.reads.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A cache answering each call made through this one so far as it was answered (a call
    /// made twice, its answers in order), and any other call from `fallback`: what a shadow
    /// candidate reads, so that it compares with the live version on what that one saw and not
    /// on what the informers learnt while it ran (a Python candidate, milliseconds behind a
    /// rolling Deployment, disagreed on a status the live version had not seen yet).
    pub(crate) fn replay(&self, fallback: Arc<dyn Cache + Send + Sync>) -> ReplayCache {
        let reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
        ReplayCache { answers: Mutex::new(answers(&reads)), fallback }
    }
}

/// Each call's answers, in the order given, by the call's [`key`](Call::key).
fn answers(reads: &[Read]) -> BTreeMap<String, VecDeque<Vec<Arc<str>>>> {
    let mut answers: BTreeMap<String, VecDeque<Vec<Arc<str>>>> = BTreeMap::new();
    for r in reads {
        answers.entry(r.call.key()).or_default().push_back(r.objects.clone());
    }
    answers
}

impl Cache for RecordingCache {
    fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<String> {
        let found = self.inner.get(kind, namespace, name);
        let call = Call::Get { kind: kind.clone(), namespace: namespace.into(), name: name.into() };
        self.note(call, found.as_slice());
        found
    }

    fn list(&self, kind: &Kind, namespace: &str, selector: &Selector) -> Vec<String> {
        let found = self.inner.list(kind, namespace, selector);
        self.note(Call::List { kind: kind.clone(), namespace: namespace.into(), selector: selector.clone() }, &found);
        found
    }

    fn list_controlled(&self, kind: &Kind, namespace: &str, owner_uid: &str, orphans: bool) -> Vec<String> {
        let found = self.inner.list_controlled(kind, namespace, owner_uid, orphans);
        let call = Call::ListControlled {
            kind: kind.clone(),
            namespace: namespace.into(),
            owner_uid: owner_uid.into(),
            orphans,
        };
        self.note(call, &found);
        found
    }
}

/// A request as recordings store it and `simulate` prints it: the time in RFC 3339 to the
/// nanosecond, settings as JSON.
pub(crate) fn request_json(request: &Request) -> Value {
    json!({
        "namespace": request.namespace,
        "name": request.name,
        "now": request.now.timestamp().to_string(),
        "previousFailure": request.previous_failure,
        "settings": serde_json::from_str::<Value>(&request.settings)
            .unwrap_or_else(|_| Value::String(request.settings.clone())),
    })
}

/// The plugin a recording was taken from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub name: String,
    pub version: String,
    pub digest: String,
}

/// What a call that did not return an outcome reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub message: String,
    pub retryable: bool,
}

impl From<&CallError> for Failure {
    fn from(e: &CallError) -> Self {
        Failure { message: e.to_string(), retryable: e.retryable() }
    }
}

/// One reconcile as it happened: see the module doc.
#[derive(Clone, Debug)]
pub struct Recording {
    pub plugin: Recorded,
    pub request: Request,
    reads: Vec<Read>,
    pub result: Result<Outcome, Failure>,
}

impl Recording {
    /// The reconcile of `request` by `plugin` whose reads `cache` noted.
    pub(crate) fn new(
        plugin: &Plugin,
        request: Request,
        cache: &RecordingCache,
        result: &Result<Outcome, CallError>,
    ) -> Self {
        let info = plugin.info();
        Recording {
            plugin: Recorded { name: info.name.clone(), version: info.version.clone(), digest: plugin.digest().into() },
            request,
            reads: cache.take(),
            result: result.as_ref().map_err(Failure::from).cloned(),
        }
    }

    /// `namespace/name` of the reconciled object.
    pub fn key(&self) -> String {
        format!("{}/{}", self.request.namespace, self.request.name)
    }

    /// Whether `v` is a recording (rather than a plain snapshot of objects).
    pub fn is_recording(v: &Value) -> bool {
        v.get("kind").and_then(Value::as_str) == Some(KIND)
            && v.get("apiVersion").and_then(Value::as_str) == Some(API_VERSION)
    }

    /// The document: objects once each in `objects` (in the order first read), each read naming
    /// its answer by their indices.
    pub fn to_json(&self) -> Value {
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        let mut objects: Vec<Value> = Vec::new();
        let reads: Vec<Value> = self
            .reads
            .iter()
            .map(|r| {
                let answer: Vec<usize> = r
                    .objects
                    .iter()
                    .map(|o| {
                        *index.entry(&**o).or_insert_with(|| {
                            objects.push(serde_json::from_str(o).unwrap_or_else(|_| Value::String(o.to_string())));
                            objects.len() - 1
                        })
                    })
                    .collect();
                let mut v = r.call.json();
                v["answer"] = json!(answer);
                v
            })
            .collect();
        let mut doc = json!({
            "apiVersion": API_VERSION,
            "kind": KIND,
            "plugin": {"name": self.plugin.name, "version": self.plugin.version, "digest": self.plugin.digest},
            "request": request_json(&self.request),
            "reads": reads,
            "objects": objects,
        });
        match &self.result {
            Ok(outcome) => doc["outcome"] = outcome_json(outcome),
            Err(f) => doc["failure"] = json!({"message": f.message, "retryable": f.retryable}),
        }
        doc
    }

    /// Reads a document [`to_json`](Self::to_json) wrote; the error names what is wrong.
    pub fn from_json(doc: &Value) -> Result<Self, String> {
        if !Self::is_recording(doc) {
            return Err(format!("not a recording: apiVersion {API_VERSION} and kind {KIND} expected"));
        }
        let text = |v: &Value, path: &str| {
            v.pointer(path).and_then(Value::as_str).map(str::to_string).ok_or(format!("{} is missing", &path[1..]))
        };
        let plugin = Recorded {
            name: text(doc, "/plugin/name")?,
            version: text(doc, "/plugin/version")?,
            digest: text(doc, "/plugin/digest")?,
        };
        let settings = match doc.pointer("/request/settings") {
            None | Some(Value::Null) => "{}".to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        };
        let request = Request {
            namespace: doc.pointer("/request/namespace").and_then(Value::as_str).unwrap_or("").to_string(),
            name: text(doc, "/request/name")?,
            now: Instant::parse_rfc3339(&text(doc, "/request/now")?).map_err(|e| format!("request.now: {e}"))?,
            previous_failure: doc.pointer("/request/previousFailure").and_then(Value::as_str).map(str::to_string),
            settings,
        };
        let objects = doc.get("objects").and_then(Value::as_array).ok_or("objects: a list is required")?;
        if objects.len() > MAX_OBJECTS {
            return Err(format!("objects: {} objects, over the cap of {MAX_OBJECTS} a replay reads", objects.len()));
        }
        let objects: Vec<Arc<str>> = objects
            .iter()
            .map(|o| match o {
                Value::String(s) => Arc::from(s.as_str()),
                other => Arc::from(other.to_string()),
            })
            .collect();
        let reads = doc.get("reads").and_then(Value::as_array).ok_or("reads: a list is required")?;
        if reads.len() > MAX_READS {
            return Err(format!("reads: {} calls, over the cap of {MAX_READS} a replay reads", reads.len()));
        }
        let (mut answered, mut answered_bytes) = (0usize, 0usize);
        let reads = reads
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let call = Call::from_json(r).map_err(|e| format!("reads[{i}]: {e}"))?;
                let answer =
                    r.get("answer").and_then(Value::as_array).ok_or(format!("reads[{i}].answer is missing"))?;
                answered += answer.len();
                if answered > MAX_ANSWERED {
                    return Err(format!(
                        "reads[{i}].answer: the answers name more than {MAX_ANSWERED} objects in all, the cap a \
                         replay reads"
                    ));
                }
                let objects = answer
                    .iter()
                    .map(|n| {
                        let object = n
                            .as_u64()
                            .and_then(|n| objects.get(usize::try_from(n).ok()?))
                            .ok_or(format!("reads[{i}].answer: {n} is not an index into objects"))?;
                        answered_bytes += object.len();
                        Ok(object.clone())
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                if answered_bytes > MAX_ANSWERED_BYTES {
                    return Err(format!(
                        "reads[{i}].answer: the answers hand out more than {} MiB of objects in all, the cap a replay \
                         reads",
                        MAX_ANSWERED_BYTES >> 20
                    ));
                }
                Ok(Read { call, objects })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let result = match (doc.get("outcome"), doc.get("failure")) {
            (Some(o), None) => Ok(outcome_from_json(o).map_err(|e| format!("outcome.{e}"))?),
            (None, Some(f)) => Err(Failure {
                message: text(f, "/message").map_err(|e| format!("failure.{e}"))?,
                retryable: f.get("retryable").and_then(Value::as_bool).unwrap_or(false),
            }),
            _ => return Err("exactly one of outcome and failure is required".into()),
        };
        Ok(Recording { plugin, request, reads, result })
    }

    /// Every object read, each once (the last version read, should it have changed during the
    /// reconcile), in the order first read: the state a replay's writes apply to.
    pub fn objects(&self) -> Result<Vec<Value>, String> {
        type Id = (String, String, String, String);
        // Each object text is parsed once, however many answers name it.
        let mut ids: BTreeMap<*const u8, Id> = BTreeMap::new();
        let mut order: Vec<Id> = Vec::new();
        let mut last: BTreeMap<Id, &Arc<str>> = BTreeMap::new();
        let mut parsed: BTreeMap<*const u8, Value> = BTreeMap::new();
        for text in self.reads.iter().flat_map(|r| &r.objects) {
            let at = text.as_ptr();
            let id = match ids.get(&at) {
                Some(id) => id.clone(),
                None => {
                    let object: Value =
                        serde_json::from_str(text).map_err(|e| format!("a recorded object is not JSON: {e}"))?;
                    let field = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
                    let id =
                        (field("/apiVersion"), field("/kind"), field("/metadata/namespace"), field("/metadata/name"));
                    ids.insert(at, id.clone());
                    parsed.insert(at, object);
                    id
                }
            };
            if last.insert(id.clone(), text).is_none() {
                order.push(id);
            }
        }
        Ok(order.iter().filter_map(|id| parsed.remove(&last.get(id)?.as_ptr())).collect())
    }

    /// The cache a replay reads: the recorded answers first, then `objects` (this recording's
    /// [`objects`](Self::objects), which the caller has already read) for other calls.
    pub fn replay_cache(&self, objects: &[Value]) -> Result<ReplayCache, String> {
        let fallback = Arc::new(MemoryCache::from_objects(objects)?);
        Ok(ReplayCache { answers: Mutex::new(answers(&self.reads)), fallback })
    }

    /// Where `replayed` differs from what was recorded; `None` when identical.
    pub fn compare(&self, replayed: &Result<Outcome, CallError>) -> Option<String> {
        match (&self.result, replayed) {
            (Ok(a), Ok(b)) => outcome_diff(a, b),
            (Err(a), Err(b)) if a.message == b.to_string() => None,
            (Ok(_), Err(e)) => Some(format!("the recorded reconcile returned an outcome; the replay failed: {e}")),
            (Err(f), Ok(_)) => {
                Some(format!("the recorded reconcile failed ({}); the replay returned an outcome", f.message))
            }
            (Err(a), Err(b)) => Some(format!("both failed, differently: recorded {}; replayed {b}", a.message)),
        }
    }

    /// "4 reads of 7 objects; 3 intents in 2 batches", for messages.
    pub fn summary(&self) -> String {
        let objects = self.objects().map_or(0, |o| o.len());
        let result = match &self.result {
            Ok(o) => format!("{} intents in {} batches", o.intents().count(), o.batches.len()),
            Err(f) => format!("failed: {}", f.message),
        };
        format!("{} reads of {objects} objects; {result}", self.reads.len())
    }
}

/// Writes `bytes` (a recording) to `path` so that only its owner may ever read it: into a new
/// file beside it, created with mode 0600 (`O_EXCL`, never chmod'ed afterwards), then renamed
/// over `path`. A `path` that exists and is not a regular file (`/dev/stdout`, a pipe) is
/// written as it is.
pub fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::OpenOptions::new().write(true).open(path)?.write_all(bytes);
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let name = path.file_name().ok_or_else(|| std::io::Error::other("not a file name"))?;
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|e| std::io::Error::other(format!("no randomness: {e}")))?;
    let temporary = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), hex::encode(nonce)));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temporary)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Answers calls as a recording does: see [`Recording::replay_cache`] and
/// [`RecordingCache::replay`].
pub struct ReplayCache {
    /// Each call's answers not yet given, in the order recorded; the last is kept for repeats.
    answers: Mutex<BTreeMap<String, VecDeque<Vec<Arc<str>>>>>,
    /// Calls not recorded.
    fallback: Arc<dyn Cache + Send + Sync>,
}

impl ReplayCache {
    fn answer(&self, call: Call, otherwise: impl FnOnce(&dyn Cache) -> Vec<String>) -> Vec<String> {
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        let texts = |answer: &[Arc<str>]| answer.iter().map(|o| o.to_string()).collect();
        match answers.get_mut(&call.key()) {
            Some(queue) if queue.len() > 1 => queue.pop_front().map(|a| texts(&a)).unwrap_or_default(),
            Some(queue) => queue.front().map(|a| texts(a)).unwrap_or_default(),
            None => otherwise(&*self.fallback),
        }
    }
}

impl Cache for ReplayCache {
    fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<String> {
        let call = Call::Get { kind: kind.clone(), namespace: namespace.into(), name: name.into() };
        self.answer(call, |c| c.get(kind, namespace, name).into_iter().collect()).pop()
    }

    fn list(&self, kind: &Kind, namespace: &str, selector: &Selector) -> Vec<String> {
        let call = Call::List { kind: kind.clone(), namespace: namespace.into(), selector: selector.clone() };
        self.answer(call, |c| c.list(kind, namespace, selector))
    }

    fn list_controlled(&self, kind: &Kind, namespace: &str, owner_uid: &str, orphans: bool) -> Vec<String> {
        let call = Call::ListControlled {
            kind: kind.clone(),
            namespace: namespace.into(),
            owner_uid: owner_uid.into(),
            orphans,
        };
        self.answer(call, |c| c.list_controlled(kind, namespace, owner_uid, orphans))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, image: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "d", "labels": {"app": "web"}},
               "spec": {"containers": [{"name": "c", "image": image}]}})
    }

    /// A recording of calls against a cache that changed between two identical lists.
    fn recorded() -> Recording {
        let web = Selector { match_labels: vec![("app".into(), "web".into())], ..Default::default() };
        let pods = Kind::new("v1", "Pod");
        let first = Arc::new(MemoryCache::from_objects(&[pod("a", "v1")]).unwrap());
        let cache = RecordingCache::new(first);
        assert_eq!(cache.list(&pods, "d", &web).len(), 1);
        assert!(cache.get(&pods, "d", "zz").is_none());
        let mut reads = cache.take();
        let second =
            RecordingCache::new(Arc::new(MemoryCache::from_objects(&[pod("a", "v2"), pod("b", "v1")]).unwrap()));
        assert_eq!(second.list(&pods, "d", &web).len(), 2);
        reads.extend(second.take());
        Recording {
            plugin: Recorded { name: "p".into(), version: "1".into(), digest: "abc".into() },
            request: Request {
                settings: r#"{"limit":3}"#.into(),
                previous_failure: Some("409".into()),
                ..Request::new("d", "web", Instant { seconds: 1_800_000_000, nanoseconds: 123_456_789 })
            },
            reads,
            result: Ok(Outcome {
                batches: vec![vec![wasmcm_guest::Intent::Create(pod("c", "v1").to_string())]],
                requeue_after_ms: Some(5),
            }),
        }
    }

    #[test]
    fn a_recording_reads_back_as_written() {
        let r = recorded();
        let text = serde_json::to_string_pretty(&r.to_json()).unwrap();
        let back = Recording::from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back.request, r.request);
        assert_eq!(back.plugin, r.plugin);
        assert_eq!(back.to_json(), r.to_json());
        assert_eq!(r.to_json()["objects"].as_array().unwrap().len(), 3, "pod a twice (changed) and b, each once");
        assert_eq!(r.to_json()["request"]["now"], "2027-01-15T08:00:00.123456789Z");
        assert_eq!(back.summary(), "3 reads of 2 objects; 1 intents in 1 batches");
    }

    #[test]
    fn a_replay_answers_as_recorded_then_from_the_objects() {
        let r = recorded();
        let web = Selector { match_labels: vec![("app".into(), "web".into())], ..Default::default() };
        let pods = Kind::new("v1", "Pod");
        let replay = r.replay_cache(&r.objects().unwrap()).unwrap();
        let image = |o: &str| serde_json::from_str::<Value>(o).unwrap()["spec"]["containers"][0]["image"].clone();
        let first = replay.list(&pods, "d", &web);
        assert_eq!(first.iter().map(|o| image(o)).collect::<Vec<_>>(), ["v1"]);
        let second = replay.list(&pods, "d", &web);
        assert_eq!(second.len(), 2, "the second identical call gets the second answer");
        assert_eq!(replay.list(&pods, "d", &web).len(), 2, "and repeats keep the last");
        assert!(replay.get(&pods, "d", "zz").is_none(), "recorded as absent");
        // Not recorded: the state holds the last version of each object read.
        assert_eq!(image(&replay.get(&pods, "d", "a").unwrap()), "v2");
        assert_eq!(replay.list(&pods, "", &Selector::everything()).len(), 2);
    }

    /// The informers as they move on: a cache whose objects the test replaces.
    struct Moving(Mutex<MemoryCache>);

    impl Cache for Moving {
        fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<String> {
            self.0.lock().unwrap().get(kind, namespace, name)
        }
        fn list(&self, kind: &Kind, namespace: &str, selector: &Selector) -> Vec<String> {
            self.0.lock().unwrap().list(kind, namespace, selector)
        }
        fn list_controlled(&self, kind: &Kind, namespace: &str, owner_uid: &str, orphans: bool) -> Vec<String> {
            self.0.lock().unwrap().list_controlled(kind, namespace, owner_uid, orphans)
        }
    }

    #[test]
    fn a_shadow_candidate_reads_what_the_live_version_read_whatever_changed_since() {
        let pods = Kind::new("v1", "Pod");
        let web = Selector { match_labels: vec![("app".into(), "web".into())], ..Default::default() };
        let informers = Arc::new(Moving(Mutex::new(MemoryCache::from_objects(&[pod("a", "v1")]).unwrap())));
        let live = RecordingCache::new(informers.clone());
        assert_eq!(live.list(&pods, "d", &web).len(), 1);
        assert!(live.get(&pods, "d", "a").is_some());
        // While the live version ran, a changed a and b appeared.
        *informers.0.lock().unwrap() = MemoryCache::from_objects(&[pod("a", "v2"), pod("b", "v1")]).unwrap();
        let candidate = live.replay(informers.clone());
        let image = |o: &str| serde_json::from_str::<Value>(o).unwrap()["spec"]["containers"][0]["image"].clone();
        let listed = candidate.list(&pods, "d", &web);
        assert_eq!(listed.iter().map(|o| image(o)).collect::<Vec<_>>(), ["v1"], "as the live version listed");
        assert_eq!(image(&candidate.get(&pods, "d", "a").unwrap()), "v1");
        // What the live version did not read comes from the informers as they are now.
        assert_eq!(image(&candidate.get(&pods, "d", "b").unwrap()), "v1");
        assert_eq!(candidate.list(&pods, "", &Selector::everything()).len(), 2);
        // And the recording of the live version's reads is still whole.
        assert_eq!(live.take().len(), 2);
    }

    #[test]
    fn a_selector_written_in_another_order_is_the_same_call() {
        let pods = Kind::new("v1", "Pod");
        let list = |expressions: Vec<(&str, Operator, Vec<&str>)>| {
            let match_expressions = expressions
                .into_iter()
                .map(|(key, operator, values)| Requirement {
                    key: key.into(),
                    operator,
                    values: values.into_iter().map(String::from).collect(),
                })
                .collect();
            let selector = Selector { match_labels: vec![("app".into(), "web".into())], match_expressions };
            Call::List { kind: pods.clone(), namespace: "d".into(), selector }.key()
        };
        let written = list(vec![("tier", Operator::In, vec!["a", "b"]), ("canary", Operator::DoesNotExist, vec![])]);
        let reordered =
            list(vec![("canary", Operator::DoesNotExist, vec![]), ("tier", Operator::In, vec!["b", "a", "b"])]);
        assert_eq!(written, reordered);
        assert_ne!(written, list(vec![("tier", Operator::In, vec!["a"]), ("canary", Operator::DoesNotExist, vec![])]));
        assert_ne!(
            written,
            list(vec![("tier", Operator::NotIn, vec!["a", "b"]), ("canary", Operator::DoesNotExist, vec![])])
        );
        // matchLabels app=web is the requirement app In [web].
        let as_expression = Call::List {
            kind: pods.clone(),
            namespace: "d".into(),
            selector: Selector {
                match_labels: Vec::new(),
                match_expressions: vec![
                    Requirement { key: "canary".into(), operator: Operator::DoesNotExist, values: vec![] },
                    Requirement { key: "app".into(), operator: Operator::In, values: vec!["web".into()] },
                    Requirement { key: "tier".into(), operator: Operator::In, values: vec!["a".into(), "b".into()] },
                ],
            },
        };
        assert_eq!(written, as_expression.key());
    }

    #[test]
    fn broken_recordings_are_named_by_their_path() {
        let mut doc = recorded().to_json();
        doc["reads"][1]["answer"] = json!([7]);
        assert_eq!(Recording::from_json(&doc).unwrap_err(), "reads[1].answer: 7 is not an index into objects");
        let mut doc = recorded().to_json();
        doc["request"]["now"] = json!("yesterday");
        assert!(Recording::from_json(&doc).unwrap_err().starts_with("request.now: invalid RFC 3339 time"));
        let mut doc = recorded().to_json();
        doc["failure"] = json!({"message": "x"});
        assert_eq!(Recording::from_json(&doc).unwrap_err(), "exactly one of outcome and failure is required");
        assert!(Recording::from_json(&json!({"kind": "List"})).unwrap_err().starts_with("not a recording"));
    }

    #[test]
    fn a_replay_refuses_recordings_past_its_caps_naming_them() {
        let doc = recorded().to_json();
        let mut many = doc.clone();
        many["objects"] = Value::Array(vec![json!({}); MAX_OBJECTS + 1]);
        assert_eq!(
            Recording::from_json(&many).unwrap_err(),
            "objects: 100001 objects, over the cap of 100000 a replay reads"
        );
        let mut many = doc.clone();
        many["reads"] = Value::Array(vec![doc["reads"][0].clone(); MAX_READS + 1]);
        assert_eq!(
            Recording::from_json(&many).unwrap_err(),
            "reads: 100001 calls, over the cap of 100000 a replay reads"
        );
        let mut many = doc.clone();
        many["reads"][0]["answer"] = json!(vec![0; MAX_ANSWERED + 1]);
        assert_eq!(
            Recording::from_json(&many).unwrap_err(),
            "reads[0].answer: the answers name more than 1000000 objects in all, the cap a replay reads"
        );
        // Named many times, an object is held once.
        let mut shared = doc.clone();
        shared["reads"][0]["answer"] = json!(vec![0; 100_000]);
        let r = Recording::from_json(&shared).unwrap();
        let first = &r.reads[0].objects;
        assert!(first.iter().all(|o| Arc::ptr_eq(o, &first[0])));
        assert_eq!(r.objects().unwrap().len(), 2);
    }

    #[test]
    fn state_text_is_counted_before_it_is_parsed() {
        assert_eq!(check_size("{}"), Ok(()));
        assert_eq!(check_size("{not json"), Ok(()), "the parser names a fault");
        let values = format!("[{}0]", "0,".repeat(MAX_JSON_VALUES));
        let err = check_size(&values).unwrap_err();
        assert!(err.starts_with("more than 8000000 JSON values: over the cap a replay reads"), "{err}");
        let maps = format!("[{}{{}}]", "{},".repeat(MAX_JSON_MAPS));
        let err = check_size(&maps).unwrap_err();
        assert!(err.starts_with("more than 1000000 JSON objects: over the cap a replay reads"), "{err}");
        let big = " ".repeat(MAX_RECORDING_BYTES + 1);
        assert_eq!(check_size(&big).unwrap_err(), "268435457 bytes: over the cap of 256 MiB a replay reads");
    }
}
