//! Versioned rules and their append-only tasks.
//!
//! Locks go rule first, then its tasks: `set_rule_enabled` and `update_rule`
//! update the rule row and only then (a new statement, so a new snapshot)
//! touch its tasks; `plan_task` and `start_task` hold the rule `FOR SHARE`
//! while they write a task, so a disable either waits for them and then
//! cancels the task they planned, or commits first and is seen by them.

use futures_util::future::try_join;
use herald_core::TenantId;
use herald_core::campaign::{RuleStatus, TaskState};

use crate::campaign::sql::{actors, rules as sql};
use crate::postgres::{Ctx, PgStore, col};
use crate::{
    Actor, JobSpec, PlanCandidate, Result, RuleRecord, RuleSpec, RuleVersion, TaskCancel,
    TaskRecord, TaskStart,
};

use super::jobs;
use crate::model::{self, Reader, rule_cols, task_cols, tenant_to_pg, version_cols};

const KEY_SHARE_AUDIENCE: &str = "SELECT 1 FROM audiences WHERE id = $1 FOR KEY SHARE";
pub(super) const CANCEL_PENDING: &str = "UPDATE tasks SET state = 'cancelled', detail = $3, finished_at = $2, \
    changed_by_key_id = $4, changed_by_key_name = $5 WHERE rule_id = $1 AND state = 'pending'";
const GET_RULE: &str = concat!(
    "SELECT ",
    rule_cols!(),
    " FROM rules AS r \
    JOIN rule_versions AS v ON v.rule_id = r.id AND v.version = r.version WHERE r.id = $1"
);
pub(super) const LIST_RULES: &str = concat!(
    "SELECT ",
    rule_cols!(),
    " FROM rules AS r \
    JOIN rule_versions AS v ON v.rule_id = r.id AND v.version = r.version \
    WHERE r.tenant_id = $3 AND r.id > $1 ORDER BY r.id LIMIT $2"
);
const VERSIONS: &str = concat!(
    "SELECT ",
    version_cols!(),
    " FROM rule_versions WHERE rule_id = $1 AND version > $2 ORDER BY version LIMIT $3"
);
// Each lookup is one index probe: `tasks_active` for the count, the unique
// (rule, version, planned_at) index for the other two.
pub(super) const PLAN_CANDIDATES: &str = concat!(
    "SELECT ",
    rule_cols!(),
    ", EXISTS (SELECT 1 FROM tasks t WHERE t.rule_id = r.id AND t.version = r.version \
               AND t.state = 'pending'), \
       (SELECT count(*) FROM tasks t WHERE t.rule_id = r.id \
               AND t.state IN ('pending', 'running')), \
       (SELECT max(planned_at) FROM tasks t WHERE t.rule_id = r.id AND t.version = r.version) \
     FROM rules AS r JOIN rule_versions AS v ON v.rule_id = r.id AND v.version = r.version \
     WHERE r.status = 'enabled' AND r.id > $1 ORDER BY r.id LIMIT $2"
);
// The rule is held `FOR SHARE` until the task commits (see the module doc);
// a rule disabled or updated meanwhile is re-checked on its latest version.
const PLAN_TASK: &str = concat!(
    "WITH r AS ( \
        SELECT id, tenant_id, changed_by_key_id, changed_by_key_name FROM rules \
        WHERE id = $1 AND version = $2 AND status = 'enabled' FOR SHARE \
     ) \
     INSERT INTO tasks (tenant_id, rule_id, version, planned_at, state, created_at, \
         created_by_key_id, created_by_key_name) \
     SELECT r.tenant_id, r.id, $2, $3, 'pending', $4, r.changed_by_key_id, \
         r.changed_by_key_name FROM r \
     ON CONFLICT (rule_id, version, planned_at) DO NOTHING RETURNING ",
    task_cols!()
);
const LOCK_RULE: &str = "SELECT 1 FROM rules WHERE id = $1 FOR NO KEY UPDATE";
// After `LOCK_RULE`, in its own statement: sees every task committed before.
pub(super) const FINISH_RULE: &str = "UPDATE rules SET status = 'finished', updated_at = $2 \
    WHERE id = $1 AND status = 'enabled' AND NOT EXISTS ( \
        SELECT 1 FROM tasks WHERE rule_id = $1 AND state IN ('pending', 'running'))";
const SHARE_RULE_OF_TASK: &str = "SELECT r.status, r.version, v.audience_id, v.channel, \
        v.message, v.deadline_secs, v.priority, r.tenant_id, v.routing, v.name, \
        v.follow_up_after_ms, v.follow_up_message \
    FROM rules AS r JOIN rule_versions AS v ON v.rule_id = r.id AND v.version = r.version \
    WHERE r.id = (SELECT rule_id FROM tasks WHERE id = $1) FOR SHARE OF r";
const LOCK_PENDING_TASK: &str =
    "SELECT version FROM tasks WHERE id = $1 AND state = 'pending' FOR UPDATE";
const END_PENDING_TASK: &str =
    "UPDATE tasks SET state = $2, detail = $3, finished_at = $4 WHERE id = $1";
const START_TASK: &str = "UPDATE tasks SET state = $2, job_id = $3, recipients = $4, \
    started_at = $5, finished_at = $6, detail = $7 WHERE id = $1";

type Tx<'a> = deadpool_postgres::Transaction<'a>;

/// Ends a pending task that will not run, and commits.
async fn end_pending(
    tx: Tx<'_>,
    task_id: i64,
    state: TaskState,
    detail: String,
    now: i64,
) -> Result<()> {
    let stmt = tx
        .prepare_cached(END_PENDING_TASK)
        .await
        .ctx("preparing task end")?;
    tx.execute(&stmt, &[&task_id, &state.as_str(), &detail, &now])
        .await
        .ctx("ending the task")?;
    tx.commit().await.ctx("committing start_task")
}

async fn share_audience(tx: &Tx<'_>, audience_id: Option<i64>) -> Result<()> {
    if let Some(id) = audience_id {
        let stmt = tx
            .prepare_cached(KEY_SHARE_AUDIENCE)
            .await
            .ctx("preparing audience lock")?;
        tx.query_opt(&stmt, &[&id])
            .await
            .ctx("locking the rule's audience")?;
    }
    Ok(())
}

async fn insert_version(
    tx: &Tx<'_>,
    rule_id: i64,
    version: i32,
    spec: &RuleSpec,
    now: i64,
) -> Result<()> {
    let stmt = tx
        .prepare_cached(sql::INSERT_VERSION.pg)
        .await
        .ctx("preparing version insert")?;
    let priority = i16::from(spec.priority);
    let tenant = tenant_to_pg(spec.tenant)?;
    let follow_after = spec.follow_up.as_ref().map(|f| f.after_ms);
    let follow_message = spec.follow_up.as_ref().map(|f| f.message.as_str());
    tx.execute(
        &stmt,
        &[
            &rule_id,
            &version,
            &spec.name,
            &spec.schedule,
            &spec.audience,
            &spec.audience_id,
            &spec.channel,
            &spec.message,
            &spec.deadline_secs,
            &priority,
            &now,
            &tenant,
            &spec.routing,
            &follow_after,
            &follow_message,
        ],
    )
    .await
    .ctx("inserting a rule version")?;
    Ok(())
}

async fn rule_in(tx: &Tx<'_>, id: i64) -> Result<Option<RuleRecord>> {
    let stmt = tx
        .prepare_cached(GET_RULE)
        .await
        .ctx("preparing rule read")?;
    tx.query_opt(&stmt, &[&id])
        .await
        .ctx("reading a rule")?
        .map(|r| model::decode(&r))
        .transpose()
}

pub(super) async fn create_rule(
    store: &PgStore,
    spec: &RuleSpec,
    now: i64,
    by: &Option<Actor>,
) -> Result<RuleRecord> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning create_rule")?;
    share_audience(&tx, spec.audience_id).await?;
    let stmt = tx
        .prepare_cached(sql::INSERT_RULE.pg)
        .await
        .ctx("preparing rule insert")?;
    let tenant = tenant_to_pg(spec.tenant)?;
    let id: i64 = col(
        &tx.query_one(&stmt, &[&now, &tenant])
            .await
            .ctx("inserting a rule")?,
        0,
        "rules.id",
    )?;
    insert_version(&tx, id, 1, spec, now).await?;
    super::stamp(&tx, actors::RULE_CREATED, id, by).await?;
    tx.commit().await.ctx("committing create_rule")?;
    Ok(RuleRecord {
        id,
        tenant: spec.tenant,
        status: RuleStatus::Enabled,
        created_at: now,
        updated_at: now,
        created_by: by.clone(),
        changed_by: by.clone(),
        current: RuleVersion {
            rule_id: id,
            version: 1,
            spec: spec.clone(),
            created_at: now,
        },
    })
}

pub(super) async fn update_rule(
    store: &PgStore,
    id: i64,
    spec: &RuleSpec,
    now: i64,
    by: &Option<Actor>,
) -> Result<Option<RuleRecord>> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning update_rule")?;
    share_audience(&tx, spec.audience_id).await?;
    let bump = tx
        .prepare_cached(sql::BUMP_RULE.pg)
        .await
        .ctx("preparing rule update")?;
    let Some(row) = tx
        .query_opt(&bump, &[&id, &now, &tenant_to_pg(spec.tenant)?])
        .await
        .ctx("updating the rule")?
    else {
        return Ok(None);
    };
    let version: i32 = col(&row, 0, "rules.version")?;
    insert_version(&tx, id, version, spec, now).await?;
    super::stamp(&tx, actors::RULE_CHANGED, id, by).await?;
    let record = rule_in(&tx, id).await?;
    tx.commit().await.ctx("committing update_rule")?;
    Ok(record)
}

pub(super) async fn set_rule_enabled(
    store: &PgStore,
    id: i64,
    enabled: bool,
    now: i64,
    by: &Option<Actor>,
) -> Result<Option<RuleRecord>> {
    let status = if enabled {
        RuleStatus::Enabled
    } else {
        RuleStatus::Disabled
    };
    let mut client = store.client().await?;
    let tx = client
        .transaction()
        .await
        .ctx("beginning set_rule_enabled")?;
    let set = tx
        .prepare_cached(sql::SET_STATUS.pg)
        .await
        .ctx("preparing rule update")?;
    if tx
        .execute(&set, &[&id, &status.as_str(), &now])
        .await
        .ctx("updating the rule")?
        == 0
    {
        return Ok(None);
    }
    super::stamp(&tx, actors::RULE_CHANGED, id, by).await?;
    if !enabled {
        let cancel = tx
            .prepare_cached(CANCEL_PENDING)
            .await
            .ctx("preparing task cancel")?;
        let (key_id, key_name) = Actor::columns(by);
        tx.execute(
            &cancel,
            &[&id, &now, &"rule was disabled", &key_id, &key_name],
        )
        .await
        .ctx("cancelling pending tasks")?;
    }
    let record = rule_in(&tx, id).await?;
    tx.commit().await.ctx("committing set_rule_enabled")?;
    Ok(record)
}

pub(super) async fn cancel_task(
    store: &PgStore,
    task_id: i64,
    now: i64,
    by: &Option<Actor>,
) -> Result<Option<TaskCancel>> {
    let (key_id, key_name) = Actor::columns(by);
    let client = store.client().await?;
    let cancel = client
        .prepare_cached(sql::CANCEL_TASK.pg)
        .await
        .ctx("preparing task cancel")?;
    if let Some(row) = client
        .query_opt(&cancel, &[&task_id, &now, &key_id, &key_name])
        .await
        .ctx("cancelling a task")?
    {
        return Ok(Some(TaskCancel::Cancelled(model::decode(&row)?)));
    }
    let get = client
        .prepare_cached(sql::GET_TASK.pg)
        .await
        .ctx("preparing task read")?;
    client
        .query_opt(&get, &[&task_id])
        .await
        .ctx("reading a task")?
        .map(|r| model::decode(&r).map(TaskCancel::unchanged))
        .transpose()
}

pub(super) async fn get_rule(store: &PgStore, id: i64) -> Result<Option<RuleRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(GET_RULE)
        .await
        .ctx("preparing rule read")?;
    client
        .query_opt(&stmt, &[&id])
        .await
        .ctx("reading a rule")?
        .map(|r| model::decode(&r))
        .transpose()
}

pub(super) async fn list_rules(
    store: &PgStore,
    tenant: TenantId,
    after: i64,
    limit: i64,
) -> Result<Vec<RuleRecord>> {
    let tenant = tenant_to_pg(tenant)?;
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(LIST_RULES)
        .await
        .ctx("preparing rule list")?;
    client
        .query(&stmt, &[&after, &limit, &tenant])
        .await
        .ctx("listing rules")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn rule_versions(
    store: &PgStore,
    id: i64,
    after: i32,
    limit: i64,
) -> Result<Vec<RuleVersion>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(VERSIONS)
        .await
        .ctx("preparing version list")?;
    client
        .query(&stmt, &[&id, &after, &limit])
        .await
        .ctx("listing rule versions")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn rule_tasks(
    store: &PgStore,
    rule_id: i64,
    limit: i64,
) -> Result<Vec<TaskRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::RULE_TASKS.pg)
        .await
        .ctx("preparing task list")?;
    client
        .query(&stmt, &[&rule_id, &limit])
        .await
        .ctx("listing a rule's tasks")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn plan_candidates(
    store: &PgStore,
    after: i64,
    limit: i64,
) -> Result<Vec<PlanCandidate>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(PLAN_CANDIDATES)
        .await
        .ctx("preparing plan candidates")?;
    let rows = client
        .query(&stmt, &[&after, &limit])
        .await
        .ctx("reading plan candidates")?;
    rows.iter()
        .map(|row| {
            // The rule's columns, then the three answers of `PLAN_CANDIDATES`.
            let mut r = Reader::new(row);
            Ok(PlanCandidate {
                rule: model::Decode::decode(&mut r)?,
                has_pending_current: r.flag("pending current")?,
                active_tasks: r.unsigned("active tasks")?,
                last_planned_at: r.opt_int("last planned_at")?,
            })
        })
        .collect()
}

pub(super) async fn plan_task(
    store: &PgStore,
    rule_id: i64,
    version: i32,
    planned_at: i64,
    now: i64,
) -> Result<Option<TaskRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(PLAN_TASK)
        .await
        .ctx("preparing task insert")?;
    client
        .query_opt(&stmt, &[&rule_id, &version, &planned_at, &now])
        .await
        .ctx("planning a task")?
        .map(|r| model::decode(&r))
        .transpose()
}

pub(super) async fn finish_rule(store: &PgStore, rule_id: i64, now: i64) -> Result<bool> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning finish_rule")?;
    let lock = tx
        .prepare_cached(LOCK_RULE)
        .await
        .ctx("preparing rule lock")?;
    let finish = tx
        .prepare_cached(FINISH_RULE)
        .await
        .ctx("preparing rule finish")?;
    // Pipelined: the update runs after the lock is granted, in a new snapshot.
    let (_, n) = try_join(
        tx.query_opt(&lock, &[&rule_id]),
        tx.execute(&finish, &[&rule_id, &now]),
    )
    .await
    .ctx("finishing the rule")?;
    tx.commit().await.ctx("committing finish_rule")?;
    Ok(n == 1)
}

pub(super) async fn due_tasks(store: &PgStore, now: i64, limit: i64) -> Result<Vec<TaskRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::DUE_TASKS.pg)
        .await
        .ctx("preparing due tasks")?;
    client
        .query(&stmt, &[&now, &limit])
        .await
        .ctx("reading due tasks")?
        .iter()
        .map(model::decode)
        .collect()
}

pub(super) async fn get_task(store: &PgStore, id: i64) -> Result<Option<TaskRecord>> {
    let client = store.client().await?;
    let stmt = client
        .prepare_cached(sql::GET_TASK.pg)
        .await
        .ctx("preparing task read")?;
    client
        .query_opt(&stmt, &[&id])
        .await
        .ctx("reading a task")?
        .map(|r| model::decode(&r))
        .transpose()
}

pub(super) async fn start_task(
    store: &PgStore,
    task_id: i64,
    now: i64,
    segment_size: u64,
) -> Result<TaskStart> {
    let mut client = store.client().await?;
    let tx = client.transaction().await.ctx("beginning start_task")?;
    let share_rule = tx
        .prepare_cached(SHARE_RULE_OF_TASK)
        .await
        .ctx("preparing rule lock")?;
    let lock_task = tx
        .prepare_cached(LOCK_PENDING_TASK)
        .await
        .ctx("preparing task lock")?;
    // Rule first, then the task (the order `set_rule_enabled` takes them in).
    let (rule, task) = try_join(
        tx.query_opt(&share_rule, &[&task_id]),
        tx.query_opt(&lock_task, &[&task_id]),
    )
    .await
    .ctx("locking the task and its rule")?;
    let (Some(rule), Some(task)) = (rule, task) else {
        return Ok(TaskStart::NotPending);
    };
    let status: &str = col(&rule, 0, "rules.status")?;
    let current: i32 = col(&rule, 1, "rules.version")?;
    let version: i32 = col(&task, 0, "tasks.version")?;
    let ended = if version != current {
        Some((
            TaskState::Expired,
            format!("rule was updated to version {current}"),
            TaskStart::Expired,
        ))
    } else if status != RuleStatus::Enabled.as_str() {
        Some((
            TaskState::Cancelled,
            format!("rule is {status}"),
            TaskStart::Cancelled,
        ))
    } else {
        None
    };
    if let Some((state, detail, start)) = ended {
        end_pending(tx, task_id, state, detail, now).await?;
        return Ok(start);
    }
    let Some(audience_id) = col::<Option<i64>>(&rule, 2, "rule_versions.audience_id")? else {
        end_pending(
            tx,
            task_id,
            TaskState::Failed,
            format!("version {version} names no uploaded audience (parties or tags only)"),
            now,
        )
        .await?;
        return Ok(TaskStart::NoAudience);
    };
    let spec = task_job_spec(&rule, task_id, audience_id, now, segment_size)?;
    let Some(job) = jobs::insert_job(&tx, &spec, now).await? else {
        end_pending(
            tx,
            task_id,
            TaskState::Failed,
            format!("audience {audience_id} does not exist, is not sealed, or is another tenant's"),
            now,
        )
        .await?;
        return Ok(TaskStart::NoAudience);
    };
    if let Some(f) = &spec.follow_up {
        super::follow_ups::insert(&tx, job.id, f).await?;
    }
    mark_started(&tx, task_id, &job, now).await?;
    tx.commit().await.ctx("committing start_task")?;
    Ok(TaskStart::Started { job: Box::new(job) })
}

/// The job a task of the rule version `rule` (a [`SHARE_RULE_OF_TASK`] row)
/// starts, sending to `audience_id`.
fn task_job_spec(
    rule: &tokio_postgres::Row,
    task_id: i64,
    audience_id: i64,
    now: i64,
    segment_size: u64,
) -> Result<JobSpec> {
    let deadline_secs: Option<i64> = col(rule, 5, "rule_versions.deadline_secs")?;
    let priority: i16 = col(rule, 6, "rule_versions.priority")?;
    let tenant: i32 = col(rule, 7, "rules.tenant_id")?;
    let message: String = col(rule, 4, "rule_versions.message")?;
    let routing: Option<String> = col(rule, 8, "rule_versions.routing")?;
    let follow_after: Option<i64> = col(rule, 10, "rule_versions.follow_up_after_ms")?;
    let follow_message: Option<String> = col(rule, 11, "rule_versions.follow_up_message")?;
    // A rule's follow-up to the unread, or, with a fallback route, its next
    // step follows each task's job (the API refuses both at once).
    let follow_up = match (follow_after, follow_message) {
        (Some(after_ms), Some(message)) => Some(crate::FollowUp {
            after_ms,
            message,
            step: None,
        }),
        _ => crate::route_follow_up(routing.as_deref(), &message),
    };
    Ok(JobSpec {
        tenant: TenantId(u32::try_from(tenant).map_err(|_| {
            crate::StoreError::Corrupt(format!("rules.tenant_id {tenant} is negative"))
        })?),
        audience_id,
        channel: col(rule, 3, "rule_versions.channel")?,
        message,
        segment_size,
        deadline_at: deadline_secs.map(|s| now.saturating_add(s.saturating_mul(1000))),
        priority: u8::try_from(priority).unwrap_or(u8::MAX),
        follow_up,
        follows: None,
        resends: None,
        task_id: Some(task_id),
        routing,
        traceparent: None,
        meta: crate::JobMeta {
            name: col(rule, 9, "rule_versions.name")?,
            ..Default::default()
        },
    })
}

/// Marks the task started with `job`: running, or succeeded at once when the
/// job has nothing to send (an empty audience).
async fn mark_started(tx: &Tx<'_>, task_id: i64, job: &crate::JobRecord, now: i64) -> Result<()> {
    let (state, finished_at, detail) = if job.state.is_final() {
        (
            TaskState::Succeeded,
            Some(now),
            Some("the audience is empty".to_string()),
        )
    } else {
        (TaskState::Running, None, None)
    };
    let recipients = i64::try_from(job.totals.total).unwrap_or(i64::MAX);
    let stmt = tx
        .prepare_cached(START_TASK)
        .await
        .ctx("preparing task start")?;
    tx.execute(
        &stmt,
        &[
            &task_id,
            &state.as_str(),
            &job.id,
            &recipients,
            &now,
            &finished_at,
            &detail,
        ],
    )
    .await
    .ctx("starting the task")?;
    Ok(())
}
