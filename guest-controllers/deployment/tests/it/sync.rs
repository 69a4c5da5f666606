//! Table tests of the shared sync steps, natively: ReplicaSet discovery and adoption, hash
//! collisions, proportional scaling, paused deployments, history cleanup, deletion.

use crate::common::*;
use serde_json::{Value, json};
use wasmcm_deployment::fixtures::{deployment, replica_set, request};
use wasmcm_guest::{EventType, Intent};

fn template(image: &str) -> Value {
    json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}})
}

/// A ReplicaSet last sized for a deployment of `desired` replicas (max `max`).
fn sized(name: &str, image: &str, revision: i64, replicas: i32, desired: i32, max: i32) -> Value {
    replica_set(
        name,
        image,
        revision,
        replicas,
        json!({"metadata": {"annotations": {"deployment.kubernetes.io/desired-replicas": desired.to_string(),
                                            "deployment.kubernetes.io/max-replicas": max.to_string()}}}),
    )
}

/// (what, new deployment size, previous size, new RS replicas, old RS replicas, expected new,
/// expected olds)
type ScaleCase<'a> = (&'a str, i32, i32, i32, &'a [i32], i32, &'a [i32]);

#[test]
fn proportional_scaling_as_upstream() {
    // maxSurge and maxUnavailable 0 (unavailable resolves to 1), as upstream's TestScale;
    // every ReplicaSet was sized for the previous size.
    let cases: &[ScaleCase] = &[
        ("5 -> 10", 10, 5, 2, &[3], 4, &[6]),
        ("5 -> 3", 3, 5, 2, &[3], 1, &[2]),
        ("9 -> 4", 4, 9, 8, &[1], 4, &[0]),
        ("7 -> 10", 10, 7, 2, &[3, 2], 3, &[4, 3]),
        ("13 -> 8", 8, 13, 2, &[8, 3], 1, &[5, 2]),
        ("leftover 3 -> 4 goes to the newest of equals", 4, 3, 1, &[1, 1], 2, &[1, 1]),
        ("to zero", 0, 5, 2, &[3], 0, &[0]),
    ];
    for (what, replicas, previous, new, olds, want_new, want_olds) in cases {
        let mut objects = vec![deployment(
            *replicas,
            json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}},
                            "template": template("nginx:new")},
                   "status": {"replicas": previous}}),
        )];
        objects.push(sized("web-new", "nginx:new", 10, *new, *previous, *previous));
        for (i, old) in olds.iter().enumerate() {
            objects.push(sized(
                &format!("web-old{i}"),
                &format!("nginx:{i}"),
                1 + i as i64,
                *old,
                *previous,
                *previous,
            ));
        }
        let o = reconcile(&objects);
        let s = sizes(&o);
        let size = |name: &str, current: i32| s.get(name).copied().unwrap_or(i64::from(current));
        assert_eq!(size("web-new", *new), i64::from(*want_new), "{what}: {s:?}");
        for (i, want) in want_olds.iter().enumerate() {
            assert_eq!(size(&format!("web-old{i}"), olds[i]), i64::from(*want), "{what}: {s:?}");
        }
        // Every active ReplicaSet is re-annotated with the size it now serves.
        for rs in updates(&o) {
            assert_eq!(
                rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"],
                replicas.to_string()
            );
        }
        assert!(creates(&o).is_empty(), "{what}: a scaling event rolls nothing out");
    }
}

#[test]
fn one_active_replica_set_takes_the_whole_size_and_a_saturated_one_retires_the_rest() {
    let d = deployment(6, json!({}));
    let o = reconcile(&[d.clone(), sized("web-1", "nginx:1", 1, 3, 3, 4)]);
    assert_eq!(sizes(&o), [("web-1".to_string(), 6)].into());
    assert_eq!(messages(&o), vec!["Scaled up replica set web-1 from 3 to 6"]);

    // The new ReplicaSet owns all 6 desired replicas, available: old ones go to zero.
    let d = deployment(6, json!({"spec": {"template": template("nginx:2")}}));
    let o = reconcile(&[
        d,
        sized("web-1", "nginx:1", 1, 1, 5, 6),
        replica_set(
            "web-2",
            "nginx:2",
            2,
            6,
            json!({"metadata": {"annotations": {"deployment.kubernetes.io/desired-replicas": "6",
                                                "deployment.kubernetes.io/max-replicas": "8"}}}),
        ),
    ]);
    assert_eq!(sizes(&o)["web-1"], 0);
}

#[test]
fn replica_sets_are_adopted_and_released_by_selector_never_stolen() {
    let orphan = replica_set("web-1", "nginx:1", 1, 1, json!({"metadata": {"ownerReferences": null}}));
    let foreign = replica_set(
        "web-2",
        "nginx:2",
        2,
        1,
        json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "other",
                                                  "uid": "other-uid", "controller": true}]}}),
    );
    let unmatched = replica_set("api-1", "nginx:1", 1, 1, json!({"metadata": {"labels": {"app": "api"}}}));
    let o = reconcile(&[deployment(1, json!({})), orphan, foreign, unmatched]);
    let written: Vec<Value> = updates(&o);
    let by_name = |n: &str| written.iter().find(|v| v["metadata"]["name"] == n).cloned();
    let adopted = by_name("web-1").expect("orphan adopted");
    assert_eq!(adopted["metadata"]["ownerReferences"][0]["uid"], "d-uid-web");
    assert_eq!(adopted["metadata"]["ownerReferences"][0]["controller"], true);
    assert!(by_name("web-2").is_none(), "one controlled by another owner is left alone");
    let released = by_name("api-1").expect("no longer matching: released");
    assert!(released["metadata"].get("ownerReferences").is_none_or(|r| r == &json!([])), "{released}");
    // The adopted orphan has the deployment's template: it is the new ReplicaSet, none created.
    assert!(creates(&o).is_empty());
}

#[test]
fn a_replica_set_made_by_kube_controller_manager_is_taken_over_as_it_is() {
    // KCM's hash differs from ours; the template (ignoring the hash label) is what counts.
    let kcm = replica_set("web-5d8b4c7f9", "nginx:1", 1, 3, json!({}));
    let d = deployment(
        3,
        json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision": "1"}},
                                 "status": {"conditions": [{"type": "Progressing", "status": "True",
                                     "reason": "NewReplicaSetAvailable", "message": "done",
                                     "lastUpdateTime": "2026-06-01T11:00:00Z",
                                     "lastTransitionTime": "2026-06-01T11:00:00Z"}],
                                     "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
                                     "availableReplicas": 3}}),
    );
    let o = reconcile(&[d, kcm]);
    assert!(creates(&o).is_empty() && updates(&o).is_empty() && deletes(&o).is_empty(), "{o:?}");
}

#[test]
fn a_name_taken_by_another_template_is_a_hash_collision() {
    let d = deployment(2, json!({}));
    let name = creates(&reconcile(std::slice::from_ref(&d)))[0]["metadata"]["name"].as_str().unwrap().to_string();
    // Same name, another template, not ours.
    let squatter = replica_set(
        &name,
        "other",
        1,
        0,
        json!({"metadata": {"ownerReferences": null,
        "labels": {"app": "squatter"}}}),
    );
    let o = reconcile(&[d.clone(), squatter.clone()]);
    assert!(creates(&o).is_empty());
    let status = status_write(&o).expect("collision counted");
    assert_eq!(status["status"]["collisionCount"], 1);
    // Counted, the next attempt gets another name.
    let mut bumped = d;
    bumped["status"]["collisionCount"] = 1.into();
    let created = creates(&reconcile(&[bumped, squatter]));
    assert_eq!(created.len(), 1);
    assert_ne!(created[0]["metadata"]["name"], name.as_str());
}

#[test]
fn an_empty_selector_selects_nothing_and_is_reported() {
    let d = deployment(3, json!({"spec": {"selector": {"matchLabels": null}}, "metadata": {"generation": 2}}));
    let o = reconcile(&[d, replica_set("web-1", "nginx:1", 1, 1, json!({"metadata": {"ownerReferences": null}}))]);
    let e = events(&o);
    assert_eq!(e.len(), 1);
    assert_eq!((e[0].event_type, e[0].reason.as_str()), (EventType::Warning, "SelectingAll"));
    assert!(creates(&o).is_empty() && updates(&o).is_empty());
    assert_eq!(status_write(&o).unwrap()["status"]["observedGeneration"], 2);
}

#[test]
fn an_invalid_selector_is_a_permanent_error() {
    let d = deployment(1, json!({"spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}}));
    let err = <wasmcm_deployment::DeploymentController as wasmcm_guest::Controller>::reconcile(
        &request("web"),
        &wasmcm_deployment::fixtures::cache(&[d]),
    )
    .unwrap_err();
    assert!(!err.retryable && err.message.contains("invalid selector"), "{err:?}");
}

#[test]
fn paused_deployments_scale_but_roll_nothing_out() {
    let d = deployment(
        5,
        json!({"spec": {"paused": true, "template": template("nginx:2")},
               "metadata": {"annotations": {"deployment.kubernetes.io/revision": "1"}}}),
    );
    let o = reconcile(&[d, sized("web-1", "nginx:1", 1, 3, 3, 4)]);
    assert!(creates(&o).is_empty(), "no new ReplicaSet while paused");
    assert_eq!(sizes(&o), [("web-1".to_string(), 5)].into());
    let progressing = condition(&status_write(&o).unwrap(), "Progressing");
    assert_eq!(
        (progressing["status"].as_str(), progressing["reason"].as_str()),
        (Some("Unknown"), Some("DeploymentPaused"))
    );

    // Resumed: the condition says so, and the rollout starts.
    let resumed = deployment(
        3,
        json!({"spec": {"template": template("nginx:2")},
               "status": {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                          "conditions": [{"type": "Progressing", "status": "Unknown", "reason": "DeploymentPaused",
                   "message": "Deployment is paused", "lastUpdateTime": "2026-06-01T11:00:00Z",
                   "lastTransitionTime": "2026-06-01T11:00:00Z"}]}}),
    );
    let o = reconcile(&[resumed, sized("web-1", "nginx:1", 1, 3, 3, 4)]);
    assert_eq!(creates(&o).len(), 1);
    // Created in the same sync, so NewReplicaSetCreated replaces DeploymentResumed.
    assert_eq!(condition(&status_write(&o).unwrap(), "Progressing")["reason"], "NewReplicaSetCreated");
}

#[test]
fn history_beyond_the_limit_is_deleted_oldest_revision_first() {
    // Old history is only cleaned up once a rollout is complete.
    let d = deployment(
        2,
        json!({"spec": {"revisionHistoryLimit": 2, "template": template("nginx:9")},
               "status": {"replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}}),
    );
    let mut objects = vec![d, replica_set("web-9", "nginx:9", 9, 2, json!({}))];
    for r in 1..=5 {
        objects.push(replica_set(&format!("web-{r}"), &format!("nginx:{r}"), r, 0, json!({"status": {"replicas": 0}})));
    }
    // web-2 still has a pod: kept, and it still counts against the limit (as upstream).
    objects[3]["status"]["replicas"] = 1.into();
    let o = reconcile(&objects);
    assert_eq!(deletes(&o), vec!["web-1", "web-3"]);
    // Deletes carry the uid as a precondition.
    let uid = o.intents().find_map(|i| if let Intent::Delete(d) = i { d.uid.clone() } else { None });
    assert_eq!(uid.as_deref(), Some("uid-web-1"));

    // Not while a rollout is under way.
    let mut rolling = objects.clone();
    rolling[0]["status"]["updatedReplicas"] = 1.into();
    assert!(deletes(&reconcile(&rolling)).is_empty());
    // A limit of none keeps everything.
    objects[0]["spec"].as_object_mut().unwrap().remove("revisionHistoryLimit");
    assert!(deletes(&reconcile(&objects)).is_empty());
}

#[test]
fn a_deployment_being_deleted_only_gets_status() {
    let d = deployment(
        3,
        json!({"metadata": {"deletionTimestamp": "2026-06-01T11:59:00Z"},
                                 "spec": {"template": template("nginx:2")}}),
    );
    let o = reconcile(&[d, replica_set("web-1", "nginx:1", 1, 3, json!({}))]);
    assert!(creates(&o).is_empty() && updates(&o).is_empty());
    assert_eq!(status_write(&o).unwrap()["status"]["replicas"], 3);
}

#[test]
fn the_new_replica_set_follows_min_ready_seconds_and_change_cause_keeping_unknown_fields() {
    let d = deployment(
        3,
        json!({"spec": {"minReadySeconds": 10},
               "metadata": {"annotations": {"kubernetes.io/change-cause": "kubectl set image",
                                            "deployment.kubernetes.io/revision": "1"}}}),
    );
    let rs = replica_set("web-1", "nginx:1", 1, 3, json!({"spec": {"futureField": {"x": 1}}}));
    let o = reconcile(&[d, rs]);
    let up = updates(&o);
    assert_eq!(up.len(), 1);
    assert_eq!(up[0]["spec"]["minReadySeconds"], 10);
    assert_eq!(up[0]["metadata"]["annotations"]["kubernetes.io/change-cause"], "kubectl set image");
    assert_eq!(up[0]["spec"]["futureField"], json!({"x": 1}));
}

#[test]
fn a_failed_create_is_reported_before_it_is_retried() {
    let d = deployment(3, json!({}));
    let name = creates(&reconcile(std::slice::from_ref(&d)))[0]["metadata"]["name"].as_str().unwrap().to_string();
    let mut req = request("web");
    req.previous_failure = Some(format!("create apps/v1 ReplicaSet default/{name}: exceeded quota"));
    let o = reconcile_req(&req, &[d]);
    // The status saying so is the first batch: a create that keeps failing cannot hold it back.
    let Intent::UpdateStatus(first) = &o.batches[0][0] else { panic!("status first: {o:?}") };
    let progressing = condition(&parse(first), "Progressing");
    assert_eq!(
        (progressing["status"].as_str(), progressing["reason"].as_str()),
        (Some("False"), Some("ReplicaSetCreateError"))
    );
    assert!(progressing["message"].as_str().unwrap().contains("exceeded quota"));
    assert_eq!(creates(&o).len(), 1, "and the create is tried again");
    assert!(events(&o).iter().any(|e| e.reason == "ReplicaSetCreateError" && e.event_type == EventType::Warning));
}

#[test]
fn a_broken_replica_set_in_the_cache_is_named() {
    let broken = replica_set("web-1", "nginx:1", 1, 1, json!({"spec": {"replicas": "three"}}));
    let err = <wasmcm_deployment::DeploymentController as wasmcm_guest::Controller>::reconcile(
        &request("web"),
        &wasmcm_deployment::fixtures::cache(&[deployment(1, json!({})), broken]),
    )
    .unwrap_err();
    assert!(err.retryable && err.message.contains("ReplicaSet default/web-1"), "{err:?}");
}

#[test]
fn a_missing_deployment_is_nothing_to_do() {
    assert_eq!(reconcile(&[]), wasmcm_guest::Outcome::default());
}

#[test]
fn each_scaling_event_follows_its_own_write() {
    // Proportional scaling touches both ReplicaSets: a failure of the second write must not
    // lose the first one's event, and no event may precede its write.
    let objects = [
        deployment(
            10,
            json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
                                       "template": template("nginx:new")}}),
        ),
        sized("web-new", "nginx:new", 2, 2, 4, 5),
        sized("web-old", "nginx:old", 1, 3, 4, 5),
    ];
    let o = reconcile(&objects);
    let mut pending: Option<String> = None;
    let mut seen = 0;
    for batch in &o.batches {
        for intent in batch {
            match intent {
                Intent::Update(s) => {
                    assert!(pending.is_none(), "an update's event is recorded before the next write");
                    assert_eq!(batch.len(), 1, "one ReplicaSet write per batch");
                    pending = Some(parse(s)["metadata"]["name"].as_str().unwrap().to_string());
                }
                Intent::Event(e) => {
                    let name = pending.take().expect("an event right after its write");
                    assert!(e.message.contains(&format!("replica set {name} ")), "{}", e.message);
                    seen += 1;
                }
                _ => {}
            }
        }
    }
    assert_eq!(seen, 2, "{o:?}");
}

#[test]
fn history_cleanup_as_upstream() {
    for case in wasmcm_deployment::fixtures::cleanup_cases() {
        assert_eq!(deletes(&reconcile(&case.objects)), case.want, "{}", case.what);
    }
}

/// A ReplicaSet's size after `o`: written, or as it was.
fn size_after(objects: &[Value], o: &wasmcm_guest::Outcome, name: &str) -> i64 {
    sizes(o).get(name).copied().unwrap_or_else(|| {
        let rs = objects.iter().find(|v| v["kind"] == "ReplicaSet" && v["metadata"]["name"] == name);
        rs.and_then(|rs| rs["spec"]["replicas"].as_i64()).expect("the ReplicaSet exists")
    })
}

#[test]
fn damaged_max_replicas_annotations_as_upstream() {
    for case in wasmcm_deployment::fixtures::damaged_annotation_cases() {
        let o = reconcile(&case.objects);
        for (name, want) in &case.want {
            assert_eq!(
                size_after(&case.objects, &o, name),
                i64::from(*want),
                "{}: {name} in {:?}",
                case.what,
                sizes(&o)
            );
        }
    }
}

/// Whatever the cache holds — sizes, strategies, annotations missing, spoiled, zero, negative,
/// huge — one sync never sizes a ReplicaSet above max(its size before, replicas + maxSurge).
#[test]
fn no_input_scales_a_replica_set_past_replicas_plus_max_surge() {
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let annotations = ["", "0", "1", "2", "-3", "many", "+4", "2147483647", "2147483648", "99999999999"];
    let intstrs = [json!(0), json!(1), json!(3), json!("25%"), json!("50%"), json!("100%")];
    let (mut scaled, mut rounds) = (0, 0);
    for _ in 0..4000 {
        let replicas = if next(20) == 0 { next(60_000) as i32 } else { next(60) as i32 };
        let strategy = if next(8) == 0 {
            json!({"type": "Recreate", "rollingUpdate": null})
        } else {
            json!({"rollingUpdate": {"maxSurge": intstrs[next(6) as usize], "maxUnavailable": intstrs[next(6) as usize]}})
        };
        let status = if next(3) == 0 { Value::Null } else { json!(next(200)) };
        let mut objects = vec![deployment(
            replicas,
            json!({"spec": {"strategy": strategy, "template": template("nginx:new")},
                   "status": {"replicas": status}}),
        )];
        for i in 0..1 + next(4) {
            let image = if i == 0 && next(2) == 0 { "nginx:new".to_string() } else { format!("nginx:{i}") };
            let size = if next(10) == 0 { next(100_000) as i32 } else { next(80) as i32 };
            // Absent, a plausible size, or one of the spoiled values.
            let mut pick = || match next(12) as usize {
                0 | 1 => Value::Null,
                n => match annotations[n - 2] {
                    "" => json!(next(120).to_string()),
                    spoiled => json!(spoiled),
                },
            };
            let (desired, max) = (pick(), pick());
            objects.push(replica_set(
                &format!("web-{i}"),
                &image,
                1 + i as i64,
                size,
                json!({"metadata": {"annotations": {"deployment.kubernetes.io/desired-replicas": desired,
                                                    "deployment.kubernetes.io/max-replicas": max}}}),
            ));
        }
        let d: k8s_openapi::api::apps::v1::Deployment = serde_json::from_value(objects[0].clone()).unwrap();
        let allowed = i64::from(replicas) + i64::from(wasmcm_deployment::util::max_surge(&d));
        let Ok(o) = <wasmcm_deployment::DeploymentController as wasmcm_guest::Controller>::reconcile(
            &request("web"),
            &wasmcm_deployment::fixtures::cache(&objects),
        ) else {
            continue;
        };
        rounds += 1;
        for (name, size) in sizes(&o) {
            let before = objects
                .iter()
                .find(|v| v["metadata"]["name"] == name.as_str())
                .and_then(|rs| rs["spec"]["replicas"].as_i64())
                .unwrap_or(0);
            scaled += 1;
            assert!(
                size <= before.max(allowed),
                "{name} sized {size} (was {before}) where the deployment allows {allowed}:\n{}",
                serde_json::to_string_pretty(&objects).unwrap()
            );
            assert!(size >= 0, "{name} sized {size}");
        }
    }
    assert!(rounds > 3000 && scaled > 1000, "the inputs exercised too little: {rounds} syncs, {scaled} sizes");
}

/// Upstream's `cleanupDeployment` skips a ReplicaSet whose spec change its controller has not
/// observed (`generation > status.observedGeneration`), and a scale-down is such a change: the
/// update that scales an old ReplicaSet to 0 returns it with a new generation, so the same sync
/// never deletes it. Here a paused deployment's scaling event sizes the old ReplicaSet (which has
/// no pods, all observed) to 0, and history cleanup follows in the same sync.
#[test]
fn an_old_replica_set_scaled_down_in_this_sync_is_not_deleted_in_it() {
    let d = deployment(
        3,
        json!({"spec": {"paused": true, "revisionHistoryLimit": 0, "template": template("nginx:9")},
               "status": {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}}),
    );
    let new = sized("web-9", "nginx:9", 9, 3, 3, 4);
    let mut new = new;
    new["status"] = json!({"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                           "observedGeneration": 1});
    // Sized for the previous size; its pod is gone (status 0), everything observed.
    let mut old = sized("web-1", "nginx:1", 1, 1, 2, 3);
    old["status"] = json!({"replicas": 0, "observedGeneration": 1});
    let o = reconcile(&[d, new, old]);
    assert_eq!(sizes(&o).get("web-1"), Some(&0), "scaled down: {o:?}");
    assert!(deletes(&o).is_empty(), "deleted in the sync that scaled it down: {:?}", deletes(&o));

    // Once its controller has observed the scale-down, the next sync deletes it.
    let d = deployment(
        3,
        json!({"spec": {"paused": true, "revisionHistoryLimit": 0, "template": template("nginx:9")},
               "status": {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}}),
    );
    let mut new = sized("web-9", "nginx:9", 9, 3, 3, 4);
    new["status"] = json!({"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                           "observedGeneration": 1});
    let mut observed = sized("web-1", "nginx:1", 1, 0, 3, 4);
    observed["metadata"]["generation"] = json!(2);
    observed["status"] = json!({"replicas": 0, "observedGeneration": 2});
    assert_eq!(deletes(&reconcile(&[d, new, observed])), ["web-1"]);
}
