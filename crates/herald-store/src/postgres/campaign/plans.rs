//! The hot statements' plans, as PostgreSQL caches them: generic plans
//! (`plan_cache_mode = force_generic_plan`), once over nearly empty tables
//! that were never analyzed (what a node starting on a new database caches
//! first) and once over large analyzed ones. None may scan a whole
//! `segments`, `job_sends`, `tasks` or (large) `jobs` table, and the send-log
//! lookups of `record_sends` must stay within the batch's bounds.

use herald_pgtemp::PgTemp;
use tokio_postgres::{Client, NoTls};

use super::{jobs, rules, sweep};
use crate::postgres::PgStore;
use crate::{CampaignStore, JobSpec, SendEntry, StoreOptions};

/// A statement, the types of its parameters and arguments for them, and what
/// its plan must show.
struct Case {
    name: &'static str,
    sql: &'static str,
    types: &'static str,
    args: &'static str,
    /// Sent unnamed, so planned for each call (checked as a custom plan, over
    /// the large tables only: over small ones any plan is cheap).
    custom: bool,
    /// Substrings the plan must contain.
    must: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "jobs_following",
        sql: crate::campaign::sql::jobs::FOLLOWING.pg,
        types: "int8, int8, int8",
        args: "7, 0, 20",
        custom: false,
        // Off `jobs_follows`: never a scan of every job.
        must: &[],
    },
    Case {
        name: "follower_sending",
        sql: crate::campaign::sql::jobs::FOLLOWER_SENDING.pg,
        types: "int8",
        args: "7",
        custom: false,
        must: &[],
    },
    Case {
        name: "final_sends",
        sql: crate::postgres::provider::FINAL_SENDS,
        types: "text, text, text, int8",
        args: "'wechat', 'm-1', 'success', 9",
        custom: false,
        must: &["job_sends_msgid", "SubPlan"],
    },
    Case {
        name: "end_tasks",
        sql: jobs::END_TASKS,
        types: "int8[], text[], text[], int8",
        args: "'{7,8}', '{succeeded,failed}', '{a,b}', 9",
        custom: false,
        // By primary key or through `tasks_active` (pending and running
        // tasks only): either way no scan of the task history.
        must: &[],
    },
    Case {
        name: "claim",
        sql: jobs::CLAIM,
        types: "text, int8, int8, int8",
        args: "'w', 5, 10, 0",
        custom: true,
        must: &[
            "Index Scan using segments_claim",
            "Index Scan using segments_pkey",
        ],
    },
    Case {
        name: "segment_range",
        sql: jobs::SEGMENT_RANGE,
        types: "int8, int8",
        args: "5, 1",
        custom: false,
        must: &[],
    },
    Case {
        name: "lock_sends",
        sql: jobs::LOCK_SENDS,
        types: "int8, int8[], int8, int8",
        args: "1, '{500000,500001,500499}', 500000, 500499",
        custom: false,
        must: &["idx >="],
    },
    Case {
        name: "existing_sends",
        sql: jobs::EXISTING_SENDS,
        types: "int8, int8[], int8, int8",
        args: "1, '{500000,500001,500499}', 500000, 500499",
        custom: false,
        must: &["idx >="],
    },
    Case {
        name: "update_sends",
        sql: jobs::UPDATE_SENDS,
        types: "int8, int8[], text[], text[], int4[], text[], text[], int8",
        args: "1, '{10,11}', '{a,b}', '{delivered,failed}', '{2,2}', '{m,NULL}', '{NULL,e}', 5",
        custom: false,
        must: &["Conflict Arbiter Indexes: job_sends_pkey"],
    },
    Case {
        name: "renew",
        sql: jobs::RENEW,
        types: "int8, text, int8, int8, int8, int8, int8",
        args: "5, 'w', 1, 3, 9, 5, 70",
        custom: false,
        must: &["segments_pkey"],
    },
    Case {
        name: "renew_only",
        sql: jobs::RENEW_ONLY,
        types: "int8, text, int8, int8, int8, int8, int8, int8",
        args: "5, 'w', 1, 3, 9, 5, 70, 1",
        custom: false,
        must: &["segments_pkey"],
    },
    Case {
        name: "sends_in_doubt",
        sql: jobs::SENDS_IN_DOUBT,
        types: "int8, int8, int8",
        args: "1, -1, 100",
        custom: false,
        must: &["job_sends_in_doubt"],
    },
    Case {
        name: "current_segment",
        sql: jobs::CURRENT_SEGMENT,
        types: "int8, text, int8",
        args: "5, 'w', 1",
        custom: false,
        must: &["segments_pkey"],
    },
    Case {
        name: "end_segment",
        sql: jobs::END_SEGMENT,
        types: "int8, int8",
        args: "5, 9",
        custom: false,
        must: &[],
    },
    Case {
        name: "finish_idle",
        sql: jobs::FINISH_IDLE_JOBS,
        types: "int8[], int8",
        args: "'{1}', 9",
        custom: false,
        must: &["SubPlan", "Index Cond: (job_id = j.id)"],
    },
    Case {
        name: "sends",
        sql: crate::campaign::sql::jobs::SENDS.pg,
        types: "int8, int8, int8",
        args: "1, 1000, 2000",
        custom: false,
        must: &[],
    },
    Case {
        name: "cancel_segments",
        sql: jobs::CANCEL_SEGMENTS,
        types: "int8, int8",
        args: "2, 9",
        custom: false,
        must: &[],
    },
    Case {
        name: "segment_counts",
        sql: jobs::SEGMENT_COUNTS,
        types: "int8",
        args: "2",
        custom: false,
        must: &[],
    },
    Case {
        name: "job_segments",
        sql: jobs::JOB_SEGMENTS,
        types: "int8, int8, int8",
        args: "2, 0, 100",
        custom: false,
        must: &[],
    },
    Case {
        name: "lock_deadline_jobs",
        sql: sweep::LOCK_DEADLINE_JOBS,
        types: "int8, int8",
        args: "9, 100",
        custom: false,
        must: &[],
    },
    Case {
        name: "expire_segments",
        sql: sweep::EXPIRE_SEGMENTS,
        types: "int8[], int8",
        args: "'{2}', 9",
        custom: false,
        must: &[],
    },
    Case {
        name: "expire_sends",
        sql: sweep::EXPIRE_SENDS,
        types: "int8[], int8",
        args: "'{2}', 9",
        custom: false,
        must: &[],
    },
    Case {
        name: "lock_lapsed_jobs",
        sql: sweep::LOCK_LAPSED_JOBS,
        types: "int8, int8",
        args: "9, 100",
        custom: false,
        must: &[],
    },
    Case {
        name: "abandon",
        sql: sweep::ABANDON,
        types: "int8[], int8, int8",
        args: "'{1}', 9, 100",
        custom: false,
        must: &[],
    },
    Case {
        name: "lock_partial_jobs",
        sql: sweep::LOCK_PARTIAL_JOBS,
        types: "int8",
        args: "100",
        custom: false,
        must: &[],
    },
    Case {
        name: "handle_partials",
        sql: sweep::HANDLE_PARTIALS,
        types: "int8[], int8",
        args: "'{1}', 100",
        custom: false,
        must: &[],
    },
    Case {
        name: "fail_retries",
        sql: sweep::FAIL_RETRIES,
        types: "int8, int8, int8, int8",
        args: "1, 1000, 2000, 9",
        custom: false,
        must: &[],
    },
    Case {
        name: "lock_idle_jobs",
        sql: sweep::LOCK_IDLE_JOBS,
        types: "int8",
        args: "100",
        custom: false,
        must: &["SubPlan", "Index Cond: (job_id = j.id)"],
    },
    Case {
        name: "first_retry",
        sql: sweep::FIRST_RETRY,
        types: "int8, int8, int8",
        args: "1, 1000, 2000",
        custom: false,
        must: &[],
    },
    Case {
        name: "due_tasks",
        sql: crate::campaign::sql::rules::DUE_TASKS.pg,
        types: "int8, int8",
        args: "9, 100",
        custom: false,
        must: &[],
    },
    Case {
        name: "rule_tasks",
        sql: crate::campaign::sql::rules::RULE_TASKS.pg,
        types: "int8, int8",
        args: "1, 100",
        custom: false,
        must: &[],
    },
    Case {
        name: "plan_candidates",
        sql: rules::PLAN_CANDIDATES,
        types: "int8, int8",
        args: "0, 100",
        custom: false,
        must: &[],
    },
    Case {
        name: "finish_rule",
        sql: rules::FINISH_RULE,
        types: "int8, int8",
        args: "1, 9",
        custom: false,
        must: &[],
    },
    Case {
        name: "list_jobs_in_category",
        sql: jobs::LIST_JOBS_IN_CATEGORY,
        types: "int8, int8, int4, text, text",
        args: "9223372036854775807, 20, 7, 'coupon-reminder', ''",
        custom: false,
        // Over a nearly empty table any plan is fine; over the large one
        // `check_plans` refuses a scan of `jobs`.
        must: &[],
    },
    Case {
        name: "list_jobs_named",
        sql: jobs::LIST_JOBS_NAMED,
        types: "int8, int8, int4, text",
        args: "9223372036854775807, 20, 7, 'coupon'",
        custom: false,
        must: &[],
    },
    Case {
        name: "cancel_pending",
        sql: rules::CANCEL_PENDING,
        types: "int8, int8, text, int8, text",
        args: "1, 9, 'x', NULL, NULL",
        custom: false,
        must: &[],
    },
];

async fn plan_of(client: &Client, case: &Case) -> String {
    let mode = if case.custom {
        "force_custom_plan"
    } else {
        "force_generic_plan"
    };
    client
        .batch_execute(&format!(
            "SET plan_cache_mode = {mode}; PREPARE plan_{} ({}) AS {}",
            case.name, case.types, case.sql
        ))
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    let rows = client
        .query(
            &format!("EXPLAIN EXECUTE plan_{}({})", case.name, case.args),
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    client
        .batch_execute(&format!("DEALLOCATE plan_{}", case.name))
        .await
        .unwrap();
    rows.iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks every case; `large` once the tables hold years of history (then
/// the custom-planned statements are checked too, and `jobs` is big enough
/// that a scan of it matters).
async fn check_plans(client: &Client, large: bool) {
    let mut tables = vec!["segments", "job_sends", "tasks"];
    if large {
        tables.push("jobs");
    }
    for case in CASES.iter().filter(|c| large || !c.custom) {
        let plan = plan_of(client, case).await;
        for t in &tables {
            assert!(
                !plan.contains(&format!("Seq Scan on {t} "))
                    && !plan.ends_with(&format!("Seq Scan on {t}")),
                "{} scans {t}:\n{plan}",
                case.name
            );
        }
        for want in case.must {
            assert!(plan.contains(want), "{}: no {want:?} in\n{plan}", case.name);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_statements_use_indexes_in_cached_plans() {
    let Some(pg) = PgTemp::shared().expect("start the throwaway PostgreSQL cluster") else {
        return;
    };
    let db = pg.fresh_database("plans").expect("create database");
    let store = PgStore::open(db.url(), &StoreOptions::default())
        .await
        .expect("open");
    let (client, conn) = tokio_postgres::connect(db.url(), NoTls).await.unwrap();
    tokio::spawn(conn);

    // A new database: a few rows through the API, never analyzed.
    let audience = store
        .create_audience(herald_core::DEFAULT_TENANT, None, 0)
        .await
        .unwrap();
    let recipients: Vec<String> = (0..20).map(|i| format!("u{i}")).collect();
    store
        .append_audience(audience, 0, &recipients)
        .await
        .unwrap();
    store.seal_audience(audience, 20, 0).await.unwrap().unwrap();
    let spec = JobSpec {
        tenant: herald_core::DEFAULT_TENANT,
        audience_id: audience,
        channel: "log".into(),
        message: "{}".into(),
        segment_size: 5,
        deadline_at: None,
        priority: 0,
        task_id: None,
        follow_up: None,
        follows: None,
        resends: None,
        routing: None,
        traceparent: None,
        meta: Default::default(),
    };
    store.create_job(spec, 0).await.unwrap().unwrap();
    let c = store.claim_segment("w", 1, 1000).await.unwrap().unwrap();
    let sent = vec![SendEntry {
        index: c.segment.start,
        recipient: "u0".into(),
        state: herald_core::campaign::SendState::Retry,
        provider_msgid: None,
        error: None,
    }];
    store
        .record_sends(&c.claim, c.segment.start + 1, sent, 2, 1000)
        .await
        .unwrap();
    check_plans(&client, false).await;

    // Years of history: 5,000 jobs, 200k segments, 2M send-log rows, 50k tasks.
    client
        .batch_execute(
            "INSERT INTO jobs (audience_id, channel, message, segment_size, deadline_at, \
                 priority, task_id, state, total, created_at, tenant_id) \
             SELECT 1, 'log', '{}', 10, CASE WHEN i % 7 = 0 THEN i END, 0, NULL, \
                 CASE WHEN i % 500 = 0 THEN 'running' ELSE 'done' END, 1000, i, 1 + i % 50 \
             FROM generate_series(1, 5000) AS i;
             INSERT INTO segments (job_id, start_idx, end_idx, cursor_idx, state, owner, \
                 lease_until, epoch, attempt, not_before, priority, created_at, updated_at) \
             SELECT 1 + i / 40, i * 10, i * 10 + 10, i * 10 + 10, \
                 CASE WHEN i % 1000 = 0 THEN 'pending' WHEN i % 1000 = 1 THEN 'running' \
                      WHEN i % 1000 = 2 THEN 'partial' ELSE 'done' END, \
                 'w', i, 1, 1, 0, 0, 0, 0 \
             FROM generate_series(1, 200000) AS i;
             INSERT INTO job_sends (job_id, idx, recipient, state, attempts, updated_at) \
             SELECT 1 + i / 1000000, i % 1000000, 'u' || i, \
                 CASE WHEN i % 1000 = 0 THEN 'retry' ELSE 'delivered' END, 1, 0 \
             FROM generate_series(1, 2000000) AS i;
             INSERT INTO tasks (rule_id, version, planned_at, state, created_at) \
             SELECT 1 + i % 100, 1, i, CASE WHEN i % 1000 = 0 THEN 'pending' \
                 ELSE 'succeeded' END, 0 \
             FROM generate_series(1, 50000) AS i;
             ANALYZE",
        )
        .await
        .unwrap();
    check_plans(&client, true).await;

    // A tenant's lists walk its own part of the tenant index, newest (or
    // oldest) first: never every tenant's rows.
    client
        .batch_execute(
            "INSERT INTO rules (status, version, created_at, updated_at, tenant_id) \
             SELECT 'disabled', 1, 0, 0, 1 + i % 50 FROM generate_series(1, 5000) AS i;
             ANALYZE rules",
        )
        .await
        .unwrap();
    for (name, sql, args, index) in [
        (
            "list_jobs",
            jobs::LIST_JOBS,
            "9223372036854775807, 20, 7",
            "jobs_tenant",
        ),
        (
            "list_rules",
            rules::LIST_RULES,
            "-9223372036854775808, 20, 7",
            "rules_tenant",
        ),
    ] {
        let case = Case {
            name,
            sql,
            types: "int8, int8, int4",
            args,
            custom: false,
            must: &[],
        };
        let plan = plan_of(&client, &case).await;
        assert!(plan.contains(index), "{name}: no {index:?} in\n{plan}");
        // The index gives a page of jobs in order: no sort, no other
        // tenant's rows. (The rules here have no versions, so the planner
        // joins them any way it likes; only the index matters.)
        if name == "list_jobs" {
            assert!(!plan.contains("Sort"), "{name}: sorts in\n{plan}");
            assert!(!plan.contains("Filter"), "{name}: filters in\n{plan}");
        }
    }
}
