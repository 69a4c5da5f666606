//! Whole rollouts, natively: the Deployment controller stepped against a world that plays the
//! ReplicaSet controller, checking upstream's bounds at every step.

use std::collections::BTreeMap;

use crate::common::*;
use serde_json::json;
use wasmcm_deployment::fixtures::{deployment, pod, replica_set};

fn image(w: &World, rs: &str) -> String {
    w.get("ReplicaSet", rs)["spec"]["template"]["spec"]["containers"][0]["image"].as_str().unwrap().to_string()
}

fn annotation(v: &serde_json::Value, key: &str) -> String {
    v["metadata"]["annotations"][key].as_str().unwrap_or("").to_string()
}

#[test]
fn a_new_deployment_gets_its_first_replica_set() {
    let o = reconcile(&[deployment(3, json!({}))]);
    let created = creates(&o);
    assert_eq!(created.len(), 1);
    let rs = &created[0];
    let hash = rs["metadata"]["labels"]["pod-template-hash"].as_str().unwrap();
    assert_eq!(rs["metadata"]["name"], format!("web-{hash}"));
    assert_eq!(rs["spec"]["selector"]["matchLabels"], json!({"app": "web", "pod-template-hash": hash}));
    assert_eq!(rs["spec"]["template"]["metadata"]["labels"], json!({"app": "web", "pod-template-hash": hash}));
    assert_eq!(rs["spec"]["replicas"], 3);
    assert_eq!(rs["metadata"]["ownerReferences"][0]["uid"], "d-uid-web");
    assert_eq!(rs["metadata"]["ownerReferences"][0]["controller"], true);
    // 25% of 3 rounds up to a surge of 1.
    assert_eq!(
        rs["metadata"]["annotations"],
        json!({"deployment.kubernetes.io/revision": "1", "deployment.kubernetes.io/desired-replicas": "3",
               "deployment.kubernetes.io/max-replicas": "4"})
    );
    assert_eq!(messages(&o), vec![format!("Scaled up replica set web-{hash} from 0 to 3")]);
    let status = status_write(&o).expect("status written");
    assert_eq!(annotation(&status, "deployment.kubernetes.io/revision"), "1");
    let progressing = condition(&status, "Progressing");
    assert_eq!(progressing["reason"], "NewReplicaSetCreated");
    assert_eq!(progressing["message"], format!("Created new replica set \"web-{hash}\""));
    // The status comes after the ReplicaSet it reports and the events.
    assert!(matches!(o.batches.last().unwrap().as_slice(), [wasmcm_guest::Intent::UpdateStatus(_)]));
}

#[test]
fn the_hash_is_stable_and_moves_with_the_template_and_the_collision_count() {
    let name = |d| creates(&reconcile(&[d]))[0]["metadata"]["name"].as_str().unwrap().to_string();
    let a = name(deployment(3, json!({})));
    assert_eq!(a, name(deployment(3, json!({}))));
    assert_ne!(
        a,
        name(deployment(
            3,
            json!({"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:2"}]}}}})
        ))
    );
    assert_ne!(a, name(deployment(3, json!({"status": {"collisionCount": 1}}))));
    // Scale is not part of the template.
    assert_eq!(a, name(deployment(5, json!({}))));
}

#[test]
fn rolling_update_stays_within_surge_and_unavailability_at_every_step() {
    // (replicas, maxSurge, maxUnavailable, upper bound of pods, lower bound of available)
    let cases = [
        (10, json!(3), json!(2), 13, 8),
        (10, json!("25%"), json!("25%"), 13, 8),
        (4, json!(1), json!(0), 5, 4),
        (4, json!(0), json!(1), 4, 3),
        (5, json!("0%"), json!("0%"), 5, 4), // both zero: unavailable becomes 1
        (1, json!(1), json!(0), 2, 1),
    ];
    for (replicas, surge, unavailable, max_pods, min_available) in cases {
        let what = format!("replicas {replicas}, surge {surge}, unavailable {unavailable}");
        let d = deployment(
            replicas,
            json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}}}),
        );
        let mut w = World::new(&[d]);
        w.converge(|_, n| n, |_| {});
        assert_eq!(w.replica_sets().values().map(|(r, _)| *r).sum::<i64>(), replicas as i64, "{what}");
        let first = w.replica_sets().keys().next().unwrap().clone();

        w.edit(json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}));
        let steps = w.converge(
            |_, n| n,
            |w| {
                let (pods, available): (i64, i64) =
                    w.replica_sets().values().fold((0, 0), |(p, a), (r, av)| (p + r, a + av));
                assert!(pods <= max_pods, "{what}: {pods} pods wanted, more than {max_pods}");
                assert!(available >= min_available, "{what}: {available} available, fewer than {min_available}");
            },
        );
        assert!(steps > 1, "{what}: a rollout takes steps");
        let rss = w.replica_sets();
        assert_eq!(rss[&first], (0, 0), "{what}: the old ReplicaSet is scaled down");
        let new = rss.keys().find(|k| **k != first).unwrap();
        assert_eq!(rss[new].0, replicas as i64, "{what}");
        assert_eq!(image(&w, new), "nginx:2");
        let d = w.deployment();
        assert_eq!(annotation(d, "deployment.kubernetes.io/revision"), "2", "{what}");
        assert_eq!(condition(d, "Progressing")["reason"], "NewReplicaSetAvailable", "{what}");
        assert_eq!(condition(d, "Available")["status"], "True", "{what}");
        assert_eq!(d["status"]["updatedReplicas"], replicas, "{what}");
        assert_eq!(d["status"]["observedGeneration"], 2, "{what}");
    }
}

#[test]
fn new_replica_set_that_never_turns_available_does_not_take_the_deployment_down() {
    let d = deployment(4, json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}}}));
    let mut w = World::new(&[d]);
    w.converge(|_, n| n, |_| {});
    let first = w.replica_sets().keys().next().unwrap().clone();
    w.edit(json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "broken"}]}}}}));
    let old = first.clone();
    w.converge(move |name, n| if name == old { n } else { 0 }, |_| {});
    let rss = w.replica_sets();
    // One old pod may go (maxUnavailable 1) and the new ReplicaSet holds the surge and the
    // slack: 3 old available pods remain.
    assert_eq!(rss[&first], (3, 3));
    let new: i64 = rss.iter().filter(|(k, _)| **k != first).map(|(_, (r, _))| r).sum();
    assert_eq!(new, 2);
}

#[test]
fn unhealthy_old_replicas_are_cleaned_up_first() {
    // Old ReplicaSets: web-1 (oldest) with 2 of 4 unavailable, web-2 healthy; the deployment
    // wants web-3, which has surged to 1 and is available.
    let d = deployment(
        8,
        json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                        "template": {"spec": {"containers": [{"name": "c", "image": "nginx:3"}]}}}}),
    );
    let objects = [
        d,
        replica_set("web-1", "nginx:1", 1, 4, json!({"status": {"availableReplicas": 2, "readyReplicas": 2}})),
        replica_set("web-2", "nginx:2", 2, 4, json!({})),
        replica_set("web-3", "nginx:3", 3, 1, json!({})),
    ];
    let o = reconcile(&objects);
    // maxScaledDown = 9 - 8 - 0 = 1: one unhealthy replica of web-1 goes, nothing healthy.
    assert_eq!(sizes(&o), [("web-1".to_string(), 3)].into());
    assert_eq!(messages(&o), vec!["Scaled down replica set web-1 from 4 to 3"]);
}

#[test]
fn an_old_replica_set_whose_status_lags_its_own_scale_down_holds_the_rollout_without_an_error() {
    // web-1 was just scaled 3 -> 2 by this controller; its status still counts 3 available
    // pods. Upstream fails the sync ("when cleaning up unhealthy replicas, got invalid request
    // to scale down") and retries with backoff until the status catches up; here the sync
    // stops with nothing written, and the status update it waits for brings the next one.
    let d = deployment(
        3,
        json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                        "template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}),
    );
    let lagging = |available: i32| {
        replica_set(
            "web-1",
            "nginx:1",
            1,
            2,
            json!({"status": {"replicas": available, "readyReplicas": available, "availableReplicas": available,
                              "fullyLabeledReplicas": available}}),
        )
    };
    // Both new pods available: 4 pods wanted against 3 + maxSurge 0 unavailable, one old may go.
    let new = replica_set("web-2", "nginx:2", 2, 2, json!({}));
    let o = reconcile(&[d.clone(), lagging(3), new.clone()]);
    assert_eq!(sizes(&o), BTreeMap::new(), "no ReplicaSet resized on a stale count");
    // (Finding the new ReplicaSet is recorded first, as upstream does; no rollout status.)
    let status = status_write(&o).map(|s| s["status"].clone()).unwrap_or_default();
    assert!(status.get("replicas").is_none(), "no rollout status from a stale count: {status}");
    // Once its status caught up, the rollout moves on.
    let o = reconcile(&[d, lagging(2), new]);
    assert_eq!(sizes(&o), [("web-1".to_string(), 1)].into());
    assert!(status_write(&o).is_some(), "the sync ran to its status: {o:?}");
}

#[test]
fn going_back_to_an_old_template_reuses_its_replica_set_and_renumbers_it() {
    let d = deployment(3, json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}}));
    let mut w = World::new(&[d]);
    w.converge(|_, n| n, |_| {});
    let first = w.replica_sets().keys().next().unwrap().clone();
    w.edit(json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}));
    w.converge(|_, n| n, |_| {});
    assert_eq!(w.replica_sets().len(), 2);
    w.edit(json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}}));
    w.converge(|_, n| n, |_| {});
    let rss = w.replica_sets();
    assert_eq!(rss.len(), 2, "no ReplicaSet is created for a template that has one");
    assert_eq!(rss[&first], (3, 3));
    let rs = w.get("ReplicaSet", &first);
    assert_eq!(annotation(rs, "deployment.kubernetes.io/revision"), "3");
    assert_eq!(annotation(rs, "deployment.kubernetes.io/revision-history"), "1");
    assert_eq!(annotation(w.deployment(), "deployment.kubernetes.io/revision"), "3");
}

#[test]
fn recreate_scales_old_down_and_waits_for_old_pods_before_scaling_up() {
    let d = deployment(
        3,
        json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null},
                        "template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}),
    );
    let old = replica_set("web-1", "nginx:1", 1, 3, json!({}));
    let pods: Vec<_> = (0..3).map(|i| pod(&format!("web-1-{i}"), "web-1", json!({}))).collect();

    // Step 1: the old ReplicaSet goes to zero; no new ReplicaSet yet.
    let mut objects = vec![d.clone(), old.clone()];
    objects.extend(pods.iter().cloned());
    let o = reconcile(&objects);
    assert_eq!(sizes(&o), [("web-1".to_string(), 0)].into());
    assert!(creates(&o).is_empty());

    // Step 2: scaled down, but its pods still exist (terminating ones included): wait.
    let scaled = replica_set("web-1", "nginx:1", 1, 0, json!({"status": {"replicas": 0}}));
    let terminating = pod("web-1-0", "web-1", json!({"metadata": {"deletionTimestamp": "2026-06-01T11:59:00Z"}}));
    let o = reconcile(&[d.clone(), scaled.clone(), terminating]);
    assert!(creates(&o).is_empty() && sizes(&o).is_empty(), "{o:?}");
    // A finished pod does not hold the rollout.
    let done = pod("web-1-0", "web-1", json!({"status": {"phase": "Succeeded"}}));
    let o = reconcile(&[d.clone(), scaled.clone(), done]);
    assert_eq!(creates(&o).len(), 1);

    // Step 3: no old pod left: the new ReplicaSet is created at full size.
    let o = reconcile(&[d, scaled]);
    let created = creates(&o);
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["spec"]["replicas"], 3);
}

#[test]
fn recreate_never_runs_old_and_new_together() {
    let d = deployment(4, json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null}}}));
    let mut w = World::new(&[d]);
    w.converge(|_, n| n, |_| {});
    w.edit(json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}));
    w.converge(
        |_, n| n,
        |w| {
            let with_pods =
                w.of_kind("ReplicaSet").iter().filter(|rs| rs["status"]["replicas"].as_i64() > Some(0)).count();
            let wanted = w.of_kind("ReplicaSet").iter().filter(|rs| rs["spec"]["replicas"].as_i64() > Some(0)).count();
            assert!(with_pods <= 1 && wanted <= 1, "old and new together: {:?}", w.replica_sets());
        },
    );
    assert_eq!(w.replica_sets().values().filter(|(r, a)| *r == 4 && *a == 4).count(), 1);
}

#[test]
fn the_new_replica_set_surges_only_past_pods_the_old_ones_still_run() {
    // web-1 was scaled 10 -> 8 and still runs 10 pods; web-2 runs its 3. Upstream counts specs
    // (8 + 3 < 10 + maxSurge 3) and grows web-2 to 5: 15 pods run until web-1's two are gone.
    let d =
        deployment(10, json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}));
    let old = |running: i32| {
        replica_set(
            "web-1",
            "nginx:1",
            1,
            8,
            json!({"status": {"replicas": running, "readyReplicas": running, "availableReplicas": running,
                              "fullyLabeledReplicas": running}}),
        )
    };
    let new = replica_set("web-2", "nginx:2", 2, 3, json!({}));
    let o = reconcile(&[d.clone(), old(10), new.clone()]);
    assert_eq!(sizes(&o), BTreeMap::new(), "no surge past pods still running");
    // Once web-1's status shows its pods gone, web-2 takes the room.
    let o = reconcile(&[d, old(8), new]);
    assert_eq!(sizes(&o), [("web-2".to_string(), 5)].into());
}
