//! What a plugin built with its toolchain's WASI stubs was calling when it trapped.
//!
//! A Python component built with `componentize-py --stub-wasi` (and a JavaScript one with
//! `jco componentize --disable all`) imports nothing but the contract: every WASI function its
//! language's runtime links is a stub that executes `unreachable`. The SDKs turn the common calls
//! (a clock, randomness, files) into errors before they reach a stub; whatever else reaches one
//! (`datetime.now()`, a module imported for the first time during a call) would trap as a bare
//! `unreachable`. The backtrace's frame names (componentize-py keeps its name sections) say
//! which WASI function was called; this module turns them into a message that says what the
//! sandbox does not offer and what to use instead.
//!
//! Owns the table of frame names; the trap's classification stays in the engine.

/// What a plugin's runtime reached for, by the names of the frames that reach a stub, and what
/// to say. The first row with a frame whose name contains its needle wins, frames scanned from
/// the trap outwards; imports come first, since an import stats files whatever else it does.
const STUBBED: &[(&str, &str)] = &[
    (
        "PyImport_",
        "imports once a call has begun (the interpreter's snapshot holds the modules imported with the \
         plugin's module, and there are no files to import others from): import every module the plugin uses \
         at the top of its module",
    ),
    ("wall_clock", "the clock (plugins have none, so that a replay gives the same writes): use the request's `now`"),
    (
        "monotonic_clock",
        "the clock (plugins have none, so that a replay gives the same writes): use the request's `now`",
    ),
    ("clock_", "the clock (plugins have none, so that a replay gives the same writes): use the request's `now`"),
    (
        "random",
        "randomness (the same request and cache must give the same writes): derive values from the request and \
         the objects, or let the API server name objects with metadata.generateName",
    ),
    ("getentropy", "randomness (the same request and cache must give the same writes): derive values from the request"),
    (
        "filesystem",
        "files (plugins have none): read the cluster through the cache and configuration from the manifest's \
         settings (the request's `settings`)",
    ),
    ("preopen", "files (plugins have none): read the cluster through the cache and settings from the request"),
    ("environ", "the process environment (plugins have none): configuration comes in the request's `settings`"),
    ("sockets", "the network (plugins have none): the host performs the writes a reconcile returns"),
    ("stdout", "standard output (plugins have none): log through the SDK's log, which the host's log shows"),
    ("stderr", "standard error (plugins have none): log through the SDK's log, which the host's log shows"),
    ("stdin", "standard input (plugins have none)"),
    ("terminal", "a terminal (plugins have none)"),
    ("exit", "process exit (plugins have none): return an error from reconcile instead"),
];

/// Frames of a WASI libc that only ever call into WASI: a trap in a stub below one of these is
/// the plugin's runtime asking for what the sandbox does not have.
const WASI_LIBC: &str = "libc.so!";

/// The message for an `unreachable` trap in a WASI stub, from the names of the backtrace's
/// frames (innermost first, as `module!function`); `None` when no frame is a WASI libc's, i.e.
/// the trap is the plugin's own.
pub(crate) fn stubbed_call(frames: &[String]) -> Option<String> {
    // The stub itself is nameless; what called it is the first named frame, a libc function.
    let caller = frames.iter().find(|f| !f.starts_with("<unknown>!"))?;
    if !caller.starts_with(WASI_LIBC) {
        return None;
    }
    let what = STUBBED
        .iter()
        .find(|(needle, _)| frames.iter().any(|f| f.contains(needle)))
        .map(|(_, what)| *what)
        .unwrap_or("WASI function (a plugin imports only its contract)");
    Some(format!(
        "the plugin called {caller}, a stub of the sandbox: the sandbox offers no {what}",
        caller = caller.trim_start_matches(WASI_LIBC)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_stub_is_named_by_its_libc_caller_and_the_advice_by_what_asked() {
        let clock = frames(&["<unknown>!<wasm function 1>", "libc.so!wall_clock_now", "libpython3.14.so!time_time"]);
        let msg = stubbed_call(&clock).expect("a stub");
        assert!(msg.starts_with("the plugin called wall_clock_now, a stub of the sandbox"), "{msg}");
        assert!(msg.contains("use the request's `now`"), "{msg}");
        let import = frames(&[
            "<unknown>!<wasm function 0>",
            "libc.so!filesystem_preopens_get_directories",
            "libc.so!stat",
            "libpython3.14.so!PyImport_ImportModuleLevelObject",
        ]);
        let msg = stubbed_call(&import).expect("a stub");
        assert!(
            msg.starts_with(
                "the plugin called filesystem_preopens_get_directories, a stub of the sandbox: the sandbox offers no \
                 imports once a call has begun"
            ) && msg.ends_with("import every module the plugin uses at the top of its module"),
            "imports first: {msg}"
        );
        let unknown = frames(&["<unknown>!<wasm function 3>", "libc.so!something_new"]);
        assert_eq!(
            stubbed_call(&unknown).expect("a stub"),
            "the plugin called something_new, a stub of the sandbox: the sandbox offers no WASI function (a plugin \
             imports only its contract)"
        );
        // The plugin's own unreachable (a Rust panic, a failed assertion) is not a stub's.
        assert_eq!(stubbed_call(&frames(&["website.wasm!core::panicking::panic"])), None);
        assert_eq!(stubbed_call(&frames(&["<unknown>!<wasm function 3>"])), None);
    }
}
