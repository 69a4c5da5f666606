//! The chaos soak at CI size (`wasmcm_test_support::chaos` says what it does): two host
//! processes electing a leader, 18 Deployments under churn, a minute of injected faults with
//! two stalls, SIGKILLs and SIGSTOPs of the leader. Every invariant holds throughout, no write
//! comes from a process that was not the valid Lease holder, and everything converges after.
//! `cargo bench -p wasmcm --bench chaos` runs it long, at KCM's lease timings.

use crate::common;

use std::time::Duration;

use wasmcm_test_support::chaos::{SoakConfig, soak};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_chaos_soak_keeps_every_invariant_writes_only_from_the_leader_and_converges() {
    let logs = tempfile::Builder::new().prefix("chaos-logs-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let report = soak(SoakConfig {
        binary: env!("CARGO_BIN_EXE_wasmcm").into(),
        cache_dir: common::precompiled_dir(),
        log_dir: logs.path().to_path_buf(),
        hosts: 2,
        deployments: 18,
        namespaces: 3,
        chaos: Duration::from_secs(60),
        cycle: Duration::from_secs(30),
        lease: Duration::from_secs(4),
        renew: Duration::from_secs(3),
        retry: Duration::from_secs(1),
        write_errors: 0.1,
        seed: 18,
        patience: common::PATIENCE,
    })
    .await;
    eprintln!("{report}");
    if !report.passed() {
        let logs = logs.keep();
        eprintln!("host logs kept in {}", logs.display());
        // In name order, so two runs' reports line up.
        let mut paths: Vec<_> = std::fs::read_dir(&logs).unwrap().flatten().map(|e| e.path()).collect();
        paths.sort();
        for path in paths {
            let log = std::fs::read_to_string(&path).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            eprintln!("--- {}:\n{}", path.display(), tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
        }
    }
    assert!(report.violations.is_empty(), "invariants broken:\n{report}");
    assert!(report.non_holder_writes.is_empty(), "writes from a non-holder:\n{report}");
    assert!(report.converged.is_some(), "not converged:\n{report}");
    // Not vacuous: it wrote, it was checked, and every kind of fault happened.
    assert!(report.writes_audited > 100 && report.checks > 1000, "{report}");
    let errors: u64 = report.faults.write_errors.iter().map(|(_, n)| n).sum();
    assert!(errors > 0 && report.faults.watch_drops > 0 && report.faults.compactions > 0, "{report}");
    assert!(report.stalls == 2 && report.kills >= 1 && report.freezes >= 1 && report.restarts >= 2, "{report}");
    assert!(report.leaders.len() >= 3, "the lease changed hands: {report}");
}
