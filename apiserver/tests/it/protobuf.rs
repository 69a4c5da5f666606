//! The protobuf schema `build.rs` generates (`build/protobuf_schema.rs`) is the same on every
//! build of a commit, and every JSON name it did not take from the field's own k8s-openapi
//! type is one kube-apiserver serves.

#[allow(dead_code)]
#[path = "../../build/protobuf_schema.rs"]
mod protobuf_schema;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use protobuf_schema::{Fallback, Schema, Source};

fn sources() -> (PathBuf, PathBuf) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("apiserver/ is in the workspace").to_path_buf();
    protobuf_schema::locate_sources(&cargo, &root)
}

fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let (pb, openapi) = sources();
        protobuf_schema::schema(&pb, &openapi)
    })
}

/// A second generation in the same process: every `HashMap` it could create gets a new hash
/// seed (std seeds each `RandomState` afresh), so iteration order reaching the output shows.
/// The build compiled in the same table.
#[test]
fn protobuf_schema_is_byte_identical() {
    let (pb, openapi) = sources();
    let again = protobuf_schema::schema(&pb, &openapi);
    assert!(again.code == schema().code, "two generations of the protobuf schema differ");
    assert_eq!(again.fallbacks, schema().fallbacks);
    let built = std::fs::read_to_string(Path::new(env!("OUT_DIR")).join("protobuf_schema.rs")).unwrap();
    assert!(built == schema().code, "the build compiled in another protobuf schema");
}

/// Case and separators dropped, as the generator compares names.
fn norm(name: &str) -> String {
    name.trim_start_matches("r#").chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

/// What k8s-openapi serves, read independently of the generator: (module, normalised type) →
/// the JSON names in the type's file, from its file name and its Deserialize visitor. Types with
/// a JSON of their own making (`WatchEvent`, `JSON`) have no names and are left out.
fn openapi_index() -> BTreeMap<(String, String), BTreeSet<String>> {
    fn walk(root: &Path, dir: &Path, index: &mut BTreeMap<(String, String), BTreeSet<String>>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(root, &path, index);
                continue;
            }
            let stem = path.file_stem().unwrap().to_string_lossy();
            if path.extension().is_none_or(|e| e != "rs") || stem == "mod" {
                continue;
            }
            let module = path.parent().unwrap().strip_prefix(root).unwrap();
            let module = module.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join(".");
            let names = index.entry((module, norm(&stem))).or_default();
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                if let Some((json, _)) = line.trim().strip_prefix('"').and_then(|l| l.split_once("\" => Field::Key_")) {
                    names.insert(json.to_owned());
                }
            }
        }
    }
    let src = sources().1.join("src");
    let mut index = BTreeMap::new();
    let mut versions: Vec<PathBuf> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("v1_"))
        .collect();
    versions.sort();
    for version in versions {
        walk(&version, &version, &mut index);
    }
    index.retain(|_, names| !names.is_empty());
    index
}

fn split(message: &str) -> (String, String) {
    let (module, ty) = message.rsplit_once('.').unwrap();
    (module.to_owned(), norm(ty))
}

/// Go initialisms Kubernetes JSON names keep in capitals (`podIP`, `nonResourceURLs`), which
/// prost's snake_case turns into words lowerCamelCase cannot restore.
const INITIALISMS: &[&str] = &[
    "api", "cidr", "cpu", "dns", "fqdn", "gid", "http", "https", "id", "ids", "ip", "ips", "ipc", "iscsi", "json",
    "pid", "tcp", "tls", "ttl", "udp", "uid", "uri", "url", "urls", "uuid",
];

#[test]
fn fallback_names_are_kube_apiservers() {
    let index = openapi_index();
    let mut problems = Vec::new();
    for f in &schema().fallbacks {
        let Fallback { message, field, field_type, json, source } = f;
        let what = format!("{message}.{field} → {json:?} ({source:?})");
        // Tier 1 never falls through: a message k8s-openapi models is named by its own type.
        if index.contains_key(&split(message)) {
            problems.push(format!("{what}: k8s-openapi models this message, yet the name is not its own type's"));
        }
        match source {
            Source::InlineParent(from) | Source::OtherVersion(from) => {
                if !index.get(&split(from)).is_some_and(|names| names.contains(json)) {
                    problems.push(format!("{what}: {from} serves no field {json:?}"));
                }
            }
            Source::GoTag => {}
            Source::LowerCamel => {
                let words: Vec<&str> = field.trim_start_matches("r#").split('_').collect();
                let camel: String = words
                    .iter()
                    .enumerate()
                    .map(|(i, w)| if i == 0 { w.to_string() } else { w[..1].to_uppercase() + &w[1..] })
                    .collect();
                if *json != camel {
                    problems.push(format!("{what}: not prost's name in lowerCamelCase ({camel})"));
                }
                if words.iter().skip(1).any(|w| w.len() == 1 || INITIALISMS.contains(w)) {
                    problems.push(format!("{what}: an initialism lowerCamelCase cannot restore; list it in GO_NAMES"));
                }
                // A Go field named after its type may be embedded inline: only its tag says.
                if field_type.as_deref().is_some_and(|t| norm(t.rsplit('.').next().unwrap()) == norm(field)) {
                    problems.push(format!("{what}: named after its type, maybe embedded inline; list it in GO_NAMES"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{} fallback names to fix:\n{}", problems.len(), problems.join("\n"));
    assert!(schema().fallbacks.iter().any(|f| f.source == Source::LowerCamel), "the check saw no fallback at all");
}

/// Every field named by a fallback tier, one per line, as upstream keeps
/// `api/api-rules/violation_exceptions.list`: a generator change or a k8s-pb / k8s-openapi
/// upgrade that moves any name shows as a diff to review. `WASMCM_BLESS=1` rewrites it.
#[test]
fn fallback_names_are_the_reviewed_list() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("build/fallback_names.list");
    let mut listed = String::from(
        "# Protobuf fields whose JSON name is not their own k8s-openapi type's, and where it came from\n\
         # (apiserver/build/protobuf_schema.rs, tiers 2-4). Checked by tests/it/protobuf.rs.\n",
    );
    for Fallback { message, field, json, source, .. } in &schema().fallbacks {
        let from = match source {
            Source::InlineParent(from) => format!("inline-parent {from}"),
            Source::OtherVersion(from) => format!("other-version {from}"),
            Source::GoTag => "go-tag".to_string(),
            Source::LowerCamel => "lower-camel".to_string(),
        };
        listed.push_str(&format!("{message}.{field} {json} {from}\n"));
    }
    if std::env::var_os("WASMCM_BLESS").is_some() {
        std::fs::write(&path, &listed).unwrap();
    }
    let reviewed = std::fs::read_to_string(&path).unwrap_or_default();
    let (old, new): (BTreeSet<&str>, BTreeSet<&str>) = (reviewed.lines().collect(), listed.lines().collect());
    let gone: Vec<&&str> = old.difference(&new).take(20).collect();
    let added: Vec<&&str> = new.difference(&old).take(20).collect();
    assert!(
        reviewed == listed,
        "{} differs from the generated fallbacks (rerun with WASMCM_BLESS=1 once reviewed)\n\
         no longer generated: {gone:#?}\nnewly generated: {added:#?}",
        path.display()
    );
}

/// Fields the generator once named from unrelated types, or lost an initialism of, with the
/// names kube-apiserver serves (their Go json tags).
#[test]
fn names_once_wrong_are_kube_apiservers() {
    let code = &schema().code;
    let message = |name: &str| -> &str {
        let start = code.find(&format!("Message {{ name: {name:?},")).unwrap_or_else(|| panic!("no message {name}"));
        &code[start..start + code[start..].find('\n').unwrap()]
    };
    for (name, field) in [
        // HTTPGetAction is HttpGetAction in prost: matched by case, no longer `Port` (DaemonEndpoint's).
        ("api.core.v1.HttpGetAction", r#"F(2, "port","#),
        ("api.core.v1.TcpSocketAction", r#"F(1, "port","#),
        // VolumeSource is embedded in Volume: its names are Volume's.
        ("api.core.v1.VolumeSource", r#"F(16, "downwardAPI","#),
        ("api.core.v1.VolumeSource", r#"F(25, "scaleIO","#),
        ("api.admission.v1.AdmissionRequest", r#"F(4, "subResource","#),
        ("apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.CustomResourceDefinitionVersion", r#"F(4, "schema","#),
        ("apiextensions_apiserver.pkg.apis.apiextensions.v1.ConversionRequest", r#"F(2, "desiredAPIVersion","#),
        ("api.core.v1.PodLogOptions", r#""insecureSkipTLSVerifyBackend""#),
        ("api.rbac.v1beta1.PolicyRule", r#""nonResourceURLs""#),
    ] {
        assert!(message(name).contains(field), "{name}: want {field}, generated {}", message(name));
    }
}
