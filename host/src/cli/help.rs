//! What each command's `--help` shows after its flags: examples, and the exit codes a script
//! can act on. Owns these texts only; the flags' own help is their doc comments. Every line
//! here that starts with `wasmcm ` is parsed by the binary in a test (`cli::every_example_in_the_help_parses`),
//! so an example cannot name a flag or value the command does not take.

pub(crate) const TOP: &str = "\
Examples:
  wasmcm                                    # the built-in plugins on a new embedded cluster (wasmcm run)
  wasmcm run --kubeconfig ~/.kube/config    # on a cluster of yours
  wasmcm new my-plugin                      # a plugin of your own to start from
  wasmcm simulate --help                    # a command's flags, examples and exit codes

Exit codes: 0 done; 2 an error, said on stderr (a bad flag, file or manifest; a cluster or host
that cannot be reached). `run` and `simulate` have more: see their help.";

pub(crate) const RUN: &str = "\
Examples:
  wasmcm run                                                  # on a new embedded cluster: prints its kubeconfig
  wasmcm run --kubeconfig ~/.kube/config --plugins ./plugins  # your cluster, the plugins of a folder
  wasmcm run --kubeconfig ~/.kube/config --shards 4           # one of replicas that split the keys

Exit codes:
  0  stopped by SIGTERM or Ctrl-C, its lease released
  1  it lost its lease: it stops writing and exits at once, as kube-controller-manager does
  2  it could not start, said on stderr: a bad flag or manifest, --strict with a plugin that
     failed to load, no plugin to run (with --plugin-objects=false)";

pub(crate) const SIMULATE: &str = "\
Examples:
  wasmcm simulate --plugin deployment --state snapshot.yaml --key default/web
  wasmcm simulate --plugin my_plugin.wasm --state snapshot.yaml --key default/example --now 2026-01-01T00:00:00Z
  wasmcm simulate --plugin my_plugin.wasm --state example.json --expect example.json   # replay a recording

Exit codes:
  0  the reconcile ran (with --expect: and its outcome equals the recording's)
  1  with --expect: the outcome differs from the recording's (the difference on stderr)
  2  bad input, said on stderr: a flag, the state or the plugin file
  3  the plugin failed: its error, a trap or its deadline, with its name and version";

#[cfg(feature = "embedded-cluster")]
pub(crate) const CLUSTER: &str = "\
Examples:
  wasmcm cluster                            # prints the kubeconfig: kubectl works at once
  wasmcm cluster --port 6443 --nodes 5";

pub(crate) const PLUGINS: &str = "\
Examples:
  wasmcm plugins inspect my_plugin.wasm     # offline: what it declares and imports, its digest
  wasmcm plugins list                       # the plugins of the host at 127.0.0.1:8080
  wasmcm plugins record my-plugin default/example -o example.json";

pub(crate) const PLUGINS_LIST: &str = "\
Examples:
  wasmcm plugins list
  wasmcm plugins list --address 127.0.0.1:9090 --admin-token-file ./admin-token
  wasmcm plugins list --kubeconfig ~/.kube/config     # the Plugin objects, a line per replica";

pub(crate) const PLUGINS_INSPECT: &str = "\
Examples:
  wasmcm plugins inspect                    # every built-in plugin
  wasmcm plugins inspect target/wasm32-unknown-unknown/release/my_plugin.wasm";

pub(crate) const PLUGINS_PUSH: &str = "\
Examples:
  wasmcm plugins push my_plugin.wasm registry.example/team/my-plugin:1.0.0
  wasmcm plugins push my_plugin.wasm kind-registry:5000/my-plugin:dev --insecure-registries kind-registry:5000";

pub(crate) const PLUGINS_PROMOTE: &str = "\
Examples:
  wasmcm plugins promote deployment         # its shadow candidate becomes the live version";

pub(crate) const PLUGINS_ABANDON: &str = "\
Examples:
  wasmcm plugins abandon deployment         # the live version stays, the candidate goes";

pub(crate) const PLUGINS_RBAC: &str = "\
Examples:
  wasmcm plugins rbac my_plugin.wasm --plugins plugin.yaml | kubectl apply -f -";

pub(crate) const PLUGINS_RECORD: &str = "\
Examples:
  wasmcm plugins record my-plugin default/example -o example.json
  wasmcm simulate --plugin my_plugin.wasm --state example.json --expect example.json   # then replay it";

pub(crate) const SHARDS: &str = "\
Examples:
  wasmcm shards --kubeconfig ~/.kube/config --namespace wasmcm";

pub(crate) const NEW: &str = "\
Examples:
  wasmcm new my-plugin                      # a custom kind, example.com/v1alpha1/MyPlugin, and its CRD
  wasmcm new pod-labeler --kind v1/Pod      # a plugin of a built-in kind
  wasmcm new my-plugin --lang python        # in Python (or typescript)";

pub(crate) const VERSION: &str = "\
Examples:
  wasmcm version
  wasmcm version -o json";

pub(crate) const COMPLETION: &str = "\
Examples:
  source <(wasmcm completion bash)
  wasmcm completion zsh > ~/.zfunc/_wasmcm";
