//! Kinds as objects name them (`apiVersion` and `kind`), and what follows from the name alone.

/// A kind: `apiVersion` (`group/version`, or `version` for the core group) and `kind`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kind {
    pub api_version: String,
    pub kind: String,
}

impl Kind {
    pub fn new(api_version: &str, kind: &str) -> Self {
        Kind { api_version: api_version.to_string(), kind: kind.to_string() }
    }

    /// The kind of a k8s-openapi resource type.
    pub fn of<K: k8s_openapi::Resource>() -> Self {
        Kind::new(K::API_VERSION, K::KIND)
    }

    /// The kind an object says it is.
    pub fn of_object(object: &serde_json::Value) -> Self {
        Kind::new(crate::str_at(object, "/apiVersion"), crate::str_at(object, "/kind"))
    }

    /// The API group, empty for the core group.
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map_or("", |(group, _)| group)
    }

    /// The group and a best-guess plural, for callers that know only the kind (error
    /// messages name resources by plural).
    pub fn group_and_plural(&self) -> (String, String) {
        (self.group().to_string(), format!("{}s", self.kind.to_lowercase()))
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.api_version, self.kind)
    }
}
