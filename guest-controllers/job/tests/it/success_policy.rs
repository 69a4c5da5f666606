//! success_policy_test.go's `TestMatchSuccessPolicy`, restated as data. ("JobSuccessPolicy is
//! disabled" is gone with the gate, which is on in every release this follows: it is "successPolicy
//! is null".)

use k8s_openapi::api::batch::v1::SuccessPolicy;
use serde_json::json;
use wasmcm_job::indexed_job_utils::OrderedIntervals;
use wasmcm_job::success_policy::match_success_policy;

/// (name, rules as JSON (None: no successPolicy), completions, succeeded indexes, the message
/// when met)
type Case = (&'static str, Option<serde_json::Value>, i32, &'static [(i64, i64)], Option<&'static str>);

#[test]
fn match_success_policy_as_upstream() {
    let at0 = Some("Matched rules at index 0");
    let idx = |s: &str| json!([{"succeededIndexes": s}]);
    let both = |s: &str, n: i32| json!([{"succeededIndexes": s, "succeededCount": n}]);
    let cases: Vec<Case> = vec![
        ("successPolicy is null", None, 10, &[(0, 0)], None),
        ("any rules are nothing", Some(json!([])), 10, &[(0, 0)], None),
        ("rules.succeededIndexes is invalid format", Some(idx("invalid-form")), 10, &[(0, 0)], None),
        ("succeededIndexes matched rules", Some(idx("0-2")), 10, &[(0, 2), (4, 7)], at0),
        ("succeededIndexes didn't match rules", Some(idx("3")), 10, &[(0, 2)], None),
        ("succeededCount matched", Some(json!([{"succeededCount": 2}])), 10, &[(0, 2)], at0),
        ("succeededCount didn't match", Some(json!([{"succeededCount": 4}])), 10, &[(0, 2)], None),
        (
            "multiple rules; met one of rules",
            Some(json!([{"succeededIndexes": "9"}, {"succeededIndexes": "4,6"}])),
            10,
            &[(0, 2), (4, 7)],
            Some("Matched rules at index 1"),
        ),
        (
            "multiple rules; met all rules",
            Some(json!([{"succeededIndexes": "0,1"}, {"succeededIndexes": "5"}])),
            10,
            &[(0, 2), (4, 7)],
            at0,
        ),
        ("indexes and count; met", Some(both("3-6", 2)), 10, &[(0, 2), (4, 7)], at0),
        ("indexes and count; didn't match", Some(both("3-6", 2)), 10, &[(0, 2), (6, 7)], None),
        ("succeededIndexes are nothing", Some(json!([{"succeededCount": 4}])), 10, &[], None),
        ("rules is proper subset of succeededIndexes", Some(idx("2-4,6-8")), 10, &[(1, 5), (6, 9)], at0),
        ("rules equals succeededIndexes", Some(idx("2-4,6-9")), 10, &[(2, 4), (6, 9)], at0),
        ("rules is subset of succeededIndexes", Some(idx("2-4,8-12")), 10, &[(2, 5), (7, 15)], at0),
        ("rules is an empty set", Some(idx("")), 10, &[(1, 3)], None),
        ("succeededIndexes is an empty set", Some(idx("")), 10, &[], None),
        ("rules and succeededIndexes are empty set", Some(idx("")), 10, &[], None),
        ("no element of the rule succeeded", Some(idx("10-12,14-16")), 10, &[(1, 3), (5, 7)], None),
        ("rules overlaps succeededIndexes at first", Some(idx("1-3,5-7")), 10, &[(2, 4), (6, 8)], None),
        ("with count; overlaps at first", Some(both("1-3,5-7", 4)), 10, &[(2, 4), (6, 8)], at0),
        ("rules overlaps succeededIndexes at last", Some(idx("2-4,6-9")), 10, &[(1, 3), (5, 7)], None),
        ("with count; overlaps at last", Some(both("2-4,6-9", 4)), 10, &[(1, 3), (5, 7)], at0),
        ("rules completely overlaps succeededIndexes", Some(idx("0-4,6-9")), 10, &[(1, 3), (7, 8)], None),
        ("with count; completely overlaps", Some(both("0-4,6-9", 5)), 10, &[(1, 3), (7, 8)], at0),
        ("overlaps multiple succeededIndexes at last", Some(idx("0-6,8-9")), 10, &[(1, 3), (5, 9)], None),
        ("with count; overlaps multiple at last", Some(both("0-6,8-9", 7)), 10, &[(1, 3), (5, 9)], at0),
        ("overlaps at first, equals at last", Some(idx("0-5,7-9")), 10, &[(1, 5), (7, 10)], None),
        ("with count; overlaps at first, equals at last", Some(both("0-5,7-9", 8)), 10, &[(1, 5), (7, 10)], at0),
        ("the first rule overlaps at first", Some(idx("0-3,6-9")), 10, &[(1, 10)], None),
        ("with count; the first rule overlaps at first", Some(both("0-3,6-9", 7)), 10, &[(1, 10)], at0),
    ];
    for (name, rules, completions, succeeded, want) in cases {
        let policy: Option<SuccessPolicy> = rules.map(|r| serde_json::from_value(json!({"rules": r})).unwrap());
        let got = match_success_policy(policy.as_ref(), completions, &OrderedIntervals::from_intervals(succeeded));
        assert_eq!(got.as_deref(), want, "{name}");
    }
}
