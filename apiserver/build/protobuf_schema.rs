//! Generates the wire schema the API server's protobuf decoder (`src/protobuf.rs`) walks.
//!
//! The field numbers and wire types come from the prost code of the `k8s-pb` crate, the JSON
//! field names (and which fields are required) from the serde code of `k8s-openapi`: both are
//! registry packages already in the dependency graph, so the schema follows the Kubernetes
//! versions those crates pin instead of a hand-maintained copy. Neither crate is linked into the
//! host: only their sources are read, once per build of the host crate.
//!
//! The output is a function of those sources alone: every map is ordered, every directory
//! listing sorted, and no name is taken from a type unrelated to the field's own message.
//! A field's JSON name comes, in this order, from
//! 1. its own type in k8s-openapi, matched by module and type name once case is ignored
//!    (prost spells `HTTPGetAction` `HttpGetAction`), newest Kubernetes version first;
//! 2. the type that embeds its message inline (`VolumeSource` in `Volume`): Go puts an
//!    embedded struct's fields in the parent's JSON object, so the parent's names are its names;
//! 3. the same type in another version of the same API group (`rbac/v1beta1.PolicyRule` from
//!    `rbac/v1`), for versions k8s-openapi no longer carries;
//! 4. prost's field name in lowerCamelCase, for the few types k8s-openapi never modelled
//!    (admission reviews, lists, `runtime.Unknown`).
//!
//! Tiers 2 to 4 are reported ([`Schema::fallbacks`]) so a test can check each against
//! kube-apiserver's names.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The k8s-pb source trees that hold API objects; `metrics` has no objects a client creates.
const PB_ROOTS: &[&str] = &["api", "apimachinery", "apiextensions_apiserver", "kube_aggregator"];

/// Messages whose Kubernetes JSON form is not an object of their fields (custom marshallers in Go).
const SPECIAL: &[(&str, &str)] = &[
    ("apimachinery.pkg.apis.meta.v1.Time", "Time"),
    ("apimachinery.pkg.apis.meta.v1.MicroTime", "MicroTime"),
    ("apimachinery.pkg.apis.meta.v1.Duration", "Duration"),
    ("apimachinery.pkg.apis.meta.v1.FieldsV1", "RawJson"),
    ("apimachinery.pkg.runtime.RawExtension", "RawJson"),
    ("apiextensions_apiserver.pkg.apis.apiextensions.v1.Json", "RawJson"),
    ("apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.Json", "RawJson"),
    ("apimachinery.pkg.util.intstr.IntOrString", "IntOrString"),
    ("apimachinery.pkg.api.resource.Quantity", "Quantity"),
    ("apimachinery.pkg.api.resource.QuantityValue", "Quantity"),
    ("apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrBool", "SchemaOrBool"),
    ("apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrArray", "SchemaOrArray"),
    ("apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrStringArray", "SchemaOrStringArray"),
    ("apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JsonSchemaPropsOrBool", "SchemaOrBool"),
    ("apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JsonSchemaPropsOrArray", "SchemaOrArray"),
    ("apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JsonSchemaPropsOrStringArray", "SchemaOrStringArray"),
];

/// Fields of messages k8s-openapi never modelled whose JSON name prost's snake_case loses, as
/// upstream's Go json tags have them: an initialism (`insecureSkipTLSVerifyBackend`), a Go
/// struct embedded inline (`""`: its fields go into the parent), or a field named after its
/// type that is not embedded. The schema test fails on any such field missing here.
const GO_NAMES: &[(&str, &str, &str)] = &[
    ("api.admission.v1.AdmissionRequest", "user_info", "userInfo"),
    ("api.admission.v1.AdmissionResponse", "status", "status"),
    ("api.admission.v1beta1.AdmissionRequest", "user_info", "userInfo"),
    ("api.admission.v1beta1.AdmissionResponse", "status", "status"),
    ("api.extensions.v1beta1.NetworkPolicyPeer", "ip_block", "ipBlock"),
    ("api.node.v1alpha1.RuntimeClassSpec", "overhead", "overhead"),
    ("api.node.v1alpha1.RuntimeClassSpec", "scheduling", "scheduling"),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.CustomResourceConversion",
        "webhook_client_config",
        "webhookClientConfig",
    ),
    ("api.core.v1.PodLogOptions", "insecure_skip_tls_verify_backend", "insecureSkipTLSVerifyBackend"),
    ("apiextensions_apiserver.pkg.apis.apiextensions.v1.ConversionRequest", "desired_api_version", "desiredAPIVersion"),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.ConversionRequest",
        "desired_api_version",
        "desiredAPIVersion",
    ),
    ("api.extensions.v1beta1.IngressRule", "ingress_rule_value", ""),
    ("api.networking.v1beta1.IngressRule", "ingress_rule_value", ""),
    ("apimachinery.pkg.runtime.Unknown", "type_meta", ""),
    ("api.core.v1.PreferAvoidPodsEntry", "pod_signature", "podSignature"),
];

/// Go pointer fields whose explicit zero means something else than "unset" (the default is not
/// zero, or zero is a meaningful id). Go's protobuf encoder also writes every non-pointer scalar,
/// zero or not, and the protobuf schema does not say which is which, so zeros are dropped unless
/// the field is listed here, is required, or documents itself as a pointer for exactly this reason.
const KEEP_ZERO: &[(&str, &[&str])] = &[
    (
        "api.core.v1.PodSpec",
        &[
            "terminationGracePeriodSeconds",
            "activeDeadlineSeconds",
            "automountServiceAccountToken",
            "enableServiceLinks",
        ],
    ),
    ("api.core.v1.ServiceAccount", &["automountServiceAccountToken"]),
    (
        "api.core.v1.SecurityContext",
        &[
            "runAsUser",
            "runAsGroup",
            "runAsNonRoot",
            "privileged",
            "readOnlyRootFilesystem",
            "allowPrivilegeEscalation",
        ],
    ),
    ("api.core.v1.PodSecurityContext", &["runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup"]),
    ("api.core.v1.SecretVolumeSource", &["defaultMode"]),
    ("api.core.v1.ConfigMapVolumeSource", &["defaultMode"]),
    ("api.core.v1.ProjectedVolumeSource", &["defaultMode"]),
    ("api.core.v1.KeyToPath", &["mode"]),
    ("api.core.v1.ServiceSpec", &["allocateLoadBalancerNodePorts"]),
    ("api.apps.v1.DeploymentSpec", &["revisionHistoryLimit", "progressDeadlineSeconds"]),
    ("api.apps.v1.StatefulSetSpec", &["revisionHistoryLimit"]),
    ("api.apps.v1.DaemonSetSpec", &["revisionHistoryLimit"]),
    (
        "api.batch.v1.JobSpec",
        &["parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"],
    ),
    ("api.batch.v1.CronJobSpec", &["startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"]),
];

/// The k8s-openapi module of the Kubernetes version this server answers as (`/version` says
/// 1.35): its OpenAPI definitions are what `/openapi/v2` and `/openapi/v3` serve.
const OPENAPI_VERSION: &str = "v1_35";

/// Finds the two crates through `cargo metadata`, parses them and writes the table to `out`
/// and the OpenAPI definitions to `definitions`.
pub fn generate(cargo: &str, workspace_root: &Path, out: &Path, definitions: &Path) {
    let (pb_dir, openapi_dir) = locate_sources(cargo, workspace_root);
    let schema = schema(&pb_dir, &openapi_dir);
    std::fs::write(out, schema.code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    std::fs::write(definitions, schema.openapi_definitions)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", definitions.display()));
}

/// The generated table, and where each name that is not its own type's came from.
pub struct Schema {
    pub code: String,
    pub fallbacks: Vec<Fallback>,
    /// The OpenAPI definitions of the built-in types, a JSON object by definition name.
    pub openapi_definitions: String,
}

/// A field named by tier 2, 3 or 4 (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fallback {
    /// The protobuf message, e.g. `api.core.v1.VolumeSource`.
    pub message: String,
    /// prost's field name, e.g. `scale_io`.
    pub field: String,
    /// The field's message type, for message fields.
    pub field_type: Option<String>,
    pub json: String,
    pub source: Source,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The k8s-openapi type (`module.Type`) that embeds this message inline.
    InlineParent(String),
    /// The k8s-openapi type of the same name in another version of the group.
    OtherVersion(String),
    /// Listed in `GO_NAMES`, from upstream's Go json tag.
    GoTag,
    /// prost's name in lowerCamelCase: no related type in k8s-openapi has the field.
    LowerCamel,
}

/// Parses the k8s-pb and k8s-openapi crate directories and renders the schema.
pub fn schema(pb_dir: &Path, openapi_dir: &Path) -> Schema {
    let openapi = parse_openapi(&openapi_dir.join("src"));
    let pb = parse_pb(&pb_dir.join("src"));
    let definitions = parse_openapi_schemas(&openapi_dir.join("src").join(OPENAPI_VERSION));
    render(&pb, &openapi, &definitions)
}

/// The k8s-pb and k8s-openapi crate directories of the workspace's dependency graph.
pub fn locate_sources(cargo: &str, workspace_root: &Path) -> (PathBuf, PathBuf) {
    // Offline: the outer build has resolved and downloaded everything it needs already, and a
    // build script must not reach for the network. Only for this platform: the packages of
    // others (e.g. macOS's kqueue under `notify`) were never downloaded.
    let host = std::env::var("HOST").unwrap_or_else(|_| "x86_64-unknown-linux-gnu".into());
    let output = Command::new(cargo)
        .current_dir(workspace_root)
        .args(["metadata", "--format-version", "1", "--offline", "--filter-platform", &host])
        .output()
        .unwrap_or_else(|e| panic!("cannot run `cargo metadata`: {e}"));
    if !output.status.success() {
        panic!("`cargo metadata` failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let meta: serde_json::Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("`cargo metadata` printed bad JSON: {e}"));
    let find = |name: &str, version_prefix: &str| -> PathBuf {
        let packages = meta["packages"].as_array().map(Vec::as_slice).unwrap_or_default();
        packages
            .iter()
            .filter(|p| p["name"] == name && p["version"].as_str().is_some_and(|v| v.starts_with(version_prefix)))
            .filter_map(|p| Some(PathBuf::from(p["manifest_path"].as_str()?).parent()?.to_path_buf()))
            .find(|dir| dir.join("src").is_dir())
            .unwrap_or_else(|| {
                panic!(
                    "the sources of {name} {version_prefix}.* are not in the dependency graph or not downloaded; \
                     apiserver/Cargo.toml must depend on it (k8s-pb as a build-dependency, k8s-openapi via wasmcm-core)"
                )
            })
    };
    (find("k8s-pb", "0.9."), find("k8s-openapi", "0.29."))
}

/// k8s-openapi keeps one module per Kubernetes minor version: newest first (the newest is what
/// its `latest` feature selects; older ones still carry types later releases removed).
fn version_dirs(src: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(src).unwrap_or_else(|e| panic!("cannot list {}: {e}", src.display()));
    let mut versions: Vec<(u32, String)> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|name| Some((name.strip_prefix("v1_")?.parse::<u32>().ok()?, name)))
        .collect();
    versions.sort_unstable_by(|a, b| b.cmp(a));
    if versions.is_empty() {
        panic!("no v1_* version module in {}", src.display());
    }
    versions.into_iter().map(|(_, name)| src.join(name)).collect()
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Module path of a file relative to a source root, dotted: `api/apps/v1/x.rs` → `api.apps.v1`.
fn module_of(root: &Path, file: &Path) -> String {
    let rel = file.parent().and_then(|p| p.strip_prefix(root).ok()).unwrap_or(Path::new(""));
    rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join(".")
}

/// Names compare equal across crates once case and separators are gone: prost spells podIPs
/// `pod_i_ps`, k8s-openapi `pod_ips`, and `$ref` is `r#ref` in one and `ref_path` in the other.
fn norm(name: &str) -> String {
    name.trim_start_matches("r#").chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

struct OpenapiField {
    json: String,
    /// `norm` of the Rust and the JSON name, what a prost field name is compared with.
    keys: [String; 2],
    required: bool,
    pointer_doc: bool,
}

struct OpenapiType {
    /// `module.Struct` as k8s-openapi spells it, e.g. `api.core.v1.HTTPGetAction`.
    name: String,
    fields: Vec<OpenapiField>,
}

/// (module, normalised type name) → the type in each Kubernetes version that has it, newest
/// first.
type Openapi = BTreeMap<(String, String), Vec<OpenapiType>>;

/// Every type of every version module of k8s-openapi, from its serde code.
fn parse_openapi(src: &Path) -> Openapi {
    let mut types = Openapi::new();
    for dir in version_dirs(src) {
        let mut seen = BTreeMap::new();
        for ((module, name), fields) in parse_openapi_version(&dir) {
            let key = (module.clone(), norm(&name));
            if let Some(other) = seen.insert(key.clone(), name.clone()) {
                panic!("k8s-openapi {} has two types named {other} and {name} once case is ignored", dir.display());
            }
            types.entry(key).or_default().push(OpenapiType { name: format!("{module}.{name}"), fields });
        }
    }
    types
}

/// (module, type) → fields, for one version module.
fn parse_openapi_version(version_dir: &Path) -> BTreeMap<(String, String), Vec<OpenapiField>> {
    let mut files = Vec::new();
    rust_files(version_dir, &mut files);
    let mut types: BTreeMap<(String, String), Vec<OpenapiField>> = BTreeMap::new();
    for file in files {
        let module = module_of(version_dir, &file);
        let text = read(&file);
        // Struct fields first (for requiredness), then the Deserialize visitor's name table.
        let mut decls: BTreeMap<String, (bool, bool)> = BTreeMap::new();
        let mut current: Option<String> = None;
        let mut doc = String::new();
        for line in text.lines() {
            let trimmed = line.trim();
            if let Some(rest) = line.strip_prefix("pub struct ") {
                current = rest.split([' ', '{', '(', '<']).next().map(str::to_owned);
            } else if line == "}" {
                current = None;
            } else if let Some(d) = trimmed.strip_prefix("///") {
                doc.push_str(d);
                continue;
            } else if current.is_some()
                && let Some(decl) = line.strip_prefix("    pub ")
                && let Some((name, ty)) = decl.split_once(": ")
            {
                let pointer_doc = doc.contains("pointer to distinguish");
                decls.insert(name.to_owned(), (!ty.starts_with("Option<"), pointer_doc));
            }
            doc.clear();
        }
        let mut owner: Option<String> = None;
        for line in text.lines() {
            let trimmed = line.trim();
            // `impl<'de> …` or, for generic types (`WatchEvent<T>`), `impl<'de, T> …`.
            let deserialize =
                trimmed.strip_prefix("impl<'de").and_then(|r| r.split_once("crate::serde::Deserialize<'de> for "));
            if let Some((_, rest)) = deserialize {
                // The visitor's own `Field` enum has a nested impl; the names belong to the outer type.
                let name = rest.split([' ', '{', '<']).next().unwrap_or_default();
                if name != "Field" {
                    owner = Some(name.to_owned());
                }
                continue;
            }
            let (Some(owner), Some(rest)) = (&owner, trimmed.strip_prefix('"')) else { continue };
            let Some((json, rest)) = rest.split_once("\" => Field::Key_") else { continue };
            let snake = rest.trim_end_matches(',').to_owned();
            let (required, pointer_doc) = decls.get(&snake).copied().unwrap_or((false, false));
            let fields = types.entry((module.clone(), owner.clone())).or_default();
            let keys = [norm(&snake), norm(json)];
            fields.push(OpenapiField { json: json.to_owned(), keys, required, pointer_doc });
        }
    }
    types
}

#[derive(Clone, Copy)]
enum Scalar {
    I32,
    I64,
    Bool,
    F64,
    Str,
    Bytes,
    Msg,
}

struct PbField {
    /// The `+tag=value` markers of its doc comment (listType, listMapKey, mapType, patch...).
    markers: Vec<(String, String)>,
    /// Its doc comment, line by line (upstream's Go comment).
    doc: Vec<String>,
    tag: u32,
    name: String,
    /// `norm(name)`.
    key: String,
    scalar: Scalar,
    repeated: bool,
    /// `Some(value kind)` for maps; their keys are always strings in Kubernetes.
    map_value: Option<Scalar>,
    /// Full name of the message type, for message fields and message-valued maps.
    message: Option<String>,
}

struct PbMessage {
    fields: Vec<PbField>,
    doc: Vec<String>,
    /// `+structType=atomic`.
    atomic: bool,
}

struct PbSchema {
    messages: BTreeMap<String, PbMessage>,
    /// (apiVersion, kind) → full message name, from the crate's `Resource` impls.
    resources: BTreeMap<(String, String), String>,
}

fn parse_pb(src: &Path) -> PbSchema {
    let mut schema = PbSchema { messages: BTreeMap::new(), resources: BTreeMap::new() };
    for root in PB_ROOTS {
        let mut files = Vec::new();
        rust_files(&src.join(root), &mut files);
        for file in files.iter().filter(|f| f.file_name().is_some_and(|n| n == "mod.rs")) {
            let module = module_of(src, file);
            // apimachinery's own test API group: no server serves it.
            if module.contains(".testapigroup.") {
                continue;
            }
            parse_pb_file(&module, &read(file), &mut schema);
        }
    }
    if schema.messages.len() < 100 || !schema.messages.contains_key("api.apps.v1.Deployment") {
        panic!("parsed only {} messages from {}: has the k8s-pb layout changed?", schema.messages.len(), src.display());
    }
    // A table entry naming nothing would silently stop applying (prost spells `JSON` `Json`).
    let field = |message: &str, field: &str| {
        schema.messages.get(message).is_some_and(|m| m.fields.iter().any(|f| f.name == field))
    };
    for (message, _) in SPECIAL {
        assert!(schema.messages.contains_key(*message), "SPECIAL names {message}, which k8s-pb does not have");
    }
    for (message, fields) in KEEP_ZERO {
        assert!(schema.messages.contains_key(*message), "KEEP_ZERO names {message}, which k8s-pb does not have");
        let _ = fields;
    }
    for (message, name, _) in GO_NAMES {
        assert!(field(message, name), "GO_NAMES names {message}.{name}, which k8s-pb does not have");
    }
    schema
}

/// The `+name=value` markers of doc comment lines (upstream's Go comment tags, which k8s-pb keeps).
fn markers(docs: &[String]) -> Vec<(String, String)> {
    docs.iter()
        .filter_map(|d| d.strip_prefix('+')?.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

fn parse_pb_file(module: &str, text: &str, schema: &mut PbSchema) {
    let mut lines = text.lines();
    let mut message: Option<(String, PbMessage)> = None;
    let mut resource: Option<(String, Option<String>, Option<String>)> = None;
    // The doc comment being read, for the struct or field it documents.
    let mut docs: Vec<String> = Vec::new();
    while let Some(line) = lines.next() {
        if let Some(doc) = line.trim().strip_prefix("///") {
            docs.push(doc.trim().to_owned());
            continue;
        }
        if let Some(rest) = line.strip_prefix("pub struct ") {
            let name = rest.split([' ', '{']).next().unwrap_or_default();
            let doc = std::mem::take(&mut docs);
            let atomic = markers(&doc).iter().any(|(k, v)| k == "structType" && v == "atomic");
            let empty = PbMessage { fields: Vec::new(), atomic, doc };
            if line.ends_with("{}") {
                schema.messages.insert(format!("{module}.{name}"), empty);
            } else {
                message = Some((format!("{module}.{name}"), empty));
            }
        } else if line == "}" {
            if let Some((name, msg)) = message.take() {
                schema.messages.insert(name, msg);
            }
            if let Some((kind_of, Some(api_version), Some(kind))) = resource.take() {
                schema.resources.insert((api_version, kind), format!("{module}.{kind_of}"));
            }
        } else if let Some(rest) = line.strip_prefix("impl crate::Resource for ") {
            resource = Some((rest.trim_end_matches(" {").to_owned(), None, None));
        } else if let Some((_, api_version, kind)) = &mut resource {
            if let Some(v) = const_str(line, "API_VERSION") {
                *api_version = Some(v);
            } else if let Some(v) = const_str(line, "KIND") {
                *kind = Some(v);
            }
        } else if let (Some((msg_name, msg)), Some(attr)) = (&mut message, line.trim().strip_prefix("#[prost(")) {
            // The declaration may wrap onto following lines (inside generics too); it ends at a
            // line-final `,` outside any `<...>`.
            let mut decl = String::new();
            for next in lines.by_ref() {
                decl.push_str(next.trim());
                if decl.ends_with(',') && decl.matches('<').count() == decl.matches('>').count() {
                    break;
                }
            }
            let mut field = parse_pb_field(module, attr.trim_end_matches(")]"), &decl)
                .unwrap_or_else(|| panic!("cannot parse k8s-pb field of {msg_name}: #[prost({attr} {decl}"));
            field.doc = std::mem::take(&mut docs);
            field.markers = markers(&field.doc);
            msg.fields.push(field);
        } else if !line.trim().starts_with("#[") {
            docs.clear();
        }
    }
}

fn const_str(line: &str, name: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("const ")?.strip_prefix(name)?.strip_prefix(": &'static str = \"")?;
    Some(rest.strip_suffix("\";")?.to_owned())
}

fn scalar_of(word: &str) -> Option<Scalar> {
    Some(match word.trim() {
        "int32" => Scalar::I32,
        "int64" => Scalar::I64,
        "bool" => Scalar::Bool,
        "double" => Scalar::F64,
        "string" => Scalar::Str,
        "bytes" => Scalar::Bytes,
        "message" => Scalar::Msg,
        _ => return None,
    })
}

/// `attr` is the inside of `#[prost(...)]`, e.g. `message, repeated, tag = "2"` or
/// `btree_map = "string, message", tag = "3"`; `decl` is `pub name: Type,`.
fn parse_pb_field(module: &str, attr: &str, decl: &str) -> Option<PbField> {
    let (name, ty) = decl.strip_prefix("pub ")?.trim_end_matches(',').split_once(':')?;
    let tag = attr.split("tag = \"").nth(1)?.split('"').next()?.parse().ok()?;
    let (scalar, map_value) = if let Some(rest) = attr.strip_prefix("btree_map = \"").or(attr.strip_prefix("map = \""))
    {
        let (key, value) = rest.split('"').next()?.split_once(',')?;
        if key.trim() != "string" {
            return None;
        }
        let value = scalar_of(value)?;
        (value, Some(value))
    } else {
        let first = attr.split([',', ' ']).next()?;
        (scalar_of(first)?, None)
    };
    let repeated = map_value.is_none() && attr.split(',').any(|part| part.trim() == "repeated");
    let message = match scalar {
        Scalar::Msg => Some(resolve(module, innermost_type(ty)?)),
        _ => None,
    };
    let name = name.trim().to_owned();
    Some(PbField {
        markers: Vec::new(),
        doc: Vec::new(),
        tag,
        key: norm(&name),
        name,
        scalar,
        repeated,
        map_value,
        message,
    })
}

/// `::core::option::Option<super::X>` → `super::X`; maps yield their value type.
fn innermost_type(ty: &str) -> Option<&str> {
    let ty = ty.trim().trim_end_matches(['>', ',', ' ']);
    let inner = ty.rsplit(['<', ',']).next()?.trim();
    (!inner.is_empty()).then_some(inner)
}

/// Resolves prost's relative type path (`super::super::core::v1::PodSpec`) from `module`.
fn resolve(module: &str, path: &str) -> String {
    let mut parts: Vec<&str> = module.split('.').collect();
    let mut rest = path;
    while let Some(r) = rest.strip_prefix("super::") {
        parts.pop();
        rest = r;
    }
    parts.extend(rest.split("::"));
    parts.join(".")
}

fn lower_camel(snake: &str) -> String {
    let mut out = String::new();
    for (i, word) in snake.trim_start_matches("r#").split('_').enumerate() {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(if i == 0 { first } else { first.to_ascii_uppercase() });
            out.extend(chars);
        }
    }
    out
}

/// The k8s-openapi field that `f` of a message is, searched in `types` in order.
fn field_in<'a>(types: &[&'a OpenapiType], f: &PbField) -> Option<(&'a OpenapiType, &'a OpenapiField)> {
    types.iter().find_map(|t| Some((*t, t.fields.iter().find(|o| o.keys.contains(&f.key))?)))
}

/// The k8s-openapi types a message's names come from, and whether they are its own: its own
/// type in every Kubernetes version that has it (newest first), else the same type in the
/// other versions of its API group, most stable first (v1, v1beta2, v1beta1, v1alpha1).
fn reference_types<'a>(openapi: &'a Openapi, message: &str) -> (Vec<&'a OpenapiType>, bool) {
    let Some((module, ty)) = message.rsplit_once('.') else { return (Vec::new(), false) };
    if let Some(own) = openapi.get(&(module.to_owned(), norm(ty))) {
        return (own.iter().collect(), true);
    }
    let Some((group, version)) = module.rsplit_once('.') else { return (Vec::new(), false) };
    let mut siblings: Vec<(VersionRank, &Vec<OpenapiType>)> = openapi
        .iter()
        .filter(|((m, t), _)| *t == norm(ty) && m.rsplit_once('.').is_some_and(|(g, v)| g == group && v != version))
        .filter_map(|((m, _), types)| Some((version_rank(m.rsplit_once('.')?.1)?, types)))
        .collect();
    siblings.sort_by_key(|s| std::cmp::Reverse(s.0));
    (siblings.into_iter().flat_map(|(_, types)| types).collect(), false)
}

/// Kubernetes' version priority: GA above beta above alpha, then the higher numbers.
type VersionRank = (u8, u32, u32);

fn version_rank(version: &str) -> Option<VersionRank> {
    let rest = version.strip_prefix('v')?;
    let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let major = rest[..digits].parse().ok()?;
    let (stability, minor) = match &rest[digits..] {
        "" => return Some((2, major, 0)),
        tail => match tail.strip_prefix("beta") {
            Some(minor) => (1, minor),
            None => (0, tail.strip_prefix("alpha")?),
        },
    };
    Some((stability, major, minor.parse().ok()?))
}

/// A Go struct embedded with `json:",inline"` is a nested message in protobuf but has no JSON
/// name of its own: its fields belong to the parent object. A field k8s-openapi lacks for
/// another reason (version skew) is not one, since its message's fields are not the parent's.
fn is_inline(f: &PbField, refs: &[&OpenapiType], pb: &PbSchema) -> bool {
    let nested = f.message.as_ref().and_then(|m| pb.messages.get(m));
    field_in(refs, f).is_none()
        && !f.repeated
        && f.map_value.is_none()
        && nested.is_some_and(|nested| nested.fields.iter().any(|n| field_in(refs, n).is_some()))
}

/// A field's server-side apply semantics from its markers, as kube-openapi converts the
/// OpenAPI extensions they become: an explicit list type wins; a list without one merges by its
/// patch merge key when its patch strategy is merge (a set without a key); else it is atomic.
fn shape(f: &PbField) -> String {
    let marker = |name: &'static str| f.markers.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str());
    let keys = |keys: Vec<&str>| {
        let list: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
        format!("Shape::Keys(&[{}])", list.join(", "))
    };
    if f.map_value.is_some() || !f.repeated {
        let atomic = marker("mapType").any(|v| v == "atomic");
        return if atomic { "Shape::Atomic".into() } else { "Shape::Default".into() };
    }
    match marker("listType").next() {
        Some("atomic") => "Shape::Atomic".into(),
        Some("set") => "Shape::Set".into(),
        Some("map") => {
            let map_keys: Vec<&str> = marker("listMapKey").collect();
            assert!(!map_keys.is_empty(), "{} is a +listType=map without +listMapKey", f.name);
            keys(map_keys)
        }
        Some(other) => panic!("{} has an unknown +listType={other}", f.name),
        None if marker("patchStrategy").any(|s| s.split(',').any(|p| p == "merge")) => {
            match marker("patchMergeKey").next() {
                Some(key) => keys(vec![key]),
                None => "Shape::Set".into(),
            }
        }
        None => "Shape::Atomic".into(),
    }
}

/// A field with its JSON name and generated Rust kind, in its message's declaration order.
struct Resolved<'a> {
    f: &'a PbField,
    json: String,
    /// `Kind::...` as generated.
    kind: String,
    flags: String,
    inline: bool,
    /// Its place in the message's declaration.
    declared: usize,
}

fn render(pb: &PbSchema, openapi: &Openapi, definitions: &[OpenapiDef]) -> Schema {
    let refs: BTreeMap<&str, (Vec<&OpenapiType>, bool)> =
        pb.messages.keys().map(|name| (name.as_str(), reference_types(openapi, name))).collect();
    // Tier 2: the types each inline-embedded message takes its names from.
    let mut inline_parents: BTreeMap<&str, &[&OpenapiType]> = BTreeMap::new();
    for (name, msg) in &pb.messages {
        let (parent, is_own) = &refs[name.as_str()];
        for f in msg.fields.iter().filter(|f| *is_own && is_inline(f, parent, pb)) {
            if let Some(nested) = &f.message {
                inline_parents.entry(nested.as_str()).or_insert(parent);
            }
        }
    }
    let index: BTreeMap<&str, usize> = pb.messages.keys().enumerate().map(|(i, name)| (name.as_str(), i)).collect();
    let msg_ref = |name: &Option<String>| -> String {
        let name = name.as_deref().unwrap_or_default();
        match index.get(name) {
            Some(i) => i.to_string(),
            None => panic!("k8s-pb refers to message {name}, which was not parsed"),
        }
    };
    let mut fallbacks = Vec::new();
    let mut resolved: BTreeMap<&str, Vec<Resolved>> = BTreeMap::new();
    for (name, msg) in &pb.messages {
        let special = SPECIAL.iter().find(|(n, _)| n == name).map_or("None", |(_, s)| s);
        let (own, is_own) = &refs[name.as_str()];
        let parent = inline_parents.get(name.as_str()).copied().unwrap_or_default();
        let keep: &[&str] = KEEP_ZERO.iter().find(|(n, _)| n == name).map_or(&[], |(_, f)| f);
        let fields = resolved.entry(name.as_str()).or_default();
        // Resolved in tag order (the order the fallbacks are reported in), kept in declaration
        // order: Go's struct order, which its JSON encoder follows.
        let mut by_tag: Vec<(usize, &PbField)> = msg.fields.iter().enumerate().collect();
        by_tag.sort_by_key(|(_, f)| f.tag);
        for (declared, f) in by_tag {
            let go_name = GO_NAMES.iter().find(|(m, field, _)| m == name && *field == f.name).map(|(_, _, json)| *json);
            // Only a message's own type shows an embedding: another version may have moved the
            // embedded fields up (node/v1alpha1 RuntimeClass has a `spec`, node/v1's has not).
            let embedded = *is_own && is_inline(f, own, pb);
            let inline = embedded || go_name == Some("");
            let (matched, source) = match field_in(own, f) {
                Some((_, field)) if *is_own => (Some(field), None),
                Some((t, field)) => (Some(field), Some(Source::OtherVersion(t.name.clone()))),
                None if embedded => (None, None),
                None => match (field_in(parent, f), go_name) {
                    (Some((t, field)), _) => (Some(field), Some(Source::InlineParent(t.name.clone()))),
                    (None, Some(_)) => (None, Some(Source::GoTag)),
                    (None, None) => (None, Some(Source::LowerCamel)),
                },
            };
            let json = match (matched, go_name) {
                (Some(m), _) => m.json.clone(),
                (None, Some(json)) => json.to_owned(),
                (None, None) if inline => String::new(),
                (None, None) => lower_camel(&f.name),
            };
            if let Some(source) = source.filter(|_| special == "None") {
                let (message, field, field_type) = (name.clone(), f.name.clone(), f.message.clone());
                fallbacks.push(Fallback { message, field, field_type, json: json.clone(), source });
            }
            let keep_zero = matched.is_some_and(|o| o.required || o.pointer_doc) || keep.contains(&json.as_str());
            let kind = match (f.map_value, f.scalar) {
                (Some(Scalar::Msg), _) => format!("Kind::Map(MapValue::Msg({}))", msg_ref(&f.message)),
                (Some(Scalar::Bytes), _) => "Kind::Map(MapValue::Bytes)".to_owned(),
                (Some(_), _) => "Kind::Map(MapValue::Str)".to_owned(),
                (None, Scalar::Msg) => format!("Kind::Msg({})", msg_ref(&f.message)),
                (None, Scalar::I32) => "Kind::I32".to_owned(),
                (None, Scalar::I64) => "Kind::I64".to_owned(),
                (None, Scalar::Bool) => "Kind::Bool".to_owned(),
                (None, Scalar::F64) => "Kind::F64".to_owned(),
                (None, Scalar::Str) => "Kind::Str".to_owned(),
                (None, Scalar::Bytes) => "Kind::Bytes".to_owned(),
            };
            let flags = [(f.repeated, "REPEATED"), (keep_zero, "KEEP_ZERO"), (inline, "INLINE")]
                .iter()
                .filter(|(on, _)| *on)
                .map(|(_, flag)| *flag)
                .collect::<Vec<_>>();
            let flags = if flags.is_empty() { "0".to_owned() } else { flags.join(" | ") };
            fields.push(Resolved { f, json, kind, flags, inline, declared });
        }
        fields.sort_by_key(|r| r.declared);
    }
    let mut out = String::from(
        "// @generated by apiserver/build/protobuf_schema.rs from the k8s-pb and k8s-openapi sources.\n\n\
         static MESSAGES: &[Message] = &[\n",
    );
    for (name, msg) in &pb.messages {
        let special = SPECIAL.iter().find(|(n, _)| n == name).map_or("None", |(_, s)| s);
        let mut fields: Vec<&Resolved> = resolved[name.as_str()].iter().collect();
        fields.sort_by_key(|r| r.f.tag);
        let atomic = msg.atomic;
        let _ = write!(out, "    Message {{ name: {name:?}, special: Special::{special}, atomic: {atomic}, fields: &[");
        for r in fields {
            let _ = write!(out, "F({}, {:?}, {}, {}, {}), ", r.f.tag, r.json, r.kind, r.flags, shape(r.f));
        }
        out.push_str("], json: &[");
        let mut flat = Vec::new();
        flatten(name, &resolved, &mut flat);
        let mut by_name: Vec<(usize, &Resolved)> = Vec::new();
        for (rank, r) in flat.into_iter().enumerate() {
            if !by_name.iter().any(|(_, seen)| seen.json == r.json) {
                by_name.push((rank, r));
            }
        }
        by_name.sort_by(|a, b| a.1.json.cmp(&b.1.json));
        for (rank, r) in by_name {
            let _ = write!(out, "J({:?}, {rank}, {}), ", r.json, r.kind);
        }
        out.push_str("] },\n");
    }
    out.push_str("];\n\n/// (apiVersion, kind) → index into MESSAGES, sorted for binary search.\n");
    out.push_str("static RESOURCES: &[(&str, &str, u16)] = &[\n");
    let mut modules: BTreeMap<&str, &str> = BTreeMap::new();
    for ((api_version, kind), name) in &pb.resources {
        let _ = writeln!(out, "    ({api_version:?}, {kind:?}, {}),", msg_ref(&Some(name.clone())));
        if let Some((module, _)) = name.rsplit_once('.') {
            modules.insert(api_version, module);
        }
    }
    // meta.k8s.io kinds (DeleteOptions, Status, ...) have no `Resource` impl.
    modules.insert("meta.k8s.io/v1", "apimachinery.pkg.apis.meta.v1");
    out.push_str("];\n\n/// apiVersion → message module, for kinds without a `Resource` (lists, options).\n");
    out.push_str("static MODULES: &[(&str, &str)] = &[\n");
    for (api_version, module) in modules {
        let _ = writeln!(out, "    ({api_version:?}, {module:?}),");
    }
    out.push_str("];\n");
    let openapi_definitions = openapi_definitions(definitions, pb, &resolved);
    Schema { code: out, fallbacks, openapi_definitions }
}

/// A message's JSON fields in Go's order, the fields of inline-embedded structs in their place.
fn flatten<'r, 'a>(name: &str, resolved: &'r BTreeMap<&str, Vec<Resolved<'a>>>, out: &mut Vec<&'r Resolved<'a>>) {
    for r in resolved.get(name).map(Vec::as_slice).unwrap_or_default() {
        match (&r.f.message, r.inline) {
            (Some(nested), true) => flatten(nested, resolved, out),
            _ => out.push(r),
        }
    }
}

/// One OpenAPI definition of k8s-openapi, from its schemars code (which is upstream's OpenAPI
/// document, descriptions included, turned into Rust).
pub struct OpenapiDef {
    /// `io.k8s.api.apps.v1.Deployment`.
    name: String,
    /// `api.apps.v1`, and the Rust type, `Deployment`.
    module: String,
    rust: String,
    schema: serde_json::Value,
    /// (group, version, kind) of a kind with a `Resource` impl.
    gvk: Option<(String, String, String)>,
}

/// (group, version, kind).
type Gvk = (String, String, String);

/// A definition as found: module, Rust type, definition name, `json_schema!` body lines, kind.
type RawDef = (String, String, String, Vec<String>, Option<Gvk>);

/// Every definition of one k8s-openapi version module.
fn parse_openapi_schemas(version_dir: &Path) -> Vec<OpenapiDef> {
    let mut files = Vec::new();
    rust_files(version_dir, &mut files);
    // First pass: which definition each Rust path names, for the `subschema_for::<T>` references.
    let mut raw: Vec<RawDef> = Vec::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for file in files {
        let module = module_of(version_dir, &file);
        let text = read(&file);
        let mut lines = text.lines();
        let mut gvks: BTreeMap<String, (String, String, String)> = BTreeMap::new();
        let mut found: Vec<(String, String, Vec<String>)> = Vec::new();
        while let Some(line) = lines.next() {
            if let Some(rest) = line.strip_prefix("impl crate::Resource for ") {
                let ty = rest.trim_end_matches(" {").to_owned();
                let (mut group, mut version, mut kind) = (None, None, None);
                for next in lines.by_ref() {
                    if next == "}" {
                        break;
                    }
                    group = group.or_else(|| const_str(next, "GROUP"));
                    version = version.or_else(|| const_str(next, "VERSION"));
                    kind = kind.or_else(|| const_str(next, "KIND"));
                }
                if let (Some(g), Some(v), Some(k)) = (group, version, kind) {
                    gvks.insert(ty, (g, v, k));
                }
            } else if let Some(rest) = line.strip_prefix("impl crate::schemars::JsonSchema for ") {
                let ty = rest.trim_end_matches(" {").to_owned();
                let mut name = None;
                let mut body = Vec::new();
                let mut inside = false;
                for next in lines.by_ref() {
                    if next == "}" {
                        break;
                    }
                    let trimmed = next.trim();
                    if name.is_none()
                        && let Some(n) = trimmed.strip_prefix('"').and_then(|n| n.strip_suffix("\".into()"))
                    {
                        name = Some(n.to_owned());
                    } else if trimmed == "crate::schemars::json_schema!({" {
                        inside = true;
                        body.push("{".to_owned());
                    } else if inside && next == "        })" {
                        inside = false;
                        body.push("}".to_owned());
                    } else if inside {
                        body.push(trimmed.to_owned());
                    }
                }
                if let Some(name) = name.filter(|_| !body.is_empty()) {
                    found.push((ty, name, body));
                }
            }
        }
        for (ty, name, body) in found {
            names.insert(format!("{}.{ty}", module.replace('.', "::")), name.clone());
            let gvk = gvks.get(&ty).cloned();
            raw.push((module.clone(), ty, name, body, gvk));
        }
    }
    let mut defs: Vec<OpenapiDef> = raw
        .into_iter()
        .map(|(module, rust, name, body, gvk)| {
            let text = schemars_to_json(&body, &names);
            let schema = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("k8s-openapi's schema of {name} did not convert to JSON ({e}):\n{text}"));
            OpenapiDef { name, module, rust, schema, gvk }
        })
        .collect();
    defs.sort_by(|a, b| a.name.cmp(&b.name));
    if defs.len() < 300 || !defs.iter().any(|d| d.name == "io.k8s.api.apps.v1.Deployment") {
        panic!(
            "parsed only {} OpenAPI definitions from {}: has k8s-openapi's layout changed?",
            defs.len(),
            version_dir.display()
        );
    }
    defs
}

/// The body of a `json_schema!` call as JSON: a reference (`__gen.subschema_for::<T>()`, with
/// the description that `ensure_object().insert(...)` adds) becomes `{"$ref": name, ...}`,
/// with the bare definition name (each document prefixes it its own way); trailing commas go.
fn schemars_to_json(body: &[String], names: &BTreeMap<String, String>) -> String {
    let reference = |path: &str| -> String {
        let key = path.trim_start_matches("crate::");
        let key = match key.rsplit_once("::") {
            Some((module, ty)) => format!("{module}.{ty}"),
            None => key.to_owned(),
        };
        let name = names.get(&key).unwrap_or_else(|| panic!("k8s-openapi refers to {path}, which has no schema"));
        format!("{{\"$ref\": {name:?}}}")
    };
    let mut out = String::new();
    for line in body {
        if let Some(rest) = line.strip_prefix("let mut schema_obj = __gen.subschema_for::<") {
            let full = reference(rest.trim_end_matches(">();"));
            // `{"$ref": "..."}` without its braces: the object was opened by the `({` line.
            out.push_str(full.trim_start_matches('{').trim_end_matches('}'));
            out.push_str(",\n");
        } else if let Some(rest) = line.strip_prefix("schema_obj.ensure_object().insert(") {
            let rest = rest.strip_suffix(".into());").unwrap_or(rest);
            if let Some((key, value)) = rest.split_once(".into(), ") {
                let _ = writeln!(out, "{key}: {value},");
            }
        } else if line == "schema_obj" {
        } else if line == "})," || line == "})" {
            out.push_str("},\n");
        } else if let Some(start) = line.find("__gen.subschema_for::<") {
            let after = &line[start + "__gen.subschema_for::<".len()..];
            let path = after.split(">()").next().unwrap_or_default();
            let prefix = line[..start].trim_end_matches('(');
            let _ = writeln!(out, "{prefix}{},", reference(path));
        } else if let Some(open) = line.strip_suffix("({") {
            let _ = writeln!(out, "{open}{{");
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    strip_trailing_commas(&out)
}

/// JSON with the commas before `}` and `]` removed (outside strings).
fn strip_trailing_commas(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '}' | ']' => {
                let trimmed = out.trim_end().len();
                if out[..trimmed].ends_with(',') {
                    out.truncate(trimmed - 1);
                }
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// A Go doc comment as upstream's OpenAPI generator makes it a description: markers (`+...`)
/// dropped, everything after a `---` line dropped, each paragraph's lines joined by spaces and
/// paragraphs by a blank line. k8s-pb writes URLs as `<https://...>` for rustdoc; Go has no `<>`.
fn description(doc: &[String]) -> String {
    let mut paragraphs: Vec<String> = vec![String::new()];
    for line in doc {
        if line == "---" {
            break;
        }
        if line.starts_with('+') {
            continue;
        }
        let current = paragraphs.last_mut().expect("never empty");
        if line.is_empty() {
            if !current.is_empty() {
                paragraphs.push(String::new());
            }
            continue;
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(line);
    }
    let text = paragraphs.into_iter().filter(|p| !p.is_empty()).collect::<Vec<_>>().join("\n\n");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("<http") {
        out.push_str(&rest[..at]);
        let url = &rest[at + 1..];
        let end = url.find('>').unwrap_or(url.len());
        out.push_str(&url[..end]);
        rest = url.get(end + 1..).unwrap_or_default();
    }
    out.push_str(rest);
    out
}

/// The OpenAPI definitions: k8s-openapi's, each property given the `x-kubernetes-*` list, map
/// and patch extensions its k8s-pb markers state (as upstream's generator turns the same Go
/// comment tags into them), each kind its `x-kubernetes-group-version-kind`, and each served
/// kind's list (which k8s-openapi models as one generic `List<T>`) from k8s-pb's list message.
fn openapi_definitions(defs: &[OpenapiDef], pb: &PbSchema, resolved: &BTreeMap<&str, Vec<Resolved>>) -> String {
    use serde_json::{Value, json};
    let pb_by_norm: BTreeMap<(String, String), &str> = pb
        .messages
        .keys()
        .filter_map(|name| {
            let (module, ty) = name.rsplit_once('.')?;
            Some(((module.to_owned(), norm(ty)), name.as_str()))
        })
        .collect();
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    for def in defs {
        let mut schema = def.schema.clone();
        // k8s-openapi requires `metadata` (its Rust field is not an Option); upstream's Go field
        // is `json:"metadata,omitempty"`, never required.
        if let Some(Value::Array(required)) = schema.get_mut("required") {
            required.retain(|r| r != "metadata");
            if required.is_empty()
                && let Some(map) = schema.as_object_mut()
            {
                map.remove("required");
            }
        }
        let message = pb_by_norm.get(&(def.module.clone(), norm(&def.rust))).copied();
        if let Some(message) = message {
            if pb.messages.get(message).is_some_and(|m| m.atomic) {
                schema["x-kubernetes-map-type"] = json!("atomic");
            }
            let mut flat = Vec::new();
            flatten(message, resolved, &mut flat);
            if let Some(Value::Object(properties)) = schema.get_mut("properties") {
                for (name, property) in properties.iter_mut() {
                    let Some(field) = flat.iter().find(|r| r.json == *name) else { continue };
                    let markers = &field.f.markers;
                    let marker = |k: &str| {
                        markers.iter().filter(|(m, _)| m == k).map(|(_, v)| v.clone()).collect::<Vec<_>>().into_iter()
                    };
                    if let Some(t) = marker("listType").next() {
                        property["x-kubernetes-list-type"] = json!(t);
                    }
                    let keys: Vec<String> = marker("listMapKey").collect();
                    if !keys.is_empty() {
                        property["x-kubernetes-list-map-keys"] = json!(keys);
                    }
                    if let Some(t) = marker("mapType").next() {
                        property["x-kubernetes-map-type"] = json!(t);
                    }
                    if let Some(key) = marker("patchMergeKey").next() {
                        property["x-kubernetes-patch-merge-key"] = json!(key);
                    }
                    if let Some(strategy) = marker("patchStrategy").next() {
                        property["x-kubernetes-patch-strategy"] = json!(strategy);
                    }
                }
            }
        }
        if let Some((group, version, kind)) = &def.gvk {
            schema["x-kubernetes-group-version-kind"] = json!([{"group": group, "kind": kind, "version": version}]);
            // The kind's list, as upstream defines it.
            let list_name = format!("{}List", def.name);
            let list_message = message.map(|m| format!("{m}List"));
            if let Some(list) = list_message.as_deref().and_then(|m| pb.messages.get(m))
                && !defs.iter().any(|d| d.name == list_name)
            {
                let doc = |json: &str| {
                    list.fields.iter().find(|f| f.name == json).map(|f| description(&f.doc)).unwrap_or_default()
                };
                let properties = &def.schema["properties"];
                out.insert(
                    list_name,
                    json!({
                        "description": description(&list.doc),
                        "type": "object",
                        "properties": {
                            "apiVersion": properties["apiVersion"],
                            "items": {"description": doc("items"), "type": "array", "items": {"$ref": def.name}},
                            "kind": properties["kind"],
                            "metadata": {"$ref": "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta", "description": doc("metadata")},
                        },
                        "required": ["items"],
                        "x-kubernetes-group-version-kind": [{"group": group, "kind": format!("{kind}List"), "version": version}],
                    }),
                );
            }
        }
        out.insert(def.name.clone(), schema);
    }
    serde_json::to_string(&out).expect("a map of JSON values serialises")
}
