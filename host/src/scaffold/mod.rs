//! `wasmcm new`: scaffolds a standalone plugin in the language `--lang` names (Rust by default,
//! Python, TypeScript): the language's project (for Rust its own workspace, toolchain, component
//! linker and lock file), a `describe()` from the flags, a reconcile skeleton with native unit
//! tests, a `simulate` snapshot, a plugin manifest and, for a custom kind, its CRD and an example.
//!
//! Owns `host/templates/plugin/` (Rust, and the files every language shares: the manifest, CRD,
//! example and snapshots) and `host/templates/<lang>/` through its submodules (`python`,
//! `typescript`), all rendered by plain `{{placeholder}}` replacement and `{{#section}}` lines
//! ([`sections`]). A language plugs in as a [`Lang`] variant and a submodule with `render` (its
//! files from a [`Context`]), `component` (where its build writes the component), `check_sdk`,
//! `default_sdk` and `steps` (what `next_steps` prints). What must match the workspace
//! (dependency versions, the guest profile, the wasm linker settings, the toolchain,
//! `Cargo.lock`, the WIT contract) is read from the workspace's own files at compile time, never
//! restated here, so a scaffold builds exactly as the built-in plugins do. Those files are
//! this repository's own and read by a few line-based lookups (`table`, `value`), which the unit
//! tests pin; a TOML parser would be a new dependency for three values. Touches nothing
//! outside the directory it creates.

mod python;
mod typescript;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const WORKSPACE_MANIFEST: &str = include_str!("../../../Cargo.toml");
const WORKSPACE_LOCK: &str = include_str!("../../../Cargo.lock");
const CARGO_CONFIG: &str = include_str!("../../../.cargo/config.toml");
const TOOLCHAIN: &str = include_str!("../../../rust-toolchain.toml");
/// The repository's formatting, which the templates are written in: a new plugin passes
/// `cargo fmt --check` as made.
const RUSTFMT: &str = include_str!("../../../rustfmt.toml");

const T_CARGO_TOML: &str = include_str!("../../templates/plugin/Cargo.toml.tmpl");
const T_CARGO_CONFIG: &str = include_str!("../../templates/plugin/cargo-config.toml.tmpl");
const T_GITIGNORE: &str = include_str!("../../templates/plugin/gitignore.tmpl");
const T_PLUGIN: &str = include_str!("../../templates/plugin/plugin.yaml.tmpl");
const T_README: &str = include_str!("../../templates/plugin/README.md.tmpl");
const T_LIB_CUSTOM: &str = include_str!("../../templates/plugin/lib-custom.rs.tmpl");
const T_LIB_BUILTIN: &str = include_str!("../../templates/plugin/lib-builtin.rs.tmpl");
const T_CRD: &str = include_str!("../../templates/plugin/crd.yaml.tmpl");
const T_EXAMPLE: &str = include_str!("../../templates/plugin/example.yaml.tmpl");
const T_SNAPSHOT_CUSTOM: &str = include_str!("../../templates/plugin/snapshot-custom.yaml.tmpl");
const T_SNAPSHOT_BUILTIN: &str = include_str!("../../templates/plugin/snapshot-builtin.yaml.tmpl");

/// The SDK's version: the workspace's, which a registry would resolve `wasmcm-guest` to.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The workspace dependencies a plugin uses as the SDK does (same versions and features);
/// k8s-openapi comes through the SDK's re-export, so its version always matches.
const PLUGIN_DEPENDENCIES: [&str; 2] = ["serde", "serde_json"];

/// The built-in plugins' annotation for the skeleton of a built-in kind.
const BUILTIN_ANNOTATION: &str = "wasmcm.dev/reconciled-by";

/// API groups served by Kubernetes itself that have no dot in their name.
const DOTLESS_BUILTIN_GROUPS: [&str; 5] = ["", "apps", "batch", "autoscaling", "policy"];

/// What `wasmcm new` was asked for.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub name: String,
    /// `group/version/Kind` (or `version/Kind` for the core group).
    pub kind: Option<String>,
    /// The custom kind's resource name [default: lowercase kind + "s"].
    pub plural: Option<String>,
    /// [default: `./<name>`]
    pub dir: Option<PathBuf>,
    /// The SDK to depend on by path: the `wasmcm-guest` crate for Rust, the package directory
    /// for Python and TypeScript [default: the SDK of the checkout this binary was built from,
    /// if it is still there].
    pub sdk: Option<PathBuf>,
    /// The language of the plugin.
    pub lang: Lang,
}

/// The language a scaffold is written in (`wasmcm new --lang`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lang {
    #[default]
    Rust,
    Python,
    TypeScript,
}

impl Lang {
    /// Every language, in the order `--lang` lists them.
    pub const ALL: [Lang; 3] = [Lang::Rust, Lang::Python, Lang::TypeScript];

    /// Its `--lang` value.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::TypeScript => "typescript",
        }
    }

    /// A `--lang` value.
    pub fn parse(value: &str) -> Result<Lang, String> {
        Lang::ALL.into_iter().find(|l| l.name() == value).ok_or_else(|| {
            let known: Vec<&str> = Lang::ALL.iter().map(|l| l.name()).collect();
            format!("invalid --lang {value:?}: one of {}", known.join(", "))
        })
    }
}

impl std::fmt::Display for Lang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A parsed `--kind`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindSpec {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// Not served by Kubernetes itself: the scaffold brings a CRD.
    pub custom: bool,
}

impl KindSpec {
    pub fn api_version(&self) -> String {
        match self.group.as_str() {
            "" => self.version.clone(),
            g => format!("{g}/{}", self.version),
        }
    }
}

/// A scaffold ready to write: the validated options and the files' contents.
#[derive(Debug)]
pub struct Plan {
    pub name: String,
    pub lang: Lang,
    pub dir: PathBuf,
    pub kind: KindSpec,
    /// The SDK depended on by path, if any.
    pub sdk: Option<PathBuf>,
    /// Relative path and content, in the order written.
    pub files: Vec<(String, String)>,
}

/// What [`create`] did.
#[derive(Debug)]
pub struct Created {
    pub plan: Plan,
    /// Why there is no `Cargo.lock`, if there is none.
    pub lock_note: Option<String>,
}

/// A plugin name: a Rust package name that is also a DNS label (plugin names are) and does not
/// replace a built-in plugin or name a dependency.
pub fn check_name(name: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("invalid plugin name {name:?}: {why}"));
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > 63 {
        return bad("at most 63 characters (plugin names are DNS labels)");
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        return bad(
            "use lowercase letters, digits and '-' only (a crate name that is also a DNS label), e.g. my-plugin",
        );
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return bad("it must start with a letter");
    }
    if name.ends_with('-') {
        return bad("it must end with a letter or digit");
    }
    const RESERVED: [&str; 57] = [
        "abstract",
        "alloc",
        "as",
        "async",
        "await",
        "become",
        "box",
        "break",
        "const",
        "continue",
        "core",
        "crate",
        "do",
        "dyn",
        "else",
        "enum",
        "extern",
        "false",
        "final",
        "fn",
        "for",
        "gen",
        "if",
        "impl",
        "in",
        "let",
        "loop",
        "macro",
        "match",
        "mod",
        "move",
        "mut",
        "override",
        "priv",
        "proc-macro",
        "pub",
        "ref",
        "return",
        "self",
        "static",
        "std",
        "struct",
        "super",
        "test",
        "trait",
        "true",
        "try",
        "type",
        "typeof",
        "unsafe",
        "unsized",
        "use",
        "virtual",
        "where",
        "while",
        "yield",
        "build",
    ];
    if RESERVED.contains(&name) {
        return bad("a Rust keyword or reserved crate name");
    }
    if crate::builtin::names().any(|b| b == name) {
        return bad("a built-in plugin has this name, and a manifest of that name replaces it; choose another");
    }
    if ["wasmcm-guest", "wasmcm-core", "serde", "serde-json", "k8s-openapi"].contains(&name) {
        return bad("a dependency of the plugin has this name");
    }
    Ok(())
}

/// `group/version/Kind`, or `version/Kind` for the core group.
pub fn parse_kind(spec: &str) -> Result<KindSpec, String> {
    let bad = |why: String| Err(format!("invalid --kind {spec:?}: {why}"));
    let parts: Vec<&str> = spec.split('/').collect();
    let (group, version, kind) = match parts.as_slice() {
        [g, v, k] => (*g, *v, *k),
        [v, k] => ("", *v, *k),
        _ => return bad("expected group/version/Kind, e.g. example.com/v1alpha1/Widget (or v1/ConfigMap)".into()),
    };
    if !is_api_version(version) {
        return bad(format!("version {version:?} is not a Kubernetes API version such as v1, v1beta2, v1alpha1"));
    }
    let mut chars = kind.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_uppercase()) || !chars.all(|c| c.is_ascii_alphanumeric()) {
        return bad(format!(
            "kind {kind:?} must be CamelCase ASCII letters and digits starting upper case, e.g. Widget"
        ));
    }
    if kind.len() > 63 {
        return bad(format!("kind {kind:?} is longer than 63 characters"));
    }
    if !group.is_empty()
        && let Some(why) = wasmcm_core::validation::dns1123_subdomain(group).first()
    {
        return bad(format!("group {group:?}: {why}"));
    }
    let builtin = DOTLESS_BUILTIN_GROUPS.contains(&group) || group == "k8s.io" || group.ends_with(".k8s.io");
    if !builtin && !group.contains('.') {
        return bad(format!(
            "group {group:?} is not one of Kubernetes' own, and a custom resource's group must be a domain \
             with a dot, e.g. {group}.example.com"
        ));
    }
    Ok(KindSpec { group: group.into(), version: version.into(), kind: kind.into(), custom: !builtin })
}

/// `v1`, `v2beta1`, `v1alpha3`: what Kubernetes accepts as a version it orders.
fn is_api_version(v: &str) -> bool {
    let Some(rest) = v.strip_prefix('v') else { return false };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || rest.starts_with('0') {
        return false;
    }
    let rest = &rest[digits..];
    match rest.strip_prefix("alpha").or_else(|| rest.strip_prefix("beta")) {
        None => rest.is_empty(),
        Some(n) => !n.is_empty() && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// `my-plugin` -> `MyPlugin`.
pub fn camel_case(name: &str) -> String {
    name.split('-')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut cs = p.chars();
            cs.next().map(|c| c.to_ascii_uppercase().to_string() + cs.as_str()).unwrap_or_default()
        })
        .collect()
}

/// Validates `options` and renders every file; writes nothing.
pub fn plan(options: &Options) -> Result<Plan, String> {
    check_name(&options.name)?;
    let kind = match &options.kind {
        Some(k) => parse_kind(k)?,
        None => parse_kind(&format!("example.com/v1alpha1/{}", camel_case(&options.name)))?,
    };
    let plural = match (&options.plural, kind.custom) {
        (Some(_), false) => return Err("--plural is for a custom kind only: a built-in kind has its own".into()),
        (Some(p), true) => {
            if let Some(why) = wasmcm_core::validation::dns1035_label(p).first() {
                return Err(format!("invalid --plural {p:?}: {why}"));
            }
            p.clone()
        }
        (None, _) => format!("{}s", kind.kind.to_ascii_lowercase()),
    };
    let sdk = match (&options.sdk, options.lang) {
        (Some(path), Lang::Rust) => Some(check_sdk(path)?),
        (Some(path), Lang::Python) => Some(python::check_sdk(path)?),
        (Some(path), Lang::TypeScript) => Some(typescript::check_sdk(path)?),
        (None, Lang::Rust) => default_sdk(),
        (None, Lang::Python) => python::default_sdk(),
        (None, Lang::TypeScript) => typescript::default_sdk(),
    };
    let dir = options.dir.clone().unwrap_or_else(|| PathBuf::from(&options.name));
    let context = Context::new(&options.name, options.lang, &kind, &plural, sdk.as_deref());
    let files = match options.lang {
        Lang::Rust => render(&context)?,
        Lang::Python => python::render(&context)?,
        Lang::TypeScript => typescript::render(&context, &options.name, &dir)?,
    };
    Ok(Plan { name: options.name.clone(), lang: options.lang, dir, kind, sdk, files })
}

/// Where the scaffold of `lang` named `name` builds its component, relative to its directory
/// (what its `plugin.yaml` names).
pub fn component(lang: Lang, name: &str) -> String {
    match lang {
        Lang::Rust => format!("target/wasm32-unknown-unknown/release/{}.wasm", name.replace('-', "_")),
        Lang::Python => python::component(name),
        Lang::TypeScript => typescript::component(name),
    }
}

/// What every language's templates may name, and the files they all share.
pub(crate) struct Context<'a> {
    pub(crate) lang: Lang,
    pub(crate) kind: &'a KindSpec,
    pub(crate) sdk: Option<&'a Path>,
    /// `{{key}}` → value, for every template.
    vars: Vec<(&'static str, String)>,
}

impl<'a> Context<'a> {
    fn new(name: &'a str, lang: Lang, kind: &'a KindSpec, plural: &str, sdk: Option<&'a Path>) -> Self {
        let checkout = checkout().map(|c| c.display().to_string()).unwrap_or_else(|| "<wasmcm checkout>".into());
        let vars = vec![
            ("name", name.to_string()),
            ("crate", name.replace('-', "_")),
            ("component", component(lang, name)),
            ("api_version", kind.api_version()),
            ("group", kind.group.clone()),
            ("version", kind.version.clone()),
            ("kind", kind.kind.clone()),
            ("plural", plural.to_string()),
            ("singular", kind.kind.to_ascii_lowercase()),
            ("annotation", BUILTIN_ANNOTATION.into()),
            ("checkout", checkout),
        ];
        Context { lang, kind, sdk, vars }
    }

    /// `template` with its sections for this kind and language kept and every placeholder of
    /// the context and `extra` filled; a placeholder left unfilled is a bug.
    pub(crate) fn fill(&self, template: &str, extra: &[(&str, String)]) -> Result<String, String> {
        let text = sections(template, self.kind.custom, self.lang);
        let text = self
            .vars
            .iter()
            .map(|(k, v)| (*k, v))
            .chain(extra.iter().map(|(k, v)| (*k, v)))
            .fold(text, |t, (k, v)| t.replace(&format!("{{{{{k}}}}}"), v));
        match text.find("{{") {
            Some(at) => {
                Err(format!("template placeholder left unfilled at {:?} (a bug)", &text[at..text.len().min(at + 30)]))
            }
            None => Ok(text),
        }
    }

    /// The files every language has: `plugin.yaml`, `snapshot.yaml` and, for a custom kind,
    /// `deploy/crd.yaml` and `deploy/example.yaml`.
    pub(crate) fn shared_files(&self) -> Result<Vec<(String, String)>, String> {
        let mut files = vec![("plugin.yaml".to_string(), self.fill(T_PLUGIN, &[])?)];
        if self.kind.custom {
            let crd = self.fill(T_CRD, &[])?;
            // The CRD again as the snapshot's first item, so `simulate` knows the kind.
            let crd_item: Vec<String> = crd
                .lines()
                .filter(|l| !l.starts_with('#'))
                .enumerate()
                .map(|(i, l)| if i == 0 { format!("- {l}") } else { format!("  {l}") })
                .collect();
            files.push(("snapshot.yaml".into(), self.fill(T_SNAPSHOT_CUSTOM, &[("crd_item", crd_item.join("\n"))])?));
            files.push(("deploy/crd.yaml".into(), crd));
            files.push(("deploy/example.yaml".into(), self.fill(T_EXAMPLE, &[])?));
        } else {
            files.push(("snapshot.yaml".into(), self.fill(T_SNAPSHOT_BUILTIN, &[])?));
        }
        Ok(files)
    }
}

/// An SDK directory given with `--sdk`: it must hold the `wasmcm-guest` crate.
fn check_sdk(path: &Path) -> Result<PathBuf, String> {
    let manifest = path.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| format!("--sdk {}: cannot read {}: {e}", path.display(), manifest.display()))?;
    if !text.lines().any(|l| l.trim() == "name = \"wasmcm-guest\"") {
        return Err(format!("--sdk {}: {} is not the wasmcm-guest crate", path.display(), manifest.display()));
    }
    path.canonicalize().map_err(|e| format!("--sdk {}: {e}", path.display()))
}

/// The SDK of the checkout this binary was built from, if it is still there.
fn default_sdk() -> Option<PathBuf> {
    check_sdk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-controllers/sdk")).ok()
}

/// The checkout this binary was built from, if it is still there (for `make run`).
pub fn checkout() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.join("Makefile").is_file().then(|| root.canonicalize().ok()).flatten()
}

/// The lines of TOML table `[header]`, without blank lines and comments.
fn table<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
    let open = format!("[{header}]");
    text.lines()
        .skip_while(|l| l.trim() != open)
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect()
}

/// The value of `key = value` in `lines`.
fn value<'a>(lines: &[&'a str], key: &str) -> Option<&'a str> {
    lines.iter().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The Rust crate: its files and the shared ones.
fn render(context: &Context) -> Result<Vec<(String, String)>, String> {
    let missing = |what: &str| format!("this wasmcm build lacks {what} in its workspace files (a bug)");
    let package = table(WORKSPACE_MANIFEST, "workspace.package");
    let unquote = |v: &str| v.trim_matches('"').to_string();
    let edition = value(&package, "edition").map(unquote).ok_or_else(|| missing("the edition"))?;
    let rust_version = value(&package, "rust-version").map(unquote).ok_or_else(|| missing("the rust-version"))?;
    let workspace_dependencies = table(WORKSPACE_MANIFEST, "workspace.dependencies");
    let dependencies = PLUGIN_DEPENDENCIES
        .iter()
        .map(|d| value(&workspace_dependencies, d).map(|v| format!("{d} = {v}")).ok_or_else(|| missing(d)))
        .collect::<Result<Vec<_>, _>>()?
        .join("\n");
    let profile: Vec<&str> = table(WORKSPACE_MANIFEST, "profile.guest")
        .into_iter()
        .filter(|l| !l.trim_start().starts_with("inherits"))
        .collect();
    if profile.is_empty() {
        return Err(missing("[profile.guest]"));
    }
    let wasm_target = table(CARGO_CONFIG, "target.wasm32-unknown-unknown");
    if value(&wasm_target, "linker").is_none() {
        return Err(missing("the wasm32 linker in .cargo/config.toml"));
    }
    let sdk_dependency = match context.sdk {
        Some(path) => format!(
            "wasmcm-guest = {{ version = {}, path = {} }}",
            toml_string(SDK_VERSION),
            toml_string(&path.display().to_string())
        ),
        None => format!("wasmcm-guest = {}", toml_string(SDK_VERSION)),
    };
    let vars: Vec<(&str, String)> = vec![
        ("edition", edition),
        ("rust_version", rust_version),
        ("sdk_dependency", sdk_dependency),
        ("dependencies", dependencies),
        ("release_profile", profile.join("\n")),
        ("wasm_target", format!("[target.wasm32-unknown-unknown]\n{}", wasm_target.join("\n"))),
    ];
    let fill = |template: &str| context.fill(template, &vars);
    let mut files = vec![
        (".cargo/config.toml".to_string(), fill(T_CARGO_CONFIG)?),
        (".gitignore".into(), fill(T_GITIGNORE)?),
        ("Cargo.toml".into(), fill(T_CARGO_TOML)?),
        ("README.md".into(), fill(T_README)?),
        ("rust-toolchain.toml".into(), TOOLCHAIN.to_string()),
        ("rustfmt.toml".into(), RUSTFMT.to_string()),
    ];
    files.extend(context.shared_files()?);
    let lib = if context.kind.custom { T_LIB_CUSTOM } else { T_LIB_BUILTIN };
    files.push(("src/lib.rs".into(), fill(lib)?));
    Ok(files)
}

/// Keeps the lines between `{{#custom}}` and `{{/custom}}` for a custom kind, those between
/// `{{#builtin}}` and `{{/builtin}}` otherwise, those between `{{#<lang>}}` and `{{/<lang>}}`
/// for that language only (`{{#rust}}`, `{{#python}}`, `{{#typescript}}`), and drops the marker
/// lines. Sections do not nest.
fn sections(template: &str, custom: bool, lang: Lang) -> String {
    let mut keep = true;
    let mut out = String::with_capacity(template.len());
    for line in template.split_inclusive('\n') {
        let marker = line.trim().strip_prefix("{{").and_then(|m| m.strip_suffix("}}"));
        match marker {
            Some("#custom") => keep = custom,
            Some("#builtin") => keep = !custom,
            Some(open) if open.strip_prefix('#').is_some_and(|l| Lang::parse(l).is_ok()) => {
                keep = open[1..] == *lang.name()
            }
            Some("/custom" | "/builtin") => keep = true,
            Some(close) if close.strip_prefix('/').is_some_and(|l| Lang::parse(l).is_ok()) => keep = true,
            _ if keep => out.push_str(line),
            _ => {}
        }
    }
    out
}

/// Writes the scaffold of `options` into its directory (new, or empty), then its `Cargo.lock`.
pub fn create(options: &Options) -> Result<Created, String> {
    let plan = plan(options)?;
    let dir = &plan.dir;
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(format!("{} exists and is not empty: choose a new directory with --dir", dir.display()));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    }
    for (file, content) in &plan.files {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, content).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        if file.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("cannot make {} executable: {e}", path.display()))?;
        }
    }
    let lock_note = match (plan.lang, &plan.sdk) {
        (Lang::Rust, Some(_)) => lock(dir).err(),
        (Lang::Rust, None) => Some(format!(
            "no Cargo.lock: wasmcm-guest {SDK_VERSION} comes from a registry (give --sdk <wasmcm checkout>/guest-controllers/sdk \
             to build against a checkout); cargo resolves the versions at the first build"
        )),
        (Lang::Python, sdk) => python::note(sdk.as_deref()),
        (Lang::TypeScript, sdk) => typescript::note(sdk.as_deref()),
    };
    Ok(Created { plan, lock_note })
}

/// `Cargo.lock`: the workspace's lock, pruned by cargo to what this crate uses, so it builds
/// with exactly the versions wasmcm was tested with, and `--locked` holds. Offline first: the
/// versions are all given, so the registry index cached by wasmcm's own build is enough.
fn lock(dir: &Path) -> Result<(), String> {
    let path = dir.join("Cargo.lock");
    std::fs::write(&path, WORKSPACE_LOCK).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut last = String::new();
    for offline in [true, false] {
        let mut cmd = Command::new(&cargo);
        cmd.current_dir(dir).args(["metadata", "--format-version", "1"]);
        if offline {
            cmd.arg("--offline");
        }
        // What a surrounding build sets must not leak into this crate's resolution.
        for var in ["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "RUSTFLAGS"] {
            cmd.env_remove(var);
        }
        match cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output() {
            Ok(out) if out.status.success() => return Ok(()),
            Ok(out) => last = String::from_utf8_lossy(&out.stderr).trim().to_string(),
            Err(e) => last = format!("cannot run {cargo}: {e}"),
        }
    }
    // A lock cargo cannot use is worse than none.
    let _ = std::fs::remove_file(&path);
    Err(format!("no Cargo.lock (cargo resolves the versions at the first build): cargo metadata failed: {last}"))
}

/// What to do next, for the terminal.
pub fn next_steps(created: &Created, wasmcm: &str) -> String {
    let plan = &created.plan;
    let wasm = component(plan.lang, &plan.name);
    let mut out = format!(
        "created {} plugin {} for {}/{} in {}\n",
        plan.lang,
        plan.name,
        plan.kind.api_version(),
        plan.kind.kind,
        plan.dir.display()
    );
    for (file, _) in &plan.files {
        out.push_str(&format!("  {file}\n"));
    }
    let (build, test) = match plan.lang {
        Lang::Rust => {
            if created.lock_note.is_none() {
                out.push_str("  Cargo.lock\n");
            }
            match &plan.sdk {
                Some(sdk) => out.push_str(&format!("wasmcm-guest {SDK_VERSION} from {}\n", sdk.display())),
                None => out.push_str(&format!("wasmcm-guest {SDK_VERSION} from the registry\n")),
            }
            ("cargo build --release --target wasm32-unknown-unknown", "cargo test")
        }
        Lang::Python => python::steps(plan),
        Lang::TypeScript => typescript::steps(plan),
    };
    if let Some(note) = &created.lock_note {
        out.push_str(&format!("note: {note}\n"));
    }
    let make = match checkout() {
        Some(c) => format!("WASMCM_PLUGINS=$PWD/plugin.yaml make -C {} run", c.display()),
        None => format!("{wasmcm} run --plugins plugin.yaml"),
    };
    out.push_str(&format!(
        "next:\n  cd {}\n  {test}\n  {build}\n  \
         {wasmcm} simulate --plugin {wasm} --state snapshot.yaml --key default/example\n  {make}\n",
        plan.dir.display()
    ));
    if plan.kind.custom {
        out.push_str("  kubectl apply -f deploy/crd.yaml -f deploy/example.yaml    # with the KUBECONFIG it prints\n");
    }
    out.push_str("README.md has each step.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(name: &str) -> Options {
        Options { name: name.into(), ..Options::default() }
    }

    #[test]
    fn names_must_be_crate_names_and_dns_labels() {
        check_name("my-plugin").unwrap();
        check_name("widgets2").unwrap();
        for (bad, why) in [
            ("", "empty"),
            ("My-Plugin", "lowercase"),
            ("my_plugin", "lowercase letters, digits and '-'"),
            ("2fast", "start with a letter"),
            ("trailing-", "end with a letter or digit"),
            ("fn", "keyword"),
            ("test", "reserved"),
            ("replicaset", "built-in plugin"),
            ("wasmcm-guest", "dependency"),
        ] {
            let err = check_name(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
            assert!(err.starts_with(&format!("invalid plugin name {bad:?}")), "{err}");
        }
        assert!(check_name(&"a".repeat(64)).unwrap_err().contains("63"));
    }

    #[test]
    fn kinds_parse_and_malformed_ones_are_explained() {
        let k = parse_kind("example.com/v1alpha1/Widget").unwrap();
        assert_eq!(
            (k.group.as_str(), k.version.as_str(), k.kind.as_str(), k.custom),
            ("example.com", "v1alpha1", "Widget", true)
        );
        assert_eq!(k.api_version(), "example.com/v1alpha1");
        let core = parse_kind("v1/ConfigMap").unwrap();
        assert_eq!((core.api_version().as_str(), core.custom), ("v1", false));
        assert!(!parse_kind("apps/v1/Deployment").unwrap().custom);
        assert!(!parse_kind("networking.k8s.io/v1/Ingress").unwrap().custom);
        for (bad, why) in [
            ("Widget", "expected group/version/Kind"),
            ("a/b/c/d", "expected group/version/Kind"),
            ("example.com/1/Widget", "not a Kubernetes API version"),
            ("example.com/v1beta/Widget", "not a Kubernetes API version"),
            ("example.com/v01/Widget", "not a Kubernetes API version"),
            ("example.com/v1/widget", "CamelCase"),
            ("example.com/v1/Wid-get", "CamelCase"),
            ("Example.com/v1/Widget", "group \"Example.com\""),
            ("widgets/v1/Widget", "with a dot"),
        ] {
            let err = parse_kind(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
            assert!(err.starts_with(&format!("invalid --kind {bad:?}")), "{err}");
        }
    }

    #[test]
    fn a_non_empty_directory_or_a_wrong_sdk_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keep.txt"), "mine").unwrap();
        let err = create(&Options { dir: Some(dir.path().into()), ..options("my-plugin") }).unwrap_err();
        assert!(err.contains("exists and is not empty"), "{err}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["keep.txt"]);
        let err = plan(&Options { sdk: Some(dir.path().into()), ..options("my-plugin") }).unwrap_err();
        assert!(err.starts_with("--sdk ") && err.contains("cannot read"), "{err}");
        std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"other\"\n").unwrap();
        let err = plan(&Options { sdk: Some(dir.path().into()), ..options("my-plugin") }).unwrap_err();
        assert!(err.contains("is not the wasmcm-guest crate"), "{err}");
    }

    #[test]
    fn the_default_kind_is_a_custom_one_named_after_the_plugin() {
        let plan = super::plan(&options("my-plugin")).unwrap();
        assert_eq!(plan.kind, parse_kind("example.com/v1alpha1/MyPlugin").unwrap());
        let file = |f: &str| &plan.files.iter().find(|(p, _)| p == f).unwrap_or_else(|| panic!("{f}")).1;
        assert!(file("deploy/crd.yaml").contains("name: myplugins.example.com"));
        assert!(file("src/lib.rs").contains("pub struct MyPluginController;"));
        assert!(file("src/lib.rs").contains("name: \"my-plugin\".into()"));
        assert!(file("plugin.yaml").contains("file: target/wasm32-unknown-unknown/release/my_plugin.wasm"));
        assert!(file("snapshot.yaml").contains("- apiVersion: apiextensions.k8s.io/v1"));
        assert!(
            super::plan(&Options { plural: Some("Bad_Plural".into()), ..options("x") })
                .unwrap_err()
                .contains("--plural")
        );
        let builtin = super::plan(&Options { kind: Some("v1/ConfigMap".into()), ..options("cm") }).unwrap();
        let files: Vec<&str> = builtin.files.iter().map(|(p, _)| p.as_str()).collect();
        assert!(!files.contains(&"deploy/crd.yaml"), "{files:?}");
        assert!(
            super::plan(&Options { kind: Some("v1/ConfigMap".into()), plural: Some("cms".into()), ..options("cm") })
                .is_err()
        );
    }

    /// The workspace's settings reach the scaffold as they are, not restated.
    #[test]
    fn the_workspace_settings_are_carried_over() {
        let plan = plan(&Options {
            sdk: Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-controllers/sdk")),
            ..options("p")
        })
        .unwrap();
        let file = |f: &str| &plan.files.iter().find(|(p, _)| p == f).unwrap().1;
        let cargo = file("Cargo.toml");
        for line in [
            "opt-level = \"s\"",
            "lto = true",
            "codegen-units = 1",
            "panic = \"abort\"",
            "strip = true",
            "debug = false",
        ] {
            assert!(cargo.contains(line), "{line} in\n{cargo}");
        }
        assert!(cargo.contains("serde_json = \"1\""), "{cargo}");
        assert!(!cargo.contains("k8s-openapi"), "the SDK's re-export is used: {cargo}");
        assert!(cargo.contains(&format!("wasmcm-guest = {{ version = \"{SDK_VERSION}\", path = \"/")), "{cargo}");
        assert!(cargo.contains("\n[workspace]\n"), "{cargo}");
        assert!(cargo.contains("crate-type = [\"cdylib\", \"rlib\"]"), "{cargo}");
        let config = file(".cargo/config.toml");
        assert!(config.contains("linker = \"wasm-component-ld\""), "{config}");
        assert!(config.contains("link-arg=-zstack-size="), "{config}");
        assert!(file("rust-toolchain.toml").contains("wasm32-unknown-unknown"));
        // Rendering is a pure function of the options: same input, same bytes.
        let again = super::plan(&Options { sdk: plan.sdk.clone(), ..options("p") }).unwrap();
        assert_eq!(plan.files, again.files);
    }
}
