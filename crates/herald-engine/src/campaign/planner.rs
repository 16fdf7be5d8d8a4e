//! The rule planner: on one node at a time (the store's named lease), keeps the
//! next occurrence of every enabled rule planned as a pending task, starts due
//! tasks as jobs, and marks rules with nothing left to run `finished`.
//!
//! Tasks are append-only and unique per `(rule, version, planned_at)`, so two
//! planners that ever overlap plan the same task once. Whether a task may still
//! run (its version current, its rule enabled) is decided by the store when it
//! starts, in the same transaction that creates its job.

use std::sync::Arc;

use herald_core::schedule::{Schedule, ScheduleSpec};
use herald_store::{PlanCandidate, TaskRecord, TaskStart};

use super::{PLANNER_LEASE, Shared};

/// Rules read per planning query, and tasks per start query.
const PAGE: usize = 500;

pub(super) async fn run(sh: Arc<Shared>) {
    let mut held = false;
    while !sh.stop.is_stopped() {
        let interval = sh.cfg.get().planner_interval_ms.max(10);
        let ttl = (interval as i64 * 6).max(3_000);
        let now = sh.clock.now_ms();
        match sh
            .store
            .acquire_lease(PLANNER_LEASE, &sh.holder, now, ttl)
            .await
        {
            Ok(Some(_)) => {
                if !held {
                    tracing::info!(node = %sh.holder.node_id, incarnation = sh.holder.incarnation, "this node now plans rules");
                    held = true;
                }
                plan_all(&sh).await;
                start_due(&sh).await;
            }
            Ok(None) => held = false,
            Err(e) => tracing::warn!(error = %e, "taking the planner lease failed"),
        }
        sh.nap(&sh.plan, interval).await;
    }
    if held {
        let _ = sh.store.release_lease(PLANNER_LEASE, &sh.holder).await;
    }
}

/// Plans the next occurrence of every enabled rule that has none pending.
async fn plan_all(sh: &Shared) {
    let mut after = None;
    loop {
        let page = match sh.store.plan_candidates(after, PAGE).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "reading rules to plan failed");
                return;
            }
        };
        for c in &page {
            plan_one(sh, c).await;
        }
        match page.last() {
            Some(last) if page.len() == PAGE => after = Some(last.rule.id),
            _ => return,
        }
    }
}

/// The instant after which a rule's next occurrence is looked for.
///
/// After its last planned occurrence; a recurring rule that was not planned
/// for a while (no planner running) does not make up occurrences older than
/// the misfire grace. A version's first occurrence counts from its creation.
pub(crate) fn plan_after(
    recurring: bool,
    last_planned_at: Option<i64>,
    version_created_at: i64,
    now: i64,
    misfire_grace_ms: i64,
) -> i64 {
    let base = last_planned_at.unwrap_or(version_created_at.saturating_sub(1));
    if recurring {
        base.max(now.saturating_sub(misfire_grace_ms))
    } else {
        base
    }
}

/// The first `count` instants a new version of a rule with `schedule`,
/// created at `created_at`, would be planned at: the planner's own chain of
/// [`plan_after`] and [`Schedule::next_after`], so a preview cannot disagree
/// with what fires (time zone, `exclude_dates`, DST gaps and folds).
pub fn occurrences(schedule: &Schedule, created_at: i64, count: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(count.min(1_000));
    let mut last = None;
    while out.len() < count {
        // A fresh version: nothing planned yet, created now, so no misfire skip.
        let after = plan_after(schedule.is_recurring(), last, created_at, created_at, 0);
        match schedule.next_after(created_at, after) {
            Some(at) => {
                out.push(at);
                last = Some(at);
            }
            None => break,
        }
    }
    out
}

/// A stored rule schedule, compiled with the calendar it names as that is
/// now; `None` (reported) when it cannot be.
async fn rule_schedule(
    sh: &Shared,
    tenant: herald_core::TenantId,
    text: &str,
    rule: i64,
) -> Option<Schedule> {
    let spec = match serde_json::from_str::<ScheduleSpec>(text) {
        Ok(spec) => spec,
        Err(e) => {
            tracing::error!(rule, error = %e, "rule schedule does not read; not planning it");
            return None;
        }
    };
    match super::calendars::compile(sh.store.as_ref(), tenant, &spec).await {
        Ok(Ok(s)) => Some(s),
        Ok(Err(e)) => {
            // The API validated it; a row that no longer compiles (e.g. a zone
            // the bundled database dropped) is reported, not guessed at.
            tracing::error!(rule, error = %e, "rule schedule does not compile; not planning it");
            None
        }
        Err(e) => {
            tracing::warn!(rule, error = %e, "reading the rule's calendar failed");
            None
        }
    }
}

/// Whether a due task of a rule with a calendar is still an occurrence of
/// its schedule: the calendar may have been replaced since it was planned.
/// `true` when it cannot tell (the store will decide as before).
async fn still_an_occurrence(sh: &Shared, task: &TaskRecord) -> bool {
    let rule = match sh.store.get_rule(task.rule_id).await {
        Ok(Some(r)) => r,
        _ => return true,
    };
    let v = &rule.current;
    if v.version != task.version || !v.spec.schedule.contains("\"calendar\"") {
        return true;
    }
    let Some(schedule) = rule_schedule(sh, rule.tenant, &v.spec.schedule, rule.id).await else {
        return true;
    };
    schedule.next_after(v.created_at, task.planned_at - 1) == Some(task.planned_at)
}

async fn plan_one(sh: &Shared, c: &PlanCandidate) {
    if c.has_pending_current {
        return;
    }
    let rule = &c.rule;
    let version = &rule.current;
    let Some(schedule) = rule_schedule(sh, rule.tenant, &version.spec.schedule, rule.id).await
    else {
        return;
    };
    let now = sh.clock.now_ms();
    let after = plan_after(
        schedule.is_recurring(),
        c.last_planned_at,
        version.created_at,
        now,
        sh.cfg.get().misfire_grace_ms,
    );
    match schedule.next_after(version.created_at, after) {
        Some(at) => match sh.store.plan_task(rule.id, version.version, at, now).await {
            Ok(Some(task)) => match schedule.uncovered(at) {
                Some((calendar, year)) => tracing::warn!(
                    rule = rule.id,
                    version = version.version,
                    task = task.id,
                    planned_at = at,
                    calendar,
                    year,
                    "task planned by the calendar's regular weekdays: it lists no holidays for that year"
                ),
                None => tracing::info!(
                    rule = rule.id,
                    version = version.version,
                    task = task.id,
                    planned_at = at,
                    "task planned"
                ),
            },
            Ok(None) => {}
            Err(e) => tracing::warn!(rule = rule.id, error = %e, "planning a task failed"),
        },
        None if c.active_tasks == 0 => match sh.store.finish_rule(rule.id, now).await {
            Ok(true) => tracing::info!(rule = rule.id, "rule finished: no occurrence left"),
            Ok(false) => {}
            Err(e) => tracing::warn!(rule = rule.id, error = %e, "finishing a rule failed"),
        },
        None => {}
    }
}

/// Starts every task that is due: the store checks it against its rule and
/// either creates its job or ends it.
async fn start_due(sh: &Shared) {
    loop {
        let now = sh.clock.now_ms();
        let due = match sh.store.due_tasks(now, PAGE).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %e, "reading due tasks failed");
                return;
            }
        };
        let mut started = false;
        for task in &due {
            if !still_an_occurrence(sh, task).await {
                match sh.store.cancel_task(task.id, sh.clock.now_ms(), None).await {
                    Ok(_) => tracing::info!(
                        rule = task.rule_id,
                        task = task.id,
                        planned_at = task.planned_at,
                        "task cancelled: its rule's calendar no longer has it fire that day"
                    ),
                    Err(e) => {
                        tracing::warn!(task = task.id, error = %e, "cancelling a task failed")
                    }
                }
                continue;
            }
            match sh
                .store
                .start_task(task.id, sh.clock.now_ms(), sh.cfg.get().segment_size.max(1))
                .await
            {
                Ok(TaskStart::Started { job }) => {
                    started = true;
                    tracing::info!(
                        rule = task.rule_id,
                        version = task.version,
                        task = task.id,
                        job = job.id,
                        recipients = job.totals.total,
                        "task started"
                    );
                }
                Ok(TaskStart::Expired) => {
                    tracing::info!(
                        rule = task.rule_id,
                        version = task.version,
                        task = task.id,
                        "task expired: its rule has a newer version"
                    )
                }
                Ok(TaskStart::Cancelled) => {
                    tracing::info!(
                        rule = task.rule_id,
                        task = task.id,
                        "task cancelled: its rule is disabled"
                    )
                }
                Ok(TaskStart::NoAudience) => {
                    tracing::warn!(
                        rule = task.rule_id,
                        task = task.id,
                        "task failed: its rule has no audience to send to"
                    )
                }
                Ok(TaskStart::NotPending) => {}
                Err(e) => tracing::warn!(task = task.id, error = %e, "starting a task failed"),
            }
        }
        if started {
            sh.work.notify_waiters();
        }
        if due.len() < PAGE {
            return;
        }
    }
}

#[cfg(test)]
mod calendar_tests;

#[cfg(test)]
mod tests {
    use super::{Schedule, ScheduleSpec, occurrences, plan_after};

    #[test]
    fn occurrences_chain_the_planner_steps_and_stop_at_the_end() {
        let at = ScheduleSpec::At {
            at: "2030-01-01T00:00:00Z".into(),
        };
        let one = occurrences(&Schedule::compile(&at).unwrap(), 0, 5);
        assert_eq!(one, vec![1_893_456_000_000]);
        let cron = ScheduleSpec::Cron {
            cron: "0 9 * * *".into(),
            timezone: "UTC".into(),
            exclude_dates: vec!["2030-01-02".into()],
            start_at: None,
            end_at: None,
            calendar: None,
            days: None,
        };
        let days = occurrences(&Schedule::compile(&cron).unwrap(), 1_893_456_000_000, 3);
        let day = 86_400_000;
        let nine = 1_893_456_000_000 + 9 * 3_600_000;
        assert_eq!(days, vec![nine, nine + 2 * day, nine + 3 * day]);
        let now = occurrences(&Schedule::compile(&ScheduleSpec::Immediate).unwrap(), 7, 3);
        assert_eq!(now, vec![7]);
    }

    #[test]
    fn first_occurrence_counts_from_the_version() {
        assert_eq!(plan_after(false, None, 1_000, 50_000, 10_000), 999);
        assert_eq!(plan_after(true, None, 45_000, 50_000, 10_000), 44_999);
    }

    #[test]
    fn recurring_rules_do_not_make_up_old_occurrences() {
        assert_eq!(plan_after(true, Some(1_000), 0, 100_000, 10_000), 90_000);
        assert_eq!(plan_after(true, Some(95_000), 0, 100_000, 10_000), 95_000);
        // One-off schedules keep their occurrence however late the planner is.
        assert_eq!(plan_after(false, Some(1_000), 0, 100_000, 10_000), 1_000);
    }
}
