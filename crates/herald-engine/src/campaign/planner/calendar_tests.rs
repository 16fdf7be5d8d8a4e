//! The planner on a manual clock: a rule on the `cn` calendar's working days
//! starts its jobs on make-up Saturdays and not on holidays, and a calendar
//! replaced after a task was planned is followed when the task comes due.

use std::sync::Arc;

use herald_core::campaign::TaskState;
use herald_core::time::parse_rfc3339_ms;
use herald_core::{Clock, DEFAULT_TENANT, ManualClock};
use herald_store::{CalendarRecord, RuleSpec, StoreOptions};
use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::{plan_all, start_due};
use crate::campaign::Shared;
use crate::loops::stop::Stop;

const WEEKDAYS_AT_NINE_ON_CN: &str = r#"{"type":"cron","cron":"0 9 * * 1-5","timezone":"Asia/Shanghai","calendar":"cn","days":"working"}"#;

fn ms(s: &str) -> i64 {
    parse_rfc3339_ms(s).unwrap()
}

async fn shared(clock: ManualClock) -> Arc<Shared> {
    let store = herald_store::open("sqlite::memory:", &StoreOptions::default())
        .await
        .unwrap();
    let clock: Arc<dyn Clock> = Arc::new(clock);
    Arc::new(Shared {
        store,
        clock,
        channels: Default::default(),
        cfg: crate::loops::tuned::Tuned::new(super::super::CampaignConfig::default()),
        holder: herald_store::Holder::new("planner-test", 1),
        stop: Arc::new(Stop::default()),
        live: Arc::new(crate::observe::live::Live::new(Vec::new())),
        work: Default::default(),
        plan: Default::default(),
        sweep: Default::default(),
        writes: Default::default(),
        templates: Default::default(),
    })
}

async fn rule(sh: &Shared, schedule: &str) -> i64 {
    let now = sh.clock.now_ms();
    let audience = sh
        .store
        .create_audience(DEFAULT_TENANT, None, now)
        .await
        .unwrap();
    sh.store
        .append_audience(audience, 0, &["u1".to_string()])
        .await
        .unwrap();
    sh.store.seal_audience(audience, 1, now).await.unwrap();
    let spec = RuleSpec {
        tenant: DEFAULT_TENANT,
        name: "standup".into(),
        schedule: schedule.into(),
        audience: "{}".into(),
        audience_id: Some(audience),
        channel: "log".into(),
        message: r#"{"text":"standup"}"#.into(),
        deadline_secs: None,
        priority: 5,
        routing: None,
        follow_up: None,
    };
    sh.store
        .create_rule(spec, sh.clock.now_ms())
        .await
        .unwrap()
        .id
}

/// Plans, moves the clock to each planned task and starts it, until the
/// next one is after `until`; the local dates of the tasks that started a
/// job, in order.
async fn run_until(sh: &Shared, clock: &ManualClock, rule: i64, until: i64) -> Vec<String> {
    let tz = TimeZone::get("Asia/Shanghai").unwrap();
    let mut started = Vec::new();
    loop {
        plan_all(sh).await;
        let tasks = sh.store.rule_tasks(rule, 50).await.unwrap();
        let Some(next) = tasks
            .iter()
            .filter(|t| t.state == TaskState::Pending)
            .map(|t| t.planned_at)
            .min()
        else {
            break;
        };
        if next > until {
            break;
        }
        clock.set(next);
        start_due(sh).await;
        let task = sh
            .store
            .rule_tasks(rule, 50)
            .await
            .unwrap()
            .into_iter()
            .find(|t| t.planned_at == next)
            .unwrap();
        if task.job_id.is_some() {
            let local = tz.to_datetime(Timestamp::from_millisecond(next).unwrap());
            assert_eq!(local.time(), jiff::civil::time(9, 0, 0, 0));
            started.push(local.date().to_string());
        } else {
            assert_eq!(task.state, TaskState::Cancelled, "{task:?}");
        }
    }
    started
}

#[tokio::test]
async fn a_cn_working_day_rule_fires_across_spring_festival_2026() {
    let clock = ManualClock::new(ms("2026-02-09T00:00:00+08:00"));
    let sh = shared(clock.clone()).await;
    let id = rule(&sh, WEEKDAYS_AT_NINE_ON_CN).await;
    let fired = run_until(&sh, &clock, id, ms("2026-03-03T12:00:00+08:00")).await;
    assert_eq!(
        fired,
        [
            "2026-02-09",
            "2026-02-10",
            "2026-02-11",
            "2026-02-12",
            "2026-02-13",
            "2026-02-14", // make-up Saturday
            "2026-02-24",
            "2026-02-25",
            "2026-02-26",
            "2026-02-27",
            "2026-02-28", // make-up Saturday
            "2026-03-02",
            "2026-03-03",
        ]
    );
}

#[tokio::test]
async fn a_cn_working_day_rule_fires_across_national_day_2026() {
    let clock = ManualClock::new(ms("2026-09-18T12:00:00+08:00"));
    let sh = shared(clock.clone()).await;
    let id = rule(&sh, WEEKDAYS_AT_NINE_ON_CN).await;
    let fired = run_until(&sh, &clock, id, ms("2026-10-12T12:00:00+08:00")).await;
    assert_eq!(
        fired,
        [
            "2026-09-20", // make-up Sunday
            "2026-09-21",
            "2026-09-22",
            "2026-09-23",
            "2026-09-24",
            "2026-09-28",
            "2026-09-29",
            "2026-09-30",
            "2026-10-08",
            "2026-10-09",
            "2026-10-10", // make-up Saturday
            "2026-10-12",
        ]
    );
}

#[tokio::test]
async fn a_calendar_replaced_after_planning_is_followed_when_the_task_is_due() {
    // Friday Feb 13 is planned first; then the tenant replaces `cn` with a
    // calendar that makes the 13th a holiday and Saturday the 14th an
    // ordinary day off.
    let clock = ManualClock::new(ms("2026-02-12T10:00:00+08:00"));
    let sh = shared(clock.clone()).await;
    let id = rule(&sh, WEEKDAYS_AT_NINE_ON_CN).await;
    plan_all(&sh).await;
    let planned: Vec<i64> = sh
        .store
        .rule_tasks(id, 10)
        .await
        .unwrap()
        .iter()
        .map(|t| t.planned_at)
        .collect();
    assert_eq!(planned, [ms("2026-02-13T09:00:00+08:00")]);
    let own = r#"{"time_zone":"Asia/Shanghai","working_weekdays":["mon","tue","wed","thu","fri"],
        "years":{"2026":{"holidays":["2026-02-13","2026-02-16"]}}}"#;
    sh.store
        .put_calendar(&CalendarRecord {
            tenant: DEFAULT_TENANT,
            name: "cn".into(),
            body: own.into(),
            created_at: clock.now_ms(),
            updated_at: clock.now_ms(),
            updated_by: None,
        })
        .await
        .unwrap();
    let fired = run_until(&sh, &clock, id, ms("2026-02-18T12:00:00+08:00")).await;
    assert_eq!(fired, ["2026-02-17", "2026-02-18"]);
    let tasks = sh.store.rule_tasks(id, 10).await.unwrap();
    let cancelled: Vec<i64> = tasks
        .iter()
        .filter(|t| t.state == TaskState::Cancelled)
        .map(|t| t.planned_at)
        .collect();
    assert_eq!(cancelled, [ms("2026-02-13T09:00:00+08:00")]);
}
