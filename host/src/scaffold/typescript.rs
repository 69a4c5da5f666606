//! `wasmcm new --lang typescript`: a plugin in TypeScript on the SDK
//! `guest-controllers/sdk-typescript` (`@wasmcm/guest`), an npm package built into a component by
//! the SDK's `wasmcm-componentize` (rolldown, then componentize-js with every WASI feature
//! disabled), so it imports nothing but the contract. Its files: `src/index.ts` (the plugin),
//! `src/component.ts` (the component's entry), `src/index.test.ts` (unit tests, `node --test`
//! against the SDK's `MemoryCache`), `package.json`, `package-lock.json`, `tsconfig.json` and the
//! files every language shares.
//!
//! Owns `host/templates/typescript/`. The toolchain's versions and lock are this repository's
//! own (`scripts/js-tools/package.json` and `package-lock.json`, which `make test` installs and
//! tests with), read at compile time: the scaffold's lock is that lock plus the SDK, linked by
//! path, so `npm ci` installs exactly what the repository tested, offline from npm's cache when
//! it holds them.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{Context, Plan};

const T_GITIGNORE: &str = include_str!("../../templates/typescript/gitignore.tmpl");
const T_README: &str = include_str!("../../templates/typescript/README.md.tmpl");
const T_TSCONFIG: &str = include_str!("../../templates/typescript/tsconfig.json.tmpl");
const T_INDEX: &str = include_str!("../../templates/typescript/index.ts.tmpl");
const T_COMPONENT: &str = include_str!("../../templates/typescript/component.ts.tmpl");
const T_INDEX_TEST: &str = include_str!("../../templates/typescript/index.test.ts.tmpl");
/// The toolchain, pinned: every TypeScript plugin's devDependencies and their lock.
const TOOLS_PACKAGE: &str = include_str!("../../../scripts/js-tools/package.json");
const TOOLS_LOCK: &str = include_str!("../../../scripts/js-tools/package-lock.json");

/// The SDK directory given with `--sdk`: it must hold the `@wasmcm/guest` package.
pub(super) fn check_sdk(path: &Path) -> Result<PathBuf, String> {
    let manifest = path.join("package.json");
    let package = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .filter(|p| p["name"] == "@wasmcm/guest");
    if package.is_none() {
        return Err(format!(
            "--sdk {}: {} is not the @wasmcm/guest package (<wasmcm checkout>/guest-controllers/sdk-typescript)",
            path.display(),
            manifest.display()
        ));
    }
    path.canonicalize().map_err(|e| format!("--sdk {}: {e}", path.display()))
}

/// The SDK of the checkout this binary was built from, if it is still there.
pub(super) fn default_sdk() -> Option<PathBuf> {
    check_sdk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-controllers/sdk-typescript")).ok()
}

/// Where `npm run build` writes the component, relative to the plugin's directory.
pub(super) fn component(name: &str) -> String {
    format!("build/{name}.wasm")
}

/// `to` relative to `from`, both absolute (`../../sdk`), as npm writes a linked package's path
/// in a lock.
fn relative(from: &Path, to: &Path) -> String {
    let normal = |p: &Path| -> Vec<String> {
        let mut parts: Vec<String> = Vec::new();
        for c in p.components() {
            match c {
                Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
                Component::ParentDir => {
                    parts.pop();
                }
                _ => {}
            }
        }
        parts
    };
    let (from, to) = (normal(from), normal(to));
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let up = std::iter::repeat_n("..".to_string(), from.len() - common);
    let path: Vec<String> = up.chain(to[common..].iter().cloned()).collect();
    if path.is_empty() { ".".into() } else { path.join("/") }
}

/// The toolchain's pinned devDependencies.
fn tool_dependencies() -> Result<Map<String, Value>, String> {
    let tools: Value =
        serde_json::from_str(TOOLS_PACKAGE).map_err(|e| format!("scripts/js-tools/package.json: {e} (a bug)"))?;
    tools["devDependencies"]
        .as_object()
        .cloned()
        .ok_or_else(|| "scripts/js-tools/package.json has no devDependencies (a bug)".to_string())
}

/// `package.json`: the scripts, the SDK by path and the pinned toolchain.
fn package_json(name: &str, sdk: Option<&Path>) -> Result<String, String> {
    let mut dependencies = tool_dependencies()?;
    let guest = match sdk {
        Some(sdk) => format!("file:{}", sdk.display()),
        None => format!("^{}", super::SDK_VERSION),
    };
    dependencies.insert("@wasmcm/guest".into(), Value::String(guest));
    let package = json!({
        "name": name,
        "version": "0.1.0",
        "private": true,
        "type": "module",
        "scripts": {
            "build": format!("tsc -b && wasmcm-componentize dist/component.js -o {}", component(name)),
            "test": "tsc -b && node --test dist/",
        },
        "devDependencies": dependencies,
    });
    serde_json::to_string_pretty(&package).map(|s| s + "\n").map_err(|e| e.to_string())
}

/// `package-lock.json`: the toolchain's lock, with this package at its root and the SDK linked
/// from `dir` (the plugin's directory, absolute) as npm itself writes a `file:` dependency.
fn package_lock(name: &str, dir: &Path, sdk: &Path) -> Result<String, String> {
    let mut lock: Value =
        serde_json::from_str(TOOLS_LOCK).map_err(|e| format!("scripts/js-tools/package-lock.json: {e} (a bug)"))?;
    let sdk_package: Value = std::fs::read_to_string(sdk.join("package.json"))
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        .map_err(|e| format!("{}: {e}", sdk.join("package.json").display()))?;
    let linked = relative(dir, sdk);
    let mut dependencies = tool_dependencies()?;
    dependencies.insert("@wasmcm/guest".into(), Value::String(format!("file:{}", sdk.display())));
    let packages =
        lock["packages"].as_object_mut().ok_or("scripts/js-tools/package-lock.json has no packages (a bug)")?;
    packages.insert("".into(), json!({"name": name, "version": "0.1.0", "devDependencies": dependencies}));
    packages.insert("node_modules/@wasmcm/guest".into(), json!({"resolved": linked, "link": true}));
    let mut target = json!({"name": sdk_package["name"], "version": sdk_package["version"], "dev": true});
    for field in ["license", "bin"] {
        if !sdk_package[field].is_null() {
            target[field] = sdk_package[field].clone();
        }
    }
    packages.insert(linked, target);
    lock["name"] = Value::String(name.into());
    lock["version"] = Value::String("0.1.0".into());
    serde_json::to_string_pretty(&lock).map(|s| s + "\n").map_err(|e| e.to_string())
}

/// The files of the scaffold.
pub(super) fn render(context: &Context, name: &str, dir: &Path) -> Result<Vec<(String, String)>, String> {
    let sdk = context
        .sdk
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "<wasmcm checkout>/guest-controllers/sdk-typescript".into());
    let vars = [("sdk", sdk)];
    let fill = |template: &str| context.fill(template, &vars);
    let mut files = vec![
        (".gitignore".to_string(), fill(T_GITIGNORE)?),
        ("README.md".into(), fill(T_README)?),
        ("package.json".into(), package_json(name, context.sdk)?),
    ];
    if let Some(sdk) = context.sdk {
        let dir = std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        files.push(("package-lock.json".into(), package_lock(name, &dir, sdk)?));
    }
    files.push(("tsconfig.json".into(), fill(T_TSCONFIG)?));
    files.extend(context.shared_files()?);
    files.push(("src/index.ts".into(), fill(T_INDEX)?));
    files.push(("src/component.ts".into(), fill(T_COMPONENT)?));
    files.push(("src/index.test.ts".into(), fill(T_INDEX_TEST)?));
    Ok(files)
}

/// What `create` says about the SDK, if anything.
pub(super) fn note(sdk: Option<&Path>) -> Option<String> {
    match sdk {
        Some(_) => None,
        None => Some(
            "no SDK and no package-lock.json: give --sdk <wasmcm checkout>/guest-controllers/sdk-typescript to depend on \
             the SDK by path with the toolchain's lock (npm ci); without it, npm install resolves the versions"
                .into(),
        ),
    }
}

/// The build and test commands `next_steps` prints.
pub(super) fn steps(_plan: &Plan) -> (&'static str, &'static str) {
    ("npm run build", "npm ci && npm test")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_as_npm_writes_them() {
        assert_eq!(
            relative(Path::new("/w/plugins/p"), Path::new("/w/repo/guest-controllers/sdk-typescript")),
            "../../repo/guest-controllers/sdk-typescript"
        );
        assert_eq!(relative(Path::new("/w/a"), Path::new("/w/a/b")), "b");
        assert_eq!(relative(Path::new("/w/a/./c/../"), Path::new("/w/a")), ".");
    }

    #[test]
    fn the_lock_is_the_toolchains_with_the_sdk_linked() {
        let sdk =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-controllers/sdk-typescript").canonicalize().unwrap();
        let lock: Value =
            serde_json::from_str(&package_lock("hello", Path::new("/tmp/x/hello"), &sdk).unwrap()).unwrap();
        let tools: Value = serde_json::from_str(TOOLS_LOCK).unwrap();
        let packages = lock["packages"].as_object().unwrap();
        for (path, entry) in tools["packages"].as_object().unwrap().iter().filter(|(p, _)| !p.is_empty()) {
            assert_eq!(packages.get(path), Some(entry), "{path} as the toolchain pins it");
        }
        let linked = packages["node_modules/@wasmcm/guest"]["resolved"].as_str().unwrap();
        assert!(linked.starts_with("../../") && linked.ends_with("guest-controllers/sdk-typescript"), "{linked}");
        assert_eq!(packages[linked]["name"], "@wasmcm/guest");
        assert_eq!(
            packages[""]["devDependencies"]["typescript"],
            tools["packages"][""]["devDependencies"]["typescript"]
        );
        let package: Value = serde_json::from_str(&package_json("hello", Some(&sdk)).unwrap()).unwrap();
        assert_eq!(package["devDependencies"], packages[""]["devDependencies"], "package.json and its lock agree");
        assert_eq!(package["scripts"]["build"], "tsc -b && wasmcm-componentize dist/component.js -o build/hello.wasm");
    }
}
