//! Both backends refuse the same requests with the same error variant, naming
//! the same field or argument, so the API answers alike whatever the store.

use std::sync::Arc;

use herald_core::campaign::SendState;
use herald_core::{DEFAULT_TENANT, TimerKind};
use herald_store::postgres::PgStore;
use herald_store::sqlite::SqliteStore;
use herald_store::{
    JobSpec, LeaseCheck, NewReminder, NewTimer, PutSubject, SendEntry, Store, StoreError,
    StoreOptions, WriteOp,
};

/// An error as the API sees it: its variant and what it names.
fn shape(e: &StoreError) -> (&'static str, String) {
    match e {
        StoreError::NotFound { what } => ("not_found", what.clone()),
        StoreError::Conflict { what, .. } => ("conflict", what.clone()),
        StoreError::Refused { what, .. } => ("refused", what.clone()),
        StoreError::Unavailable { .. } => ("unavailable", String::new()),
        StoreError::Full { .. } => ("full", String::new()),
        StoreError::Corrupt(_) => ("corrupt", String::new()),
        StoreError::Internal(_) => ("internal", String::new()),
        StoreError::UnsupportedUrl(_) => ("unsupported_url", String::new()),
    }
}

fn entry(index: u64, state: SendState) -> SendEntry {
    SendEntry {
        index,
        recipient: format!("r{index}"),
        state,
        provider_msgid: None,
        error: None,
    }
}

/// Makes every refused request once and returns the shape of each error, in order.
async fn refusals(store: &dyn Store) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut note = |r: Result<(), StoreError>| {
        let e = r.expect_err("the store accepted a request it must refuse");
        out.push(shape(&e));
    };
    let recipients: Vec<String> = (0..5).map(|i| format!("u{i}")).collect();

    // Audiences: unknown, off the chunk grid, a newline, a wrong size,
    // sealed, not sealed yet.
    note(store.append_audience(999, 0, &recipients).await);
    let open = store
        .create_audience(DEFAULT_TENANT, None, 1)
        .await
        .unwrap();
    note(store.append_audience(open, 7, &recipients).await);
    note(store.append_audience(open, 0, &["a\nb".to_string()]).await);
    store.append_audience(open, 0, &recipients).await.unwrap();
    note(store.seal_audience(open, 6, 2).await.map(|_| ()));
    note(store.audience_slice(open, 0, 5).await.map(|_| ()));
    note(store.audience_slice(999, 0, 5).await.map(|_| ()));
    store.seal_audience(open, 5, 2).await.unwrap().unwrap();
    note(store.append_audience(open, 0, &recipients).await);

    // A claimed segment: cursor and index outside it, an `expired` entry, an
    // unknown segment, finishing short of the end.
    let spec = JobSpec {
        tenant: DEFAULT_TENANT,
        audience_id: open,
        channel: "log".into(),
        message: "{}".into(),
        segment_size: 5,
        deadline_at: None,
        priority: 0,
        follow_up: None,
        follows: None,
        resends: None,
        task_id: None,
        routing: None,
        traceparent: None,
        meta: Default::default(),
    };
    store.create_job(spec, 3).await.unwrap().unwrap();
    let c = store.claim_segment("w", 4, 60_000).await.unwrap().unwrap();
    let claim = c.claim.clone();
    let record = |cursor: u64, entries: Vec<SendEntry>, claim: herald_store::SegmentClaim| {
        let store = &store;
        async move {
            store
                .record_sends(&claim, cursor, entries, 5, 60_000)
                .await
                .map(|_| ())
        }
    };
    note(record(9, vec![], claim.clone()).await);
    note(record(1, vec![entry(7, SendState::Delivered)], claim.clone()).await);
    note(record(1, vec![entry(0, SendState::Expired)], claim.clone()).await);
    let mut unknown = claim.clone();
    unknown.segment_id += 100;
    note(record(1, vec![], unknown.clone()).await);
    note(store.finish_segment(&claim, 6).await.map(|_| ()));
    // Unknown to `finish_segment` is no claim of the caller's: lost, not an error.
    assert_eq!(
        store.finish_segment(&unknown, 6).await.unwrap(),
        LeaseCheck::Lost
    );

    // A reminder bit beyond the 64 of the subscription word.
    store
        .apply(vec![WriteOp::PutSubject(PutSubject {
            tenant: DEFAULT_TENANT,
            subject_id: "s".into(),
            start_at: 10_000_000,
            title: None,
            data: None,
            timing: Default::default(),
            templates: None,
            at: 1,
        })])
        .await
        .unwrap();
    let bad_bit = NewReminder {
        user_id: "u".into(),
        subject_id: "s".into(),
        bit: 64,
        lead_ms: 300_000,
        timer: NewTimer {
            tenant: DEFAULT_TENANT,
            shard: 0,
            due_at: 0,
            priority: 5,
            kind: TimerKind::Reminder,
            channel: "log".into(),
            recipient: "u".into(),
            message: "{}".into(),
            idempotency_key: None,
            created_at: 1,
            traceparent: None,
            routing: None,
        },
        not_before: 1,
        grant: None,
    };
    note(
        store
            .apply(vec![WriteOp::AddReminder(bad_bit)])
            .await
            .map(|_| ()),
    );
    out
}

/// What [`refusals`] gets on a fresh store (the first audience, job and
/// segment all have id 1).
fn expected() -> Vec<(&'static str, String)> {
    vec![
        ("not_found", "audience 999".into()),
        ("refused", "start".into()),
        ("refused", "recipients".into()),
        ("refused", "size".into()),
        ("conflict", "audience_id".into()),
        ("not_found", "audience 999".into()),
        ("conflict", "audience_id".into()),
        ("refused", "cursor".into()),
        ("refused", "entries".into()),
        ("refused", "entries".into()),
        ("not_found", "segment 101 of job 1".into()),
        ("conflict", "claim".into()),
        ("refused", "bit".into()),
    ]
}

#[tokio::test]
async fn sqlite_refuses_with_typed_errors() {
    let store = SqliteStore::open_memory(&StoreOptions::default())
        .await
        .unwrap();
    let got = refusals(&store).await;
    assert_eq!(got, expected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_backends_refuse_alike() {
    let Some(pg) = herald_pgtemp::PgTemp::shared().expect("start the throwaway cluster") else {
        return;
    };
    let db = pg.fresh_database("refusals").expect("create database");
    let postgres: Arc<dyn Store> = Arc::new(
        PgStore::open(db.url(), &StoreOptions::default())
            .await
            .unwrap(),
    );
    let sqlite: Arc<dyn Store> = Arc::new(
        SqliteStore::open_memory(&StoreOptions::default())
            .await
            .unwrap(),
    );
    let on_pg = refusals(&*postgres).await;
    let on_sqlite = refusals(&*sqlite).await;
    assert_eq!(on_pg, on_sqlite);
    assert_eq!(on_pg, expected());
}
