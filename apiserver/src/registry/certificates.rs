//! CertificateSigningRequests as upstream's registry strategies treat them
//! (`pkg/registry/certificates/certificates/strategy.go`): the requestor's identity stamped
//! on create, spec and status kept by the main resource's updates, Approved and Denied
//! settable through the `/approval` subresource only (what `kubectl certificate approve|deny`
//! writes; its handler is `endpoints::subresources`'), and condition timestamps filled in. No signer runs here: a request is approved
//! or denied, never issued, unless a client writes `status.certificate` itself.

use serde_json::{Value, json};
use wasmcm_core::str_at;

use crate::user::UserInfo;

/// `PrepareForCreate`: no status, and the spec says who asked, whatever the client wrote.
pub(crate) fn stamp_requestor(object: &mut Value, user: &UserInfo) {
    if let Some(o) = object.as_object_mut() {
        o.remove("status");
    }
    if !object.get("spec").is_some_and(Value::is_object) {
        object["spec"] = json!({});
    }
    let spec = &mut object["spec"];
    spec["username"] = json!(user.name);
    match user.uid.as_str() {
        "" => spec.as_object_mut().map(|s| s.remove("uid")),
        uid => spec.as_object_mut().map(|s| s.insert("uid".into(), json!(uid))),
    };
    spec["groups"] = json!(user.groups);
    if let Some(s) = spec.as_object_mut() {
        s.remove("extra");
    }
}

/// The main resource's `PrepareForUpdate`: neither spec nor status changes through it.
pub(crate) fn keep_spec(new: &mut Value, current: &Value) {
    match current.get("spec") {
        Some(spec) => new["spec"] = spec.clone(),
        None => {
            if let Some(o) = new.as_object_mut() {
                o.remove("spec");
            }
        }
    }
}

fn conditions(object: &Value) -> Vec<Value> {
    object.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default()
}

/// `SetDefaults_CertificateSigningRequestCondition` and `populateConditionTimestamps`: an
/// unset status is True; an unset update time is now; an unset transition time is the old
/// condition's of the same type and status, else now.
pub(crate) fn fill_conditions(new: &mut Value, old: &Value, now: &str) {
    let previous = conditions(old);
    let Some(list) = new.pointer_mut("/status/conditions").and_then(Value::as_array_mut) else { return };
    for c in list.iter_mut().filter(|c| c.is_object()) {
        if str_at(c, "/status").is_empty() {
            c["status"] = json!("True");
        }
        if str_at(c, "/lastUpdateTime").is_empty() {
            c["lastUpdateTime"] = json!(now);
        }
        if str_at(c, "/lastTransitionTime").is_empty() {
            let kept = previous.iter().find(|p| {
                str_at(p, "/type") == str_at(c, "/type")
                    && str_at(p, "/status") == str_at(c, "/status")
                    && !str_at(p, "/lastTransitionTime").is_empty()
            });
            c["lastTransitionTime"] = kept.map_or_else(|| json!(now), |p| p["lastTransitionTime"].clone());
        }
    }
}

/// The status strategy's `PrepareForUpdate`: the spec stays, and Approved and Denied stay as
/// they were (`preserveConditionInstances`): only `/approval` changes them.
pub(crate) fn status_update(new: &mut Value, current: &Value) {
    let now = jiff::Timestamp::now();
    let now = jiff::Timestamp::from_second(now.as_second()).unwrap_or(now).to_string();
    keep_spec(new, current);
    let approval = |c: &Value| matches!(str_at(c, "/type"), "Approved" | "Denied");
    let mut list: Vec<Value> = conditions(new).into_iter().filter(|c| !approval(c)).collect();
    list.extend(conditions(current).into_iter().filter(approval));
    if !new.get("status").is_some_and(Value::is_object) {
        new["status"] = json!({});
    }
    if list.is_empty() {
        if let Some(s) = new["status"].as_object_mut() {
            s.remove("conditions");
        }
    } else {
        new["status"]["conditions"] = Value::Array(list);
    }
    fill_conditions(new, current, &now);
}
