//! What jobs, rules and tasks say about themselves beyond what they send: a
//! job's name and category (stored, read back, filtered on).

use herald_core::TenantId;
use herald_core::tenant::DEFAULT_TENANT;

use super::fixtures::*;
use super::support::S;
use crate::{JobFilter, JobMeta, JobRecord};

const T0: i64 = 1_700_000_000_000;

fn meta(name: Option<&str>, category: Option<&str>) -> JobMeta {
    JobMeta {
        name: name.map(Into::into),
        category: category.map(Into::into),
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
