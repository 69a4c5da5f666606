//! A loaded [`Plugin`]: what it declared (narrowed by its manifest: [`Plugin::configure`]), its
//! digest, limits and compile figures, and its reconcile, whose outcome is checked against the
//! caps on what the host acts on before it is handed back, unexecuted.
//!
//! It owns the loaded plugin and its outcome's caps; running a call is `call`'s, loading `load`'s.

use std::collections::HashSet;
use std::sync::Arc;

use wasmcm_guest::{Cache, Kind};

use super::budget::MemoryBudget;
use super::call::{CallError, CallState, TrapReason};
use super::compat;
use super::config::Limits;
use super::load::Compiled;
use super::log::clip;
use super::wit::{bindings, outcome_from_wit, wit, wit_types};

/// Intents, and batches, one outcome may carry. Every intent is an API request: at the default
/// client rate (20 qps) 10,000 already take over 8 minutes, so an outcome past this is a
/// runaway plugin, not a reconcile.
pub(super) const MAX_OUTCOME_INTENTS: usize = 10_000;
/// Text (objects, messages, names) one outcome may carry in total. The API server refuses a
/// request body over 3 MiB, so this is several of the largest writes there can be, while it
/// keeps a plugin from making the host validate, log and send arbitrary amounts.
pub(super) const MAX_OUTCOME_TEXT: usize = 16 << 20;

/// What a plugin may read: its primary, owned and watched kinds.
/// A linked plugin, ready to instantiate, in the contract it was built for.
pub(super) enum Pre {
    V4(bindings::PluginPre<CallState>),
    V3(compat::PluginPre<CallState>),
}

/// One call's instance.
pub(super) enum Instance {
    V4(bindings::Plugin),
    V3(compat::Plugin),
}

pub(super) fn readable(info: &wasmcm_guest::PluginInfo) -> Arc<HashSet<Kind>> {
    let kinds = std::iter::once(&info.primary).chain(&info.owns).chain(info.watched_kinds());
    Arc::new(kinds.cloned().collect())
}

/// A loaded plugin, ready to be called from any thread.
pub struct Plugin {
    pub(super) engine: wasmtime::Engine,
    pub(super) pre: Pre,
    pub(super) info: wasmcm_guest::PluginInfo,
    pub(super) readable: Arc<HashSet<Kind>>,
    pub(super) digest: String,
    pub(super) limits: Limits,
    pub(super) compiled: Compiled,
    pub(super) imports: Vec<String>,
    pub(super) budget: Arc<MemoryBudget>,
    /// The engine's pool, in call slots, for the message of a full one.
    pub(super) max_concurrent_calls: u32,
}

impl Plugin {
    pub fn info(&self) -> &wasmcm_guest::PluginInfo {
        &self.info
    }

    /// SHA-256 of the component bytes, hex.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn compiled(&self) -> Compiled {
        self.compiled
    }

    /// The interfaces the component imports (all within the contract, or it would not load).
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// Runs this plugin as `name` (several copies of one component can run side by side),
    /// with its reads and writes narrowed to the kinds given. A manifest may only narrow: a
    /// kind the plugin did not declare is an error, and its primary kind cannot be taken away.
    pub fn configure(mut self, name: &str, reads: Option<&[Kind]>, writes: Option<&[Kind]>) -> Result<Self, String> {
        let info = &mut self.info;
        if let Some(reads) = reads {
            let declared: Vec<&Kind> = info.owns.iter().chain(info.watched_kinds()).chain([&info.primary]).collect();
            if let Some(k) = reads.iter().find(|k| !declared.contains(k)) {
                return Err(format!("capabilities.reads names {k}, which the plugin does not declare"));
            }
            info.owns.retain(|k| reads.contains(k));
            info.watches.retain(|w| reads.contains(&w.kind));
        }
        if let Some(writes) = writes {
            if let Some(k) = writes.iter().find(|k| !info.writes.contains(k)) {
                return Err(format!("capabilities.writes names {k}, which the plugin does not declare"));
            }
            info.writes.retain(|k| writes.contains(k));
        }
        info.name = name.to_string();
        self.readable = readable(info);
        Ok(self)
    }

    /// One reconcile of `request` against `cache`, in a fresh instance.
    pub fn reconcile(
        &self,
        request: &wasmcm_guest::Request,
        cache: Arc<dyn Cache + Send + Sync>,
    ) -> Result<wasmcm_guest::Outcome, CallError> {
        let key = format!("{}/{}", request.namespace, request.name);
        let wit_request = wit::Request {
            namespace: request.namespace.clone(),
            name: request.name.clone(),
            now: wit_types::Instant { seconds: request.now.seconds, nanoseconds: request.now.nanoseconds },
            previous_failure: request.previous_failure.clone(),
            settings: request.settings.clone(),
        };
        let result = self.call(cache, &key, |instance, store| match instance {
            Instance::V4(p) => p.wasmcm_reconciler_controller().call_reconcile(store, &wit_request),
            Instance::V3(p) => compat::reconcile(p, store, &wit_request),
        })?;
        match result {
            Ok(outcome) => {
                check_outcome(&outcome).map_err(|detail| CallError::Trap {
                    plugin: self.info.name.clone(),
                    version: self.info.version.clone(),
                    reason: TrapReason::Outcome,
                    detail,
                    panic: None,
                })?;
                Ok(outcome_from_wit(outcome))
            }
            Err(e) => Err(CallError::Plugin {
                plugin: self.info.name.clone(),
                version: self.info.version.clone(),
                message: clip(e.message),
                retryable: e.retryable,
            }),
        }
    }
}

/// Refuses an outcome larger than the host acts on. It can only look once the outcome has been
/// lifted out of the guest, but that copy is bounded too: what a plugin returns must fit in its
/// linear memory (the lift checks every list and string against it before copying), and
/// wasmtime copies no more than `MAX_COPY_OUT` of it whatever the plugin's memory limit. What
/// the caps bound is everything after: conversion, validation, logs and API requests.
fn check_outcome(o: &wit::Outcome) -> Result<(), String> {
    let too_many =
        |n: usize, what: &str| format!("outcome has {n} {what}; the host accepts at most {MAX_OUTCOME_INTENTS}");
    // No outcome needs more batches than intents, and empty batches still cost the host.
    if o.batches.len() > MAX_OUTCOME_INTENTS {
        return Err(too_many(o.batches.len(), "batches"));
    }
    let intents: usize = o.batches.iter().map(Vec::len).sum();
    if intents > MAX_OUTCOME_INTENTS {
        return Err(too_many(intents, "intents"));
    }
    let text: usize = o.batches.iter().flatten().map(intent_text).sum();
    if text > MAX_OUTCOME_TEXT {
        return Err(format!(
            "outcome has {text} bytes of text (objects, messages, names); the host accepts at most {MAX_OUTCOME_TEXT}"
        ));
    }
    Ok(())
}

/// Bytes of every string an intent carries.
fn intent_text(i: &wit::Intent) -> usize {
    let object_ref =
        |r: &wit_types::ObjectRef| r.kind.api_version.len() + r.kind.kind.len() + r.namespace.len() + r.name.len();
    match i {
        wit::Intent::Create(o) | wit::Intent::Update(o) | wit::Intent::UpdateStatus(o) => o.len(),
        wit::Intent::Delete(d) => object_ref(&d.target) + d.uid.as_ref().map_or(0, String::len),
        wit::Intent::Event(e) => object_ref(&e.regarding) + e.reason.len() + e.message.len(),
        wit::Intent::Patch(p) => {
            object_ref(&p.target) + p.body.len() + p.resource_version.as_ref().map_or(0, String::len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_accepted_up_to_the_caps_and_not_past_them() {
        let outcome = |batches: Vec<Vec<wit::Intent>>| wit::Outcome { batches, requeue_after_ms: None };
        let create = |bytes: usize| wit::Intent::Create("x".repeat(bytes));
        let event = |message: String| {
            let kind = wit_types::Kind { api_version: "v1".into(), kind: "Pod".into() };
            let regarding = wit_types::ObjectRef { kind, namespace: "ns".into(), name: "p".into() };
            wit::Intent::Event(wit::Event {
                regarding,
                event_type: wit::EventType::Normal,
                reason: "R".into(),
                message,
            })
        };

        let at_cap = || (0..MAX_OUTCOME_INTENTS).map(|_| create(1)).collect::<Vec<_>>();
        assert_eq!(check_outcome(&outcome(vec![at_cap()])), Ok(()));
        let mut past = at_cap();
        past.push(create(1));
        assert_eq!(
            check_outcome(&outcome(vec![past])),
            Err("outcome has 10001 intents; the host accepts at most 10000".into())
        );
        // Counted over every batch, and empty batches count on their own.
        assert!(check_outcome(&outcome(vec![at_cap(), vec![create(1)]])).is_err());
        assert!(check_outcome(&outcome(vec![vec![]; MAX_OUTCOME_INTENTS])).is_ok());
        assert_eq!(
            check_outcome(&outcome(vec![vec![]; MAX_OUTCOME_INTENTS + 1])),
            Err("outcome has 10001 batches; the host accepts at most 10000".into())
        );

        // Every string counts: "v1" "Pod" "ns" "p" "R" are 9 bytes besides the message.
        let text = |message_bytes| outcome(vec![vec![create(8 << 20), event("m".repeat(message_bytes))]]);
        assert_eq!(check_outcome(&text((8 << 20) - 9)), Ok(()));
        assert_eq!(
            check_outcome(&text((8 << 20) - 8)),
            Err("outcome has 16777217 bytes of text (objects, messages, names); the host accepts at most 16777216"
                .into())
        );
    }
}
