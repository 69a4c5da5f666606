//! Text that reaches an operator's terminal from a plugin or the cluster (a plugin's version,
//! a Lease's holder, an error a host answered), made inert: every control character is shown
//! as an escape instead of being obeyed, so a plugin cannot clear the screen, move the cursor,
//! retitle the window or forge lines of output.
//!
//! Escaped: the C0 controls (U+0000–U+001F, ESC and so every ANSI sequence included), DEL
//! (U+007F), the C1 controls (U+0080–U+009F, which some terminals obey as 8-bit CSI, OSC...),
//! and the bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069), which reorder
//! what is shown. Each is written as Rust writes it in a string: `\n`, `\r`, `\t`, else
//! `\u{1b}` (hex, no padding); JSON text gets JSON's `\u001b` instead, so it stays JSON. Every
//! other character, a backslash included, is printed as it is.
//!
//! It only formats text; what to print, and where, is the caller's.

use std::borrow::Cow;

/// Whether `c` is shown escaped (see the module doc).
fn escaped(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn escape(text: &str, keep: impl Fn(char) -> bool, write: impl Fn(&mut String, char)) -> Cow<'_, str> {
    if !text.chars().any(|c| escaped(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) && !keep(c) { write(&mut out, c) } else { out.push(c) }
    }
    Cow::Owned(out)
}

fn rust_escape(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
    }
}

/// `text` for one line of a terminal (a table cell, a name): every control character escaped,
/// line breaks too.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    escape(text, |_| false, rust_escape)
}

/// `text` for a terminal, its line breaks kept (a message of several lines); every other
/// control character escaped.
pub fn terminal_safe_lines(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n', rust_escape)
}

/// JSON text (as serde_json writes it) for a terminal, still the same JSON: serde_json escapes
/// the C0 controls but writes DEL, the C1 controls and the bidirectional ones as they are;
/// these become `\u007f`-style escapes. They can only stand inside strings in serde_json's
/// output, where such an escape means the same character.
pub fn terminal_safe_json(json: &str) -> Cow<'_, str> {
    // Line breaks outside strings are serde_json's pretty printing (inside strings it has
    // escaped them already).
    escape(json, |c| c == '\n', |out, c| out.push_str(&format!("\\u{:04x}", u32::from(c))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_not_obeyed() {
        let hostile = "1.0\u{1b}[2J\nforged\r\u{9b}31m\u{7f}\t\u{202e}gnp.exe";
        assert_eq!(terminal_safe(hostile), r"1.0\u{1b}[2J\nforged\r\u{9b}31m\u{7f}\t\u{202e}gnp.exe");
        assert_eq!(terminal_safe_lines(hostile), "1.0\\u{1b}[2J\nforged\\r\\u{9b}31m\\u{7f}\\t\\u{202e}gnp.exe");
        assert!(matches!(terminal_safe("plain 1.0.0 ü \\ \"x\""), Cow::Borrowed(_)), "nothing to escape, no copy");
    }

    #[test]
    fn json_stays_the_same_json() {
        let value = serde_json::json!({"version": "1.0\u{1b}[2J\n\u{9b}31m\u{7f}\u{2066}", "ok": "ü"});
        let text = serde_json::to_string_pretty(&value).unwrap();
        assert!(text.contains('\u{9b}'), "serde_json leaves C1 controls raw: {text:?}");
        let safe = terminal_safe_json(&text);
        assert!(!safe.chars().any(|c| c.is_control() && c != '\n'), "{safe:?}");
        assert!(safe.contains(r"\u009b31m\u007f\u2066"), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), value);
    }
}
