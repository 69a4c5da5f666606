//! Table tests of one reconcile of the rollback plugin, natively, over the deployment crate's
//! fixtures: what is written to the Deployment (parsed from the update) and which event follows.

use serde_json::{Value, json};
use wasmcm_deployment::fixtures::{cache, deployment, merge, replica_set, request};
use wasmcm_guest::{Changes, Controller, EventType, Intent, Kind, Outcome, Watch};
use wasmcm_rollback::{
    FAILED_REVISION_ANNOTATION, LAST_AVAILABLE_REVISION_ANNOTATION, ON_FAILURE_ANNOTATION, RollbackController,
    TO_REVISION_ANNOTATION,
};

const REVISION: &str = "deployment.kubernetes.io/revision";
const CHANGE_CAUSE: &str = "kubernetes.io/change-cause";
const DEPRECATED: &str = "deprecated.deployment.rollback.to";

fn reconcile(objects: &[Value]) -> Outcome {
    RollbackController::reconcile(&request("web"), &cache(objects)).expect("reconcile succeeds")
}

/// What a reconcile should write: the deployment's image and exact annotations afterwards, and
/// the event recorded after the update, if any.
struct Want {
    image: &'static str,
    annotations: Value,
    event: Option<(EventType, &'static str, String)>,
}

fn rolled(image: &'static str, annotations: Value, event_type: EventType, reason: &'static str, message: &str) -> Want {
    Want { image, annotations, event: Some((event_type, reason, message.to_string())) }
}

/// The deployment as the update writes it, if the outcome is one update (then at most an event).
fn updated(o: &Outcome) -> Option<Value> {
    match o.batches.first()?.as_slice() {
        [Intent::Update(json)] => Some(serde_json::from_str(json).expect("the update is JSON")),
        other => panic!("expected one update first, got {other:?}"),
    }
}

fn check(what: &str, objects: &[Value], want: Option<Want>) {
    let o = reconcile(objects);
    let Some(want) = want else {
        assert_eq!(o, Outcome::default(), "{what}: expected nothing");
        return;
    };
    assert_eq!(o.requeue_after_ms, None, "{what}");
    // The update alone in the first batch; the event, if any, alone in a later one.
    assert_eq!(o.batches.len(), 1 + usize::from(want.event.is_some()), "{what}: {o:#?}");
    let d = updated(&o).unwrap();
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], want.image, "{what}");
    assert_eq!(d["spec"]["template"]["metadata"]["labels"], json!({"app": "web"}), "{what}: no hash label");
    assert_eq!(d["metadata"]["annotations"], want.annotations, "{what}");
    // The precondition of the update, and the rest of the deployment as served.
    assert_eq!(d["metadata"]["resourceVersion"], "20", "{what}");
    assert_eq!(d["spec"]["replicas"], 3, "{what}");
    if let Some((event_type, reason, message)) = want.event {
        let [Intent::Event(e)] = o.batches[1].as_slice() else { panic!("{what}: expected one event, got {o:#?}") };
        assert_eq!(
            (e.event_type, e.reason.as_str(), e.message.as_str()),
            (event_type, reason, message.as_str()),
            "{what}"
        );
        assert_eq!(
            (&e.regarding.kind, e.regarding.namespace.as_str(), e.regarding.name.as_str()),
            (&Kind::new("apps/v1", "Deployment"), "default", "web"),
            "{what}"
        );
    }
}

fn with_image(image: &str) -> Value {
    json!({"spec": {"containers": [{"name": "c", "image": image}]}})
}

fn change_cause(cause: &str) -> Value {
    json!({"metadata": {"annotations": {CHANGE_CAUSE: cause}}})
}

/// Revision 2 (nginx:2) has replaced revision 1 (nginx:1); each recorded its change-cause.
/// `annotations` and `fields` are merged over the deployment.
fn rolled_out(annotations: Value, fields: Value) -> Vec<Value> {
    let mut d = deployment(
        3,
        json!({"metadata": {"annotations": {REVISION: "2", CHANGE_CAUSE: "two"}},
               "spec": {"template": with_image("nginx:2")}}),
    );
    merge(&mut d, json!({"metadata": {"annotations": annotations}}));
    merge(&mut d, fields);
    vec![
        d,
        replica_set("web-1", "nginx:1", 1, 0, change_cause("one")),
        replica_set("web-2", "nginx:2", 2, 3, change_cause("two")),
    ]
}

#[test]
fn rollback_on_request() {
    let back_to_1 = |event_message: &str| {
        rolled(
            "nginx:1",
            json!({REVISION: "2", CHANGE_CAUSE: "one"}),
            EventType::Normal,
            "DeploymentRollback",
            event_message,
        )
    };
    let untouched = |event_type, reason, message: &str| {
        rolled("nginx:2", json!({REVISION: "2", CHANGE_CAUSE: "two"}), event_type, reason, message)
    };
    let to = |revision: &str| json!({TO_REVISION_ANNOTATION: revision});
    let stale_copies = json!({"metadata": {"annotations": {
        CHANGE_CAUSE: "one", TO_REVISION_ANNOTATION: "2", ON_FAILURE_ANNOTATION: "false",
        LAST_AVAILABLE_REVISION_ANNOTATION: "0", FAILED_REVISION_ANNOTATION: "9"}}});
    let foreign = json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
        "name": "other", "uid": "other-uid", "controller": true}]}});

    let cases: Vec<(&str, Vec<Value>, Option<Want>)> = vec![
        (
            "to revision 1",
            rolled_out(to("1"), json!({})),
            Some(back_to_1("Rolled back deployment \"web\" to revision 1")),
        ),
        (
            "0 is the previous revision",
            rolled_out(to("0"), json!({})),
            Some(back_to_1("Rolled back deployment \"web\" to revision 1")),
        ),
        (
            "a revision no ReplicaSet has",
            rolled_out(to("7"), json!({})),
            Some(untouched(
                EventType::Warning,
                "DeploymentRollbackRevisionNotFound",
                "Unable to find the revision to rollback to.",
            )),
        ),
        (
            "the current revision",
            rolled_out(to("2"), json!({})),
            Some(untouched(
                EventType::Warning,
                "DeploymentRollbackTemplateUnchanged",
                "The rollback revision contains the same template as current deployment \"web\"",
            )),
        ),
        (
            "not a number",
            rolled_out(to("abc"), json!({})),
            Some(untouched(
                EventType::Warning,
                "DeploymentRollbackRevisionNotFound",
                "Invalid revision \"abc\" in annotation rollback.wasmcm.dev/to-revision: not a non-negative integer",
            )),
        ),
        (
            "negative",
            rolled_out(to("-1"), json!({})),
            Some(untouched(
                EventType::Warning,
                "DeploymentRollbackRevisionNotFound",
                "Invalid revision \"-1\" in annotation rollback.wasmcm.dev/to-revision: not a non-negative integer",
            )),
        ),
        (
            "empty",
            rolled_out(to(""), json!({})),
            Some(untouched(
                EventType::Warning,
                "DeploymentRollbackRevisionNotFound",
                "Invalid revision \"\" in annotation rollback.wasmcm.dev/to-revision: not a non-negative integer",
            )),
        ),
        ("paused: the request waits", rolled_out(to("1"), json!({"spec": {"paused": true}})), None),
        (
            "being deleted",
            rolled_out(to("1"), json!({"metadata": {"deletionTimestamp": "2026-06-01T11:00:00Z"}})),
            None,
        ),
        ("no request, not opted in", rolled_out(json!({}), json!({})), None),
        (
            "upstream's deprecated annotation",
            rolled_out(json!({DEPRECATED: "1"}), json!({})),
            Some(back_to_1("Rolled back deployment \"web\" to revision 1")),
        ),
        (
            "upstream's deprecated annotation, invalid",
            rolled_out(json!({DEPRECATED: "x"}), json!({})),
            Some(untouched(
                EventType::Warning,
                "DeploymentRollbackRevisionNotFound",
                "Invalid revision \"x\" in annotation deprecated.deployment.rollback.to: not a non-negative integer",
            )),
        ),
        (
            "both annotations: this plugin's wins, both go",
            rolled_out(json!({TO_REVISION_ANNOTATION: "1", DEPRECATED: "7"}), json!({})),
            Some(back_to_1("Rolled back deployment \"web\" to revision 1")),
        ),
        (
            "0 without a previous revision",
            vec![rolled_out(to("0"), json!({})).remove(0), replica_set("web-2", "nginx:2", 2, 3, json!({}))],
            Some(untouched(EventType::Warning, "DeploymentRollbackRevisionNotFound", "Unable to find last revision.")),
        ),
        (
            "another deployment's ReplicaSet is no revision of this one",
            vec![
                rolled_out(to("1"), json!({})).remove(0),
                replica_set("web-1", "nginx:1", 1, 0, foreign),
                replica_set("web-2", "nginx:2", 2, 3, json!({})),
            ],
            Some(untouched(
                EventType::Warning,
                "DeploymentRollbackRevisionNotFound",
                "Unable to find the revision to rollback to.",
            )),
        ),
        (
            // The deployment controller copied this plugin's annotations onto web-1 back then;
            // taking them back would request another rollback and forget the bookkeeping.
            "this plugin's annotations come from the deployment, never the ReplicaSet",
            vec![
                rolled_out(
                    json!({TO_REVISION_ANNOTATION: "1", ON_FAILURE_ANNOTATION: "true",
                           LAST_AVAILABLE_REVISION_ANNOTATION: "2", FAILED_REVISION_ANNOTATION: "1"}),
                    json!({}),
                )
                .remove(0),
                replica_set("web-1", "nginx:1", 1, 0, stale_copies),
                replica_set("web-2", "nginx:2", 2, 3, change_cause("two")),
            ],
            Some(rolled(
                "nginx:1",
                json!({REVISION: "2", CHANGE_CAUSE: "one", ON_FAILURE_ANNOTATION: "true",
                       LAST_AVAILABLE_REVISION_ANNOTATION: "2", FAILED_REVISION_ANNOTATION: "1"}),
                EventType::Normal,
                "DeploymentRollback",
                "Rolled back deployment \"web\" to revision 1",
            )),
        ),
    ];
    for (what, objects, want) in cases {
        check(what, &objects, want);
    }
}

#[test]
fn the_update_keeps_what_the_api_served() {
    let objects = rolled_out(
        json!({TO_REVISION_ANNOTATION: "1", "kubectl.kubernetes.io/last-applied-configuration": "{}"}),
        json!({"metadata": {"labels": {"team": "a"}}, "spec": {"futureField": {"x": 1}},
               "status": {"replicas": 3}}),
    );
    let d = updated(&reconcile(&objects)).unwrap();
    assert_eq!(d["spec"]["futureField"], json!({"x": 1}));
    assert_eq!(d["metadata"]["labels"], json!({"team": "a"}));
    assert_eq!(d["metadata"]["uid"], "d-uid-web");
    assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    // Controller-owned annotations stay with the deployment, as upstream's SetDeploymentAnnotationsTo.
    assert_eq!(d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"], "{}");
}

// ---------------------------------------------------------------------------------------------
// Automatic rollback
// ---------------------------------------------------------------------------------------------

fn progressing(status: &str, reason: &str, message: &str) -> Value {
    json!({"type": "Progressing", "status": status, "reason": reason, "message": message,
           "lastUpdateTime": "2026-06-01T11:00:00Z", "lastTransitionTime": "2026-06-01T11:00:00Z"})
}

fn timed_out(rs: &str) -> Value {
    progressing("False", "ProgressDeadlineExceeded", &format!("ReplicaSet \"{rs}\" has timed out progressing."))
}

/// Generation 2, observed: revision 2 (nginx:2) is rolling out over revision 1 (nginx:1), with
/// this Progressing condition and these counts (current, updated, available). Opted in.
fn auto(condition: Value, (current, updated, available): (i32, i32, i32), annotations: Value, fields: Value) -> Value {
    let mut d = deployment(
        3,
        json!({"metadata": {"generation": 2, "annotations": {
                   REVISION: "2", CHANGE_CAUSE: "two", ON_FAILURE_ANNOTATION: "true"}},
               "spec": {"template": with_image("nginx:2")},
               "status": {"observedGeneration": 2, "replicas": current, "updatedReplicas": updated,
                          "readyReplicas": available, "availableReplicas": available,
                          "conditions": [condition]}}),
    );
    merge(&mut d, json!({"metadata": {"annotations": annotations}}));
    merge(&mut d, fields);
    d
}

/// Revision 2 exceeded its progress deadline; revision 1 was the last fully available.
fn failing(annotations: Value, fields: Value) -> Vec<Value> {
    let mut d = auto(timed_out("web-2"), (4, 1, 3), json!({LAST_AVAILABLE_REVISION_ANNOTATION: "1"}), fields);
    merge(&mut d, json!({"metadata": {"annotations": annotations}}));
    vec![
        d,
        replica_set("web-1", "nginx:1", 1, 3, change_cause("one")),
        replica_set(
            "web-2",
            "nginx:2",
            2,
            1,
            json!({"metadata": {"annotations": {CHANGE_CAUSE: "two"}},
                                                      "status": {"readyReplicas": 0, "availableReplicas": 0}}),
        ),
    ]
}

/// Revision 2 has rolled out completely.
fn complete(annotations: Value, fields: Value) -> Vec<Value> {
    let condition = progressing("True", "NewReplicaSetAvailable", "ReplicaSet \"web-2\" has successfully progressed.");
    vec![
        auto(condition, (3, 3, 3), annotations, fields),
        replica_set("web-1", "nginx:1", 1, 0, change_cause("one")),
        replica_set("web-2", "nginx:2", 2, 3, change_cause("two")),
    ]
}

#[test]
fn records_the_last_available_revision_only_when_complete() {
    let recorded = |revision: &str| Want {
        image: "nginx:2",
        annotations: json!({REVISION: "2", CHANGE_CAUSE: "two", ON_FAILURE_ANNOTATION: "true",
                            LAST_AVAILABLE_REVISION_ANNOTATION: revision}),
        event: None,
    };
    let status = |fields: Value| json!({"status": fields});
    let cases: Vec<(&str, Vec<Value>, Option<Want>)> = vec![
        ("complete", complete(json!({}), json!({})), Some(recorded("2"))),
        (
            "an older revision recorded",
            complete(json!({LAST_AVAILABLE_REVISION_ANNOTATION: "1"}), json!({})),
            Some(recorded("2")),
        ),
        ("already recorded", complete(json!({LAST_AVAILABLE_REVISION_ANNOTATION: "2"}), json!({})), None),
        ("not all available", complete(json!({}), status(json!({"availableReplicas": 2}))), None),
        ("old pods left", complete(json!({}), status(json!({"replicas": 4}))), None),
        (
            "still progressing",
            complete(
                json!({}),
                status(
                    json!({"conditions": [progressing("True", "ReplicaSetUpdated", "ReplicaSet \"web-2\" is progressing.")]}),
                ),
            ),
            None,
        ),
        ("spec not observed yet", complete(json!({}), status(json!({"observedGeneration": 1}))), None),
        ("not opted in", complete(json!({ON_FAILURE_ANNOTATION: null}), json!({})), None),
        ("opted out", complete(json!({ON_FAILURE_ANNOTATION: "false"}), json!({})), None),
        ("paused", complete(json!({}), json!({"spec": {"paused": true}})), None),
    ];
    for (what, objects, want) in cases {
        check(what, &objects, want);
    }
}

#[test]
fn rolls_back_a_rollout_past_its_deadline_once() {
    let back_to_1 = |failed: &str, message: &str| {
        rolled(
            "nginx:1",
            json!({REVISION: "2", CHANGE_CAUSE: "one", ON_FAILURE_ANNOTATION: "true",
                   LAST_AVAILABLE_REVISION_ANNOTATION: "1", FAILED_REVISION_ANNOTATION: failed}),
            EventType::Normal,
            "DeploymentRollback",
            message,
        )
    };
    let from_2 = "Rolled back deployment \"web\" from revision 2 to revision 1 \
                  because ReplicaSet \"web-2\" exceeded its progress deadline";
    let kept = |last: Value, reason, message: &str| {
        let mut annotations = json!({REVISION: "2", CHANGE_CAUSE: "two", ON_FAILURE_ANNOTATION: "true",
                                     FAILED_REVISION_ANNOTATION: "2"});
        merge(&mut annotations, json!({LAST_AVAILABLE_REVISION_ANNOTATION: last}));
        rolled("nginx:2", annotations, EventType::Warning, reason, message)
    };
    let condition = |c: Value| json!({"status": {"conditions": [c]}});
    let stale_copies = json!({"metadata": {"annotations": {
        CHANGE_CAUSE: "one", TO_REVISION_ANNOTATION: "1", ON_FAILURE_ANNOTATION: "false",
        LAST_AVAILABLE_REVISION_ANNOTATION: "0", FAILED_REVISION_ANNOTATION: "7"}}});
    let mut with_copies = failing(json!({}), json!({}));
    with_copies[1] = replica_set("web-1", "nginx:1", 1, 3, stale_copies);

    let cases: Vec<(&str, Vec<Value>, Option<Want>)> = vec![
        ("to the last available revision", failing(json!({}), json!({})), Some(back_to_1("2", from_2))),
        (
            "an older failure handled",
            failing(json!({FAILED_REVISION_ANNOTATION: "1"}), json!({})),
            Some(back_to_1("2", from_2)),
        ),
        ("this failure handled", failing(json!({FAILED_REVISION_ANNOTATION: "2"}), json!({})), None),
        ("a later failure handled", failing(json!({FAILED_REVISION_ANNOTATION: "5"}), json!({})), None),
        ("the condition names another ReplicaSet", failing(json!({}), condition(timed_out("web-1"))), None),
        ("the condition names no ReplicaSet there is", failing(json!({}), condition(timed_out("web-9"))), None),
        (
            "an unreadable condition means the new ReplicaSet",
            failing(json!({}), condition(progressing("False", "ProgressDeadlineExceeded", "timed out"))),
            Some(back_to_1("2", from_2)),
        ),
        ("not opted in", failing(json!({ON_FAILURE_ANNOTATION: null}), json!({})), None),
        ("paused", failing(json!({}), json!({"spec": {"paused": true}})), None),
        ("spec not observed yet", failing(json!({}), json!({"status": {"observedGeneration": 1}})), None),
        (
            "no revision was ever fully available",
            failing(json!({LAST_AVAILABLE_REVISION_ANNOTATION: null}), json!({})),
            Some(kept(
                Value::Null,
                "DeploymentRollbackRevisionNotFound",
                "no revision of deployment \"web\" has been fully available; not rolling back from revision 2",
            )),
        ),
        (
            "the last available revision is gone",
            failing(json!({LAST_AVAILABLE_REVISION_ANNOTATION: "7"}), json!({})),
            Some(kept(
                json!("7"),
                "DeploymentRollbackRevisionNotFound",
                "revision 7, the last fully available revision of deployment \"web\", has no ReplicaSet left; \
                 not rolling back from revision 2",
            )),
        ),
        (
            "the last available template is the one failing",
            failing(json!({LAST_AVAILABLE_REVISION_ANNOTATION: "2"}), json!({})),
            Some(kept(
                json!("2"),
                "DeploymentRollbackTemplateUnchanged",
                "revision 2, the last fully available revision of deployment \"web\", is the one failing: \
                 ReplicaSet \"web-2\" exceeded its progress deadline at revision 2; not rolling back",
            )),
        ),
        ("this plugin's annotations come from the deployment", with_copies, Some(back_to_1("2", from_2))),
    ];
    for (what, objects, want) in cases {
        check(what, &objects, want);
    }
}

#[test]
fn a_condition_from_before_the_rollback_is_stale() {
    // The rollback to nginx:1 was observed (generation 3); the deadline still names web-2.
    let d = auto(
        timed_out("web-2"),
        (4, 0, 3),
        json!({LAST_AVAILABLE_REVISION_ANNOTATION: "1", FAILED_REVISION_ANNOTATION: null}),
        json!({"metadata": {"generation": 3}, "spec": {"template": with_image("nginx:1")},
               "status": {"observedGeneration": 3}}),
    );
    let objects = [
        d,
        replica_set("web-1", "nginx:1", 1, 3, json!({})),
        replica_set("web-2", "nginx:2", 2, 1, json!({"status": {"availableReplicas": 0}})),
    ];
    assert_eq!(reconcile(&objects), Outcome::default());
}

#[test]
fn a_reused_replica_set_is_found_through_its_revision_history() {
    // Revision 1 (web-1) was last fully available; a rollback to it made it revision 3, and
    // revision 4 (web-4) now exceeds its deadline.
    let d = auto(
        timed_out("web-4"),
        (4, 1, 3),
        json!({REVISION: "4", CHANGE_CAUSE: "four", LAST_AVAILABLE_REVISION_ANNOTATION: "1",
               FAILED_REVISION_ANNOTATION: "2"}),
        json!({"spec": {"template": with_image("nginx:4")}}),
    );
    let objects = [
        d,
        replica_set(
            "web-1",
            "nginx:1",
            3,
            3,
            json!({"metadata": {"annotations": {CHANGE_CAUSE: "one",
                                                "deployment.kubernetes.io/revision-history": "1"}}}),
        ),
        replica_set("web-2", "nginx:2", 2, 0, change_cause("two")),
        replica_set("web-4", "nginx:4", 4, 1, json!({"status": {"availableReplicas": 0}})),
    ];
    check(
        "through revision-history",
        &objects,
        Some(rolled(
            "nginx:1",
            json!({REVISION: "4", CHANGE_CAUSE: "one", ON_FAILURE_ANNOTATION: "true",
                   LAST_AVAILABLE_REVISION_ANNOTATION: "1", FAILED_REVISION_ANNOTATION: "4"}),
            EventType::Normal,
            "DeploymentRollback",
            "Rolled back deployment \"web\" from revision 4 to revision 1 \
             because ReplicaSet \"web-4\" exceeded its progress deadline",
        )),
    );
}

#[test]
fn no_loop_when_the_last_good_template_fails_too() {
    // Revision 2 fails: back to revision 1.
    let objects = failing(json!({}), json!({}));
    let d = updated(&reconcile(&objects)).unwrap();
    assert_eq!(d["metadata"]["annotations"][FAILED_REVISION_ANNOTATION], "2");

    // The deployment controller makes web-1 new again as revision 3, which fails this time.
    let mut d = d;
    merge(
        &mut d,
        json!({"metadata": {"generation": 3, "annotations": {REVISION: "3"}},
               "status": {"observedGeneration": 3, "conditions": [timed_out("web-1")]}}),
    );
    let history = json!({"metadata": {"annotations": {CHANGE_CAUSE: "one",
                                                      "deployment.kubernetes.io/revision-history": "1"}}});
    let mut objects =
        vec![d, replica_set("web-1", "nginx:1", 3, 3, history), replica_set("web-2", "nginx:2", 2, 0, json!({}))];
    let o = reconcile(&objects);
    let d = updated(&o).unwrap();
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1", "no template change");
    assert_eq!(d["metadata"]["annotations"][FAILED_REVISION_ANNOTATION], "3");
    let [Intent::Event(e)] = o.batches[1].as_slice() else { panic!("{o:#?}") };
    assert_eq!((e.event_type, e.reason.as_str()), (EventType::Warning, "DeploymentRollbackTemplateUnchanged"));
    assert_eq!(
        e.message,
        "revision 1, the last fully available revision of deployment \"web\", is the one failing: \
         ReplicaSet \"web-1\" exceeded its progress deadline at revision 3; not rolling back"
    );

    // Once recorded, nothing more.
    objects[0] = d;
    assert_eq!(reconcile(&objects), Outcome::default());
}

// ---------------------------------------------------------------------------------------------
// The plugin around it
// ---------------------------------------------------------------------------------------------

#[test]
fn a_deployment_that_is_gone_needs_nothing() {
    assert_eq!(reconcile(&[replica_set("web-1", "nginx:1", 1, 0, json!({}))]), Outcome::default());
}

#[test]
fn broken_objects_are_retryable_errors_naming_them() {
    let mut objects = rolled_out(json!({TO_REVISION_ANNOTATION: "1"}), json!({}));
    objects.push(replica_set("web-bad", "nginx:1", 3, 0, json!({"spec": {"replicas": "many"}})));
    let err = RollbackController::reconcile(&request("web"), &cache(&objects)).unwrap_err();
    assert!(err.retryable && err.message.contains("ReplicaSet default/web-bad"), "{err:?}");

    let broken = deployment(3, json!({"spec": {"replicas": "three"}}));
    let err = RollbackController::reconcile(&request("web"), &cache(&[broken])).unwrap_err();
    assert!(err.retryable && err.message.contains("Deployment default/web"), "{err:?}");
}

#[test]
fn describes_itself() {
    let info = RollbackController::describe();
    assert_eq!(info.name, "rollback");
    assert_eq!(info.primary, Kind::new("apps/v1", "Deployment"));
    assert!(info.owns.is_empty());
    assert_eq!(info.watches, vec![Watch::new(Kind::new("apps/v1", "ReplicaSet"), Changes::NONE)]);
    assert_eq!(info.writes, vec![Kind::new("apps/v1", "Deployment")]);
}
