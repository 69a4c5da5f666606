//! Active-active replicas (`wasmcm run --shards`): `wasmcm run` processes on one cluster split
//! the keys between them by shard Leases, as deploy/sharding configures them (the host's
//! ServiceAccount with deploy/manifests' RBAC plus deploy/sharding's Role). 120 Deployments in
//! 30 namespaces stay reconciled while replicas are killed (SIGKILL), frozen past their leases
//! (SIGSTOP, then resumed), added (3 → 5) and stopped (5 → 2, SIGTERM), under continuous
//! changes. The API server audits every plugin write against the Lease of its shard, and each
//! host logs every reconcile with its key and duration: no write comes from a replica that did
//! not validly hold the shard, and no key is reconciled by two replicas at once.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wasmcm_apiserver::{AuditLease, Cluster, ClusterConfig};

const SHARDS: u32 = 12;
/// Lease timing of the hosts (seconds): duration, renew deadline, retry period. The fence
/// stops a write at the renew deadline, as it leaves; the audit judges it as the server reads
/// it, which on a starved 2-core machine came at least 1.3 s later (a fresh-clone CI run, 4 s and
/// 3 s). The gap between the two is that allowance: 2 s here, 5 s at KCM's 15 s and 10 s.
const LEASE: (u64, u64, u64) = (5, 3, 1);

struct Group {
    /// Namespaces and Deployments in each.
    workload: (usize, usize),
    cluster: Cluster,
    client: kube::Client,
    kubeconfig: PathBuf,
    plugins: tempfile::TempDir,
    logs: tempfile::TempDir,
    hosts: BTreeMap<String, Child>,
}

impl Group {
    /// `filtering`: whether the server serves `shardSelector`.
    async fn start(workload: (usize, usize), filtering: bool) -> Group {
        // Each write judged by the Lease the group's anchor says entitles it when it arrives.
        let config = ClusterConfig {
            audit_lease: Some(AuditLease::Group { namespace: "wasmcm".into(), name: "wasmcm".into() }),
            sharded_list_watch: filtering,
            ..wasmcm_test_support::quick_config()
        };
        let cluster = Cluster::start(config).await.expect("cluster starts");
        let client = wasmcm_test_support::client(&cluster.kubeconfig).await;
        common::kubectl_apply(&cluster.kubeconfig, &common::RBAC_MANIFESTS);
        let sharding = common::workspace_root().join("deploy/sharding/role.yaml");
        let out = wasmcm_test_support::kubectl(&cluster.kubeconfig, &["apply", "-f", sharding.to_str().unwrap()], None);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let token = cluster.service_account_token("wasmcm", "wasmcm").unwrap();
        let kubeconfig = cluster.kubeconfig_for_token(&token).unwrap();
        Group {
            workload,
            cluster,
            client,
            kubeconfig,
            plugins: common::plugins_dir(),
            logs: tempfile::tempdir().unwrap(),
            hosts: BTreeMap::new(),
        }
    }

    fn log(&self, identity: &str) -> PathBuf {
        self.logs.path().join(format!("{identity}.log"))
    }

    /// The replica's admin address, from what it printed at start.
    async fn admin(&self, identity: &str) -> std::net::SocketAddr {
        let out = self.logs.path().join(format!("{identity}.out"));
        common::eventually(&format!("{identity} to serve its metrics"), || async {
            let text = std::fs::read_to_string(&out).ok()?;
            let line = text.lines().find_map(|l| l.strip_prefix("metrics: http://"))?;
            line.trim_end_matches("/metrics").parse().ok()
        })
        .await
    }

    /// The Deployments in the replica's caches (`wasmcm_informer_objects`).
    async fn cached_deployments(&self, identity: &str) -> u64 {
        let (_, text) = common::http_get(self.admin(identity).await, "/metrics").await;
        text.lines()
            .find_map(|l| l.strip_prefix(r#"wasmcm_informer_objects{kind="apps/v1/Deployment"} "#))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no Deployment informer in {identity}'s metrics"))
    }

    /// Starts the replica `identity` as deploy/sharding runs it (quicker lease timing).
    fn start_host(&mut self, identity: &str) {
        self.start_host_as(identity, &["--shards", &SHARDS.to_string()]);
    }

    /// Starts the replica `identity` in the shape `shape` (`--shards N`, or leader election).
    fn start_host_as(&mut self, identity: &str, shape: &[&str]) {
        let log = std::fs::File::create(self.log(identity)).unwrap();
        let out = std::fs::File::create(self.logs.path().join(format!("{identity}.out"))).unwrap();
        let (duration, deadline, retry) = LEASE;
        let child = Command::new(env!("CARGO_BIN_EXE_wasmcm"))
            .args(["--log-format", "json", "--cache-dir"])
            .arg(common::precompiled_dir())
            .arg("run")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--plugins")
            .arg(self.plugins.path())
            .args(["--strict", "--metrics-bind-address", "127.0.0.1:0"])
            .args(shape)
            .args(["--leader-elect-resource-namespace", "wasmcm", "--kube-api-qps", "300", "--kube-api-burst", "600"])
            .args(["--leader-elect-lease-duration", &duration.to_string()])
            .args(["--leader-elect-renew-deadline", &deadline.to_string()])
            .args(["--leader-elect-retry-period", &retry.to_string()])
            .env("POD_NAME", identity)
            .env("POD_NAMESPACE", "wasmcm")
            .env("RUST_LOG", "warn,wasmcm=info,wasmcm::runtime::controller=debug")
            .stdout(out)
            .stderr(log)
            .spawn()
            .expect("wasmcm runs");
        self.hosts.insert(identity.into(), child);
    }

    fn signal(&self, identity: &str, signal: &str) {
        let child = &self.hosts[identity];
        let status = Command::new("kill").args([signal, &child.id().to_string()]).status().expect("kill runs");
        assert!(status.success(), "kill {signal} {identity}");
    }

    async fn exit_code(&mut self, identity: &str) -> Option<i32> {
        let child = self.hosts.get_mut(identity).unwrap();
        let deadline = tokio::time::Instant::now() + common::PATIENCE;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.code();
            }
            assert!(tokio::time::Instant::now() < deadline, "{identity} did not exit");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Each shard's holder ("" for none), by the shard Leases.
    async fn holders(&self) -> Vec<String> {
        self.holders_of(SHARDS).await
    }

    /// The holders of shards `0..count`.
    async fn holders_of(&self, count: u32) -> Vec<String> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "wasmcm");
        let listed = leases.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default();
        let holder_of = |name: &str| {
            listed
                .iter()
                .find(|l| l.metadata.name.as_deref() == Some(name))
                .and_then(|l| l.spec.as_ref()?.holder_identity.clone())
                .unwrap_or_default()
        };
        (0..count).map(|i| holder_of(&format!("wasmcm-shard-{i}"))).collect()
    }

    /// Waits until every shard is held by one of `members`, each holding its fair share.
    async fn balanced_over(&self, members: &[&str]) {
        self.balanced(members, SHARDS).await;
    }

    /// Waits until shards `0..count` are held by `members`, each holding its fair share.
    async fn balanced(&self, members: &[&str], count: u32) {
        let fair = (count as usize).div_ceil(members.len());
        let what = format!("the {count} shards held by {members:?}, at most {fair} each");
        common::eventually(&what, || async {
            let holders = self.holders_of(count).await;
            let all_held = holders.iter().all(|h| members.contains(&h.as_str()));
            let loads_fair = members.iter().all(|m| holders.iter().filter(|h| h == m).count() <= fair);
            (all_held && loads_fair).then_some(())
        })
        .await;
    }

    async fn create_workload(&self) {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        let (count, per_namespace) = self.workload;
        for n in 0..count {
            let ns = format!("team-{n:02}");
            let namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
            namespaces.create(&PostParams::default(), &namespace).await.unwrap();
            let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), &ns);
            for d in 0..per_namespace {
                let name = format!("web-{d:02}");
                let deployment = serde_json::from_value(json!({
                    "metadata": {"name": name},
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name}},
                                     "spec": {"containers": [{"name": "web", "image": "nginx:1"}]}},
                    },
                }))
                .unwrap();
                deployments.create(&PostParams::default(), &deployment).await.unwrap();
            }
        }
    }

    /// Patches every Deployment with `patch` (a merge patch).
    async fn patch_all(&self, patch: Value) {
        let deployments: Api<Deployment> = Api::all(self.client.clone());
        let all = deployments.list(&ListParams::default()).await.unwrap().items;
        let patches = all.iter().map(|d| {
            let api: Api<Deployment> = Api::namespaced(self.client.clone(), d.metadata.namespace.as_deref().unwrap());
            let (name, patch) = (d.metadata.name.clone().unwrap(), patch.clone());
            async move { api.patch(&name, &PatchParams::default(), &Patch::Merge(patch)).await.unwrap() }
        });
        futures_util::future::join_all(patches).await;
    }

    /// Waits until every Deployment runs its replicas of its current template, all available.
    async fn converged(&self, what: &str) {
        let deployments: Api<Deployment> = Api::all(self.client.clone());
        common::eventually(what, || async {
            let all = deployments.list(&ListParams::default()).await.ok()?.items;
            let done = all.iter().all(|d| {
                let want = d.spec.replicas.unwrap_or(1);
                let status = d.status.clone().unwrap_or_default();
                status.observed_generation == d.metadata.generation
                    && status.replicas == Some(want)
                    && status.updated_replicas == Some(want)
                    && status.available_replicas == Some(want)
            });
            (all.len() == self.workload.0 * self.workload.1 && done).then_some(())
        })
        .await;
    }
}

/// A failed test leaves no replica running.
impl Drop for Group {
    fn drop(&mut self) {
        for child in self.hosts.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Where the server ignores `shardSelector` (before Kubernetes 1.36, or its gate off), the
/// replicas still split the keys, each caching every object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_filtering_server_replicas_split_the_keys_and_cache_everything() {
    let mut group = Group::start((12, 4), false).await;
    group.create_workload().await;
    for h in ["wasmcm-a", "wasmcm-b"] {
        group.start_host(h);
    }
    group.balanced_over(&["wasmcm-a", "wasmcm-b"]).await;
    group.converged("48 Deployments to converge on two replicas").await;
    group.patch_all(json!({"spec": {"replicas": 2}})).await;
    group.converged("the scale-up").await;
    for h in ["wasmcm-a", "wasmcm-b"] {
        assert_eq!(group.cached_deployments(h).await, 48, "{h} caches every Deployment");
    }
    let audit = group.cluster.take_audit();
    let writes: Vec<_> = audit.iter().filter(|r| r.user_agent.contains(" plugin/")).collect();
    let writers: std::collections::BTreeSet<_> = writes.iter().filter_map(|r| identity(&r.user_agent)).collect();
    assert_eq!(writers.len(), 2, "both replicas wrote: {writers:?}");
    let by_non_holder = writes.iter().filter(|r| r.valid_holder().map(str::to_string) != identity(&r.user_agent));
    assert_eq!(by_non_holder.count(), 0);
}

/// The identity in a wasmcm User-Agent: `wasmcm/0.1.0 (<identity>) plugin/<name>`.
fn identity(agent: &str) -> Option<String> {
    agent.split_once('(').and_then(|(_, r)| r.split_once(')')).map(|(i, _)| i.to_string())
}

/// One reconcile as a host logged it.
#[derive(Debug)]
struct Reconcile {
    host: String,
    plugin: String,
    key: String,
    start: f64,
    end: f64,
}

/// Every "reconciled" line of a host's JSON log: its end (the line's timestamp) and start (less
/// its duration).
fn reconciles(host: &str, log: &Path) -> Vec<Reconcile> {
    let text = std::fs::read_to_string(log).unwrap();
    let mut found = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        if v["fields"]["message"] != "reconciled" {
            continue;
        }
        let span = &v["span"];
        let field = |name: &str| span[name].as_str().or(v["fields"][name].as_str()).map(str::to_string);
        let duration = span["duration_ms"].as_u64().or(v["fields"]["duration_ms"].as_u64()).unwrap_or(0);
        let stamp: jiff::Timestamp = v["timestamp"].as_str().unwrap().parse().unwrap();
        let end = stamp.as_nanosecond() as f64 / 1e9;
        found.push(Reconcile {
            host: host.into(),
            plugin: field("plugin").unwrap(),
            key: field("key").unwrap(),
            start: end - (duration + 1) as f64 / 1e3,
            end,
        });
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_split_the_keys_and_hand_shards_over_without_overlap() {
    // 30 namespaces over 12 shards, 4 Deployments each: 120. How the namespaces fall on shards,
    // and so each replica's share, does not depend on how many Deployments a namespace holds;
    // 600 took this test to 8 minutes of a 2-core CI run and 240 to 2 of CPU, with nothing more
    // to show.
    let mut group = Group::start((30, 4), true).await;
    group.create_workload().await;
    for h in ["wasmcm-a", "wasmcm-b", "wasmcm-c"] {
        group.start_host(h);
    }
    group.balanced_over(&["wasmcm-a", "wasmcm-b", "wasmcm-c"]).await;
    group.converged("120 Deployments to converge on three replicas").await;

    // The server filters: each replica caches the Deployments of its shards' namespaces alone.
    let mut cached = Vec::new();
    for h in ["wasmcm-a", "wasmcm-b", "wasmcm-c"] {
        cached.push(group.cached_deployments(h).await);
    }
    assert_eq!(cached.iter().sum::<u64>(), 120, "every Deployment cached by exactly one replica: {cached:?}");
    assert!(cached.iter().all(|c| *c < 80), "about a third each: {cached:?}");

    // `wasmcm shards` tells who holds what.
    let shown = Command::new(env!("CARGO_BIN_EXE_wasmcm"))
        .args(["shards", "--namespace", "wasmcm", "--kubeconfig"])
        .arg(&group.cluster.kubeconfig)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    let holders = group.holders().await;
    for (i, h) in holders.iter().enumerate() {
        assert!(shown.lines().any(|l| l.split_whitespace().take(2).eq([i.to_string().as_str(), h])), "{shown}");
    }
    for m in ["wasmcm-a", "wasmcm-b", "wasmcm-c"] {
        assert!(shown.lines().any(|l| l.starts_with(m)), "member {m} in:\n{shown}");
    }

    // SIGKILL: b's shards are taken once its leases expire, and the work goes on.
    let killed_shards = holders.iter().filter(|h| *h == "wasmcm-b").count();
    assert!(killed_shards > 0);
    group.signal("wasmcm-b", "-KILL");
    group.exit_code("wasmcm-b").await;
    let killed = tokio::time::Instant::now();
    group.balanced_over(&["wasmcm-a", "wasmcm-c"]).await;
    let (duration, _, retry) = LEASE;
    let taken = killed.elapsed();
    // No sooner than its leases expire; no later than that plus the rounds that notice it.
    assert!(taken < Duration::from_secs(duration * 2 + retry * 4), "b's shards taken after {taken:?}");
    group
        .patch_all(json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}}))
        .await;
    group.converged("the image change after a replica was killed").await;

    // SIGSTOP a with work in flight, until its shards have moved; resumed, it writes nothing
    // for them (the audit below), drops them, and rejoins.
    group
        .patch_all(json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:3"}]}}}}))
        .await;
    group.signal("wasmcm-a", "-STOP");
    group.balanced_over(&["wasmcm-c"]).await;
    group.signal("wasmcm-a", "-CONT");
    group.balanced_over(&["wasmcm-a", "wasmcm-c"]).await;
    group.converged("the image change across a frozen replica").await;

    // 3 → 5 replicas under changes, then 5 → 2 by SIGTERM: handovers, where no reconcile of a
    // key may overlap another's (a frozen replica's, above, spans its freeze by nature; its
    // writes are what the fence stops, and the audit judges).
    let rebalancing = jiff::Timestamp::now().as_nanosecond() as f64 / 1e9;
    // Back to three, then five.
    group.start_host("wasmcm-d");
    group.balanced_over(&["wasmcm-a", "wasmcm-c", "wasmcm-d"]).await;
    for h in ["wasmcm-e", "wasmcm-f"] {
        group.start_host(h);
    }
    group.patch_all(json!({"spec": {"replicas": 2}})).await;
    group.balanced_over(&["wasmcm-a", "wasmcm-c", "wasmcm-d", "wasmcm-e", "wasmcm-f"]).await;
    group.converged("scaling up while replicas joined").await;
    group.patch_all(json!({"spec": {"replicas": 1}})).await;
    for h in ["wasmcm-a", "wasmcm-c", "wasmcm-d"] {
        group.signal(h, "-TERM");
    }
    for h in ["wasmcm-a", "wasmcm-c", "wasmcm-d"] {
        assert_eq!(group.exit_code(h).await, Some(0), "{h} stops cleanly on SIGTERM");
    }
    group.balanced_over(&["wasmcm-e", "wasmcm-f"]).await;
    group.converged("scaling down while replicas left").await;

    // The audit: every plugin write came from the valid holder of its shard's Lease.
    let audit = group.cluster.take_audit();
    let writes: Vec<_> = audit.iter().filter(|r| r.user_agent.contains(" plugin/")).collect();
    assert!(writes.len() > 2000, "{} plugin writes audited", writes.len());
    let by_non_holder: Vec<_> =
        writes.iter().filter(|r| r.valid_holder().map(str::to_string) != identity(&r.user_agent)).collect();
    assert!(
        by_non_holder.is_empty(),
        "{} of {} writes by a non-holder: {:#?}",
        by_non_holder.len(),
        writes.len(),
        &by_non_holder[..by_non_holder.len().min(5)]
    );

    // The reconcile logs: no key reconciled by two replicas at once.
    for h in ["wasmcm-e", "wasmcm-f"] {
        group.signal(h, "-TERM");
        assert_eq!(group.exit_code(h).await, Some(0));
    }
    let mut all: Vec<Reconcile> = group.hosts.keys().flat_map(|h| reconciles(h, &group.log(h))).collect();
    let hosts_seen: std::collections::BTreeSet<String> = all.iter().map(|r| r.host.clone()).collect();
    assert_eq!(hosts_seen.len(), 6, "every replica reconciled: {hosts_seen:?}");
    all.retain(|r| r.end >= rebalancing);
    all.sort_by(|a, b| (&a.plugin, &a.key, a.start).partial_cmp(&(&b.plugin, &b.key, b.start)).unwrap());
    let overlaps: Vec<_> = all
        .windows(2)
        .filter(|w| {
            w[0].plugin == w[1].plugin && w[0].key == w[1].key && w[0].host != w[1].host && w[1].start < w[0].end
        })
        .collect();
    assert!(
        overlaps.is_empty(),
        "{} overlapping reconciles of {} logged: {:#?}",
        overlaps.len(),
        all.len(),
        &overlaps[..overlaps.len().min(3)]
    );
}

/// The plugin writes audited since the last call, and those not sent by the valid holder of
/// the Lease that entitled them when they arrived (the anchor's holder under a leader, the
/// shard's under shards: `AuditLease::Group`). The host's own events about itself (`plugin/host`,
/// e.g. ShapeMismatch) come from any replica, unfenced.
fn plugin_writes(cluster: &Cluster) -> (Vec<wasmcm_apiserver::AuditRecord>, Vec<wasmcm_apiserver::AuditRecord>) {
    let plugin = |agent: &str| agent.contains(" plugin/") && !agent.ends_with(" plugin/host");
    let writes: Vec<_> = cluster.take_audit().into_iter().filter(|r| plugin(&r.user_agent)).collect();
    let bad =
        writes.iter().filter(|r| r.valid_holder().map(str::to_string) != identity(&r.user_agent)).cloned().collect();
    (writes, bad)
}

/// Who sent `writes`.
fn writers(writes: &[wasmcm_apiserver::AuditRecord]) -> std::collections::BTreeSet<String> {
    writes.iter().filter_map(|r| identity(&r.user_agent)).collect()
}

impl Group {
    /// `wasmcm shards`' output.
    fn shards_table(&self) -> String {
        let shown = Command::new(env!("CARGO_BIN_EXE_wasmcm"))
            .args(["shards", "--namespace", "wasmcm", "--kubeconfig"])
            .arg(&self.cluster.kubeconfig)
            .output()
            .unwrap();
        assert!(shown.status.success(), "{}", String::from_utf8_lossy(&shown.stderr));
        String::from_utf8_lossy(&shown.stdout).into_owned()
    }

    /// Waits until the replica's `/readyz` and metrics say it disagrees with the group; its
    /// `/readyz` text.
    async fn disagreeing(&self, identity: &str) -> String {
        let admin = self.admin(identity).await;
        common::eventually(&format!("{identity} to report that it disagrees with the group"), || async {
            let (code, ready) = common::http_get(admin, "/readyz").await;
            let (_, metrics) = common::http_get(admin, "/metrics").await;
            (code == 200
                && ready.contains("[-]group not taking part")
                && metrics.contains("wasmcm_group_shape_mismatch 1"))
            .then_some(ready)
        })
        .await
    }

    /// The anchor Lease's holder and shape annotation.
    async fn anchor(&self) -> (String, String) {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "wasmcm");
        let Ok(anchor) = leases.get("wasmcm").await else { return Default::default() };
        let holder = anchor.spec.and_then(|s| s.holder_identity).unwrap_or_default();
        let shape = anchor.metadata.annotations.and_then(|a| a.get("wasmcm.dev/shape").cloned()).unwrap_or_default();
        (holder, shape)
    }
}

/// A group of one shape, and beside it a replica run with another shard count and one run with
/// leader election (as a rolling change of the Deployment's flags puts them together): the two
/// take nothing and say why (their `/readyz`, a gauge, an Event on the anchor Lease, `wasmcm
/// shards`), every write comes from the group's valid holders; once the group's replicas have
/// gone, one of the two takes the group over in its shape, alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_in_another_shape_take_nothing_and_say_why() {
    let mut group = Group::start((6, 4), false).await;
    group.create_workload().await;
    for h in ["wasmcm-a", "wasmcm-b"] {
        group.start_host_as(h, &["--shards", "4"]);
    }
    group.balanced(&["wasmcm-a", "wasmcm-b"], 4).await;
    group.converged("24 Deployments on a group of 4 shards").await;
    group.start_host_as("wasmcm-c", &["--shards", "3"]);
    group.start_host_as("wasmcm-d", &["--leader-elect=true"]);
    let (c, d) = (group.disagreeing("wasmcm-c").await, group.disagreeing("wasmcm-d").await);
    let (four, three) = (format!("4 shards with {}s leases", LEASE.0), format!("3 shards with {}s leases", LEASE.0));
    assert!(c.contains(&format!("runs as {four}")) && c.contains(&format!("run as {three}")), "{c}");
    assert!(d.contains(&format!("runs as {four}")) && d.contains("run as one leader"), "{d}");
    group.patch_all(json!({"spec": {"replicas": 2}})).await;
    group.converged("the scale-up beside two disagreeing replicas").await;
    group.balanced(&["wasmcm-a", "wasmcm-b"], 4).await;
    let (writes, bad) = plugin_writes(&group.cluster);
    assert!(
        bad.is_empty(),
        "{} of {} writes by a non-holder: {:#?}",
        bad.len(),
        writes.len(),
        &bad[..bad.len().min(5)]
    );
    assert_eq!(writers(&writes), ["wasmcm-a", "wasmcm-b"].map(String::from).into(), "only the group wrote");

    // Said where an operator looks: an Event on the anchor Lease from each, and `wasmcm shards`.
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(group.client.clone(), "wasmcm");
    common::eventually("a ShapeMismatch event from each disagreeing replica", || async {
        let listed = events.list(&ListParams::default()).await.ok()?.items;
        let from = |who: &str| {
            listed.iter().any(|e| {
                e.reason.as_deref() == Some("ShapeMismatch")
                    && e.type_.as_deref() == Some("Warning")
                    && e.involved_object.name.as_deref() == Some("wasmcm")
                    && e.message.as_deref().is_some_and(|m| m.starts_with(&format!("{who}: ")))
            })
        };
        (from("wasmcm-c") && from("wasmcm-d")).then_some(())
    })
    .await;
    let table = group.shards_table();
    assert!(table.starts_with(&format!("GROUP wasmcm: {four}")), "{table}");
    let line = |who: &str| table.lines().find(|l| l.starts_with(who)).unwrap_or_else(|| panic!("{who} in:\n{table}"));
    assert!(line("wasmcm-c").contains(&three) && line("wasmcm-c").contains("DISAGREES"), "{table}");
    assert!(line("wasmcm-d").contains("one leader") && line("wasmcm-d").contains("DISAGREES"), "{table}");
    assert!(!line("wasmcm-a").contains("DISAGREES"), "{table}");

    // The group drains: its last member releases the anchor, and one of the two waiting takes
    // the group over in its own shape while the other goes on waiting.
    for h in ["wasmcm-a", "wasmcm-b"] {
        group.signal(h, "-TERM");
        assert_eq!(group.exit_code(h).await, Some(0), "{h} stops cleanly");
    }
    let (winner, shape) = common::eventually("c or d to take the group over", || async {
        let (holder, shape) = group.anchor().await;
        (["wasmcm-c", "wasmcm-d"].contains(&holder.as_str()) && shape != "shards=4").then_some((holder, shape))
    })
    .await;
    let loser = if winner == "wasmcm-c" { "wasmcm-d" } else { "wasmcm-c" };
    assert_eq!(shape, if winner == "wasmcm-c" { "shards=3" } else { "leader" }, "the winner's shape");
    group.patch_all(json!({"spec": {"replicas": 1}})).await;
    group.converged("the scale-down under the new shape").await;
    group.disagreeing(loser).await;
    let (writes, bad) = plugin_writes(&group.cluster);
    assert!(
        bad.is_empty(),
        "{} of {} writes by a non-holder: {:#?}",
        bad.len(),
        writes.len(),
        &bad[..bad.len().min(5)]
    );
    let wrote = writers(&writes);
    assert!(wrote.contains(&winner) && !wrote.contains(loser), "{winner} took over alone: {wrote:?}");
}

/// The procedure deploy/README.md gives for changing the shard count, as a Deployment's rolling
/// update performs it (a new pod first, then an old one stopped): replicas run with 3 shards
/// join a group of 4 and wait; the old ones leave one by one while Deployments change; the last
/// releases the anchor and the new shape starts. No ReplicaSet ever gets more pods than it asked
/// for, no Deployment more than replicas + maxSurge (the chaos soak's invariants, on every change
/// the store makes), and every write comes from the valid holder of its Lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_change_of_the_shard_count_never_writes_twice() {
    let mut group = Group::start((0, 0), false).await;
    let invariants = wasmcm_test_support::chaos::Invariants::watch(&mut group.cluster);
    let namespaces: Vec<String> = (0..8).map(|n| format!("soak-{n}")).collect();
    let mut apps = Vec::new();
    for (n, ns) in namespaces.iter().enumerate() {
        let namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(group.client.clone());
        api.create(&PostParams::default(), &namespace).await.unwrap();
        for i in (n * 3)..(n * 3 + 3) {
            let d: Api<Deployment> = Api::namespaced(group.client.clone(), ns);
            d.create(&PostParams::default(), &wasmcm_test_support::chaos::soak_deployment(ns, i)).await.unwrap();
            apps.push((ns.clone(), format!("d-{i:03}")));
        }
    }
    group.workload = (1, apps.len());
    for h in ["old-a", "old-b", "old-c"] {
        group.start_host_as(h, &["--shards", "4"]);
    }
    group.balanced(&["old-a", "old-b", "old-c"], 4).await;
    group.converged("24 Deployments on 4 shards").await;

    // Churn while the shape changes, as the soak's groups take it: image changes for all, and
    // scaling for the scale group (`d-<i>` with i % 3 == 1), every few hundred ms.
    let churn = {
        let client = group.client.clone();
        let apps = apps.clone();
        tokio::spawn(async move {
            for round in 0usize.. {
                let (ns, name) = &apps[round % apps.len()];
                let d: Api<Deployment> = Api::namespaced(client.clone(), ns);
                let scaled = name.trim_start_matches("d-").parse::<usize>().is_ok_and(|i| i % 3 == 1);
                let patch = if scaled && round % 2 == 1 {
                    json!({"spec": {"replicas": 1 + round % 4}})
                } else {
                    json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": format!("img:{round}")}]}}}})
                };
                let _ = d.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    for (new, old) in [("new-a", "old-a"), ("new-b", "old-b"), ("new-c", "old-c")] {
        group.start_host_as(new, &["--shards", "3"]);
        group.disagreeing(new).await;
        group.signal(old, "-TERM");
        assert_eq!(group.exit_code(old).await, Some(0), "{old} stops cleanly");
    }
    group.balanced(&["new-a", "new-b", "new-c"], 3).await;
    churn.abort();
    let _ = churn.await;
    group.converged("the workload under the new shape").await;
    let (anchor_holder, shape) = group.anchor().await;
    assert_eq!(shape, "shards=3", "held by {anchor_holder}");
    common::eventually("the shard Lease the old shape left beyond 3 to go", || async {
        let leases: Api<Lease> = Api::namespaced(group.client.clone(), "wasmcm");
        leases.get_opt("wasmcm-shard-3").await.ok()?.is_none().then_some(())
    })
    .await;

    let (checks, violations) = invariants.finish();
    assert!(checks > 100, "{checks} checks");
    assert!(violations.is_empty(), "{} violations in {checks} checks:\n{}", violations.len(), violations.join("\n"));
    let (writes, bad) = plugin_writes(&group.cluster);
    assert!(
        bad.is_empty(),
        "{} of {} writes by a non-holder: {:#?}",
        bad.len(),
        writes.len(),
        &bad[..bad.len().min(5)]
    );
    // Both shapes did work (which replica of a shape wrote depends on the churn's namespaces).
    let wrote = writers(&writes);
    assert!(wrote.iter().any(|h| h.starts_with("old-")) && wrote.iter().any(|h| h.starts_with("new-")), "{wrote:?}");
}

/// Leases anyone may create beside the group (a plugin's writes are refused by the writer, but
/// any other Lease writer in the namespace): member Leases under the reserved names and under
/// others, with the group's labels and a 68-year duration, never renewed, and a shard Lease held
/// by nobody that renews. None of them is trusted past the group's own lease duration, the other
/// names not at all: every shard is held by the real replicas and every Deployment reconciled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_leases_do_not_starve_the_group() {
    let mut group = Group::start((10, 1), false).await;
    let leases: Api<Lease> = Api::namespaced(group.client.clone(), "wasmcm");
    let forever = 68 * 365 * 24 * 3600;
    let forge = |name: String, role: &str, holder: String| {
        serde_json::from_value::<Lease>(json!({
            "metadata": {"name": name, "labels": {"wasmcm.dev/shard-group": "wasmcm", "wasmcm.dev/shard-role": role}},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": forever,
                     "renewTime": "2026-11-27T00:00:00.000000Z", "acquireTime": "2026-11-27T00:00:00.000000Z"},
        }))
        .unwrap()
    };
    for i in 0..4 {
        let member = forge(format!("wasmcm-member-ghost-{i}"), "member", format!("ghost-{i}"));
        leases.create(&PostParams::default(), &member).await.unwrap();
        let other = forge(format!("ghost-{i}"), "member", format!("spectre-{i}"));
        leases.create(&PostParams::default(), &other).await.unwrap();
    }
    let holder = "ghost-0\u{1b}[2J\nforged".to_string();
    leases.create(&PostParams::default(), &forge("wasmcm-shard-2".into(), "shard", holder)).await.unwrap();
    // What a Lease writer put in a holder reaches the operator's terminal escaped.
    let table = group.shards_table();
    assert!(table.contains(r"ghost-0\u{1b}[2J\nforged") && !table.contains('\u{1b}'), "{table}");
    for h in ["wasmcm-a", "wasmcm-b"] {
        group.start_host_as(h, &["--shards", "4"]);
    }
    group.balanced(&["wasmcm-a", "wasmcm-b"], 4).await;
    group.create_workload().await;
    group.converged("10 Deployments reconciled beside forged Leases").await;
    let (writes, bad) = plugin_writes(&group.cluster);
    assert!(
        bad.is_empty(),
        "{} of {} writes by a non-holder: {:#?}",
        bad.len(),
        writes.len(),
        &bad[..bad.len().min(5)]
    );
}
