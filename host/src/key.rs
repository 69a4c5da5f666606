//! The key a controller reconciles: its primary object's namespace and name, spelt as KCM's
//! `MetaNamespaceKeyFunc` spells it (`namespace/name`, `name` for a cluster-scoped object). Text
//! is parsed once, where a key comes in (the admin endpoint's `record`, `simulate --key`); the
//! work queue, the controller, the expectations and the recordings carry it typed.
//!
//! It owns the key and its spelling, nothing else. Logs take it as text (`key =
//! key.to_string()`), as they took the string keys: a `Display` field (`%key`) would print
//! unquoted in the text format.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
}

impl Key {
    pub fn new(namespace: &str, name: &str) -> Key {
        Key { namespace: namespace.to_string(), name: name.to_string() }
    }

    /// `namespace/name`, or `name` alone for a cluster-scoped object; `None` for an empty name
    /// or one holding a `/`.
    pub fn parse(text: &str) -> Option<Key> {
        let (namespace, name) = text.split_once('/').unwrap_or(("", text));
        (!name.is_empty() && !name.contains('/')).then(|| Key::new(namespace, name))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&wasmcm_core::key(&self.namespace, &self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_as_they_are_spelt() {
        for text in ["ns/a", "a", "kube-system/x.y"] {
            assert_eq!(Key::parse(text).map(|k| k.to_string()).as_deref(), Some(text));
        }
        assert_eq!(Key::parse("ns/a"), Some(Key::new("ns", "a")));
        assert_eq!(Key::parse("/a"), Some(Key::new("", "a")), "an empty namespace: cluster-scoped");
        for bad in ["", "ns/", "ns/a/b", "/"] {
            assert_eq!(Key::parse(bad), None, "{bad:?}");
        }
    }
}
