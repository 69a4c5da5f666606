//! `pod_failure_policy.go`: how a failed pod matches a Job's `podFailurePolicy`: the first rule
//! whose exit codes (of a terminated container, regular or init) or pod conditions match
//! decides: `FailJob` (with upstream's message), `Ignore` (not counted towards the backoff
//! limits), `Count`, or `FailIndex`.
//!
//! Pure: it reads the pod's status, decides nothing else.

use k8s_openapi::api::batch::v1::{PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement, PodFailurePolicyRule};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodCondition};

/// A rule's action, as the API spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    FailJob,
    FailIndex,
    Ignore,
    Count,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::FailJob => "FailJob",
            Action::FailIndex => "FailIndex",
            Action::Ignore => "Ignore",
            Action::Count => "Count",
        }
    }
}

/// What matching a failed pod against the policy gives: a Job failure message (a `FailJob`
/// rule matched), whether the failure counts towards `backoffLimit` (and
/// `backoffLimitPerIndex`), and the matched rule's action. `matchPodFailurePolicy`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matched {
    pub fail_job_message: Option<String>,
    pub count_failed: bool,
    pub action: Option<Action>,
}

impl Matched {
    fn none() -> Self {
        Matched { fail_job_message: None, count_failed: true, action: None }
    }
}

pub fn match_pod_failure_policy(policy: Option<&PodFailurePolicy>, failed_pod: &Pod) -> Matched {
    let Some(policy) = policy else { return Matched::none() };
    let namespace = failed_pod.metadata.namespace.as_deref().unwrap_or("");
    let name = failed_pod.metadata.name.as_deref().unwrap_or("");
    for (index, rule) in policy.rules.iter().enumerate() {
        let message = if let Some(requirement) = &rule.on_exit_codes {
            match_on_exit_codes(failed_pod, requirement).map(|c| {
                let code = c.state.as_ref().and_then(|s| s.terminated.as_ref()).map_or(0, |t| t.exit_code);
                format!(
                    "Container {} for pod {namespace}/{name} failed with exit code {code} matching {} rule at index \
                     {index}",
                    c.name, rule.action
                )
            })
        } else if let Some(patterns) = &rule.on_pod_conditions {
            match_on_pod_conditions(failed_pod, patterns).map(|c| {
                format!(
                    "Pod {namespace}/{name} has condition {} matching {} rule at index {index}",
                    c.type_, rule.action
                )
            })
        } else {
            None
        };
        if let Some(matched) = message.and_then(|message| action_of(rule, message)) {
            return matched;
        }
    }
    Matched::none()
}

/// The outcome of a matched rule (`message` is FailJob's); `None` for an action this build does
/// not know (the next rule is tried, as upstream's switch falls out).
fn action_of(rule: &PodFailurePolicyRule, message: String) -> Option<Matched> {
    let matched = |action, count_failed| Matched { fail_job_message: None, count_failed, action: Some(action) };
    match rule.action.as_str() {
        "Ignore" => Some(matched(Action::Ignore, false)),
        "FailIndex" => Some(matched(Action::FailIndex, true)),
        "Count" => Some(matched(Action::Count, true)),
        "FailJob" => Some(Matched { fail_job_message: Some(message), ..matched(Action::FailJob, true) }),
        _ => None,
    }
}

/// `matchOnExitCodes`: a terminated container, regular first, then init, matching.
fn match_on_exit_codes<'a>(
    pod: &'a Pod,
    requirement: &PodFailurePolicyOnExitCodesRequirement,
) -> Option<&'a ContainerStatus> {
    let status = pod.status.as_ref()?;
    let matching = |list: &'a Option<Vec<ContainerStatus>>| {
        list.iter().flatten().find(|c| {
            let Some(terminated) = c.state.as_ref().and_then(|s| s.terminated.as_ref()) else { return false };
            requirement.container_name.as_ref().is_none_or(|n| *n == c.name)
                && terminated.exit_code != 0
                && exit_code_matches(terminated.exit_code, requirement)
        })
    };
    matching(&status.container_statuses).or_else(|| matching(&status.init_container_statuses))
}

fn exit_code_matches(code: i32, requirement: &PodFailurePolicyOnExitCodesRequirement) -> bool {
    match requirement.operator.as_str() {
        "In" => requirement.values.contains(&code),
        "NotIn" => !requirement.values.contains(&code),
        _ => false,
    }
}

/// `matchOnPodConditions`: the first of the pod's conditions matching any pattern.
fn match_on_pod_conditions<'a>(
    pod: &'a Pod,
    patterns: &[k8s_openapi::api::batch::v1::PodFailurePolicyOnPodConditionsPattern],
) -> Option<&'a PodCondition> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    conditions.iter().find(|c| patterns.iter().any(|p| c.type_ == p.type_ && Some(&c.status) == p.status.as_ref()))
}
