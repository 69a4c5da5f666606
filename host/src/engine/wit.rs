//! The WIT world's bindings (`wit/`, world `plugin`), and the conversions of what a plugin
//! returns (its `describe()`, its outcome) into the SDK's types (`wasmcm_guest`).
//!
//! It owns the generated types only; what a call may do with them is `call`'s, `cache_view`'s
//! and `log`'s.

use wasmcm_guest::Kind;

pub(super) mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "plugin",
        imports: { default: trappable },
    });
}

pub(super) use bindings::exports::wasmcm::reconciler::controller as wit;
pub(super) use bindings::wasmcm::reconciler::{cache as wit_cache, log as wit_log, types as wit_types};

pub(super) fn kind_from_wit(k: wit_types::Kind) -> Kind {
    Kind { api_version: k.api_version, kind: k.kind }
}

fn ref_from_wit(r: wit_types::ObjectRef) -> wasmcm_guest::ObjectRef {
    wasmcm_guest::ObjectRef { kind: kind_from_wit(r.kind), namespace: r.namespace, name: r.name }
}

pub(super) fn plugin_info_from_wit(i: wit::PluginInfo) -> wasmcm_guest::PluginInfo {
    let kinds = |ks: Vec<wit_types::Kind>| ks.into_iter().map(kind_from_wit).collect();
    wasmcm_guest::PluginInfo {
        name: i.name,
        version: i.version,
        primary: kind_from_wit(i.primary),
        owns: kinds(i.owns),
        watches: i
            .watches
            .into_iter()
            .map(|w| wasmcm_guest::Watch {
                kind: kind_from_wit(w.kind),
                wake_on: wasmcm_guest::Changes {
                    created: w.wake_on.contains(wit::Changes::CREATED),
                    updated: w.wake_on.contains(wit::Changes::UPDATED),
                    deleted: w.wake_on.contains(wit::Changes::DELETED),
                },
            })
            .collect(),
        writes: kinds(i.writes),
        contract: i.contract,
    }
}

pub(super) fn outcome_from_wit(o: wit::Outcome) -> wasmcm_guest::Outcome {
    use wasmcm_guest::Intent;
    let intent = |i: wit::Intent| match i {
        wit::Intent::Create(o) => Intent::Create(o),
        wit::Intent::Update(o) => Intent::Update(o),
        wit::Intent::UpdateStatus(o) => Intent::UpdateStatus(o),
        wit::Intent::Delete(d) => Intent::Delete(wasmcm_guest::DeleteTarget {
            target: ref_from_wit(d.target),
            uid: d.uid,
            propagation: d.propagation.map(|p| match p {
                wit::Propagation::Orphan => wasmcm_guest::Propagation::Orphan,
                wit::Propagation::Background => wasmcm_guest::Propagation::Background,
                wit::Propagation::Foreground => wasmcm_guest::Propagation::Foreground,
            }),
        }),
        wit::Intent::Patch(p) => Intent::Patch(wasmcm_guest::Patch {
            target: ref_from_wit(p.target),
            patch_type: match p.patch_type {
                wit::PatchType::Json => wasmcm_guest::PatchType::Json,
                wit::PatchType::Merge => wasmcm_guest::PatchType::Merge,
                wit::PatchType::Strategic => wasmcm_guest::PatchType::Strategic,
            },
            body: p.body,
            resource_version: p.resource_version,
            status: p.status,
        }),
        wit::Intent::Event(e) => Intent::Event(wasmcm_guest::Event {
            regarding: ref_from_wit(e.regarding),
            event_type: match e.event_type {
                wit::EventType::Normal => wasmcm_guest::EventType::Normal,
                wit::EventType::Warning => wasmcm_guest::EventType::Warning,
            },
            reason: e.reason,
            message: e.message,
        }),
    };
    wasmcm_guest::Outcome {
        batches: o.batches.into_iter().map(|b| b.into_iter().map(intent).collect()).collect(),
        requeue_after_ms: o.requeue_after_ms,
    }
}
