//! pod_failure_policy_test.go's `TestMatchPodFailurePolicy`, restated as data. The two
//! "JobBackoffLimitPerIndex disabled" cases are gone with the gate (on in every release this
//! follows): their enabled twins stay.

use k8s_openapi::api::batch::v1::PodFailurePolicy;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use wasmcm_job::pod_failure_policy::{Action, match_pod_failure_policy};

/// A terminated container status (`None`: a container still running).
fn container(name: &str, exit_code: Option<i32>) -> Value {
    let mut c = json!({"name": name, "image": "i", "imageID": "", "ready": false, "restartCount": 0});
    if let Some(code) = exit_code {
        c["state"] = json!({"terminated": {"exitCode": code}});
    }
    c
}

fn failed_pod(status: Value) -> Pod {
    let mut status = status;
    status["phase"] = json!("Failed");
    serde_json::from_value(json!({"metadata": {"namespace": "default", "name": "mypod"}, "status": status})).unwrap()
}

fn exit_codes(action: &str, operator: &str, values: &[i32]) -> Value {
    json!({"action": action, "onExitCodes": {"operator": operator, "values": values}})
}

fn on_condition(action: &str, type_: &str, status: &str) -> Value {
    json!({"action": action, "onPodConditions": [{"type": type_, "status": status}]})
}

fn condition(type_: &str, status: &str) -> Value {
    json!({"conditions": [{"type": type_, "status": status}]})
}

#[test]
fn match_pod_failure_policy_as_upstream() {
    let main = |code: i32| json!({"containerStatuses": [container("main-container", Some(code))]});
    let unnamed = |code: i32| json!({"containerStatuses": [container("", Some(code))]});
    let fail_job_message = |code: i32, index: usize| {
        format!(
            "Container main-container for pod default/mypod failed with exit code {code} matching FailJob rule at index {index}"
        )
    };
    // (name, rules (None: no policy), pod status, message, counted, action)
    type Case = (&'static str, Option<Value>, Value, Option<String>, bool, Option<Action>);
    let cases: Vec<Case> = vec![
        (
            "unknown action for rule matching by exit codes - skip rule with unknown action",
            Some(json!([exit_codes("UnknownAction", "In", &[1, 2]), exit_codes("FailJob", "In", &[2, 3])])),
            main(2),
            Some(fail_job_message(2, 1)),
            true,
            Some(Action::FailJob),
        ),
        (
            "unknown action for rule matching by pod conditions - skip rule with unknown action",
            Some(json!([
                on_condition("UnkonwnAction", "DisruptionTarget", "True"),
                on_condition("Ignore", "DisruptionTarget", "True")
            ])),
            condition("DisruptionTarget", "True"),
            None,
            false,
            Some(Action::Ignore),
        ),
        (
            "unknown operator - rule with unknown action is skipped for onExitCodes",
            Some(json!([exit_codes("Ignore", "UnknownOperator", &[1, 2]), exit_codes("FailJob", "In", &[2, 3])])),
            main(2),
            Some(fail_job_message(2, 1)),
            true,
            Some(Action::FailJob),
        ),
        ("no policy rules", None, unnamed(2), None, true, None),
        (
            "ignore rule matched for exit codes",
            Some(json!([exit_codes("Ignore", "In", &[1, 2, 3])])),
            unnamed(2),
            None,
            false,
            Some(Action::Ignore),
        ),
        (
            "FailJob rule matched for exit codes",
            Some(json!([exit_codes("FailJob", "In", &[1, 2, 3])])),
            main(2),
            Some(fail_job_message(2, 0)),
            true,
            Some(Action::FailJob),
        ),
        (
            "successful containers are skipped by the rules",
            Some(json!([exit_codes("FailJob", "NotIn", &[111])])),
            json!({"initContainerStatuses": [container("init-container", Some(0))],
                   "containerStatuses": [container("main-container", Some(111)), container("suppport-container", Some(0))]}),
            None,
            true,
            None,
        ),
        (
            "FailIndex rule matched for exit codes; JobBackoffLimitPerIndex enabled",
            Some(json!([exit_codes("FailIndex", "In", &[1, 2, 3])])),
            unnamed(2),
            None,
            true,
            Some(Action::FailIndex),
        ),
        (
            "pod failure policy with NotIn operator and value 0",
            Some(json!([exit_codes("FailJob", "NotIn", &[0])])),
            json!({"containerStatuses": [container("main-container", Some(1)), container("suppport-container", Some(0))]}),
            Some(fail_job_message(1, 0)),
            true,
            Some(Action::FailJob),
        ),
        (
            "second jobfail rule matched for exit codes",
            Some(json!([exit_codes("Count", "In", &[1, 2, 3]), exit_codes("FailJob", "In", &[4, 5, 6])])),
            main(6),
            Some(fail_job_message(6, 1)),
            true,
            Some(Action::FailJob),
        ),
        (
            "count rule matched for exit codes",
            Some(json!([exit_codes("Count", "In", &[1, 2, 3])])),
            json!({"containerStatuses": [container("foo", None), container("bar", Some(2))]}),
            None,
            true,
            Some(Action::Count),
        ),
        (
            "FailIndex rule matched for pod conditions; JobBackoffLimitPerIndex enabled",
            Some(json!([on_condition("FailIndex", "DisruptionTarget", "True")])),
            condition("DisruptionTarget", "True"),
            None,
            true,
            Some(Action::FailIndex),
        ),
        (
            "ignore rule matched for pod conditions",
            Some(json!([on_condition("Ignore", "DisruptionTarget", "True")])),
            condition("DisruptionTarget", "True"),
            None,
            false,
            Some(Action::Ignore),
        ),
        (
            "ignore rule matches by the status=False",
            Some(json!([on_condition("Ignore", "DisruptionTarget", "False")])),
            condition("DisruptionTarget", "False"),
            None,
            false,
            Some(Action::Ignore),
        ),
        (
            "ignore rule matches by the status=Unknown",
            Some(json!([on_condition("Ignore", "DisruptionTarget", "Unknown")])),
            condition("DisruptionTarget", "Unknown"),
            None,
            false,
            Some(Action::Ignore),
        ),
        (
            "ignore rule does not match when status for pattern is False, but actual True",
            Some(json!([on_condition("Ignore", "DisruptionTarget", "False")])),
            condition("DisruptionTarget", "True"),
            None,
            true,
            None,
        ),
        (
            "ignore rule does not match when status for pattern is True, but actual False",
            Some(json!([on_condition("Ignore", "DisruptionTarget", "True")])),
            condition("DisruptionTarget", "False"),
            None,
            true,
            None,
        ),
        (
            "default - do not match condition with status=False",
            Some(json!([on_condition("Ignore", "DisruptionTarget", "True")])),
            condition("DisruptionTarget", "False"),
            None,
            true,
            None,
        ),
        (
            "job fail rule matched for pod conditions",
            Some(json!([on_condition("FailJob", "DisruptionTarget", "True")])),
            condition("DisruptionTarget", "True"),
            Some("Pod default/mypod has condition DisruptionTarget matching FailJob rule at index 0".into()),
            true,
            Some(Action::FailJob),
        ),
        (
            "count rule matched for pod conditions",
            Some(json!([on_condition("Count", "DisruptionTarget", "True")])),
            condition("DisruptionTarget", "True"),
            None,
            true,
            Some(Action::Count),
        ),
        (
            "no rule matched",
            Some(json!([
                exit_codes("Count", "NotIn", &[8]),
                exit_codes("Ignore", "In", &[1, 2, 3]),
                exit_codes("FailJob", "NotIn", &[5, 6, 7]),
                on_condition("Count", "ResourceLimitExceeded", "True"),
                on_condition("Ignore", "DisruptionTarget", "True"),
            ])),
            unnamed(32),
            None,
            true,
            Some(Action::Count),
        ),
    ];
    for (name, rules, status, message, counted, action) in cases {
        let policy: Option<PodFailurePolicy> = rules.map(|r| serde_json::from_value(json!({"rules": r})).unwrap());
        let got = match_pod_failure_policy(policy.as_ref(), &failed_pod(status));
        assert_eq!((got.fail_job_message, got.count_failed, got.action), (message, counted, action), "{name}");
    }
}
