//! The chaos soak, long: `wasmcm_test_support::chaos` (what it injects and checks) at the size
//! and timings of a real deployment — three hosts at kube-controller-manager's lease timings
//! (15 s lease, 10 s renew deadline, 2 s retry), 300 Deployments in 30 namespaces, 10% of writes
//! failing, and a fault cycle every 2 minutes — for as long as asked. Prints what it injected,
//! what it checked and the audit, and fails if an invariant broke, a write came from a process
//! that was not the valid holder, or the workload did not converge once the faults stopped.
//!
//! `cargo bench -p wasmcm --bench chaos -- [--minutes 30] [--deployments 300] [--hosts 3]
//! [--namespaces 30] [--seed N]` (or `make soak SOAK_ARGS="--minutes 30"`).

use std::process::ExitCode;
use std::time::Duration;

use wasmcm_test_support::chaos::{SoakConfig, soak};

fn main() -> ExitCode {
    let mut config = SoakConfig {
        binary: env!("CARGO_BIN_EXE_wasmcm").into(),
        cache_dir: std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("precompiled"),
        log_dir: std::env::temp_dir().join(format!("wasmcm-chaos-{}", std::process::id())),
        hosts: 3,
        deployments: 300,
        namespaces: 30,
        chaos: Duration::from_secs(30 * 60),
        cycle: Duration::from_secs(120),
        lease: Duration::from_secs(15),
        renew: Duration::from_secs(10),
        retry: Duration::from_secs(2),
        write_errors: 0.1,
        seed: 1,
        patience: Duration::from_secs(600),
    };
    // `cargo bench` passes `--bench`; the rest are ours.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args.next().and_then(|v| v.parse::<u64>().ok());
        let Some(value) = value else {
            eprintln!(
                "chaos bench: {flag} needs a number (flags: --minutes, --deployments, --hosts, --namespaces, --seed)"
            );
            return ExitCode::from(2);
        };
        match flag.as_str() {
            "--minutes" => config.chaos = Duration::from_secs(value * 60),
            "--deployments" => config.deployments = value as usize,
            "--hosts" => config.hosts = value as usize,
            "--namespaces" => config.namespaces = value as usize,
            "--seed" => config.seed = value,
            other => {
                eprintln!("chaos bench: unknown flag {other}");
                return ExitCode::from(2);
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("chaos bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "chaos soak: {} hosts, {} Deployments in {} namespaces, {} min of faults (seed {}); host logs in {}",
        config.hosts,
        config.deployments,
        config.namespaces,
        config.chaos.as_secs() / 60,
        config.seed,
        config.log_dir.display()
    );
    let report = runtime.block_on(soak(config));
    println!("{report}");
    if report.passed() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
