//! `wasmcm new --lang python`: a plugin in Python on the SDK `guest-controllers/sdk-python`
//! (package `wasmcm_guest`), built into a component by componentize-py with `--stub-wasi`, so it
//! imports nothing but the contract. Its files: `controller.py` (the plugin), `test_controller.py`
//! (unit tests, `python3 -m unittest` against the SDK's `MemoryCache`), `build.sh` and `test.sh`,
//! `wit/reconciler.wit` (the contract, this build's own) and the files every language shares.
//!
//! Owns `host/templates/python/`. The componentize-py version is read from
//! `scripts/install-componentize-py.sh`, which pins it, and the build runs that script from the
//! checkout this binary was built from, so a scaffold builds with the tool `make test` uses.

use std::path::{Path, PathBuf};

use super::{Context, Plan, checkout};

const T_GITIGNORE: &str = include_str!("../../templates/python/gitignore.tmpl");
const T_README: &str = include_str!("../../templates/python/README.md.tmpl");
const T_BUILD: &str = include_str!("../../templates/python/build.sh.tmpl");
const T_TEST: &str = include_str!("../../templates/python/test.sh.tmpl");
const T_CONTROLLER: &str = include_str!("../../templates/python/controller.py.tmpl");
const T_TEST_CONTROLLER: &str = include_str!("../../templates/python/test_controller.py.tmpl");
/// The contract, as the Rust plugins' (`wasmcm:reconciler`, this build's version).
const WIT: &str = include_str!("../../../wit/reconciler.wit");
const INSTALL_SCRIPT: &str = include_str!("../../../scripts/install-componentize-py.sh");

/// The componentize-py version the project pins.
pub(crate) fn componentize_py_version() -> Option<&'static str> {
    INSTALL_SCRIPT.lines().find_map(|l| l.strip_prefix("readonly VERSION=\"")?.strip_suffix('"'))
}

/// The SDK directory given with `--sdk`: it must hold the `wasmcm_guest` package.
pub(super) fn check_sdk(path: &Path) -> Result<PathBuf, String> {
    let package = path.join("wasmcm_guest/__init__.py");
    if !package.is_file() {
        return Err(format!(
            "--sdk {}: no {}: not the Python SDK (<wasmcm checkout>/guest-controllers/sdk-python)",
            path.display(),
            package.display()
        ));
    }
    path.canonicalize().map_err(|e| format!("--sdk {}: {e}", path.display()))
}

/// The SDK of the checkout this binary was built from, if it is still there.
pub(super) fn default_sdk() -> Option<PathBuf> {
    check_sdk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-controllers/sdk-python")).ok()
}

/// Where `build.sh` writes the component, relative to the plugin's directory.
pub(super) fn component(name: &str) -> String {
    format!("build/{}.wasm", name.replace('-', "_"))
}

/// A string for a POSIX shell, single-quoted.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The files of the scaffold.
pub(super) fn render(context: &Context) -> Result<Vec<(String, String)>, String> {
    let version = componentize_py_version()
        .ok_or("this wasmcm build lacks the componentize-py version in scripts/install-componentize-py.sh (a bug)")?;
    let sdk = context.sdk.map(|p| shell_quote(&p.display().to_string())).unwrap_or_else(|| "''".into());
    let install = checkout()
        .map(|c| shell_quote(&c.join("scripts/install-componentize-py.sh").display().to_string()))
        .unwrap_or_else(|| "''".into());
    let vars = [("sdk", sdk), ("install", install), ("componentize_py_version", version.to_string())];
    let fill = |template: &str| context.fill(template, &vars);
    let mut files = vec![
        (".gitignore".to_string(), fill(T_GITIGNORE)?),
        ("README.md".into(), fill(T_README)?),
        ("build.sh".into(), fill(T_BUILD)?),
        ("test.sh".into(), fill(T_TEST)?),
        ("wit/reconciler.wit".into(), WIT.to_string()),
    ];
    files.extend(context.shared_files()?);
    files.push(("controller.py".into(), fill(T_CONTROLLER)?));
    files.push(("test_controller.py".into(), fill(T_TEST_CONTROLLER)?));
    Ok(files)
}

/// What `create` says about the SDK, if anything.
pub(super) fn note(sdk: Option<&Path>) -> Option<String> {
    match sdk {
        Some(_) => None,
        None => Some(
            "no SDK: build.sh and test.sh need WASMCM_PYTHON_SDK=<wasmcm checkout>/guest-controllers/sdk-python \
             (or give --sdk)"
                .into(),
        ),
    }
}

/// The build and test commands `next_steps` prints.
pub(super) fn steps(_plan: &Plan) -> (&'static str, &'static str) {
    ("./build.sh", "./test.sh")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_componentize_py_version_is_found() {
        let version = componentize_py_version().expect("a version");
        assert!(version.split('.').count() == 3 && version.split('.').all(|p| p.parse::<u32>().is_ok()), "{version}");
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
    }
}
