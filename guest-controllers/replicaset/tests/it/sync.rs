//! Table tests of one ReplicaSet sync, natively: what upstream `syncReplicaSet` would do.

use serde_json::{Value, json};
use wasmcm_guest::{Controller, Intent, Outcome, Request};
use wasmcm_replicaset::ReplicaSetController;
use wasmcm_replicaset::fixtures::{RS_UID, cache, now, pod, replica_set, request};
use wasmcm_replicaset::sync::BURST_REPLICAS;

fn reconcile(objects: &[Value]) -> Outcome {
    reconcile_req(&request("web"), objects)
}

fn reconcile_req(req: &Request, objects: &[Value]) -> Outcome {
    ReplicaSetController::reconcile(req, &cache(objects)).expect("reconcile succeeds")
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

fn batch_sizes(o: &Outcome, pred: impl Fn(&Intent) -> bool) -> Vec<usize> {
    o.batches.iter().map(|b| b.iter().filter(|i| pred(i)).count()).filter(|n| *n > 0).collect()
}

fn creates(o: &Outcome) -> Vec<Value> {
    o.intents().filter_map(|i| if let Intent::Create(s) = i { Some(parse(s)) } else { None }).collect()
}

fn deletes(o: &Outcome) -> Vec<String> {
    o.intents().filter_map(|i| if let Intent::Delete(d) = i { Some(d.target.name.clone()) } else { None }).collect()
}

fn updates(o: &Outcome) -> Vec<Value> {
    o.intents().filter_map(|i| if let Intent::Update(s) = i { Some(parse(s)) } else { None }).collect()
}

fn status_write(o: &Outcome) -> Option<Value> {
    o.intents().find_map(|i| if let Intent::UpdateStatus(s) = i { Some(parse(s)) } else { None })
}

#[test]
fn creates_missing_pods_in_slow_start_batches_from_the_template() {
    let o = reconcile(&[replica_set(7, json!({}))]);
    assert_eq!(batch_sizes(&o, |i| matches!(i, Intent::Create(_))), vec![1, 2, 4]);
    let pods = creates(&o);
    assert_eq!(pods.len(), 7);
    let p = &pods[0];
    assert_eq!(p["metadata"]["generateName"], "web-");
    assert_eq!(p["metadata"]["namespace"], "default");
    assert_eq!(p["metadata"]["labels"], json!({"app": "web", "tier": "front"}));
    assert_eq!(
        p["metadata"]["ownerReferences"],
        json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": RS_UID,
                "controller": true, "blockOwnerDeletion": true}])
    );
    assert_eq!(p["spec"]["containers"][0]["image"], "nginx");
    // Status comes last, counting the pods that existed when the sync began.
    let last = o.batches.last().unwrap();
    assert!(matches!(last.as_slice(), [Intent::UpdateStatus(_)]));
    assert_eq!(status_write(&o).unwrap()["status"]["replicas"], 0);
}

#[test]
fn at_most_burst_pods_per_sync() {
    let o = reconcile(&[replica_set(2000, json!({}))]);
    let sizes = batch_sizes(&o, |i| matches!(i, Intent::Create(_)));
    assert_eq!(sizes.iter().sum::<usize>(), BURST_REPLICAS);
    assert_eq!(sizes, vec![1, 2, 4, 8, 16, 32, 64, 128, 245]);
}

#[test]
fn steady_state_writes_nothing() {
    let rs = replica_set(
        2,
        json!({"status": {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2,
                          "availableReplicas": 2, "observedGeneration": 1}}),
    );
    let o = reconcile(&[rs, pod("a", json!({})), pod("b", json!({}))]);
    assert_eq!(o, Outcome::default());
}

#[test]
fn scale_down_deletes_the_pods_upstream_ranks_first_with_uid_preconditions() {
    let o = reconcile(&[
        replica_set(2, json!({})),
        pod("ready-old", json!({"metadata": {"creationTimestamp": "2026-05-01T00:00:00Z"}})),
        pod("ready-new", json!({"metadata": {"creationTimestamp": "2026-06-01T11:00:00Z"}})),
        pod("not-ready", json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})),
        pod("pending", json!({"status": {"phase": "Pending"}})),
        pod("unscheduled", json!({"spec": {"nodeName": null}, "status": {"phase": "Pending"}})),
    ]);
    assert_eq!(deletes(&o), vec!["unscheduled", "pending", "not-ready"]);
    assert_eq!(batch_sizes(&o, |i| matches!(i, Intent::Delete(_))), vec![3], "deletes run as one batch");
    let Some(Intent::Delete(d)) = o.intents().find(|i| matches!(i, Intent::Delete(_))) else { panic!() };
    assert_eq!(d.uid.as_deref(), Some("uid-unscheduled"));
}

#[test]
fn related_replica_sets_pods_rank_doubled_up_pods_first() {
    let owner = json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "dep", "controller": true}]);
    let rs = replica_set(1, json!({"metadata": {"ownerReferences": owner.clone()}}));
    let mut sibling = replica_set(1, json!({"metadata": {"name": "web-old", "uid": "old", "ownerReferences": owner}}));
    sibling["spec"]["selector"] = json!({"matchLabels": {"app": "web-old"}});
    let sibling_pod = pod(
        "old-1",
        json!({"metadata": {"labels": {"app": "web-old"}, "ownerReferences": []}, "spec": {"nodeName": "node-9"}}),
    );
    let o = reconcile(&[
        rs,
        sibling,
        sibling_pod,
        pod(
            "alone",
            json!({"spec": {"nodeName": "node-1"}, "metadata": {"creationTimestamp": "2026-06-01T11:30:00Z"}}),
        ),
        pod("crowded", json!({"spec": {"nodeName": "node-9"}})),
    ]);
    // Without the sibling's pod on node-9 the newer "alone" would go; co-location decides first.
    assert_eq!(deletes(&o), vec!["crowded"]);
}

#[test]
fn adopts_matching_orphans_releases_mismatches_and_ignores_others() {
    let o = reconcile(&[
        replica_set(3, json!({})),
        pod("owned", json!({})),
        pod("orphan", json!({"metadata": {"ownerReferences": null}})),
        pod("orphan-other-app", json!({"metadata": {"ownerReferences": null, "labels": {"app": "db"}}})),
        pod("relabelled", json!({"metadata": {"labels": {"app": "debug"}}})),
        pod(
            "foreign",
            json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                                 "name": "x", "uid": "other", "controller": true}]}}),
        ),
    ]);
    let ups = updates(&o);
    assert_eq!(ups.len(), 2, "{ups:#?}");
    let adopted = ups.iter().find(|u| u["metadata"]["name"] == "orphan").expect("orphan adopted");
    assert_eq!(adopted["metadata"]["ownerReferences"][0]["uid"], RS_UID);
    assert_eq!(adopted["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(adopted["metadata"]["resourceVersion"], "5", "update carries the precondition");
    let released = ups.iter().find(|u| u["metadata"]["name"] == "relabelled").expect("mismatch released");
    assert_eq!(released["metadata"]["ownerReferences"], json!([]));
    // Claims come first, alone in their batch; owned + adopted = 2 of 3, so one create follows.
    assert!(o.batches[0].iter().all(|i| matches!(i, Intent::Update(_))));
    assert_eq!(creates(&o).len(), 1);
    assert_eq!(status_write(&o).unwrap()["status"]["replicas"], 2);
}

#[test]
fn inactive_pods_do_not_count() {
    let o = reconcile(&[
        replica_set(2, json!({})),
        pod("running", json!({})),
        pod("failed", json!({"status": {"phase": "Failed"}})),
        pod("done", json!({"status": {"phase": "Succeeded"}})),
        pod("terminating", json!({"metadata": {"deletionTimestamp": "2026-06-01T11:00:00Z"}})),
    ]);
    assert_eq!(creates(&o).len(), 1);
    assert!(deletes(&o).is_empty());
}

#[test]
fn a_replica_set_being_deleted_is_not_managed_but_its_status_is() {
    let rs = replica_set(
        3,
        json!({"metadata": {"deletionTimestamp": "2026-06-01T11:00:00Z", "finalizers": ["foregroundDeletion"]}}),
    );
    let orphan = pod("orphan", json!({"metadata": {"ownerReferences": null}}));
    let o = reconcile(&[rs, pod("a", json!({})), orphan]);
    assert!(creates(&o).is_empty() && deletes(&o).is_empty() && updates(&o).is_empty(), "{o:#?}");
    assert_eq!(status_write(&o).unwrap()["status"]["replicas"], 1);
}

#[test]
fn status_counts_labels_readiness_and_availability() {
    let rs = replica_set(4, json!({"metadata": {"generation": 3}, "spec": {"minReadySeconds": 60}}));
    let mut not_fully_labeled = pod("c", json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}));
    not_fully_labeled["metadata"]["labels"] = json!({"app": "web"});
    let o = reconcile(&[
        rs,
        // Ready for two hours: available.
        pod("a", json!({})),
        // Ready 30 s ago: ready, not yet available. Then "c": not ready, and missing the
        // template's tier label: counted, not fully labelled.
        pod(
            "b",
            json!({"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-06-01T11:59:30Z"}]}}),
        ),
        not_fully_labeled,
    ]);
    let status = &status_write(&o).unwrap()["status"];
    assert_eq!(status["replicas"], 3);
    assert_eq!(status["fullyLabeledReplicas"], 2);
    assert_eq!(status["readyReplicas"], 2);
    assert_eq!(status["availableReplicas"], 1);
    assert_eq!(status["observedGeneration"], 3);
}

#[test]
fn requeues_after_min_ready_seconds_while_ready_pods_are_not_yet_available() {
    let recent = json!({"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-06-01T11:59:50Z"}]}});
    let rs = replica_set(1, json!({"spec": {"minReadySeconds": 30}}));
    let o = reconcile(&[rs.clone(), pod("a", recent)]);
    assert_eq!(o.requeue_after_ms, Some(30_000));
    let o = reconcile(&[rs, pod("a", json!({}))]);
    assert_eq!(o.requeue_after_ms, None, "available already");
}

#[test]
fn previous_failure_sets_replica_failure_and_success_clears_it() {
    let mut req = request("web");
    req.previous_failure = Some("pods \"web-x\" is forbidden: exceeded quota".into());
    let o = reconcile_req(&req, &[replica_set(2, json!({}))]);
    let conds = &status_write(&o).unwrap()["status"]["conditions"];
    assert_eq!(conds[0]["type"], "ReplicaFailure");
    assert_eq!(conds[0]["status"], "True");
    assert_eq!(conds[0]["reason"], "FailedCreate");
    assert_eq!(conds[0]["message"], "pods \"web-x\" is forbidden: exceeded quota");
    assert_eq!(conds[0]["lastTransitionTime"], now().timestamp().to_string());
    assert_eq!(creates(&o).len(), 2, "creation is still attempted");
    assert!(
        matches!(o.batches[0][..], [Intent::UpdateStatus(_)]),
        "the failure is recorded before creates that may fail again: {:?}",
        o.batches
    );
    assert!(o.requeue_after_ms.is_none());

    let failing = replica_set(
        1,
        json!({"status": {"replicas": 1, "fullyLabeledReplicas": 1, "readyReplicas": 1,
        "availableReplicas": 1, "observedGeneration": 1, "conditions": conds.clone()}}),
    );
    let o = reconcile(&[failing, pod("a", json!({}))]);
    let status = &status_write(&o).expect("condition removal is a status change")["status"];
    assert!(status.get("conditions").is_none(), "{status}");
}

#[test]
fn a_template_without_labels_is_reported_as_a_creation_failure() {
    let mut rs = replica_set(1, json!({}));
    rs["spec"]["template"]["metadata"] = json!({});
    let o = reconcile(&[rs]);
    assert!(creates(&o).is_empty());
    let cond = &status_write(&o).unwrap()["status"]["conditions"][0];
    assert_eq!(cond["reason"], "FailedCreate");
    assert_eq!(cond["message"], "unable to create pods, no labels");
}

#[test]
fn missing_replica_set_does_nothing_and_bad_selectors_are_errors() {
    assert_eq!(reconcile(&[pod("a", json!({}))]), Outcome::default());
    let mut bad = replica_set(1, json!({}));
    bad["spec"]["selector"] = json!({"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]});
    let err = ReplicaSetController::reconcile(&request("web"), &cache(&[bad])).unwrap_err();
    assert!(!err.retryable && err.message.contains("invalid selector"), "{err:?}");
    let mut empty = replica_set(1, json!({}));
    empty["spec"]["selector"] = json!({});
    let err = ReplicaSetController::reconcile(&request("web"), &cache(&[empty])).unwrap_err();
    assert!(err.message.contains("empty selector"), "{err:?}");
}

#[test]
fn unknown_fields_survive_writes() {
    let rs = replica_set(1, json!({"spec": {"futureKnob": 1}, "status": {"futureCount": 9}}));
    let orphan = pod("orphan", json!({"metadata": {"ownerReferences": null}, "spec": {"futurePodField": "x"}}));
    let o = reconcile(&[rs, orphan]);
    assert_eq!(updates(&o)[0]["spec"]["futurePodField"], "x");
    let st = status_write(&o).unwrap();
    assert_eq!(st["status"]["futureCount"], 9);
    assert_eq!(st["spec"]["futureKnob"], 1);
}
