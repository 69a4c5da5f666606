//! `wasmcm cluster`: the embedded Kubernetes API server with simulated nodes and fault
//! injection, kept running until Ctrl-C.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::kubectl_for_try;

#[derive(Args)]
pub(crate) struct ClusterArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    address: std::net::IpAddr,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where to write the kubeconfig [default: a new directory under the system temp dir].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Serve plain HTTP without authentication (loopback addresses only).
    #[arg(long)]
    insecure_http: bool,
    /// Number of simulated nodes.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Milliseconds from a pod's binding to its start (±20% jitter).
    #[arg(long, default_value_t = 500)]
    pod_start_delay_ms: u64,
    /// Fault injection: probability (0-1) that a client write fails with 409, 429 or 500.
    #[arg(long, default_value_t = 0.0)]
    fault_write_error_rate: f64,
    /// Fault injection: milliseconds added to every request.
    #[arg(long, default_value_t = 0)]
    fault_latency_ms: u64,
    /// Fault injection: close every watch stream this often (seconds).
    #[arg(long)]
    fault_watch_drop_seconds: Option<u64>,
    /// Fault injection: compact the watch history this often (seconds), so watchers get 410.
    #[arg(long)]
    fault_compact_seconds: Option<u64>,
    /// Fault injection: hold back every watch event this many milliseconds.
    #[arg(long, default_value_t = 0)]
    fault_watch_delay_ms: u64,
}

pub(crate) fn cluster(args: ClusterArgs) -> anyhow::Result<ExitCode> {
    use wasmcm_apiserver::{Cluster, ClusterConfig, FaultConfig, KubeletConfig};
    let clock = wasmcm_core::clock::Clock::from_env().map_err(anyhow::Error::msg)?;
    let config = ClusterConfig {
        clock,
        bind: std::net::SocketAddr::new(args.address, args.port),
        insecure_http: args.insecure_http,
        kubeconfig: args.kubeconfig,
        kubelet: KubeletConfig {
            nodes: args.nodes,
            start_delay: Duration::from_millis(args.pod_start_delay_ms),
            ..KubeletConfig::default()
        },
        faults: FaultConfig {
            write_error_rate: args.fault_write_error_rate.clamp(0.0, 1.0),
            latency: Duration::from_millis(args.fault_latency_ms),
            watch_drop_interval: args.fault_watch_drop_seconds.map(Duration::from_secs),
            compact_interval: args.fault_compact_seconds.map(Duration::from_secs),
            watch_delay: Duration::from_millis(args.fault_watch_delay_ms),
            ..FaultConfig::default()
        },
        ..ClusterConfig::default()
    };
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        // Listened for before the kubeconfig is shown: a Ctrl-C right after it (a script
        // that waits for that line, then stops) must still remove the cluster's files.
        let mut stop = super::StopSignal::listen()?;
        let cluster = Cluster::start(config).await?;
        println!("wasmcm cluster serving at {}", cluster.url);
        println!("kubeconfig: {}", cluster.kubeconfig.display());
        println!("try: export KUBECONFIG={} && {} get nodes", cluster.kubeconfig.display(), kubectl_for_try());
        stop.received().await;
        cluster.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}
