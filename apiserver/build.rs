//! Generates the schema of the built-in kinds and their OpenAPI definitions (see
//! build/protobuf_schema.rs).

use std::path::PathBuf;

// The fallback report it also returns is read by tests/it/reproducible.rs.
#[allow(dead_code)]
#[path = "build/protobuf_schema.rs"]
mod protobuf_schema;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = crate_dir.parent().expect("apiserver/ lives in the workspace root").to_path_buf();
    // The registry sources the schema is read from are pinned by Cargo.lock, so only the lock
    // and the generator need watching.
    println!("cargo:rerun-if-changed={}", root.join("Cargo.lock").display());
    println!("cargo:rerun-if-changed={}", crate_dir.join("build/protobuf_schema.rs").display());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    protobuf_schema::generate(
        &cargo,
        &root,
        &out_dir.join("protobuf_schema.rs"),
        &out_dir.join("openapi_definitions.json"),
    );
}
