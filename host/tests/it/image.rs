//! The image, built and run without a Docker engine: `scripts/build-image.sh` assembles the OCI
//! layout (umoci) from this build's binary; skopeo reads it back and its configuration must be
//! the Dockerfile's runtime stage; umoci unpacks it into a runtime bundle; and runc — the OCI
//! runtime under containerd and CRI-O — runs it as a kubelet would run the pod of
//! deploy/manifests' Deployment, taken from the API after `kubectl apply -f deploy/manifests`:
//! its args and env (downward API), its ServiceAccount's token (TokenRequest) and the cluster CA
//! mounted at /var/run/secrets/kubernetes.io/serviceaccount, the plugin ConfigMap mounted
//! read-only, the cache emptyDir, its securityContext (user 65532, read-only root filesystem, no
//! privilege escalation, no capabilities) and its memory limit; probed like the kubelet does.
//!
//! What differs from a node: the container shares the host's network (no CNI here), so its
//! metrics port 8080 is mapped to a free port by rewriting `--metrics-bind-address`; seccomp
//! RuntimeDefault is not applied; the pods the simulated kubelet reports for the Deployment
//! wasmcm are not this container. Needs root (runc), and umoci, skopeo and runc
//! (`scripts/install-image-tools.sh`, which `make test` runs); without them the test fails.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Event, Pod, PodSpec, ServiceAccount};
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};

const TAG: &str = "test";
const POD: &str = "wasmcm-7c9f8d6b5-x2x7q";

/// Runs a command off the async workers (the embedded cluster serves on them); its output.
fn run(program: &str, args: &[&str]) -> Output {
    tokio::task::block_in_place(|| {
        Command::new(program)
            .args(args)
            .current_dir(common::workspace_root())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{program} runs (scripts/install-image-tools.sh installs it): {e}"))
    })
}

/// stdout of a command that must succeed.
fn ok(program: &str, args: &[&str]) -> String {
    let out = run(program, args);
    assert!(
        out.status.success(),
        "{program} {}: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The image configuration the Dockerfile's last stage declares, in the OCI config's terms.
fn dockerfile_config() -> Value {
    let text = std::fs::read_to_string(common::workspace_root().join("Dockerfile")).unwrap();
    let mut instructions = Vec::new();
    let mut current = String::new();
    for line in text.lines().map(str::trim) {
        if current.is_empty() && (line.is_empty() || line.starts_with('#')) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(head) => current.push_str(head),
            None => instructions.push(std::mem::take(&mut current) + line),
        }
    }
    let last = instructions.iter().rposition(|i| i.starts_with("FROM ")).expect("a FROM");
    let mut config = json!({"Env": [], "ExposedPorts": {}, "Labels": {}});
    for instruction in &instructions[last + 1..] {
        let (op, rest) = instruction.split_once(' ').unwrap();
        match op {
            "USER" => config["User"] = rest.into(),
            "ENTRYPOINT" | "CMD" => {
                let key = if op == "CMD" { "Cmd" } else { "Entrypoint" };
                config[key] = serde_json::from_str(rest).expect("exec form");
            }
            "ENV" => config["Env"].as_array_mut().unwrap().push(rest.into()),
            "EXPOSE" => config["ExposedPorts"][format!("{rest}/tcp")] = json!({}),
            "LABEL" => {
                // key="value" pairs.
                let mut rest = rest.trim();
                while let Some((key, after)) = rest.split_once("=\"") {
                    let (value, after) = after.split_once('"').expect("a closing quote");
                    config["Labels"][key.trim()] = value.into();
                    rest = after.trim();
                }
            }
            _ => {}
        }
    }
    config
}

/// Builds the image from this build's binary into `dir`; its layout path.
fn build_image(dir: &Path) -> PathBuf {
    let layout = dir.join("layout");
    let script = common::workspace_root().join("scripts/build-image.sh");
    let reference = ok(
        script.to_str().unwrap(),
        &["--binary", env!("CARGO_BIN_EXE_wasmcm"), "--out", layout.to_str().unwrap(), "--tag", TAG],
    );
    assert_eq!(reference.trim(), format!("oci:{}:{TAG}", layout.display()));
    layout
}

/// A file of the bundle's root filesystem.
fn rootfs(bundle: &Path, path: &str) -> PathBuf {
    bundle.join("rootfs").join(path.trim_start_matches('/'))
}

/// The pod of the Deployment `namespace/name`, as the API serves it.
async fn pod_template(admin: &Client, namespace: &str, name: &str) -> PodSpec {
    let deployment = Api::<Deployment>::namespaced(admin.clone(), namespace).get(name).await.unwrap();
    deployment.spec.template.spec.unwrap()
}

/// What a kubelet prepares for a container of `pod`, turned into the runc configuration of
/// `bundle` (unpacked by umoci from the image, so holding the image's entrypoint, cmd, env and
/// user): volumes in `volumes_dir`, the service-account token, env, args, securityContext.
struct Kubelet<'a> {
    admin: &'a Client,
    cluster: &'a wasmcm_apiserver::Cluster,
    namespace: &'a str,
    volumes_dir: PathBuf,
    metrics_port: u16,
}

impl Kubelet<'_> {
    async fn configure(&self, bundle: &Path, pod: &PodSpec) {
        let container: &Container = &pod.containers[0];
        let config_path = bundle.join("config.json");
        let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
        let image_args: Vec<String> = serde_json::from_value(config["process"]["args"].clone()).unwrap();

        // Command and args: the image's entrypoint, the container's args instead of its cmd.
        let mut args = vec![image_args[0].clone()];
        for arg in container.args.iter().flatten() {
            // The port mapping of a shared network namespace.
            args.push(arg.replace("--metrics-bind-address=0.0.0.0:8080", &self.metrics_bind()));
        }
        assert!(args.contains(&self.metrics_bind()), "the manifests bind metrics on 0.0.0.0:8080: {args:?}");
        config["process"]["args"] = json!(args);
        config["process"]["terminal"] = json!(false);

        // Env: the image's, the container's (downward API resolved), the service's address.
        let env = config["process"]["env"].as_array_mut().unwrap();
        for var in container.env.iter().flatten() {
            let value = match (&var.value, var.value_from.as_ref().and_then(|f| f.field_ref.as_ref())) {
                (Some(v), _) => v.clone(),
                (None, Some(field)) => match field.field_path.as_str() {
                    "metadata.name" => POD.to_string(),
                    "metadata.namespace" => self.namespace.to_string(),
                    other => panic!("downward API field {other} is not resolved here"),
                },
                _ => panic!("env {} has no value this test resolves", var.name),
            };
            env.push(json!(format!("{}={value}", var.name)));
        }
        env.push(json!("KUBERNETES_SERVICE_HOST=127.0.0.1"));
        env.push(json!(format!("KUBERNETES_SERVICE_PORT={}", self.cluster.addr.port())));

        // securityContext: the container's over the pod's.
        let pod_sc = pod.security_context.clone().unwrap_or_default();
        let sc = container.security_context.clone().unwrap_or_default();
        let uid = sc.run_as_user.or(pod_sc.run_as_user).expect("runAsUser");
        let gid = sc.run_as_group.or(pod_sc.run_as_group).expect("runAsGroup");
        assert!(sc.run_as_non_root.or(pod_sc.run_as_non_root) == Some(true) && uid != 0);
        config["process"]["user"] =
            json!({"uid": uid, "gid": gid, "additionalGids": pod_sc.fs_group.into_iter().collect::<Vec<_>>()});
        config["process"]["noNewPrivileges"] = json!(sc.allow_privilege_escalation == Some(false));
        let dropped = sc.capabilities.as_ref().and_then(|c| c.drop.clone()).unwrap_or_default();
        assert_eq!(dropped, ["ALL"], "the manifests drop every capability");
        config["process"]["capabilities"] =
            json!({"bounding": [], "effective": [], "inheritable": [], "permitted": [], "ambient": []});
        config["root"]["readonly"] = json!(sc.read_only_root_filesystem == Some(true));
        config["hostname"] = json!(POD);
        // Host network: drop the network namespace.
        let namespaces = config["linux"]["namespaces"].as_array_mut().unwrap();
        namespaces.retain(|n| n["type"] != "network");
        if let Some(memory) = container.resources.as_ref().and_then(|r| r.limits.as_ref()?.get("memory")) {
            config["linux"]["resources"]["memory"] = json!({"limit": quantity_bytes(&memory.0)});
        }

        // Volumes, and the service-account token the kubelet projects.
        let mounts = config["mounts"].as_array_mut().unwrap();
        for mount in container.volume_mounts.iter().flatten() {
            let volume = pod.volumes.iter().flatten().find(|v| v.name == mount.name).expect("the mount's volume");
            let dir = self.volumes_dir.join(&volume.name);
            std::fs::create_dir_all(&dir).unwrap();
            if let Some(source) = &volume.config_map {
                let cms: Api<ConfigMap> = Api::namespaced(self.admin.clone(), self.namespace);
                let cm = cms.get(&source.name).await.unwrap();
                for (key, text) in cm.data.iter().flatten() {
                    std::fs::write(dir.join(key), text).unwrap();
                }
            } else if volume.empty_dir.is_some() {
                // Writable by the pod's fsGroup, as the kubelet makes it.
                chown(&dir, uid, pod_sc.fs_group.unwrap_or(gid));
            } else {
                panic!("volume {} is neither a ConfigMap nor an emptyDir", volume.name);
            }
            let options = if mount.read_only == Some(true) { vec!["rbind", "ro"] } else { vec!["rbind", "rw"] };
            mounts.push(json!({"destination": mount.mount_path, "type": "bind", "source": dir, "options": options}));
        }
        if pod.automount_service_account_token != Some(false) {
            let dir = self.volumes_dir.join("kube-api-access");
            std::fs::create_dir_all(&dir).unwrap();
            let account = pod.service_account_name.as_deref().unwrap_or("default");
            std::fs::write(dir.join("token"), self.token(account).await).unwrap();
            std::fs::write(dir.join("ca.crt"), self.cluster.ca_pem.as_deref().expect("a TLS cluster")).unwrap();
            std::fs::write(dir.join("namespace"), self.namespace).unwrap();
            mounts.push(json!({"destination": "/var/run/secrets/kubernetes.io/serviceaccount",
                               "type": "bind", "source": dir, "options": ["rbind", "ro"]}));
        }
        std::fs::write(&config_path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    }

    fn metrics_bind(&self) -> String {
        format!("--metrics-bind-address=127.0.0.1:{}", self.metrics_port)
    }

    /// A token of `namespace/account` through the TokenRequest API, as the kubelet gets one.
    async fn token(&self, account: &str) -> String {
        let accounts: Api<ServiceAccount> = Api::namespaced(self.admin.clone(), self.namespace);
        let request: TokenRequest = serde_json::from_value(json!({"spec": {"audiences": []}})).unwrap();
        let answer = accounts.create_token_request(account, &PostParams::default(), &request).await.unwrap();
        answer.status.and_then(|s| s.token).expect("a token")
    }
}

fn chown(path: &Path, uid: i64, gid: i64) {
    std::os::unix::fs::chown(path, Some(uid as u32), Some(gid as u32)).unwrap();
}

/// Bytes of a memory quantity as the manifests write them (`1Gi`, `256Mi`).
fn quantity_bytes(q: &str) -> u64 {
    let (number, unit) = q.split_at(q.find(|c: char| !c.is_ascii_digit()).unwrap_or(q.len()));
    let n: u64 = number.parse().unwrap();
    n * match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        other => panic!("unit {other}"),
    }
}

/// A container run by runc in the foreground: runc forwards signals to it and exits with its
/// status. Killed and deleted however the test ends.
struct Running {
    id: String,
    state: PathBuf,
    runc: Child,
    log: PathBuf,
}

impl Running {
    fn start(bundle: &Path, state: &Path, id: &str, log: PathBuf) -> Running {
        let file = std::fs::File::create(&log).unwrap();
        let runc = Command::new("runc")
            .arg("--root")
            .arg(state)
            .args(["run", "--bundle"])
            .arg(bundle)
            .arg(id)
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .expect("runc runs (scripts/install-image-tools.sh installs it)");
        Running { id: id.to_string(), state: state.to_path_buf(), runc, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether each plugin load it logged (JSON lines "loaded in …") came from the precompiled cache.
    fn loads_cached(&self) -> Vec<bool> {
        self.log()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["fields"]["message"].as_str().is_some_and(|m| m.starts_with("loaded in")))
            .map(|l| l["fields"]["cached"] == true)
            .collect()
    }

    /// `/proc/<pid>/<file>` of the container's process, once it runs.
    fn proc(&self, file: &str) -> String {
        let state = Command::new("runc").arg("--root").arg(&self.state).args(["state", &self.id]).output().unwrap();
        let state: Value =
            serde_json::from_slice(&state.stdout).unwrap_or_else(|_| panic!("runc state: {}", self.log()));
        std::fs::read_to_string(format!("/proc/{}/{file}", state["pid"])).unwrap()
    }

    /// A file of the container's memory cgroup: `v1` under cgroup v1, `v2` under v2.
    fn memory_cgroup(&self, v1: &str, v2: &str) -> String {
        let cgroups = self.proc("cgroup");
        let file = cgroups
            .lines()
            .find_map(|l| {
                let (_, rest) = l.split_once(':')?;
                let (controllers, path) = rest.split_once(':')?;
                match controllers {
                    "memory" => Some(format!("/sys/fs/cgroup/memory{path}/{v1}")),
                    "" if !cgroups.contains(":memory:") => Some(format!("/sys/fs/cgroup{path}/{v2}")),
                    _ => None,
                }
            })
            .unwrap_or_else(|| panic!("no memory cgroup: {cgroups}"));
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"))
    }

    /// The memory limit of the container's cgroup.
    fn memory_limit(&self) -> u64 {
        let text = self.memory_cgroup("memory.limit_in_bytes", "memory.max");
        text.trim().parse().unwrap_or_else(|_| panic!("memory limit: {text}"))
    }

    /// How often the kernel's OOM killer killed a process of the container's cgroup.
    fn oom_kills(&self) -> u64 {
        let text = self.memory_cgroup("memory.oom_control", "memory.events");
        let line = text.lines().find_map(|l| l.strip_prefix("oom_kill ")).unwrap_or_else(|| panic!("oom_kill: {text}"));
        line.trim().parse().unwrap()
    }

    /// SIGTERM, as the kubelet stops a container; its exit status within `grace`.
    async fn terminate(&mut self, grace: Duration) -> std::process::ExitStatus {
        let pid = self.runc.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            if let Some(status) = self.runc.try_wait().unwrap() {
                return status;
            }
            assert!(tokio::time::Instant::now() < deadline, "not stopped within {grace:?}:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let runc = |args: &[&str]| {
            let _ = Command::new("runc").arg("--root").arg(&self.state).args(args).arg(&self.id).output();
        };
        runc(&["kill", "--all"]);
        let _ = self.runc.kill();
        let _ = self.runc.wait();
        runc(&["delete", "--force"]);
    }
}

/// The status code of `GET path` on 127.0.0.1:`port`, as an httpGet probe sees it.
async fn probe(port: u16, path: &str) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: kube-probe/1.35\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    response.split_whitespace().nth(1)?.parse().ok()
}

/// The body of `GET path` on 127.0.0.1:`port`.
async fn fetch(port: u16, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    Some(response.split_once("\r\n\r\n")?.1.to_string())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

async fn lease_holder(admin: &Client) -> Option<String> {
    let lease = Api::<Lease>::namespaced(admin.clone(), "wasmcm").get_opt("wasmcm").await.ok()??;
    lease.spec?.holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_runs_as_the_manifests_pod() {
    let work = tempfile::tempdir().unwrap();
    let layout = build_image(work.path());
    let image = format!("oci:{}:{TAG}", layout.display());

    // The image as a registry client sees it: one layer, the Dockerfile's configuration.
    let config: Value = serde_json::from_str(&ok("skopeo", &["inspect", "--config", &image])).unwrap();
    assert_eq!(config["os"], "linux");
    assert_eq!(config["architecture"], if cfg!(target_arch = "aarch64") { "arm64" } else { "amd64" });
    let expected = dockerfile_config();
    for key in ["User", "Entrypoint", "Cmd", "Env", "ExposedPorts", "Labels"] {
        assert_eq!(config["config"][key], expected[key], "{key}: the image and the Dockerfile disagree");
    }
    let manifest: Value = serde_json::from_str(&ok("skopeo", &["inspect", &image])).unwrap();
    assert_eq!(manifest["Layers"].as_array().map(Vec::len), Some(1), "{manifest}");

    // Unpacked as a runtime does: the binary, its libraries, the baked cache; no shell.
    let bundle = work.path().join("bundle");
    ok("umoci", &["unpack", "--image", &format!("{}:{TAG}", layout.display()), bundle.to_str().unwrap()]);
    assert!(rootfs(&bundle, "/wasmcm").is_file());
    assert!(!rootfs(&bundle, "/bin/sh").exists() && !rootfs(&bundle, "/usr/bin").exists(), "a minimal image");
    let cache = rootfs(&bundle, "/opt/wasmcm/cache");
    let mut artefacts: Vec<String> =
        std::fs::read_dir(&cache).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    artefacts.sort();
    let mut digests: Vec<String> =
        wasmcm::builtin::names().map(|n| common::sha256(wasmcm::builtin::get(n).unwrap())).collect();
    digests.sort();
    assert_eq!(artefacts.len(), digests.len(), "{artefacts:?}");
    for (file, digest) in artefacts.iter().zip(&digests) {
        assert!(file.starts_with(digest.as_str()) && file.ends_with(".cwasm"), "{file} for {digest}");
        use std::os::unix::fs::MetadataExt;
        assert_eq!(std::fs::metadata(cache.join(file)).unwrap().uid(), 65532, "{file}: the runtime user's");
    }
    let pristine = work.path().join("pristine.json");
    std::fs::copy(bundle.join("config.json"), &pristine).unwrap();
    let state = work.path().join("runc");

    // `docker run <image> plugins inspect`: as the image's user, root read-only, the built-ins
    // come from the baked cache (compiled on this machine, so its CPU features match).
    {
        let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&pristine).unwrap()).unwrap();
        config["process"]["args"] = json!(["/wasmcm", "plugins", "inspect"]);
        config["process"]["terminal"] = json!(false);
        config["root"]["readonly"] = json!(true);
        std::fs::write(bundle.join("config.json"), config.to_string()).unwrap();
        let log = work.path().join("inspect.log");
        let mut inspect = Running::start(&bundle, &state, "wasmcm-inspect", log);
        let status = tokio::task::block_in_place(|| inspect.runc.wait().unwrap());
        let out = inspect.log();
        assert!(status.success(), "{status}: {out}");
        let loads: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("  load:    ")).collect();
        assert_eq!(loads.len(), wasmcm::builtin::names().count(), "{out}");
        assert!(loads.iter().all(|l| l.starts_with("from the precompiled cache")), "{out}");
    }

    // The cluster, and deploy/manifests applied to it with the real kubectl.
    let (cluster, admin) = common::cluster().await;
    let kubectl = common::kubectl_path();
    let kubectl = kubectl.to_str().unwrap();
    let kubeconfig = cluster.kubeconfig.to_str().unwrap().to_string();
    let applied = ok(kubectl, &["--kubeconfig", &kubeconfig, "apply", "-f", "deploy/manifests"]);
    assert!(applied.contains("deployment.apps/wasmcm created"), "{applied}");
    let pod = pod_template(&admin, "wasmcm", "wasmcm").await;
    let grace = Duration::from_secs(pod.termination_grace_period_seconds.expect("a grace period") as u64);

    // The pod's container, under runc.
    let metrics_port = free_port();
    let kubelet = Kubelet {
        admin: &admin,
        cluster: &cluster,
        namespace: "wasmcm",
        volumes_dir: work.path().join("volumes"),
        metrics_port,
    };
    std::fs::copy(&pristine, bundle.join("config.json")).unwrap();
    kubelet.configure(&bundle, &pod).await;
    let start = |n: usize| Running::start(&bundle, &state, POD, work.path().join(format!("wasmcm-{n}.log")));
    let mut container = start(1);
    println!("container log: {}", container.log.display());

    // The probes, as the manifests declare them: startup and liveness on /healthz, readiness on
    // /readyz (ready once the caches are synced).
    let probes = &pod.containers[0];
    let path = |p: &Option<k8s_openapi::api::core::v1::Probe>| {
        p.as_ref().unwrap().http_get.as_ref().unwrap().path.clone().unwrap()
    };
    let (startup, liveness, readiness) =
        (path(&probes.startup_probe), path(&probes.liveness_probe), path(&probes.readiness_probe));
    common::eventually("the startup probe to pass", || async {
        (probe(metrics_port, &startup).await == Some(200)).then_some(())
    })
    .await;
    common::eventually("the readiness probe to pass", || async {
        (probe(metrics_port, &readiness).await == Some(200)).then_some(())
    })
    .await;
    assert_eq!(probe(metrics_port, &liveness).await, Some(200));

    // The securityContext, as the kernel applies it to the container's process.
    let status = container.proc("status");
    let field = |name: &str| {
        let line = status.lines().find(|l| l.starts_with(&format!("{name}:"))).unwrap_or_else(|| panic!("{name}"));
        line.split_whitespace().skip(1).collect::<Vec<_>>().join(" ")
    };
    assert_eq!(field("Uid"), "65532 65532 65532 65532");
    assert_eq!(field("Gid"), "65532 65532 65532 65532");
    assert_eq!(field("CapEff"), "0000000000000000");
    assert_eq!(field("CapBnd"), "0000000000000000");
    assert_eq!(field("NoNewPrivs"), "1");
    let mountinfo = container.proc("mountinfo");
    let mount_options = |at: &str| -> String {
        let line =
            mountinfo.lines().find(|l| l.split(' ').nth(4) == Some(at)).unwrap_or_else(|| panic!("{at}: {mountinfo}"));
        line.split(' ').nth(5).unwrap().to_string()
    };
    assert!(mount_options("/").split(',').any(|o| o == "ro"), "a read-only root filesystem: {mountinfo}");
    assert!(mount_options("/etc/wasmcm/plugins").split(',').any(|o| o == "ro"));
    assert!(mount_options("/var/cache/wasmcm").split(',').any(|o| o == "rw"));
    assert_eq!(container.memory_limit(), quantity_bytes("1Gi"), "resources.limits.memory");

    // It leads, through the manifests' Role, as its pod, and runs a Deployment to completion
    // through the manifests' ClusterRole.
    common::eventually("the container to hold the Lease wasmcm/wasmcm", || async {
        (lease_holder(&admin).await.as_deref() == Some(POD)).then_some(())
    })
    .await;
    let web: Deployment = common::web(3, "nginx:1.27");
    Api::<Deployment>::namespaced(admin.clone(), "default").create(&PostParams::default(), &web).await.unwrap();
    let rollout = tokio::task::block_in_place(|| {
        Command::new(kubectl)
            .args(["--kubeconfig", &kubeconfig, "rollout", "status", "deployment/web", "--timeout=120s"])
            .output()
            .unwrap()
    });
    assert!(
        rollout.status.success(),
        "{}{}\n{}",
        String::from_utf8_lossy(&rollout.stdout),
        String::from_utf8_lossy(&rollout.stderr),
        container.log()
    );
    let pods =
        Api::<Pod>::namespaced(admin.clone(), "default").list(&ListParams::default().labels("app=web")).await.unwrap();
    assert_eq!(pods.items.len(), 3);
    let events = Api::<Event>::namespaced(admin.clone(), "default").list(&ListParams::default()).await.unwrap();
    assert!(
        events
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("SuccessfulCreate") && e.reporting_instance.as_deref() == Some(POD)),
        "events recorded as the pod"
    );
    // Its own Deployment too: README step 4's `kubectl -n wasmcm rollout status deployment/wasmcm`.
    ok(
        kubectl,
        &["--kubeconfig", &kubeconfig, "-n", "wasmcm", "rollout", "status", "deployment/wasmcm", "--timeout=120s"],
    );

    assert_eq!(
        container.loads_cached(),
        vec![false; wasmcm::builtin::names().count()],
        "JSON logs, one line per plugin loaded; a new emptyDir: compiled at the first start:\n{}",
        container.log()
    );
    assert!(!container.log().to_lowercase().contains("forbidden"), "{}", container.log());

    // The kubelet stops it: SIGTERM, exit 0 within the grace period, the Lease released.
    let status = container.terminate(grace).await;
    assert!(status.success(), "{status}:\n{}", container.log());
    assert_eq!(lease_holder(&admin).await, None, "the Lease is released");
    drop(container);

    // The container restarts in the same pod: the emptyDir kept the compiled plugins.
    let mut container = start(2);
    common::eventually("the restarted container to lead again", || async {
        (lease_holder(&admin).await.as_deref() == Some(POD)).then_some(())
    })
    .await;
    assert_eq!(container.loads_cached(), vec![true; wasmcm::builtin::names().count()], "{}", container.log());

    // A hostile plugin beside the built-ins, added as README says (a pinned ConfigMap source, an
    // entry in wasmcm-plugins, a restart): five workers, each filling 240 MiB of its 256 MiB and
    // holding it a while, over and over. Together they would need 1200 MiB, more than the 1 GiB
    // container has (without the budget the kernel kills it); the host's memory budget (half
    // the cgroup's limit) refuses the calls that do not fit, so the container is never
    // OOM-killed and the built-ins keep converging.
    let status = container.terminate(grace).await;
    assert!(status.success(), "{status}:\n{}", container.log());
    drop(container);
    let hostile = std::fs::read(common::guest("wasmcm_hostile.wasm")).unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(admin.clone(), "wasmcm");
    let source: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "hostile"},
        "binaryData": {"hostile.wasm": k8s_openapi::ByteString(hostile.clone())},
    }))
    .unwrap();
    cms.create(&PostParams::default(), &source).await.unwrap();
    let mut plugins = cms.get("wasmcm-plugins").await.unwrap();
    let list = plugins.data.as_mut().unwrap().get_mut("plugins.yaml").unwrap();
    let mut parsed: Value = serde_saphyr::from_str(list).unwrap();
    parsed["items"].as_array_mut().unwrap().push(json!({
        "metadata": {"name": "hostile"},
        "spec": {
            "source": {"configMap": {"name": "hostile", "key": "hostile.wasm"}},
            "sha256": common::sha256(&hostile),
            "limits": {"memory": "256Mi", "deadline": "10s", "workers": 5},
        },
    }));
    *list = serde_json::to_string_pretty(&parsed).unwrap();
    cms.replace("wasmcm-plugins", &PostParams::default(), &plugins).await.unwrap();
    // What it reads needs a rule on the host's ClusterRole (the chart's rbac.extraClusterRules).
    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(admin.clone());
    let mut role = roles.get("wasmcm").await.unwrap();
    let rule = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]});
    role.rules.get_or_insert_default().push(serde_json::from_value(rule).unwrap());
    roles.replace("wasmcm", &PostParams::default(), &role).await.unwrap();
    let keys: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    for n in 1..=5 {
        let key: ConfigMap = serde_json::from_value(json!({"metadata": {"name": format!("fill-{n}")}})).unwrap();
        keys.create(&PostParams::default(), &key).await.unwrap();
    }
    std::fs::copy(&pristine, bundle.join("config.json")).unwrap();
    kubelet.configure(&bundle, &pod).await;
    let container = start(3);
    println!("container 3 log: {}", container.log.display());
    let metrics = || async { fetch(metrics_port, "/metrics").await.unwrap_or_default() };
    let hostile_calls = |text: &str, outcome: &str| {
        common::metric(text, "wasmcm_reconciles_total", &["plugin=\"hostile\"", &format!("outcome=\"{outcome}\"")])
    };
    common::eventually("the hostile plugin's calls to fill memory, and some to be refused", || async {
        let text = metrics().await;
        (hostile_calls(&text, "success") >= 20.0 && hostile_calls(&text, "trap") >= 5.0).then_some(())
    })
    .await;
    // Meanwhile the built-ins scale the Deployment.
    let scale = json!({"spec": {"replicas": 5}});
    Api::<Deployment>::namespaced(admin.clone(), "default")
        .patch("web", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&scale))
        .await
        .unwrap();
    let rollout = ok(kubectl, &["--kubeconfig", &kubeconfig, "rollout", "status", "deployment/web", "--timeout=120s"]);
    assert!(rollout.contains("successfully rolled out"), "{rollout}");
    // It still fills beside them: more of its calls succeed from here (a budget that leaked
    // would refuse them all). Counted from now, not as a total, which a slow rollout on a busy
    // machine may not reach within the patience and a fast one reaches before it ends.
    let filled = hostile_calls(&metrics().await, "success");
    let deadline = tokio::time::Instant::now() + common::PATIENCE;
    loop {
        let text = metrics().await;
        let (succeeded, refused) = (hostile_calls(&text, "success"), hostile_calls(&text, "trap"));
        if succeeded >= filled + 5.0 {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            let log = container.log();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            panic!(
                "the hostile plugin stopped filling: {succeeded} calls succeeded ({filled} when the rollout ended), \
                 {refused} refused; the log's last lines:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(probe(metrics_port, &liveness).await, Some(200), "{}", container.log());
    assert_eq!(container.oom_kills(), 0, "the container stayed within its limit:\n{}", container.log());
    let log = container.log();
    assert!(log.contains("memory budget for plugin calls (512 MiB) is held by other calls"), "{log}");
}
