//! client-go's event correlation (`tools/record/events_cache.go`), for the events one plugin's
//! writer records, so that a storm of identical events is one Event with a count, as it is from
//! kube-controller-manager:
//!
//! - **aggregation**: an event that differs from 9 others of the last 10 minutes only by its
//!   message (same object, type, reason, source and reporter) becomes one aggregate event,
//!   "(combined from similar events): <message>";
//! - **counting**: an event identical to one already written is a PATCH of that Event's
//!   `count`, `lastTimestamp` and `message` instead of a new Event;
//! - **the spam filter**: each source may record 25 events about one object, then one every 5
//!   minutes; the rest are dropped.
//!
//! It owns the decision, its caches (4096 entries each, least recently used dropped) and the
//! form it is written in: events.k8s.io/v1 where the cluster serves it ([`Decision::events_v1`],
//! the form client-go's events library writes), core/v1 before that. The writes are the
//! caller's (`writes/kube.rs`). The writer names each Event and counts it, and the server stores
//! both as sent, so the cache is what was written without reading the answers back.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use tokio::time::{Duration, Instant};
use wasmcm_core::{event, str_at};

use crate::client::rate::TokenBucket;

const MAX_ENTRIES: usize = 4096;
const AGGREGATE_MAX_EVENTS: usize = 10;
const AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
const SPAM_BURST: u32 = 25;
const SPAM_QPS: f64 = 1.0 / 300.0;

/// What to do with an event.
#[derive(Debug, PartialEq)]
pub(crate) enum Decision {
    /// Dropped by the spam filter.
    Skip,
    /// A new Event.
    Create(Value),
    /// A strategic-merge patch of the earlier Event `name` in `namespace`; `event` is what to
    /// create instead if that Event has gone.
    Patch { namespace: String, name: String, patch: Value, event: Value },
}

/// A map that keeps its `MAX_ENTRIES` most recently used entries, as client-go's LRU caches.
struct Lru<V> {
    entries: BTreeMap<String, (u64, V)>,
    by_use: BTreeMap<u64, String>,
    uses: u64,
}

impl<V> Default for Lru<V> {
    fn default() -> Self {
        Lru { entries: BTreeMap::new(), by_use: BTreeMap::new(), uses: 0 }
    }
}

impl<V> Lru<V> {
    /// The entry of `key`, made by `new` if missing; now the most recently used.
    fn entry(&mut self, key: &str, new: impl FnOnce() -> V) -> &mut V {
        self.uses += 1;
        let uses = self.uses;
        if !self.entries.contains_key(key)
            && self.entries.len() >= MAX_ENTRIES
            && let Some((_, oldest)) = self.by_use.pop_first()
        {
            self.entries.remove(&oldest);
        }
        let slot = self.entries.entry(key.to_owned()).or_insert_with(|| (uses, new()));
        self.by_use.remove(&slot.0);
        slot.0 = uses;
        self.by_use.insert(uses, key.to_owned());
        &mut slot.1
    }
}

impl<V: Default> Lru<V> {
    fn get(&mut self, key: &str) -> Option<&mut V> {
        if self.entries.contains_key(key) { Some(self.entry(key, V::default)) } else { None }
    }
}

/// Messages seen lately for one aggregate key.
struct Similar {
    messages: BTreeSet<String>,
    last: Instant,
}

/// The last write of an identical event.
#[derive(Default)]
struct Written {
    count: i64,
    first_timestamp: Value,
    name: String,
}

#[derive(Default)]
pub(crate) struct Correlator {
    similar: Lru<Similar>,
    written: Lru<Written>,
    spam: Lru<TokenBucket>,
}

fn joined(event: &Value, fields: &[&str]) -> String {
    fields.iter().map(|f| str_at(event, f)).collect::<Vec<_>>().join("\u{0}")
}

const SOURCE_AND_OBJECT: [&str; 8] = [
    "/source/component",
    "/source/host",
    "/involvedObject/kind",
    "/involvedObject/namespace",
    "/involvedObject/name",
    "/involvedObject/uid",
    "/involvedObject/apiVersion",
    "/type",
];

/// `getEventKey`: everything that makes two events the same one.
fn event_key(event: &Value) -> String {
    let mut fields = SOURCE_AND_OBJECT.to_vec();
    fields.extend(["/involvedObject/fieldPath", "/reason", "/message"]);
    joined(event, &fields)
}

/// `EventAggregatorByReasonFunc`: the same but for the message.
fn aggregate_key(event: &Value) -> String {
    let mut fields = SOURCE_AND_OBJECT.to_vec();
    fields.extend(["/reason", "/reportingComponent", "/reportingInstance"]);
    joined(event, &fields)
}

impl Correlator {
    /// Whether and how to write `event` (a core/v1 Event, `count` 1, both timestamps now).
    pub(crate) fn correlate(&mut self, event: Value) -> Decision {
        let (event, key) = self.aggregate(event);
        let decision = self.count(event, &key);
        let spam_key = joined(
            match &decision {
                Decision::Create(e) | Decision::Patch { event: e, .. } => e,
                Decision::Skip => return Decision::Skip,
            },
            &SOURCE_AND_OBJECT,
        );
        if self.spam.entry(&spam_key, || TokenBucket::new(SPAM_QPS, SPAM_BURST)).try_accept() {
            decision
        } else {
            Decision::Skip
        }
    }

    /// `EventAggregate`: the event, or the aggregate it becomes; and the key it is counted by.
    fn aggregate(&mut self, event: Value) -> (Value, String) {
        let now = Instant::now();
        let key = aggregate_key(&event);
        let message = str_at(&event, "/message").to_owned();
        let similar = self.similar.entry(&key, || Similar { messages: BTreeSet::new(), last: now });
        if now.duration_since(similar.last) > AGGREGATE_INTERVAL {
            similar.messages.clear();
        }
        similar.messages.insert(message.clone());
        similar.last = now;
        if similar.messages.len() < AGGREGATE_MAX_EVENTS {
            let key = event_key(&event);
            return (event, key);
        }
        // Never more than the threshold: drop one (client-go drops any; here the first).
        similar.messages.pop_first();
        let mut aggregate = event;
        aggregate["message"] = json!(format!("(combined from similar events): {message}"));
        (aggregate, key)
    }

    /// `eventObserve`: a new Event, or a patch of the one written before under `key`.
    fn count(&mut self, mut event: Value, key: &str) -> Decision {
        let namespace = str_at(&event, "/metadata/namespace").to_owned();
        let earlier = self.written.get(key).filter(|w| w.count > 0);
        let Some(earlier) = earlier else {
            *self.written.entry(key, Written::default) = Written {
                count: 1,
                first_timestamp: event["firstTimestamp"].clone(),
                name: str_at(&event, "/metadata/name").to_owned(),
            };
            return Decision::Create(event);
        };
        earlier.count += 1;
        event["metadata"]["name"] = json!(earlier.name);
        event["firstTimestamp"] = earlier.first_timestamp.clone();
        event["count"] = json!(earlier.count);
        let patch =
            json!({"count": earlier.count, "lastTimestamp": event["lastTimestamp"], "message": event["message"]});
        Decision::Patch { namespace, name: earlier.name.clone(), patch, event }
    }
}

impl Decision {
    /// The same decision written through events.k8s.io/v1 at `now` (a MicroTime), which
    /// refuses the deprecated fields on create and lets a write change only the series: a new
    /// Event's `eventTime` is now, a repeat patches `series` (the count, last seen now), and an
    /// Event made again after it went keeps its first time and carries its series. `action` is
    /// the reason: a plugin's event names what it did by its reason alone.
    pub(crate) fn events_v1(self, now: &str) -> Decision {
        match self {
            Decision::Skip => Decision::Skip,
            Decision::Create(core) => Decision::Create(events_v1(&core, now)),
            Decision::Patch { namespace, name, event, .. } => {
                let event = events_v1(&event, now);
                let patch = json!({"series": event["series"]});
                Decision::Patch { namespace, name, patch, event }
            }
        }
    }
}

/// A correlated core/v1 event in the events.k8s.io/v1 form, seen last `now`.
fn events_v1(core: &Value, now: &str) -> Value {
    let count = core.get("count").and_then(Value::as_i64).unwrap_or(1);
    let mut fields = core.as_object().cloned().unwrap_or_default();
    let first = match count {
        1 => now.to_owned(),
        _ => str_at(core, "/firstTimestamp").parse::<jiff::Timestamp>().map_or_else(|_| now.to_owned(), micro_time),
    };
    for deprecated in ["source", "firstTimestamp", "lastTimestamp", "count"] {
        fields.remove(deprecated);
    }
    fields.insert("eventTime".into(), json!(first));
    fields.insert("action".into(), core.get("reason").cloned().unwrap_or_default());
    if count > 1 {
        fields.insert("series".into(), json!({"count": count, "lastObservedTime": now}));
    }
    let mut v1 = event::convert(&Value::Object(fields), event::EVENTS);
    // The zeros a converted Event reads with are not sent.
    if let Some(fields) = v1.as_object_mut() {
        fields.retain(|_, v| !v.is_null() && *v != json!({}));
    }
    v1
}

/// `at` as a MicroTime (`metav1.RFC3339Micro`).
pub(crate) fn micro_time(at: jiff::Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str, reason: &str, message: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "default", "name": "web", "uid": "u1"},
            "reason": reason, "message": message, "type": "Warning",
            "source": {"component": "replicaset-controller"},
            "reportingComponent": "wasmcm.dev/replicaset", "reportingInstance": "host-a",
            "firstTimestamp": format!("t-{name}"), "lastTimestamp": format!("t-{name}"), "count": 1,
        })
    }

    fn write(c: &mut Correlator, e: Value) -> Decision {
        c.correlate(e)
    }

    #[tokio::test(start_paused = true)]
    async fn an_identical_event_counts_on_the_first_one() {
        let mut c = Correlator::default();
        assert!(matches!(write(&mut c, event("e1", "FailedCreate", "forbidden")), Decision::Create(_)));
        let Decision::Patch { namespace, name, patch, event: counted } =
            write(&mut c, event("e2", "FailedCreate", "forbidden"))
        else {
            panic!("a patch")
        };
        assert_eq!((namespace.as_str(), name.as_str()), ("default", "e1"));
        assert_eq!(patch, json!({"count": 2, "lastTimestamp": "t-e2", "message": "forbidden"}));
        assert_eq!((counted["firstTimestamp"].as_str(), counted["count"].as_i64()), (Some("t-e1"), Some(2)));
        let Decision::Patch { patch, .. } = write(&mut c, event("e3", "FailedCreate", "forbidden")) else {
            panic!("a patch")
        };
        assert_eq!(patch["count"], 3);
        assert!(matches!(write(&mut c, event("e4", "FailedCreate", "another")), Decision::Create(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_tenth_similar_message_in_ten_minutes_is_aggregated_and_then_counted() {
        let mut c = Correlator::default();
        for i in 1..10 {
            let d = write(&mut c, event(&format!("e{i}"), "SuccessfulCreate", &format!("Created pod: web-{i}")));
            assert!(matches!(d, Decision::Create(e) if e["message"] == format!("Created pod: web-{i}")));
        }
        let Decision::Create(aggregate) = write(&mut c, event("e10", "SuccessfulCreate", "Created pod: web-10")) else {
            panic!("an aggregate")
        };
        assert_eq!(aggregate["message"], "(combined from similar events): Created pod: web-10");
        let Decision::Patch { name, patch, .. } =
            write(&mut c, event("e11", "SuccessfulCreate", "Created pod: web-11"))
        else {
            panic!("a count of the aggregate")
        };
        assert_eq!((name.as_str(), &patch["count"]), ("e10", &json!(2)));
        assert_eq!(patch["message"], "(combined from similar events): Created pod: web-11");

        // Ten minutes later the messages start over.
        tokio::time::advance(AGGREGATE_INTERVAL + Duration::from_secs(1)).await;
        let d = write(&mut c, event("e12", "SuccessfulCreate", "Created pod: web-12"));
        assert!(matches!(d, Decision::Create(e) if e["message"] == "Created pod: web-12"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_source_may_say_25_things_about_an_object_then_one_every_five_minutes() {
        let mut c = Correlator::default();
        let decisions: Vec<Decision> =
            (1..=27).map(|i| write(&mut c, event(&format!("e{i}"), "Retry", "failed"))).collect();
        assert!(decisions[..25].iter().all(|d| *d != Decision::Skip));
        assert_eq!(decisions[25..], [Decision::Skip, Decision::Skip]);
        tokio::time::advance(Duration::from_secs(300)).await;
        assert!(matches!(write(&mut c, event("e28", "Retry", "failed")), Decision::Patch { .. }));
        assert_eq!(write(&mut c, event("e29", "Retry", "failed")), Decision::Skip);
    }

    #[tokio::test(start_paused = true)]
    async fn through_events_k8s_io_a_repeat_patches_the_series_of_the_first() {
        let mut c = Correlator::default();
        let mut first = event("e1", "FailedCreate", "forbidden");
        (first["firstTimestamp"], first["lastTimestamp"]) =
            (json!("2026-11-28T10:00:01Z"), json!("2026-11-28T10:00:01Z"));
        let Decision::Create(created) = c.correlate(first).events_v1("2026-11-28T10:00:01.250000Z") else {
            panic!("a create")
        };
        assert_eq!(
            created,
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "e1", "namespace": "default"},
                "regarding": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "default", "name": "web", "uid": "u1"},
                "reason": "FailedCreate", "action": "FailedCreate", "note": "forbidden", "type": "Warning",
                "eventTime": "2026-11-28T10:00:01.250000Z",
                "reportingController": "wasmcm.dev/replicaset", "reportingInstance": "host-a",
            })
        );
        let Decision::Patch { name, patch, event: recreated, .. } =
            c.correlate(event("e2", "FailedCreate", "forbidden")).events_v1("2026-11-28T10:00:07.500000Z")
        else {
            panic!("a patch")
        };
        let series = json!({"count": 2, "lastObservedTime": "2026-11-28T10:00:07.500000Z"});
        assert_eq!((name.as_str(), &patch), ("e1", &json!({"series": series})));
        // Made again if it went: its first time (to the second) and the series, nothing deprecated.
        assert_eq!((&recreated["eventTime"], &recreated["series"]), (&json!("2026-11-28T10:00:01.000000Z"), &series));
        assert!(recreated.get("deprecatedCount").is_none() && recreated.get("deprecatedSource").is_none());
    }

    #[test]
    fn the_cache_keeps_the_most_recently_used() {
        let mut lru: Lru<usize> = Lru::default();
        for i in 0..MAX_ENTRIES {
            *lru.entry(&i.to_string(), || 0) = i;
        }
        lru.get("0").expect("present");
        *lru.entry("new", || 0) = 1;
        assert!(lru.get("0").is_some(), "used lately");
        assert!(lru.get("1").is_none(), "the least recently used went");
        assert_eq!(lru.entries.len(), MAX_ENTRIES);
    }
}
