//! `success_policy.go`: whether an Indexed Job's succeeded indexes meet a rule of its
//! `successPolicy` (all of `succeededIndexes`, or `succeededCount` of them, or `succeededCount`
//! indexes of any), and the SuccessCriteriaMet condition it leads to.

use k8s_openapi::api::batch::v1::{Job, JobCondition, SuccessPolicy};

use crate::indexed_job_utils::{OrderedIntervals, parse_indexes_from_string};

/// `matchSuccessPolicy`: the condition's message ("Matched rules at index <i>") when a rule is
/// met.
pub fn match_success_policy(
    policy: Option<&SuccessPolicy>,
    completions: i32,
    succeeded_indexes: &OrderedIntervals,
) -> Option<String> {
    let policy = policy?;
    if succeeded_indexes.is_empty() {
        return None;
    }
    for (index, rule) in policy.rules.iter().enumerate() {
        let matched = if let Some(indexes) = &rule.succeeded_indexes {
            let required = parse_indexes_from_string(indexes, completions);
            // A rule whose indexes do not parse (or lie beyond completions) matches nothing.
            if required.is_empty() {
                continue;
            }
            match_succeeded_indexes_rule(&required, succeeded_indexes, rule.succeeded_count)
        } else {
            rule.succeeded_count.is_some_and(|count| succeeded_indexes.total() >= i64::from(count))
        };
        if matched {
            return Some(format!("Matched rules at index {index}"));
        }
    }
    None
}

/// `hasSuccessCriteriaMetCondition`: the SuccessCriteriaMet=True condition, if the Job has it.
pub fn has_success_criteria_met_condition(job: &Job) -> Option<&JobCondition> {
    job.status.as_ref()?.conditions.iter().flatten().find(|c| is_success_criteria_met_condition(Some(c)))
}

/// `isSuccessCriteriaMetCondition`.
pub fn is_success_criteria_met_condition(condition: Option<&JobCondition>) -> bool {
    condition.is_some_and(|c| c.type_ == "SuccessCriteriaMet" && c.status == "True")
}

/// `matchSucceededIndexesRule`: every index of the rule succeeded, or `succeeded_count` of them.
pub fn match_succeeded_indexes_rule(
    rule_indexes: &OrderedIntervals,
    succeeded_indexes: &OrderedIntervals,
    succeeded_count: Option<i32>,
) -> bool {
    let (rule, succeeded) = (rule_indexes.intervals(), succeeded_indexes.intervals());
    let (mut contains, mut s, mut r) = (0i64, 0, 0);
    while r < rule.len() && s < succeeded.len() {
        let overlap = rule[r].1.min(succeeded[s].1) - rule[r].0.max(succeeded[s].0) + 1;
        if overlap > 0 {
            contains += overlap;
        }
        match succeeded[s].1.cmp(&rule[r].1) {
            std::cmp::Ordering::Less => s += 1,
            std::cmp::Ordering::Greater => r += 1,
            std::cmp::Ordering::Equal => {
                s += 1;
                r += 1;
            }
        }
    }
    contains == rule_indexes.total() || succeeded_count.is_some_and(|count| contains >= i64::from(count))
}
