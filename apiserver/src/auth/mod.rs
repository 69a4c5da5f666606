//! Authentication of the embedded API server and the API objects about identity: who a
//! request is (the kubeconfig's admin token, or a ServiceAccount token), the TokenRequest
//! subresource that issues ServiceAccount tokens (`kubectl create token`), and the reviews a
//! client asks about itself with (SelfSubjectReview for `kubectl auth whoami`,
//! SelfSubjectAccessReview and SelfSubjectRulesReview for `kubectl auth can-i`), and the
//! TokenReview a webhook or proxy asks whether a token is valid with.
//!
//! ServiceAccount tokens are opaque random strings remembered in memory, not signed JWTs: only
//! this server has to understand them, and they die with it. Each remembers the uid of the
//! ServiceAccount it was issued for, so deleting the ServiceAccount (or deleting and
//! re-creating it under the same name) invalidates its tokens, as the real server's check of
//! a token's bound ServiceAccount does.
//!
//! Authorization is `rbac`'s, the tokens issued `tokens`', and who a request is `user`'s.

pub(crate) mod rbac;

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::State;
use crate::request_info::RequestInfo;
use crate::storage::change::Key;
use crate::tokens::Issued;
use crate::user::UserInfo;
use wasmcm_core::{ApiError, Cause, str_at};

fn service_account_key(namespace: &str, name: &str) -> Key {
    Key { id: "/serviceaccounts".into(), namespace: namespace.into(), name: name.into() }
}

/// Who the verified client certificate of a connection names (a request extension).
#[derive(Clone, Debug)]
pub(crate) struct Certified(pub UserInfo);

/// The identity of a request: its connection's client certificate, else its Authorization
/// header (upstream's authenticators are tried in that order); 401 for a missing or unknown
/// token. Without an admin token (plain-HTTP loopback mode) everyone is the admin.
pub(crate) fn authenticate(
    state: &State,
    certified: Option<&Certified>,
    authorization: Option<&str>,
) -> Result<UserInfo, ApiError> {
    if let Some(Certified(user)) = certified {
        return Ok(user.clone());
    }
    let Some(admin_token) = &state.token else { return Ok(UserInfo::admin()) };
    let Some(presented) = authorization.and_then(bearer_token) else {
        return Err(ApiError::unauthorized());
    };
    match token_identity(state, admin_token, presented) {
        // A token issued for another audience (`kubectl create token --audience`) is not
        // one for this API, as upstream's authenticator checks against `--api-audiences`.
        Ok((_, Some(audiences))) if !audiences.iter().any(|a| a == API_AUDIENCE) => Err(ApiError::unauthorized()),
        Ok((user, _)) => Ok(user),
        Err(_) => Err(ApiError::unauthorized()),
    }
}

/// Who a client certificate the TLS handshake verified names, as upstream's x509 authenticator
/// reads it (`CommonNameUserConversion`): the subject's common name is the user, its
/// organizations are the groups. None without a common name, or if the certificate does not
/// parse.
pub(crate) fn certificate_identity(der: &[u8]) -> Option<UserInfo> {
    const COMMON_NAME: [u64; 4] = [2, 5, 4, 3];
    const ORGANIZATION: [u64; 4] = [2, 5, 4, 10];
    let subject = yasna::parse_der(der, |r| {
        r.read_sequence(|r| {
            let subject = r.next().read_sequence(|r| {
                // version [0] (optional), serialNumber, signature, issuer, validity, subject,
                // subjectPublicKeyInfo, then optional unique ids and extensions.
                r.read_optional(|r| r.read_tagged(yasna::Tag::context(0), |r| r.read_der()))?;
                for _ in 0..4 {
                    r.next().read_der()?;
                }
                let mut attributes = Vec::new();
                r.next().read_sequence_of(|r| {
                    r.read_set_of(|r| {
                        attributes.push(r.read_sequence(|r| {
                            let oid = r.next().read_oid()?;
                            let value = r.next().read_tagged_der()?;
                            Ok((oid, String::from_utf8_lossy(value.value()).into_owned()))
                        })?);
                        Ok(())
                    })
                })?;
                while r.read_optional(|r| r.read_der())?.is_some() {}
                Ok(attributes)
            })?;
            r.next().read_der()?;
            r.next().read_der()?;
            Ok(subject)
        })
    })
    .ok()?;
    let of = |oid: [u64; 4]| -> Vec<String> {
        subject.iter().filter(|(o, _)| o.components().as_slice() == oid).map(|(_, v)| v.clone()).collect()
    };
    let name = of(COMMON_NAME).into_iter().next().filter(|n| !n.is_empty())?;
    let mut groups = of(ORGANIZATION);
    groups.push("system:authenticated".into());
    Some(UserInfo { name, uid: String::new(), groups })
}

/// The token of an `Authorization: Bearer <token>` header, read as upstream's bearertoken
/// authenticator reads it: the header's whitespace-separated fields, the scheme in any case.
fn bearer_token(header: &str) -> Option<&str> {
    let mut fields = header.split_whitespace();
    let scheme = fields.next()?;
    if scheme.eq_ignore_ascii_case("bearer") { fields.next() } else { None }
}

/// Who presents `token`, and the audiences it is valid for (`None`: any, as the admin token's
/// static authenticator is audience-agnostic). The error says why not, as a TokenReview
/// reports it.
fn token_identity(
    state: &State,
    admin_token: &str,
    token: &str,
) -> Result<(UserInfo, Option<Vec<String>>), &'static str> {
    if same_secret(token, admin_token) {
        return Ok((UserInfo::admin(), None));
    }
    let mut issued = state.tokens.lock();
    let Some(found) = issued.get(token) else { return Err("invalid bearer token") };
    let account = state.store.get(&service_account_key(&found.namespace, &found.name));
    let live = account.as_ref().is_some_and(|sa| str_at(sa, "/metadata/uid") == found.uid);
    if !live {
        // Gone for good: the ServiceAccount it was bound to no longer exists.
        issued.remove(token);
        return Err("[invalid bearer token, service account token has been invalidated]");
    }
    if found.expires <= Timestamp::now() {
        issued.remove(token);
        return Err("[invalid bearer token, service account token has expired]");
    }
    let user = UserInfo::service_account(&found.namespace, &found.name, &found.uid);
    Ok((user, Some(found.audiences.clone())))
}

/// Whether a presented token is `secret`, in a time that does not depend on where they first
/// differ (a `==` stops at the first differing byte, which lets a client guess the token
/// byte by byte from how long refusals take). Only the length may show, and the admin
/// token's is fixed (64 hex digits). ServiceAccount tokens are found by a hash lookup, whose
/// time depends on the randomly keyed hash, not on how close a guess is.
fn same_secret(presented: &str, secret: &str) -> bool {
    use subtle::ConstantTimeEq as _;
    bool::from(presented.as_bytes().ct_eq(secret.as_bytes()))
}

/// `POST /apis/authentication.k8s.io/v1/tokenreviews`: whether a token is one this server
/// accepts, and whose, as upstream's TokenReview REST answers through the server's own
/// authenticators, for the audiences the review names (the API's own by default).
fn token_review(state: &State, mut review: Value) -> Result<Value, ApiError> {
    check_type(&review, "authentication.k8s.io/v1", "TokenReview")?;
    let token = str_at(&review, "/spec/token").to_string();
    if token.is_empty() {
        return Err(ApiError::bad_request("token is required for TokenReview in authentication"));
    }
    let wanted: Vec<String> = match review.pointer("/spec/audiences").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => a.iter().filter_map(Value::as_str).map(String::from).collect(),
        _ => vec![API_AUDIENCE.to_string()],
    };
    // Without an admin token (plain-HTTP loopback mode) no bearer token means anything.
    let found = match &state.token {
        Some(admin) => token_identity(state, admin, &token),
        None => Err("invalid bearer token"),
    };
    let mut status = json!({"user": {}});
    match found {
        Ok((user, audiences)) => {
            let granted: Vec<String> = match &audiences {
                None => wanted.clone(),
                Some(own) => wanted.iter().filter(|a| own.contains(a)).cloned().collect(),
            };
            if granted.is_empty() {
                // Go's %q of a []string: ["a" "b"].
                let quoted = |list: &[String]| {
                    format!("[{}]", list.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(" "))
                };
                status["error"] = json!(format!(
                    "[invalid bearer token, token audiences {} is invalid for the target audiences {}]",
                    quoted(audiences.as_deref().unwrap_or_default()),
                    quoted(&wanted)
                ));
            } else {
                status["authenticated"] = json!(true);
                let mut info = json!({"username": user.name, "groups": user.groups});
                if !user.uid.is_empty() {
                    info["uid"] = json!(user.uid);
                }
                status["user"] = info;
                status["audiences"] = json!(granted);
            }
        }
        Err(why) => status["error"] = json!(why),
    }
    let spec = review.get("spec").cloned().unwrap_or(json!({}));
    review["spec"] = spec;
    Ok(review_response(review, "authentication.k8s.io/v1", "TokenReview", status))
}

/// Whom a request acts as when it asks to impersonate (`kubectl --as`, `--as-group`: the
/// Impersonate-User and Impersonate-Group headers), once the requester may impersonate each
/// of them, as upstream's impersonation filter decides. Impersonate-Uid and
/// Impersonate-Extra-* are not supported and are ignored.
pub(crate) fn impersonate(
    state: &State,
    requester: UserInfo,
    as_user: Option<&str>,
    as_groups: &[String],
) -> Result<UserInfo, ApiError> {
    let Some(name) = as_user else {
        if as_groups.is_empty() {
            return Ok(requester);
        }
        return Err(ApiError::bad_request(format!("requested groups {as_groups:?} without impersonating a user")));
    };
    let allowed = |attributes: RequestInfo| {
        let decision = rbac::authorize(state, &requester, &attributes);
        if decision.allowed { Ok(()) } else { Err(rbac::forbidden(&requester, &attributes, &decision.reason)) }
    };
    let impersonating = |resource: &str, namespace: &str, name: &str| RequestInfo {
        resource_request: true,
        verb: "impersonate".into(),
        namespace: namespace.into(),
        resource: resource.into(),
        name: name.into(),
        ..Default::default()
    };
    let service_account = name
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
        .filter(|(ns, sa)| !ns.is_empty() && !sa.is_empty() && !sa.contains(':'));
    let mut groups: Vec<String> = as_groups.to_vec();
    match service_account {
        Some((ns, sa)) => {
            allowed(impersonating("serviceaccounts", ns, sa))?;
            // A ServiceAccount's groups are fixed by its name.
            if groups.is_empty() {
                groups = UserInfo::service_account(ns, sa, "").groups;
            }
        }
        None => allowed(impersonating("users", "", name))?,
    }
    for group in as_groups {
        allowed(impersonating("groups", "", group))?;
    }
    if !groups.iter().any(|g| g == "system:authenticated" || g == "system:unauthenticated") {
        groups.push("system:authenticated".into());
    }
    Ok(UserInfo { name: name.into(), uid: String::new(), groups })
}

/// Audiences of a token that names none: the API server's own, as kube-apiserver's default
/// `--api-audiences` (its issuer).
const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

fn check_type(object: &Value, api_version: &str, kind: &str) -> Result<(), ApiError> {
    match object.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() && v != api_version => Err(ApiError::bad_request(format!(
            "the API version in the data ({v}) does not match the expected API version ({api_version})"
        ))),
        _ => match object.get("kind").and_then(Value::as_str) {
            Some(k) if !k.is_empty() && k != kind => Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({kind})"
            ))),
            _ => Ok(()),
        },
    }
}

fn invalid_field(group: &str, kind: &str, name: &str, field: &str, message: String) -> ApiError {
    let cause = Cause { reason: "FieldValueInvalid".into(), field: field.into(), message };
    ApiError::invalid(group, kind, name, vec![cause])
}

/// `POST .../namespaces/{namespace}/serviceaccounts/{name}/token`: a token for the
/// ServiceAccount, as the TokenRequest REST storage answers it.
pub(crate) fn token_request(
    state: &State,
    namespace: &str,
    name: &str,
    mut request: Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    const GROUP: &str = "authentication.k8s.io";
    check_type(&request, "authentication.k8s.io/v1", "TokenRequest")?;
    for (field, expected, what) in [("name", name, "name"), ("namespace", namespace, "namespace")] {
        let given = str_at(&request, &format!("/metadata/{field}"));
        if !given.is_empty() && given != expected {
            return Err(invalid_field(
                GROUP,
                "TokenRequest",
                name,
                &format!("metadata.{field}"),
                format!("Invalid value: {given:?}: must match the service account {what} if specified"),
            ));
        }
    }
    let account = state
        .store
        .get(&service_account_key(namespace, name))
        .ok_or_else(|| ApiError::not_found("", "serviceaccounts", name))?;
    let seconds = match request.pointer("/spec/expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| ApiError::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    if seconds < 600 {
        let message = format!("Invalid value: {seconds}: may not specify a duration less than 10 minutes");
        return Err(invalid_field(GROUP, "TokenRequest", "", "spec.expirationSeconds", message));
    }
    if seconds > 1 << 32 {
        let message = format!("Invalid value: {seconds}: may not specify a duration larger than 2^32 seconds");
        return Err(invalid_field(GROUP, "TokenRequest", "", "spec.expirationSeconds", message));
    }
    let now = Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_else(|_| Timestamp::now());
    let expires = now.checked_add(jiff::SignedDuration::from_secs(seconds)).unwrap_or(Timestamp::MAX);
    let token = crate::tls::random_token();
    if !dry_run {
        let mut issued = state.tokens.lock();
        // Expired tokens are never accepted again; forget them as new ones come.
        issued.retain(|_, t| t.expires > now);
        let audiences = match request.pointer("/spec/audiences").and_then(Value::as_array) {
            Some(a) if !a.is_empty() => a.iter().filter_map(Value::as_str).map(String::from).collect(),
            _ => vec![API_AUDIENCE.to_string()],
        };
        issued.insert(
            token.clone(),
            Issued {
                namespace: namespace.into(),
                name: name.into(),
                uid: str_at(&account, "/metadata/uid").into(),
                expires,
                audiences,
            },
        );
    }
    request["apiVersion"] = json!("authentication.k8s.io/v1");
    request["kind"] = json!("TokenRequest");
    if !request.get("metadata").is_some_and(Value::is_object) {
        request["metadata"] = json!({});
    }
    request["metadata"]["name"] = json!(name);
    request["metadata"]["namespace"] = json!(namespace);
    if !request.get("spec").is_some_and(Value::is_object) {
        request["spec"] = json!({});
    }
    request["spec"]["expirationSeconds"] = json!(seconds);
    if request.pointer("/spec/audiences").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        request["spec"]["audiences"] = json!([API_AUDIENCE]);
    }
    request["status"] = json!({"token": token, "expirationTimestamp": expires.to_string()});
    Ok(request)
}

fn review_response(mut request: Value, api_version: &str, kind: &str, status: Value) -> Value {
    request["apiVersion"] = json!(api_version);
    request["kind"] = json!(kind);
    if !request.get("metadata").is_some_and(Value::is_object) {
        request["metadata"] = json!({});
    }
    request["metadata"]["creationTimestamp"] = Value::Null;
    request["status"] = status;
    request
}

/// Answers a create of one of the review kinds (`ResourceType::create_only`).
pub(crate) fn review(state: &State, user: &UserInfo, resource: &str, request: Value) -> Result<Value, ApiError> {
    match resource {
        "tokenreviews" => token_review(state, request),
        "selfsubjectreviews" => {
            check_type(&request, "authentication.k8s.io/v1", "SelfSubjectReview")?;
            let mut info = json!({"username": user.name, "groups": user.groups});
            if !user.uid.is_empty() {
                info["uid"] = json!(user.uid);
            }
            Ok(review_response(request, "authentication.k8s.io/v1", "SelfSubjectReview", json!({"userInfo": info})))
        }
        "selfsubjectaccessreviews" => {
            check_type(&request, "authorization.k8s.io/v1", "SelfSubjectAccessReview")?;
            let attributes = access_review_attributes(&request)?;
            let decision = rbac::authorize(state, user, &attributes);
            let mut status = json!({"allowed": decision.allowed});
            if !decision.reason.is_empty() {
                status["reason"] = json!(decision.reason);
            }
            Ok(review_response(request, "authorization.k8s.io/v1", "SelfSubjectAccessReview", status))
        }
        "selfsubjectrulesreviews" => {
            check_type(&request, "authorization.k8s.io/v1", "SelfSubjectRulesReview")?;
            let namespace = str_at(&request, "/spec/namespace").to_string();
            let (resource_rules, non_resource_rules, errors) = rbac::rules_for(state, user, &namespace);
            let mut status = json!({
                "resourceRules": resource_rules,
                "nonResourceRules": non_resource_rules,
                "incomplete": !errors.is_empty(),
            });
            if !errors.is_empty() {
                status["evaluationError"] = json!(errors.join(", "));
            }
            Ok(review_response(request, "authorization.k8s.io/v1", "SelfSubjectRulesReview", status))
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// The attributes a SelfSubjectAccessReview asks about, validated as upstream's
/// ValidateSelfSubjectAccessReviewSpec.
fn access_review_attributes(request: &Value) -> Result<RequestInfo, ApiError> {
    let resource = request.pointer("/spec/resourceAttributes").filter(|v| v.is_object());
    let non_resource = request.pointer("/spec/nonResourceAttributes").filter(|v| v.is_object());
    let invalid = |field: &str, shown: &str, detail: &str| {
        invalid_field(
            "authorization.k8s.io",
            "SelfSubjectAccessReview",
            "",
            field,
            format!("Invalid value: {shown}: {detail}"),
        )
    };
    let s = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).unwrap_or("").to_string();
    match (resource, non_resource) {
        (Some(_), Some(n)) => Err(invalid(
            "spec.nonResourceAttributes",
            &n.to_string(),
            "cannot be specified in combination with resourceAttributes",
        )),
        (None, None) => Err(invalid(
            "spec.resourceAttributes",
            "\"null\"",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        (Some(r), None) => Ok(RequestInfo {
            resource_request: true,
            verb: s(r, "verb"),
            path: String::new(),
            group: s(r, "group"),
            version: s(r, "version"),
            namespace: s(r, "namespace"),
            resource: s(r, "resource"),
            subresource: s(r, "subresource"),
            name: s(r, "name"),
            ..Default::default()
        }),
        (None, Some(n)) => Ok(RequestInfo { verb: s(n, "verb"), path: s(n, "path"), ..Default::default() }),
    }
}

#[cfg(test)]
mod tests {
    use super::{bearer_token, certificate_identity, same_secret};
    use rcgen::{CertificateParams, DnType, KeyPair};

    fn certificate(subject: &[(DnType, &str)]) -> Vec<u8> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (ty, value) in subject {
            params.distinguished_name.push(ty.clone(), *value);
        }
        params.self_signed(&KeyPair::generate().unwrap()).unwrap().der().to_vec()
    }

    #[test]
    fn a_client_certificate_names_its_common_name_in_its_organizations() {
        // (rcgen keeps one value per attribute type: one organization here.)
        let der = certificate(&[(DnType::OrganizationName, "team-a"), (DnType::CommonName, "jane")]);
        let user = certificate_identity(&der).expect("an identity");
        assert_eq!(user.name, "jane");
        assert_eq!(user.groups, ["team-a", "system:authenticated"]);
        assert!(certificate_identity(&certificate(&[(DnType::OrganizationName, "team-a")])).is_none(), "no name");
        assert!(certificate_identity(&der[..der.len() / 2]).is_none(), "cut short");
        assert!(certificate_identity(b"not DER").is_none());
    }

    #[test]
    fn a_bearer_token_is_read_as_upstream_reads_it() {
        for header in ["Bearer abc", "bearer abc", "BEARER abc", "  Bearer   abc  ", "Bearer abc extra"] {
            assert_eq!(bearer_token(header), Some("abc"), "{header:?}");
        }
        for header in ["", "Bearer", "Bearer   ", "Basic abc", "Bearerabc"] {
            assert_eq!(bearer_token(header), None, "{header:?}");
        }
    }

    #[test]
    fn tokens_compare_whole() {
        let secret = "0123456789abcdef".repeat(4);
        assert!(same_secret(&secret, &secret));
        let mut last = secret.clone();
        last.replace_range(63.., "0");
        for wrong in ["", "0", &secret[..63], &format!("{secret}0"), &last, &"f".repeat(64)] {
            assert!(!same_secret(wrong, &secret), "{wrong:?}");
        }
    }
}
