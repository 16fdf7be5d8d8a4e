//! Engine tests with a real SQLite store and an in-process channel.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use herald_channels::{Channel, ChannelKind, Delivery, SendOutcome};
use herald_core::{Clock, RetryPolicy, SystemClock, TimerKind};
use herald_engine::{ChannelSpec, Engine, EngineConfig};
use herald_store::{NewTimer, SqliteOptions, StoreOptions, Synchronous, WriteOp, WriteResult};
use parking_lot::Mutex;

/// Counts deliveries per timer; fails the first `fail_first` attempts of each.
struct Counting {
    seen: Mutex<HashMap<i64, u32>>,
    early: AtomicU32,
    fail_first: u32,
}

impl Counting {
    fn new(fail_first: u32) -> Arc<Self> {
        Arc::new(Self {
            seen: Mutex::new(HashMap::new()),
            early: AtomicU32::new(0),
            fail_first,
        })
    }
    fn delivered(&self) -> usize {
        self.seen
            .lock()
            .values()
            .filter(|&&n| n > self.fail_first)
            .count()
    }
}

#[async_trait]
impl Channel for Counting {
    fn name(&self) -> &str {
        "count"
    }
    fn kind(&self) -> ChannelKind {
        ChannelKind::Log
    }
    async fn send(&self, d: &Delivery) -> SendOutcome {
        if SystemClock.now_ms() < d.due_at {
            self.early.fetch_add(1, Ordering::SeqCst);
        }
        let n = {
            let mut seen = self.seen.lock();
            let n = seen.entry(d.timer_id).or_insert(0);
            *n += 1;
            *n
        };
        if n <= self.fail_first {
            SendOutcome::Retryable {
                error: "not yet".into(),
                status: Some(503),
                retry_after_ms: None,
            }
        } else {
            SendOutcome::Delivered {
                provider_msgid: Some(format!("m{}", d.timer_id)),
                status: Some(200),
            }
        }
    }
}

async fn engine(channel: Arc<Counting>, cfg: EngineConfig) -> (Engine, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("h.db").display());
    let store = herald_store::open(
        &url,
        &StoreOptions {
            sqlite: SqliteOptions {
                synchronous: Synchronous::Normal,
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let spec = ChannelSpec {
        quiet: None,
        reminder_template: None,
        in_doubt: herald_channels::InDoubt::Resend,
        pacing: Vec::new(),
        channel,
        concurrency: 32,
        rate_per_sec: None,
        retry: RetryPolicy {
            max_attempts: 5,
            base_ms: 20,
            max_ms: 100,
            ..RetryPolicy::default()
        },
    };
    let e = Engine::start(
        store,
        Arc::new(SystemClock),
        vec![spec],
        cfg,
        16,
        "test-node",
    )
    .await;
    (e, dir)
}

fn timer(due_at: i64, i: usize) -> WriteOp {
    WriteOp::InsertTimer(NewTimer {
        tenant: herald_core::DEFAULT_TENANT,
        shard: (i % 16) as u16,
        due_at,
        priority: 5,
        kind: TimerKind::Timer,
        channel: "count".into(),
        recipient: format!("r{i}"),
        message: "{}".into(),
        idempotency_key: None,
        created_at: SystemClock.now_ms(),
        traceparent: None,
        routing: None,
    })
}

async fn wait(what: &str, secs: u64, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Timers created continuously with due times on both sides of a short
/// window, while the loader pages in small steps: each fires exactly once and
/// never early.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timers_around_the_window_edge_fire_exactly_once() {
    let ch = Counting::new(0);
    let cfg = EngineConfig {
        window_ms: 1_000,
        load_interval_ms: 30,
        load_batch: 7,
        ..Default::default()
    };
    let (e, _dir) = engine(ch.clone(), cfg).await;
    let mut n = 0;
    for round in 0..40 {
        let now = SystemClock.now_ms();
        let ops: Vec<WriteOp> = (0..25)
            .map(|k| timer(now + 200 + ((round * 37 + k * 97) % 1_800) as i64, n + k))
            .collect();
        n += ops.len();
        let res = e.submit(ops).await.unwrap();
        assert!(res.iter().all(|r| matches!(r, WriteResult::Created(_))));
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    wait("every timer delivered", 20, || ch.delivered() == n).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    {
        let seen = ch.seen.lock();
        assert_eq!(seen.len(), n);
        assert!(seen.values().all(|&c| c == 1), "a timer fired twice");
    }
    assert_eq!(ch.early.load(Ordering::SeqCst), 0, "a timer fired early");
    let counts = e.store().count_by_tenant_state().await.unwrap();
    assert_eq!(
        counts,
        vec![(
            herald_core::DEFAULT_TENANT,
            herald_core::TimerState::Done,
            n as u64
        )]
    );
}

/// Retries go back through the wheel and complete; every attempt is logged.
#[tokio::test]
async fn retries_reschedule_and_log_every_attempt() {
    let ch = Counting::new(2);
    let (e, _dir) = engine(ch.clone(), EngineConfig::default()).await;
    let now = SystemClock.now_ms();
    let res = e
        .submit((0..50).map(|i| timer(now, i)).collect())
        .await
        .unwrap();
    wait("all delivered after retries", 20, || ch.delivered() == 50).await;
    let WriteResult::Created(first) = &res[0] else {
        panic!()
    };
    for _ in 0..250 {
        let v = e.get_timer(first.id).await.unwrap().unwrap();
        if v.record.state == herald_core::TimerState::Done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let log = e.store().deliveries_for(first.id).await.unwrap();
    let outcomes: Vec<&str> = log.iter().map(|d| d.outcome.as_str()).collect();
    assert_eq!(outcomes, ["retry", "retry", "delivered"]);
    assert_eq!(
        log[2].provider_msgid.as_deref(),
        Some(format!("m{}", first.id).as_str())
    );
}

/// A graceful shutdown leaves unfired timers pending, and a new engine on the
/// same store fires them.
#[tokio::test]
async fn shutdown_keeps_pending_timers_for_the_next_start() {
    let ch = Counting::new(0);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("h.db").display());
    let opts = StoreOptions::default();
    let store = herald_store::open(&url, &opts).await.unwrap();
    let spec = |c: Arc<Counting>| ChannelSpec {
        quiet: None,
        reminder_template: None,
        in_doubt: herald_channels::InDoubt::Resend,
        pacing: Vec::new(),
        channel: c,
        concurrency: 4,
        rate_per_sec: None,
        retry: RetryPolicy::default(),
    };
    let e = Engine::start(
        store.clone(),
        Arc::new(SystemClock),
        vec![spec(ch.clone())],
        EngineConfig::default(),
        16,
        "test-node",
    )
    .await;
    let due = SystemClock.now_ms() + 800;
    e.submit((0..10).map(|i| timer(due, i)).collect())
        .await
        .unwrap();
    e.shutdown().await;
    drop(e);
    assert_eq!(ch.delivered(), 0);
    let e2 = Engine::start(
        store,
        Arc::new(SystemClock),
        vec![spec(ch.clone())],
        EngineConfig::default(),
        16,
        "test-node",
    )
    .await;
    wait("fired after restart", 10, || ch.delivered() == 10).await;
    e2.shutdown().await;
}

/// A `skip` channel's timers are marked firing ahead of their sends; a
/// shutdown that leaves some queued (held back by the rate) puts them back
/// to pending, so the next start sends each once and none ends in doubt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_puts_timers_marked_ahead_back_to_pending() {
    let ch = Counting::new(0);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("h.db").display());
    let store = herald_store::open(&url, &StoreOptions::default())
        .await
        .unwrap();
    let spec = |c: Arc<Counting>, rate| ChannelSpec {
        quiet: None,
        reminder_template: None,
        in_doubt: herald_channels::InDoubt::Skip,
        pacing: Vec::new(),
        channel: c,
        concurrency: 4,
        rate_per_sec: rate,
        retry: RetryPolicy::default(),
    };
    let start = |rate| {
        Engine::start(
            store.clone(),
            Arc::new(SystemClock),
            vec![spec(ch.clone(), rate)],
            EngineConfig::default(),
            16,
            "test-node",
        )
    };
    let e = start(Some(10.0)).await;
    let due = SystemClock.now_ms() + 300;
    e.submit((0..50).map(|i| timer(due, i)).collect())
        .await
        .unwrap();
    wait("a few sent at the rate", 10, || ch.delivered() >= 3).await;
    e.shutdown().await;
    drop(e);
    let sent_before = ch.delivered();
    assert!(sent_before < 50, "the rate held most back: {sent_before}");
    let states = |counts: Vec<(herald_core::TenantId, herald_core::TimerState, u64)>| {
        let mut by: HashMap<herald_core::TimerState, u64> = HashMap::new();
        for (_, state, n) in counts {
            *by.entry(state).or_default() += n;
        }
        by
    };
    let by = states(store.count_by_tenant_state().await.unwrap());
    assert_eq!(by.get(&herald_core::TimerState::Firing), None, "{by:?}");
    assert_eq!(
        by.get(&herald_core::TimerState::Pending)
            .copied()
            .unwrap_or(0) as usize,
        50 - sent_before,
        "{by:?}"
    );
    let e2 = start(None).await;
    wait("the rest after the restart", 10, || ch.delivered() == 50).await;
    e2.shutdown().await;
    assert!(
        ch.seen.lock().values().all(|&n| n == 1),
        "each timer sent once"
    );
    let by = states(store.count_by_tenant_state().await.unwrap());
    assert_eq!(by.get(&herald_core::TimerState::InDoubt), None, "{by:?}");
    assert_eq!(
        by.get(&herald_core::TimerState::Done).copied(),
        Some(50),
        "{by:?}"
    );
}

fn cluster_cfg() -> EngineConfig {
    EngineConfig {
        lease_ms: 1_500,
        heartbeat_ms: 100,
        lease_guard_ms: 200,
        load_interval_ms: 50,
        ..Default::default()
    }
}

async fn node(store: Arc<dyn herald_store::Store>, ch: Arc<Counting>, id: &str) -> Engine {
    let spec = ChannelSpec {
        quiet: None,
        reminder_template: None,
        in_doubt: herald_channels::InDoubt::Resend,
        pacing: Vec::new(),
        channel: ch,
        concurrency: 8,
        rate_per_sec: None,
        retry: RetryPolicy {
            max_attempts: 5,
            base_ms: 20,
            max_ms: 100,
            ..RetryPolicy::default()
        },
    };
    Engine::start(
        store,
        Arc::new(SystemClock),
        vec![spec],
        cluster_cfg(),
        16,
        id,
    )
    .await
}

/// Two nodes on one store share the shards fairly and without overlap, and
/// every timer (whichever node accepted it) fires once, from its shard's owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_split_the_shards_and_fire_each_timer_once() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("h.db").display());
    let store = herald_store::open(
        &url,
        &StoreOptions {
            sqlite: SqliteOptions {
                synchronous: Synchronous::Normal,
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let ch = Counting::new(0);
    let a = node(store.clone(), ch.clone(), "node-a").await;
    let b = node(store.clone(), ch.clone(), "node-b").await;
    wait("a fair split", 10, || {
        a.owned_shards().len() == 8 && b.owned_shards().len() == 8
    })
    .await;
    let (sa, sb) = (a.owned_shards(), b.owned_shards());
    assert!(sa.iter().all(|s| !sb.contains(s)), "a shard owned twice");
    // Every timer goes in through node a; half belong to b's shards.
    let now = SystemClock.now_ms();
    a.submit((0..160).map(|i| timer(now + 300, i)).collect())
        .await
        .unwrap();
    wait("every timer delivered", 20, || ch.delivered() == 160).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        ch.seen.lock().values().all(|&c| c == 1),
        "a timer fired twice"
    );
    // A node leaving hands its shards over at once, long before its leases expire.
    a.shutdown().await;
    wait("b takes every shard", 3, || b.owned_shards().len() == 16).await;
    let now = SystemClock.now_ms();
    b.submit((0..32).map(|i| timer(now + 100, 1_000 + i)).collect())
        .await
        .unwrap();
    wait("b delivers all", 10, || ch.delivered() == 192).await;
    b.shutdown().await;
}

/// A node that dies without leaving keeps its shards only until the leases run
/// out; then the survivor takes them and fires what was pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_nodes_shards_move_when_its_leases_expire() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("h.db").display());
    let store = herald_store::open(
        &url,
        &StoreOptions {
            sqlite: SqliteOptions {
                synchronous: Synchronous::Normal,
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .await
    .unwrap();
    // "Dead" node: claims shards by hand and never renews them.
    let leases = store
        .acquire_shards(
            &herald_store::Holder::new("ghost", 1),
            &(0..8).collect::<Vec<u16>>(),
            SystemClock.now_ms(),
            1_000,
        )
        .await
        .unwrap();
    assert_eq!(leases.len(), 8);
    store
        .heartbeat(
            &herald_store::Holder::new("ghost", 1),
            SystemClock.now_ms(),
            1_000,
        )
        .await
        .unwrap();
    let ch = Counting::new(0);
    let b = node(store.clone(), ch.clone(), "node-b").await;
    let now = SystemClock.now_ms();
    b.submit((0..64).map(|i| timer(now + 50, i)).collect())
        .await
        .unwrap();
    // Half the timers wait for the ghost's leases (1 s) to run out.
    wait("the survivor owns every shard", 10, || {
        b.owned_shards().len() == 16
    })
    .await;
    let took = std::time::Instant::now();
    wait("every timer delivered", 10, || ch.delivered() == 64).await;
    assert!(took.elapsed() < Duration::from_secs(5));
    let owners: Vec<Option<String>> = store
        .shard_leases()
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.owner)
        .collect();
    assert!(
        owners.iter().all(|o| o.as_deref() == Some("node-b")),
        "{owners:?}"
    );
    b.shutdown().await;
}
