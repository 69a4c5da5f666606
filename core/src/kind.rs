//! Kinds as objects name them (`apiVersion` and `kind`), and what follows from the name alone.

/// `apiVersion` (`group/version`, or `version` for the core group) and `kind`, as objects carry
/// them; `Display` prints `apps/v1/Deployment`. Two kinds are equal when both parts are:
/// `apps/v1` and `apps/v1beta1` Deployments are different kinds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kind {
    /// `group/version` (`apps/v1`), or `version` alone for the core group (`v1`).
    pub api_version: String,
    /// The kind's name, as in an object's `kind` field (`Deployment`).
    pub kind: String,
}

impl Kind {
    /// The kind of `apiVersion` and `kind`, e.g. `Kind::new("example.com/v1", "Widget")` for a
    /// custom resource.
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

    /// The version, without its group.
    pub fn version(&self) -> &str {
        self.api_version.rsplit_once('/').map_or(self.api_version.as_str(), |(_, version)| version)
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
