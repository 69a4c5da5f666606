//! The Deployment plugin end to end: the real kubectl v1.35 against the embedded cluster, with
//! the host running the replicaset, deployment and rollback plugins in-process. Each test drives
//! one behaviour the way a user would — `kubectl create deployment`, `set image`, `rollout
//! status|history|undo|pause|resume`, `scale`, `describe` — and checks it against
//! kube-controller-manager's.
//!
//! The kubelet starts pods ~200 ms after binding; an image tagged `:fail` crash-loops and never
//! turns Ready; a terminating pod lingers up to 2 s. Timeouts are generous: these tests check
//! behaviour, not speed. kubectl comes from `scripts/install-kubectl.sh`; without it they fail.

use crate::common::{self, items};

use std::collections::BTreeMap;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;
use wasmcm::Version;
use wasmcm_apiserver::{ClusterConfig, KubeletConfig};

/// How long any one expectation may take to come true.
const TIMEOUT: Duration = Duration::from_secs(90);
const ROLLOUT_TIMEOUT: &str = "--timeout=90s";

const REVISION: &str = "deployment.kubernetes.io/revision";
const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
const ROLLBACK_ON_FAILURE: &str = "rollback.wasmcm.dev/on-failure";
const ROLLBACK_FAILED_REVISION: &str = "rollback.wasmcm.dev/failed-revision";
const ROLLBACK_LAST_AVAILABLE_REVISION: &str = "rollback.wasmcm.dev/last-available-revision";

/// maxSurge 1 and maxUnavailable 1, explicit so the bounds the tests check are plain numbers.
const SURGE_1_UNAVAILABLE_1: &str = r#"{"spec":{"strategy":{"rollingUpdate":{"maxSurge":1,"maxUnavailable":1}}}}"#;

/// The plugins under test (the rollback plugin whenever this build ships it; the test of
/// automatic rollback requires it).
fn plugins() -> Vec<Version> {
    let mut plugins = vec![common::replicaset(), common::builtin("deployment").expect("deployment is built in")];
    plugins.extend(common::builtin("rollback"));
    plugins.into_iter().map(Version::of).collect()
}

/// A cluster, a host on it, and kubectl pointed at it ([`common::Bed`]), with the Deployment
/// tests' helpers. Every test names its deployment `web` (what `kubectl create deployment web`
/// labels `app=web`) in namespace `default`.
struct Env(common::Bed);

impl std::ops::Deref for Env {
    type Target = common::Bed;
    fn deref(&self) -> &common::Bed {
        &self.0
    }
}

impl Env {
    /// The host runs as deploy/manifests' ServiceAccount: every scenario here also proves the
    /// ClusterRole sufficient.
    fn start() -> Env {
        let config = ClusterConfig {
            kubelet: KubeletConfig { start_delay: Duration::from_millis(200), ..KubeletConfig::default() },
            ..ClusterConfig::default()
        };
        Env(common::Bed::start(config, plugins()))
    }

    fn deployment(&self) -> Value {
        self.json(&["get", "deployment", "web"])
    }

    /// The deployment's ReplicaSets (by its label; every one is owned by it in these tests).
    fn replica_sets(&self) -> Vec<Value> {
        items(self.json(&["get", "replicasets", "-l", "app=web"]))
    }

    /// The ReplicaSet whose template runs `image`.
    fn replica_set_running(&self, image: &str) -> Value {
        let rss = self.replica_sets();
        rss.iter()
            .find(|rs| image_of(rs, "/spec/template") == image)
            .cloned()
            .unwrap_or_else(|| panic!("no ReplicaSet runs {image}: {:?}", rss.iter().map(name_of).collect::<Vec<_>>()))
    }

    /// The deployment's pods that are not terminating.
    fn live_pods(&self) -> Vec<Value> {
        items(self.json(&["get", "pods", "-l", "app=web"]))
            .into_iter()
            .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none_or(Value::is_null))
            .collect()
    }

    /// `kubectl rollout status` to its end, whatever that is.
    fn rollout_status(&self) -> Output {
        self.run(&["rollout", "status", "deployment/web", ROLLOUT_TIMEOUT], None)
    }

    /// `kubectl rollout status` must report the rollout complete.
    fn rolled_out(&self) {
        let out = self.rollout_status();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("deployment \"web\" successfully rolled out"),
            "kubectl rollout status: {stdout}{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.ok(&["describe", "deployment", "web"])
        );
    }

    /// Polls `f` until it returns `Some`, failing the test after [`TIMEOUT`].
    fn eventually<T>(&self, what: &str, f: impl FnMut() -> Option<T>) -> T {
        self.0.eventually(what, TIMEOUT, &["deployment,replicaset", "-l", "app=web"], f)
    }

    /// Reconciles the plugin has run so far, whatever their outcome.
    fn reconciles(&self, plugin: &str) -> f64 {
        common::metric(&self.metrics.encode(), "wasmcm_reconciles_total", &[&format!("plugin=\"{plugin}\"")])
    }

    /// Waits until exactly `n` pods exist, all running `image` and Ready, none terminating:
    /// the end of a rollout as the pods see it (rollout status returns while old pods are
    /// still terminating).
    fn settled_on(&self, image: &str, n: usize) {
        self.eventually(&format!("exactly {n} ready {image} pods and nothing else"), || {
            let all = items(self.json(&["get", "pods", "-l", "app=web"]));
            (all.len() == n
                && all.iter().all(|p| {
                    image_of(p, "") == image
                        && p.pointer("/metadata/deletionTimestamp").is_none_or(Value::is_null)
                        && pod_ready(p)
                }))
            .then_some(())
        });
    }
}

fn name_of(o: &Value) -> &str {
    o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
}

fn annotation<'a>(o: &'a Value, key: &str) -> Option<&'a str> {
    o.pointer("/metadata/annotations").and_then(|a| a.get(key)).and_then(Value::as_str)
}

/// The first container's image of the pod spec under `template` ("" for a pod itself).
fn image_of<'a>(o: &'a Value, template: &str) -> &'a str {
    o.pointer(&format!("{template}/spec/containers/0/image")).and_then(Value::as_str).unwrap_or("")
}

fn spec_replicas(o: &Value) -> i64 {
    o.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0)
}

fn pod_ready(p: &Value) -> bool {
    p.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

/// The deployment's condition of `type_`, if any.
fn condition(d: &Value, type_: &str) -> Option<Value> {
    d.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == type_).cloned()
}

/// The revisions `kubectl rollout history` lists, in its order.
fn history_revisions(history: &str) -> Vec<u32> {
    history.lines().filter_map(|l| l.split_whitespace().next()?.parse().ok()).collect()
}

// ---------------------------------------------------------------------------------------------
// Watching every state the pods go through
// ---------------------------------------------------------------------------------------------

/// A pod as the invariants need it.
#[derive(Clone, Debug)]
struct PodView {
    name: String,
    image: String,
    ready: bool,
    terminating: bool,
    /// Succeeded or Failed: its containers no longer run.
    finished: bool,
}

impl PodView {
    fn of(p: &Pod) -> PodView {
        let status = p.status.as_ref();
        PodView {
            name: p.metadata.name.clone().unwrap_or_default(),
            image: p.spec.as_ref().and_then(|s| s.containers.first()).and_then(|c| c.image.clone()).unwrap_or_default(),
            ready: status
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True")),
            terminating: p.metadata.deletion_timestamp.is_some(),
            finished: matches!(status.and_then(|s| s.phase.as_deref()), Some("Succeeded" | "Failed")),
        }
    }
}

/// Every state the deployment's pods go through: a watch delivers each change the API server
/// makes, one at a time and in order, so the pods after each event are one instant of the
/// cluster. Invariants checked over these hold at every instant, not just at the polls.
struct PodWatch {
    states: Arc<Mutex<Vec<Vec<PodView>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl PodWatch {
    /// Starts watching and returns once the initial list is in.
    fn start(e: &Env) -> PodWatch {
        let api: Api<Pod> = Api::namespaced(e.client.clone(), "default");
        let states = Arc::new(Mutex::new(Vec::new()));
        let sink = states.clone();
        let task = e.runtime.spawn(async move {
            let mut current: BTreeMap<String, PodView> = BTreeMap::new();
            // A relist (after the history was compacted) is buffered and swapped in whole, so
            // no half-listed state is ever recorded.
            let mut relisting: Option<BTreeMap<String, PodView>> = None;
            let config = watcher::Config::default().labels("app=web");
            let mut events = watcher(api, config).default_backoff().boxed();
            while let Some(event) = events.next().await {
                let Ok(event) = event else { continue };
                match event {
                    watcher::Event::Init => relisting = Some(BTreeMap::new()),
                    watcher::Event::InitApply(p) => {
                        let v = PodView::of(&p);
                        relisting.get_or_insert_with(BTreeMap::new).insert(v.name.clone(), v);
                    }
                    watcher::Event::InitDone => current = relisting.take().unwrap_or_default(),
                    watcher::Event::Apply(p) => {
                        let v = PodView::of(&p);
                        current.insert(v.name.clone(), v);
                    }
                    watcher::Event::Delete(p) => {
                        current.remove(p.metadata.name.as_deref().unwrap_or(""));
                    }
                }
                if relisting.is_none() {
                    sink.lock().unwrap().push(current.values().cloned().collect());
                }
            }
        });
        let watch = PodWatch { states, task };
        e.eventually("the pod watch to list", || (!watch.states.lock().unwrap().is_empty()).then_some(()));
        watch
    }

    /// Stops watching and returns every state seen, oldest first.
    fn stop(self) -> Vec<Vec<PodView>> {
        self.task.abort();
        std::mem::take(&mut *self.states.lock().unwrap())
    }
}

// ---------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------

/// `kubectl create deployment` gets a ReplicaSet with all the pods, `rollout status` sees the
/// rollout through, and `describe` finds the new ReplicaSet and the controller's events.
#[test]
fn create_deployment_rolls_out_and_describe_shows_the_scaling_events() {
    let e = Env::start();
    e.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=4"]);
    e.rolled_out();

    let rss = e.replica_sets();
    assert_eq!(rss.len(), 1, "one ReplicaSet");
    let rs = &rss[0];
    let rs_name = name_of(rs);
    assert_eq!(spec_replicas(rs), 4);
    assert_eq!(annotation(rs, REVISION), Some("1"));
    assert_eq!(annotation(rs, DESIRED_REPLICAS), Some("4"));
    assert_eq!(annotation(rs, MAX_REPLICAS), Some("5"), "4 + the default maxSurge of 25%, rounded up");
    assert_eq!(e.live_pods().iter().filter(|p| pod_ready(p)).count(), 4);

    let d = e.deployment();
    assert_eq!(annotation(&d, REVISION), Some("1"));
    let status = &d["status"];
    assert_eq!(status["observedGeneration"], d["metadata"]["generation"]);
    for field in ["replicas", "updatedReplicas", "readyReplicas", "availableReplicas"] {
        assert_eq!(status[field], 4, "status.{field}: {status}");
    }
    let available = condition(&d, "Available").expect("Available condition");
    assert_eq!(
        (available["status"].as_str(), available["reason"].as_str()),
        (Some("True"), Some("MinimumReplicasAvailable"))
    );
    let progressing = condition(&d, "Progressing").expect("Progressing condition");
    assert_eq!(
        (progressing["status"].as_str(), progressing["reason"].as_str()),
        (Some("True"), Some("NewReplicaSetAvailable"))
    );

    // The events are written after the ReplicaSet, so they may trail the rollout a little.
    let scaled_up = format!("Scaled up replica set {rs_name} from 0 to 4");
    let described = e.eventually("describe to show the scaling event", || {
        let out = e.ok(&["describe", "deployment", "web"]);
        out.contains(&scaled_up).then_some(out)
    });
    assert!(described.contains("ScalingReplicaSet"), "{described}");
    assert!(described.contains(&format!("NewReplicaSet:   {rs_name} (4/4 replicas created)")), "{described}");
    assert!(described.contains("OldReplicaSets:  <none>"), "{described}");
    assert!(described.contains("4 desired | 4 updated | 4 total | 4 available | 0 unavailable"), "{described}");
}

/// `kubectl set image` rolls the pods over one ReplicaSet to the next without ever running
/// more than replicas + maxSurge pods or fewer than replicas - maxUnavailable ready ones.
#[test]
fn set_image_rolls_out_within_max_surge_1_and_max_unavailable_1_at_every_instant() {
    rolling_update_stays_within(4, Some(SURGE_1_UNAVAILABLE_1), 1, 1);
}

/// The same with the server's defaults, 25% each: for 10 replicas maxSurge rounds up to 3 and
/// maxUnavailable down to 2, and more pods move at once.
#[test]
fn set_image_rolls_out_within_the_default_25_percent_bounds_at_every_instant() {
    rolling_update_stays_within(10, None, 3, 2);
}

/// Creates `replicas` nginx:1 pods (with `strategy_patch` applied), then watches every instant
/// of the rolling update to nginx:2.
fn rolling_update_stays_within(
    replicas: usize,
    strategy_patch: Option<&str>,
    max_surge: usize,
    max_unavailable: usize,
) {
    let e = Env::start();
    e.ok(&["create", "deployment", "web", "--image=nginx:1", &format!("--replicas={replicas}")]);
    if let Some(patch) = strategy_patch {
        e.ok(&["patch", "deployment", "web", "--type=merge", "-p", patch]);
    }
    e.rolled_out();
    e.settled_on("nginx:1", replicas);

    let watch = PodWatch::start(&e);
    e.ok(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    e.rolled_out();
    e.settled_on("nginx:2", replicas);
    let states = watch.stop();

    let (most, least_ready) = (replicas + max_surge, replicas - max_unavailable);
    for (i, pods) in states.iter().enumerate() {
        let running = live(pods).count();
        let ready = live(pods).filter(|p| p.ready).count();
        assert!(running <= most, "instant {i}: {running} pods, more than replicas + maxSurge = {most}: {pods:#?}");
        assert!(
            ready >= least_ready,
            "instant {i}: {ready} ready pods, fewer than replicas - maxUnavailable = {least_ready}: {pods:#?}"
        );
    }
    eprintln!(
        "rolling update of {replicas} over {} states: at most {:?} pods (bound {most}), at least {:?} ready (bound {least_ready})",
        states.len(),
        states.iter().map(|s| live(s).count()).max(),
        states.iter().map(|s| live(s).filter(|p| p.ready).count()).min()
    );
    // Not vacuous: the watch saw the whole rollout, and it was a rolling one.
    assert!(states.len() > 2 * replicas, "the watch saw the rollout's changes: {} states", states.len());
    assert!(
        states.iter().any(|s| live(s).any(|p| p.image == "nginx:1") && live(s).any(|p| p.image == "nginx:2")),
        "old and new pods served side by side at some point"
    );

    let old = e.replica_set_running("nginx:1");
    let new = e.replica_set_running("nginx:2");
    assert_eq!((spec_replicas(&old), spec_replicas(&new)), (0, replicas as i64));
    assert_eq!((annotation(&old, REVISION), annotation(&new, REVISION)), (Some("1"), Some("2")));
}

/// Pods that are not terminating.
fn live(pods: &[PodView]) -> impl Iterator<Item = &PodView> {
    pods.iter().filter(|p| !p.terminating)
}

/// `rollout history` lists both revisions (and shows revision 1's template), and `rollout undo`
/// goes back to revision 1 by making its ReplicaSet the new one again — as revision 3, with
/// its former number in the revision history — rather than creating another.
#[test]
fn rollout_history_lists_revisions_and_undo_reuses_the_old_replica_set() {
    let e = Env::start();
    e.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=3"]);
    e.rolled_out();
    e.ok(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    // The change cause is the deployment's; the controller copies it to the new ReplicaSet,
    // which is where the history reads it.
    e.ok(&["annotate", "deployment", "web", "kubernetes.io/change-cause=upgrade to nginx:2"]);
    e.rolled_out();

    let history = e.eventually("the change cause in the history", || {
        let history = e.ok(&["rollout", "history", "deployment/web"]);
        history.lines().any(|l| l.starts_with('2') && l.contains("upgrade to nginx:2")).then_some(history)
    });
    assert_eq!(history_revisions(&history), [1, 2], "{history}");
    let revision_1 = e.ok(&["rollout", "history", "deployment/web", "--revision=1"]);
    assert!(revision_1.contains("revision #1") && revision_1.contains("nginx:1"), "{revision_1}");
    assert!(!revision_1.contains("nginx:2"), "{revision_1}");
    let revision_2 = e.ok(&["rollout", "history", "deployment/web", "--revision=2"]);
    assert!(revision_2.contains("nginx:2"), "{revision_2}");

    let before: Vec<String> = e.replica_sets().iter().map(|rs| name_of(rs).to_string()).collect();
    assert_eq!(before.len(), 2);
    let first = e.replica_set_running("nginx:1");
    assert!(e.ok(&["rollout", "undo", "deployment/web"]).contains("rolled back"));
    e.rolled_out();
    e.settled_on("nginx:1", 3);

    let mut after: Vec<String> = e.replica_sets().iter().map(|rs| name_of(rs).to_string()).collect();
    after.sort();
    let mut expected = before.clone();
    expected.sort();
    assert_eq!(after, expected, "undo made no new ReplicaSet");
    let reused = e.replica_set_running("nginx:1");
    assert_eq!(reused["metadata"]["uid"], first["metadata"]["uid"], "the revision-1 ReplicaSet is the new one again");
    assert_eq!(spec_replicas(&reused), 3);
    assert_eq!(annotation(&reused, REVISION), Some("3"));
    assert_eq!(annotation(&reused, REVISION_HISTORY), Some("1"));
    assert_eq!(annotation(&e.deployment(), REVISION), Some("3"));
    assert_eq!(spec_replicas(&e.replica_set_running("nginx:2")), 0);

    let history = e.ok(&["rollout", "history", "deployment/web"]);
    assert_eq!(history_revisions(&history), [2, 3], "revision 1 now goes by 3: {history}");
}

/// `kubectl scale` while two ReplicaSets are active spreads the change over both in proportion
/// to their sizes (upstream's proportional scaling), and records the new deployment size on
/// each. The rollout is held midway by a new image that never turns ready, and paused.
#[test]
fn scaling_mid_rollout_scales_both_replica_sets_proportionally() {
    let e = Env::start();
    e.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=4"]);
    e.ok(&["patch", "deployment", "web", "--type=merge", "-p", SURGE_1_UNAVAILABLE_1]);
    e.rolled_out();

    // With 4 replicas, maxSurge 1 and maxUnavailable 1 the rollout takes old 4 → 3 and new
    // 0 → 2 (5 pods, 3 available) and then waits for new pods that never turn ready.
    e.ok(&["set", "image", "deployment/web", "nginx=nginx:fail"]);
    let sizes = || {
        let rss = e.replica_sets();
        let size = |image: &str| rss.iter().find(|rs| image_of(rs, "/spec/template") == image).map(spec_replicas);
        (size("nginx:1"), size("nginx:fail"))
    };
    e.eventually("the rollout to stop at old 3 / new 2", || (sizes() == (Some(3), Some(2))).then_some(()));
    e.ok(&["rollout", "pause", "deployment/web"]);
    e.eventually("the pause to be observed", || {
        let d = e.deployment();
        (d["status"]["observedGeneration"] == d["metadata"]["generation"]).then_some(())
    });
    assert_eq!(sizes(), (Some(3), Some(2)), "pausing moves nothing");

    // 5 pods for a maximum of 4 + 1 become 11 for 10 + 1: old 3 × 11/5 = 6.6 → 7 and
    // new 2 × 11/5 = 4.4 → 4.
    e.ok(&["scale", "deployment/web", "--replicas=10"]);
    e.eventually("both ReplicaSets to scale proportionally to 7 + 4", || (sizes() == (Some(7), Some(4))).then_some(()));
    for rs in e.replica_sets() {
        assert_eq!(annotation(&rs, DESIRED_REPLICAS), Some("10"), "{}", name_of(&rs));
        assert_eq!(annotation(&rs, MAX_REPLICAS), Some("11"), "{}", name_of(&rs));
    }
    let old = name_of(&e.replica_set_running("nginx:1")).to_string();
    let new = name_of(&e.replica_set_running("nginx:fail")).to_string();
    let described = e.eventually("the scaling events", || {
        let out = e.ok(&["describe", "deployment", "web"]);
        (out.contains(&format!("Scaled up replica set {old} from 3 to 7"))
            && out.contains(&format!("Scaled up replica set {new} from 2 to 4")))
        .then_some(out)
    });
    assert!(described.contains("10 desired"), "{described}");
    // Written through events.k8s.io/v1 by the deployment plugin: kubectl's From is its
    // reportingController.
    assert!(
        described.lines().any(|l| l.contains("ScalingReplicaSet") && l.contains("wasmcm.dev/deployment")),
        "{described}"
    );

    // And back down to 3 (max 4): 11 pods lose 7, larger ReplicaSets first — old 7 × 4/11 ≈
    // 2.55 → 3 and new 4 × 4/11 ≈ 1.45 → 1.
    e.ok(&["scale", "deployment/web", "--replicas=3"]);
    e.eventually("both ReplicaSets to scale proportionally to 3 + 1", || (sizes() == (Some(3), Some(1))).then_some(()));
    for rs in e.replica_sets() {
        assert_eq!(annotation(&rs, DESIRED_REPLICAS), Some("3"), "{}", name_of(&rs));
        assert_eq!(annotation(&rs, MAX_REPLICAS), Some("4"), "{}", name_of(&rs));
    }
    // Still paused: nothing else moves.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(sizes(), (Some(3), Some(1)));
}

/// A paused deployment takes template changes without rolling them out (no new ReplicaSet,
/// Progressing says DeploymentPaused); resumed, it rolls them out.
#[test]
fn a_paused_deployment_rolls_out_nothing_until_resumed() {
    let e = Env::start();
    e.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=3"]);
    e.rolled_out();
    e.ok(&["rollout", "pause", "deployment/web"]);
    e.ok(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    // Once the controller has observed the new template it has had its chance to act on it.
    let d = e.eventually("the paused template change to be observed", || {
        let d = e.deployment();
        let reason = condition(&d, "Progressing").and_then(|c| c["reason"].as_str().map(String::from));
        (d["status"]["observedGeneration"] == d["metadata"]["generation"]
            && reason.as_deref() == Some("DeploymentPaused"))
        .then_some(d)
    });
    assert_eq!(condition(&d, "Progressing").unwrap()["status"], "Unknown");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(e.replica_sets().len(), 1, "no new ReplicaSet while paused");
    assert!(e.live_pods().iter().all(|p| image_of(p, "") == "nginx:1"));

    e.ok(&["rollout", "resume", "deployment/web"]);
    e.rolled_out();
    e.settled_on("nginx:2", 3);
    assert_eq!(e.replica_sets().len(), 2);
    let progressing = condition(&e.deployment(), "Progressing").unwrap();
    assert_eq!(progressing["reason"], "NewReplicaSetAvailable");
}

/// The Recreate strategy stops every old pod before the first new one is created: at no
/// instant does an old pod that may still be running coexist with a new pod.
/// KCM's deployment controller has no handler for pod additions and updates: it hears of them
/// as changes of the ReplicaSets' status. A pod change that changes no status (here an
/// annotation) wakes the ReplicaSet's plugin and not the Deployment's.
#[test]
fn pod_updates_wake_the_replica_set_plugin_and_not_the_deployment_plugin() {
    let env = Env::start();
    env.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=2"]);
    env.rolled_out();
    env.settled_on("nginx:1", 2);
    // Whatever the rollout still has in flight settles first.
    let settled = |plugin: &str| {
        let mut last = env.reconciles(plugin);
        env.eventually(&format!("{plugin} reconciles to stop"), || {
            std::thread::sleep(Duration::from_secs(2));
            let now = env.reconciles(plugin);
            let quiet = now == last;
            last = now;
            quiet.then_some(now)
        })
    };
    let (deployment, replica_set) = (settled("deployment"), settled("replicaset"));
    let pods = env.live_pods();
    for round in 0..3 {
        for p in &pods {
            env.ok(&["annotate", "pod", name_of(p), &format!("touched={round}"), "--overwrite"]);
        }
    }
    // The queue may fold updates of one key together: at least one reconcile, then time for
    // the rest to be routed.
    env.eventually("the ReplicaSet plugin to hear of the pod updates", || {
        (env.reconciles("replicaset") > replica_set).then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    let woken = env.reconciles("replicaset");
    assert_eq!(
        env.reconciles("deployment"),
        deployment,
        "six pod updates ({} ReplicaSet reconciles) must not wake the deployment plugin",
        woken - replica_set
    );
}

#[test]
fn recreate_never_runs_old_and_new_pods_together() {
    let e = Env::start();
    e.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=3"]);
    // rollingUpdate must go: it is invalid with Recreate.
    e.ok(&[
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}"#,
    ]);
    e.rolled_out();
    e.settled_on("nginx:1", 3);

    let watch = PodWatch::start(&e);
    e.ok(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    e.rolled_out();
    e.settled_on("nginx:2", 3);
    let states = watch.stop();

    for (i, pods) in states.iter().enumerate() {
        // Terminating counts as running: its containers are still stopping (upstream's
        // oldPodsRunning).
        let old_running = pods.iter().any(|p| p.image == "nginx:1" && !p.finished);
        let new_exists = pods.iter().any(|p| p.image == "nginx:2");
        assert!(!(old_running && new_exists), "instant {i}: old and new pods together: {pods:#?}");
    }
    assert!(states.first().is_some_and(|s| s.len() == 3 && s.iter().all(|p| p.image == "nginx:1")));
    assert!(
        states.iter().any(|s| s.is_empty()),
        "there was an instant with no pod at all, between the old ones and the new"
    );
}

/// A rollout whose pods never turn ready exceeds its progress deadline: `rollout status` fails
/// saying so, the condition says so, and the old pods keep serving.
#[test]
fn rollout_status_fails_once_the_progress_deadline_is_exceeded() {
    let e = Env::start();
    e.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=2"]);
    e.rolled_out();
    e.ok(&["patch", "deployment", "web", "--type=merge", "-p", r#"{"spec":{"progressDeadlineSeconds":5}}"#]);
    e.ok(&["set", "image", "deployment/web", "nginx=nginx:fail"]);

    let started = Instant::now();
    let out = e.rollout_status();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "rollout status must fail: {}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.contains("deployment \"web\" exceeded its progress deadline"), "{stderr}");
    assert!(started.elapsed() >= Duration::from_secs(4), "not before the deadline: {:?}", started.elapsed());

    let progressing = condition(&e.deployment(), "Progressing").unwrap();
    assert_eq!(progressing["status"], "False");
    assert_eq!(progressing["reason"], "ProgressDeadlineExceeded");
    let new = e.replica_set_running("nginx:fail");
    assert!(
        progressing["message"]
            .as_str()
            .unwrap()
            .contains(&format!("ReplicaSet \"{}\" has timed out progressing", name_of(&new))),
        "{progressing}"
    );
    // Defaults for 2 replicas: maxUnavailable 0, so the failed rollout never took an old pod.
    let old_ready = e.live_pods().iter().filter(|p| image_of(p, "") == "nginx:1" && pod_ready(p)).count();
    assert_eq!(old_ready, 2, "the old pods still serve");

    // A fixed template is a new rollout, with a new deadline: it completes.
    e.ok(&["set", "image", "deployment/web", "nginx=nginx:2"]);
    e.rolled_out();
    e.settled_on("nginx:2", 2);
    let progressing = condition(&e.deployment(), "Progressing").unwrap();
    assert_eq!(
        (progressing["status"].as_str(), progressing["reason"].as_str()),
        (Some("True"), Some("NewReplicaSetAvailable"))
    );
}

/// With `rollback.wasmcm.dev/on-failure: "true"`, a rollout that exceeds its progress deadline
/// is rolled back to the last revision that was fully available, by the rollback plugin.
#[test]
fn a_failed_rollout_rolls_back_to_the_last_good_revision_when_asked() {
    assert!(wasmcm::builtin::get("rollback").is_some(), "the rollback plugin is built in");
    let e = Env::start();
    e.ok(&["create", "deployment", "web", "--image=nginx:1", "--replicas=2"]);
    e.ok(&["annotate", "deployment", "web", &format!("{ROLLBACK_ON_FAILURE}=true")]);
    e.rolled_out();
    // The plugin can only go back to a revision it has seen fully available: wait until it has
    // recorded revision 1, as it would have long before any real failure.
    e.eventually("revision 1 to be recorded as fully available", || {
        (annotation(&e.deployment(), ROLLBACK_LAST_AVAILABLE_REVISION) == Some("1")).then_some(())
    });
    e.ok(&["patch", "deployment", "web", "--type=merge", "-p", r#"{"spec":{"progressDeadlineSeconds":5}}"#]);
    e.ok(&["set", "image", "deployment/web", "nginx=nginx:fail"]);

    let d = e.eventually("the deployment to be rolled back to nginx:1", || {
        let d = e.deployment();
        (image_of(&d, "/spec/template") == "nginx:1").then_some(d)
    });
    assert_eq!(annotation(&d, ROLLBACK_FAILED_REVISION), Some("2"), "the failed revision is recorded");
    e.rolled_out();
    e.settled_on("nginx:1", 2);
    // Like `rollout undo`: revision 1's ReplicaSet is the new one again, as revision 3.
    assert_eq!(e.replica_sets().len(), 2, "the rollback reused revision 1's ReplicaSet");
    let reused = e.replica_set_running("nginx:1");
    assert_eq!((annotation(&reused, REVISION), annotation(&reused, REVISION_HISTORY)), (Some("3"), Some("1")));
    assert_eq!(spec_replicas(&e.replica_set_running("nginx:fail")), 0);
    let events =
        items(e.json(&["get", "events", "--field-selector", "reason=DeploymentRollback,involvedObject.name=web"]));
    let messages: Vec<&str> = events.iter().filter_map(|ev| ev["message"].as_str()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("from revision 2 to revision 1") && m.contains("exceeded its progress deadline")),
        "a DeploymentRollback event says why: {messages:?}"
    );
}
