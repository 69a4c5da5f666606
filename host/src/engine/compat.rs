//! Contract 0.3.0 (`wit/0.3.0/reconciler.wit`, frozen): the host side of plugins built against
//! it, so they load and run unchanged beside plugins of the current contract. Its imports are
//! served by the same reads and log as the current contract's ([`CallState`]); its calls are
//! lifted into the current contract's types, of which 0.3.0 is a subset (no `patch` intent, no
//! delete `propagation`), so everything past the call sees one contract.
//!
//! It owns the translation only: limits, capability checks and traps are the engine's.

use wasmtime::component::{HasSelf, Linker};

use super::cache_view::selector_from_wit;
use super::call::CallState;
use super::wit::{kind_from_wit, wit, wit_types};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit/0.3.0",
        world: "plugin",
        imports: { default: trappable },
    });
}

use bindings::exports::wasmcm::reconciler::controller as v3;
use bindings::wasmcm::reconciler::{cache as v3_cache, log as v3_log, types as v3_types};

pub(super) use bindings::{Plugin, PluginPre};

/// The contract this module serves.
pub(super) const CONTRACT_VERSION: &str = "0.3.0";

/// Adds the 0.3.0 imports beside the current contract's: their names differ by version.
pub(super) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    Plugin::add_to_linker::<_, HasSelf<CallState>>(linker, |s| s)
}

pub(super) fn describe(plugin: &Plugin, store: &mut wasmtime::Store<CallState>) -> wasmtime::Result<wit::PluginInfo> {
    let i = plugin.wasmcm_reconciler_controller().call_describe(store)?;
    let kinds = |ks: Vec<v3_types::Kind>| ks.into_iter().map(kind).collect();
    Ok(wit::PluginInfo {
        name: i.name,
        version: i.version,
        primary: kind(i.primary),
        owns: kinds(i.owns),
        watches: i
            .watches
            .into_iter()
            .map(|w| {
                let mut wake_on = wit::Changes::empty();
                for (v3_flag, flag) in [
                    (v3::Changes::CREATED, wit::Changes::CREATED),
                    (v3::Changes::UPDATED, wit::Changes::UPDATED),
                    (v3::Changes::DELETED, wit::Changes::DELETED),
                ] {
                    if w.wake_on.contains(v3_flag) {
                        wake_on |= flag;
                    }
                }
                wit::Watch { kind: kind(w.kind), wake_on }
            })
            .collect(),
        writes: kinds(i.writes),
        contract: i.contract,
    })
}

pub(super) fn reconcile(
    plugin: &Plugin,
    store: &mut wasmtime::Store<CallState>,
    request: &wit::Request,
) -> wasmtime::Result<Result<wit::Outcome, wit::Error>> {
    let request = v3::Request {
        namespace: request.namespace.clone(),
        name: request.name.clone(),
        now: v3_types::Instant { seconds: request.now.seconds, nanoseconds: request.now.nanoseconds },
        previous_failure: request.previous_failure.clone(),
        settings: request.settings.clone(),
    };
    Ok(match plugin.wasmcm_reconciler_controller().call_reconcile(store, &request)? {
        Ok(o) => Ok(wit::Outcome {
            batches: o.batches.into_iter().map(|b| b.into_iter().map(intent).collect()).collect(),
            requeue_after_ms: o.requeue_after_ms,
        }),
        Err(e) => Err(wit::Error { message: e.message, retryable: e.retryable }),
    })
}

fn kind(k: v3_types::Kind) -> wit_types::Kind {
    wit_types::Kind { api_version: k.api_version, kind: k.kind }
}

fn object_ref(r: v3_types::ObjectRef) -> wit_types::ObjectRef {
    wit_types::ObjectRef { kind: kind(r.kind), namespace: r.namespace, name: r.name }
}

fn intent(i: v3::Intent) -> wit::Intent {
    match i {
        v3::Intent::Create(o) => wit::Intent::Create(o),
        v3::Intent::Update(o) => wit::Intent::Update(o),
        v3::Intent::UpdateStatus(o) => wit::Intent::UpdateStatus(o),
        v3::Intent::Delete(d) => {
            wit::Intent::Delete(wit::DeleteTarget { target: object_ref(d.target), uid: d.uid, propagation: None })
        }
        v3::Intent::Event(e) => wit::Intent::Event(wit::Event {
            regarding: object_ref(e.regarding),
            event_type: match e.event_type {
                v3::EventType::Normal => wit::EventType::Normal,
                v3::EventType::Warning => wit::EventType::Warning,
            },
            reason: e.reason,
            message: e.message,
        }),
    }
}

impl v3_types::Host for CallState {}

impl v3_cache::Host for CallState {
    fn get(&mut self, k: v3_types::Kind, namespace: String, name: String) -> wasmtime::Result<Option<String>> {
        self.read_get(kind_from_wit(kind(k)), &namespace, &name)
    }

    fn list(
        &mut self,
        k: v3_types::Kind,
        namespace: String,
        selector: v3_types::Selector,
    ) -> wasmtime::Result<Vec<String>> {
        let selector = wit_types::Selector {
            match_labels: selector.match_labels,
            match_expressions: selector
                .match_expressions
                .into_iter()
                .map(|r| wit_types::Requirement {
                    key: r.key,
                    operator: match r.operator {
                        v3_types::Operator::In => wit_types::Operator::In,
                        v3_types::Operator::NotIn => wit_types::Operator::NotIn,
                        v3_types::Operator::Exists => wit_types::Operator::Exists,
                        v3_types::Operator::DoesNotExist => wit_types::Operator::DoesNotExist,
                    },
                    values: r.values,
                })
                .collect(),
        };
        self.read_list(kind_from_wit(kind(k)), &namespace, selector_from_wit(selector))
    }

    fn list_controlled(
        &mut self,
        k: v3_types::Kind,
        namespace: String,
        owner_uid: String,
        orphans: bool,
    ) -> wasmtime::Result<Vec<String>> {
        self.read_list_controlled(kind_from_wit(kind(k)), &namespace, &owner_uid, orphans)
    }
}

impl v3_log::Host for CallState {
    fn log(&mut self, level: v3_log::Level, message: String) -> wasmtime::Result<()> {
        let level = match level {
            v3_log::Level::Trace => wasmcm_guest::Level::Trace,
            v3_log::Level::Debug => wasmcm_guest::Level::Debug,
            v3_log::Level::Info => wasmcm_guest::Level::Info,
            v3_log::Level::Warn => wasmcm_guest::Level::Warn,
            v3_log::Level::Error => wasmcm_guest::Level::Error,
        };
        self.write_log(level, message);
        Ok(())
    }
}
