//! Kubernetes API errors (`metav1.Status`): what the embedded API server answers and what the
//! writer gets back from any API. Messages follow kube-apiserver's wording, since clients and
//! people match on them.

use serde_json::{Value, json};

/// One problem of a request (`metav1.StatusCause`): what validation finds, a field manager's
/// conflict, a refused token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// The CauseType as the real server writes it: "FieldValueRequired", "FieldValueInvalid",
    /// "FieldValueNotSupported", "FieldValueForbidden", "FieldValueDuplicate", "FieldValueTooLong",
    /// "FieldValueNotFound", "FieldManagerConflict", …
    pub reason: String,
    /// The field path as upstream prints it: "metadata.name", "spec.containers[0].image".
    pub field: String,
    /// Upstream's message: "Required value", "Invalid value: \"Foo_Bar\": a lowercase RFC 1123 …".
    pub message: String,
}

/// A failed API call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: String,
    pub message: String,
    /// Boxed: errors travel through every `Result` of the server, and most have no details.
    pub details: Option<Box<Details>>,
}

/// `details` as the real server fills them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Details {
    pub name: String,
    pub group: String,
    pub kind: String,
    pub causes: Vec<Cause>,
}

/// "pods", "deployments.apps": how the API names a resource in messages.
fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") }
}

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError { code, reason: reason.into(), message: message.into(), details: None }
    }

    fn about(mut self, group: &str, kind: &str, name: &str) -> Self {
        let d = self.details.get_or_insert_with(Default::default);
        d.group = group.into();
        d.kind = kind.into();
        d.name = name.into();
        self
    }

    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{} {name:?} not found", qualified(group, resource)))
            .about(group, resource, name)
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(409, "AlreadyExists", format!("{} {name:?} already exists", qualified(group, resource)))
            .about(group, resource, name)
    }

    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {} {name:?}: {why}", qualified(group, resource)),
        )
        .about(group, resource, name)
    }

    /// The optimistic-concurrency conflict every controller retries on.
    pub fn stale(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422, as `Kind.group "name" is invalid: [field: message, ...]`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let qualified_kind = if group.is_empty() { kind.to_string() } else { format!("{kind}.{group}") };
        let parts: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        let joined = if parts.len() == 1 { parts[0].clone() } else { format!("[{}]", parts.join(", ")) };
        let mut e = Self::new(422, "Invalid", format!("{qualified_kind} {name:?} is invalid: {joined}"))
            .about(group, kind, name);
        if let Some(d) = e.details.as_mut() {
            d.causes = causes;
        }
        e
    }

    /// The same error with these causes in its details (an apply conflict's fields).
    pub fn with_causes(mut self, causes: Vec<Cause>) -> Self {
        self.details.get_or_insert_with(Default::default).causes = causes;
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// Upstream's `NewForbidden`: `resource.group "name" is forbidden: why` (the name left out
    /// when there is none, as for a `generateName` create).
    pub fn forbidden_on(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let qualified = qualified(group, resource);
        let message = if name.is_empty() {
            format!("{qualified} is forbidden: {why}")
        } else {
            format!("{qualified} {name:?} is forbidden: {why}")
        };
        Self::forbidden(message).about(group, resource, name)
    }

    pub fn method_not_allowed() -> Self {
        Self::new(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
    }

    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    pub fn is_not_found(&self) -> bool {
        self.code == 404
    }

    /// 409: a stale resourceVersion, or a name already taken. Controllers retry both.
    pub fn is_conflict(&self) -> bool {
        self.code == 409
    }

    /// The `metav1.Status` body.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            let mut details = json!({});
            if !d.name.is_empty() {
                details["name"] = json!(d.name);
            }
            if !d.group.is_empty() {
                details["group"] = json!(d.group);
            }
            if !d.kind.is_empty() {
                details["kind"] = json!(d.kind);
            }
            if !d.causes.is_empty() {
                details["causes"] = d
                    .causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect();
            }
            status["details"] = details;
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_kube_apiserver() {
        assert_eq!(ApiError::not_found("apps", "deployments", "web").message, "deployments.apps \"web\" not found");
        assert_eq!(ApiError::already_exists("", "pods", "p").message, "pods \"p\" already exists");
        let e = ApiError::invalid(
            "",
            "Pod",
            "p",
            vec![
                Cause {
                    reason: "FieldValueRequired".into(),
                    field: "spec.containers".into(),
                    message: "Required value".into(),
                },
                Cause {
                    reason: "FieldValueInvalid".into(),
                    field: "metadata.name".into(),
                    message: "Invalid value".into(),
                },
            ],
        );
        assert_eq!(e.message, "Pod \"p\" is invalid: [spec.containers: Required value, metadata.name: Invalid value]");
        let s = e.to_status();
        assert_eq!(s["code"], 422);
        assert_eq!(s["details"]["causes"][0]["field"], "spec.containers");
    }
}
