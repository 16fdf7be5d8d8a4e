//! What jobs, rules and tasks say about themselves beyond what they send: a
//! job's name and category (stored, read back, filtered on), and who made
//! and last changed each.

use herald_core::TenantId;
use herald_core::tenant::DEFAULT_TENANT;

use super::fixtures::*;
use super::support::S;
use crate::{Actor, JobFilter, JobMeta, JobRecord};

const T0: i64 = 1_700_000_000_000;

fn meta(name: Option<&str>, category: Option<&str>) -> JobMeta {
    JobMeta {
        name: name.map(Into::into),
        category: category.map(Into::into),
        ..Default::default()
    }
}

async fn labelled_job(store: &S, tenant: TenantId, m: JobMeta) -> JobRecord {
    let audience = super::support::sealed_audience_of(store, tenant, 3, T0).await;
    let spec = crate::JobSpec {
        tenant,
        meta: m,
        ..job_spec(audience, 10)
    };
    store.create_job(spec, T0).await.unwrap().unwrap()
}

fn ids(jobs: Vec<JobRecord>) -> Vec<i64> {
    jobs.into_iter().map(|j| j.id).collect()
}

pub async fn jobs_keep_their_name_and_category_and_list_by_them(store: S) {
    let coupon = meta(Some("coupon 10:00"), Some("coupon-reminder"));
    let a = labelled_job(&store, DEFAULT_TENANT, coupon.clone()).await;
    assert_eq!(a.meta, coupon);
    let b = labelled_job(
        &store,
        DEFAULT_TENANT,
        meta(Some("spring sale"), Some("marketing")),
    )
    .await;
    let c = labelled_job(
        &store,
        DEFAULT_TENANT,
        meta(Some("coupon 12:00"), Some("coupon-reminder")),
    )
    .await;
    let d = labelled_job(&store, DEFAULT_TENANT, meta(None, None)).await;
    let other = TenantId(DEFAULT_TENANT.0 + 1);
    labelled_job(&store, other, coupon.clone()).await;
    assert_eq!(store.get_job(a.id).await.unwrap().unwrap().meta, coupon);
    assert_eq!(
        store.get_job(d.id).await.unwrap().unwrap().meta,
        JobMeta::default()
    );

    let list = |category: Option<&str>, prefix: Option<&str>, before: Option<i64>| {
        let filter = JobFilter {
            category: category.map(Into::into),
            name_prefix: prefix.map(Into::into),
        };
        let store = store.clone();
        async move {
            ids(store
                .list_jobs_where(DEFAULT_TENANT, filter, before, 10)
                .await
                .unwrap())
        }
    };
    // No filter: every job of the tenant, newest first.
    assert_eq!(list(None, None, None).await, vec![d.id, c.id, b.id, a.id]);
    // A category exactly, newest first, paged by `before`; only this tenant's.
    assert_eq!(
        list(Some("coupon-reminder"), None, None).await,
        vec![c.id, a.id]
    );
    assert_eq!(
        list(Some("coupon-reminder"), None, Some(c.id)).await,
        vec![a.id]
    );
    assert_eq!(list(Some("coupon"), None, None).await, Vec::<i64>::new());
    // A name prefix, case-sensitive; a job without a name never matches.
    assert_eq!(list(None, Some("coupon"), None).await, vec![c.id, a.id]);
    assert_eq!(list(None, Some("coupon 12"), None).await, vec![c.id]);
    assert_eq!(list(None, Some("Coupon"), None).await, Vec::<i64>::new());
    assert_eq!(list(None, Some("spring sale"), None).await, vec![b.id]);
    // Both at once.
    assert_eq!(
        list(Some("coupon-reminder"), Some("coupon 10"), None).await,
        vec![a.id]
    );
    assert_eq!(
        list(Some("marketing"), Some("coupon"), None).await,
        Vec::<i64>::new()
    );
}

pub async fn a_rule_job_takes_the_rule_name(store: S) {
    let audience = super::support::sealed_audience(&store, 2, T0).await;
    let rule = store
        .create_rule(rule_spec("morning digest", Some(audience)), T0)
        .await
        .unwrap();
    let task = store.plan_task(rule.id, 1, T0, T0).await.unwrap().unwrap();
    let crate::TaskStart::Started { job } = store.start_task(task.id, T0, 10).await.unwrap() else {
        panic!("the task did not start");
    };
    assert_eq!(job.meta, meta(Some("morning digest"), None));
    assert_eq!(store.get_job(job.id).await.unwrap().unwrap().meta, job.meta);
}

fn key(id: Option<i64>, name: &str) -> Option<Actor> {
    Some(Actor {
        key_id: id,
        key_name: Some(name.into()),
    })
}

pub async fn rules_and_tasks_keep_who_made_and_changed_them(store: S) {
    let audience = super::support::sealed_audience(&store, 2, T0).await;
    let ops = key(Some(1), "ops");
    let bot = key(Some(2), "bot");
    let admin = key(None, "admin");
    let spec = rule_spec("digest", Some(audience));
    let r = store
        .create_rule_by(spec.clone(), T0, ops.clone())
        .await
        .unwrap();
    assert_eq!((&r.created_by, &r.changed_by), (&ops, &ops));
    assert_eq!(store.get_rule(r.id).await.unwrap().unwrap(), r);
    // A new version: made by another key; the creator stays.
    let v2 = store
        .update_rule_by(r.id, spec.clone(), T0 + 1, bot.clone())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((&v2.created_by, &v2.changed_by), (&ops, &bot));
    assert_eq!(
        store.list_rules(DEFAULT_TENANT, None, 10).await.unwrap(),
        vec![v2.clone()]
    );
    // The planner's task carries the key behind the version it planned.
    let task = store
        .plan_task(r.id, 2, T0 + 60_000, T0 + 2)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((&task.created_by, &task.changed_by), (&bot, &None));
    // Disabling: the rule's changer, and the changer of the task it cancels.
    let off = store
        .set_rule_enabled_by(r.id, false, T0 + 3, admin.clone())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((&off.created_by, &off.changed_by), (&ops, &admin));
    let cancelled = store.get_task(task.id).await.unwrap().unwrap();
    assert_eq!(
        (
            cancelled.state,
            &cancelled.created_by,
            &cancelled.changed_by
        ),
        (herald_core::campaign::TaskState::Cancelled, &bot, &admin)
    );
    assert_eq!(store.rule_tasks(r.id, 10).await.unwrap(), vec![cancelled]);
    // Open access (no key): no actor, on the row too.
    let open = store
        .set_rule_enabled_by(r.id, true, T0 + 4, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((&open.created_by, &open.changed_by), (&ops, &None));
}

pub async fn jobs_keep_who_made_and_changed_them(store: S) {
    let ops = key(Some(7), "ops");
    let bot = key(Some(8), "bot");
    let audience = super::support::sealed_audience(&store, 3, T0).await;
    let spec = crate::JobSpec {
        meta: JobMeta {
            created_by: ops.clone(),
            // Ignored on create.
            changed_by: bot.clone(),
            ..Default::default()
        },
        ..job_spec(audience, 10)
    };
    let j = store.create_job(spec, T0).await.unwrap().unwrap();
    assert_eq!((&j.meta.created_by, &j.meta.changed_by), (&ops, &None));
    assert_eq!(store.get_job(j.id).await.unwrap().unwrap(), j);
    // Sending again what failed: by bot.
    let c = store
        .claim_segment("w", T0 + 1, 30_000)
        .await
        .unwrap()
        .unwrap();
    let failed = vec![send(0, herald_core::campaign::SendState::Failed)];
    store
        .record_sends(&c.claim, 1, failed, T0 + 2, 30_000)
        .await
        .unwrap();
    let crate::FailedRetry::Retried { job, retried } = store
        .retry_sends_by(j.id, crate::Resend::Failed, T0 + 3, bot.clone())
        .await
        .unwrap()
        .unwrap()
    else {
        panic!("not retried");
    };
    assert_eq!(retried, 1);
    assert_eq!((&job.meta.created_by, &job.meta.changed_by), (&ops, &bot));
    // Cancelled by ops; a second cancel of the ended job changes nobody.
    let cancelled = store
        .cancel_job_by(j.id, T0 + 4, ops.clone())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cancelled.meta.changed_by, ops);
    let again = store
        .cancel_job_by(j.id, T0 + 5, bot.clone())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.meta.changed_by, ops);
    assert_eq!(store.get_job(j.id).await.unwrap().unwrap(), again);

    // A rule's job: nobody made it; cancelling it names the key on its task.
    let rule = store
        .create_rule_by(rule_spec("r", Some(audience)), T0, ops.clone())
        .await
        .unwrap();
    let task = store.plan_task(rule.id, 1, T0, T0).await.unwrap().unwrap();
    let crate::TaskStart::Started { job } = store.start_task(task.id, T0, 10).await.unwrap() else {
        panic!("the task did not start");
    };
    assert_eq!(job.meta.created_by, None);
    store
        .cancel_job_by(job.id, T0 + 6, bot.clone())
        .await
        .unwrap();
    let t = store.get_task(task.id).await.unwrap().unwrap();
    assert_eq!(
        (t.state, &t.created_by, &t.changed_by),
        (herald_core::campaign::TaskState::Cancelled, &ops, &bot)
    );
}
