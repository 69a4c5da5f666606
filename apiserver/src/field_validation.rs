//! Server-side field validation of built-in kinds, as kube-apiserver does it (the
//! `fieldValidation` query parameter; kubectl's `--validate=strict|warn|false` sends
//! `Strict|Warn|Ignore`): a create or update body, or a patched object, with fields its kind
//! does not declare (or, in a JSON body, a field given twice) is refused with upstream's
//! `strict decoding error: unknown field "spec.foo"` (Strict), answered with a `Warning:
//! 299 - "unknown field \"spec.foo\""` header per field (Warn, the default when the parameter
//! is absent), or accepted silently (Ignore). Whichever, the undeclared fields are not stored:
//! upstream decodes into Go structs, which have nowhere to keep them.
//!
//! The walk itself is `unknown_fields`; custom resources (no generated message) are not
//! checked here.

use std::sync::Mutex;

use hyper::header::{HeaderMap, HeaderValue};
use serde_json::Value;
use wasmcm_core::ApiError;

use super::unknown_fields::{self, Finding, Typed};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Directive {
    Ignore,
    Warn,
    Strict,
}

impl Directive {
    /// The `fieldValidation` parameter; absent or empty is Warn, as upstream defaults it.
    pub(crate) fn from_query(value: Option<&str>) -> Result<Directive, ApiError> {
        match value.unwrap_or("") {
            "" | "Warn" => Ok(Directive::Warn),
            "Ignore" => Ok(Directive::Ignore),
            "Strict" => Ok(Directive::Strict),
            other => Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""
            ))),
        }
    }
}

/// The warnings a request collects, sent as `Warning` headers with its response.
#[derive(Default)]
pub(crate) struct Warnings(Mutex<Vec<String>>);

impl Warnings {
    fn push(&self, text: String) {
        if let Ok(mut w) = self.0.lock()
            && !w.contains(&text)
        {
            w.push(text);
        }
    }

    /// One `299 - "text"` header per warning, the text quoted as Go's `strconv.Quote`-like
    /// warning writer does (`"` and `\` escaped).
    pub(crate) fn write_headers(&self, headers: &mut HeaderMap) {
        let Ok(warnings) = self.0.lock() else { return };
        for text in warnings.iter() {
            let quoted = text.replace('\\', "\\\\").replace('"', "\\\"");
            if let Ok(value) = HeaderValue::from_str(&format!("299 - \"{quoted}\"")) {
                headers.append("warning", value);
            }
        }
    }
}

/// One request's validation: its directive and where its warnings go.
pub(crate) struct Validation<'a> {
    pub(crate) directive: Directive,
    pub(crate) warnings: &'a Warnings,
}

impl Validation<'_> {
    /// Upstream's answer to `findings`: an error under Strict (`wrap` makes its message), a
    /// warning each under Warn.
    fn judge(&self, findings: Vec<Finding>, wrap: impl FnOnce(String) -> String) -> Result<(), ApiError> {
        if findings.is_empty() {
            return Ok(());
        }
        match self.directive {
            Directive::Ignore => Ok(()),
            Directive::Warn => {
                findings.iter().for_each(|f| self.warnings.push(f.to_string()));
                Ok(())
            }
            Directive::Strict => {
                let listed = findings.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
                Err(ApiError::bad_request(wrap(format!("strict decoding error: {listed}"))))
            }
        }
    }

    /// A create or update body, decoded to `object`, that the server reads as `kind` of
    /// `api_version`. A JSON body is walked as sent (so fields come in its order and
    /// duplicates show); others (YAML) as decoded. Undeclared fields are removed from
    /// `object`.
    pub(crate) fn body(
        &self,
        api_version: &str,
        kind: &str,
        json_body: Option<&[u8]>,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        let Some(root) = Typed::of(api_version, kind) else { return Ok(()) };
        let findings = match json_body {
            Some(body) if self.directive != Directive::Ignore => unknown_fields::in_json(body, root)
                .map_err(|e| ApiError::bad_request(format!("error decoding JSON request body: {e}")))?,
            _ if self.directive != Directive::Ignore => unknown_fields::in_value(object, root),
            _ => Vec::new(),
        };
        // As `transformDecodeError` words a body the decoder refused: the kind and version
        // the body states, and the kind it was decoded into.
        let stated = object.get("kind").and_then(Value::as_str).unwrap_or(kind).to_owned();
        let version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .map(|v| v.rsplit('/').next().unwrap_or(v).to_owned())
            .unwrap_or_default();
        self.judge(findings, |message| {
            format!("{stated} in version {version:?} cannot be handled as a {kind}: {message}")
        })?;
        unknown_fields::prune(object, root);
        Ok(())
    }

    /// An object a patch produced (upstream decodes the patched map with
    /// `FromUnstructuredWithValidation`: its keys sorted, the error unwrapped).
    pub(crate) fn patched(&self, api_version: &str, kind: &str, object: &mut Value) -> Result<(), ApiError> {
        let Some(root) = Typed::of(api_version, kind) else { return Ok(()) };
        if self.directive != Directive::Ignore {
            self.judge(unknown_fields::in_value(object, root), |m| m)?;
        }
        unknown_fields::prune(object, root);
        Ok(())
    }
}

/// A server-side apply configuration of a built-in kind: structured-merge-diff refuses one
/// with undeclared fields whatever the directive, and kube-apiserver 1.35 passes its plain
/// error on as a 500 without a reason (kubernetes/kubernetes#122480, #139253).
pub(crate) fn apply_config(api_version: &str, kind: &str, config: &Value) -> Result<(), ApiError> {
    let Some(root) = Typed::of(api_version, kind) else { return Ok(()) };
    let undeclared = unknown_fields::in_apply_config(config, root);
    if undeclared.is_empty() {
        return Ok(());
    }
    let errors: Vec<String> = undeclared.iter().map(|p| format!("{p}: field not declared in schema")).collect();
    // structured-merge-diff's ValidationErrors: one alone, or "errors:" and one per line.
    let errors = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    let meta = |f: &str| config.pointer(&format!("/metadata/{f}")).and_then(Value::as_str).unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    Err(ApiError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({}/{}; {group}/{version}, Kind={kind}): {errors}",
            meta("namespace"),
            meta("name")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_refuses_warn_warns_ignore_accepts_and_all_drop_the_field() {
        let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{},"foo":1,"data":{}}"#;
        let decode = |directive| {
            let warnings = Warnings::default();
            let mut object: Value = serde_json::from_slice(body).unwrap();
            let result = Validation { directive, warnings: &warnings }.body("v1", "ConfigMap", Some(body), &mut object);
            let mut headers = HeaderMap::new();
            warnings.write_headers(&mut headers);
            let headers: Vec<String> =
                headers.get_all("warning").iter().map(|v| v.to_str().unwrap().to_owned()).collect();
            (result.map(|()| object), headers)
        };
        let (result, _) = decode(Directive::Strict);
        let e = result.unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: \
             unknown field \"foo\", duplicate field \"data\""
        );
        let (result, headers) = decode(Directive::Warn);
        assert_eq!(
            result.unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {}})
        );
        assert_eq!(headers, ["299 - \"unknown field \\\"foo\\\"\"", "299 - \"duplicate field \\\"data\\\"\""]);
        let (result, headers) = decode(Directive::Ignore);
        assert!(result.unwrap().get("foo").is_none());
        assert!(headers.is_empty());
    }

    #[test]
    fn the_directive_defaults_to_warn_and_refuses_other_values() {
        assert_eq!(Directive::from_query(None).unwrap(), Directive::Warn);
        assert_eq!(Directive::from_query(Some("Strict")).unwrap(), Directive::Strict);
        assert_eq!(Directive::from_query(Some("strict")).unwrap_err().code, 400);
    }
}
