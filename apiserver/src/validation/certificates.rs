//! CertificateSigningRequests: `pkg/apis/certificates/validation`. It owns the request's spec
//! (a PEM certificate request, its signer and usages, the requested duration) and the rules
//! on its conditions (Approved and Denied exclusive, no duplicates).

use base64::Engine as _;
use serde_json::{Map, Value};

use super::meta::{NameRule, Scope, meta};
use super::{V, child, idx, q};

/// `allValidUsages`, sorted as `sets.List` prints them.
const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// Go's `%#v` of a `[]byte`, as a bad request field is printed.
fn go_bytes(bytes: &[u8]) -> String {
    let shown: Vec<String> = bytes.iter().map(|b| format!("0x{b:x}")).collect();
    format!("[]byte{{{}}}", shown.join(", "))
}

/// `validateCSR`'s first step: one PEM block of type CERTIFICATE REQUEST holding a DER
/// SEQUENCE. (Upstream also parses it and checks its signature.)
fn pem_request(pem: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(pem) else { return false };
    let Some(start) = text.find("-----BEGIN CERTIFICATE REQUEST-----") else { return false };
    let body = &text[start + "-----BEGIN CERTIFICATE REQUEST-----".len()..];
    let Some(end) = body.find("-----END CERTIFICATE REQUEST-----") else { return false };
    let b64: String = body[..end].chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(b64).is_ok_and(|der| der.len() > 2 && der[0] == 0x30)
}

/// `ValidateSignerName`.
fn signer_name(v: &mut V, name: &str) {
    const FIELD: &str = "spec.signerName";
    if name.is_empty() {
        v.required(FIELD, "");
        return;
    }
    let segments: Vec<&str> = name.split('/').collect();
    if segments.len() != 2 {
        v.invalid(FIELD, &q(name), "must be a fully qualified domain and path of the form 'example.com/signer-name'");
        return;
    }
    let (domain, path) = (segments[0], segments[1]);
    if domain.len() > 253 {
        v.too_long(FIELD, 253);
    }
    for message in wasmcm_core::validation::dns1123_subdomain(domain) {
        v.invalid(FIELD, &q(domain), &message);
    }
    if path.is_empty() {
        v.invalid(FIELD, &q(name), "must be a fully qualified domain and path of the form 'example.com/signer-name'");
    }
}

pub(crate) fn certificate_signing_request(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Cluster, NameRule::Subdomain, false);
    let empty = Map::new();
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);
    let request = v.string(spec.get("request"), "spec.request");
    let der = base64::engine::general_purpose::STANDARD.decode(request).unwrap_or_default();
    if !pem_request(&der) {
        v.invalid("spec.request", &go_bytes(&der), "PEM block type must be CERTIFICATE REQUEST");
    }
    let usages = v.str_list(spec.get("usages"), "spec.usages");
    if usages.is_empty() {
        v.required("spec.usages", "");
    }
    if let Some(seconds) = v.int(spec.get("expirationSeconds"), "spec.expirationSeconds")
        && seconds < 600
    {
        v.invalid(
            "spec.expirationSeconds",
            &seconds.to_string(),
            "may not specify a duration less than 600 seconds (10 minutes)",
        );
    }
    for (i, usage) in usages.iter().enumerate() {
        if !USAGES.contains(usage) {
            v.unsupported(&idx("spec.usages", i), &q(usage), USAGES);
        }
    }
    for (i, usage) in usages.iter().enumerate() {
        if usages[..i].contains(usage) {
            v.duplicate(&idx("spec.usages", i), &q(usage));
        }
    }
    let signer = v.string(spec.get("signerName"), "spec.signerName");
    if signer == "kubernetes.io/legacy-unknown" {
        v.invalid("spec.signerName", &q(signer), "the legacy signerName is not allowed via this API version");
    } else {
        signer_name(v, signer);
    }
    conditions(v, obj);
}

/// `validateConditions`: each typed once, a known status, and Approved and Denied apart.
fn conditions(v: &mut V, obj: &Value) {
    const FIELD: &str = "status.conditions";
    let list = obj.pointer("/status/conditions");
    let mut seen: Vec<&str> = Vec::new();
    let (mut approved, mut denied) = (false, false);
    for (path, c) in v.objs(list, FIELD) {
        let ty = c.get("type").and_then(Value::as_str).unwrap_or("");
        if ty.is_empty() {
            v.required(&child(&path, "type"), "");
        }
        let status = c.get("status").and_then(Value::as_str).unwrap_or("");
        match (ty, status) {
            ("Approved" | "Denied", s) if s != "True" => v.unsupported(&child(&path, "status"), &q(s), &["True"]),
            (_, s) if !matches!(s, "True" | "False" | "Unknown") => {
                v.unsupported(&child(&path, "status"), &q(s), &["False", "True", "Unknown"])
            }
            _ => {}
        }
        if !ty.is_empty() && seen.contains(&ty) {
            v.duplicate(&child(&path, "type"), &q(ty));
        }
        seen.push(ty);
        approved |= ty == "Approved";
        denied |= ty == "Denied";
    }
    if approved && denied {
        let shown = list.map(super::json_short).unwrap_or_default();
        v.invalid(FIELD, &shown, "Approved and Denied conditions are mutually exclusive");
    }
}
