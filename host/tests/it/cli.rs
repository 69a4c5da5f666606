//! The binary's habits whatever the command: its logs carry no colour codes off a terminal (a
//! file, a pipe, `kubectl logs`), and their level comes from `--log-level`, `-v` or `RUST_LOG`,
//! in that order; every command's help shows examples that parse, and its exit codes. Owns these
//! flags and texts only; each command's own behaviour is its area's.

use crate::common;

/// The exit code and standard error of `wasmcm <args> plugins inspect` of a missing file with a
/// cache directory that cannot be created: one WARN line (the cache), then the error (the file).
fn inspect_with_a_broken_cache(args: &[&str], rust_log: &str) -> (Option<i32>, String) {
    let out = common::host_command()
        .args(args)
        .args(["--cache-dir", "/proc/wasmcm-no-such-dir", "plugins", "inspect", "/nonexistent/plugin.wasm"])
        .env("RUST_LOG", rust_log)
        .env_remove("NO_COLOR")
        .output()
        .expect("the binary runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn logs_carry_no_colour_off_a_terminal_and_take_their_level_from_log_level_v_or_rust_log() {
    let (code, log) = inspect_with_a_broken_cache(&[], "");
    assert!(code == Some(2) && log.contains("/nonexistent/plugin.wasm: cannot read"), "{log}");
    assert!(log.contains(" WARN ") && log.contains("not using the precompiled cache"), "{log}");
    assert!(!log.contains('\x1b'), "no colour codes in a pipe: {log:?}");

    let warns = |args: &[&str], rust_log: &str| {
        let (code, log) = inspect_with_a_broken_cache(args, rust_log);
        assert!(code == Some(2) && log.contains("cannot read"), "{args:?} {rust_log}: {log}");
        log.contains(" WARN ")
    };
    assert!(!warns(&["--log-level", "error"], ""), "a bare level is wasmcm's own");
    assert!(!warns(&[], "error"), "RUST_LOG when no flag is given");
    assert!(warns(&["--log-level", "warn"], "error"), "--log-level wins over RUST_LOG");
    assert!(warns(&["-v"], "error") && warns(&["-vv"], "error"), "-v raises wasmcm's level over RUST_LOG");
    assert!(!warns(&["--log-level", "error,wasmcm=error"], ""), "directives as RUST_LOG takes them");

    let (code, log) = inspect_with_a_broken_cache(&["--log-level", "wasmcm=loud"], "");
    assert_eq!(code, Some(2), "{log}");
    assert!(log.contains("invalid value 'wasmcm=loud' for '--log-level"), "{log}");
}

/// A second `make run` beside the first: its metrics address is taken, so it stops before it
/// starts a cluster or prints a `try:` line, and says what to do.
#[test]
fn a_run_whose_metrics_address_is_taken_stops_first_saying_what_to_do() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let out = common::host_command()
        .args(["run", "--leader-elect=false", "--metrics-bind-address", &address])
        .env("RUST_LOG", "off")
        .output()
        .expect("the binary runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(!stdout.contains("try:") && !stdout.contains("embedded cluster"), "nothing started: {stdout}");
    assert!(
        stderr.contains(&format!("cannot serve metrics on {address}: the address is in use"))
            && stderr.contains("127.0.0.1:0 takes a free port"),
        "{stderr}"
    );
}

/// Duration flags take Go's syntax, as kube-controller-manager's do, and whole seconds as before.
#[test]
fn duration_flags_take_gos_syntax() {
    let run = |args: &[&str]| {
        let out = common::host_command()
            .args(["run", "--metrics-bind-address", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "off")
            .output()
            .expect("the binary runs");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, stderr) = run(&["--leader-elect-lease-duration", "15x"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("invalid value '15x' for '--leader-elect-lease-duration"), "{stderr}");
    assert!(stderr.contains("unknown unit \"x\""), "{stderr}");
    // Parsed and compared as durations (1m30s is not more than 2m), before anything starts.
    let (code, stderr) = run(&["--leader-elect-lease-duration", "1m30s", "--leader-elect-renew-deadline", "2m"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr
            .contains("--leader-elect-lease-duration (90s) must be greater than --leader-elect-renew-deadline (120s)"),
        "{stderr}"
    );
}

/// The kubelet's SIGTERM may come while the plugins still compile (a new pod's cache is empty):
/// the host stops there, exit 0, rather than dying of it (or, as a container's PID 1 with no
/// handler yet, ignoring it until the kubelet kills the pod at the end of its grace period).
#[test]
fn a_stop_signal_while_the_plugins_compile_stops_the_host_cleanly() {
    use std::io::BufRead;
    let cache = tempfile::tempdir().unwrap();
    let mut child = common::host_command()
        .args(["run", "--leader-elect=false", "--metrics-bind-address", "127.0.0.1:0"])
        .env("WASMCM_CACHE_DIR", cache.path())
        .env("RUST_LOG", "info")
        // An ambient kubeconfig is not read, and the host says so.
        .env("KUBECONFIG", "/nonexistent/ambient-kubeconfig")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("embedded cluster at") {
        assert!(stdout.read_line(&mut seen).unwrap() > 0, "the host ended before its cluster started: {seen}");
    }
    // Cold, the built-ins take seconds to compile: the signal lands while they do.
    assert!(std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "not stopped within 120 s of SIGTERM");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status}: {seen}{stderr}");
    assert!(stderr.contains("SIGTERM: shutting down"), "{stderr}");
    let ignored = "$KUBECONFIG (/nonexistent/ambient-kubeconfig) is not read: give --kubeconfig";
    assert_eq!(stderr.matches(ignored).count(), 1, "said once: {stderr}");
}

/// `wasmcm plugins inspect x.wasm | head`: a reader that stops early ends the command quietly,
/// as it does any Unix tool, instead of a panic about a broken pipe.
#[test]
fn a_closed_pipe_ends_a_printing_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let plugin = common::guest("wasmcm_replicaset.wasm");
    let plugin = plugin.to_str().unwrap();
    let mut child = common::host_command()
        .args(["plugins", "inspect", plugin])
        .env("WASMCM_CACHE_DIR", common::precompiled_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // The reader is gone before the first line is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{}", out.status);
}

/// `wasmcm version` for a bug report (text) or a script (JSON), `--version` its first line, and
/// `wasmcm completion <shell>` a script the shell loads.
#[test]
fn version_and_completion_say_what_a_user_and_a_shell_need() {
    let version = env!("CARGO_PKG_VERSION");
    let run = common::wasmcm(&["version"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with(&format!("wasmcm {version}\n")), "{}", run.stdout);
    assert!(
        run.stdout.contains("plugin contracts: wasmcm:reconciler@") && run.stdout.contains("@0.3.0"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("built-in plugins: ") && run.stdout.contains("deployment"), "{}", run.stdout);
    let json: serde_json::Value = serde_json::from_str(&common::wasmcm(&["version", "-o", "json"]).stdout).unwrap();
    assert_eq!(json["version"], version);
    assert!(json["contracts"].as_array().is_some_and(|c| c.iter().any(|v| v == "0.3.0")), "{json}");
    assert_eq!(json["embeddedCluster"], true, "{json}");
    assert_eq!(common::wasmcm(&["--version"]).stdout.trim(), format!("wasmcm {version}"));

    let script = common::wasmcm(&["completion", "bash"]);
    assert_eq!(script.code, 0, "{}", script.stderr);
    let mut bash = std::process::Command::new("bash")
        .args(["-c", "source /dev/stdin && complete -p wasmcm"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bash runs");
    std::io::Write::write_all(&mut bash.stdin.take().unwrap(), script.stdout.as_bytes()).unwrap();
    let loaded = bash.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&loaded.stdout);
    assert!(
        loaded.status.success() && said.contains("-F _wasmcm wasmcm"),
        "{said}{}",
        String::from_utf8_lossy(&loaded.stderr)
    );
    for word in ["simulate", "plugins", "completion", "--log-level"] {
        assert!(script.stdout.contains(word), "bash completes {word}");
    }
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let script = common::wasmcm(&["completion", shell]);
        assert!(script.code == 0 && script.stdout.contains("simulate"), "{shell}: {}", script.stderr);
    }
    let bad = common::wasmcm(&["completion", "tcsh"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("invalid value 'tcsh'") && bad.stderr.contains("bash"), "{}", bad.stderr);
}

/// Every command's `--help` ends with examples, each of which the command parses (a flag or
/// value it does not take fails `<example> --help` with clap's usage error), and `run`'s and
/// `simulate`'s say their exit codes; the flags every command takes are listed apart from the
/// command's own.
#[test]
fn every_example_in_the_help_parses() {
    let commands: &[&[&str]] = &[
        &[],
        &["run"],
        &["simulate"],
        &["cluster"],
        &["plugins"],
        &["plugins", "list"],
        &["plugins", "inspect"],
        &["plugins", "promote"],
        &["plugins", "abandon"],
        &["plugins", "rbac"],
        &["plugins", "record"],
        &["shards"],
        &["new"],
        &["version"],
        &["completion"],
    ];
    let mut parsed = 0;
    for command in commands {
        let help = common::wasmcm(&[*command, &["--help"]].concat());
        assert_eq!(help.code, 0, "{command:?}: {}", help.stderr);
        let examples = help
            .stdout
            .split_once("\nExamples:\n")
            .map(|(_, e)| e)
            .unwrap_or_else(|| panic!("wasmcm {} --help has no examples:\n{}", command.join(" "), help.stdout));
        let mut own = 0;
        for line in examples.lines().take_while(|l| l.starts_with("  ")) {
            // The command alone: a comment, a pipe or a redirection ends it.
            let example = [" # ", " | ", " > "].iter().fold(line.trim(), |l, end| l.split(end).next().unwrap_or(l));
            let Some(args) = example.strip_prefix("wasmcm").filter(|a| a.is_empty() || a.starts_with(' ')) else {
                continue;
            };
            let mut args: Vec<&str> = args.split_whitespace().collect();
            if !args.contains(&"--help") {
                args.push("--help");
            }
            let run = common::wasmcm(&args);
            assert_eq!(run.code, 0, "the example {example:?} in wasmcm {} --help: {}", command.join(" "), run.stderr);
            own += 1;
        }
        assert!(own > 0, "wasmcm {} --help shows no wasmcm command:\n{}", command.join(" "), examples);
        parsed += own;
    }
    assert!(parsed >= commands.len(), "{parsed}");

    let simulate = common::wasmcm(&["simulate", "--help"]).stdout;
    let codes = simulate.split_once("\nExit codes:\n").map(|(_, c)| c).expect("simulate's exit codes");
    for code in ["  0  ", "  1  ", "  2  ", "  3  "] {
        assert!(codes.contains(code), "exit code {code:?} in:\n{codes}");
    }
    let run = common::wasmcm(&["run", "--help"]).stdout;
    assert!(run.contains("\nExit codes:\n") && run.contains("  1  it lost its lease"), "{run}");

    // The flags every command takes, under a heading of their own after the command's.
    let new = common::wasmcm(&["new", "--help"]).stdout;
    let (own, global) = new.split_once("\nGlobal options:\n").expect("a Global options heading");
    let global = global.split_once("\nExamples:\n").map_or(global, |(flags, _)| flags);
    assert!(own.contains("--lang") && !own.contains("--cache-dir") && !own.contains("--log-level"), "{new}");
    assert!(global.contains("--cache-dir") && global.contains("--log-level") && !global.contains("--lang"), "{new}");
}

/// `make run`, then Ctrl-C once it serves: a clean stop says nothing at WARN or ERROR. The host
/// stops its informers before its embedded cluster, whose closing watches were 5 to 10 WARN
/// lines (kube-client's "eof in poll", "watch failed, retrying") in 3 runs of 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_stop_of_the_host_and_its_embedded_cluster_logs_no_warning() {
    use std::io::BufRead;
    let temp = tempfile::tempdir().unwrap();
    let log = temp.path().join("host.log");
    let mut child = common::host_command()
        .arg("--cache-dir")
        .arg(common::precompiled_dir())
        .args(["run", "--metrics-bind-address", "127.0.0.1:0"])
        .env("TMPDIR", temp.path())
        .env_remove("RUST_LOG")
        .env_remove("KUBECONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("the binary runs");
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut address = None;
    let mut line = String::new();
    while !line.starts_with("wasmcm running") {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the host ended before it ran");
        if let Some(a) = line.trim().strip_prefix("metrics: http://").and_then(|a| a.strip_suffix("/metrics")) {
            address = Some(a.parse::<std::net::SocketAddr>().unwrap());
        }
    }
    let address = address.expect("a metrics line");
    // Every built-in synced: their watches are open when the stop comes.
    common::eventually("the host ready, its plugins synced", || async {
        let (code, body) = common::http_get(address, "/readyz").await;
        (code == 200 && body.contains("[+]apiserver ok") && !body.contains("[-]")).then_some(())
    })
    .await;
    assert!(std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let status = tokio::task::block_in_place(|| child.wait()).unwrap();
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{status}: {log}");
    let loud: Vec<&str> = log.lines().filter(|l| l.contains(" WARN ") || l.contains(" ERROR ")).collect();
    assert!(loud.is_empty(), "a clean stop logs no warning:\n{}", loud.join("\n"));
}
