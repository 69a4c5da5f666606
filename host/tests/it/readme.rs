//! README.md's first hour, run from the README's own text so that a changed README is a changed
//! test: the host as `make run` starts it, the `try:` line it prints pasted as it is (and the
//! README's rendering of that line checked against it), then every command of the "Then:" list,
//! in order, in a shell with the tests' pinned kubectl first on the PATH.
//!
//! Owns the README's commands only; what they do is the Deployment, Job and CronJob tests'.

use crate::scaffold::{start_host, text};

use std::path::Path;
use std::process::{Command, Output};

const README: &str = include_str!("../../../README.md");

/// The paragraph (or list) of README.md that starts with `from`: up to the next blank line.
fn section<'a>(readme: &'a str, from: &str) -> &'a str {
    let start = readme.find(from).unwrap_or_else(|| panic!("README.md has no {from:?}"));
    let rest = &readme[start + 1..];
    &readme[start..start + 1 + rest.find("\n\n").unwrap_or(rest.len())]
}

/// The inline `kubectl …` commands of `text`, each alternation expanded as a reader expands it:
/// `kubectl rollout status|history deployment/web` is two commands.
fn kubectl_commands(text: &str) -> Vec<String> {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut commands = Vec::new();
    for span in joined.split('`').skip(1).step_by(2).filter(|s| s.starts_with("kubectl ")) {
        let words: Vec<&str> = span.split(' ').collect();
        match words.iter().position(|w| w.contains('|') && !w.contains('\'')) {
            Some(i) => commands.extend(words[i].split('|').map(|alternative| {
                let mut expanded = words.clone();
                expanded[i] = alternative;
                expanded.join(" ")
            })),
            None => commands.push(span.to_string()),
        }
    }
    commands
}

fn sh(command: &str, kubeconfig: &Path) -> Output {
    let tools = wasmcm_test_support::kubectl_path().parent().expect("target/tools").to_path_buf();
    let path = format!("{}:{}", tools.display(), std::env::var("PATH").unwrap_or_default());
    Command::new("sh").args(["-c", command]).env("KUBECONFIG", kubeconfig).env("PATH", path).output().expect("sh runs")
}

#[test]
fn the_readmes_first_steps_work_as_written() {
    let home = tempfile::tempdir().unwrap();
    let (_host, live) = start_host(home.path(), home.path(), None, "deployment");

    // The README shows the line with its paths elided; every other part is what is printed.
    let shown = section(README, "```sh\nexport KUBECONFIG=");
    let shown = shown.lines().nth(1).expect("the README's try line");
    for part in shown.split(['…', '<', '>']).map(str::trim).filter(|p| p.len() > 8) {
        assert!(live.try_line.contains(part), "README.md shows {part:?}, the host prints {}", live.try_line);
    }
    let pasted = Command::new("sh").args(["-c", &live.try_line]).env_remove("KUBECONFIG").output().expect("sh runs");
    assert!(pasted.status.success(), "the try line: {}", text(&pasted));

    let then = kubectl_commands(section(README, "\n- `kubectl set image"));
    assert!(then.len() >= 10, "the Then: list as read: {then:#?}");
    for command in &then {
        if command == "kubectl logs" {
            // Said to be refused, and why: asked of the Job the list ran.
            let out = sh("kubectl logs job/pi", &live.kubeconfig);
            let said = text(&out);
            assert!(!out.status.success() && said.contains("runs no containers, so pod default/pi-"), "{said}");
            continue;
        }
        let out = sh(command, &live.kubeconfig);
        assert!(out.status.success(), "{command}: {}", text(&out));
    }
    assert!(then.iter().any(|c| c.contains("rollout undo")), "{then:#?}");
    let image =
        sh("kubectl get deployment web -o jsonpath={.spec.template.spec.containers[0].image}", &live.kubeconfig);
    assert_eq!(String::from_utf8_lossy(&image.stdout), "nginx:1", "undone to the first image");
    let once = sh("kubectl wait --for=condition=complete job/once --timeout=120s", &live.kubeconfig);
    assert!(once.status.success(), "the Job made from the CronJob completes: {}", text(&once));
}
