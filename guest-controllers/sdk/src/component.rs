//! The thin component adapter: generated bindings for `wit/reconciler.wit`, conversions to the
//! plain types of this crate, and the panic hook. A plugin crate needs only
//! `wasmcm_guest::export_plugin!(MyController);`.

use std::marker::PhantomData;

#[doc(hidden)]
pub use wit_bindgen as __wit_bindgen;

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "plugin",
        pub_export_macro: true,
        export_macro_name: "__export_plugin_bindings",
        default_bindings_module: "wasmcm_guest::component::bindings",
        runtime_path: "wasmcm_guest::component::__wit_bindgen::rt",
    });
}

use bindings::exports::wasmcm::reconciler::controller as wit;
use bindings::wasmcm::reconciler::{cache, log as wit_log, types};

use crate::{Cache, Controller, EventType, Intent, Kind, Level, Operator, PatchType, Propagation, Selector};

pub(crate) fn log(level: Level, message: &str) {
    let level = match level {
        Level::Trace => wit_log::Level::Trace,
        Level::Debug => wit_log::Level::Debug,
        Level::Info => wit_log::Level::Info,
        Level::Warn => wit_log::Level::Warn,
        Level::Error => wit_log::Level::Error,
    };
    wit_log::log(level, message);
}

/// There is no stderr in a component: report panics through the log import so the host can
/// say why the call trapped.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| log(Level::Error, &format!("panicked: {info}"))));
    });
}

fn kind_to_wit(k: &Kind) -> types::Kind {
    types::Kind { api_version: k.api_version.clone(), kind: k.kind.clone() }
}

fn ref_to_wit(r: &crate::ObjectRef) -> types::ObjectRef {
    types::ObjectRef { kind: kind_to_wit(&r.kind), namespace: r.namespace.clone(), name: r.name.clone() }
}

/// The host's cache, seen through the plain [`Cache`] trait.
struct HostCache;

impl Cache for HostCache {
    fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<String> {
        cache::get(&kind_to_wit(kind), namespace, name)
    }

    fn list(&self, kind: &Kind, namespace: &str, selector: &Selector) -> Vec<String> {
        let selector = types::Selector {
            match_labels: selector.match_labels.clone(),
            match_expressions: selector
                .match_expressions
                .iter()
                .map(|r| types::Requirement {
                    key: r.key.clone(),
                    operator: match r.operator {
                        Operator::In => types::Operator::In,
                        Operator::NotIn => types::Operator::NotIn,
                        Operator::Exists => types::Operator::Exists,
                        Operator::DoesNotExist => types::Operator::DoesNotExist,
                    },
                    values: r.values.clone(),
                })
                .collect(),
        };
        cache::list(&kind_to_wit(kind), namespace, &selector)
    }

    fn list_controlled(&self, kind: &Kind, namespace: &str, owner_uid: &str, orphans: bool) -> Vec<String> {
        cache::list_controlled(&kind_to_wit(kind), namespace, owner_uid, orphans)
    }
}

/// Implements the exported interface for any [`Controller`].
#[doc(hidden)]
pub struct Plugin<C>(PhantomData<C>);

impl<C: Controller> wit::Guest for Plugin<C> {
    fn describe() -> wit::PluginInfo {
        install_panic_hook();
        let info = C::describe();
        let kinds = |ks: &[Kind]| ks.iter().map(kind_to_wit).collect();
        wit::PluginInfo {
            name: info.name,
            version: info.version,
            primary: kind_to_wit(&info.primary),
            owns: kinds(&info.owns),
            watches: info
                .watches
                .iter()
                .map(|w| {
                    let mut wake_on = wit::Changes::empty();
                    for (on, flag) in [
                        (w.wake_on.created, wit::Changes::CREATED),
                        (w.wake_on.updated, wit::Changes::UPDATED),
                        (w.wake_on.deleted, wit::Changes::DELETED),
                    ] {
                        if on {
                            wake_on = wake_on | flag;
                        }
                    }
                    wit::Watch { kind: kind_to_wit(&w.kind), wake_on }
                })
                .collect(),
            writes: kinds(&info.writes),
            contract: info.contract,
        }
    }

    fn reconcile(request: wit::Request) -> Result<wit::Outcome, wit::Error> {
        install_panic_hook();
        let request = crate::Request {
            namespace: request.namespace,
            name: request.name,
            now: crate::Instant { seconds: request.now.seconds, nanoseconds: request.now.nanoseconds },
            previous_failure: request.previous_failure,
            settings: request.settings,
        };
        match C::reconcile(&request, &HostCache) {
            Ok(outcome) => Ok(wit::Outcome {
                batches: outcome.batches.into_iter().map(|b| b.into_iter().map(intent_to_wit).collect()).collect(),
                requeue_after_ms: outcome.requeue_after_ms,
            }),
            Err(e) => Err(wit::Error { message: e.message, retryable: e.retryable }),
        }
    }
}

fn intent_to_wit(intent: Intent) -> wit::Intent {
    match intent {
        Intent::Create(o) => wit::Intent::Create(o),
        Intent::Update(o) => wit::Intent::Update(o),
        Intent::UpdateStatus(o) => wit::Intent::UpdateStatus(o),
        Intent::Delete(d) => wit::Intent::Delete(wit::DeleteTarget {
            target: ref_to_wit(&d.target),
            uid: d.uid,
            propagation: d.propagation.map(|p| match p {
                Propagation::Orphan => wit::Propagation::Orphan,
                Propagation::Background => wit::Propagation::Background,
                Propagation::Foreground => wit::Propagation::Foreground,
            }),
        }),
        Intent::Patch(p) => wit::Intent::Patch(wit::Patch {
            target: ref_to_wit(&p.target),
            patch_type: match p.patch_type {
                PatchType::Json => wit::PatchType::Json,
                PatchType::Merge => wit::PatchType::Merge,
                PatchType::Strategic => wit::PatchType::Strategic,
            },
            body: p.body,
            resource_version: p.resource_version,
            status: p.status,
        }),
        Intent::Event(e) => wit::Intent::Event(wit::Event {
            regarding: ref_to_wit(&e.regarding),
            event_type: match e.event_type {
                EventType::Normal => wit::EventType::Normal,
                EventType::Warning => wit::EventType::Warning,
            },
            reason: e.reason,
            message: e.message,
        }),
    }
}

#[global_allocator]
static ALLOCATOR: crate::arena::Arena = crate::arena::Arena::new();

/// Exports a [`Controller`] as the component's `controller` interface. The documentation of
/// the native build describes it: there, the same call only checks its argument.
#[macro_export]
macro_rules! export_plugin {
    ($controller:ty) => {
        type __WasmcmPlugin = $crate::component::Plugin<$controller>;
        $crate::component::bindings::__export_plugin_bindings!(__WasmcmPlugin with_types_in $crate::component::bindings);
    };
}
