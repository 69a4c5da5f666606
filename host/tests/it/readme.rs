//! The READMEs' steps, run from their own text so that a changed README is a changed test, in a
//! shell as a reader has one ([`Reader`]):
//!
//! - README.md's first hour: the host as `make run` starts it (checked with `make -n` to be
//!   `cargo run -p wasmcm -- run`; `make test` is this suite), the `try:` line it prints pasted
//!   as it is (and the README's rendering of that line checked against it), then every command
//!   of the "Then:" list, in order. Its "Write a plugin" block is run by `scaffold.rs`.
//! - deploy/README.md: every command of its `sh` blocks, and the inline ones of its steps, in the
//!   reader's order against the embedded cluster as `~/.kube/config`: the install three ways,
//!   the host running as the manifests' pod (the rollout, the Lease), "Try it", a plugin from a
//!   ConfigMap (its RBAC from `wasmcm plugins rbac`, `kubectl edit` of the plugin manifest, the
//!   restart, a hot swap with `kubectl replace`), sharding, both uninstalls, the chart checks.
//!   What cannot run here is listed with the reason, and a command of a block that is neither run
//!   nor listed fails the test.
//!
//! - apiserver/README.md's "Start it": `make cluster` (checked with `make -n` to be `cargo run -p
//!   wasmcm -- cluster`, this test's binary), the `export` of the kubeconfig it prints, `kubectl
//!   get nodes`.
//!
//! Owns the READMEs' commands only; what they do is the Deployment, Job, CronJob, deploy,
//! plugin-loading and shards tests'. Which test runs each block of every document: `docs.rs`.

use crate::common;
use crate::scaffold::{start_host, text};

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

pub(crate) const README: &str = include_str!("../../../README.md");
const DEPLOY: &str = include_str!("../../../deploy/README.md");
const APISERVER: &str = include_str!("../../../apiserver/README.md");

/// The paragraph (or list) of README.md that starts with `from`: up to the next blank line.
fn section<'a>(readme: &'a str, from: &str) -> &'a str {
    let start = readme.find(from).unwrap_or_else(|| panic!("the README has no {from:?}"));
    let rest = &readme[start + 1..];
    &readme[start..start + 1 + rest.find("\n\n").unwrap_or(rest.len())]
}

/// The ```sh blocks of `doc`, as their lines (a block in a list item is indented).
fn sh_blocks(doc: &str) -> Vec<String> {
    let blocks = doc.split("```sh\n").skip(1);
    blocks.map(|rest| rest.lines().take_while(|l| l.trim() != "```").collect::<Vec<_>>().join("\n")).collect()
}

/// The ```sh block of `doc` whose first line starts with `first`.
pub(crate) fn sh_block(doc: &str, first: &str) -> String {
    sh_blocks(doc)
        .into_iter()
        .find(|b| b.trim_start().starts_with(first))
        .unwrap_or_else(|| panic!("no block {first:?}"))
}

/// The commands of a block as a shell reads them: continued lines joined, comment lines and
/// blank ones left out (a trailing comment stays: the shell ignores it).
pub(crate) fn commands(block: &str) -> Vec<String> {
    let joined = block.replace("\\\n", " ");
    joined.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect()
}

/// What follows `# or: ` in a command: the alternative the block offers.
fn alternative(command: &str) -> String {
    command.split("# or: ").nth(1).unwrap_or_else(|| panic!("no alternative in {command:?}")).trim().to_string()
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

/// The inline command of `doc` (between backticks, lines joined) that starts with `start`.
pub(crate) fn inline(doc: &str, start: &str) -> String {
    let joined = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let found = joined.split('`').skip(1).step_by(2).find(|s| s.starts_with(start));
    found.unwrap_or_else(|| panic!("no inline command {start:?}")).to_string()
}

/// `command`, a document's `cargo run -p wasmcm -- …`, as the `wasmcm …` it runs: in a
/// checkout that is target/debug/wasmcm, the binary of this test's build, which the [`Reader`]
/// has on its PATH (cargo here would only build it again).
pub(crate) fn installed(command: &str) -> String {
    let rest = command.strip_prefix("cargo run -p wasmcm -- ");
    format!("wasmcm {}", rest.unwrap_or_else(|| panic!("not a `cargo run -p wasmcm --` command: {command}")))
}

/// A shell as a README's reader has one: `wasmcm` (this build's, as `make install` puts it) and
/// the pinned kubectl and helm first on the PATH, HOME `home`, no KUBECONFIG (a command sets its
/// own), nothing of this test's build in the environment, and each command bounded by a
/// generous timeout so that a hang fails instead of stalling the suite.
pub(crate) struct Reader {
    home: PathBuf,
    path: String,
    _bin: tempfile::TempDir,
}

impl Reader {
    pub(crate) fn new(home: &Path) -> Self {
        let bin = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_wasmcm"), bin.path().join("wasmcm")).unwrap();
        let tools = wasmcm_test_support::kubectl_path().parent().expect("target/tools").to_path_buf();
        let path =
            format!("{}:{}:{}", bin.path().display(), tools.display(), std::env::var("PATH").unwrap_or_default());
        Reader { home: home.to_path_buf(), path, _bin: bin }
    }

    fn command(&self, dir: &Path, line: &str) -> Command {
        let mut cmd = Command::new("timeout");
        cmd.args(["--kill-after=10", "600", "sh", "-c", line]).current_dir(dir);
        // The reader's own rustup and cargo, which live in the real HOME unless placed elsewhere.
        let real_home = PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
        for (var, default) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
            cmd.env(var, std::env::var_os(var).map_or_else(|| real_home.join(default), PathBuf::from));
        }
        common::as_an_author(&mut cmd)
            .env("HOME", &self.home)
            .env("PATH", &self.path)
            .env("WASMCM_CACHE_DIR", common::precompiled_dir())
            .env("RUST_LOG", "off")
            .env_remove("KUBECONFIG")
            .env_remove("CARGO_TARGET_DIR");
        cmd
    }

    /// The reader with `dir` first on the PATH too: a tool a document's step installs there.
    pub(crate) fn with_path(mut self, dir: &Path) -> Self {
        self.path = format!("{}:{}", dir.display(), self.path);
        self
    }

    pub(crate) fn run(&self, dir: &Path, line: &str) -> Output {
        self.command(dir, line).output().expect("sh runs")
    }

    /// `line`'s output; it must succeed.
    pub(crate) fn ok(&self, dir: &Path, line: &str) -> String {
        let out = self.run(dir, line);
        assert!(out.status.success(), "{line}:\n{}", text(&out));
        text(&out)
    }
}

#[test]
fn the_readmes_first_steps_work_as_written() {
    let home = tempfile::tempdir().unwrap();
    // `make run` is `cargo run -p wasmcm -- run`, this test's binary, started here as it starts.
    let reader = Reader::new(home.path());
    let first = Blocks::of(README, "make run");
    let run = first.take("make run");
    let dry = reader.ok(&common::workspace_root(), &run.replacen("make ", "make -n ", 1));
    assert!(dry.lines().any(|l| l == "cargo run -p wasmcm -- run"), "{run}: {dry}");
    first.skip("make test", "the suite this test is part of");
    first.finished("README.md's first block");
    let (_host, live) = start_host(home.path(), home.path(), None, "deployment");

    // The README shows the line with its paths elided; every other part is what is printed.
    let shown = section(README, "```sh\nexport KUBECONFIG=");
    let shown = shown.lines().nth(1).expect("the README's try line");
    for part in shown.split(['…', '<', '>']).map(str::trim).filter(|p| p.len() > 8) {
        assert!(live.try_line.contains(part), "README.md shows {part:?}, the host prints {}", live.try_line);
    }
    let pasted = Command::new("sh").args(["-c", &live.try_line]).env_remove("KUBECONFIG").output().expect("sh runs");
    assert!(pasted.status.success(), "the try line: {}", text(&pasted));

    // A reader's shell with the exported KUBECONFIG the try line sets.
    let export = format!("export KUBECONFIG={} && ", live.kubeconfig.display());
    let sh = |command: &str| reader.run(home.path(), &format!("{export}{command}"));
    let then = kubectl_commands(section(README, "\n- `kubectl set image"));
    assert!(then.len() >= 10, "the Then: list as read: {then:#?}");
    for command in &then {
        if command == "kubectl logs" {
            // Said to be refused, and why: asked of the Job the list ran.
            let out = sh("kubectl logs job/pi");
            let said = text(&out);
            assert!(!out.status.success() && said.contains("runs no containers, so pod default/pi-"), "{said}");
            continue;
        }
        let out = sh(command);
        assert!(out.status.success(), "{command}: {}", text(&out));
    }
    assert!(then.iter().any(|c| c.contains("rollout undo")), "{then:#?}");
    let image = sh("kubectl get deployment web -o jsonpath={.spec.template.spec.containers[0].image}");
    assert_eq!(String::from_utf8_lossy(&image.stdout), "nginx:1", "undone to the first image");
    let once = sh("kubectl wait --for=condition=complete job/once --timeout=120s");
    assert!(once.status.success(), "the Job made from the CronJob completes: {}", text(&once));
}

/// A document's block commands (all of its blocks', or one block's), each taken (to run) or
/// skipped (with why) once: [`finished`](Self::finished) fails on a command neither, so that a
/// command added to the document fails its test until the test runs it or says why not.
pub(crate) struct Blocks {
    commands: Vec<String>,
    read: RefCell<BTreeSet<usize>>,
}

impl Blocks {
    fn new(doc: &str) -> Self {
        let commands = sh_blocks(doc).iter().flat_map(|b| commands(b)).collect();
        Blocks { commands, read: RefCell::default() }
    }

    /// The commands of `doc`'s block whose first line starts with `first`.
    pub(crate) fn of(doc: &str, first: &str) -> Self {
        Blocks { commands: commands(&sh_block(doc, first)), read: RefCell::default() }
    }

    /// The first command not taken yet that is `start`, else that starts with it.
    #[track_caller]
    pub(crate) fn take(&self, start: &str) -> String {
        let unread = |i: &usize| !self.read.borrow().contains(i);
        let all = 0..self.commands.len();
        let found = all.clone().filter(unread).find(|&i| self.commands[i] == start);
        let found = found.or_else(|| all.filter(unread).find(|&i| self.commands[i].starts_with(start)));
        let i = found.unwrap_or_else(|| panic!("no command left starts with {start:?}: {:#?}", self.commands));
        self.read.borrow_mut().insert(i);
        self.commands[i].clone()
    }

    /// Every command that starts with `start` (one or more), not run here because `_why`.
    #[track_caller]
    pub(crate) fn skip(&self, start: &str, _why: &str) {
        let found: Vec<usize> = (0..self.commands.len()).filter(|&i| self.commands[i].starts_with(start)).collect();
        assert!(!found.is_empty(), "no command starts with {start:?}: {:#?}", self.commands);
        self.read.borrow_mut().extend(found);
    }

    fn unread(&self) -> Vec<&String> {
        let read = self.read.borrow();
        self.commands.iter().enumerate().filter(|(i, _)| !read.contains(i)).map(|(_, c)| c).collect()
    }

    /// Fails naming the commands of `doc` neither taken nor skipped.
    #[track_caller]
    pub(crate) fn finished(&self, doc: &str) {
        assert_eq!(self.unread(), Vec::<&String>::new(), "{doc}: commands neither run nor listed as skipped");
    }
}

/// The host as the manifests' pod `pod` on `cluster`, with the plugin manifest of the ConfigMap
/// wasmcm-plugins as the kubelet mounts it; stopped with SIGTERM, as the kubelet stops it.
struct Pod {
    child: Child,
    log: PathBuf,
    plugins: PathBuf,
    _dir: tempfile::TempDir,
}

impl Pod {
    fn start(cluster: &wasmcm_apiserver::Cluster, reader: &Reader, work: &Path, pod: &str) -> Pod {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("plugins");
        std::fs::create_dir(&plugins).unwrap();
        mount(reader, work, &plugins);
        let log = dir.path().join("wasmcm.log");
        let child = common::in_cluster_host(cluster, dir.path(), &plugins, pod, &log);
        Pod { child, log, plugins, _dir: dir }
    }

    /// The volume updated, as the kubelet syncs it (here at once).
    fn sync(&self, reader: &Reader, work: &Path) {
        mount(reader, work, &self.plugins);
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn stop(mut self) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "SIGTERM is a clean stop: {status}\n{}", self.log());
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The ConfigMap wasmcm-plugins as its volume at `plugins`, written whole (the kubelet swaps a
/// symlink).
fn mount(reader: &Reader, work: &Path, plugins: &Path) {
    let manifest =
        reader.ok(work, r"kubectl -n wasmcm get configmap wasmcm-plugins -o 'jsonpath={.data.plugins\.yaml}'");
    let staged = plugins.join(".plugins.yaml.new");
    std::fs::write(&staged, manifest).unwrap();
    std::fs::rename(staged, plugins.join("plugins.yaml")).unwrap();
}

/// `line` run until its output is `want`.
fn until(reader: &Reader, work: &Path, line: &str, want: &str, pod: &Pod) {
    let deadline = Instant::now() + common::PATIENCE;
    loop {
        let out = reader.run(work, line);
        if text(&out).trim() == want {
            return;
        }
        assert!(Instant::now() < deadline, "{line} never gave {want:?}: {}\nhost log:\n{}", text(&out), pod.log());
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn the_deploy_readmes_steps_work_as_written() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (cluster, _admin) = runtime.block_on(common::cluster());
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".kube")).unwrap();
    std::fs::copy(&cluster.kubeconfig, home.path().join(".kube/config")).unwrap();
    // A checkout as the reader has one: the docs' relative paths, the build's target/.
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let root = common::workspace_root();
    for dir in ["deploy", "scripts"] {
        std::os::unix::fs::symlink(root.join(dir), work.join(dir)).unwrap();
    }
    let target = Path::new(env!("CARGO_BIN_EXE_wasmcm")).parent().and_then(Path::parent).expect("target/");
    std::os::unix::fs::symlink(target, work.join("target")).unwrap();
    let reader = Reader::new(home.path());
    let blocks = Blocks::new(DEPLOY);

    blocks.skip("docker build", "no Docker engine, and its base images are on registries this machine cannot reach");
    blocks.skip("make image", "image.rs builds the image with scripts/build-image.sh from the test build's binary");
    blocks.skip("skopeo copy", "no registry to push to");
    blocks.skip("kubectl -n wasmcm exec", "no container runs on the simulated kubelet");
    blocks.skip("cargo test -p wasmcm --test it deploy::", "this suite");

    // Step 3, install with kubectl, both ways.
    let install = blocks.take("kubectl apply -k deploy/manifests            # or:");
    reader.ok(work, &install);
    reader.ok(work, &alternative(&install));

    // Step 4: the host as the Deployment's pod, which rolls out its own Deployment and leads.
    let pod = Pod::start(&cluster, &reader, work, "wasmcm-readme");
    let rollout = reader.ok(work, &blocks.take("kubectl -n wasmcm rollout status deployment/wasmcm"));
    assert!(rollout.contains("successfully rolled out"), "{rollout}");
    let pods = reader.ok(work, &blocks.take("kubectl -n wasmcm get pods -l app.kubernetes.io/name=wasmcm"));
    assert_eq!(pods.lines().filter(|l| l.starts_with("wasmcm-") && l.contains("Running")).count(), 2, "{pods}");
    let holder = reader.ok(work, &blocks.take("kubectl -n wasmcm get lease wasmcm"));
    assert_eq!(holder.trim(), "wasmcm-readme", "the leader");
    let logs = reader.run(work, &blocks.take("kubectl -n wasmcm logs deployment/wasmcm"));
    assert!(!logs.status.success() && text(&logs).contains("runs no containers"), "{}", text(&logs));

    // Step 6, try it.
    let try_it = kubectl_commands(section(DEPLOY, "6. Try it"));
    assert_eq!(try_it.len(), 4, "{try_it:#?}");
    for command in &try_it {
        reader.ok(work, command);
    }
    let events = reader.ok(work, "kubectl get events");
    assert!(events.contains("ScalingReplicaSet") && events.contains("SuccessfulCreate"), "{events}");

    // A plugin from a ConfigMap: the stamp test plugin as my.wasm, its RBAC, its manifest entry
    // (`kubectl edit`, the README's entry pasted in), started without a restart.
    let stamp = std::fs::read(common::guest("wasmcm_stamp.wasm")).unwrap();
    let release = |stamp_value: &str, version: &str| wasmcm_stamp::variant(&stamp, stamp_value, version).unwrap();
    std::fs::write(work.join("my.wasm"), release("v1", "1.0.0")).unwrap();
    std::fs::write(work.join("my-v2.wasm"), release("v2", "2.0.0")).unwrap();
    reader.ok(work, &blocks.take("kubectl -n wasmcm create configmap my-plugin --from-file=my.wasm=./my.wasm"));
    let rbac = inline(DEPLOY, "wasmcm plugins rbac my.wasm --kubeconfig … | kubectl apply -f -");
    let applied = reader.ok(work, &rbac.replace('…', "~/.kube/config"));
    assert!(applied.contains("serviceaccount/wasmcm-stamp"), "{applied}");
    let entry = section(DEPLOY, "```yaml\n    items:").lines().skip(1).take_while(|l| !l.starts_with("```"));
    // The optional pin is left out: the hot swap below replaces the bytes. The account is the
    // one `plugins rbac` made, as the README says to name it.
    let entry: Vec<String> = entry
        .filter(|l| !l.trim_start().starts_with("sha256:"))
        .flat_map(|l| match l.trim_start().starts_with("source:") {
            true => vec![l.to_string(), "          serviceAccount: wasmcm-stamp".to_string()],
            false => vec![l.to_string()],
        })
        .collect();
    std::fs::write(work.join("entry.yaml"), entry.join("\n") + "\n").unwrap();
    let editor = format!("sed -i -e '/^    items:$/{{r {}' -e 'd}}'", work.join("entry.yaml").display());
    let edit = inline(DEPLOY, "kubectl -n wasmcm edit configmap wasmcm-plugins");
    reader.ok(work, &format!("KUBE_EDITOR=\"{editor}\" {edit}"));
    // As the kubelet: the volume updated; the running host starts the new plugin.
    pod.sync(&reader, work);
    reader.ok(work, "kubectl create namespace team-a");
    reader.ok(
        work,
        "kubectl -n team-a create configmap stamped && kubectl -n team-a label configmap stamped wasmcm.dev/stamp=yes",
    );
    until(&reader, work, "kubectl -n team-a get configmap stamped -o jsonpath={.data.stamp}", "v1", &pod);
    assert!(pod.log().contains("my-plugin"), "{}", pod.log());

    // Hot swap: new bytes through `kubectl replace`, swapped in without a restart.
    reader.ok(work, &blocks.take("kubectl -n wasmcm create configmap my-plugin --from-file=my.wasm=./my-v2.wasm"));
    until(&reader, work, "kubectl -n team-a get configmap stamped -o jsonpath={.data.stamp}", "v2", &pod);

    // Sharding: the commands, and `wasmcm shards` reading the group (here led by the one host).
    reader.ok(work, &blocks.take("kubectl apply -k deploy/manifests"));
    reader.ok(work, &blocks.take("kubectl apply -f deploy/sharding/"));
    reader.ok(work, &blocks.take("kubectl -n wasmcm set env deployment/wasmcm WASMCM_SHARDS=32"));
    reader.ok(work, &blocks.take("kubectl -n wasmcm scale deployment/wasmcm --replicas=3"));
    let shards = blocks.take("target/debug/wasmcm shards --kubeconfig ~/.kube/config --namespace wasmcm   # who");
    let shown = reader.ok(work, &shards);
    assert!(shown.contains("wasmcm-readme"), "{shown}");
    reader.ok(work, &blocks.take("kubectl -n wasmcm set env deployment/wasmcm WASMCM_SHARDS=16"));
    reader.ok(work, &blocks.take("kubectl -n wasmcm rollout status deployment/wasmcm"));
    reader.ok(work, &blocks.take("target/debug/wasmcm shards --kubeconfig ~/.kube/config --namespace wasmcm"));

    // Uninstall with kubectl: the namespace goes, with what was created in it.
    pod.stop();
    let uninstall = blocks.take("kubectl delete -k deploy/manifests");
    reader.ok(work, &uninstall);
    reader.ok(work, "kubectl wait --for=delete namespace/wasmcm --timeout=120s");

    // Step 3 with Helm, the plugin's bytes shipped by the chart, and uninstall.
    let helm = blocks.take("helm install wasmcm deploy/helm/wasmcm -n wasmcm --create-namespace");
    reader.ok(work, &helm.replace("<registry>", "registry.example"));
    let values = section(DEPLOY, "```yaml\nplugins:\n  extra:").lines().skip(1).take_while(|l| !l.starts_with("```"));
    let values =
        values.collect::<Vec<_>>().join("\n").replace("{name: my-plugin, key", "{name: wasmcm-plugin-files, key");
    std::fs::write(work.join("my-plugin.yaml"), values + "\n").unwrap();
    reader.ok(work, &blocks.take("base64 -w0 my.wasm > my.wasm.b64"));
    reader.ok(work, &blocks.take("helm upgrade --install wasmcm deploy/helm/wasmcm -n wasmcm -f my-plugin.yaml"));
    let shipped =
        reader.ok(work, r"kubectl -n wasmcm get configmap wasmcm-plugin-files -o 'jsonpath={.binaryData.my\.wasm}'");
    assert_eq!(shipped.trim(), std::fs::read_to_string(work.join("my.wasm.b64")).unwrap(), "the chart ships the bytes");
    let manifest =
        reader.ok(work, r"kubectl -n wasmcm get configmap wasmcm-plugins -o 'jsonpath={.data.plugins\.yaml}'");
    assert!(manifest.contains("my-plugin") && manifest.contains("wasmcm-plugin-files"), "{manifest}");
    reader.ok(work, &alternative(&uninstall));
    reader.ok(work, &inline(DEPLOY, "kubectl delete namespace wasmcm"));
    reader.ok(work, "kubectl wait --for=delete namespace/wasmcm --timeout=120s");

    // Step 3 without Helm managing the release.
    reader.ok(work, &inline(DEPLOY, "kubectl create namespace wasmcm && helm template"));
    reader.ok(work, "kubectl -n wasmcm get deployment wasmcm");

    // Checking the chart and the manifests here.
    for start in [
        "scripts/install-helm.sh",
        "target/tools/helm lint",
        "target/tools/helm template",
        "target/tools/kubectl kustomize",
    ] {
        reader.ok(work, &blocks.take(start));
    }

    blocks.finished("deploy/README.md");
}

#[test]
fn the_apiserver_readmes_start_works_as_written() {
    let [make, export, get] = &commands(&sh_block(APISERVER, "make cluster"))[..] else {
        panic!("apiserver/README.md's Start it block")
    };
    let home = tempfile::tempdir().unwrap();
    let reader = Reader::new(home.path());
    let root = common::workspace_root();
    let target = reader.ok(&root, &make.replacen("make ", "make -n ", 1));
    assert!(target.lines().any(|l| l == "cargo run -p wasmcm -- cluster"), "{make}: {target}");

    // `cargo run -p wasmcm -- cluster` is this test's binary; the kubeconfig path it prints.
    let mut cluster = std::process::Command::new(env!("CARGO_BIN_EXE_wasmcm"))
        .arg("cluster")
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("wasmcm runs");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(cluster.stdout.take().expect("piped")));
    let kubeconfig = lines
        .by_ref()
        .find_map(|l| l.ok()?.strip_prefix("kubeconfig: ").map(String::from))
        .expect("wasmcm cluster prints its kubeconfig");
    std::thread::spawn(move || for _ in lines {});
    let shown = export.split_whitespace().nth(1).expect("export KUBECONFIG=…");
    let (before, after) = shown.split_once('…').expect("the README elides the path");
    let printed = format!("KUBECONFIG={kubeconfig}");
    assert!(
        printed.starts_with(before) && printed.ends_with(after),
        "README.md shows {shown}, the cluster prints {printed}"
    );

    let nodes = reader.run(&root, &format!("export {printed} && {get}"));
    // Ctrl-C, as a reader stops it: the cluster removes its files.
    let pid = cluster.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    assert!(cluster.wait().unwrap().success(), "Ctrl-C stops the cluster cleanly");
    assert!(!Path::new(&kubeconfig).exists(), "{kubeconfig} is removed");
    assert!(nodes.status.success() && text(&nodes).contains(" Ready "), "{get}: {}", text(&nodes));
}
