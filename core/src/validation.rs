//! Name and label formats as `k8s.io/apimachinery/pkg/util/validation` checks them, with its
//! messages: each function returns the errors of a value, none when it is valid. The API
//! server's validation and the host's checks of plugin and manifest names share them.

pub const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
pub const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
pub const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
pub const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
pub const QUALIFIED_NAME_MSG: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let examples: String =
        examples.iter().enumerate().map(|(i, e)| format!("{}'{e}', ", if i > 0 { " or " } else { "" })).collect();
    format!("{msg} (e.g. {examples}regex used for validation is '{fmt}')")
}

pub fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn is_alnum_lower(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn dns_label_ok(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter().all(|c| is_alnum_lower(*c) || *c == b'-')
        && is_alnum_lower(b[0])
        && is_alnum_lower(b[b.len() - 1])
}

fn dns_subdomain_ok(s: &str) -> bool {
    s.split('.').all(dns_label_ok)
}

pub fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !dns_label_ok(s) {
        errs.push(if dns_subdomain_ok(s) {
            "must not contain dots".into()
        } else {
            let msg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and \
                must start and end with an alphanumeric character";
            regex_error(msg, DNS1123_LABEL_FMT, &["my-name", "123-abc"])
        });
    }
    errs
}

pub fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len(253));
    }
    if !dns_subdomain_ok(s) {
        let msg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', \
            and must start and end with an alphanumeric character";
        errs.push(regex_error(msg, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

pub fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !(dns_label_ok(s) && s.as_bytes()[0].is_ascii_lowercase()) {
        let msg = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an \
            alphabetic character, and end with an alphanumeric character";
        errs.push(regex_error(msg, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errs
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`: label key names and label values.
fn qualified_part_ok(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

pub fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".into());
            } else {
                errs.extend(dns1123_subdomain(prefix).into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len(63)));
    }
    if !qualified_part_ok(name) {
        errs.push(format!(
            "name part {}",
            regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

pub fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !s.is_empty() && !qualified_part_ok(s) {
        let msg = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', \
            and must start and end with an alphanumeric character";
        errs.push(regex_error(msg, "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", &["MyValue", "my_value", "12345"]));
    }
    errs
}
