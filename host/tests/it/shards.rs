//! Active-active replicas (`wasmcm run --shards`): `wasmcm run` processes on one cluster split
//! the keys between them by shard Leases, as deploy/sharding configures them (the host's
//! ServiceAccount with deploy/manifests' RBAC plus deploy/sharding's Role). 600 Deployments in
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
/// Lease timing of the hosts (seconds): duration, renew deadline, retry period.
const LEASE: (u64, u64, u64) = (4, 3, 1);

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
        let leases = (0..SHARDS).map(|i| format!("wasmcm-shard-{i}")).collect();
        let config = ClusterConfig {
            audit_lease: Some(AuditLease::Shards { namespace: "wasmcm".into(), leases }),
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
            .args(["--strict", "--metrics-bind-address", "127.0.0.1:0", "--shards", &SHARDS.to_string()])
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
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "wasmcm");
        let listed = leases.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default();
        let holder_of = |name: &str| {
            listed
                .iter()
                .find(|l| l.metadata.name.as_deref() == Some(name))
                .and_then(|l| l.spec.as_ref()?.holder_identity.clone())
                .unwrap_or_default()
        };
        (0..SHARDS).map(|i| holder_of(&format!("wasmcm-shard-{i}"))).collect()
    }

    /// Waits until every shard is held by one of `members`, each holding its fair share.
    async fn balanced_over(&self, members: &[&str]) {
        let fair = (SHARDS as usize).div_ceil(members.len());
        let what = format!("the {SHARDS} shards held by {members:?}, at most {fair} each");
        common::eventually(&what, || async {
            let holders = self.holders().await;
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
    let mut group = Group::start((30, 20), true).await;
    group.create_workload().await;
    for h in ["wasmcm-a", "wasmcm-b", "wasmcm-c"] {
        group.start_host(h);
    }
    group.balanced_over(&["wasmcm-a", "wasmcm-b", "wasmcm-c"]).await;
    group.converged("600 Deployments to converge on three replicas").await;

    // The server filters: each replica caches the Deployments of its shards' namespaces alone.
    let mut cached = Vec::new();
    for h in ["wasmcm-a", "wasmcm-b", "wasmcm-c"] {
        cached.push(group.cached_deployments(h).await);
    }
    assert_eq!(cached.iter().sum::<u64>(), 600, "every Deployment cached by exactly one replica: {cached:?}");
    assert!(cached.iter().all(|c| *c < 400), "about a third each: {cached:?}");

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
    assert!(writes.len() > 3000, "{} plugin writes audited", writes.len());
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
