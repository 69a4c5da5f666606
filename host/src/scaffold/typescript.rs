//! `wasmcm new --lang typescript`: the hook for the TypeScript scaffold (templates under
//! `host/templates/typescript/`, SDK `guest-controllers/sdk-typescript/`). Until it lands,
//! `plan` refuses the language with a clear message; it touches nothing else.

use std::path::{Path, PathBuf};

use super::{Context, Plan};

/// The SDK directory given with `--sdk`.
pub(super) fn check_sdk(path: &Path) -> Result<PathBuf, String> {
    path.canonicalize().map_err(|e| format!("--sdk {}: {e}", path.display()))
}

/// The SDK of the checkout this binary was built from, if it is still there.
pub(super) fn default_sdk() -> Option<PathBuf> {
    check_sdk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-controllers/sdk-typescript")).ok()
}

/// Where the build writes the component, relative to the plugin's directory.
pub(super) fn component(name: &str) -> String {
    format!("dist/{name}.wasm")
}

/// The files of the scaffold.
pub(super) fn render(_context: &Context) -> Result<Vec<(String, String)>, String> {
    Err("--lang typescript: not available in this wasmcm build yet (rust and python are)".into())
}

/// What `create` says about the SDK, if anything.
pub(super) fn note(_sdk: Option<&Path>) -> Option<String> {
    None
}

/// The build and test commands `next_steps` prints.
pub(super) fn steps(_plan: &Plan) -> (&'static str, &'static str) {
    ("npm run build", "npm test")
}
