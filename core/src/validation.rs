//! Name and label formats as `k8s.io/apimachinery/pkg/util/validation` checks them, with its
//! messages: each function returns the errors of a value, none when it is valid. The API
//! server's validation and the host's checks of plugin and manifest names share them, as they
//! share [`NameFormat`], the format each kind's `metadata.name` must have (also what keeps a
//! name a single URL path segment before the host puts it in one).

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

/// `pkg/api/validation/path.IsValidPathSegmentName` (and `...Prefix` for generateName): what a
/// name must be to stand as one segment of a URL path.
pub fn path_segment(s: &str, prefix: bool) -> Vec<String> {
    if !prefix && (s == "." || s == "..") {
        return vec![format!("may not be '{s}'")];
    }
    ["/", "%"].iter().filter(|c| s.contains(**c)).map(|c| format!("may not contain '{c}'")).collect()
}

/// The format upstream's validation of a kind requires of `metadata.name` (its
/// `ValidateNameFunc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameFormat {
    /// `NameIsDNSSubdomain`: most kinds, custom resources included.
    Subdomain,
    /// `NameIsDNSLabel`: Namespaces.
    Label,
    /// `NameIsDNS1035Label`: Services (starts with a letter).
    Dns1035,
    /// `path.ValidatePathSegmentName`: RBAC kinds, APIServices, core/v1 Events.
    PathSegment,
}

impl NameFormat {
    /// The format of the built-in kind `kind` of API group `group` (`""` for the core group);
    /// any other kind's is [`NameFormat::Subdomain`], as the generic registry checks.
    pub fn of(group: &str, kind: &str) -> NameFormat {
        match (group, kind) {
            ("", "Namespace") => NameFormat::Label,
            ("", "Service") => NameFormat::Dns1035,
            ("", "Event") | ("apiregistration.k8s.io", "APIService") => NameFormat::PathSegment,
            ("rbac.authorization.k8s.io", "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding") => {
                NameFormat::PathSegment
            }
            _ => NameFormat::Subdomain,
        }
    }

    /// The errors of `name`; of a generateName when `prefix`, which upstream checks as if
    /// completed: without its trailing dash and the character before it, and an `a` appended.
    pub fn errors(self, name: &str, prefix: bool) -> Vec<String> {
        let masked;
        let name = if prefix && self != NameFormat::PathSegment && name.len() > 1 && name.ends_with('-') {
            masked = format!("{}a", name.get(..name.len() - 2).unwrap_or(name));
            masked.as_str()
        } else {
            name
        };
        match self {
            NameFormat::Subdomain => dns1123_subdomain(name),
            NameFormat::Label => dns1123_label(name),
            NameFormat::Dns1035 => dns1035_label(name),
            NameFormat::PathSegment => path_segment(name, prefix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_by_kind() {
        assert_eq!(NameFormat::of("", "Namespace").errors("a.b", false), vec!["must not contain dots".to_string()]);
        assert!(NameFormat::of("apps", "Deployment").errors("a.b", false).is_empty());
        assert_eq!(NameFormat::of("", "Service").errors("1a", false).len(), 1);
        let role = NameFormat::of("rbac.authorization.k8s.io", "ClusterRole");
        assert!(role.errors("system:controller:x", false).is_empty());
        assert_eq!(role.errors("a/b%c", false), ["may not contain '/'", "may not contain '%'"]);
        assert_eq!(role.errors("..", false), ["may not be '..'"]);
        assert!(role.errors("..", true).is_empty());
        // A generateName is checked as completed; a subdomain never holds '/' or '%'.
        assert!(NameFormat::Subdomain.errors("web-", true).is_empty());
        assert_eq!(NameFormat::Label.errors("-", true).len(), 1);
        for bad in ["a/b", "a%2F", "..", "."] {
            assert!(!NameFormat::Subdomain.errors(bad, false).is_empty(), "{bad}");
        }
    }
}
