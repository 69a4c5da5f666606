//! Upstream's `cronjob_controllerv2_test.go`, restated as data: TestControllerV2SyncCronJob's
//! table (every row, with the few whose meaning changes in a plugin noted where they are),
//! TestControllerV2CleanupFinishedJobs, TestControllerV2GetJobsToBeReconciled and the
//! AlreadyExists tests; then what the plugin's batches and requeue look like.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use wasmcm_cronjob::CronJobController;
use wasmcm_cronjob::api::{CronJob, Job};
use wasmcm_cronjob::fixtures::*;
use wasmcm_cronjob::sync::{Writes, jobs_to_be_reconciled, sync_cron_job};
use wasmcm_cronjob::utils::{self, NEXT_SCHEDULE_DELTA};
use wasmcm_guest::{Controller, EventType, Intent};

fn typed<T: serde::de::DeserializeOwned>(v: &Value) -> T {
    serde_json::from_value(v.clone()).expect("a valid object")
}

const ON_THE_HOUR: &str = "0 * * * ?";
const EVERY_HOUR: &str = "@every 1h";
const ERROR_SCHEDULE: &str = "obvious error schedule";
const NEW_YORK: &str = "America/New_York";
const SHORT: Option<i64> = Some(10);
const MEDIUM: Option<i64> = Some(2 * 60 * 60);
const LONG: Option<i64> = Some(1_000_000);

/// One row of TestControllerV2SyncCronJob.
#[derive(Clone, Default)]
struct Row {
    name: &'static str,
    policy: &'static str,
    suspend: bool,
    schedule: &'static str,
    time_zone: Option<&'static str>,
    deadline: Option<i64>,
    ran_previously: bool,
    still_active: bool,
    cronjob_creation_time: Option<Timestamp>,
    job_creation_time: Timestamp,
    last_schedule_time: Option<Timestamp>,
    now: Timestamp,
    /// Upstream's `jobCreateError: AlreadyExists`: here the cache holds the due Job, ours.
    due_job_exists: bool,
    expect_create: bool,
    expect_delete: bool,
    expect_active: usize,
    expected_warnings: usize,
    /// Beside creates, deletes, warnings and Forbid's JobAlreadyActive (upstream's count).
    expected_other_events: usize,
    expect_requeue: Option<SignedDuration>,
    expect_update_status: bool,
    job_still_not_found_in_lister: bool,
    job_present_in_cj_active_status: bool,
}

fn rows() -> Vec<Row> {
    let r = |name| Row { name, job_present_in_cj_active_status: true, ..Row::default() };
    let requeue = |d: SignedDuration| Some(d + NEXT_SCHEDULE_DELTA);
    let hour = hours(1);
    let minute = minutes(1);
    let ms100 = SignedDuration::from_millis(100);
    let mut rows = Vec::new();
    for (p, policy) in [("A", "Allow"), ("F", "Forbid"), ("R", "Forbid")] {
        // Upstream's "R" row of invalid schedules uses Forbid too.
        rows.push(Row {
            policy,
            schedule: ERROR_SCHEDULE,
            job_creation_time: just_after_the_prior_hour(),
            now: just_before_the_hour(),
            expected_warnings: 1,
            ..r(leak(format!("never ran, not valid schedule, {p}")))
        });
    }
    rows.push(Row {
        policy: "Allow",
        schedule: ON_THE_HOUR,
        time_zone: Some("bad timezone"),
        job_creation_time: just_after_the_prior_hour(),
        now: just_before_the_hour(),
        expected_warnings: 1,
        ..r("never ran, not valid time zone")
    });
    for (p, policy) in [("A", "Allow"), ("F", "Forbid"), ("R", "Replace")] {
        rows.push(Row {
            policy,
            schedule: ON_THE_HOUR,
            job_creation_time: just_after_the_prior_hour(),
            now: just_before_the_hour(),
            expect_requeue: requeue(minute),
            ..r(leak(format!("never ran, not time, {p}")))
        });
    }
    rows.push(Row {
        policy: "Allow",
        schedule: ON_THE_HOUR,
        time_zone: Some(NEW_YORK),
        job_creation_time: just_after_the_prior_hour(),
        now: just_before_the_hour(),
        expect_requeue: requeue(minute),
        ..r("never ran, not time in zone")
    });
    let is_time = |name, policy| Row {
        policy,
        schedule: ON_THE_HOUR,
        job_creation_time: just_after_the_prior_hour(),
        now: just_after_the_hour(),
        expect_create: true,
        expect_active: 1,
        expect_requeue: requeue(hour - minute),
        expect_update_status: true,
        ..r(name)
    };
    rows.push(is_time("never ran, is time, A", "Allow"));
    rows.push(is_time("never ran, is time, F", "Forbid"));
    rows.push(is_time("never ran, is time, R", "Replace"));
    // justAfterTheHourInZone parses "…10:01:00Z" in New York: the Z wins, it is 10:01 UTC.
    rows.push(Row {
        time_zone: Some(NEW_YORK),
        ..is_time("never ran, is time in zone, but time zone disabled", "Allow")
    });
    rows.push(Row { time_zone: Some(NEW_YORK), ..is_time("never ran, is time in zone", "Allow") });
    rows.push(Row {
        schedule: "TZ=UTC 0 * * * ?",
        time_zone: Some(NEW_YORK),
        expected_warnings: 1,
        ..is_time("never ran, is time in zone, but TZ is also set in schedule", "Allow")
    });
    rows.push(Row {
        policy: "Allow",
        suspend: true,
        schedule: ON_THE_HOUR,
        job_creation_time: just_after_the_prior_hour(),
        now: just_after_the_hour(),
        ..r("never ran, is time, suspended")
    });
    rows.push(Row {
        policy: "Allow",
        schedule: ON_THE_HOUR,
        deadline: SHORT,
        job_creation_time: just_after_the_prior_hour(),
        now: just_after_the_hour() + minutes(10 + 1),
        expect_requeue: requeue(hour - minute - minutes(10 + 1)),
        ..r("never ran, is time, past deadline")
    });
    rows.push(Row { deadline: LONG, ..is_time("never ran, is time, not past deadline", "Allow") });

    let prev_not_time = |name, policy| Row {
        policy,
        schedule: ON_THE_HOUR,
        ran_previously: true,
        job_creation_time: just_after_the_prior_hour(),
        now: just_before_the_hour(),
        expect_requeue: requeue(minute),
        expect_update_status: true,
        ..r(name)
    };
    rows.push(prev_not_time("prev ran but done, not time, A", "Allow"));
    rows.push(prev_not_time("prev ran but done, not time, F", "Forbid"));
    rows.push(prev_not_time("prev ran but done, not time, R", "Replace"));
    let prev_is_time = |name, policy| Row { ran_previously: true, ..is_time(name, policy) };
    rows.push(prev_is_time("prev ran but done, is time, A", "Allow"));
    // Upstream's create answered AlreadyExists: the Job of the due time exists, ours and not in
    // the active list. Here the cache holds it, and it is recorded (active, last schedule time)
    // instead of created again.
    for (name, present) in [
        ("prev ran but done, is time, create job failed, A", true),
        ("prev ran but done, is time, job not present in CJ active status, create job failed, A", false),
    ] {
        rows.push(Row {
            due_job_exists: true,
            expect_create: false,
            job_present_in_cj_active_status: present,
            ..prev_is_time(name, "Allow")
        });
    }
    rows.push(prev_is_time("prev ran but done, is time, F", "Forbid"));
    rows.push(prev_is_time("prev ran but done, is time, R", "Replace"));
    rows.push(Row {
        policy: "Allow",
        suspend: true,
        schedule: ON_THE_HOUR,
        ran_previously: true,
        job_creation_time: just_after_the_prior_hour(),
        now: just_after_the_hour(),
        expect_update_status: true,
        ..r("prev ran but done, is time, suspended")
    });
    rows.push(Row {
        policy: "Allow",
        schedule: ON_THE_HOUR,
        deadline: SHORT,
        ran_previously: true,
        job_creation_time: just_after_the_prior_hour(),
        now: just_after_the_hour(),
        expect_requeue: requeue(hour - minute),
        expect_update_status: true,
        ..r("prev ran but done, is time, past deadline")
    });
    rows.push(Row { deadline: LONG, ..prev_is_time("prev ran but done, is time, not past deadline", "Allow") });

    let active_not_time = |name, policy| Row {
        policy,
        schedule: ON_THE_HOUR,
        ran_previously: true,
        still_active: true,
        job_creation_time: just_after_the_prior_hour(),
        now: just_before_the_hour(),
        expect_active: 1,
        expect_requeue: requeue(minute),
        ..r(name)
    };
    rows.push(active_not_time("still active, not time, A", "Allow"));
    rows.push(active_not_time("still active, not time, F", "Forbid"));
    rows.push(active_not_time("still active, not time, R", "Replace"));
    let active_is_time = |name, policy| Row {
        policy,
        schedule: ON_THE_HOUR,
        ran_previously: true,
        still_active: true,
        job_creation_time: just_after_the_prior_hour(),
        now: just_after_the_hour(),
        expect_requeue: requeue(hour - minute),
        ..r(name)
    };
    rows.push(Row {
        expect_create: true,
        expect_active: 2,
        expect_update_status: true,
        ..active_is_time("still active, is time, A", "Allow")
    });
    rows.push(Row { expect_active: 1, ..active_is_time("still active, is time, F", "Forbid") });
    rows.push(Row {
        expect_create: true,
        expect_delete: true,
        expect_active: 1,
        expect_update_status: true,
        ..active_is_time("still active, is time, R", "Replace")
    });
    // "still active, is time, get job failed, R" is a failed GET of the API: a plugin reads
    // the cache, which cannot fail that way.
    rows.push(Row {
        suspend: true,
        expect_active: 1,
        expect_requeue: None,
        ..active_is_time("still active, is time, suspended", "Allow")
    });
    rows.push(Row {
        deadline: SHORT,
        expect_active: 1,
        ..active_is_time("still active, is time, past deadline", "Allow")
    });
    rows.push(Row {
        deadline: LONG,
        expect_create: true,
        expect_active: 2,
        expect_update_status: true,
        ..active_is_time("still active, is time, not past deadline", "Allow")
    });

    // Too many missed start times and a deadline too long (or none) to skip them: a warning,
    // and the most recent time is started all the same.
    for (deadline, d, warnings) in [("not past deadline", LONG, 1), ("no deadline", None, 1)] {
        for (p, policy) in [("A", "Allow"), ("R", "Replace"), ("F", "Forbid")] {
            rows.push(Row {
                policy,
                schedule: ON_THE_HOUR,
                deadline: d,
                ran_previously: true,
                job_creation_time: just_after_the_prior_hour(),
                now: week_after_the_hour(),
                expect_create: true,
                expect_active: 1,
                expected_warnings: warnings,
                expect_requeue: requeue(hour),
                expect_update_status: true,
                ..r(leak(format!("prev ran but done, long overdue, {deadline}, {p}")))
            });
        }
    }
    for (p, policy) in [("A", "Allow"), ("R", "Replace"), ("F", "Forbid")] {
        for (deadline, d) in [("past medium deadline", MEDIUM), ("past short deadline", SHORT)] {
            rows.push(Row {
                policy,
                schedule: ON_THE_HOUR,
                deadline: d,
                ran_previously: true,
                job_creation_time: just_after_the_prior_hour(),
                now: week_after_the_hour(),
                expect_create: true,
                expect_active: 1,
                expect_requeue: requeue(hour),
                expect_update_status: true,
                ..r(leak(format!("prev ran but done, long overdue, {deadline}, {p}")))
            });
        }
    }
    // Time skew: the Job finished "after" now; nothing to start.
    rows.push(Row {
        policy: "Forbid",
        schedule: ON_THE_HOUR,
        ran_previously: true,
        job_creation_time: just_after_the_hour(),
        now: just_before_the_hour(),
        expect_requeue: requeue(minute),
        expect_update_status: true,
        job_present_in_cj_active_status: false,
        ..r("this ran but done, time drifted back, F")
    });
    // A slow job lister. Upstream finds the Job by a GET and keeps it active; here the cache is
    // what there is, and the host holds a CronJob's reconcile until its cache has the Jobs it
    // created, so an active Job the cache does not have is gone: MissingJob, and the due time's
    // Job is created (the same requeue).
    for (p, policy) in [("A", "Allow"), ("f", "Forbid"), ("R", "Replace")] {
        rows.push(Row {
            policy,
            schedule: ON_THE_HOUR,
            deadline: LONG,
            ran_previously: true,
            still_active: true,
            job_creation_time: top_of_the_hour() + ms100,
            now: just_after_the_hour() + ms100,
            expect_create: true,
            expect_active: 1,
            expected_other_events: 1,
            expect_update_status: true,
            expect_requeue: requeue(hour - minute - ms100),
            job_still_not_found_in_lister: true,
            ..r(leak(format!("this started but went missing, not past deadline, {p}")))
        });
    }
    // A slow CronJob lister: the Job is there, its reference not yet. Upstream GETs the CronJob
    // and finds the reference; here the Job, named for its scheduled time and not older than the
    // last schedule time, is recorded (so the status is written).
    for (p, policy) in [("A", "Allow"), ("f", "Forbid"), ("R", "Replace")] {
        rows.push(Row {
            policy,
            schedule: ON_THE_HOUR,
            deadline: LONG,
            ran_previously: true,
            still_active: true,
            job_creation_time: top_of_the_hour() + ms100,
            now: just_after_the_hour() + ms100,
            expect_active: 1,
            expect_update_status: true,
            expect_requeue: requeue(hour - minute - ms100),
            job_present_in_cj_active_status: false,
            ..r(leak(format!("this started but is not present in cronjob active list, not past deadline, {p}")))
        });
    }

    let every = |name, fields: Row| Row { policy: "Allow", schedule: EVERY_HOUR, ..fields.clone_named(name) };
    rows.push(every(
        "with @every schedule, never ran, not time",
        Row {
            cronjob_creation_time: Some(just_before_the_hour()),
            job_creation_time: just_before_the_hour(),
            now: top_of_the_hour(),
            expect_requeue: requeue(hour - minute),
            ..r("")
        },
    ));
    rows.push(every(
        "with @every schedule, never ran, is time",
        Row {
            cronjob_creation_time: Some(just_before_the_prior_hour()),
            job_creation_time: just_before_the_prior_hour(),
            now: just_before_the_hour(),
            expect_requeue: requeue(hour),
            expect_create: true,
            expect_active: 1,
            expect_update_status: true,
            ..r("")
        },
    ));
    rows.push(every(
        "with @every schedule, never ran, is time, past deadline",
        Row {
            deadline: SHORT,
            cronjob_creation_time: Some(just_before_the_prior_hour()),
            job_creation_time: just_before_the_prior_hour(),
            now: just_before_the_hour() + seconds(10 + 1),
            expect_requeue: requeue(hour - seconds(10 + 1)),
            ..r("")
        },
    ));
    rows.push(every(
        "with @every schedule, never ran, is time, not past deadline",
        Row {
            deadline: LONG,
            cronjob_creation_time: Some(just_before_the_prior_hour()),
            job_creation_time: just_before_the_prior_hour(),
            now: just_before_the_hour() + seconds(10 - 1),
            expect_create: true,
            expect_active: 1,
            expect_requeue: requeue(hour - seconds(10 - 1)),
            expect_update_status: true,
            ..r("")
        },
    ));
    let every_prev = Row {
        ran_previously: true,
        cronjob_creation_time: Some(just_before_the_prior_hour()),
        job_creation_time: just_before_the_prior_hour(),
        last_schedule_time: Some(just_before_the_hour()),
        expect_update_status: true,
        ..r("")
    };
    rows.push(every(
        "with @every schedule, prev ran but done, not time",
        Row { now: top_of_the_hour(), expect_requeue: requeue(hour - minute), ..every_prev.clone() },
    ));
    rows.push(every(
        "with @every schedule, prev ran but done, is time",
        Row {
            now: top_of_the_hour() + hour,
            expect_create: true,
            expect_active: 1,
            expect_requeue: requeue(hour - minute),
            ..every_prev.clone()
        },
    ));
    rows.push(every(
        "with @every schedule, prev ran but done, is time, past deadline",
        Row {
            deadline: SHORT,
            now: just_before_the_next_hour() + seconds(10 + 1),
            expect_requeue: requeue(hour - seconds(10 + 1)),
            ..every_prev.clone()
        },
    ));
    let every_active = Row {
        ran_previously: true,
        still_active: true,
        cronjob_creation_time: Some(just_before_the_prior_hour()),
        job_creation_time: just_before_the_hour(),
        last_schedule_time: Some(just_before_the_hour()),
        expect_active: 1,
        ..r("")
    };
    rows.push(every(
        "with @every schedule, still active, not time",
        Row { now: top_of_the_hour(), expect_requeue: requeue(hour - minute), ..every_active.clone() },
    ));
    rows.push(every(
        "with @every schedule, still active, is time",
        Row {
            job_creation_time: just_before_the_prior_hour(),
            last_schedule_time: Some(just_before_the_prior_hour()),
            now: just_after_the_hour(),
            expect_create: true,
            expect_active: 2,
            expect_requeue: requeue(hour - minutes(2)),
            expect_update_status: true,
            ..every_active.clone()
        },
    ));
    rows.push(every(
        "with @every schedule, still active, is time, past deadline",
        Row {
            deadline: SHORT,
            now: just_before_the_next_hour() + seconds(10 + 1),
            expect_requeue: requeue(hour - seconds(10 + 1)),
            ..every_active.clone()
        },
    ));
    rows.push(every(
        "with @every schedule, still active, is time, not past deadline",
        Row {
            deadline: LONG,
            now: just_before_the_next_hour() + seconds(10 - 1),
            expect_create: true,
            expect_active: 2,
            expect_requeue: requeue(hour - seconds(10 - 1)),
            expect_update_status: true,
            ..every_active.clone()
        },
    ));
    let overdue = Row {
        ran_previously: true,
        cronjob_creation_time: Some(just_after_the_prior_hour()),
        last_schedule_time: Some(just_after_the_hour()),
        job_creation_time: just_after_the_prior_hour(),
        expect_update_status: true,
        ..r("")
    };
    rows.push(every(
        "with @every schedule, prev ran but done, long overdue, no deadline",
        Row {
            now: week_after_the_hour(),
            expect_create: true,
            expect_active: 1,
            expected_warnings: 1,
            expect_requeue: requeue(minute),
            ..overdue.clone()
        },
    ));
    // Upstream says expectActive 1 here, which its harness never checks (syncCronJob writes no
    // status): nothing is active, as nothing is started.
    rows.push(every(
        "with @every schedule, prev ran but done, long overdue, past deadline",
        Row {
            deadline: SHORT,
            now: week_after_the_hour() + minute + seconds(10 + 1),
            expect_requeue: requeue(hour - seconds(10 + 1)),
            ..overdue
        },
    ));
    // "do nothing if the namespace is terminating" is the API's answer to the create: the
    // host's to handle, not the plugin's.
    rows
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

impl Row {
    fn clone_named(&self, name: &'static str) -> Row {
        Row { name, ..self.clone() }
    }
}

#[test]
fn sync_cron_job_as_upstreams_table() {
    let rows = rows();
    assert!(rows.len() >= 68, "every row but three restated: {}", rows.len());
    let mut failures = Vec::new();
    for row in &rows {
        if let Err(e) = check(row) {
            failures.push(format!("{}: {e}", row.name));
        }
    }
    assert!(failures.is_empty(), "{} of {} rows differ:\n{}", failures.len(), rows.len(), failures.join("\n"));
}

fn check(tc: &Row) -> Result<(), String> {
    let mut cj = cron_job(json!({"spec": {
        "concurrencyPolicy": tc.policy, "suspend": tc.suspend, "schedule": tc.schedule,
        "timeZone": tc.time_zone, "startingDeadlineSeconds": tc.deadline,
    }}));
    let mut lister: Vec<Value> = Vec::new();
    if tc.ran_previously {
        cj["metadata"]["creationTimestamp"] =
            json!(tc.cronjob_creation_time.unwrap_or_else(just_before_the_prior_hour).to_string());
        cj["status"]["lastScheduleTime"] =
            json!(tc.last_schedule_time.unwrap_or_else(just_after_the_prior_hour).to_string());
        let mut job = job(&cj, tc.job_creation_time, "1234", json!({}));
        // Upstream's Job carries its scheduled time as creation time.
        job["metadata"]["creationTimestamp"] = json!(tc.job_creation_time.to_string());
        if tc.still_active {
            if tc.job_present_in_cj_active_status {
                cj["status"]["active"] = json!([reference(&job)]);
            }
        } else {
            merge(&mut job, finished("Complete", tc.job_creation_time + seconds(10)));
        }
        if !tc.job_still_not_found_in_lister {
            lister.push(job);
        }
    } else {
        cj["metadata"]["creationTimestamp"] =
            json!(tc.cronjob_creation_time.unwrap_or_else(just_before_the_hour).to_string());
        assert!(!tc.still_active, "{}: test setup error: this case makes no sense", tc.name);
    }
    if tc.due_job_exists {
        lister.push(job(&cj, top_of_the_hour(), "5678", json!({})));
    }
    let mut objects = vec![cj.clone()];
    objects.extend(lister.iter().cloned());
    let cache = cache(&objects);
    let mut copy: CronJob = typed(&cj);
    let jobs: Vec<Job> = lister.iter().map(typed).collect();
    let mut writes = Writes::default();
    let synced = sync_cron_job(&mut copy, &jobs, tc.now, &cache, &mut writes).map_err(|e| format!("error: {e}"))?;

    let mut problems = Vec::new();
    if tc.expect_requeue.is_some() && synced.requeue_after != tc.expect_requeue {
        problems.push(format!("requeueAfter {:?}, want {:?}", synced.requeue_after, tc.expect_requeue));
    }
    if synced.update_status != tc.expect_update_status {
        problems.push(format!("updateStatus {}, want {}", synced.update_status, tc.expect_update_status));
    }
    if tc.ran_previously && !tc.still_active {
        let want = tc.job_creation_time + seconds(10);
        let got = copy.status.as_ref().and_then(|s| s.last_successful_time.as_ref()).map(|t| t.0);
        if got != Some(want) {
            problems.push(format!("lastSuccessfulTime {got:?}, want {want}"));
        }
    }
    if writes.create.is_some() != tc.expect_create {
        problems.push(format!("created {}, want {}", writes.create.is_some(), tc.expect_create));
    }
    if let Some((job, _)) = &writes.create {
        let owner = &job["metadata"]["ownerReferences"][0];
        let want = json!({"apiVersion": "batch/v1", "kind": "CronJob", "name": NAME, "uid": UID,
                          "controller": true, "blockOwnerDeletion": true});
        if *owner != want {
            problems.push(format!("controllerRef {owner}"));
        }
    }
    if writes.deletes.len() != usize::from(tc.expect_delete) {
        problems.push(format!("deleted {}, want {}", writes.deletes.len(), usize::from(tc.expect_delete)));
    }
    let mut events: Vec<_> = writes.events.clone();
    events.extend(writes.deletes.iter().map(|(_, e)| e.clone()));
    events.extend(writes.create.iter().map(|(_, e)| e.clone()));
    let already_active = usize::from(tc.name == "still active, is time, F");
    let want_events = usize::from(tc.expect_create)
        + usize::from(tc.expect_delete)
        + already_active
        + tc.expected_warnings
        + tc.expected_other_events;
    if events.len() != want_events {
        problems.push(format!("{} events, want {want_events}: {events:?}", events.len()));
    }
    let warnings = events.iter().filter(|e| e.event_type == EventType::Warning).count();
    if warnings != tc.expected_warnings {
        problems.push(format!("{warnings} warnings, want {}", tc.expected_warnings));
    }
    let active = utils::active(&copy).len();
    if active != tc.expect_active {
        problems.push(format!("{active} active, want {}", tc.expect_active));
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}

/// TestControllerV2CleanupFinishedJobs, through the whole reconcile.
#[test]
fn finished_jobs_past_the_history_limit_are_deleted_as_upstream() {
    let fooer = |limit: i32| {
        json!({"apiVersion": "batch/v1", "kind": "CronJob",
               "metadata": {"name": "fooer", "namespace": "foo-ns", "uid": "fooer-uid", "resourceVersion": "3",
                            "creationTimestamp": just_before_the_prior_hour().to_string()},
               "spec": {"schedule": ON_THE_HOUR, "successfulJobsHistoryLimit": limit,
                        "jobTemplate": {"metadata": {"labels": {"key": "value"}}, "spec": {"template": {}}}},
               "status": {"lastScheduleTime": just_after_the_prior_hour().to_string()}})
    };
    let finished_job = |name: &str, start: Timestamp| {
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": name, "namespace": "foo-ns", "uid": format!("{name}-uid"),
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": "fooer",
                                                 "uid": "", "controller": true}]},
               "status": {"startTime": start.to_string(), "conditions": [{"type": "Complete", "status": "True"}]}})
    };
    // (what, now, the limit, the finished Jobs, what is deleted)
    type Case<'a> = (&'a str, Timestamp, i32, Vec<Value>, &'a [&'a str]);
    let cases: &[Case] = &[
        (
            "jobs are still deleted when a cronjob can't create jobs due to jobs quota being reached (avoiding a deadlock)",
            just_after_the_hour(),
            1,
            vec![
                finished_job("finished-job-started-hour-ago", just_before_the_prior_hour()),
                finished_job("finished-job-started-minute-ago", just_before_the_hour()),
            ],
            &["finished-job-started-hour-ago"],
        ),
        (
            "jobs are not deleted if history limit not reached",
            just_before_the_hour(),
            2,
            vec![finished_job("finished-job-started-hour-ago", just_before_the_prior_hour())],
            &[],
        ),
    ];
    for (what, now, limit, jobs, want) in cases {
        let mut objects = vec![fooer(*limit)];
        objects.extend(jobs.iter().cloned());
        let request = wasmcm_guest::Request::new("foo-ns", "fooer", wasmcm_guest::Instant::from_timestamp(*now));
        let outcome = CronJobController::reconcile(&request, &cache(&objects)).unwrap();
        let deleted: Vec<&str> = outcome
            .intents()
            .filter_map(|i| if let Intent::Delete(d) = i { Some(d.target.name.as_str()) } else { None })
            .collect();
        assert_eq!(deleted, *want, "{what}");
        // The delete comes in a batch before the create, and is reported after it went.
        if !want.is_empty() {
            // With its pods: a Job's default is to orphan them.
            assert!(
                matches!(&outcome.batches[0][0], Intent::Delete(d) if d.propagation == Some(wasmcm_guest::Propagation::Background)),
                "{what}"
            );
            assert!(
                outcome.batches[1].iter().any(|i| matches!(i, Intent::Event(e) if e.reason == "SuccessfulDelete")),
                "{what}: {outcome:?}"
            );
        }
    }
}

/// TestControllerV2GetJobsToBeReconciled: Jobs whose controller reference names the CronJob,
/// in its namespace, whatever their labels.
#[test]
fn jobs_to_be_reconciled_as_upstream() {
    let fooer = |labels: Value| -> CronJob {
        typed(&json!({"metadata": {"namespace": "foo-ns", "name": "fooer"},
                      "spec": {"schedule": "* * * * *", "jobTemplate": {"metadata": {"labels": labels}}}}))
    };
    let job = |ns: &str, name: &str, controller: Option<&str>, labels: Value| {
        let refs = controller
            .map(|c| json!([{"apiVersion": "batch/v1", "kind": "CronJob", "name": c, "uid": "", "controller": true}]));
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": name, "namespace": ns, "labels": labels, "ownerReferences": refs}})
    };
    let names = |cj: &CronJob, jobs: Vec<Value>| -> Vec<String> {
        let found = jobs_to_be_reconciled(&cache(&jobs), cj).unwrap();
        found.into_iter().map(|j| j.metadata.name.unwrap()).collect()
    };
    let none: Vec<String> = Vec::new();
    assert_eq!(
        names(&fooer(json!({})), vec![job("foo-ns", "foo", None, json!({})), job("foo-ns", "foo1", None, json!({}))]),
        none,
        "test getting jobs in namespace without controller reference"
    );
    assert_eq!(
        names(
            &fooer(json!({})),
            vec![
                job("foo-ns", "foo", None, json!({})),
                job("foo-ns", "foo1", Some("fooer"), json!({})),
                job("foo-ns", "foo2", None, json!({}))
            ]
        ),
        ["foo1"],
        "test getting jobs in namespace with a controller reference"
    );
    assert_eq!(
        names(
            &fooer(json!({})),
            vec![job("bar-ns", "foo", None, json!({})), job("bar-ns", "foo1", Some("fooer"), json!({}))]
        ),
        none,
        "test getting jobs in other namespaces"
    );
    assert_eq!(
        names(
            &fooer(json!({"key": "value"})),
            vec![
                job("foo-ns", "foo-fooer-owner-ref", Some("fooer"), json!({"key": "different-value"})),
                job("foo-ns", "foo-other-owner-ref", Some("another-cronjob"), json!({"key": "different-value"})),
            ]
        ),
        ["foo-fooer-owner-ref"],
        "test getting jobs whose labels do not match job template"
    );
}

/// TestControllerV2JobAlreadyExistsButNotInActiveStatus: a Job this controller made but did not
/// record (its status write lost) is recorded on the next reconcile, once, not made again.
#[test]
fn a_job_made_but_not_recorded_is_recorded_not_made_again() {
    let cj = cron_job(json!({"spec": {"concurrencyPolicy": "Forbid", "schedule": EVERY_HOUR},
                             "status": {"lastScheduleTime": just_before_the_prior_hour().to_string(), "active": []}}));
    let made = job(&cj, just_after_the_prior_hour(), "1234", json!({}));
    let outcome =
        CronJobController::reconcile(&request_at(just_before_the_hour()), &cache(&[cj, made.clone()])).unwrap();
    let statuses: Vec<Value> = outcome
        .intents()
        .filter_map(|i| if let Intent::UpdateStatus(s) = i { serde_json::from_str(s).ok() } else { None })
        .collect();
    assert_eq!(statuses.len(), 1, "{outcome:?}");
    assert_eq!(statuses[0]["status"]["active"], json!([reference(&made)]));
    assert!(!outcome.intents().any(|i| matches!(i, Intent::Create(_) | Intent::Event(_))), "{outcome:?}");
}

/// TestControllerV2JobAlreadyExistsButDifferentOwner: a Job of the due time's name that another
/// made is left alone, and so is the status (upstream's fake answered AlreadyExists to any name;
/// here the Job bears the due time's name, as a real conflict would).
#[test]
fn a_job_of_the_due_name_made_by_another_is_left_alone() {
    let cj = cron_job(json!({"spec": {"concurrencyPolicy": "Forbid", "schedule": EVERY_HOUR},
                             "status": {"lastScheduleTime": just_before_the_prior_hour().to_string(), "active": []}}));
    // @every 1h from 08:59: due at 09:59.
    let theirs = job(&cj, just_before_the_hour(), "1234", json!({"metadata": {"ownerReferences": null}}));
    let outcome = CronJobController::reconcile(&request_at(just_before_the_hour()), &cache(&[cj, theirs])).unwrap();
    assert!(outcome.batches.is_empty(), "{outcome:?}");
}

/// The reconcile as the host runs it: the create, then the status naming the Job (without the
/// uid it does not have yet) with the event; the next reconcile fills the uid in; requeue at the
/// next schedule time plus 100 ms, in milliseconds rounded up.
#[test]
fn a_due_job_is_created_recorded_and_the_key_requeued_at_the_next_time() {
    let cj = cron_job(json!({"spec": {"schedule": ON_THE_HOUR}}));
    let outcome =
        CronJobController::reconcile(&request_at(just_after_the_hour()), &cache(std::slice::from_ref(&cj))).unwrap();
    assert_eq!(outcome.batches.len(), 2, "{outcome:?}");
    let Intent::Create(created) = &outcome.batches[0][0] else { panic!("{outcome:?}") };
    let created: Value = serde_json::from_str(created).unwrap();
    let name = format!("mycronjob-{}", top_of_the_hour().as_second() / 60);
    assert_eq!(created["metadata"]["name"], name);
    assert_eq!(
        created["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"],
        "2016-05-19T10:00:00Z"
    );
    let Intent::Event(e) = &outcome.batches[1][0] else { panic!("{outcome:?}") };
    assert_eq!((e.reason.as_str(), e.message.as_str()), ("SuccessfulCreate", format!("Created job {name}").as_str()));
    let Intent::UpdateStatus(status) = &outcome.batches[1][1] else { panic!("{outcome:?}") };
    let status: Value = serde_json::from_str(status).unwrap();
    assert_eq!(status["status"]["lastScheduleTime"], "2016-05-19T10:00:00Z");
    assert_eq!(status["status"]["active"][0]["name"], name);
    assert!(status["status"]["active"][0].get("uid").is_none());
    assert_eq!(outcome.requeue_after_ms, Some(59 * 60 * 1000 + 100));

    // The host applied both; its cache has the Job (uid known) and the status.
    let mut recorded = cj.clone();
    recorded["status"] = status["status"].clone();
    let mut made = created.clone();
    made["metadata"]["uid"] = json!("job-uid");
    let outcome =
        CronJobController::reconcile(&request_at(just_after_the_hour() + seconds(1)), &cache(&[recorded, made]))
            .unwrap();
    let statuses: Vec<Value> = outcome
        .intents()
        .filter_map(|i| if let Intent::UpdateStatus(s) = i { serde_json::from_str(s).ok() } else { None })
        .collect();
    assert_eq!(statuses.len(), 1);
    assert_eq!(statuses[0]["status"]["active"][0]["uid"], "job-uid");
    assert!(!outcome.intents().any(|i| matches!(i, Intent::Create(_) | Intent::Event(_))), "{outcome:?}");
}
