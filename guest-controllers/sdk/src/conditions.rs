//! Status conditions (`metav1.Condition`) kept as apimachinery's `meta.SetStatusCondition`
//! keeps them, so `kubectl wait --for=condition=Ready` and any tool reading conditions sees
//! what it expects.
//!
//! A condition's `lastTransitionTime` says when its status last changed, not when it was last
//! written: [`set`] keeps it unless the status changes, and reports whether anything changed
//! so a controller writes status only when it must (an unchanged write still costs a request
//! and wakes every watcher).
//!
//! ```
//! use wasmcm_guest::conditions;
//! use wasmcm_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
//! use wasmcm_guest::Instant;
//!
//! let now = Instant::parse_rfc3339("2026-11-26T08:00:00Z").unwrap();
//! let mut status_conditions: Vec<Condition> = Vec::new();
//! let ready = |status: &str, reason: &str| Condition {
//!     type_: "Ready".into(),
//!     status: status.into(),
//!     reason: reason.into(),
//!     message: String::new(),
//!     observed_generation: Some(1),
//!     last_transition_time: now.time(),
//! };
//! assert!(conditions::set(&mut status_conditions, ready("False", "Unavailable")));
//! assert!(!conditions::set(&mut status_conditions, ready("False", "Unavailable")));
//! assert!(conditions::set(&mut status_conditions, ready("True", "Available")));
//! assert!(conditions::is_true(&status_conditions, "Ready"));
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// Sets `new` in `conditions` as `meta.SetStatusCondition` does, and returns whether anything
/// changed.
///
/// A condition of a type not there yet is appended as given. Otherwise the existing one is
/// updated in place: its `status`, and with it `lastTransitionTime` (taken from `new`: give
/// the request's `now`, `request.now.time()`), only when the status differs; its `reason`,
/// `message` and `observedGeneration` whenever they differ. Guests have no clock, so unlike
/// Go's function this one never reads the time itself.
///
/// ```
/// use wasmcm_guest::conditions;
/// use wasmcm_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
/// use wasmcm_guest::Instant;
///
/// let at = |s: &str| Instant::parse_rfc3339(s).unwrap().time();
/// let progressing = |status: &str, message: &str, generation: i64, now: &str| Condition {
///     type_: "Progressing".into(),
///     status: status.into(),
///     reason: "RollingOut".into(),
///     message: message.into(),
///     observed_generation: Some(generation),
///     last_transition_time: at(now),
/// };
/// let mut list = vec![progressing("True", "1/3 ready", 1, "2026-11-26T08:00:00Z")];
///
/// // Same status, new message and generation: updated, the transition time kept.
/// assert!(conditions::set(&mut list, progressing("True", "2/3 ready", 2, "2026-11-26T08:01:00Z")));
/// assert_eq!(list[0].message, "2/3 ready");
/// assert_eq!(list[0].observed_generation, Some(2));
/// assert_eq!(list[0].last_transition_time, at("2026-11-26T08:00:00Z"));
///
/// // A new status: the transition time moves.
/// assert!(conditions::set(&mut list, progressing("False", "2/3 ready", 2, "2026-11-26T08:02:00Z")));
/// assert_eq!(list[0].last_transition_time, at("2026-11-26T08:02:00Z"));
/// assert_eq!(list.len(), 1);
/// ```
pub fn set(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == new.type_) else {
        conditions.push(new);
        return true;
    };
    let mut changed = false;
    if existing.status != new.status {
        existing.status = new.status;
        existing.last_transition_time = new.last_transition_time;
        changed = true;
    }
    if existing.reason != new.reason {
        existing.reason = new.reason;
        changed = true;
    }
    if existing.message != new.message {
        existing.message = new.message;
        changed = true;
    }
    if existing.observed_generation != new.observed_generation {
        existing.observed_generation = new.observed_generation;
        changed = true;
    }
    changed
}

/// The condition of type `type_`, as `meta.FindStatusCondition`.
///
/// ```
/// use wasmcm_guest::conditions;
/// use wasmcm_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
///
/// let list: Vec<Condition> = serde_json::from_str(r#"[{"type": "Ready", "status": "False",
///     "reason": "Unavailable", "message": "0/2 ready", "lastTransitionTime": "2026-11-26T08:00:00Z"}]"#).unwrap();
/// assert_eq!(conditions::find(&list, "Ready").map(|c| c.reason.as_str()), Some("Unavailable"));
/// assert!(conditions::find(&list, "Progressing").is_none());
/// ```
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of type `type_` is there with status `"True"`, as
/// `meta.IsStatusConditionTrue`.
///
/// ```
/// use wasmcm_guest::conditions;
/// use wasmcm_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
///
/// let list: Vec<Condition> = serde_json::from_str(r#"[{"type": "Ready", "status": "True",
///     "reason": "Available", "message": "", "lastTransitionTime": "2026-11-26T08:00:00Z"}]"#).unwrap();
/// assert!(conditions::is_true(&list, "Ready"));
/// assert!(!conditions::is_true(&list, "Progressing"));
/// ```
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Instant;

    fn condition(type_: &str, status: &str, at: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: "R".into(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: Instant::parse_rfc3339(at).unwrap().time(),
        }
    }

    #[test]
    fn other_types_are_untouched_and_new_ones_appended_in_order() {
        let mut list = vec![condition("Ready", "True", "2026-01-01T00:00:00Z")];
        assert!(set(&mut list, condition("Progressing", "False", "2026-01-02T00:00:00Z")));
        assert!(!set(&mut list, condition("Ready", "True", "2026-01-03T00:00:00Z")));
        let types: Vec<&str> = list.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "Progressing"]);
        assert_eq!(list[0].last_transition_time, Instant::parse_rfc3339("2026-01-01T00:00:00Z").unwrap().time());
    }
}
