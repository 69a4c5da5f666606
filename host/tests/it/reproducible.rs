//! What `build.rs` generates is the same on every build of a commit, wherever it is built: the
//! guest components name no path of the machine that built them. (The API server's protobuf
//! schema has its own test in apiserver/tests/it/protobuf.rs.)

use std::path::{Path, PathBuf};

/// Panic locations name source files: with this checkout's or this cargo home's path in them,
/// another machine would build other bytes, and every built-in's digest would differ.
#[test]
fn guest_components_name_no_path_of_this_machine() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().display().to_string();
    let home = std::env::var("HOME").unwrap_or_default();
    let cargo_home = std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{home}/.cargo"));
    let mut guests: Vec<PathBuf> =
        std::fs::read_dir(env!("WASMCM_GUEST_DIR")).unwrap().map(|e| e.unwrap().path()).collect();
    guests.sort();
    assert!(guests.len() >= 5, "{guests:?}");
    for guest in guests {
        let bytes = std::fs::read(&guest).unwrap();
        for path in [&root, &cargo_home] {
            let found = bytes.windows(path.len()).any(|w| w == path.as_bytes());
            assert!(!found, "{} holds the path {path}", guest.display());
        }
        // The remapped prefixes are there instead (a panic location of a registry crate).
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("/cargo/registry/src/"), "{} names no registry source", guest.display());
    }
}
