//! Generates the wire schema the API server's protobuf decoder (`src/cluster/protobuf.rs`) walks.
//!
//! The field numbers and wire types come from the prost code of the `k8s-pb` crate, the JSON
//! field names (and which fields are required) from the serde code of `k8s-openapi`: both are
//! registry packages already in the dependency graph, so the schema follows the Kubernetes
//! versions those crates pin instead of a hand-maintained copy. Neither crate is linked into the
//! host: only their sources are read, once per build of the host crate.

use std::collections::{BTreeMap, HashMap};
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
    ("apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON", "RawJson"),
    ("apimachinery.pkg.util.intstr.IntOrString", "IntOrString"),
    ("apimachinery.pkg.api.resource.Quantity", "Quantity"),
    ("apimachinery.pkg.api.resource.QuantityValue", "Quantity"),
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

/// Finds the two crates through `cargo metadata`, parses them and writes the table to `out`.
pub fn generate(cargo: &str, workspace_root: &Path, out: &Path) {
    let (pb_dir, openapi_dir) = locate_sources(cargo, workspace_root);
    let openapi = parse_openapi(&latest_version_dir(&openapi_dir.join("src")));
    let pb = parse_pb(&pb_dir.join("src"));
    let code = render(&pb, &openapi);
    std::fs::write(out, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}

fn locate_sources(cargo: &str, workspace_root: &Path) -> (PathBuf, PathBuf) {
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
                     host/Cargo.toml must depend on it (k8s-pb as a build-dependency, k8s-openapi via wasmcm-guest)"
                )
            })
    };
    (find("k8s-pb", "0.9."), find("k8s-openapi", "0.29."))
}

/// k8s-openapi keeps one module per Kubernetes minor version; the newest is what `latest` selects.
fn latest_version_dir(src: &Path) -> PathBuf {
    let entries = std::fs::read_dir(src).unwrap_or_else(|e| panic!("cannot list {}: {e}", src.display()));
    entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|name| Some((name.strip_prefix("v1_")?.parse::<u32>().ok()?, name)))
        .max()
        .map(|(_, name)| src.join(name))
        .unwrap_or_else(|| panic!("no v1_* version module in {}", src.display()))
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
    snake: String,
    required: bool,
    pointer_doc: bool,
}

/// `module.Struct` → its JSON fields, from the serde code of k8s-openapi.
fn parse_openapi(version_dir: &Path) -> HashMap<String, Vec<OpenapiField>> {
    let mut files = Vec::new();
    rust_files(version_dir, &mut files);
    let mut types = HashMap::new();
    for file in files {
        let module = module_of(version_dir, &file);
        let text = read(&file);
        // Struct fields first (for requiredness), then the Deserialize visitor's name table.
        let mut decls: HashMap<String, (bool, bool)> = HashMap::new();
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
            if let Some(rest) = trimmed.strip_prefix("impl<'de> crate::serde::Deserialize<'de> for ") {
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
            let fields: &mut Vec<OpenapiField> = types.entry(format!("{module}.{owner}")).or_default();
            fields.push(OpenapiField { json: json.to_owned(), snake, required, pointer_doc });
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
    tag: u32,
    name: String,
    scalar: Scalar,
    repeated: bool,
    /// `Some(value kind)` for maps; their keys are always strings in Kubernetes.
    map_value: Option<Scalar>,
    /// Full name of the message type, for message fields and message-valued maps.
    message: Option<String>,
}

struct PbMessage {
    fields: Vec<PbField>,
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
            parse_pb_file(&module_of(src, file), &read(file), &mut schema);
        }
    }
    if schema.messages.len() < 100 || !schema.messages.contains_key("api.apps.v1.Deployment") {
        panic!("parsed only {} messages from {}: has the k8s-pb layout changed?", schema.messages.len(), src.display());
    }
    schema
}

fn parse_pb_file(module: &str, text: &str, schema: &mut PbSchema) {
    let mut lines = text.lines();
    let mut message: Option<(String, PbMessage)> = None;
    let mut resource: Option<(String, Option<String>, Option<String>)> = None;
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("pub struct ") {
            let name = rest.split([' ', '{']).next().unwrap_or_default();
            let empty = PbMessage { fields: Vec::new() };
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
            let field = parse_pb_field(module, attr.trim_end_matches(")]"), &decl)
                .unwrap_or_else(|| panic!("cannot parse k8s-pb field of {msg_name}: #[prost({attr} {decl}"));
            msg.fields.push(field);
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
    Some(PbField { tag, name: name.trim().to_owned(), scalar, repeated, map_value, message })
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

fn render(pb: &PbSchema, openapi: &HashMap<String, Vec<OpenapiField>>) -> String {
    // Fallback for messages k8s-openapi does not model (e.g. runtime.Unknown): any type's field
    // with the same normalised name, else prost's name in lowerCamelCase.
    let mut global: HashMap<String, &str> = HashMap::new();
    for fields in openapi.values() {
        for f in fields {
            global.entry(norm(&f.json)).or_insert(&f.json);
        }
    }
    let index: HashMap<&str, usize> = pb.messages.keys().enumerate().map(|(i, name)| (name.as_str(), i)).collect();
    let msg_ref = |name: &Option<String>| -> String {
        let name = name.as_deref().unwrap_or_default();
        match index.get(name) {
            Some(i) => i.to_string(),
            None => panic!("k8s-pb refers to message {name}, which was not parsed"),
        }
    };
    let mut out = String::from(
        "// @generated by host/build/protobuf_schema.rs from the k8s-pb and k8s-openapi sources.\n\n\
         static MESSAGES: &[Message] = &[\n",
    );
    for (name, msg) in &pb.messages {
        let special = SPECIAL.iter().find(|(n, _)| n == name).map_or("None", |(_, s)| s);
        let own = openapi.get(name);
        let keep: &[&str] = KEEP_ZERO.iter().find(|(n, _)| n == name).map_or(&[], |(_, f)| f);
        let mut fields: Vec<&PbField> = msg.fields.iter().collect();
        fields.sort_by_key(|f| f.tag);
        let _ = write!(out, "    Message {{ name: {name:?}, special: Special::{special}, fields: &[");
        for f in fields {
            let matched = own
                .and_then(|own| own.iter().find(|o| norm(&o.snake) == norm(&f.name) || norm(&o.json) == norm(&f.name)));
            // A Go struct embedded with `json:",inline"` is a nested message in protobuf but
            // has no JSON name of its own: its fields belong to the parent object. A field
            // k8s-openapi lacks for another reason (version skew) is not one, since its
            // message's fields are not the parent's.
            let nested = f.message.as_ref().and_then(|m| pb.messages.get(m));
            let inline = matched.is_none()
                && !f.repeated
                && f.map_value.is_none()
                && own.zip(nested).is_some_and(|(own, nested)| {
                    nested.fields.iter().any(|n| own.iter().any(|o| norm(&o.json) == norm(&n.name)))
                });
            let json = match matched {
                Some(o) => o.json.clone(),
                None if inline => String::new(),
                None => global.get(&norm(&f.name)).map_or_else(|| lower_camel(&f.name), |j| (*j).to_owned()),
            };
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
            let _ = write!(out, "F({}, {json:?}, {kind}, {flags}), ", f.tag);
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
    out
}
