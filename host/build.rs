//! Builds the guest components (built-in plugins and the sandbox-test guests) with one nested
//! cargo for wasm32-unknown-unknown, into their own target dir (`target/guests`) so it never
//! waits on the outer build's lock, and copies them into OUT_DIR for the host crate
//! (`WASMCM_GUEST_DIR`).

use std::path::PathBuf;
use std::process::Command;

/// The component crates. A controller another plugin builds on (deployment, under rollback) is
/// a library with a separate component crate: a component exports what every crate it links
/// exports.
const GUESTS: &[&str] = &[
    "wasmcm-replicaset",
    "wasmcm-deployment-plugin",
    "wasmcm-rollback",
    "wasmcm-job-plugin",
    "wasmcm-cronjob-plugin",
    "wasmcm-ttlafterfinished",
    "wasmcm-hostile",
    "wasmcm-stamp",
    "wasmcm-legacy",
];
const TARGET: &str = "wasm32-unknown-unknown";

fn main() {
    let host_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = host_dir.parent().expect("host/ lives in the workspace root").to_path_buf();
    for watched in ["guest-controllers", "tests/guests", "wit", "Cargo.toml", "Cargo.lock", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    // The guests' path remaps name these (see `remaps`).
    println!("cargo:rerun-if-env-changed=CARGO_HOME");
    println!("cargo:rerun-if-env-changed=HOME");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));

    let target_dir = root.join("target").join("guests");
    let built = target_dir.join(TARGET).join("guest");
    let out = out_dir.join("guests");
    std::fs::create_dir_all(&out).expect("cannot create the guests directory in OUT_DIR");
    build_guests(&cargo, &root, &target_dir);
    for guest in GUESTS {
        let file = format!("{}.wasm", guest.replace('-', "_"));
        if let Err(e) = std::fs::copy(built.join(&file), out.join(&file)) {
            panic!("cannot copy the guest component {file} from {}: {e}", built.display());
        }
    }
    println!("cargo:rustc-env=WASMCM_GUEST_DIR={}", out.display());
}

/// One cargo for all: shared dependencies are built once, and two components link at a time.
fn build_guests(cargo: &str, root: &std::path::Path, target_dir: &std::path::Path) {
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["build", "--locked", "--profile", "guest", "--target", TARGET, "--target-dir"])
        .arg(target_dir)
        .args(GUESTS.iter().flat_map(|guest| ["-p", guest]))
        // Panic locations name source files by absolute path: the checkout's and the cargo
        // home's (registry sources) differ between machines, and so would the components'
        // bytes and digests. Joined to .cargo/config.toml's flags for the target.
        .arg("--config")
        .arg(format!("target.{TARGET}.rustflags = {}", toml_strings(&remaps(root))));
    // What the outer build sets for the host must not leak into the guests' build: a clippy
    // or coverage wrapper, host rustflags, a forced target.
    for var in [
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_MAKEFLAGS",
        "MAKEFLAGS",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("cannot run cargo to build the guest plugins");
    if !status.success() {
        panic!(
            "building the guest plugins for {TARGET} failed (see above). If the target is missing, \
             run `rustup toolchain install` in the repository: rust-toolchain.toml names it."
        );
    }
}

/// `--remap-path-prefix` flags that name the checkout `/wasmcm` and the cargo home `/cargo`.
fn remaps(root: &std::path::Path) -> Vec<String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let cargo_home = std::env::var_os("CARGO_HOME").map(PathBuf::from).or_else(|| home.map(|h| h.join(".cargo")));
    let mut flags = vec![format!("--remap-path-prefix={}=/wasmcm", root.display())];
    if let Some(cargo_home) = cargo_home {
        flags.push(format!("--remap-path-prefix={}=/cargo", cargo_home.display()));
    }
    flags
}

/// A TOML array of strings (paths may hold quotes or backslashes).
fn toml_strings(items: &[String]) -> String {
    let quoted: Vec<String> =
        items.iter().map(|s| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))).collect();
    format!("[{}]", quoted.join(", "))
}
