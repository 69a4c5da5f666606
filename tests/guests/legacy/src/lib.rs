//! A plugin of contract 0.3.0, built straight from the frozen `wit/0.3.0/reconciler.wit` with
//! wit-bindgen (the SDK has moved on): what a plugin built before 0.4.0 is. It reconciles
//! ConfigMaps: reads its key through all three cache reads, logs, and answers with an update
//! stamping the ConfigMap, a delete of `<name>-old`, an event and a requeue, so the host's tests
//! see every 0.3.0 call and intent served.

#[cfg(target_arch = "wasm32")]
mod plugin {
    wit_bindgen::generate!({ path: "../../../wit/0.3.0", world: "plugin" });

    use exports::wasmcm::reconciler::controller::{
        Changes, DeleteTarget, Error, Event, EventType, Guest, Intent, Outcome, PluginInfo, Request, Watch,
    };
    use wasmcm::reconciler::types::{Kind, ObjectRef, Selector};
    use wasmcm::reconciler::{cache, log};

    fn config_map() -> Kind {
        Kind { api_version: "v1".into(), kind: "ConfigMap".into() }
    }

    struct Legacy;

    impl Guest for Legacy {
        fn describe() -> PluginInfo {
            PluginInfo {
                name: "legacy".into(),
                version: "0.3.0-plugin".into(),
                primary: config_map(),
                owns: vec![],
                watches: vec![Watch {
                    kind: Kind { api_version: "v1".into(), kind: "Secret".into() },
                    wake_on: Changes::DELETED,
                }],
                writes: vec![config_map()],
                contract: "0.3.0".into(),
            }
        }

        fn reconcile(request: Request) -> Result<Outcome, Error> {
            let (namespace, name) = (request.namespace, request.name);
            let Some(json) = cache::get(&config_map(), &namespace, &name) else {
                return Ok(Outcome { batches: vec![], requeue_after_ms: None });
            };
            let everything = Selector { match_labels: vec![], match_expressions: vec![] };
            let listed = cache::list(&config_map(), &namespace, &everything).len();
            let controlled = cache::list_controlled(&config_map(), &namespace, "nobody", true).len();
            log::log(log::Level::Info, &format!("legacy saw {listed} listed, {controlled} controlled or orphans"));
            let mut object: serde_json::Value =
                serde_json::from_str(&json).map_err(|e| Error { message: e.to_string(), retryable: false })?;
            object["data"] = serde_json::json!({"seen-by": "legacy 0.3.0", "listed": listed.to_string()});
            let me = ObjectRef { kind: config_map(), namespace: namespace.clone(), name: name.clone() };
            let old = ObjectRef { kind: config_map(), namespace, name: format!("{name}-old") };
            Ok(Outcome {
                batches: vec![
                    vec![Intent::Update(object.to_string())],
                    vec![
                        Intent::Delete(DeleteTarget { target: old, uid: None }),
                        Intent::Event(Event {
                            regarding: me,
                            event_type: EventType::Normal,
                            reason: "Legacy".into(),
                            message: "reconciled by a 0.3.0 plugin".into(),
                        }),
                    ],
                ],
                requeue_after_ms: Some(1500),
            })
        }
    }

    export!(Legacy);
}
