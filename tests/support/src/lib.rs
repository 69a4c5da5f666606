//! What the integration tests of wasmcm's crates share: an embedded cluster and clients for it,
//! the real kubectl and helm the scripts install, a real OCI registry ([`registry`]), and polling
//! with a patience that suits a loaded 2-core machine (no test measures time).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use wasmcm_apiserver::{Cluster, ClusterConfig, KubeletConfig};

pub mod chaos;
pub mod registry;

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the workspace root exists")
}

/// The real kubectl v1.35, installed by `scripts/install-kubectl.sh` (`make test` runs it);
/// `WASMCM_KUBECTL` points elsewhere. Missing, it fails the test: kubectl tests never skip.
pub fn kubectl_path() -> PathBuf {
    let path = std::env::var_os("WASMCM_KUBECTL")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/tools/kubectl"));
    assert!(
        path.exists(),
        "kubectl v1.35 is missing at {}: run scripts/install-kubectl.sh (make test does)",
        path.display()
    );
    path
}

/// The real helm v4.1, installed by `scripts/install-helm.sh` (`make test` runs it); `WASMCM_HELM`
/// points elsewhere. Missing, it fails the test: helm tests never skip.
pub fn helm_path() -> PathBuf {
    let path = std::env::var_os("WASMCM_HELM")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/tools/helm"));
    assert!(path.exists(), "helm v4.1 is missing at {}: run scripts/install-helm.sh (make test does)", path.display());
    path
}

/// Runs kubectl with `kubeconfig` (its directory as HOME, so no user configuration leaks in),
/// `stdin` piped in if given.
pub fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(kubectl_path());
    cmd.args(args).env("KUBECONFIG", kubeconfig).env("HOME", kubeconfig.parent().expect("a kubeconfig's directory"));
    let Some(input) = stdin else { return cmd.output().expect("kubectl runs") };
    use std::io::Write;
    let mut child =
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("kubectl runs");
    child.stdin.take().expect("piped").write_all(input.as_bytes()).expect("kubectl reads stdin");
    child.wait_with_output().expect("kubectl runs")
}

/// The kube-rs configuration of `kubeconfig` (what a host starts from).
pub async fn config(kubeconfig: &Path) -> kube::Config {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig is valid");
    kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("config")
}

/// A kube-rs client of `kubeconfig`.
pub async fn client(kubeconfig: &Path) -> kube::Client {
    kube::Client::try_from(config(kubeconfig).await).expect("client")
}

/// A cluster configuration whose pods start 50 ms after binding.
pub fn quick_config() -> ClusterConfig {
    ClusterConfig {
        kubelet: KubeletConfig { start_delay: Duration::from_millis(50), ..KubeletConfig::default() },
        ..ClusterConfig::default()
    }
}

/// An embedded cluster of [`quick_config`], and an admin client for it.
pub async fn cluster() -> (Cluster, kube::Client) {
    let cluster = Cluster::start(quick_config()).await.expect("cluster starts");
    let admin = client(&cluster.kubeconfig).await;
    (cluster, admin)
}

/// A client presenting a fresh token of the ServiceAccount `namespace/name`.
pub async fn token_client(cluster: &Cluster, namespace: &str, name: &str) -> kube::Client {
    let token = cluster.service_account_token(namespace, name).expect("a token");
    client(&cluster.kubeconfig_for_token(&token).expect("a kubeconfig")).await
}

/// Long enough for a loaded 2-core machine; no test measures time.
pub const PATIENCE: Duration = Duration::from_secs(120);

/// Polls `f` until it gives a value; fails naming `what` after [`PATIENCE`].
pub async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out after {PATIENCE:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
