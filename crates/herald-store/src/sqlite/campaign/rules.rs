//! Versioned rules and their append-only tasks.

use herald_core::TenantId;
use herald_core::campaign::{JobState, RuleStatus, TaskState, task_outcome};
use rusqlite::{Connection, Transaction, params};

use super::{Ctx, audiences, in_read_tx, in_tx, jobs, query_all, query_opt};
use crate::Result;
use crate::campaign::sql::{actors, rules as sql};
use crate::campaign::{
    Actor, JobSpec, PlanCandidate, RuleRecord, RuleSpec, RuleVersion, TaskCancel, TaskRecord,
    TaskStart,
};
use crate::model::{
    self, Columns, from_db, limit_to_db, task_cols, tenant_to_db, to_db, version_cols,
};

const CANCEL_PENDING: &str = "UPDATE tasks SET state = 'cancelled', finished_at = ?2, \
    detail = 'the rule was disabled', changed_by_key_id = ?3, changed_by_key_name = ?4 \
    WHERE rule_id = ?1 AND state = 'pending'";
const RULE_BY_ID: &str = concat!(rule_select!(), " WHERE r.id = ?1");
pub(super) const RULES_AFTER: &str = concat!(
    rule_select!(),
    " WHERE r.tenant_id = ?1 AND r.id > ?2 ORDER BY r.id LIMIT ?3"
);
// The planner's questions per enabled rule, each answered from an index:
// pending/running tasks from tasks_rule_state, the latest occurrence of the
// current version from the (rule_id, version, planned_at) key.
const CANDIDATES: &str = concat!(
    rule_select!(),
    " WHERE r.status = 'enabled' AND r.id > ?1 ",
    "ORDER BY r.id LIMIT ?2"
);
pub(super) const HAS_PENDING_CURRENT: &str = "SELECT EXISTS (SELECT 1 FROM tasks \
    WHERE rule_id = ?1 AND state = 'pending' AND version = ?2)";
pub(super) const ACTIVE_TASKS: &str = "SELECT COUNT(*) FROM tasks \
    WHERE rule_id = ?1 AND state IN ('pending', 'running')";
pub(super) const LAST_PLANNED: &str = "SELECT planned_at FROM tasks \
    WHERE rule_id = ?1 AND version = ?2 ORDER BY planned_at DESC LIMIT 1";
pub(super) const VERSIONS: &str = concat!(
    "SELECT ",
    version_cols!("v"),
    " FROM rule_versions AS v WHERE v.rule_id = ?1 AND v.version > ?2 \
    ORDER BY v.version LIMIT ?3"
);
const VERSION: &str = concat!(
    "SELECT ",
    version_cols!("v"),
    " FROM rule_versions AS v WHERE v.rule_id = ?1 AND v.version = ?2"
);
// `WHERE` before `ON CONFLICT` keeps SQLite from reading `ON` as a join clause.
pub(super) const PLAN: &str = concat!(
    "INSERT INTO tasks (tenant_id, rule_id, version, planned_at, state, created_at, \
    created_by_key_id, created_by_key_name) \
    SELECT tenant_id, id, version, ?3, 'pending', ?4, changed_by_key_id, changed_by_key_name \
    FROM rules \
    WHERE id = ?1 AND version = ?2 AND status = 'enabled' \
    ON CONFLICT (rule_id, version, planned_at) DO NOTHING \
    RETURNING ",
    task_cols!()
);
const FINISH: &str = "UPDATE rules SET status = 'finished', updated_at = ?2 \
    WHERE id = ?1 AND status = 'enabled' AND NOT EXISTS (SELECT 1 FROM tasks \
    WHERE rule_id = ?1 AND state IN ('pending', 'running'))";
const END_PENDING: &str = "UPDATE tasks SET state = ?2, detail = ?3, finished_at = ?4 \
    WHERE id = ?1 AND state = 'pending'";
const RUN: &str = "UPDATE tasks SET state = 'running', job_id = ?2, recipients = ?3, \
    started_at = ?4 WHERE id = ?1 AND state = 'pending'";

fn insert_version(
    tx: &Transaction<'_>,
    rule_id: i64,
    version: i32,
    spec: &RuleSpec,
    now: i64,
) -> Result<()> {
    tx.prepare_cached(sql::INSERT_VERSION.sqlite)
        .ctx("preparing version insert")?
        .execute(params![
            rule_id,
            version,
            spec.name,
            spec.schedule,
            spec.audience,
            spec.audience_id,
            spec.channel,
            spec.message,
            spec.deadline_secs,
            spec.priority,
            now,
            tenant_to_db(spec.tenant),
            spec.routing,
            spec.follow_up.as_ref().map(|f| f.after_ms),
            spec.follow_up.as_ref().map(|f| f.message.as_str())
        ])
        .ctx("inserting rule version")?;
    Ok(())
}

fn rule_by_id(conn: &Connection, id: i64) -> Result<Option<RuleRecord>> {
    query_opt(conn, RULE_BY_ID, [id], "reading rule", |r| model::decode(r))
}

pub(super) fn create_rule(
    conn: &mut Connection,
    spec: RuleSpec,
    now: i64,
    by: Option<Actor>,
) -> Result<RuleRecord> {
    in_tx(conn, "creating rule", |tx| {
        let id: i64 = tx
            .prepare_cached(sql::INSERT_RULE.sqlite)
            .ctx("preparing rule insert")?
            .query_row(params![now, tenant_to_db(spec.tenant)], |r| r.get(0))
            .ctx("inserting rule")?;
        insert_version(tx, id, 1, &spec, now)?;
        super::stamp(tx, actors::RULE_CREATED, id, &by)?;
        Ok(RuleRecord {
            id,
            tenant: spec.tenant,
            status: RuleStatus::Enabled,
            created_at: now,
            updated_at: now,
            created_by: by.clone(),
            changed_by: by,
            current: RuleVersion {
                rule_id: id,
                version: 1,
                spec,
                created_at: now,
            },
        })
    })
}

pub(super) fn update_rule(
    conn: &mut Connection,
    id: i64,
    spec: RuleSpec,
    now: i64,
    by: Option<Actor>,
) -> Result<Option<RuleRecord>> {
    in_tx(conn, "updating rule", |tx| {
        let Some(version) = query_opt(
            tx,
            sql::BUMP_RULE.sqlite,
            params![id, now, tenant_to_db(spec.tenant)],
            "bumping version",
            |r| r.narrow::<i32>(0, "rules.version"),
        )?
        else {
            return Ok(None);
        };
        insert_version(tx, id, version, &spec, now)?;
        super::stamp(tx, actors::RULE_CHANGED, id, &by)?;
        rule_by_id(tx, id)
    })
}

pub(super) fn set_rule_enabled(
    conn: &mut Connection,
    id: i64,
    enabled: bool,
    now: i64,
    by: Option<Actor>,
) -> Result<Option<RuleRecord>> {
    in_tx(conn, "enabling or disabling rule", |tx| {
        let status = if enabled {
            RuleStatus::Enabled
        } else {
            RuleStatus::Disabled
        };
        let n = tx
            .prepare_cached(sql::SET_STATUS.sqlite)
            .ctx("preparing rule status")?
            .execute(params![id, status.as_str(), now])
            .ctx("setting rule status")?;
        if n == 0 {
            return Ok(None);
        }
        super::stamp(tx, actors::RULE_CHANGED, id, &by)?;
        if !enabled {
            let (key_id, key_name) = Actor::columns(&by);
            tx.prepare_cached(CANCEL_PENDING)
                .ctx("preparing task cancel")?
                .execute(params![id, now, key_id, key_name])
                .ctx("cancelling pending tasks")?;
        }
        rule_by_id(tx, id)
    })
}

pub(super) fn cancel_task(
    conn: &mut Connection,
    task_id: i64,
    now: i64,
    by: Option<Actor>,
) -> Result<Option<TaskCancel>> {
    let (key_id, key_name) = Actor::columns(&by);
    in_tx(conn, "cancelling a task", |tx| {
        let cancelled = query_opt(
            tx,
            sql::CANCEL_TASK.sqlite,
            params![task_id, now, key_id, key_name],
            "cancelling a task",
            |r| model::decode::<TaskRecord, _>(r),
        )?;
        if let Some(task) = cancelled {
            return Ok(Some(TaskCancel::Cancelled(task)));
        }
        let task = query_opt(tx, sql::GET_TASK.sqlite, [task_id], "reading a task", |r| {
            model::decode(r)
        })?;
        Ok(task.map(TaskCancel::unchanged))
    })
}

pub(super) fn get_rule(conn: &mut Connection, id: i64) -> Result<Option<RuleRecord>> {
    rule_by_id(conn, id)
}

pub(super) fn list_rules(
    conn: &mut Connection,
    tenant: TenantId,
    after: Option<i64>,
    limit: usize,
) -> Result<Vec<RuleRecord>> {
    query_all(
        conn,
        RULES_AFTER,
        params![
            tenant_to_db(tenant),
            after.unwrap_or(i64::MIN),
            limit_to_db(limit)
        ],
        "listing rules",
        |r| model::decode(r),
    )
}

pub(super) fn rule_versions(
    conn: &mut Connection,
    id: i64,
    after: Option<i32>,
    limit: usize,
) -> Result<Vec<RuleVersion>> {
    query_all(
        conn,
        VERSIONS,
        params![id, after.unwrap_or(i32::MIN), limit_to_db(limit)],
        "listing versions",
        |r| model::decode(r),
    )
}

pub(super) fn rule_tasks(
    conn: &mut Connection,
    rule_id: i64,
    limit: usize,
) -> Result<Vec<TaskRecord>> {
    query_all(
        conn,
        sql::RULE_TASKS.sqlite,
        params![rule_id, limit_to_db(limit)],
        "listing rule tasks",
        |r| model::decode(r),
    )
}

pub(super) fn plan_candidates(
    conn: &mut Connection,
    after: Option<i64>,
    limit: usize,
) -> Result<Vec<PlanCandidate>> {
    in_read_tx(conn, "reading plan candidates", |tx| {
        let rules = query_all(
            tx,
            CANDIDATES,
            params![after.unwrap_or(i64::MIN), limit_to_db(limit)],
            "listing enabled rules",
            |r| model::decode::<RuleRecord, _>(r),
        )?;
        let mut out = Vec::with_capacity(rules.len());
        for rule in rules {
            let (id, version) = (rule.id, rule.current.version);
            let has_pending_current: bool = tx
                .prepare_cached(HAS_PENDING_CURRENT)
                .ctx("preparing pending check")?
                .query_row(params![id, version], |r| r.get(0))
                .ctx("checking pending tasks")?;
            let active: i64 = tx
                .prepare_cached(ACTIVE_TASKS)
                .ctx("preparing active count")?
                .query_row([id], |r| r.get(0))
                .ctx("counting active tasks")?;
            let last_planned_at = query_opt(
                tx,
                LAST_PLANNED,
                params![id, version],
                "last planned",
                |r| r.int(0, "tasks.planned_at"),
            )?;
            out.push(PlanCandidate {
                rule,
                has_pending_current,
                active_tasks: from_db(active, "active tasks")?,
                last_planned_at,
            });
        }
        Ok(out)
    })
}

pub(super) fn plan_task(
    conn: &mut Connection,
    rule_id: i64,
    version: i32,
    planned_at: i64,
    now: i64,
) -> Result<Option<TaskRecord>> {
    in_tx(conn, "planning task", |tx| {
        query_opt(
            tx,
            PLAN,
            params![rule_id, version, planned_at, now],
            "planning task",
            |r| model::decode(r),
        )
    })
}

pub(super) fn finish_rule(conn: &mut Connection, rule_id: i64, now: i64) -> Result<bool> {
    in_tx(conn, "finishing rule", |tx| {
        let n = tx
            .prepare_cached(FINISH)
            .ctx("preparing rule finish")?
            .execute(params![rule_id, now])
            .ctx("finishing rule")?;
        Ok(n == 1)
    })
}

pub(super) fn due_tasks(conn: &mut Connection, now: i64, limit: usize) -> Result<Vec<TaskRecord>> {
    query_all(
        conn,
        sql::DUE_TASKS.sqlite,
        params![now, limit_to_db(limit)],
        "listing due tasks",
        |r| model::decode(r),
    )
}

pub(super) fn get_task(conn: &mut Connection, id: i64) -> Result<Option<TaskRecord>> {
    query_opt(conn, sql::GET_TASK.sqlite, [id], "reading task", |r| {
        model::decode(r)
    })
}

fn end_pending(
    tx: &Transaction<'_>,
    id: i64,
    state: TaskState,
    detail: &str,
    now: i64,
) -> Result<()> {
    tx.prepare_cached(END_PENDING)
        .ctx("preparing task end")?
        .execute(params![id, state.as_str(), detail, now])
        .ctx("ending task")?;
    Ok(())
}

pub(super) fn start_task(
    conn: &mut Connection,
    task_id: i64,
    now: i64,
    segment_size: u64,
) -> Result<TaskStart> {
    in_tx(conn, "starting task", |tx| {
        let Some(task) = query_opt(tx, sql::GET_TASK.sqlite, [task_id], "reading task", |r| {
            model::decode::<TaskRecord, _>(r)
        })?
        else {
            return Ok(TaskStart::NotPending);
        };
        if task.state != TaskState::Pending {
            return Ok(TaskStart::NotPending);
        }
        let Some(rule) = rule_by_id(tx, task.rule_id)? else {
            end_pending(
                tx,
                task_id,
                TaskState::Failed,
                "the rule no longer exists",
                now,
            )?;
            return Ok(TaskStart::NoAudience);
        };
        if rule.current.version != task.version {
            let detail = format!("the rule was updated to version {}", rule.current.version);
            end_pending(tx, task_id, TaskState::Expired, &detail, now)?;
            return Ok(TaskStart::Expired);
        }
        if rule.status != RuleStatus::Enabled {
            let detail = format!("the rule is {}", rule.status);
            end_pending(tx, task_id, TaskState::Cancelled, &detail, now)?;
            return Ok(TaskStart::Cancelled);
        }
        // The task's version is the current one.
        let Some(version) = query_opt(
            tx,
            VERSION,
            params![task.rule_id, task.version],
            "reading version",
            |r| model::decode::<RuleVersion, _>(r),
        )?
        else {
            end_pending(
                tx,
                task_id,
                TaskState::Failed,
                "the rule version is missing",
                now,
            )?;
            return Ok(TaskStart::NoAudience);
        };
        let spec = version.spec;
        let Some(audience_id) = spec.audience_id else {
            let detail = "the audience has no uploaded recipients (parties or tags only)";
            end_pending(tx, task_id, TaskState::Failed, detail, now)?;
            return Ok(TaskStart::NoAudience);
        };
        let Some(size) = audiences::sealed_size(tx, audience_id, rule.tenant)? else {
            let detail = format!("audience {audience_id} is unknown or not sealed");
            end_pending(tx, task_id, TaskState::Failed, &detail, now)?;
            return Ok(TaskStart::NoAudience);
        };
        let job_spec = task_job_spec(task_id, rule.tenant, spec, audience_id, segment_size, now);
        let job = jobs::create_in(tx, &job_spec, size, now)?;
        if let Some(f) = &job_spec.follow_up {
            super::follow_ups::insert(tx, job.id, f)?;
        }
        tx.prepare_cached(RUN)
            .ctx("preparing task run")?
            .execute(params![task_id, job.id, to_db(size, "recipients")?, now])
            .ctx("running task")?;
        if job.state == JobState::Done {
            let outcome = task_outcome(
                job.state,
                job.totals.failed + job.totals.in_doubt,
                job.totals.expired,
            );
            jobs::task_follows(tx, Some(task_id), job.id, outcome, &job.totals, now)?;
        }
        Ok(TaskStart::Started { job: Box::new(job) })
    })
}

/// The job a task of rule version `spec` (of `tenant`) starts, sending to
/// `audience_id`.
fn task_job_spec(
    task_id: i64,
    tenant: TenantId,
    spec: RuleSpec,
    audience_id: i64,
    segment_size: u64,
    now: i64,
) -> JobSpec {
    let deadline_at = spec
        .deadline_secs
        .map(|s| now.saturating_add(s.saturating_mul(1_000)));
    // A rule's follow-up to the unread, or, with a fallback route, its next
    // step follows each task's job (the API refuses both at once).
    let follow_up = spec
        .follow_up
        .clone()
        .or_else(|| crate::route_follow_up(spec.routing.as_deref(), &spec.message));
    JobSpec {
        tenant,
        audience_id,
        channel: spec.channel,
        message: spec.message,
        segment_size,
        deadline_at,
        priority: spec.priority,
        follow_up,
        follows: None,
        resends: None,
        task_id: Some(task_id),
        routing: spec.routing,
        traceparent: None,
        meta: crate::JobMeta {
            name: Some(spec.name),
            ..Default::default()
        },
    }
}
