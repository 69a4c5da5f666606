//! Upstream's `utils_test.go`, restated as data: TestGetJobFromTemplate2, TestNextScheduleTime,
//! TestByJobStartTime, TestMostRecentScheduleTime, TestNextScheduleTimeDuration.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use wasmcm_core::cron::parse_standard;
use wasmcm_cronjob::api::{CronJob, Job};
use wasmcm_cronjob::fixtures::*;
use wasmcm_cronjob::utils::{
    Missed, NEXT_SCHEDULE_DELTA, SCHEDULED_TIMESTAMP_ANNOTATION, by_job_start_time, job_from_template,
    most_recent_schedule_time, next_schedule_time, next_schedule_time_duration,
};

fn typed<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

#[test]
fn job_from_template_as_upstream() {
    let scheduled = top_of_the_hour();
    // (time zone, template annotations, the scheduled annotation, how many annotations)
    let cases: &[(Option<&str>, Value, &str, usize)] = &[
        (Some("UTC"), json!({"x": "y"}), "2016-05-19T10:00:00Z", 2),
        (None, json!({"x": "y"}), "2016-05-19T10:00:00Z", 2),
        (Some("Europe/Rome"), json!({"x": "y", "z": "x"}), "2016-05-19T12:00:00+02:00", 3),
    ];
    for (zone, annotations, want, count) in cases {
        let cj =
            cron_job(json!({"spec": {"timeZone": zone, "jobTemplate": {"metadata": {"annotations": annotations}}}}));
        let job = job_from_template(&cj, scheduled).unwrap();
        let name = job["metadata"]["name"].as_str().unwrap();
        assert!(name.starts_with("mycronjob-"), "{name}");
        // Scheduled time in minutes since the epoch.
        assert_eq!(name, format!("mycronjob-{}", scheduled.as_second() / 60));
        assert_eq!(job["metadata"]["labels"], json!({"a": "b"}));
        assert_eq!(job["metadata"]["annotations"].as_object().unwrap().len(), *count, "{zone:?}");
        assert_eq!(job["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION], *want, "{zone:?}");
        assert_eq!(job["spec"], cj["spec"]["jobTemplate"]["spec"]);
        let owner = &job["metadata"]["ownerReferences"][0];
        assert_eq!(
            (&owner["apiVersion"], &owner["kind"], &owner["name"], &owner["uid"], &owner["controller"]),
            (&json!("batch/v1"), &json!("CronJob"), &json!(NAME), &json!(UID), &json!(true))
        );
    }
}

#[test]
fn next_schedule_time_as_upstream() {
    // Hourly on the hour; T1 a scheduled start time, T2 the next.
    let t1 = top_of_the_hour();
    let t2 = after_top_of_the_hour(hours(1));
    let parsed = parse_standard("0 * * * ?").unwrap();
    let cj = |created: Timestamp, last: Option<Timestamp>, deadline: Option<i64>| -> CronJob {
        typed(cron_job(json!({
            "metadata": {"creationTimestamp": created.to_string()},
            "spec": {"schedule": "0 * * * ?", "startingDeadlineSeconds": deadline},
            "status": {"lastScheduleTime": last.map(|t| t.to_string())},
        })))
    };
    // (what, the CronJob, now, the start time wanted)
    let cases: &[(&str, CronJob, Timestamp, Option<Timestamp>)] = &[
        ("no known start times, none needed yet", cj(t1 - minutes(10), None, None), t1 - minutes(7), None),
        ("no known start times, one needed", cj(t1 - minutes(10), None, None), t1 + seconds(2), Some(t1)),
        ("known LastScheduleTime, no start needed", cj(t1 - minutes(10), Some(t1), None), t1 + minutes(2), None),
        ("known LastScheduleTime, a start needed", cj(t1 - minutes(10), Some(t1), None), t2 + minutes(5), Some(t2)),
        (
            "known LastScheduleTime, two starts needed",
            cj(t1 - hours(2), Some(t1 - hours(1)), None),
            t2 + minutes(5),
            Some(t2),
        ),
    ];
    for (what, cj, now, want) in cases {
        assert_eq!(next_schedule_time(cj, *now, &parsed).time, *want, "{what}");
    }
    // Now way ahead of the last start: some missed time comes, with or without a short deadline.
    let far = t2 + hours(10 * 24);
    assert!(next_schedule_time(&cj(t1 - hours(2), Some(t1 - hours(1)), None), far, &parsed).time.is_some());
    assert!(next_schedule_time(&cj(t1 - hours(2), Some(t1 - hours(1)), Some(2 * 3600)), far, &parsed).time.is_some());
    // The error of mostRecentScheduleTime comes up: a schedule that never comes round.
    let rogue = next_schedule_time(
        &cj(t1 + seconds(10), None, None),
        after_top_of_the_hour(hours(1)),
        &parse_standard("59 23 31 2 *").unwrap(),
    );
    assert_eq!(rogue.time, None);
    assert!(rogue.error.is_some());
}

#[test]
fn jobs_sort_by_start_time_then_name_as_upstream() {
    let job = |name: &str, start: Option<&str>| -> Job {
        typed(json!({"metadata": {"name": name}, "status": {"startTime": start}}))
    };
    let (now, later) = (Some("2018-01-01T02:03:04Z"), Some("2019-01-01T02:03:04Z"));
    let cases: &[(&str, Vec<Job>, [&str; 2])] = &[
        ("both have nil start times", vec![job("b", None), job("a", None)], ["a", "b"]),
        ("only the first has a nil start time", vec![job("a", None), job("b", now)], ["b", "a"]),
        ("only the second has a nil start time", vec![job("a", now), job("b", None)], ["a", "b"]),
        ("both have non-nil, equal start time", vec![job("b", now), job("a", now)], ["a", "b"]),
        ("both have non-nil, different start time", vec![job("a", later), job("b", now)], ["b", "a"]),
    ];
    for (what, jobs, want) in cases {
        let mut jobs = jobs.clone();
        jobs.sort_by(by_job_start_time);
        let names: Vec<&str> = jobs.iter().map(|j| j.metadata.name.as_deref().unwrap()).collect();
        assert_eq!(names, want, "{what}");
    }
}

struct Recent {
    name: &'static str,
    schedule: &'static str,
    created: Timestamp,
    last: Option<Timestamp>,
    deadline: Option<i64>,
    include_deadline: bool,
    now: Timestamp,
    earliest: Timestamp,
    recent: Option<Timestamp>,
    missed: Missed,
    error: bool,
}

#[test]
fn most_recent_schedule_time_as_upstream() {
    let top = top_of_the_hour();
    let at = after_top_of_the_hour;
    let half_past = at(minutes(30));
    let base = Recent {
        name: "",
        schedule: "0 * * * *",
        created: top,
        last: None,
        deadline: None,
        include_deadline: false,
        now: top,
        earliest: top,
        recent: None,
        missed: Missed::None,
        error: false,
    };
    let cases = [
        Recent { name: "now before next schedule", now: top + seconds(30), ..base },
        Recent { name: "now just after next schedule", now: top + minutes(61), recent: Some(at(minutes(60))), ..base },
        Recent {
            name: "missed 5 schedules",
            created: at(seconds(10)),
            now: at(minutes(301)),
            recent: Some(at(minutes(300))),
            earliest: at(seconds(10)),
            missed: Missed::Few,
            ..base
        },
        Recent {
            name: "complex schedule",
            schedule: "30 6-16/4 * * 1-5",
            last: Some(half_past),
            now: at(hours(24) + minutes(31)),
            recent: Some(at(hours(24) + minutes(30))),
            earliest: half_past,
            missed: Missed::Few,
            ..base
        },
        Recent {
            name: "another complex schedule",
            schedule: "30 10,11,12 * * 1-5",
            last: Some(half_past),
            now: at(hours(30) + minutes(30)),
            recent: None,
            earliest: half_past,
            missed: Missed::Few,
            ..base
        },
        Recent {
            name: "complex schedule with longer diff between executions",
            schedule: "30 6-16/4 * * 1-5",
            last: Some(half_past),
            now: at(hours(96) + minutes(31)),
            recent: Some(at(hours(96) + minutes(30))),
            earliest: half_past,
            missed: Missed::Few,
            ..base
        },
        Recent {
            name: "complex schedule with shorter diff between executions",
            schedule: "30 6-16/4 * * 1-5",
            now: at(hours(24) + minutes(31)),
            recent: Some(at(hours(24) + minutes(30))),
            earliest: top,
            missed: Missed::Few,
            ..base
        },
        Recent {
            name: "@every schedule",
            schedule: "@every 1h",
            created: at(minutes(-59)),
            deadline: Some(10),
            last: Some(at(minutes(1))),
            now: at(hours(7 * 24)),
            recent: Some(at(hours(6 * 24 + 23) + minutes(1))),
            earliest: at(minutes(1)),
            missed: Missed::Many,
            ..base
        },
        Recent {
            name: "rogue cronjob",
            schedule: "59 23 31 2 *",
            created: at(seconds(10)),
            now: at(hours(1)),
            error: true,
            ..base
        },
        Recent {
            name: "earliestTime being CreationTimestamp and LastScheduleTime",
            last: Some(top),
            now: at(seconds(30)),
            ..base
        },
        Recent {
            name: "earliestTime being LastScheduleTime",
            schedule: "*/5 * * * *",
            last: Some(half_past),
            now: at(minutes(31)),
            earliest: half_past,
            ..base
        },
        Recent {
            name: "earliestTime being LastScheduleTime (within StartingDeadlineSeconds)",
            schedule: "*/5 * * * *",
            deadline: Some(60),
            last: Some(half_past),
            now: at(minutes(31)),
            earliest: half_past,
            ..base
        },
        Recent {
            name: "earliestTime being LastScheduleTime (outside StartingDeadlineSeconds)",
            schedule: "*/5 * * * *",
            deadline: Some(60),
            include_deadline: true,
            last: Some(half_past),
            now: at(minutes(32)),
            earliest: at(minutes(31)),
            ..base
        },
    ];
    for case in &cases {
        let cj: CronJob = typed(cron_job(json!({
            "metadata": {"creationTimestamp": case.created.to_string()},
            "spec": {"schedule": case.schedule, "startingDeadlineSeconds": case.deadline},
            "status": {"lastScheduleTime": case.last.map(|t| t.to_string())},
        })));
        let schedule = parse_standard(case.schedule).unwrap();
        let got = most_recent_schedule_time(&cj, case.now, &schedule, case.include_deadline);
        if case.error {
            assert!(got.error.is_some(), "{}: an error", case.name);
            continue;
        }
        assert_eq!(got.error, None, "{}", case.name);
        assert_eq!(got.earliest, case.earliest, "{}: earliest", case.name);
        assert_eq!(got.recent, case.recent, "{}: most recent", case.name);
        assert_eq!(got.missed, case.missed, "{}: missed", case.name);
    }
}

#[test]
fn next_schedule_time_duration_as_upstream() {
    let top = top_of_the_hour();
    let at = after_top_of_the_hour;
    // (what, schedule, last schedule time, now, wanted)
    let cases: &[(&str, &str, Option<Timestamp>, Timestamp, SignedDuration)] = &[
        (
            "complex schedule skipping weekend",
            "30 6-16/4 * * 1-5",
            Some(at(minutes(30))),
            at(hours(24) + minutes(31)),
            hours(3) + minutes(59),
        ),
        (
            "another complex schedule skipping weekend",
            "30 10,11,12 * * 1-5",
            Some(at(minutes(30))),
            at(hours(30) + minutes(30)),
            hours(66),
        ),
        (
            "once a week cronjob, missed two runs",
            "0 12 * * 4",
            Some(at(hours(2))),
            at(hours(19 * 24 + 1) + minutes(30)),
            hours(48) + minutes(30),
        ),
        ("no previous run of a cronjob", "0 12 * * 5", None, at(hours(6)), hours(20)),
    ];
    for (what, schedule, last, now, want) in cases {
        let cj: CronJob = typed(cron_job(json!({
            "metadata": {"creationTimestamp": top.to_string()},
            "spec": {"schedule": schedule},
            "status": {"lastScheduleTime": last.map(|t| t.to_string())},
        })));
        let got = next_schedule_time_duration(&cj, *now, &parse_standard(schedule).unwrap());
        assert!(got >= SignedDuration::ZERO, "{what}: never negative");
        assert_eq!(got, *want + NEXT_SCHEDULE_DELTA, "{what}");
    }
}
