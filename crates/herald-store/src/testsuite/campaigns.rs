//! Campaigns through [`crate::CampaignStore`] only: audiences, rules, tasks,
//! jobs, segments, the send log and the sweeper. Every job total read here is
//! checked to add up (see `job_now`).

use std::collections::{HashMap, HashSet};

use herald_core::campaign::{JobState, RuleStatus, SegmentState, SendState, TaskState};

use super::fixtures::*;
use super::support::S;
use crate::{
    AUDIENCE_CHUNK, AudienceRecord, ClaimedSegment, JobRecord, JobTotals, LeaseCheck, Progress,
    RuleSpec, SegmentClaim, SegmentRecord, SegmentWrite, SendEntry, SendRecord, SweepOptions,
    SweepReport, TaskRecord, TaskStart,
};

const T0: i64 = 1_700_000_000_000;
const LEASE: i64 = 30_000;

use SendState::{Delivered as D, Failed as F, Retry as R};

// ---- Helpers ----

/// A sealed audience of `n` fixture recipients.
async fn audience(store: &S, n: u64) -> i64 {
    super::support::sealed_audience(store, n, T0).await
}

async fn job(store: &S, audience_id: i64, segment_size: u64) -> JobRecord {
    store
        .create_job(job_spec(audience_id, segment_size), T0)
        .await
        .expect("create_job")
        .expect("a job over a sealed audience")
}

/// Checks that a job's totals add up: every recipient is delivered, failed,
/// expired, cancelled or remaining, retrying ones are among the remaining,
/// and a job that ended has none remaining.
fn check_totals(job: &JobRecord) {
    let t = job.totals;
    let settled = t.delivered + t.failed + t.expired + t.cancelled + t.in_doubt;
    assert!(settled <= t.total, "more settled than total: {t:?}");
    assert_eq!(settled + t.remaining(), t.total, "{t:?}");
    assert!(t.retrying <= t.remaining(), "{t:?}");
    if job.state.is_final() {
        assert_eq!(
            t.remaining(),
            0,
            "a {} job with recipients left: {t:?}",
            job.state
        );
        assert_eq!(t.retrying, 0, "{t:?}");
        assert!(job.finished_at.is_some(), "{job:?}");
    } else {
        assert_eq!(job.finished_at, None, "{job:?}");
    }
}

async fn job_now(store: &S, id: i64) -> JobRecord {
    let job = store
        .get_job(id)
        .await
        .expect("get_job")
        .unwrap_or_else(|| panic!("job {id} missing"));
    check_totals(&job);
    job
}

fn totals(total: u64, delivered: u64, failed: u64, retrying: u64) -> JobTotals {
    JobTotals {
        total,
        delivered,
        failed,
        retrying,
        ..Default::default()
    }
}

async fn segments(store: &S, job_id: i64) -> Vec<SegmentRecord> {
    let segs = store
        .job_segments(job_id, None, 100_000)
        .await
        .expect("job_segments");
    assert!(segs.windows(2).all(|w| w[0].id < w[1].id), "by id");
    assert!(segs.iter().all(|s| s.job_id == job_id));
    segs
}

async fn segment(store: &S, job_id: i64, id: i64) -> SegmentRecord {
    segments(store, job_id)
        .await
        .into_iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("segment {id} missing"))
}

async fn seg_counts(store: &S, job_id: i64) -> HashMap<SegmentState, u64> {
    let counts = store.segment_counts(job_id).await.expect("segment_counts");
    let map: HashMap<_, _> = counts.iter().copied().collect();
    assert_eq!(map.len(), counts.len(), "a state listed twice: {counts:?}");
    assert!(
        counts.iter().all(|&(_, n)| n > 0),
        "zero counts: {counts:?}"
    );
    map
}

async fn claim(store: &S, owner: &str, now: i64) -> ClaimedSegment {
    store
        .claim_segment(owner, now, LEASE)
        .await
        .expect("claim_segment")
        .expect("a claimable segment")
}

async fn no_claim(store: &S, now: i64) {
    let c = store
        .claim_segment("idle", now, LEASE)
        .await
        .expect("claim_segment");
    assert!(c.is_none(), "nothing should be claimable: {c:?}");
}

async fn record(
    store: &S,
    c: &ClaimedSegment,
    cursor: u64,
    entries: Vec<crate::SendEntry>,
    now: i64,
) -> LeaseCheck {
    store
        .record_sends(&c.claim, cursor, entries, now, LEASE)
        .await
        .expect("record_sends")
}

async fn finish(store: &S, c: &ClaimedSegment, now: i64) -> LeaseCheck {
    store
        .finish_segment(&c.claim, now)
        .await
        .expect("finish_segment")
}

async fn sweep(store: &S, now: i64, opts: SweepOptions) -> SweepReport {
    store.sweep(now, opts).await.expect("sweep")
}

async fn sends_of(store: &S, job_id: i64, start: u64, end: u64) -> Vec<SendRecord> {
    let rows = store
        .job_sends(job_id, start, end)
        .await
        .expect("job_sends");
    assert!(rows.windows(2).all(|w| w[0].index < w[1].index), "by index");
    assert!(rows.iter().all(|r| r.job_id == job_id));
    rows
}

async fn send_row(store: &S, job_id: i64, index: u64) -> SendRecord {
    let mut rows = sends_of(store, job_id, index, index + 1).await;
    assert_eq!(rows.len(), 1, "send-log row {index} of job {job_id}");
    rows.remove(0)
}

async fn rule(store: &S, spec: RuleSpec) -> i64 {
    store.create_rule(spec, T0).await.expect("create_rule").id
}

async fn plan(store: &S, rule_id: i64, version: i32, planned_at: i64) -> TaskRecord {
    store
        .plan_task(rule_id, version, planned_at, T0)
        .await
        .expect("plan_task")
        .expect("a new task")
}

async fn task(store: &S, id: i64) -> TaskRecord {
    store
        .get_task(id)
        .await
        .expect("get_task")
        .unwrap_or_else(|| panic!("task {id} missing"))
}

async fn start(store: &S, task_id: i64, now: i64, segment_size: u64) -> JobRecord {
    match store
        .start_task(task_id, now, segment_size)
        .await
        .expect("start_task")
    {
        TaskStart::Started { job } => {
            check_totals(&job);
            *job
        }
        other => panic!("expected Started, got {other:?}"),
    }
}

/// A rule over a sealed audience of `n`, one task planned and started: its job.
async fn task_job(store: &S, n: u64, segment_size: u64, spec: RuleSpec) -> (i64, JobRecord) {
    let aud = audience(store, n).await;
    let rule_id = rule(
        store,
        RuleSpec {
            audience_id: Some(aud),
            ..spec
        },
    )
    .await;
    let t = plan(store, rule_id, 1, T0).await;
    let job = start(store, t.id, T0, segment_size).await;
    (t.id, job)
}

// ---- Audiences ----

pub async fn audiences_are_uploaded_in_chunks_sealed_and_sliced(store: S) {
    let id = store
        .create_audience(DEFAULT_TENANT, Some("list".into()), T0)
        .await
        .unwrap();
    assert_eq!(
        store.get_audience(id).await.unwrap(),
        Some(AudienceRecord {
            tenant: DEFAULT_TENANT,
            id,
            name: Some("list".into()),
            size: None,
            created_at: T0,
        })
    );
    let n = 2 * AUDIENCE_CHUNK + 100;
    // A chunk written twice: the second write replaces the first.
    store
        .append_audience(id, 0, &vec!["stale".to_string(); 10])
        .await
        .unwrap();
    for start in chunk_starts(n) {
        let end = (start + AUDIENCE_CHUNK).min(n);
        store
            .append_audience(id, start, &recipients(start..end))
            .await
            .unwrap();
    }
    // Refused, and nothing written: a start off the chunk grid, more than a
    // chunk, a recipient holding a newline.
    let past = 3 * AUDIENCE_CHUNK;
    assert!(
        store
            .append_audience(id, 1, &recipients(1..2))
            .await
            .is_err()
    );
    assert!(
        store
            .append_audience(id, past, &recipients(past..past + AUDIENCE_CHUNK + 1))
            .await
            .is_err()
    );
    assert!(
        store
            .append_audience(id, past, &["a\nb".to_string()])
            .await
            .is_err()
    );
    // Not usable before it is sealed.
    assert!(store.audience_slice(id, 0, 10).await.is_err());
    // Sealing with a size the chunks do not hold fails and leaves it open.
    assert!(store.seal_audience(id, n + 1, T0 + 1).await.is_err());
    assert!(store.seal_audience(id, n - 1, T0 + 1).await.is_err());
    assert_eq!(store.get_audience(id).await.unwrap().unwrap().size, None);
    let sealed = store.seal_audience(id, n, T0 + 2).await.unwrap().unwrap();
    assert_eq!(
        sealed,
        AudienceRecord {
            tenant: DEFAULT_TENANT,
            id,
            name: Some("list".into()),
            size: Some(n),
            created_at: T0,
        }
    );
    assert_eq!(store.get_audience(id).await.unwrap(), Some(sealed));
    assert_eq!(store.seal_audience(id, n, T0 + 3).await.unwrap(), None);
    assert_eq!(store.seal_audience(id + 1000, 0, T0).await.unwrap(), None);
    assert!(
        store
            .append_audience(id, 0, &recipients(0..3))
            .await
            .is_err(),
        "a sealed audience takes no more recipients"
    );

    let c = AUDIENCE_CHUNK;
    for (start, end, want) in [
        (0, 3, 0..3),
        // Across one chunk boundary, then across three chunks.
        (c - 2, c + 2, c - 2..c + 2),
        (c - 1, 2 * c + 1, c - 1..2 * c + 1),
        // Clipped at the size.
        (n - 5, n + 50, n - 5..n),
        (n, n + 10, n..n),
        (n + 10, n + 20, n..n),
        (7, 7, 7..7),
        (9, 3, 9..9),
        (0, n, 0..n),
    ] {
        assert_eq!(
            store.audience_slice(id, start, end).await.unwrap(),
            recipients(want),
            "slice {start}..{end}"
        );
    }
    assert!(store.audience_slice(id + 1000, 0, 10).await.is_err());

    // A missing chunk in the middle makes the upload unsealable.
    let holey = store
        .create_audience(DEFAULT_TENANT, None, T0)
        .await
        .unwrap();
    for start in [0, 2 * c] {
        let end = (start + c).min(n);
        store
            .append_audience(holey, start, &recipients(start..end))
            .await
            .unwrap();
    }
    assert!(store.seal_audience(holey, n, T0).await.is_err());
    store
        .append_audience(holey, c, &recipients(c..2 * c))
        .await
        .unwrap();
    assert!(store.seal_audience(holey, n, T0).await.unwrap().is_some());
    assert_eq!(
        store.audience_slice(holey, c - 1, c + 1).await.unwrap(),
        recipients(c - 1..c + 1)
    );
}

pub async fn unsealed_audiences_make_no_job_and_unused_ones_can_be_dropped(store: S) {
    let open = store
        .create_audience(DEFAULT_TENANT, None, T0)
        .await
        .unwrap();
    store
        .append_audience(open, 0, &recipients(0..5))
        .await
        .unwrap();
    assert_eq!(
        store.create_job(job_spec(open, 10), T0).await.unwrap(),
        None
    );
    assert_eq!(
        store
            .create_job(job_spec(open + 1000, 10), T0)
            .await
            .unwrap(),
        None
    );
    assert!(
        store
            .list_jobs(DEFAULT_TENANT, None, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // An abandoned upload goes away with its recipients.
    assert!(store.drop_audience(open).await.unwrap());
    assert_eq!(store.get_audience(open).await.unwrap(), None);
    assert!(store.audience_slice(open, 0, 5).await.is_err());
    assert!(!store.drop_audience(open).await.unwrap());

    // Referred to by a job, or by a rule: kept.
    let used = audience(&store, 5).await;
    job(&store, used, 2).await;
    assert!(!store.drop_audience(used).await.unwrap());
    assert_eq!(
        store.audience_slice(used, 0, 5).await.unwrap(),
        recipients(0..5)
    );
    let ruled = audience(&store, 5).await;
    rule(&store, rule_spec("r", Some(ruled))).await;
    assert!(!store.drop_audience(ruled).await.unwrap());
    assert!(store.get_audience(ruled).await.unwrap().is_some());

    // Sealed but unused: dropped.
    let spare = audience(&store, 3).await;
    assert!(store.drop_audience(spare).await.unwrap());
    assert_eq!(store.get_audience(spare).await.unwrap(), None);
}

pub async fn a_job_over_an_empty_audience_is_done_at_once(store: S) {
    let empty = audience(&store, 0).await;
    assert_eq!(
        store.audience_slice(empty, 0, 10).await.unwrap(),
        Vec::<String>::new()
    );
    let j = job(&store, empty, 100).await;
    assert_eq!(j.state, JobState::Done);
    assert_eq!(j.totals, JobTotals::default());
    assert_eq!(j.finished_at, Some(T0));
    check_totals(&j);
    assert_eq!(job_now(&store, j.id).await, j);
    assert!(segments(&store, j.id).await.is_empty());
    assert!(seg_counts(&store, j.id).await.is_empty());
    no_claim(&store, T0 + 1).await;
}

// ---- Rules and tasks ----

pub async fn rules_are_versioned(store: S) {
    let aud = audience(&store, 3).await;
    let spec1 = rule_spec("first", Some(aud));
    let r = store.create_rule(spec1.clone(), T0).await.unwrap();
    assert_eq!(r.status, RuleStatus::Enabled);
    assert_eq!((r.created_at, r.updated_at), (T0, T0));
    assert_eq!(r.current.rule_id, r.id);
    assert_eq!(r.current.version, 1);
    assert_eq!(r.current.spec, spec1);
    assert_eq!(r.current.created_at, T0);
    assert_eq!(store.get_rule(r.id).await.unwrap(), Some(r.clone()));

    let spec2 = RuleSpec {
        name: "second".into(),
        audience_id: None,
        deadline_secs: Some(600),
        priority: 7,
        channel: "wecom".into(),
        ..rule_spec("x", None)
    };
    let r2 = store
        .update_rule(r.id, spec2.clone(), T0 + 10)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r2.id, r.id);
    assert_eq!(r2.status, RuleStatus::Enabled);
    assert_eq!((r2.created_at, r2.updated_at), (T0, T0 + 10));
    assert_eq!(r2.current.version, 2);
    assert_eq!(r2.current.spec, spec2);
    assert_eq!(r2.current.created_at, T0 + 10);
    assert_eq!(store.get_rule(r.id).await.unwrap(), Some(r2.clone()));
    assert_eq!(
        store.rule_versions(r.id, None, 10).await.unwrap(),
        vec![r.current.clone(), r2.current.clone()]
    );

    assert_eq!(
        store.update_rule(r.id + 1000, spec2, T0).await.unwrap(),
        None
    );
    assert_eq!(store.get_rule(r.id + 1000).await.unwrap(), None);
    assert!(
        store
            .rule_versions(r.id + 1000, None, 10)
            .await
            .unwrap()
            .is_empty()
    );

    let mut ids = vec![r.id];
    for k in 0..3 {
        ids.push(rule(&store, rule_spec(&format!("more {k}"), None)).await);
    }
    let listed = |rs: Vec<crate::RuleRecord>| rs.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(
        listed(store.list_rules(DEFAULT_TENANT, None, 10).await.unwrap()),
        ids
    );
    assert_eq!(
        listed(store.list_rules(DEFAULT_TENANT, None, 2).await.unwrap()),
        ids[..2]
    );
    assert_eq!(
        listed(
            store
                .list_rules(DEFAULT_TENANT, Some(ids[1]), 10)
                .await
                .unwrap()
        ),
        ids[2..]
    );
    assert!(
        store
            .list_rules(DEFAULT_TENANT, Some(ids[3]), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.list_rules(DEFAULT_TENANT, None, 10).await.unwrap()[0],
        r2
    );
}

/// Versions page oldest first: `after` is the last version of the previous
/// page, a short page is the last, and another rule's versions never mix in.
pub async fn rule_versions_page_oldest_first(store: S) {
    let r = store
        .create_rule(rule_spec("v1", None), T0)
        .await
        .expect("create_rule");
    let other = rule(&store, rule_spec("other", None)).await;
    let mut all = vec![r.current.clone()];
    for v in 2..=7 {
        let next = store
            .update_rule(r.id, rule_spec(&format!("v{v}"), None), T0 + v)
            .await
            .expect("update_rule")
            .expect("rule");
        all.push(next.current);
    }
    store
        .update_rule(other, rule_spec("other v2", None), T0)
        .await
        .expect("update_rule");

    let mut pages = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .rule_versions(r.id, after, 3)
            .await
            .expect("rule_versions");
        assert!(page.len() <= 3);
        let full = page.len() == 3;
        after = page.last().map(|v| v.version);
        pages.push(page);
        if !full {
            break;
        }
    }
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![3, 3, 1]
    );
    assert_eq!(pages.concat(), all);
    assert_eq!(
        store.rule_versions(r.id, Some(5), 100).await.unwrap(),
        all[5..].to_vec()
    );
    assert!(
        store
            .rule_versions(r.id, Some(7), 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.rule_versions(r.id, None, 0).await.unwrap().is_empty());
}

pub async fn plan_task_is_unique_and_only_for_the_current_enabled_version(store: S) {
    let r = rule(&store, rule_spec("r", None)).await;
    let t = store
        .plan_task(r, 1, T0 + 1_000, T0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        t,
        TaskRecord {
            tenant: DEFAULT_TENANT,
            id: t.id,
            rule_id: r,
            version: 1,
            planned_at: T0 + 1_000,
            state: TaskState::Pending,
            job_id: None,
            recipients: None,
            detail: None,
            created_at: T0,
            started_at: None,
            finished_at: None,
            created_by: None,
            changed_by: None,
        }
    );
    assert_eq!(task(&store, t.id).await, t);
    assert_eq!(store.get_task(t.id + 1000).await.unwrap(), None);
    // The same occurrence twice: the second planner gets nothing.
    assert_eq!(
        store.plan_task(r, 1, T0 + 1_000, T0 + 5).await.unwrap(),
        None
    );
    assert_eq!(store.rule_tasks(r, 10).await.unwrap(), vec![t.clone()]);

    store
        .update_rule(r, rule_spec("r2", None), T0 + 10)
        .await
        .unwrap()
        .unwrap();
    // Old and unknown versions are refused; the new one may plan the same time.
    assert_eq!(store.plan_task(r, 1, T0 + 2_000, T0).await.unwrap(), None);
    assert_eq!(store.plan_task(r, 3, T0 + 2_000, T0).await.unwrap(), None);
    let t2 = plan(&store, r, 2, T0 + 1_000).await;
    assert_ne!(t2.id, t.id);
    assert_eq!(store.plan_task(r + 1000, 1, T0, T0).await.unwrap(), None);

    // Not while disabled.
    store.set_rule_enabled(r, false, T0).await.unwrap().unwrap();
    assert_eq!(store.plan_task(r, 2, T0 + 3_000, T0).await.unwrap(), None);
}

pub async fn rule_tasks_are_newest_first(store: S) {
    let r = rule(&store, rule_spec("r", None)).await;
    let other = rule(&store, rule_spec("other", None)).await;
    let a = plan(&store, r, 1, T0 + 20).await;
    let b = plan(&store, r, 1, T0 + 10).await;
    plan(&store, other, 1, T0 + 15).await;
    store
        .update_rule(r, rule_spec("r2", None), T0)
        .await
        .unwrap();
    let c = plan(&store, r, 2, T0 + 20).await;
    let d = plan(&store, r, 2, T0 + 5).await;
    let ids = |ts: Vec<TaskRecord>| ts.into_iter().map(|t| t.id).collect::<Vec<_>>();
    // Ties on planned_at: newest id first.
    assert_eq!(
        ids(store.rule_tasks(r, 10).await.unwrap()),
        vec![c.id, a.id, b.id, d.id]
    );
    assert_eq!(ids(store.rule_tasks(r, 2).await.unwrap()), vec![c.id, a.id]);
    assert!(store.rule_tasks(r + 1000, 10).await.unwrap().is_empty());
}

pub async fn disabling_cancels_pending_tasks_not_running_ones(store: S) {
    let aud = audience(&store, 10).await;
    let r = rule(&store, rule_spec("r", Some(aud))).await;
    let t1 = plan(&store, r, 1, T0 + 100).await;
    let t2 = plan(&store, r, 1, T0 + 200).await;
    let j = start(&store, t1.id, T0 + 100, 5).await;

    let off = store
        .set_rule_enabled(r, false, T0 + 150)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(off.status, RuleStatus::Disabled);
    assert_eq!(off.updated_at, T0 + 150);
    assert_eq!(off.current.version, 1);
    let running = task(&store, t1.id).await;
    assert_eq!(running.state, TaskState::Running);
    assert_eq!(running.finished_at, None);
    let cancelled = task(&store, t2.id).await;
    assert_eq!(cancelled.state, TaskState::Cancelled);
    assert_eq!(cancelled.finished_at, Some(T0 + 150));
    assert!(cancelled.detail.is_some());
    assert!(store.due_tasks(T0 + 1_000, 10).await.unwrap().is_empty());
    assert_eq!(
        store.start_task(t2.id, T0 + 200, 5).await.unwrap(),
        TaskStart::NotPending
    );
    assert_eq!(store.plan_task(r, 1, T0 + 300, T0).await.unwrap(), None);
    assert!(store.plan_candidates(None, 10).await.unwrap().is_empty());
    // The running task's job goes on.
    assert_eq!(job_now(&store, j.id).await.state, JobState::Running);
    assert_eq!(claim(&store, "w", T0 + 160).await.claim.job_id, j.id);

    let on = store
        .set_rule_enabled(r, true, T0 + 400)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(on.status, RuleStatus::Enabled);
    assert_eq!(task(&store, t2.id).await.state, TaskState::Cancelled);
    assert!(store.plan_task(r, 1, T0 + 300, T0).await.unwrap().is_some());
    assert_eq!(
        store.set_rule_enabled(r + 1000, false, T0).await.unwrap(),
        None
    );
}

pub async fn plan_candidates_say_what_the_planner_needs(store: S) {
    let aud = audience(&store, 4).await;
    // a: a failed task and a pending one of the current version.
    let a = rule(&store, rule_spec("a", None)).await;
    let fa = plan(&store, a, 1, T0 + 10).await;
    assert_eq!(
        store.start_task(fa.id, T0 + 10, 10).await.unwrap(),
        TaskStart::NoAudience
    );
    plan(&store, a, 1, T0 + 20).await;
    // b: no task at all.
    let b = rule(&store, rule_spec("b", None)).await;
    // c: disabled, so not a candidate.
    let c = rule(&store, rule_spec("c", None)).await;
    store.set_rule_enabled(c, false, T0).await.unwrap();
    // d: a pending task of an old version only.
    let d = rule(&store, rule_spec("d", None)).await;
    plan(&store, d, 1, T0 + 5).await;
    store
        .update_rule(d, rule_spec("d2", None), T0)
        .await
        .unwrap();
    // e: a running task.
    let e = rule(&store, rule_spec("e", Some(aud))).await;
    let te = plan(&store, e, 1, T0 + 7).await;
    start(&store, te.id, T0 + 7, 10).await;

    let all = store.plan_candidates(None, 100).await.unwrap();
    let got: Vec<_> = all
        .iter()
        .map(|p| {
            (
                p.rule.id,
                p.has_pending_current,
                p.active_tasks,
                p.last_planned_at,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (a, true, 1, Some(T0 + 20)),
            (b, false, 0, None),
            (d, false, 1, None),
            (e, false, 1, Some(T0 + 7)),
        ]
    );
    for p in &all {
        assert_eq!(
            Some(&p.rule),
            store.get_rule(p.rule.id).await.unwrap().as_ref()
        );
    }
    let page =
        |ps: Vec<crate::PlanCandidate>| ps.into_iter().map(|p| p.rule.id).collect::<Vec<_>>();
    assert_eq!(
        page(store.plan_candidates(None, 2).await.unwrap()),
        vec![a, b]
    );
    assert_eq!(
        page(store.plan_candidates(Some(b), 2).await.unwrap()),
        vec![d, e]
    );
    assert!(store.plan_candidates(Some(e), 2).await.unwrap().is_empty());
}

pub async fn finish_rule_only_without_active_tasks(store: S) {
    let aud = audience(&store, 3).await;
    let r = rule(&store, rule_spec("r", Some(aud))).await;
    let t = plan(&store, r, 1, T0 + 10).await;
    assert!(
        !store.finish_rule(r, T0 + 11).await.unwrap(),
        "pending task"
    );
    let j = start(&store, t.id, T0 + 10, 10).await;
    assert!(
        !store.finish_rule(r, T0 + 11).await.unwrap(),
        "running task"
    );
    let c = claim(&store, "w", T0 + 12).await;
    record(&store, &c, 3, sends(0..3, D), T0 + 13).await;
    assert!(matches!(
        finish(&store, &c, T0 + 14).await,
        LeaseCheck::Held { .. }
    ));
    assert_eq!(job_now(&store, j.id).await.state, JobState::Done);
    assert_eq!(task(&store, t.id).await.state, TaskState::Succeeded);

    assert!(store.finish_rule(r, T0 + 50).await.unwrap());
    let done = store.get_rule(r).await.unwrap().unwrap();
    assert_eq!(done.status, RuleStatus::Finished);
    assert_eq!(done.updated_at, T0 + 50);
    assert!(
        !store.finish_rule(r, T0 + 51).await.unwrap(),
        "already finished"
    );
    assert!(store.plan_candidates(None, 10).await.unwrap().is_empty());
    assert_eq!(store.plan_task(r, 1, T0 + 99, T0).await.unwrap(), None);
    assert!(!store.finish_rule(r + 1000, T0).await.unwrap());

    // An update brings a finished rule back.
    let back = store
        .update_rule(r, rule_spec("again", Some(aud)), T0 + 60)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(back.status, RuleStatus::Enabled);
    assert_eq!(back.current.version, 2);
    // A disabled rule is not finished.
    store.set_rule_enabled(r, false, T0 + 70).await.unwrap();
    assert!(!store.finish_rule(r, T0 + 71).await.unwrap());
    assert_eq!(
        store.get_rule(r).await.unwrap().unwrap().status,
        RuleStatus::Disabled
    );
}

pub async fn due_tasks_are_oldest_first(store: S) {
    let r1 = rule(&store, rule_spec("r1", None)).await;
    let r2 = rule(&store, rule_spec("r2", None)).await;
    let p0 = plan(&store, r1, 1, T0 + 30).await;
    let p1 = plan(&store, r2, 1, T0 + 10).await;
    let p2 = plan(&store, r1, 1, T0 + 10).await;
    plan(&store, r2, 1, T0 + 50).await;
    let p4 = plan(&store, r1, 1, T0 + 20).await;
    let ids = |ts: Vec<TaskRecord>| ts.into_iter().map(|t| t.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.due_tasks(T0 + 30, 10).await.unwrap()),
        vec![p1.id, p2.id, p4.id, p0.id]
    );
    assert_eq!(
        ids(store.due_tasks(T0 + 30, 2).await.unwrap()),
        vec![p1.id, p2.id]
    );
    assert!(store.due_tasks(T0 + 9, 10).await.unwrap().is_empty());
    // A task that ran is no longer due.
    assert_eq!(
        store.start_task(p1.id, T0 + 30, 10).await.unwrap(),
        TaskStart::NoAudience
    );
    assert_eq!(
        ids(store.due_tasks(T0 + 30, 10).await.unwrap()),
        vec![p2.id, p4.id, p0.id]
    );
    assert_eq!(store.due_tasks(T0 + 30, 10).await.unwrap()[0], p2);
}

/// The trace context a job was created under comes back with it, and with
/// every claim of its segments (their spans link to it); a job without one
/// has none.
pub async fn a_jobs_trace_context_is_kept_and_claimed_with_it(store: S) {
    let aud = audience(&store, 3).await;
    let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let traced = store
        .create_job(
            crate::JobSpec {
                traceparent: Some(tp.into()),
                ..job_spec(aud, 10)
            },
            T0,
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(traced.traceparent.as_deref(), Some(tp));
    assert_eq!(
        job_now(&store, traced.id).await.traceparent.as_deref(),
        Some(tp)
    );
    let claimed = claim(&store, "w", T0).await;
    assert_eq!(claimed.job.id, traced.id);
    assert_eq!(claimed.job.traceparent.as_deref(), Some(tp));
    let plain = job(&store, aud, 10).await;
    assert_eq!(job_now(&store, plain.id).await.traceparent, None);
    assert_eq!(claim(&store, "w", T0).await.job.traceparent, None);
}

/// One pending task cancelled by an operator: the rule stays enabled and
/// plans on; the occurrence is never planned or started again; a second
/// cancel changes nothing, and a started task cannot be cancelled.
pub async fn one_task_is_cancelled_and_its_rule_plans_on(store: S) {
    let aud = audience(&store, 3).await;
    let r = rule(&store, rule_spec("r", Some(aud))).await;
    let t = plan(&store, r, 1, T0 + 1_000).await;
    let ops = Some(crate::Actor {
        key_id: Some(4),
        key_name: Some("ops".into()),
    });
    let Some(crate::TaskCancel::Cancelled(c)) =
        store.cancel_task(t.id, T0 + 10, ops.clone()).await.unwrap()
    else {
        panic!("the pending task was not cancelled");
    };
    assert_eq!(
        (c.state, c.finished_at, &c.changed_by),
        (TaskState::Cancelled, Some(T0 + 10), &ops)
    );
    assert!(c.detail.is_some());
    assert_eq!(task(&store, t.id).await, c);
    // Again: nothing changes (whoever asks).
    assert_eq!(
        store.cancel_task(t.id, T0 + 20, None).await.unwrap(),
        Some(crate::TaskCancel::Already(c.clone()))
    );
    // The planner does not start it, and cannot plan its occurrence again.
    assert_eq!(
        store.start_task(t.id, T0 + 1_000, 10).await.unwrap(),
        TaskStart::NotPending
    );
    assert_eq!(store.plan_task(r, 1, T0 + 1_000, T0).await.unwrap(), None);
    // The rule is untouched and plans its next occurrence.
    let rule_now = store.get_rule(r).await.unwrap().unwrap();
    assert_eq!(rule_now.status, RuleStatus::Enabled);
    let next = plan(&store, r, 1, T0 + 2_000).await;
    let job = start(&store, next.id, T0 + 2_000, 10).await;
    // A started task is not cancelled.
    let Some(crate::TaskCancel::NotPending(running)) =
        store.cancel_task(next.id, T0 + 2_001, ops).await.unwrap()
    else {
        panic!("a running task was cancelled");
    };
    assert_eq!(
        (running.state, running.job_id, running.changed_by),
        (TaskState::Running, Some(job.id), None)
    );
    assert_eq!(
        store.cancel_task(next.id + 100, T0, None).await.unwrap(),
        None
    );
}

/// A rule version's follow-up to the unread is stored with the version (each
/// version its own) and carried by every job a task of it starts.
pub async fn a_rule_versions_follow_up_goes_with_its_jobs(store: S) {
    let follow_up = crate::FollowUp {
        after_ms: 60_000,
        message: r#"{"text":"did you see it?"}"#.into(),
        step: None,
    };
    let aud = audience(&store, 3).await;
    let spec = RuleSpec {
        follow_up: Some(follow_up.clone()),
        ..rule_spec("r", Some(aud))
    };
    let r = rule(&store, spec.clone()).await;
    let got = store.get_rule(r).await.unwrap().unwrap();
    assert_eq!(got.current.spec.follow_up, Some(follow_up.clone()));
    let t = plan(&store, r, 1, T0 + 100).await;
    let j = start(&store, t.id, T0 + 110, 1_000).await;
    let f = store
        .get_follow_up(j.id)
        .await
        .unwrap()
        .expect("the job carries the rule's follow-up");
    assert_eq!(
        (f.after_ms, f.message.as_str(), f.step, f.state),
        (
            60_000,
            follow_up.message.as_str(),
            None,
            crate::FollowUpState::Waiting
        )
    );

    // Version 2 drops it: version 1 keeps its own, a job of 2 has none.
    let v2 = RuleSpec {
        follow_up: None,
        ..spec
    };
    store.update_rule(r, v2, T0 + 200).await.unwrap().unwrap();
    let versions = store.rule_versions(r, None, 10).await.unwrap();
    let follow_ups: Vec<_> = versions.iter().map(|v| v.spec.follow_up.clone()).collect();
    assert_eq!(follow_ups, [Some(follow_up), None]);
    let t2 = plan(&store, r, 2, T0 + 300).await;
    let j2 = start(&store, t2.id, T0 + 310, 1_000).await;
    assert_eq!(store.get_follow_up(j2.id).await.unwrap(), None);
}

pub async fn start_task_checks_the_rule_then_starts_a_job(store: S) {
    let aud = audience(&store, 2_500).await;
    let spec = RuleSpec {
        deadline_secs: Some(3_600),
        priority: 4,
        channel: "wecom".into(),
        message: r#"{"text":"sale"}"#.into(),
        // The version's routing is the job's (a directory audience).
        routing: Some(r#"{"to":"wecom","topic":"sale"}"#.into()),
        ..rule_spec("r", Some(aud))
    };
    let r = rule(&store, spec.clone()).await;
    let t = plan(&store, r, 1, T0 + 100).await;
    let now = T0 + 110;
    let j = start(&store, t.id, now, 1_000).await;
    assert_eq!(
        j,
        JobRecord {
            tenant: DEFAULT_TENANT,
            id: j.id,
            audience_id: aud,
            channel: "wecom".into(),
            message: r#"{"text":"sale"}"#.into(),
            segment_size: 1_000,
            deadline_at: Some(now + 3_600_000),
            priority: 4,
            task_id: Some(t.id),
            state: JobState::Running,
            totals: totals(2_500, 0, 0, 0),
            created_at: now,
            started_at: None,
            finished_at: None,
            routing: Some(r#"{"to":"wecom","topic":"sale"}"#.into()),
            traceparent: None,
            // The rule's name is its job's.
            meta: crate::JobMeta {
                name: Some("r".into()),
                ..Default::default()
            },
            follows: None,
            last_sent_at: None,
        }
    );
    assert_eq!(job_now(&store, j.id).await, j);
    let spans: Vec<_> = segments(&store, j.id)
        .await
        .iter()
        .map(|s| (s.start, s.end))
        .collect();
    assert_eq!(spans, vec![(0, 1_000), (1_000, 2_000), (2_000, 2_500)]);
    let running = task(&store, t.id).await;
    assert_eq!(running.state, TaskState::Running);
    assert_eq!(running.job_id, Some(j.id));
    assert_eq!(running.recipients, Some(2_500));
    assert_eq!(running.started_at, Some(now));
    assert_eq!(running.finished_at, None);
    assert_eq!(
        store.start_task(t.id, now, 1_000).await.unwrap(),
        TaskStart::NotPending
    );
    assert_eq!(
        store.start_task(t.id + 1000, now, 1_000).await.unwrap(),
        TaskStart::NotPending
    );

    // Planned from version 1, run after the update to version 2: expired, no job.
    let stale = plan(&store, r, 1, T0 + 200).await;
    store.update_rule(r, spec.clone(), T0 + 150).await.unwrap();
    assert_eq!(
        store.start_task(stale.id, T0 + 200, 1_000).await.unwrap(),
        TaskStart::Expired
    );
    let stale = task(&store, stale.id).await;
    assert_eq!(stale.state, TaskState::Expired);
    assert_eq!(stale.finished_at, Some(T0 + 200));
    assert_eq!(stale.job_id, None);
    assert!(stale.detail.is_some());

    // No indexable audience (version 3), or one not sealed (version 4): failed.
    store
        .update_rule(
            r,
            RuleSpec {
                audience_id: None,
                ..spec.clone()
            },
            T0,
        )
        .await
        .unwrap();
    let t3 = plan(&store, r, 3, T0 + 300).await;
    assert_eq!(
        store.start_task(t3.id, T0 + 300, 1_000).await.unwrap(),
        TaskStart::NoAudience
    );
    let open = store
        .create_audience(DEFAULT_TENANT, None, T0)
        .await
        .unwrap();
    store
        .update_rule(
            r,
            RuleSpec {
                audience_id: Some(open),
                ..spec.clone()
            },
            T0,
        )
        .await
        .unwrap();
    let t4 = plan(&store, r, 4, T0 + 400).await;
    assert_eq!(
        store.start_task(t4.id, T0 + 400, 1_000).await.unwrap(),
        TaskStart::NoAudience
    );
    for id in [t3.id, t4.id] {
        let t = task(&store, id).await;
        assert_eq!(t.state, TaskState::Failed);
        assert!(t.detail.is_some());
        assert!(t.finished_at.is_some());
        assert_eq!(t.job_id, None);
    }
    assert_eq!(
        store
            .list_jobs(DEFAULT_TENANT, None, 10)
            .await
            .unwrap()
            .len(),
        1
    );

    // An empty audience: the job is done and the task succeeded at once.
    let empty = audience(&store, 0).await;
    store
        .update_rule(
            r,
            RuleSpec {
                audience_id: Some(empty),
                ..spec
            },
            T0,
        )
        .await
        .unwrap();
    let t5 = plan(&store, r, 5, T0 + 500).await;
    let j5 = start(&store, t5.id, T0 + 500, 1_000).await;
    assert_eq!(j5.state, JobState::Done);
    assert_eq!(j5.totals, JobTotals::default());
    assert_eq!(j5.finished_at, Some(T0 + 500));
    let t5 = task(&store, t5.id).await;
    assert_eq!(t5.state, TaskState::Succeeded);
    assert_eq!(t5.job_id, Some(j5.id));
    assert_eq!(t5.recipients, Some(0));
    assert_eq!(t5.finished_at, Some(T0 + 500));
}

// ---- Jobs and segments ----

pub async fn job_segments_tile_the_audience(store: S) {
    let aud = audience(&store, 2_500).await;
    let j = job(&store, aud, 1_000).await;
    assert_eq!(j.state, JobState::Running);
    assert_eq!(j.totals, totals(2_500, 0, 0, 0));
    assert_eq!(
        (j.created_at, j.started_at, j.finished_at),
        (T0, None, None)
    );
    let segs = segments(&store, j.id).await;
    let spans: Vec<_> = segs.iter().map(|s| (s.start, s.end)).collect();
    assert_eq!(spans, vec![(0, 1_000), (1_000, 2_000), (2_000, 2_500)]);
    for s in &segs {
        assert_eq!(s.state, SegmentState::Pending);
        assert_eq!(s.cursor, s.start);
        assert_eq!((s.owner.as_deref(), s.lease_until), (None, None));
        assert_eq!((s.epoch, s.parent_id, s.attempt), (0, None, 1));
        assert_eq!((s.not_before, s.created_at), (T0, T0));
    }
    assert_eq!(
        store.job_segments(j.id, None, 2).await.unwrap(),
        segs[..2].to_vec()
    );
    assert_eq!(
        store
            .job_segments(j.id, Some(segs[1].id), 10)
            .await
            .unwrap(),
        segs[2..].to_vec()
    );
    assert_eq!(
        seg_counts(&store, j.id).await,
        HashMap::from([(SegmentState::Pending, 3)])
    );

    // Ten thousand recipients in segments of 7, read back a page at a time.
    let big = audience(&store, 10_000).await;
    let bj = job(&store, big, 7).await;
    let mut after = None;
    let mut at = 0;
    let mut n = 0;
    loop {
        let page = store.job_segments(bj.id, after, 500).await.unwrap();
        for s in &page {
            assert_eq!(s.start, at);
            assert!(s.end > s.start && s.end - s.start <= 7);
            at = s.end;
        }
        n += page.len();
        match page.last() {
            Some(last) => after = Some(last.id),
            None => break,
        }
    }
    assert_eq!((at, n), (10_000, 1_429));
    assert_eq!(
        seg_counts(&store, bj.id).await,
        HashMap::from([(SegmentState::Pending, 1_429)])
    );

    // Jobs newest first, paged with `before`.
    let third = job(&store, aud, 1_000).await;
    let ids = |js: Vec<JobRecord>| js.into_iter().map(|j| j.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store.list_jobs(DEFAULT_TENANT, None, 10).await.unwrap()),
        vec![third.id, bj.id, j.id]
    );
    assert_eq!(
        ids(store.list_jobs(DEFAULT_TENANT, None, 2).await.unwrap()),
        vec![third.id, bj.id]
    );
    assert_eq!(
        ids(store
            .list_jobs(DEFAULT_TENANT, Some(bj.id), 10)
            .await
            .unwrap()),
        vec![j.id]
    );
    assert_eq!(
        store.list_jobs(DEFAULT_TENANT, None, 10).await.unwrap()[2],
        j
    );
    assert_eq!(store.get_job(third.id + 1000).await.unwrap(), None);
    assert!(segments(&store, third.id + 1000).await.is_empty());
}

/// Every way a segment ends sets its `finished_at` to that moment, and
/// nothing after (a sweep that marks a partial segment handled) moves it.
pub async fn segments_record_when_they_ended(store: S) {
    let aud = audience(&store, 6).await;
    let j = job(&store, aud, 2).await;
    let ended = |store: S, id: i64| async move { segment(&store, j.id, id).await.finished_at };
    assert!(
        segments(&store, j.id)
            .await
            .iter()
            .all(|s| s.finished_at.is_none())
    );
    // Done.
    let c = claim(&store, "w", T0 + 1).await;
    let (s0, e0) = (c.segment.start, c.segment.end);
    record(&store, &c, e0, vec![send(s0, D), send(s0 + 1, D)], T0 + 5).await;
    assert_eq!(ended(store.clone(), c.segment.id).await, None, "running");
    finish(&store, &c, T0 + 10).await;
    assert_eq!(ended(store.clone(), c.segment.id).await, Some(T0 + 10));
    // Partial: a recipient is left to retry.
    let p = claim(&store, "w", T0 + 11).await;
    let (s1, e1) = (p.segment.start, p.segment.end);
    record(&store, &p, e1, vec![send(s1, D), send(s1 + 1, R)], T0 + 15).await;
    finish(&store, &p, T0 + 20).await;
    let partial = segment(&store, j.id, p.segment.id).await;
    assert_eq!(
        (partial.state, partial.finished_at),
        (SegmentState::Partial, Some(T0 + 20))
    );
    // Abandoned: its holder's lease ran out; the sweep that ends it also
    // re-issues it and the partial one (both pending, not ended).
    let a = claim(&store, "dead", T0 + 21).await;
    let lapsed = T0 + 21 + LEASE + 1;
    sweep(&store, lapsed, sweep_opts()).await;
    let abandoned = segment(&store, j.id, a.segment.id).await;
    assert_eq!(
        (abandoned.state, abandoned.finished_at),
        (SegmentState::Abandoned, Some(lapsed))
    );
    assert_eq!(ended(store.clone(), p.segment.id).await, Some(T0 + 20));
    // Cancelled: the re-issues end with the job.
    let cancelled_at = lapsed + 100;
    store.cancel_job(j.id, cancelled_at).await.unwrap();
    for s in segments(&store, j.id).await {
        if s.parent_id.is_some() {
            assert_eq!(
                (s.state, s.finished_at),
                (SegmentState::Cancelled, Some(cancelled_at)),
                "{s:?}"
            );
        }
    }
    // Expired: a job whose deadline passed.
    let spec = crate::JobSpec {
        deadline_at: Some(T0 + 1_000),
        ..job_spec(aud, 3)
    };
    let x = store.create_job(spec, T0).await.unwrap().unwrap();
    let at = T0 + 2_000;
    sweep(&store, at, sweep_opts()).await;
    for s in segments(&store, x.id).await {
        assert_eq!((s.state, s.finished_at), (SegmentState::Expired, Some(at)));
    }
}

pub async fn claims_take_the_highest_priority_then_the_lowest_id(store: S) {
    let aud = audience(&store, 30).await;
    let spec = |priority| crate::JobSpec {
        priority,
        ..job_spec(aud, 10)
    };
    let low = store.create_job(spec(1), T0).await.unwrap().unwrap();
    let high = store
        .create_job(
            crate::JobSpec {
                segment_size: 15,
                ..spec(5)
            },
            T0,
        )
        .await
        .unwrap()
        .unwrap();
    let (low_segs, high_segs) = (
        segments(&store, low.id).await,
        segments(&store, high.id).await,
    );

    let c1 = claim(&store, "w1", T0 + 1).await;
    assert_eq!(c1.claim.segment_id, high_segs[0].id);
    assert_eq!(
        c1.claim,
        SegmentClaim {
            segment_id: high_segs[0].id,
            job_id: high.id,
            owner: "w1".into(),
            epoch: 1,
        }
    );
    assert_eq!(c1.lease_until, T0 + 1 + LEASE);
    assert_eq!(c1.segment.state, SegmentState::Running);
    assert_eq!(c1.segment.owner.as_deref(), Some("w1"));
    assert_eq!(c1.segment.lease_until, Some(T0 + 1 + LEASE));
    assert_eq!(c1.segment.epoch, 1);
    assert_eq!(
        (c1.segment.start, c1.segment.end, c1.segment.cursor),
        (0, 15, 0)
    );
    assert_eq!(c1.job.id, high.id);
    assert_eq!(c1.job.started_at, Some(T0 + 1));
    assert_eq!(c1.job, job_now(&store, high.id).await);
    assert_eq!(
        segment(&store, high.id, c1.claim.segment_id).await,
        c1.segment
    );

    let c2 = claim(&store, "w2", T0 + 2).await;
    assert_eq!(c2.claim.segment_id, high_segs[1].id);
    let c3 = claim(&store, "w1", T0 + 3).await;
    assert_eq!(c3.claim.segment_id, low_segs[0].id);
    // A high-priority job created mid-way goes ahead of the rest.
    let urgent = store.create_job(spec(9), T0 + 3).await.unwrap().unwrap();
    let urgent_segs = segments(&store, urgent.id).await;
    for s in &urgent_segs {
        assert_eq!(claim(&store, "w3", T0 + 4).await.claim.segment_id, s.id);
    }
    let c4 = claim(&store, "w2", T0 + 5).await;
    assert_eq!(c4.claim.segment_id, low_segs[1].id);
    assert_eq!(
        claim(&store, "w2", T0 + 6).await.claim.segment_id,
        low_segs[2].id
    );
    no_claim(&store, T0 + 7).await;

    // started_at is the first claim's time.
    assert_eq!(job_now(&store, low.id).await.started_at, Some(T0 + 3));
    assert_eq!(
        seg_counts(&store, low.id).await,
        HashMap::from([(SegmentState::Running, 3)])
    );
}

pub async fn claims_skip_jobs_past_their_deadline(store: S) {
    let aud = audience(&store, 20).await;
    let urgent = store
        .create_job(
            crate::JobSpec {
                deadline_at: Some(T0 + 100),
                priority: 9,
                ..job_spec(aud, 10)
            },
            T0,
        )
        .await
        .unwrap()
        .unwrap();
    let plain = job(&store, aud, 10).await;
    // At the deadline nothing more of it is sent: the lower priority goes.
    assert_eq!(claim(&store, "w", T0 + 100).await.claim.job_id, plain.id);
    assert_eq!(claim(&store, "w", T0 + 99).await.claim.job_id, urgent.id);
    assert_eq!(claim(&store, "w", T0 + 100).await.claim.job_id, plain.id);
    no_claim(&store, T0 + 100).await;
}

/// Two handles claim from the same job at the same time: no segment is
/// given to both, and every segment is given out.
pub async fn concurrent_segment_claims_from_two_handles(a: S, b: S) {
    let aud = audience(&a, 200).await;
    let j = job(&a, aud, 2).await;
    let all: HashSet<i64> = segments(&a, j.id).await.iter().map(|s| s.id).collect();
    assert_eq!(all.len(), 100);
    let claimer = |store: S, owner: &'static str| {
        tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(c) = store
                .claim_segment(owner, T0 + 1, LEASE)
                .await
                .expect("claim_segment")
            {
                assert_eq!(c.claim.owner, owner);
                assert_eq!(c.claim.epoch, 1);
                got.push(c.claim.segment_id);
            }
            got
        })
    };
    let (ta, tb) = (claimer(a.clone(), "node-a"), claimer(b.clone(), "node-b"));
    let (ga, gb) = (ta.await.unwrap(), tb.await.unwrap());
    let sa: HashSet<i64> = ga.iter().copied().collect();
    let sb: HashSet<i64> = gb.iter().copied().collect();
    assert_eq!(sa.len(), ga.len());
    assert_eq!(sb.len(), gb.len());
    assert!(sa.is_disjoint(&sb), "a segment claimed twice");
    assert_eq!(&sa | &sb, all);
    for s in segments(&b, j.id).await {
        let owner = if sa.contains(&s.id) {
            "node-a"
        } else {
            "node-b"
        };
        assert_eq!(s.owner.as_deref(), Some(owner));
        assert_eq!((s.state, s.epoch), (SegmentState::Running, 1));
    }
}

pub async fn record_sends_counts_every_change_exactly(store: S) {
    let aud = audience(&store, 10).await;
    let j = job(&store, aud, 10).await;
    assert_eq!(j.last_sent_at, None, "a new job has not sent");
    let c = claim(&store, "w", T0).await;
    let mut batch = sends(0..4, D);
    batch.extend([send(4, R), send(5, R), send(6, F)]);
    assert_eq!(
        record(&store, &c, 7, batch, T0 + 10).await,
        LeaseCheck::Held {
            lease_until: T0 + 10 + LEASE
        }
    );
    assert_eq!(job_now(&store, j.id).await.totals, totals(10, 4, 1, 2));
    assert_eq!(job_now(&store, j.id).await.last_sent_at, Some(T0 + 10));
    let seg = segment(&store, j.id, c.claim.segment_id).await;
    assert_eq!((seg.cursor, seg.lease_until), (7, Some(T0 + 10 + LEASE)));
    let rows = sends_of(&store, j.id, 0, 10).await;
    assert_eq!(rows.len(), 7);
    assert_eq!(
        rows[0],
        SendRecord {
            job_id: j.id,
            index: 0,
            recipient: recipient(0),
            state: D,
            attempts: 1,
            provider_msgid: Some("msg-0".into()),
            error: None,
            updated_at: T0 + 10,
            final_status: None,
            final_at: None,
        }
    );
    assert_eq!(
        (rows[4].state, rows[4].attempts, rows[4].error.as_deref()),
        (R, 1, Some("error-4"))
    );
    assert_eq!((rows[6].state, rows[6].attempts), (F, 1));

    // retry → delivered; retry → retry; final left alone; a new index.
    let batch = vec![send(4, D), send(5, R), send(0, F), send(7, D)];
    assert!(matches!(
        record(&store, &c, 8, batch, T0 + 20).await,
        LeaseCheck::Held { .. }
    ));
    assert_eq!(job_now(&store, j.id).await.totals, totals(10, 6, 1, 1));
    let r4 = send_row(&store, j.id, 4).await;
    assert_eq!(
        (
            r4.state,
            r4.attempts,
            r4.provider_msgid.as_deref(),
            r4.updated_at
        ),
        (D, 2, Some("msg-4"), T0 + 20)
    );
    let r5 = send_row(&store, j.id, 5).await;
    assert_eq!((r5.state, r5.attempts), (R, 2));
    assert_eq!(send_row(&store, j.id, 0).await, rows[0]);
    assert_eq!(send_row(&store, j.id, 7).await.attempts, 1);

    assert_eq!(job_now(&store, j.id).await.last_sent_at, Some(T0 + 20));
    // A retry that fails again moves no total, but is an attempt.
    record(&store, &c, 8, vec![send(5, R)], T0 + 25).await;
    assert_eq!(job_now(&store, j.id).await.totals, totals(10, 6, 1, 1));
    assert_eq!(job_now(&store, j.id).await.last_sent_at, Some(T0 + 25));

    // The same index twice in one batch applies in order.
    record(&store, &c, 9, vec![send(8, R), send(8, D)], T0 + 30).await;
    let r8 = send_row(&store, j.id, 8).await;
    assert_eq!((r8.state, r8.attempts), (D, 2));
    assert_eq!(job_now(&store, j.id).await.totals, totals(10, 7, 1, 1));

    // An empty batch renews the lease; the cursor never moves back.
    assert_eq!(
        record(&store, &c, 5, vec![], T0 + 40).await,
        LeaseCheck::Held {
            lease_until: T0 + 40 + LEASE
        }
    );
    let seg = segment(&store, j.id, c.claim.segment_id).await;
    assert_eq!((seg.cursor, seg.lease_until), (9, Some(T0 + 40 + LEASE)));
    assert_eq!(
        job_now(&store, j.id).await.last_sent_at,
        Some(T0 + 30),
        "an empty batch sent nothing"
    );

    // Refused, nothing written: an index outside the segment, a cursor past
    // its end, an `expired` entry (only the sweeper expires).
    for (cursor, batch) in [
        (10, vec![send(9, D), send(10, D)]),
        (11, vec![send(9, D)]),
        (10, vec![send(9, SendState::Expired)]),
    ] {
        assert!(
            store
                .record_sends(&c.claim, cursor, batch, T0 + 50, LEASE)
                .await
                .is_err()
        );
    }
    assert!(sends_of(&store, j.id, 9, 20).await.is_empty());
    assert_eq!(job_now(&store, j.id).await.totals, totals(10, 7, 1, 1));
    assert_eq!(segment(&store, j.id, c.claim.segment_id).await.cursor, 9);

    let idx: Vec<u64> = sends_of(&store, j.id, 2, 5)
        .await
        .iter()
        .map(|r| r.index)
        .collect();
    assert_eq!(idx, vec![2, 3, 4]);
    assert!(sends_of(&store, j.id + 1000, 0, 10).await.is_empty());
}

pub async fn a_write_after_the_lease_was_reissued_is_lost_but_logged(store: S) {
    let aud = audience(&store, 10).await;
    let j = job(&store, aud, 10).await;
    let c = claim(&store, "w1", T0).await;
    record(&store, &c, 3, sends(0..3, D), T0 + 10).await;
    let now = T0 + 10 + LEASE + 1;
    assert_eq!(
        sweep(&store, now, sweep_opts()).await,
        SweepReport {
            abandoned: 1,
            reissued: 1,
            ..Default::default()
        }
    );
    let segs = segments(&store, j.id).await;
    assert_eq!(segs.len(), 2);
    assert_eq!(
        (segs[0].state, segs[0].cursor),
        (SegmentState::Abandoned, 3)
    );
    let re = &segs[1];
    assert_eq!((re.start, re.end, re.cursor), (3, 10, 3));
    assert_eq!(
        (re.state, re.parent_id, re.attempt),
        (SegmentState::Pending, Some(segs[0].id), 1)
    );
    assert_eq!(
        (re.epoch, re.owner.as_deref(), re.not_before),
        (0, None, now)
    );

    // The old holder comes back: its attempts are logged, its cursor is not moved.
    assert_eq!(
        record(&store, &c, 5, vec![send(3, D), send(4, R)], now + 1).await,
        LeaseCheck::Lost
    );
    assert_eq!(send_row(&store, j.id, 3).await.state, D);
    assert_eq!(send_row(&store, j.id, 4).await.state, R);
    assert_eq!(job_now(&store, j.id).await.totals, totals(10, 4, 0, 1));
    assert_eq!(segment(&store, j.id, segs[0].id).await.cursor, 3);
    assert_eq!(finish(&store, &c, now + 2).await, LeaseCheck::Lost);
    assert_eq!(
        segment(&store, j.id, segs[0].id).await.state,
        SegmentState::Abandoned
    );

    let c2 = claim(&store, "w2", now + 3).await;
    assert_eq!(c2.claim.segment_id, re.id);
    let mut batch = vec![send(3, F), send(4, D)];
    batch.extend(sends(5..10, D));
    assert!(matches!(
        record(&store, &c2, 10, batch, now + 4).await,
        LeaseCheck::Held { .. }
    ));
    assert_eq!(send_row(&store, j.id, 3).await.state, D, "final left alone");
    assert_eq!(send_row(&store, j.id, 4).await.attempts, 2);
    assert!(matches!(
        finish(&store, &c2, now + 5).await,
        LeaseCheck::Held { .. }
    ));
    let done = job_now(&store, j.id).await;
    assert_eq!(done.state, JobState::Done);
    assert_eq!(done.totals, totals(10, 10, 0, 0));
    assert_eq!(done.finished_at, Some(now + 5));
    assert_eq!(
        sweep(&store, now + 10 * LEASE, sweep_opts()).await,
        SweepReport::default()
    );
}

pub async fn finishing_segments_ends_them_done_or_partial_and_ends_the_job(store: S) {
    let (task_id, j) = task_job(&store, 6, 3, rule_spec("r", None)).await;
    let c1 = claim(&store, "w", T0 + 1).await;
    record(&store, &c1, 3, sends(0..3, D), T0 + 2).await;
    assert_eq!(
        finish(&store, &c1, T0 + 3).await,
        LeaseCheck::Held {
            lease_until: T0 + 2 + LEASE
        }
    );
    assert_eq!(
        segment(&store, j.id, c1.claim.segment_id).await.state,
        SegmentState::Done
    );
    assert_eq!(job_now(&store, j.id).await.state, JobState::Running);
    // A claim from another epoch is not current.
    let stale = SegmentClaim {
        epoch: c1.claim.epoch + 1,
        ..c1.claim.clone()
    };
    assert_eq!(
        store.finish_segment(&stale, T0 + 3).await.unwrap(),
        LeaseCheck::Lost
    );
    assert_eq!(
        store
            .record_sends(&stale, 3, vec![], T0 + 3, LEASE)
            .await
            .unwrap(),
        LeaseCheck::Lost
    );

    let c2 = claim(&store, "w", T0 + 4).await;
    record(&store, &c2, 5, vec![send(3, D), send(4, D)], T0 + 5).await;
    // Not at its end yet.
    assert!(store.finish_segment(&c2.claim, T0 + 6).await.is_err());
    assert_eq!(
        segment(&store, j.id, c2.claim.segment_id).await.state,
        SegmentState::Running
    );
    record(&store, &c2, 6, vec![send(5, F)], T0 + 6).await;
    assert!(matches!(
        finish(&store, &c2, T0 + 7).await,
        LeaseCheck::Held { .. }
    ));
    let done = job_now(&store, j.id).await;
    assert_eq!(done.state, JobState::Done);
    assert_eq!(done.finished_at, Some(T0 + 7));
    assert_eq!(done.totals, totals(6, 5, 1, 0));
    assert_eq!(
        seg_counts(&store, j.id).await,
        HashMap::from([(SegmentState::Done, 2)])
    );
    let t = task(&store, task_id).await;
    assert_eq!(t.state, TaskState::Failed, "a recipient failed");
    assert_eq!(t.finished_at, Some(T0 + 7));
    assert_eq!(finish(&store, &c2, T0 + 8).await, LeaseCheck::Lost);
}

pub async fn abandoned_segments_are_reissued_from_the_first_retry_or_the_cursor(store: S) {
    let aud = audience(&store, 20).await;
    let j = job(&store, aud, 10).await;
    let ca = claim(&store, "w", T0).await;
    let cb = claim(&store, "w", T0).await;
    record(
        &store,
        &ca,
        4,
        vec![send(0, D), send(1, R), send(2, D), send(3, R)],
        T0 + 1,
    )
    .await;
    // b handled everything but never said it finished.
    record(&store, &cb, 20, sends(10..20, D), T0 + 1).await;
    let now = T0 + 1 + LEASE + 1;
    assert_eq!(
        sweep(&store, now, sweep_opts()).await,
        SweepReport {
            abandoned: 2,
            reissued: 1,
            ..Default::default()
        }
    );
    let segs = segments(&store, j.id).await;
    assert_eq!(segs.len(), 3);
    assert_eq!(segs[0].state, SegmentState::Abandoned);
    assert_eq!(segs[1].state, SegmentState::Abandoned);
    let re = &segs[2];
    assert_eq!((re.start, re.end, re.cursor, re.attempt), (1, 10, 1, 1));
    assert_eq!(
        (re.parent_id, re.state),
        (Some(ca.claim.segment_id), SegmentState::Pending)
    );
    assert_eq!(job_now(&store, j.id).await.state, JobState::Running);
    // Nothing is re-issued twice.
    assert_eq!(
        sweep(&store, now + 1, sweep_opts()).await,
        SweepReport::default()
    );

    let c = claim(&store, "w2", now + 2).await;
    assert_eq!(c.claim.segment_id, re.id);
    // The worker skips what the log says is final (index 2) and sends the rest.
    let mut batch = vec![send(1, D), send(3, D)];
    batch.extend(sends(4..10, D));
    record(&store, &c, 10, batch, now + 3).await;
    finish(&store, &c, now + 4).await;
    let done = job_now(&store, j.id).await;
    assert_eq!(done.state, JobState::Done);
    assert_eq!(done.totals, totals(20, 20, 0, 0));
    assert_eq!(
        seg_counts(&store, j.id).await,
        HashMap::from([(SegmentState::Abandoned, 2), (SegmentState::Done, 1)])
    );
}

/// What a worker marks before sending (`sent_to`) travels with an abandoned
/// segment's re-issue as the range in doubt; the recipients it ends
/// `in_doubt` count in their own total and are listed by state.
pub async fn a_claim_can_mark_ahead_of_its_cursor(store: S) {
    let aud = audience(&store, 20).await;
    let j = job(&store, aud, 10).await;
    let claim_ahead = |mark| store.claim_segment_ahead("w", T0, LEASE, mark);
    let a = claim_ahead(4).await.expect("claim").expect("a segment");
    assert_eq!((a.segment.start, a.segment.sent_to), (0, 4));
    assert_eq!(segment(&store, j.id, a.claim.segment_id).await.sent_to, 4);
    // Never past the segment's end.
    let b = claim_ahead(99).await.expect("claim").expect("a segment");
    assert_eq!((b.segment.start, b.segment.sent_to), (10, 20));
    assert_eq!(segment(&store, j.id, b.claim.segment_id).await.sent_to, 20);
}

pub async fn a_lapsed_claim_leaves_what_it_marked_in_doubt(store: S) {
    let at = |cursor, sent_to| Progress { cursor, sent_to };
    let aud = audience(&store, 20).await;
    let j = job(&store, aud, 10).await;
    let ca = claim(&store, "w", T0).await;
    let cb = claim(&store, "w", T0).await;
    assert_eq!(ca.segment.sent_to, 0);
    assert_eq!((ca.segment.doubt_from, ca.segment.doubt_to), (0, 0));
    // Marks alone: one write with no entries; never lowered, never past the end.
    for (sent_to, want) in [(4, 4), (2, 4), (7, 7)] {
        let check = store
            .record_progress(&ca.claim, at(0, sent_to), vec![], T0 + 1, LEASE)
            .await
            .expect("record_progress");
        assert!(matches!(check, LeaseCheck::Held { .. }), "{check:?}");
        assert_eq!(
            segment(&store, j.id, ca.claim.segment_id).await.sent_to,
            want
        );
    }
    // A mark with a cursor outside the segment is refused, by field.
    let err = store
        .record_progress(&ca.claim, at(11, 11), vec![], T0 + 1, LEASE)
        .await
        .expect_err("cursor past the end");
    assert!(err.to_string().contains("cursor"), "{err}");
    // Outcomes 0..3 come back; 3..7 were marked and never answered.
    store
        .record_progress(&ca.claim, at(3, 7), sends(0..3, D), T0 + 2, LEASE)
        .await
        .expect("record_progress");
    // b marks past its end: clamped; then records everything and finishes.
    store
        .record_progress(&cb.claim, at(20, 99), sends(10..20, D), T0 + 2, LEASE)
        .await
        .expect("record_progress");
    assert_eq!(segment(&store, j.id, cb.claim.segment_id).await.sent_to, 20);
    finish(&store, &cb, T0 + 3).await;

    let now = T0 + 2 + LEASE + 1;
    let r = sweep(&store, now, sweep_opts()).await;
    assert_eq!((r.abandoned, r.reissued), (1, 1), "{r:?}");
    let re = segments(&store, j.id).await.pop().expect("the re-issue");
    assert_eq!((re.start, re.end, re.cursor), (3, 10, 3));
    assert_eq!((re.doubt_from, re.doubt_to), (3, 7), "{re:?}");
    assert_eq!(re.sent_to, 0);

    // The next holder ends 3..7 in doubt (skip) and sends the rest; it dies
    // too, before sending 8 and 9, having marked up to 9.
    let c = claim(&store, "w2", now + 1).await;
    assert_eq!((c.segment.doubt_from, c.segment.doubt_to), (3, 7));
    let mut batch: Vec<_> = (3..7)
        .map(|i| SendEntry {
            index: i,
            recipient: format!("r{i}"),
            state: SendState::InDoubt,
            provider_msgid: None,
            error: Some("in doubt".into()),
        })
        .collect();
    batch.push(send(7, D));
    store
        .record_progress(&c.claim, at(8, 9), batch, now + 2, LEASE)
        .await
        .expect("record_progress");
    let mid = job_now(&store, j.id).await;
    assert_eq!(mid.totals.in_doubt, 4);
    assert_eq!(mid.totals.delivered, 14);
    check_totals(&mid);
    // A later outcome does not change a final in-doubt row.
    store
        .record_progress(&c.claim, at(8, 9), vec![send(4, D)], now + 3, LEASE)
        .await
        .expect("record_progress");
    assert_eq!(job_now(&store, j.id).await.totals, mid.totals);

    let later = now + 3 + LEASE + 1;
    sweep(&store, later, sweep_opts()).await;
    let last = segments(&store, j.id)
        .await
        .pop()
        .expect("the second re-issue");
    // In doubt from the cursor to the mark: index 8 only.
    assert_eq!((last.start, last.doubt_from, last.doubt_to), (8, 8, 9));
    let d = claim(&store, "w3", later + 1).await;
    store
        .record_progress(&d.claim, at(10, 10), sends(8..10, D), later + 2, LEASE)
        .await
        .expect("record_progress");
    finish(&store, &d, later + 3).await;
    let done = job_now(&store, j.id).await;
    assert_eq!(done.state, JobState::Done);
    assert_eq!((done.totals.delivered, done.totals.in_doubt), (16, 4));
    check_totals(&done);

    // Listed by state, in index order, in pages.
    let page = |after, limit| store.job_sends_in_state(j.id, SendState::InDoubt, after, limit);
    let first = page(None, 3).await.expect("job_sends_in_state");
    let idx: Vec<u64> = first.iter().map(|r| r.index).collect();
    assert_eq!(idx, vec![3, 4, 5]);
    let rest = page(Some(5), 3).await.expect("job_sends_in_state");
    assert_eq!(rest.iter().map(|r| r.index).collect::<Vec<_>>(), vec![6]);
    assert!(rest.iter().all(|r| r.state == SendState::InDoubt));
    let delivered = store
        .job_sends_in_state(j.id, SendState::Delivered, Some(15), 100)
        .await
        .expect("job_sends_in_state");
    assert_eq!(delivered.len(), 4);

    // An operator sends them again: their rows are `retry`, the totals move
    // them to retrying, a pending segment covers them, the job runs again.
    let Some(crate::FailedRetry::Retried {
        job: rerun,
        retried,
    }) = store
        .retry_sends(j.id, crate::Resend::InDoubt, later + 10)
        .await
        .expect("retry_sends")
    else {
        panic!("the job should be retried");
    };
    assert_eq!(retried, 4);
    check_totals(&rerun);
    assert_eq!(rerun.state, JobState::Running);
    assert_eq!((rerun.totals.in_doubt, rerun.totals.retrying), (0, 4));
    assert_eq!(rerun.totals.delivered, 16);
    assert!(page(None, 10).await.expect("job_sends_in_state").is_empty());
    assert_eq!(send_row(&store, j.id, 3).await.state, SendState::Retry);
    let pending: Vec<(u64, u64, u64, u64)> = segments(&store, j.id)
        .await
        .into_iter()
        .filter(|s| s.state == SegmentState::Pending)
        .map(|s| (s.start, s.end, s.doubt_from, s.doubt_to))
        .collect();
    assert_eq!(
        pending,
        vec![(3, 7, 0, 0)],
        "nothing in doubt in the new one"
    );
    // Failed sends are not touched, and a second call finds nothing.
    let Some(crate::FailedRetry::Retried { retried, .. }) = store
        .retry_sends(j.id, crate::Resend::InDoubt, later + 11)
        .await
        .expect("retry_sends")
    else {
        panic!("the job should answer");
    };
    assert_eq!(retried, 0);
    // Sent again, they settle as any retry does.
    let e = claim(&store, "w4", later + 12).await;
    assert_eq!((e.segment.start, e.segment.end), (3, 7));
    store
        .record_progress(&e.claim, at(7, 7), sends(3..7, D), later + 13, LEASE)
        .await
        .expect("record_progress");
    finish(&store, &e, later + 14).await;
    let settled = job_now(&store, j.id).await;
    assert_eq!(settled.state, JobState::Done);
    assert_eq!((settled.totals.delivered, settled.totals.in_doubt), (20, 0));
    check_totals(&settled);
    assert_eq!(send_row(&store, j.id, 3).await.attempts, 2);
}

/// Several workers' writes in one call: each answered in order, a lost claim
/// among them changes nothing but the log, and the totals move as if each
/// had been written alone.
pub async fn record_many_writes_each_as_if_alone(store: S) {
    let aud = audience(&store, 30).await;
    let j1 = job(&store, aud, 10).await;
    let j2 = job(&store, aud, 10).await;
    // Claim order: j1's three segments, then j2's.
    let a = claim(&store, "w1", T0).await;
    let b = claim(&store, "w2", T0).await;
    let c = claim(&store, "w3", T0).await;
    let d = claim(&store, "w4", T0).await;
    assert_eq!(
        [
            a.claim.job_id,
            b.claim.job_id,
            c.claim.job_id,
            d.claim.job_id
        ],
        [j1.id, j1.id, j1.id, j2.id]
    );
    // A claim that is no longer current (another epoch).
    let mut stale = a.claim.clone();
    stale.epoch += 1;
    let write = |claim: &SegmentClaim, cursor, sent_to, entries| SegmentWrite {
        claim: claim.clone(),
        at: Progress { cursor, sent_to },
        entries,
    };
    let (s0, s1, s2, o) = (
        a.segment.start,
        b.segment.start,
        c.segment.start,
        d.segment.start,
    );
    let writes = vec![
        write(&d.claim, o + 2, o + 5, sends(o..o + 2, D)),
        write(&stale, s0 + 5, s0 + 8, sends(s0..s0 + 5, D)),
        write(&b.claim, s1 + 3, s1 + 8, sends(s1..s1 + 3, F)),
        write(&c.claim, s2, s2 + 4, vec![]),
    ];
    let checks = store
        .record_many(writes, T0 + 1, LEASE)
        .await
        .expect("record_many");
    let held = |k: &LeaseCheck| matches!(k, LeaseCheck::Held { .. });
    assert_eq!(checks.len(), 4);
    assert!(
        held(&checks[0]) && held(&checks[2]) && held(&checks[3]),
        "{checks:?}"
    );
    assert_eq!(checks[1], LeaseCheck::Lost);
    // The stale write's outcomes are logged and counted all the same.
    let t1 = job_now(&store, j1.id).await.totals;
    assert_eq!((t1.delivered, t1.failed), (5, 3), "{t1:?}");
    assert_eq!(job_now(&store, j2.id).await.totals.delivered, 2);
    let seg = |job, id| segment(&store, job, id);
    let sd = seg(j2.id, d.claim.segment_id).await;
    assert_eq!((sd.cursor, sd.sent_to), (o + 2, o + 5));
    let sa = seg(j1.id, a.claim.segment_id).await;
    assert_eq!(
        (sa.cursor, sa.sent_to),
        (s0, 0),
        "a lost write moves nothing"
    );
    assert_eq!(seg(j1.id, b.claim.segment_id).await.cursor, s1 + 3);
    assert_eq!(seg(j1.id, c.claim.segment_id).await.sent_to, s2 + 4);
}

pub async fn the_sweep_ends_a_job_left_with_nothing_to_do(store: S) {
    let (task_id, j) = task_job(&store, 5, 5, rule_spec("r", None)).await;
    let c = claim(&store, "w", T0).await;
    record(&store, &c, 5, sends(0..5, D), T0 + 1).await;
    let now = T0 + 1 + LEASE + 1;
    assert_eq!(
        sweep(&store, now, sweep_opts()).await,
        SweepReport {
            abandoned: 1,
            finished_jobs: 1,
            ..Default::default()
        }
    );
    let done = job_now(&store, j.id).await;
    assert_eq!((done.state, done.finished_at), (JobState::Done, Some(now)));
    assert_eq!(done.totals, totals(5, 5, 0, 0));
    let t = task(&store, task_id).await;
    assert_eq!((t.state, t.finished_at), (TaskState::Succeeded, Some(now)));
    assert_eq!(
        sweep(&store, now + 1, sweep_opts()).await,
        SweepReport::default()
    );
}

pub async fn the_sweep_handles_at_most_limit_segments_per_kind(store: S) {
    let aud = audience(&store, 30).await;
    let j = job(&store, aud, 10).await;
    for _ in 0..3 {
        let c = claim(&store, "w", T0).await;
        let s = c.segment.start;
        record(&store, &c, s + 1, vec![send(s, D)], T0).await;
    }
    let opts = SweepOptions {
        limit: 2,
        ..sweep_opts()
    };
    let now = T0 + LEASE + 1;
    assert_eq!(
        sweep(&store, now, opts).await,
        SweepReport {
            abandoned: 2,
            reissued: 2,
            ..Default::default()
        }
    );
    assert_eq!(
        sweep(&store, now, opts).await,
        SweepReport {
            abandoned: 1,
            reissued: 1,
            ..Default::default()
        }
    );
    assert_eq!(sweep(&store, now, opts).await, SweepReport::default());
    assert_eq!(
        seg_counts(&store, j.id).await,
        HashMap::from([(SegmentState::Abandoned, 3), (SegmentState::Pending, 3)])
    );
}

pub async fn partial_segments_are_retried_with_backoff_until_max_attempts(store: S) {
    let (task_id, j) = task_job(&store, 4, 4, rule_spec("r", None)).await;
    let opts = sweep_opts(); // 3 attempts, 1 s backoff
    let c = claim(&store, "w", T0).await;
    record(
        &store,
        &c,
        4,
        vec![send(0, D), send(1, R), send(2, D), send(3, R)],
        T0 + 1,
    )
    .await;
    finish(&store, &c, T0 + 2).await;
    let first = segment(&store, j.id, c.claim.segment_id).await;
    assert_eq!(first.state, SegmentState::Partial);
    let running = job_now(&store, j.id).await;
    assert_eq!(
        (running.state, running.totals),
        (JobState::Running, totals(4, 2, 0, 2))
    );
    assert_eq!(task(&store, task_id).await.state, TaskState::Running);

    // Attempt 1 was partial: attempt 2 over [1, 4), one backoff later.
    let now = T0 + 3;
    assert_eq!(
        sweep(&store, now, opts).await,
        SweepReport {
            reissued: 1,
            ..Default::default()
        }
    );
    let segs = segments(&store, j.id).await;
    let second = &segs[1];
    assert_eq!((second.start, second.end, second.cursor), (1, 4, 1));
    assert_eq!((second.attempt, second.parent_id), (2, Some(first.id)));
    assert_eq!(
        (second.state, second.not_before),
        (SegmentState::Pending, now + 1_000)
    );
    assert_eq!(
        seg_counts(&store, j.id).await,
        HashMap::from([(SegmentState::Partial, 1), (SegmentState::Pending, 1)])
    );
    assert_eq!(sweep(&store, now + 1, opts).await, SweepReport::default());
    no_claim(&store, now + 999).await;
    let c2 = claim(&store, "w", now + 1_000).await;
    assert_eq!(c2.claim.segment_id, second.id);
    record(&store, &c2, 4, vec![send(1, D), send(3, R)], now + 1_001).await;
    finish(&store, &c2, now + 1_002).await;
    assert_eq!(job_now(&store, j.id).await.totals, totals(4, 3, 0, 1));

    // Attempt 2 was partial: attempt 3 over [3, 4), two backoffs later.
    let now = now + 1_003;
    assert_eq!(sweep(&store, now, opts).await.reissued, 1);
    let third = segments(&store, j.id).await.pop().unwrap();
    assert_eq!((third.start, third.end, third.attempt), (3, 4, 3));
    assert_eq!(
        (third.parent_id, third.not_before),
        (Some(second.id), now + 2_000)
    );
    let c3 = claim(&store, "w", now + 2_000).await;
    record(&store, &c3, 4, vec![send(3, R)], now + 2_001).await;
    finish(&store, &c3, now + 2_002).await;

    // Attempt 3 of 3 was partial: its retrying recipients fail, the job ends.
    let now = now + 2_003;
    assert_eq!(
        sweep(&store, now, opts).await,
        SweepReport {
            failed_recipients: 1,
            finished_jobs: 1,
            ..Default::default()
        }
    );
    let r3 = send_row(&store, j.id, 3).await;
    assert_eq!((r3.state, r3.attempts), (F, 3));
    let done = job_now(&store, j.id).await;
    assert_eq!((done.state, done.finished_at), (JobState::Done, Some(now)));
    assert_eq!(done.totals, totals(4, 3, 1, 0));
    let t = task(&store, task_id).await;
    assert_eq!((t.state, t.finished_at), (TaskState::Failed, Some(now)));
    assert_eq!(sweep(&store, now + 1, opts).await, SweepReport::default());
    assert_eq!(
        seg_counts(&store, j.id).await,
        HashMap::from([(SegmentState::Partial, 3)])
    );
}

pub async fn jobs_past_their_deadline_expire(store: S) {
    let spec = RuleSpec {
        deadline_secs: Some(60),
        ..rule_spec("r", None)
    };
    let (task_id, j) = task_job(&store, 10, 5, spec).await;
    let deadline = T0 + 60_000;
    assert_eq!(j.deadline_at, Some(deadline));
    let c = claim(&store, "w", T0 + 1).await;
    record(&store, &c, 2, vec![send(0, D), send(1, R)], T0 + 2).await;
    // Keep the lease alive past the deadline.
    record(&store, &c, 2, vec![], deadline - 1_000).await;
    assert_eq!(
        sweep(&store, deadline - 1, sweep_opts()).await,
        SweepReport::default()
    );
    no_claim(&store, deadline).await;

    assert_eq!(
        sweep(&store, deadline, sweep_opts()).await,
        SweepReport {
            expired_jobs: 1,
            ..Default::default()
        }
    );
    let expired = job_now(&store, j.id).await;
    assert_eq!(
        (expired.state, expired.finished_at),
        (JobState::Expired, Some(deadline))
    );
    assert_eq!(
        expired.totals,
        JobTotals {
            total: 10,
            delivered: 1,
            expired: 9,
            ..Default::default()
        }
    );
    assert_eq!(
        seg_counts(&store, j.id).await,
        HashMap::from([(SegmentState::Expired, 2)])
    );
    assert_eq!(send_row(&store, j.id, 1).await.state, SendState::Expired);
    let t = task(&store, task_id).await;
    assert_eq!(
        (t.state, t.finished_at),
        (TaskState::Failed, Some(deadline))
    );

    // The holder's late writes are lost but logged, and counted out of `expired`.
    assert_eq!(
        record(&store, &c, 3, vec![send(2, D), send(1, D)], deadline + 1).await,
        LeaseCheck::Lost
    );
    assert_eq!(send_row(&store, j.id, 1).await.state, SendState::Expired);
    assert_eq!(send_row(&store, j.id, 2).await.state, D);
    assert_eq!(
        job_now(&store, j.id).await.totals,
        JobTotals {
            total: 10,
            delivered: 2,
            expired: 8,
            ..Default::default()
        }
    );
    assert_eq!(finish(&store, &c, deadline + 2).await, LeaseCheck::Lost);
    assert_eq!(
        sweep(&store, deadline + 10 * LEASE, sweep_opts()).await,
        SweepReport::default()
    );
    no_claim(&store, deadline + 1).await;
}

pub async fn cancelling_a_job_cancels_what_is_left(store: S) {
    let (task_id, j) = task_job(&store, 30, 10, rule_spec("r", None)).await;
    let c = claim(&store, "w", T0 + 1).await;
    record(
        &store,
        &c,
        3,
        vec![send(0, D), send(1, D), send(2, R)],
        T0 + 5,
    )
    .await;
    let cancelled = store.cancel_job(j.id, T0 + 6).await.unwrap().unwrap();
    check_totals(&cancelled);
    assert_eq!(
        (cancelled.state, cancelled.finished_at),
        (JobState::Cancelled, Some(T0 + 6))
    );
    assert_eq!(
        cancelled.totals,
        JobTotals {
            total: 30,
            delivered: 2,
            cancelled: 28,
            ..Default::default()
        }
    );
    assert_eq!(job_now(&store, j.id).await, cancelled);
    assert_eq!(
        seg_counts(&store, j.id).await,
        HashMap::from([(SegmentState::Cancelled, 3)])
    );
    let t = task(&store, task_id).await;
    assert_eq!(
        (t.state, t.finished_at),
        (TaskState::Cancelled, Some(T0 + 6))
    );
    // Again: unchanged.
    assert_eq!(
        store.cancel_job(j.id, T0 + 7).await.unwrap(),
        Some(cancelled)
    );
    assert_eq!(store.cancel_job(j.id + 1000, T0).await.unwrap(), None);
    no_claim(&store, T0 + 8).await;

    // Late writes of the holder: lost, logged, counted out of `cancelled`.
    assert_eq!(
        record(&store, &c, 4, vec![send(3, D), send(2, D)], T0 + 9).await,
        LeaseCheck::Lost
    );
    assert_eq!(
        job_now(&store, j.id).await.totals,
        JobTotals {
            total: 30,
            delivered: 4,
            cancelled: 26,
            ..Default::default()
        }
    );
    assert_eq!(finish(&store, &c, T0 + 10).await, LeaseCheck::Lost);
    assert_eq!(
        sweep(&store, T0 + 10 * LEASE, sweep_opts()).await,
        SweepReport::default()
    );
    assert_eq!(task(&store, task_id).await.state, TaskState::Cancelled);

    // A job already done is returned as it is.
    let aud = audience(&store, 1).await;
    let small = job(&store, aud, 1).await;
    let c = claim(&store, "w", T0 + 11).await;
    record(&store, &c, 1, vec![send(0, D)], T0 + 12).await;
    finish(&store, &c, T0 + 13).await;
    let done = job_now(&store, small.id).await;
    assert_eq!(done.state, JobState::Done);
    assert_eq!(
        store.cancel_job(small.id, T0 + 14).await.unwrap(),
        Some(done)
    );
}

/// A tenant's audiences page by id, open ones too, and no other tenant's.
pub async fn audiences_are_listed_per_tenant_by_id(store: S) {
    let mut mine = Vec::new();
    for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
        let id = store
            .create_audience(DEFAULT_TENANT, Some(name.into()), T0 + i as i64)
            .await
            .unwrap();
        mine.push(id);
        if i == 1 {
            let theirs = store.create_audience(OTHER_TENANT, None, T0).await.unwrap();
            assert_eq!(
                store.list_audiences(OTHER_TENANT, None, 10).await.unwrap(),
                vec![AudienceRecord {
                    id: theirs,
                    tenant: OTHER_TENANT,
                    name: None,
                    size: None,
                    created_at: T0,
                }]
            );
        }
    }
    store
        .append_audience(mine[0], 0, &recipients(0..3))
        .await
        .unwrap();
    store.seal_audience(mine[0], 3, T0 + 9).await.unwrap();
    let first = store.list_audiences(DEFAULT_TENANT, None, 2).await.unwrap();
    let ids: Vec<i64> = first.iter().map(|a| a.id).collect();
    assert_eq!(ids, mine[..2]);
    assert_eq!((first[0].size, first[1].size), (Some(3), None));
    let rest = store
        .list_audiences(DEFAULT_TENANT, Some(mine[1]), 2)
        .await
        .unwrap();
    assert_eq!(rest.iter().map(|a| a.id).collect::<Vec<_>>(), mine[2..]);
    assert_eq!(rest[0].name.as_deref(), Some("c"));
    assert!(
        store
            .list_audiences(DEFAULT_TENANT, Some(mine[2]), 2)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn failed_sends_are_grouped_and_sent_again(store: S) {
    let (task_id, j) = task_job(&store, 6, 3, rule_spec("r", None)).await;
    let c1 = claim(&store, "w", T0 + 1).await;
    record(
        &store,
        &c1,
        3,
        vec![send(0, D), send(1, F), send(2, F)],
        T0 + 2,
    )
    .await;
    finish(&store, &c1, T0 + 3).await;
    let c2 = claim(&store, "w", T0 + 4).await;
    record(
        &store,
        &c2,
        6,
        vec![send(3, D), send(4, D), send(5, F)],
        T0 + 5,
    )
    .await;
    finish(&store, &c2, T0 + 6).await;
    let done = job_now(&store, j.id).await;
    assert_eq!(done.state, JobState::Done);
    assert_eq!(done.totals, totals(6, 3, 3, 0));

    let f = store.job_failures(j.id, 10_000).await.unwrap();
    assert_eq!(f.scanned, 3);
    assert!(!f.truncated);
    assert_eq!(f.groups.iter().map(|g| g.1).sum::<u64>(), 3);
    let f = store.job_failures(j.id, 2).await.unwrap();
    assert_eq!((f.scanned, f.truncated), (2, true));
    assert_eq!(
        f.groups,
        vec![("error-1".to_string(), 1), ("error-2".to_string(), 1)]
    );

    // A finished job runs again for its failed sends only.
    let Some(crate::FailedRetry::Retried {
        job: rerun,
        retried,
    }) = store
        .retry_sends(j.id, crate::Resend::Failed, T0 + 10)
        .await
        .unwrap()
    else {
        panic!("the job should be retried");
    };
    assert_eq!(retried, 3);
    check_totals(&rerun);
    assert_eq!(rerun.state, JobState::Running);
    assert_eq!(rerun.finished_at, None);
    assert_eq!(rerun.totals, totals(6, 3, 0, 3));
    assert_eq!(send_row(&store, j.id, 1).await.state, R);
    assert_eq!(send_row(&store, j.id, 0).await.state, D);
    assert_eq!(store.job_failures(j.id, 10).await.unwrap().scanned, 0);
    // Pending segments over the failures, at most a segment size (3) long.
    let pending: Vec<(u64, u64)> = segments(&store, j.id)
        .await
        .into_iter()
        .filter(|s| s.state == SegmentState::Pending)
        .map(|s| (s.start, s.end))
        .collect();
    assert_eq!(pending, vec![(1, 3), (5, 6)]);

    // The retry attempt counts as a new attempt and settles the totals.
    let c = claim(&store, "w", T0 + 11).await;
    assert_eq!((c.segment.start, c.segment.end), (1, 3));
    record(&store, &c, 3, vec![send(1, D), send(2, F)], T0 + 12).await;
    finish(&store, &c, T0 + 13).await;
    assert_eq!(send_row(&store, j.id, 1).await.attempts, 2);
    let c = claim(&store, "w", T0 + 14).await;
    record(&store, &c, 6, vec![send(5, D)], T0 + 15).await;
    finish(&store, &c, T0 + 16).await;
    let again = job_now(&store, j.id).await;
    assert_eq!(again.state, JobState::Done);
    assert_eq!(again.totals, totals(6, 5, 1, 0));
    // The task keeps the outcome it had.
    assert_eq!(task(&store, task_id).await.state, TaskState::Failed);

    // Nothing failed left but one; a cancelled job is not retried.
    assert_eq!(
        store
            .cancel_job(j.id, T0 + 17)
            .await
            .unwrap()
            .unwrap()
            .state,
        JobState::Done
    );
    let a = audience(&store, 4).await;
    let other = job(&store, a, 2).await;
    let cancelled = store.cancel_job(other.id, T0 + 18).await.unwrap().unwrap();
    assert!(matches!(
        store.retry_sends(other.id, crate::Resend::Failed, T0 + 19).await.unwrap(),
        Some(crate::FailedRetry::NotRetryable(ref j)) if j == &cancelled
    ));
    assert_eq!(
        store
            .retry_sends(other.id + 1000, crate::Resend::Failed, T0)
            .await
            .unwrap(),
        None
    );
}

/// A recipient is found in a job by its whole line in the audience, in any
/// chunk, with its send-log row once the job has tried it.
pub async fn find_send_locates_a_recipient_by_its_whole_line(store: S) {
    let n = crate::AUDIENCE_CHUNK + 10;
    let aud = audience(&store, n).await;
    let j = job(&store, aud, n).await;
    let c = claim(&store, "w", T0).await;
    record(&store, &c, 4, sends(0..4, D), T0 + 10).await;

    let found = store.find_send(j.id, &recipient(2)).await.unwrap().unwrap();
    assert_eq!(found.index, 2);
    let row = found.send.expect("tried");
    assert_eq!(
        (row.state, row.recipient.as_str()),
        (D, recipient(2).as_str())
    );

    let late = crate::AUDIENCE_CHUNK + 5;
    let found = store
        .find_send(j.id, &recipient(late))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((found.index, found.send), (late, None));

    // A piece of many recipients' text is none of them.
    assert_eq!(store.find_send(j.id, "user-0000000").await.unwrap(), None);
    assert_eq!(store.find_send(j.id, "nobody").await.unwrap(), None);
    assert_eq!(
        store.find_send(j.id + 1000, &recipient(2)).await.unwrap(),
        None
    );

    // Inside a longer recipient first, then on its own line.
    let id = store
        .create_audience(DEFAULT_TENANT, None, T0)
        .await
        .unwrap();
    let names: Vec<String> = ["malice", "bob", "alice"].map(str::to_owned).to_vec();
    store.append_audience(id, 0, &names).await.unwrap();
    store.seal_audience(id, 3, T0).await.unwrap().unwrap();
    let j2 = job(&store, id, 3).await;
    let found = store.find_send(j2.id, "alice").await.unwrap().unwrap();
    assert_eq!(found.index, 2);
}
