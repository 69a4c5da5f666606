//! The guest's `log` import: a plugin's lines go to the host's log under its name and key,
//! clipped and capped per call, and a panic message is kept for the trap that follows.
//!
//! It owns the log import only.

use super::call::CallState;
use super::wit::wit_log;

/// Longest plugin log line or error message kept: a plugin cannot flood the host's logs (or
/// the events an error ends up in) with one call.
const MAX_LOG_LINE: usize = 4096;

/// Log output one call may write; past it, lines are dropped (after one warning).
const MAX_LOG_LINES_PER_CALL: usize = 100;
const MAX_LOG_BYTES_PER_CALL: usize = 64 << 10;

pub(super) fn clip(mut message: String) -> String {
    if message.len() > MAX_LOG_LINE {
        let mut end = MAX_LOG_LINE;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

impl wit_log::Host for CallState {
    fn log(&mut self, level: wit_log::Level, message: String) -> wasmtime::Result<()> {
        let level = match level {
            wit_log::Level::Trace => wasmcm_guest::Level::Trace,
            wit_log::Level::Debug => wasmcm_guest::Level::Debug,
            wit_log::Level::Info => wasmcm_guest::Level::Info,
            wit_log::Level::Warn => wasmcm_guest::Level::Warn,
            wit_log::Level::Error => wasmcm_guest::Level::Error,
        };
        self.write_log(level, message);
        Ok(())
    }
}

impl CallState {
    /// `log.log`, in either contract.
    pub(super) fn write_log(&mut self, level: wasmcm_guest::Level, message: String) {
        use wasmcm_guest::Level;
        let message = clip(message);
        let (plugin, key) = (&*self.plugin, &self.key);
        // A panic message is kept whatever came before it: it is what the trap reports.
        let panicked = level == Level::Error && message.starts_with("panicked");
        let (lines, bytes, dropping) = self.logged;
        let over = lines >= MAX_LOG_LINES_PER_CALL || bytes + message.len() > MAX_LOG_BYTES_PER_CALL;
        if over && !panicked {
            if !dropping {
                tracing::warn!(
                    plugin,
                    key,
                    "this call logged more than {MAX_LOG_LINES_PER_CALL} lines or {} KiB; the rest are dropped",
                    MAX_LOG_BYTES_PER_CALL >> 10
                );
            }
            self.logged.2 = true;
            return;
        }
        self.logged = (lines + 1, bytes + message.len(), dropping);
        match level {
            Level::Trace => tracing::trace!(plugin, key, "{message}"),
            Level::Debug => tracing::debug!(plugin, key, "{message}"),
            Level::Info => tracing::info!(plugin, key, "{message}"),
            Level::Warn => tracing::warn!(plugin, key, "{message}"),
            Level::Error => tracing::error!(plugin, key, "{message}"),
        }
        if panicked {
            self.panic = Some(message);
        }
    }
}
