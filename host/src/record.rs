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
//! It records and replays reads and compares outcomes; it neither calls plugins nor writes.
//! A recording holds whatever the plugin read (Secrets too, if it reads them): the admin
//! endpoint hands one out only with the admin token.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wasmcm_core::{Kind, Operator, Requirement, Selector};
use wasmcm_guest::{Cache, Instant, MemoryCache, Outcome, Request};

use crate::engine::{CallError, Plugin};
use crate::outcome::{outcome_diff, outcome_from_json, outcome_json};

/// The recording's `apiVersion` and `kind`.
pub const API_VERSION: &str = "wasmcm.dev/v1alpha1";
pub const KIND: &str = "Recording";

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

/// One call and the objects it answered, as the plugin received them.
#[derive(Clone, Debug)]
struct Read {
    call: Call,
    objects: Vec<String>,
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
        let read = Read { call, objects: objects.to_vec() };
        self.reads.lock().unwrap_or_else(|e| e.into_inner()).push(read);
    }

    fn take(&self) -> Vec<Read> {
        std::mem::take(&mut *self.reads.lock().unwrap_or_else(|e| e.into_inner()))
    }
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
                        *index.entry(o.as_str()).or_insert_with(|| {
                            objects.push(serde_json::from_str(o).unwrap_or_else(|_| Value::String(o.clone())));
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
        let objects: Vec<String> = doc
            .get("objects")
            .and_then(Value::as_array)
            .ok_or("objects: a list is required")?
            .iter()
            .map(|o| match o {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        let reads = doc
            .get("reads")
            .and_then(Value::as_array)
            .ok_or("reads: a list is required")?
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let call = Call::from_json(r).map_err(|e| format!("reads[{i}]: {e}"))?;
                let answer =
                    r.get("answer").and_then(Value::as_array).ok_or(format!("reads[{i}].answer is missing"))?;
                let objects = answer
                    .iter()
                    .map(|n| {
                        n.as_u64()
                            .and_then(|n| objects.get(usize::try_from(n).ok()?))
                            .cloned()
                            .ok_or(format!("reads[{i}].answer: {n} is not an index into objects"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
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
        let mut out: Vec<Value> = Vec::new();
        let mut at: BTreeMap<(String, String, String, String), usize> = BTreeMap::new();
        for text in self.reads.iter().flat_map(|r| &r.objects) {
            let object: Value =
                serde_json::from_str(text).map_err(|e| format!("a recorded object is not JSON: {e}"))?;
            let field = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
            let id = (field("/apiVersion"), field("/kind"), field("/metadata/namespace"), field("/metadata/name"));
            match at.get(&id) {
                Some(&i) => out[i] = object,
                None => {
                    at.insert(id, out.len());
                    out.push(object);
                }
            }
        }
        Ok(out)
    }

    /// The cache a replay reads: the recorded answers first, then `objects` (this recording's
    /// [`objects`](Self::objects), which the caller has already read) for other calls.
    pub fn replay_cache(&self, objects: &[Value]) -> Result<ReplayCache, String> {
        let fallback = MemoryCache::from_objects(objects)?;
        let mut answers: BTreeMap<String, VecDeque<Vec<String>>> = BTreeMap::new();
        for r in &self.reads {
            answers.entry(r.call.key()).or_default().push_back(r.objects.clone());
        }
        Ok(ReplayCache { answers: Mutex::new(answers), fallback })
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

/// Answers calls as a recording does: see [`Recording::replay_cache`].
pub struct ReplayCache {
    /// Each call's answers not yet given, in the order recorded; the last is kept for repeats.
    answers: Mutex<BTreeMap<String, VecDeque<Vec<String>>>>,
    fallback: MemoryCache,
}

impl ReplayCache {
    fn answer(&self, call: Call, otherwise: impl FnOnce(&MemoryCache) -> Vec<String>) -> Vec<String> {
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        match answers.get_mut(&call.key()) {
            Some(queue) if queue.len() > 1 => queue.pop_front().unwrap_or_default(),
            Some(queue) => queue.front().cloned().unwrap_or_default(),
            None => otherwise(&self.fallback),
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
}
