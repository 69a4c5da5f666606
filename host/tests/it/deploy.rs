//! What `deploy/` ships, checked with the real tools against the embedded cluster: the plain
//! manifests applied with kubectl v1.35 (`apply -f` and `apply -k`, twice), the objects read back
//! as written; the Helm chart linted and rendered with helm v4.1 (`scripts/install-helm.sh`),
//! applied, and compared with the manifests (the "must agree" of deploy/README.md: the same
//! objects, and above all the same RBAC rules); the chart installed, upgraded, rolled back and
//! uninstalled by helm itself against the embedded cluster; values overrides rendered; the plugin
//! manifest of both ConfigMaps resolved and loaded by the host's own loader; and the Plugin kind's
//! CRD, the same file in both, served after either install and holding Plugins to its schema.
//! Without kubectl or helm these tests fail, they never skip. No wasmcm host runs here, so no pods
//! appear: nothing waits for any.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use wasmcm::Source;

/// The objects of deploy/manifests, as kubectl names them in its output.
const MANIFEST_OBJECTS: [&str; 29] = [
    "customresourcedefinition.apiextensions.k8s.io/plugins.wasmcm.dev",
    "namespace/wasmcm",
    "serviceaccount/wasmcm",
    "clusterrole.rbac.authorization.k8s.io/wasmcm",
    "clusterrolebinding.rbac.authorization.k8s.io/wasmcm",
    "role.rbac.authorization.k8s.io/wasmcm",
    "rolebinding.rbac.authorization.k8s.io/wasmcm",
    "serviceaccount/wasmcm-replicaset",
    "clusterrole.rbac.authorization.k8s.io/wasmcm-replicaset",
    "clusterrolebinding.rbac.authorization.k8s.io/wasmcm-replicaset",
    "serviceaccount/wasmcm-deployment",
    "clusterrole.rbac.authorization.k8s.io/wasmcm-deployment",
    "clusterrolebinding.rbac.authorization.k8s.io/wasmcm-deployment",
    "serviceaccount/wasmcm-rollback",
    "clusterrole.rbac.authorization.k8s.io/wasmcm-rollback",
    "clusterrolebinding.rbac.authorization.k8s.io/wasmcm-rollback",
    "serviceaccount/wasmcm-job",
    "clusterrole.rbac.authorization.k8s.io/wasmcm-job",
    "clusterrolebinding.rbac.authorization.k8s.io/wasmcm-job",
    "serviceaccount/wasmcm-cronjob",
    "clusterrole.rbac.authorization.k8s.io/wasmcm-cronjob",
    "clusterrolebinding.rbac.authorization.k8s.io/wasmcm-cronjob",
    "serviceaccount/wasmcm-ttlafterfinished",
    "clusterrole.rbac.authorization.k8s.io/wasmcm-ttlafterfinished",
    "clusterrolebinding.rbac.authorization.k8s.io/wasmcm-ttlafterfinished",
    "configmap/wasmcm-plugins",
    "deployment.apps/wasmcm",
    "service/wasmcm-metrics",
    "poddisruptionbudget.policy/wasmcm",
];

fn manifests_dir() -> PathBuf {
    common::workspace_root().join("deploy/manifests")
}

fn chart_dir() -> PathBuf {
    common::workspace_root().join("deploy/helm/wasmcm")
}

/// The Plugin kind's CRD, as deploy/manifests has it and as the chart's crds/ has it.
const CRD_FILES: [&str; 2] =
    ["deploy/manifests/00-crd-plugins.yaml", "deploy/helm/wasmcm/crds/plugins.wasmcm.dev.yaml"];

/// Runs `program` (with `kubeconfig` when given), off the async workers: the cluster serves on them.
fn run(program: &Path, args: &[&str], kubeconfig: Option<&Path>, stdin: Option<&str>) -> Output {
    tokio::task::block_in_place(|| {
        let mut cmd = Command::new(program);
        cmd.args(args).current_dir(common::workspace_root());
        if let Some(kc) = kubeconfig {
            // HOME and XDG's dirs: kubectl's and helm's configuration, caches and data go beside
            // the cluster's kubeconfig; no HELM_* of the tester's (a namespace, a context, a
            // storage driver) steers helm elsewhere.
            let dir = kc.parent().unwrap();
            cmd.env("KUBECONFIG", kc).env("HOME", dir);
            for (var, sub) in [("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"), ("XDG_DATA_HOME", ".data")]
            {
                cmd.env(var, dir.join(sub));
            }
            for (var, _) in std::env::vars_os().filter(|(v, _)| v.to_string_lossy().starts_with("HELM_")) {
                cmd.env_remove(var);
            }
        }
        cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{} runs: {e}", program.display()));
        if let Some(input) = stdin {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        }
        child.wait_with_output().unwrap()
    })
}

/// stdout of a command that must succeed; fails the test with its stderr otherwise.
fn ok(program: &Path, args: &[&str], kubeconfig: Option<&Path>, stdin: Option<&str>) -> String {
    let out = run(program, args, kubeconfig, stdin);
    assert!(
        out.status.success(),
        "{} {} failed: {}{}",
        program.display(),
        args.join(" "),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    ok(&common::kubectl_path(), args, Some(kubeconfig), stdin)
}

fn helm(args: &[&str]) -> String {
    ok(&common::helm_path(), args, None, None)
}

/// helm with `args` against the cluster of `kubeconfig`.
fn helm_on(kubeconfig: &Path, args: &[&str]) -> String {
    ok(&common::helm_path(), args, Some(kubeconfig), None)
}

/// `helm template wasmcm deploy/helm/wasmcm -n wasmcm --include-crds` with `extra` arguments:
/// what `helm install` installs, crds/ included.
fn helm_template(extra: &[&str]) -> String {
    let chart = chart_dir();
    let mut args = vec!["template", "wasmcm", chart.to_str().unwrap(), "-n", "wasmcm", "--include-crds"];
    args.extend_from_slice(extra);
    helm(&args)
}

/// The objects of a multi-document YAML stream (empty documents dropped).
fn documents(text: &str) -> Vec<Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).unwrap_or_else(|e| panic!("invalid YAML: {e}\n{text}"));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

/// The objects of deploy/manifests, read as `kubectl apply -f` reads them: every .yaml file.
fn manifest_objects() -> Vec<Value> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(manifests_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files.iter().flat_map(|f| documents(&std::fs::read_to_string(f).unwrap())).collect()
}

/// The one object of `kind` named `name`.
fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    let mut found = objects.iter().filter(|o| o["kind"] == kind && o["metadata"]["name"] == name);
    let object = found.next().unwrap_or_else(|| panic!("no {kind} {name} among {}", names(objects).join(", ")));
    assert!(found.next().is_none(), "two {kind} {name}");
    object
}

fn names(objects: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = objects
        .iter()
        .map(|o| format!("{}/{}", o["kind"].as_str().unwrap(), o["metadata"]["name"].as_str().unwrap()))
        .collect();
    names.sort();
    names
}

/// Whether `actual` holds everything `expected` says (objects: every key of `expected`, recursively;
/// numbers: the same value, 1 and 1.0 alike; everything else: equal). What the server adds
/// (defaults, status, metadata) is allowed; anything it dropped or changed is reported by its path.
fn contains(actual: &Value, expected: &Value, path: &str) -> Result<(), String> {
    match (actual, expected) {
        // k8s-openapi keeps a schema's `minimum` and `maximum` as f64: the round trip writes 1.0.
        (Value::Number(a), Value::Number(e)) if a.as_f64() == e.as_f64() => Ok(()),
        (Value::Object(a), Value::Object(e)) => e.iter().try_for_each(|(k, ev)| match a.get(k) {
            Some(av) => contains(av, ev, &format!("{path}.{k}")),
            None => Err(format!("{path}.{k}: missing, expected {ev}")),
        }),
        (Value::Array(a), Value::Array(e)) if a.len() == e.len() => {
            a.iter().zip(e).enumerate().try_for_each(|(i, (av, ev))| contains(av, ev, &format!("{path}[{i}]")))
        }
        _ if actual == expected => Ok(()),
        _ => Err(format!("{path}: {actual}, expected {expected}")),
    }
}

/// Every object of `written` is on the server (one `kubectl get -f -`) and holds what was written.
fn assert_served_as_written(kubeconfig: &Path, written: &[Value]) {
    let stream = written.iter().map(|o| serde_json::to_string(o).unwrap()).collect::<Vec<_>>().join("\n---\n");
    let served: Value =
        serde_json::from_str(&kubectl(kubeconfig, &["get", "-f", "-", "-o", "json"], Some(&stream))).unwrap();
    let served = served["items"].as_array().expect("a List").clone();
    assert_eq!(names(&served), names(written), "what the server has");
    for object in written {
        let kind = object["kind"].as_str().unwrap();
        let name = object["metadata"]["name"].as_str().unwrap();
        if let Err(e) = contains(find(&served, kind, name), object, &format!("{kind}/{name}")) {
            panic!("the server does not hold what was written: {e}");
        }
    }
}

/// Every field of every object is one of its kind's (Kubernetes 1.35 types, k8s-openapi): a typo'd
/// field, which kube-apiserver's strict field validation would refuse but the embedded cluster
/// keeps, is dropped by the round trip and reported.
fn assert_known_fields(objects: &[Value]) {
    use k8s_openapi::api::{apps, core, policy, rbac};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
    fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(object: &Value) -> Value {
        serde_json::to_value(serde_json::from_value::<T>(object.clone()).expect("the kind's type")).unwrap()
    }
    for object in objects {
        let kind = object["kind"].as_str().unwrap();
        let typed = match kind {
            "Namespace" => round_trip::<core::v1::Namespace>(object),
            "ServiceAccount" => round_trip::<core::v1::ServiceAccount>(object),
            "ConfigMap" => round_trip::<core::v1::ConfigMap>(object),
            "Service" => round_trip::<core::v1::Service>(object),
            "ClusterRole" => round_trip::<rbac::v1::ClusterRole>(object),
            "ClusterRoleBinding" => round_trip::<rbac::v1::ClusterRoleBinding>(object),
            "Role" => round_trip::<rbac::v1::Role>(object),
            "RoleBinding" => round_trip::<rbac::v1::RoleBinding>(object),
            "Deployment" => round_trip::<apps::v1::Deployment>(object),
            "PodDisruptionBudget" => round_trip::<policy::v1::PodDisruptionBudget>(object),
            "CustomResourceDefinition" => round_trip::<apiextensions::v1::CustomResourceDefinition>(object),
            other => panic!("no type for {other}: add it here"),
        };
        let name = object["metadata"]["name"].as_str().unwrap();
        if let Err(e) = contains(&typed, object, &format!("{kind}/{name}")) {
            panic!("not a field of the Kubernetes types: {e}");
        }
    }
}

/// The CRD of the Plugin kind is Established and `kubectl get plugins` answers (no Plugin yet).
fn assert_plugins_served(kubeconfig: &Path) {
    let crd = "customresourcedefinition/plugins.wasmcm.dev";
    kubectl(kubeconfig, &["wait", "--for=condition=Established", crd, "--timeout=60s"], None);
    let plugins: Value = serde_json::from_str(&kubectl(kubeconfig, &["get", "plugins", "-o", "json"], None)).unwrap();
    assert_eq!(plugins["items"], serde_json::json!([]), "no Plugin yet: {plugins}");
}

/// kubectl apply's output names every object of deploy/manifests, each with one of `verbs`.
fn assert_applied(output: &str, verbs: &[&str]) {
    let mut lines: Vec<&str> = output.lines().collect();
    lines.sort();
    let mut expected: Vec<&str> = MANIFEST_OBJECTS.to_vec();
    expected.sort();
    assert_eq!(lines.len(), expected.len(), "one line per object:\n{output}");
    for (line, object) in lines.iter().zip(expected) {
        let verb = line.strip_prefix(object).and_then(|v| v.strip_prefix(' '));
        assert!(verb.is_some_and(|v| verbs.contains(&v)), "{object} should be one of {verbs:?}:\n{output}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_manifests_apply_with_kubectl_f_and_k() {
    let written = manifest_objects();
    assert_known_fields(&written);
    let dir = manifests_dir();
    let dir = dir.to_str().unwrap();

    // kubectl apply -f: every object created, and on the server as written.
    let (cluster, _) = common::cluster().await;
    let kc = cluster.kubeconfig.clone();
    assert_applied(&kubectl(&kc, &["apply", "-f", dir], None), &["created"]);
    assert_served_as_written(&kc, &written);
    assert_plugins_served(&kc);

    // Again: nothing to create. The PodDisruptionBudget says "configured" against kube-apiserver
    // too: its selector's patch strategy is replace, so kubectl's patch is never empty.
    assert_applied(&kubectl(&kc, &["apply", "-f", dir], None), &["unchanged", "configured"]);
    assert_served_as_written(&kc, &written);

    // The Deployment as written: the fields a cluster's admission (Pod Security "restricted") and
    // the host's probes depend on, read back from the server.
    let deployment: Value =
        serde_json::from_str(&kubectl(&kc, &["-n", "wasmcm", "get", "deployment", "wasmcm", "-o", "json"], None))
            .unwrap();
    let spec = &deployment["spec"];
    assert_eq!(spec["replicas"], 2);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "wasmcm");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "ghcr.io/wasmcm/wasmcm:0.1.0");
    let security = &container["securityContext"];
    assert_eq!(security["runAsNonRoot"], true);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert_eq!(security["seccompProfile"]["type"], "RuntimeDefault");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["startupProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["port"], "metrics");
    assert_eq!(container["resources"]["requests"]["memory"], "256Mi");
    assert_eq!(container["resources"]["requests"]["cpu"], "100m");
    assert_eq!(container["resources"]["limits"]["memory"], "1Gi");
    let args: Vec<&str> = container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(args[0], "run");
    for arg in ["--plugins=/etc/wasmcm/plugins", "--leader-elect=true", "--leader-elect-resource-namespace=wasmcm"] {
        assert!(args.contains(&arg), "{arg} in {args:?}");
    }
    drop(cluster);

    // kubectl apply -k on a fresh cluster: the same objects (kustomize's image edit changes nothing).
    let (cluster, _) = common::cluster().await;
    let kc = cluster.kubeconfig.clone();
    assert_applied(&kubectl(&kc, &["apply", "-k", dir], None), &["created"]);
    assert_served_as_written(&kc, &written);
    assert_plugins_served(&kc);
    assert_applied(&kubectl(&kc, &["apply", "-k", dir], None), &["unchanged", "configured"]);

    // And deleted as applied: the namespace goes first in kustomize's order and passes through
    // Terminating, so its contents are still there for kubectl to delete one by one.
    let deleted = kubectl(&kc, &["delete", "-k", dir], None);
    assert_eq!(deleted.lines().filter(|l| l.contains("\" deleted")).count(), MANIFEST_OBJECTS.len(), "{deleted}");
}

/// The labels Helm adds to every object: the only difference the README allows.
const HELM_LABELS: [&str; 2] = ["app.kubernetes.io/managed-by", "helm.sh/chart"];

fn without_helm_labels(mut value: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                if let Some(Value::Object(labels)) = map.get_mut("labels") {
                    labels.retain(|k, _| !HELM_LABELS.contains(&k.as_str()));
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}

fn deployment_args(objects: &[Value]) -> Vec<String> {
    let args = &find(objects, "Deployment", "wasmcm")["spec"]["template"]["spec"]["containers"][0]["args"];
    args.as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect()
}

/// The PluginList of a `wasmcm-plugins` ConfigMap.
fn plugin_list(objects: &[Value]) -> Value {
    let text =
        find(objects, "ConfigMap", "wasmcm-plugins")["data"]["plugins.yaml"].as_str().expect("data plugins.yaml");
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("plugins.yaml is not YAML: {e}\n{text}"))
}

/// `name: enabled` of each item of a PluginList, in order.
fn plugins_enabled(list: &Value) -> Vec<(String, bool)> {
    let items = list["items"].as_array().expect("items");
    items
        .iter()
        .map(|i| {
            (i["metadata"]["name"].as_str().unwrap().to_string(), i["spec"]["enabled"].as_bool().expect("enabled"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_helm_chart_lints_and_renders_what_the_manifests_say() {
    let chart = chart_dir();
    let lint = helm(&["lint", chart.to_str().unwrap()]);
    assert!(lint.contains("1 chart(s) linted, 0 chart(s) failed"), "{lint}");

    let rendered_text = helm_template(&[]);
    let rendered = documents(&rendered_text);
    let manifests = manifest_objects();
    assert_known_fields(&rendered);

    // The "must agree" check: the RBAC rules, exactly.
    let roles = [
        "wasmcm",
        "wasmcm-replicaset",
        "wasmcm-deployment",
        "wasmcm-rollback",
        "wasmcm-job",
        "wasmcm-cronjob",
        "wasmcm-ttlafterfinished",
    ]
    .map(|n| ("ClusterRole", n));
    for (kind, name) in [("Role", "wasmcm")].into_iter().chain(roles) {
        let chart_rules = &find(&rendered, kind, name)["rules"];
        let manifest_rules = &find(&manifests, kind, name)["rules"];
        assert!(chart_rules.as_array().is_some_and(|r| !r.is_empty()), "{kind} {name} rules: {chart_rules}");
        assert_eq!(chart_rules, manifest_rules, "the chart's {kind} {name} rules differ from deploy/manifests'");
    }
    // And everything else: the same objects, less the Namespace, plus Helm's labels.
    let expected: Vec<&Value> = manifests.iter().filter(|o| o["kind"] != "Namespace").collect();
    assert_eq!(names(&rendered), names(&expected.iter().map(|o| (*o).clone()).collect::<Vec<_>>()));
    for object in expected {
        let kind = object["kind"].as_str().unwrap();
        let name = object["metadata"]["name"].as_str().unwrap();
        let chart_object = without_helm_labels(find(&rendered, kind, name).clone());
        assert_eq!(&chart_object, object, "the chart's {kind} {name} differs from deploy/manifests'");
    }
    // Helm never templates crds/, so the CRD has no labels of Helm's (and is compared whole above).
    for object in rendered.iter().filter(|o| o["kind"] != "CustomResourceDefinition") {
        let labels = &object["metadata"]["labels"];
        assert!(HELM_LABELS.iter().all(|l| labels.get(l).is_some()), "Helm's labels on {}", object["kind"]);
    }

    // Applied where the namespace exists (`helm install --create-namespace` would make it).
    let (cluster, _) = common::cluster().await;
    let kc = cluster.kubeconfig.clone();
    kubectl(&kc, &["create", "namespace", "wasmcm"], None);
    let applied = kubectl(&kc, &["apply", "-n", "wasmcm", "-f", "-"], Some(&rendered_text));
    assert_eq!(applied.lines().filter(|l| l.ends_with(" created")).count(), rendered.len(), "{applied}");
    assert_served_as_written(&kc, &rendered);
    assert_plugins_served(&kc);

    // Values overrides.
    let overridden_text = helm_template(&["--set", "replicaCount=3,plugins.builtin.rollback=false,logFormat=text"]);
    let overridden = documents(&overridden_text);
    assert_known_fields(&overridden);
    assert_eq!(find(&overridden, "Deployment", "wasmcm")["spec"]["replicas"], 3);
    let args = deployment_args(&overridden);
    assert!(
        args.contains(&"--log-format=text".to_string()) && !args.contains(&"--log-format=json".to_string()),
        "{args:?}"
    );
    assert!(deployment_args(&rendered).contains(&"--log-format=json".to_string()));
    let on = |name: &str, enabled: bool| (name.to_string(), enabled);
    assert_eq!(
        plugins_enabled(&plugin_list(&overridden)),
        [
            on("replicaset", true),
            on("deployment", true),
            on("rollback", false),
            on("job", true),
            on("cronjob", true),
            on("ttlafterfinished", true)
        ]
    );
    assert_eq!(
        plugins_enabled(&plugin_list(&rendered)),
        [
            on("replicaset", true),
            on("deployment", true),
            on("rollback", true),
            on("job", true),
            on("cronjob", true),
            on("ttlafterfinished", true)
        ]
    );
    // A built-in turned off gets no identity, and the host may not impersonate one for it.
    let accounts = |objects: &[Value]| -> Vec<String> {
        let mut found: Vec<String> = objects
            .iter()
            .filter(|o| o["kind"] == "ServiceAccount")
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        found.sort();
        found
    };
    assert_eq!(
        accounts(&overridden),
        ["wasmcm", "wasmcm-cronjob", "wasmcm-deployment", "wasmcm-job", "wasmcm-replicaset", "wasmcm-ttlafterfinished"]
    );
    assert!(!names(&overridden).contains(&"ClusterRole/wasmcm-rollback".to_string()));
    let impersonable = |objects: &[Value]| -> Value {
        let rules = find(objects, "Role", "wasmcm")["rules"].as_array().unwrap().clone();
        let rule = rules.into_iter().find(|r| r["verbs"] == serde_json::json!(["impersonate"]));
        rule.expect("an impersonate rule")["resourceNames"].clone()
    };
    assert_eq!(
        impersonable(&overridden),
        serde_json::json!([
            "wasmcm-replicaset",
            "wasmcm-deployment",
            "wasmcm-job",
            "wasmcm-cronjob",
            "wasmcm-ttlafterfinished"
        ])
    );
    assert_eq!(
        impersonable(&rendered),
        serde_json::json!([
            "wasmcm-replicaset",
            "wasmcm-deployment",
            "wasmcm-rollback",
            "wasmcm-job",
            "wasmcm-cronjob",
            "wasmcm-ttlafterfinished"
        ])
    );
    // Shards: the flag, the Lease flags naming the group, and deploy/sharding's Role exactly.
    let sharded = documents(&helm_template(&["--set", "shards.count=32,replicaCount=3"]));
    assert_known_fields(&sharded);
    let args = deployment_args(&sharded);
    for flag in ["--shards=32", "--leader-elect-resource-name=wasmcm", "--leader-elect-lease-duration=15"] {
        assert!(args.contains(&flag.to_string()), "{flag} in {args:?}");
    }
    let sharding_text = std::fs::read_to_string(common::workspace_root().join("deploy/sharding/role.yaml")).unwrap();
    let sharding = documents(&sharding_text);
    for kind in ["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"] {
        let chart = without_helm_labels(find(&sharded, kind, "wasmcm-shards").clone());
        assert_eq!(&chart, find(&sharding, kind, "wasmcm-shards"), "the chart's {kind} wasmcm-shards differs");
    }
    assert!(!names(&rendered).contains(&"Role/wasmcm-shards".to_string()), "no shard Role unless sharded");
    assert!(!deployment_args(&rendered).iter().any(|a| a.starts_with("--shards")));

    let applied = kubectl(&kc, &["apply", "-n", "wasmcm", "-f", "-"], Some(&overridden_text));
    assert!(applied.contains("deployment.apps/wasmcm configured"), "{applied}");
    assert_served_as_written(&kc, &overridden);

    // The chart refuses values that would give a broken install.
    let refused = run(
        &common::helm_path(),
        &["template", "wasmcm", chart.to_str().unwrap(), "-n", "wasmcm", "--set", "leaderElection.enabled=false"],
        None,
        None,
    );
    assert!(!refused.status.success(), "2 replicas without leader election should be refused");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("needs replicaCount: 1"));
}

/// Resolves and loads, as `wasmcm run --plugins <dir>` does, the plugin manifest of the
/// `wasmcm-plugins` ConfigMap among `objects`; returns the names that loaded.
async fn load_plugin_manifest(objects: &[Value], what: &str) -> (Vec<(String, bool)>, Vec<String>) {
    let text = find(objects, "ConfigMap", "wasmcm-plugins")["data"]["plugins.yaml"].as_str().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plugins.yaml");
    std::fs::write(&file, text).unwrap();
    let paths = [dir.path().to_path_buf()];

    let (specs, errors) = wasmcm::resolve_plugins(&paths, "wasmcm");
    assert!(errors.is_empty(), "{what}: {errors:?}");
    for spec in &specs {
        // From the file, not from the default manifest compiled into the binary.
        assert_eq!(spec.manifest.as_deref(), Some(file.as_path()), "{what}: where {} comes from", spec.name);
        assert_eq!(spec.source, Source::Builtin(spec.name.clone()), "{what}");
    }
    let resolved = specs.iter().map(|s| (s.name.clone(), s.enabled)).collect();

    let (versions, failures) = wasmcm::load_all(common::engine(), &paths, &wasmcm::Trust::of("wasmcm"), None).await;
    assert!(failures.is_empty(), "{what}: {failures:?}");
    (resolved, versions.iter().map(|v| v.plugin.info().name.clone()).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugin_manifest_in_the_configmap_loads() {
    let all = ["replicaset", "deployment", "rollback", "job", "cronjob", "ttlafterfinished"];
    let on = |name: &str, enabled: bool| (name.to_string(), enabled);
    let every_one = [
        on("replicaset", true),
        on("deployment", true),
        on("rollback", true),
        on("job", true),
        on("cronjob", true),
        on("ttlafterfinished", true),
    ];

    let (resolved, loaded) = load_plugin_manifest(&manifest_objects(), "deploy/manifests").await;
    assert_eq!(resolved, every_one);
    assert_eq!(loaded, all);

    let (resolved, loaded) = load_plugin_manifest(&documents(&helm_template(&[])), "the chart").await;
    assert_eq!(resolved, every_one);
    assert_eq!(loaded, all);

    // A built-in turned off in the chart is off in the host, not brought back by the default manifest.
    let rendered = documents(&helm_template(&["--set", "plugins.builtin.rollback=false"]));
    let (resolved, loaded) = load_plugin_manifest(&rendered, "the chart, rollback off").await;
    assert_eq!(
        resolved,
        [
            on("replicaset", true),
            on("deployment", true),
            on("rollback", false),
            on("job", true),
            on("cronjob", true),
            on("ttlafterfinished", true)
        ]
    );
    assert_eq!(loaded, ["replicaset", "deployment", "job", "cronjob", "ttlafterfinished"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_shipped_in_the_chart_loads_from_its_configmap_as_the_service_account() {
    use base64::Engine as _;
    let stamp = std::fs::read(common::guest("wasmcm_stamp.wasm")).unwrap();
    let digest = common::sha256(&stamp);
    let dir = tempfile::tempdir().unwrap();
    // What deploy/helm/wasmcm/values.yaml tells a user to do.
    let b64 = dir.path().join("stamp.wasm.b64");
    std::fs::write(&b64, base64::engine::general_purpose::STANDARD.encode(&stamp)).unwrap();
    let values = dir.path().join("stamp.yaml");
    std::fs::write(
        &values,
        format!(
            "plugins:\n  extra:\n    - metadata: {{name: stamp}}\n      spec:\n        \
             source: {{configMap: {{name: wasmcm-plugin-files, key: stamp.wasm}}}}\n        sha256: \"{digest}\"\n"
        ),
    )
    .unwrap();
    let file_arg = format!("plugins.files.stamp\\.wasm={}", b64.display());
    let text = helm_template(&["--set-file", &file_arg, "-f", values.to_str().unwrap()]);
    let rendered = documents(&text);
    assert_known_fields(&rendered);
    let files = find(&rendered, "ConfigMap", "wasmcm-plugin-files");
    assert_eq!(files["binaryData"]["stamp.wasm"], base64::engine::general_purpose::STANDARD.encode(&stamp));

    let (cluster, _) = common::cluster().await;
    let kc = cluster.kubeconfig.clone();
    kubectl(&kc, &["create", "namespace", "wasmcm"], None);
    kubectl(&kc, &["apply", "-n", "wasmcm", "-f", "-"], Some(&text));

    // The host's loader, as the chart's ServiceAccount (the Role's configmaps rule), on the
    // plugin manifest of the chart's wasmcm-plugins ConfigMap.
    let plugins = tempfile::tempdir().unwrap();
    let manifest = find(&rendered, "ConfigMap", "wasmcm-plugins")["data"]["plugins.yaml"].as_str().unwrap();
    std::fs::write(plugins.path().join("plugins.yaml"), manifest).unwrap();
    let client = common::token_client(&cluster, "wasmcm", "wasmcm").await;
    let (versions, failures) = wasmcm::load_all(
        common::engine(),
        &[plugins.path().to_path_buf()],
        &wasmcm::Trust::of("wasmcm"),
        Some(&client),
    )
    .await;
    assert!(failures.is_empty(), "{failures:?}");
    let names: Vec<&str> = versions.iter().map(|v| v.name()).collect();
    assert_eq!(names, ["replicaset", "deployment", "rollback", "job", "cronjob", "ttlafterfinished", "stamp"]);
    let loaded = versions.iter().find(|v| v.name() == "stamp").unwrap();
    assert_eq!(loaded.plugin.digest(), digest);
    assert_eq!(
        loaded.spec.source,
        Source::ConfigMap { namespace: "wasmcm".into(), name: "wasmcm-plugin-files".into(), key: "stamp.wasm".into() }
    );

    // What is not base64 is refused before anything is installed.
    let refused = run(
        &common::helm_path(),
        &["template", "wasmcm", chart_dir().to_str().unwrap(), "--set", "plugins.files.stamp\\.wasm=<binary>"],
        None,
        None,
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && stderr.contains("plugins.files.stamp.wasm: not base64"), "{stderr}");
}

#[test]
fn the_charts_crd_is_the_manifests_crd_byte_for_byte() {
    // `kubectl apply` installs the first, `helm install` the second: one Plugin kind either way.
    let [manifests, chart] = CRD_FILES
        .map(|f| std::fs::read_to_string(common::workspace_root().join(f)).unwrap_or_else(|e| panic!("{f}: {e}")));
    if manifests != chart {
        let differs = manifests.lines().zip(chart.lines()).position(|(m, c)| m != c);
        let line = differs.unwrap_or(manifests.lines().count().min(chart.lines().count())) + 1;
        panic!(
            "{} differs from {} (first at line {line}): they must be the same bytes; copy the one you changed over \
             the other",
            CRD_FILES[1], CRD_FILES[0]
        );
    }
}

/// A fresh cluster with deploy/manifests' CRD applied, and its kubeconfig.
async fn cluster_with_the_plugin_crd() -> (wasmcm_apiserver::Cluster, PathBuf) {
    let (cluster, _) = common::cluster().await;
    let kc = cluster.kubeconfig.clone();
    kubectl(&kc, &["apply", "-f", CRD_FILES[0]], None);
    assert_plugins_served(&kc);
    (cluster, kc)
}

/// The Plugin `name` with `spec`, as kubectl reads it (JSON is YAML).
fn plugin(name: &str, spec: Value) -> String {
    serde_json::json!({"apiVersion": "wasmcm.dev/v1alpha1", "kind": "Plugin", "metadata": {"name": name}, "spec": spec})
        .to_string()
}

fn stamp() -> String {
    plugin(
        "stamp",
        serde_json::json!({"source": {"builtin": "replicaset"}, "limits": {"workers": 2}, "settings": {"a": {"b": 1}}}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_applied_server_side_is_served_with_its_settings_kept() {
    let (_cluster, kc) = cluster_with_the_plugin_crd().await;
    let applied = kubectl(&kc, &["apply", "--server-side", "-f", "-"], Some(&stamp()));
    assert_eq!(applied.trim(), "plugin.wasmcm.dev/stamp serverside-applied");

    let served: Value = serde_json::from_str(&kubectl(&kc, &["get", "plugin", "stamp", "-o", "json"], None)).unwrap();
    let spec = &served["spec"];
    assert_eq!(spec["source"], serde_json::json!({"builtin": "replicaset"}), "{served}");
    assert_eq!(spec["limits"], serde_json::json!({"workers": 2}), "{served}");
    // x-kubernetes-preserve-unknown-fields: settings are the plugin's, undeclared and not pruned.
    assert_eq!(spec["settings"], serde_json::json!({"a": {"b": 1}}), "{served}");
    assert_eq!(spec["enabled"], true, "the schema's default: {served}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_refuses_a_plugin_its_crd_does_not_allow_naming_the_field() {
    let (_cluster, kc) = cluster_with_the_plugin_crd().await;
    let refused = [
        (
            "two-sources",
            serde_json::json!({"source": {"builtin": "replicaset", "file": "/var/lib/wasmcm/stamp.wasm"}}),
            "spec.source: Too many: 2: must have at most 1 item",
        ),
        (
            "no-source",
            serde_json::json!({"source": {}}),
            "spec.source: Invalid value: 0: spec.source in body should have at least 1 properties",
        ),
        (
            "short-digest",
            serde_json::json!({"source": {"builtin": "replicaset"}, "sha256": "abc123"}),
            "spec.sha256: Invalid value: \"abc123\": spec.sha256 in body should match '^[0-9a-f]{64}$'",
        ),
        (
            "too-many-workers",
            serde_json::json!({"source": {"builtin": "replicaset"}, "limits": {"workers": 65}}),
            "spec.limits.workers: Invalid value: 65: spec.limits.workers in body should be less than or equal to 64",
        ),
    ];
    for (name, spec, cause) in refused {
        // -v=6 logs each response's status: the 422 itself, not only kubectl's rendering of it.
        let out = run(
            &common::kubectl_path(),
            &["apply", "--server-side", "-f", "-", "-v=6"],
            Some(&kc),
            Some(&plugin(name, spec)),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name} should be refused:\n{stderr}");
        assert!(stderr.contains("status=\"422 Unprocessable Entity\""), "{name}: a 422:\n{stderr}");
        let said = stderr.lines().find(|l| l.starts_with("The Plugin "));
        assert_eq!(said, Some(format!("The Plugin {name:?} is invalid: {cause}").as_str()), "{name}:\n{stderr}");
    }
    assert_plugins_served(&kc);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_plugins_prints_the_crds_columns_with_the_status_written() {
    let (_cluster, kc) = cluster_with_the_plugin_crd().await;
    kubectl(&kc, &["apply", "--server-side", "-f", "-"], Some(&stamp()));
    let table = |wide: bool| -> Vec<Vec<String>> {
        let args: &[&str] = if wide { &["get", "plugins", "-o", "wide"] } else { &["get", "plugins"] };
        let text = kubectl(&kc, args, None);
        text.lines().map(|l| l.split_whitespace().map(String::from).collect()).collect()
    };
    let wide_header = ["NAME", "VERSION", "STATE", "DIGEST", "READY", "AGE", "CANDIDATE", "SOURCE"];

    // No status yet: the columns are there, their cells empty (kubectl prints nothing for them).
    let before = table(true);
    assert_eq!(before[0], wide_header);
    assert_eq!(before.len(), 2, "{before:?}");
    assert_eq!(before[1].len(), 2, "only NAME and AGE have a value: {before:?}");
    assert_eq!(before[1][0], "stamp");
    // Without -o wide, the priority-1 columns (CANDIDATE, SOURCE) are left out.
    assert_eq!(table(false)[0], wide_header[..6]);

    // The status as a host replica would write it, through the status subresource.
    let digest = common::sha256(b"stamp");
    let status = serde_json::json!({"status": {"version": "1.0.0", "state": "Ready", "digest": digest, "ready": "2/2",
        "source": "builtin:replicaset", "candidate": {"version": "1.1.0", "digest": digest}}});
    let patch = status.to_string();
    let patched =
        kubectl(&kc, &["patch", "plugin", "stamp", "--subresource=status", "--type=merge", "-p", patch.as_str()], None);
    assert_eq!(patched.trim(), "plugin.wasmcm.dev/stamp patched");

    let after = table(true);
    assert_eq!(after[0], wide_header);
    let row = &after[1];
    assert_eq!(row.len(), wide_header.len(), "every column has a value: {after:?}");
    let cells: Vec<&str> = row.iter().enumerate().filter(|(i, _)| *i != 5).map(|(_, c)| c.as_str()).collect();
    assert_eq!(cells, ["stamp", "1.0.0", "Ready", digest.as_str(), "2/2", "1.1.0", "builtin:replicaset"], "{after:?}");
    assert_eq!(table(false)[1][..5], row[..5], "the same cells without -o wide");
}

/// `helm list -n wasmcm`: each release's name, revision and status.
fn releases(kubeconfig: &Path) -> Vec<(String, String, String)> {
    let list: Value = serde_json::from_str(&helm_on(kubeconfig, &["list", "-n", "wasmcm", "-o", "json"])).unwrap();
    let field = |r: &Value, k: &str| r[k].as_str().map(String::from).unwrap_or_else(|| r[k].to_string());
    list.as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .map(|r| (field(r, "name"), field(r, "revision"), field(r, "status")))
        .collect()
}

/// The objects among `objects` still on the server (one `kubectl get -f - --ignore-not-found`).
fn still_served(kubeconfig: &Path, objects: &[Value]) -> Vec<String> {
    let stream = objects.iter().map(|o| serde_json::to_string(o).unwrap()).collect::<Vec<_>>().join("\n---\n");
    let served = kubectl(kubeconfig, &["get", "-f", "-", "--ignore-not-found", "-o", "json"], Some(&stream));
    if served.trim().is_empty() {
        return vec![];
    }
    let served: Value = serde_json::from_str(&served).unwrap();
    served["items"].as_array().map(|items| names(items)).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_installs_upgrades_and_uninstalls_the_chart_on_the_cluster() {
    let (cluster, _) = common::cluster().await;
    let kc = cluster.kubeconfig.clone();
    let chart = chart_dir();
    let chart = chart.to_str().unwrap();

    // helm install: the namespace made, crds/ installed first, then the templates, server-side
    // (helm 4's default), recorded as revision 1.
    let installed = helm_on(&kc, &["install", "wasmcm", chart, "-n", "wasmcm", "--create-namespace", "--wait=false"]);
    assert!(installed.contains("STATUS: deployed") && installed.contains("REVISION: 1"), "{installed}");
    let crd = kubectl(&kc, &["get", "crd", "plugins.wasmcm.dev", "-o", "name"], None);
    assert_eq!(crd.trim(), "customresourcedefinition.apiextensions.k8s.io/plugins.wasmcm.dev");
    assert_plugins_served(&kc);
    let listed = kubectl(&kc, &["get", "plugins"], None);
    assert!(listed.trim().is_empty(), "no Plugin yet: {listed}");

    // Every object as `helm template` renders it (the CRD as crds/ has it), and the templates'
    // objects marked as the release's (what `helm upgrade` and `helm uninstall` go by).
    let rendered = documents(&helm_template(&[]));
    assert_served_as_written(&kc, &rendered);
    let templated: Vec<Value> = rendered.iter().filter(|o| o["kind"] != "CustomResourceDefinition").cloned().collect();
    let stream = templated.iter().map(|o| serde_json::to_string(o).unwrap()).collect::<Vec<_>>().join("\n---\n");
    let served: Value =
        serde_json::from_str(&kubectl(&kc, &["get", "-f", "-", "-o", "json", "--show-managed-fields"], Some(&stream)))
            .unwrap();
    for object in served["items"].as_array().unwrap() {
        let what = format!("{}/{}", object["kind"], object["metadata"]["name"]);
        let metadata = &object["metadata"];
        assert_eq!(metadata["annotations"]["meta.helm.sh/release-name"], "wasmcm", "{what}");
        assert_eq!(metadata["annotations"]["meta.helm.sh/release-namespace"], "wasmcm", "{what}");
        assert_eq!(metadata["labels"]["app.kubernetes.io/managed-by"], "Helm", "{what}");
        // Applied server-side, helm 4's default, as the field manager helm.
        let fields = metadata["managedFields"].as_array().map(Vec::as_slice).unwrap_or_default();
        assert!(fields.iter().any(|f| f["manager"] == "helm" && f["operation"] == "Apply"), "{what}: {fields:?}");
    }
    // The host's Deployment and RBAC rules read back one by one: the rules exactly as rendered.
    let get = |args: &[&str]| -> Value { serde_json::from_str(&kubectl(&kc, args, None)).unwrap() };
    let deployment = get(&["-n", "wasmcm", "get", "deployment", "wasmcm", "-o", "json"]);
    assert_eq!(deployment["spec"]["replicas"], 2);
    let template = &find(&rendered, "Deployment", "wasmcm")["spec"]["template"];
    // What the server defaults (probes' schemes, the pod's DNS policy, ...) is allowed.
    if let Err(e) = contains(&deployment["spec"]["template"], template, "Deployment/wasmcm.spec.template") {
        panic!("the Deployment's pod template is not as rendered: {e}");
    }
    let role = get(&["-n", "wasmcm", "get", "role", "wasmcm", "-o", "json"]);
    assert_eq!(role["rules"], find(&rendered, "Role", "wasmcm")["rules"], "Role wasmcm");
    let cluster_role = get(&["get", "clusterrole", "wasmcm", "-o", "json"]);
    assert_eq!(cluster_role["rules"], find(&rendered, "ClusterRole", "wasmcm")["rules"], "ClusterRole wasmcm");

    assert_eq!(releases(&kc), [("wasmcm".into(), "1".into(), "deployed".into())]);

    // helm upgrade with values changed: the Deployment scaled; with the rollback plugin off its
    // ServiceAccount, ClusterRole and binding deleted (no longer in the chart) and its name out
    // of the Role's impersonate rule (a list item Helm's apply no longer names is dropped);
    // everything else as rendered.
    let upgrade =
        ["upgrade", "wasmcm", chart, "-n", "wasmcm", "--set", "replicaCount=3,plugins.builtin.rollback=false"];
    let upgraded = helm_on(&kc, &[&upgrade[..], &["--wait=false"]].concat());
    assert!(upgraded.contains("STATUS: deployed") && upgraded.contains("REVISION: 2"), "{upgraded}");
    let deployment = get(&["-n", "wasmcm", "get", "deployment", "wasmcm", "-o", "json"]);
    assert_eq!(deployment["spec"]["replicas"], 3, "{deployment}");
    let upgraded = documents(&helm_template(&["--set", "replicaCount=3,plugins.builtin.rollback=false"]));
    assert_served_as_written(&kc, &upgraded);
    let removed: Vec<Value> =
        templated.iter().filter(|o| o["metadata"]["name"] == "wasmcm-rollback").cloned().collect();
    assert_eq!(removed.len(), 3, "the rollback plugin's identity: {}", names(&removed).join(", "));
    assert_eq!(still_served(&kc, &removed), Vec::<String>::new(), "the rollback plugin's identity after the upgrade");
    assert_eq!(releases(&kc), [("wasmcm".into(), "2".into(), "deployed".into())]);

    // helm rollback to revision 1: as installed again, recorded as revision 3.
    let rolled_back = helm_on(&kc, &["rollback", "wasmcm", "1", "-n", "wasmcm"]);
    assert!(rolled_back.contains("Rollback was a success"), "{rolled_back}");
    assert_served_as_written(&kc, &rendered);
    assert_eq!(releases(&kc), [("wasmcm".into(), "3".into(), "deployed".into())]);

    // helm uninstall: the release's objects and its records gone; the CRD stays (Helm never
    // deletes what crds/ installed), and so does the namespace --create-namespace made.
    let uninstalled = helm_on(&kc, &["uninstall", "wasmcm", "-n", "wasmcm"]);
    assert!(uninstalled.contains("release \"wasmcm\" uninstalled"), "{uninstalled}");
    assert_eq!(still_served(&kc, &templated), Vec::<String>::new(), "the release's objects after uninstall");
    assert_eq!(releases(&kc), []);
    let records = kubectl(&kc, &["-n", "wasmcm", "get", "secrets", "-l", "owner=helm", "-o", "name"], None);
    assert!(records.trim().is_empty(), "no release records left: {records}");
    assert_plugins_served(&kc);
    kubectl(&kc, &["get", "namespace", "wasmcm"], None);
}
