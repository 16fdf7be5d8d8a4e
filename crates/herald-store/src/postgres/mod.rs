//! PostgreSQL backend: the store several Herald nodes share.
//!
//! # Connections
//!
//! Queries run on a [`deadpool_postgres`] pool of `tokio-postgres` connections
//! (16 by default; `?pool_size=N` in the URL changes it), each with its own cache
//! of prepared statements. [`crate::ClusterStore::subscribe`] opens one more, dedicated
//! connection per subscriber for `LISTEN` (see [`notify`]). Methods must be
//! called from within a tokio runtime. Connections use TLS (rustls) as the
//! URL's `sslmode` says: `disable`, `prefer` (the default), `require` or
//! `verify-full` (with `sslrootcert=PATH` for a private CA); see [`tls`]. Of [`StoreOptions`], only the
//! `postgres` part applies.
//!
//! # Atomicity and batching
//!
//! Every write method is one transaction (or one single statement, which is its
//! own transaction); an error rolls it back, and a transaction that hits a
//! deadlock or serialization failure is retried from the start a few times.
//! Batches are sent as arrays and expanded with `unnest`, so a batch costs a
//! handful of round trips whatever its size:
//!
//! * `apply` splits its ops into runs of inserts and runs of cancels, in order.
//!   An insert run is one `INSERT ... SELECT FROM unnest(...) ON CONFLICT DO
//!   NOTHING`, with ids drawn from the sequence in op order; keys that conflicted
//!   are then read back in one query (`Existing`), and a key repeated within the
//!   run resolves to its first occurrence in Rust. A cancel run is one
//!   `UPDATE ... FROM unnest(...)` plus one read of the timers it could not cancel.
//!   New timers due soon are announced with `pg_notify` in the same transaction,
//!   so other nodes hear of them exactly when they commit.
//! * A run of `AddReminder` ops (a bulk subscribe sends thousands) is a fixed
//!   handful of array statements too; subject ops and `CancelReminders` run one
//!   by one. Reminder timers created, and those a subject move re-timed, are
//!   announced like new timers. See `reminders.rs` for the locking that keeps
//!   concurrent subscribes, moves and cancels consistent.
//! * `complete` writes the whole send log with one `INSERT`, reads the fenced
//!   shards' epochs once with `FOR SHARE` (so no lease can change hands until the
//!   batch commits), and updates the timers with one guarded `UPDATE` per segment
//!   of the batch in which no timer repeats (normally one segment); segments are
//!   pipelined, and each sees the effect of the one before.
//!
//! Readers run at `READ COMMITTED`: one statement sees a batch whole or not at all.
//!
//! # Concurrency between nodes
//!
//! Shard and named leases are claimed with `INSERT ... ON CONFLICT DO UPDATE ...
//! WHERE <free, expired or mine>`. PostgreSQL locks the conflicting row and
//! re-checks the condition against its latest committed version, so two nodes
//! racing for a shard cannot both get it. Shards are claimed in ascending order,
//! which keeps two concurrent claims from deadlocking.
//!
//! If the caller's future is dropped mid-transaction, the transaction is rolled
//! back before the connection serves anyone else.

mod access;
mod apply;
mod calendars;
mod campaign;
mod caps;
mod cluster;
mod digests;
mod directory;
mod error;
mod forecast;
mod grants;
pub mod notify;
mod partitions;
mod provider;
mod reminders;
mod reports;
mod retention;
mod schema;
mod subjects;
mod templates;
mod timer_counts;
mod timer_ops;
mod timers;
mod tls;

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use herald_core::{TenantId, TimerId, TimerState};
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_postgres::types::ToSql;

use error::{Ctx, col, pg_error, retryable};

use crate::{
    Applied, ChannelPause, ChannelToken, ClusterStore, Completion, DeadLetters, DeliveryRecord,
    DirectoryStore, DueCounts, DueCursor, DueEntry, Fence, FiringMark, Holder, InDoubtResolved,
    NamedLease, NewTemplateVersion, NodeInfo, ProviderStore, ReminderStore, Result, ShardLease,
    SortOrder, Store, StoreError, StoreOptions, TemplateCensus, TemplateRecord, TemplateStore,
    TemplateWrite, TimerFilter, TimerRecord, TimerStore, WriteOp, WriteResult,
};

/// A statement parameter.
type Param<'a> = &'a (dyn ToSql + Sync);

/// Connections in the pool unless the URL says `pool_size=N`.
pub const DEFAULT_POOL_SIZE: usize = 16;
/// How long a caller waits for a free pooled connection.
const POOL_WAIT: Duration = Duration::from_secs(5);
/// How long opening one connection may take (also the default `connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A call's own deadline is the statement timeout plus this much, for the
/// pool wait, the round trips and the commit.
const CALL_SLACK: Duration = Duration::from_secs(5);
/// How long sent data may go unacknowledged before the kernel drops the
/// connection (`TCP_USER_TIMEOUT`): a peer that vanished without a reset is
/// noticed in seconds, not after the system's retransmission timeout.
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(10);
/// TCP keepalive of pooled connections, so an idle dead peer is noticed too.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
/// How long a transaction may sit idle between statements before the server
/// ends it (see `parse_url`).
const IDLE_IN_TRANSACTION_MS: u64 = 10_000;
/// A transaction that deadlocks or fails to serialize is tried this many times.
const ATTEMPTS: usize = 4;

/// The connection settings of a URL, and our own parameters taken out of it.
#[derive(Clone)]
struct Target {
    config: tokio_postgres::Config,
    pool_size: usize,
    /// How connections are encrypted (per the URL's `sslmode`, see [`tls`]).
    tls: tls::RustlsConnect,
}

/// Parses `postgres://` / `postgresql://` URLs (and key=value strings) the way
/// `tokio-postgres` does, after removing Herald's own `pool_size` parameter.
/// Every session gets `statement_timeout_ms` as its `statement_timeout`.
fn parse_target(url: &str, statement_timeout_ms: u64) -> Result<Target> {
    let bad =
        |why: String| StoreError::refused("store", format!("postgres: invalid store url: {why}"));
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let mut pool_size = DEFAULT_POOL_SIZE;
    let mut kept = Vec::new();
    let (mut sslmode, mut sslrootcert) = (None, None);
    for pair in query.into_iter().flat_map(|q| q.split('&')) {
        match pair.split_once('=') {
            Some(("sslmode", v)) => sslmode = Some(v),
            Some(("sslrootcert", v)) => sslrootcert = Some(v),
            Some(("pool_size", v)) => {
                pool_size =
                    v.parse::<usize>().ok().filter(|&n| n > 0).ok_or_else(|| {
                        bad(format!("pool_size={v:?}: expected a positive number"))
                    })?;
            }
            _ if pair.is_empty() => {}
            _ => kept.push(pair),
        }
    }
    let clean = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    let mut config = tokio_postgres::Config::from_str(&clean).map_err(|e| {
        // The driver's message is terse; its source says which part is wrong.
        let cause = std::error::Error::source(&e)
            .map(|s| format!(": {s}"))
            .unwrap_or_default();
        bad(format!("{e}{cause}"))
    })?;
    if config.get_application_name().is_none() {
        config.application_name("herald");
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    // Every Herald transaction is a few statements long. A node that stalls
    // (SIGSTOP, a long GC-like pause, a hung host) inside one would otherwise
    // keep its row locks (a job's row, say) for as long as its connection
    // lives, and every other node would wait on them: the server ends such a
    // transaction instead, and the stalled node's write fails when it wakes.
    let guard = format!(
        "-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS} \
         -c statement_timeout={statement_timeout_ms}"
    );
    config
        .keepalives(true)
        .keepalives_idle(KEEPALIVE_IDLE)
        .tcp_user_timeout(TCP_USER_TIMEOUT);
    let options = match config.get_options() {
        Some(o) if !o.is_empty() => format!("{o} {guard}"),
        _ => guard,
    };
    config.options(&options);
    // Only the URL form reaches here with `sslmode`; a key=value string keeps
    // what the driver read (it knows disable, prefer and require).
    let (ssl_mode, verify) = tls::parse_mode(sslmode, sslrootcert)?;
    if sslmode.is_some() {
        config.ssl_mode(ssl_mode);
    }
    let tls = tls::connector(&verify)?;
    Ok(Target {
        config,
        pool_size,
        tls,
    })
}

/// A tag unique to one store handle, carried in its notifications so that its
/// own subscribers can skip what it wrote itself.
fn new_origin() -> String {
    use std::hash::BuildHasher;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // RandomState is seeded randomly per process.
    let salt = std::collections::hash_map::RandomState::new().hash_one(n);
    format!("{:x}.{salt:x}", std::process::id())
}

/// Unix milliseconds now, by the wall clock (only used for the notify window).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The PostgreSQL [`Store`].
pub struct PgStore {
    pool: Pool,
    /// For the dedicated `LISTEN` connections.
    config: tokio_postgres::Config,
    tls: tls::RustlsConnect,
    notify_window_ms: i64,
    /// Every call gives up after this long (see [`PgStore::within`]).
    deadline: Duration,
    origin: String,
    listeners: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("pool", &self.pool.status())
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to the database `url` names (`postgres://user[:password]@host[:port]/db`,
    /// or `postgresql://`; `?pool_size=N` sets the pool size) and brings its schema
    /// up to date. Several nodes may open the same database at once.
    pub async fn open(url: &str, opts: &StoreOptions) -> Result<Self> {
        let statement_timeout_ms = opts.postgres.statement_timeout_ms;
        let Target {
            config,
            pool_size,
            tls,
        } = parse_target(url, statement_timeout_ms)?;
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(POOL_WAIT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| StoreError::unavailable(format!("postgres: building the pool: {e}")))?;
        let store = PgStore {
            pool,
            config,
            tls,
            notify_window_ms: opts.postgres.notify_window_ms,
            deadline: Duration::from_millis(statement_timeout_ms) + CALL_SLACK,
            origin: new_origin(),
            listeners: Mutex::new(Vec::new()),
        };
        {
            let mut client = store.client().await?;
            schema::migrate(&mut client).await?;
        }
        tracing::debug!(pool_size, origin = %store.origin, "opened postgres store");
        Ok(store)
    }

    /// A pooled connection.
    async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Backend(e) => pg_error("connecting", &e),
            other => StoreError::unavailable(format!("postgres: getting a connection: {other}")),
        })
    }

    /// Deletes a finished job in short transactions (see
    /// [`crate::CampaignStore::delete_job`]).
    async fn delete_job_in_batches(&self, id: i64) -> Result<crate::JobDeletion> {
        let mut first = true;
        loop {
            let step = self
                .within("delete_job", async {
                    self.retrying("delete_job", || {
                        retention::delete_job_step(self, id, crate::PURGE_BATCH)
                    })
                    .await
                })
                .await?;
            match step {
                None => first = false,
                // Gone between two steps: whoever finished it, it is deleted.
                Some(crate::JobDeletion::NotFound) if !first => {
                    return Ok(crate::JobDeletion::Deleted);
                }
                Some(done) => return Ok(done),
            }
        }
    }

    /// Runs one store call within its deadline. A call cut short is an
    /// unavailable store; dropping its future rolls back any transaction it
    /// had open, so it changed nothing, unless it was cut during `COMMIT`:
    /// then the outcome is unknown, which is why writes carry idempotency keys.
    async fn within<T>(
        &self,
        what: &'static str,
        call: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        match tokio::time::timeout(self.deadline, call).await {
            Ok(r) => r,
            Err(_) => {
                let ms = u64::try_from(self.deadline.as_millis()).unwrap_or(u64::MAX);
                tracing::warn!(what, deadline_ms = ms, "postgres call timed out");
                Err(StoreError::Unavailable {
                    code: None,
                    message: format!("postgres: {what}: no answer within {ms} ms"),
                })
            }
        }
    }

    /// Runs a transaction body again after a deadlock or serialization failure.
    async fn retrying<T, F, Fut>(&self, what: &'static str, mut body: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let mut attempt = 1;
        loop {
            match body().await {
                Err(e) if attempt < ATTEMPTS && retryable(&e) => {
                    tracing::debug!(what, attempt, error = %e, "retrying postgres transaction");
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(5 * attempt as u64)).await;
                }
                other => return other,
            }
        }
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        for handle in self.listeners.get_mut().drain(..) {
            handle.abort();
        }
    }
}

#[async_trait]
impl Store for PgStore {
    async fn init_shards(&self, wanted: u16) -> Result<u16> {
        self.within("init_shards", async move {
            self.retrying("init_shards", || timers::init_shards(self, wanted))
                .await
        })
        .await
    }

    async fn get_meta(&self, key: &str) -> Result<Option<String>> {
        self.within("get_meta", async move {
            let client = self.client().await?;
            let row = client
                .query_opt(crate::shared_sql::meta::GET.pg, &[&key])
                .await
                .ctx("reading meta")?;
            row.map(|r| crate::model::Columns::str(&r, 0, "meta.value").map(str::to_owned))
                .transpose()
        })
        .await
    }

    async fn put_meta(&self, key: &str, value: &str) -> Result<()> {
        self.within("put_meta", async move {
            let client = self.client().await?;
            client
                .execute(crate::shared_sql::meta::PUT.pg, &[&key, &value])
                .await
                .ctx("writing meta")?;
            Ok(())
        })
        .await
    }

    async fn purge(&self, kind: crate::RetentionKind, cutoff: i64, limit: usize) -> Result<u64> {
        self.within("purge", async move {
            self.retrying("purge", || retention::purge(self, kind, cutoff, limit))
                .await
        })
        .await
    }

    async fn maintain_partitions(
        &self,
        cutoffs: crate::PartitionCutoffs,
    ) -> Result<crate::PartitionChanges> {
        // No deadline: a drop's check reads a whole partition, and every
        // lock it waits for is bounded by `lock_timeout`.
        partitions::maintain(self, cutoffs).await
    }

    async fn report(&self, query: crate::ReportQuery) -> Result<Vec<crate::ReportRow>> {
        self.within("report", async move { reports::report(self, &query).await })
            .await
    }
}

#[async_trait]
impl TimerStore for PgStore {
    async fn pending_digests(&self, probes: &[crate::MergeProbe]) -> Result<Vec<TimerRecord>> {
        self.within("pending_digests", async move {
            if probes.is_empty() {
                return Ok(Vec::new());
            }
            digests::pending(self, probes).await
        })
        .await
    }

    async fn apply(&self, ops: Vec<WriteOp>) -> Result<Vec<WriteResult>> {
        self.within("apply", async move {
            if ops.is_empty() {
                return Ok(Vec::new());
            }
            self.retrying("apply", || apply::apply(self, &ops)).await
        })
        .await
    }

    async fn get_timer(&self, id: TimerId) -> Result<Option<TimerRecord>> {
        self.within(
            "get_timer",
            async move { timers::get_timer(self, id).await },
        )
        .await
    }

    async fn load_due(
        &self,
        shards: &herald_core::ShardSet,
        after: Option<DueCursor>,
        until: i64,
        limit: usize,
    ) -> Result<Vec<DueEntry>> {
        self.within("load_due", async move {
            if limit == 0 || shards.is_empty() {
                return Ok(Vec::new());
            }
            let only = (!shards.is_all()).then_some(shards);
            timers::load_due(self, only, after, until, limit).await
        })
        .await
    }

    async fn fetch_pending(&self, ids: &[TimerId]) -> Result<Vec<TimerRecord>> {
        self.within("fetch_pending", async move {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            timers::fetch_pending(self, ids).await
        })
        .await
    }

    async fn complete(&self, batch: Vec<Completion>) -> Result<Vec<Applied>> {
        self.within("complete", async move {
            if batch.is_empty() {
                return Ok(Vec::new());
            }
            self.retrying("complete", || timers::complete(self, &batch))
                .await
        })
        .await
    }

    async fn mark_firing(&self, marks: Vec<FiringMark>) -> Result<Vec<Applied>> {
        self.within("mark_firing", async move {
            if marks.is_empty() {
                return Ok(Vec::new());
            }
            self.retrying("mark_firing", || timers::mark_firing(self, &marks))
                .await
        })
        .await
    }

    async fn unmark_firing(&self, ids: Vec<TimerId>, at: i64) -> Result<u64> {
        self.within("unmark_firing", async move {
            if ids.is_empty() {
                return Ok(0);
            }
            self.retrying("unmark_firing", || timers::unmark_firing(self, &ids, at))
                .await
        })
        .await
    }

    async fn resolve_in_doubt(
        &self,
        fences: &[Fence],
        skip: &[String],
        at: i64,
    ) -> Result<InDoubtResolved> {
        self.within("resolve_in_doubt", async move {
            if fences.is_empty() {
                return Ok(InDoubtResolved::default());
            }
            self.retrying("resolve_in_doubt", || {
                timers::resolve_in_doubt(self, fences, skip, at)
            })
            .await
        })
        .await
    }

    async fn deliveries_for(&self, timer_id: TimerId) -> Result<Vec<DeliveryRecord>> {
        self.within("deliveries_for", async move {
            timers::deliveries_for(self, timer_id).await
        })
        .await
    }

    async fn search_timers(
        &self,
        tenant: TenantId,
        filter: &TimerFilter,
        after: Option<DueCursor>,
        limit: usize,
        order: SortOrder,
    ) -> Result<Vec<TimerRecord>> {
        timer_ops::search(self, tenant, filter, after, limit, order).await
    }

    async fn dead_letters(&self, tenant: TenantId, channel: Option<&str>) -> Result<DeadLetters> {
        timer_ops::dead_letters(self, tenant, channel.map(str::to_string)).await
    }

    async fn count_by_tenant_state(&self) -> Result<Vec<(TenantId, TimerState, u64)>> {
        self.within("count_by_tenant_state", timer_counts::counted(self))
            .await
    }

    async fn scan_by_tenant_state(&self) -> Result<Vec<(TenantId, TimerState, u64)>> {
        self.within("scan_by_tenant_state", timer_counts::scanned(self))
            .await
    }

    async fn fold_timer_counts(&self) -> Result<u64> {
        self.within("fold_timer_counts", timer_counts::fold(self))
            .await
    }

    async fn due_counts(
        &self,
        from: i64,
        until: i64,
        bucket_ms: i64,
        max_rows: u64,
    ) -> Result<DueCounts> {
        self.within(
            "due_counts",
            forecast::due_counts(self, from, until, bucket_ms, max_rows),
        )
        .await
    }
}

#[async_trait]
impl ClusterStore for PgStore {
    async fn heartbeat(&self, node: &Holder, now: i64, ttl_ms: i64) -> Result<Vec<NodeInfo>> {
        self.within("heartbeat", async move {
            cluster::heartbeat(self, node, now, ttl_ms).await
        })
        .await
    }

    async fn leave(&self, node: &Holder) -> Result<()> {
        self.within("leave", async move {
            self.retrying("leave", || cluster::leave(self, node)).await
        })
        .await
    }

    async fn shard_leases(&self) -> Result<Vec<ShardLease>> {
        self.within(
            "shard_leases",
            async move { cluster::shard_leases(self).await },
        )
        .await
    }

    async fn acquire_shards(
        &self,
        node: &Holder,
        shards: &[u16],
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<ShardLease>> {
        self.within("acquire_shards", async move {
            if shards.is_empty() {
                return Ok(Vec::new());
            }
            self.retrying("acquire_shards", || {
                cluster::acquire_shards(self, node, shards, now, lease_ms)
            })
            .await
        })
        .await
    }

    async fn renew_shards(
        &self,
        node: &Holder,
        held: &[Fence],
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<ShardLease>> {
        self.within("renew_shards", async move {
            if held.is_empty() {
                return Ok(Vec::new());
            }
            self.retrying("renew_shards", || {
                cluster::renew_shards(self, node, held, now, lease_ms)
            })
            .await
        })
        .await
    }

    async fn release_shards(&self, node: &Holder, shards: &[u16]) -> Result<()> {
        self.within("release_shards", async move {
            if shards.is_empty() {
                return Ok(());
            }
            self.retrying("release_shards", || {
                cluster::release_shards(self, node, shards)
            })
            .await
        })
        .await
    }

    async fn acquire_lease(
        &self,
        name: &str,
        holder: &Holder,
        now: i64,
        ttl_ms: i64,
    ) -> Result<Option<NamedLease>> {
        self.within("acquire_lease", async move {
            self.retrying("acquire_lease", || {
                cluster::acquire_lease(self, name, holder, now, ttl_ms)
            })
            .await
        })
        .await
    }

    async fn release_lease(&self, name: &str, holder: &Holder) -> Result<()> {
        self.within("release_lease", async move {
            cluster::release_lease(self, name, holder).await
        })
        .await
    }

    async fn subscribe(&self) -> Result<Option<tokio::sync::mpsc::Receiver<Vec<DueEntry>>>> {
        let (rx, handle) =
            notify::subscribe(self.config.clone(), self.tls.clone(), self.origin.clone()).await?;
        let mut listeners = self.listeners.lock();
        listeners.retain(|h| !h.is_finished());
        listeners.push(handle);
        Ok(Some(rx))
    }
}

#[async_trait]
impl ProviderStore for PgStore {
    async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryRecord>> {
        self.within("get_delivery", async move {
            provider::get_delivery(self, id).await
        })
        .await
    }

    async fn read_at_step(&self, timer_id: i64, step: u32) -> Result<bool> {
        self.within("read_at_step", async move {
            provider::read_at_step(self, timer_id, step).await
        })
        .await
    }

    async fn record_final_status(
        &self,
        channel: &str,
        provider_msgid: &str,
        status: &str,
        at: i64,
    ) -> Result<u64> {
        self.within("record_final_status", async move {
            self.retrying("record_final_status", || {
                provider::record_final_status(self, channel, provider_msgid, status, at)
            })
            .await
        })
        .await
    }

    async fn mark_delivery_recalled(&self, id: i64, at: i64) -> Result<bool> {
        self.within("mark_delivery_recalled", async move {
            provider::mark_delivery_recalled(self, id, at).await
        })
        .await
    }

    async fn record_receipt(
        &self,
        on: crate::ReceiptOn,
        event: crate::ReceiptEvent,
        at: i64,
    ) -> Result<bool> {
        self.within("record_receipt", async move {
            provider::record_receipt(self, on, event, at).await
        })
        .await
    }

    async fn job_receipt_counts(&self, job_id: i64) -> Result<crate::ReceiptCounts> {
        self.within("job_receipt_counts", async move {
            provider::job_receipt_counts(self, job_id).await
        })
        .await
    }

    async fn job_messages(&self, job_id: i64, limit: usize) -> Result<Vec<crate::JobMessage>> {
        self.within("job_messages", async move {
            provider::job_messages(self, job_id, limit).await
        })
        .await
    }

    async fn mark_job_message_recalled(&self, job_id: i64, msgid: &str, at: i64) -> Result<u64> {
        self.within("mark_job_message_recalled", async move {
            provider::mark_job_message_recalled(self, job_id, msgid, at).await
        })
        .await
    }

    async fn get_channel_token(&self, key: &str) -> Result<Option<ChannelToken>> {
        self.within("get_channel_token", async move {
            provider::get_channel_token(self, key).await
        })
        .await
    }

    async fn put_channel_token(&self, key: &str, token: &ChannelToken) -> Result<()> {
        self.within("put_channel_token", async move {
            provider::put_channel_token(self, key, token).await
        })
        .await
    }

    async fn expire_channel_token(&self, key: &str, token: &str, now: i64) -> Result<bool> {
        self.within("expire_channel_token", async move {
            provider::expire_channel_token(self, key, token, now).await
        })
        .await
    }

    async fn pause_channel(&self, channel: &str, pause: &ChannelPause, now: i64) -> Result<()> {
        self.within("pause_channel", async move {
            provider::pause_channel(self, channel, pause, now).await
        })
        .await
    }

    async fn resume_channel(&self, channel: &str) -> Result<bool> {
        self.within("resume_channel", async move {
            provider::resume_channel(self, channel).await
        })
        .await
    }

    async fn channel_pauses(&self) -> Result<Vec<(String, ChannelPause)>> {
        self.within("channel_pauses", async move {
            provider::channel_pauses(self).await
        })
        .await
    }
}

#[async_trait]
impl crate::CapStore for PgStore {
    async fn take_caps(
        &self,
        takes: Vec<crate::CapTake>,
        at: i64,
    ) -> Result<Vec<crate::CapVerdict>> {
        self.within("take_caps", async {
            self.retrying("take_caps", || caps::take(self, &takes, at))
                .await
        })
        .await
    }
}

#[async_trait]
impl crate::GrantStore for PgStore {
    async fn record_grants(&self, rec: crate::GrantRecording) -> Result<crate::GrantsRecorded> {
        self.within(
            "record_grants",
            async move { grants::record(self, &rec).await },
        )
        .await
    }

    async fn list_grants(
        &self,
        tenant: herald_core::TenantId,
        user_id: &str,
    ) -> Result<Vec<crate::GrantRecord>> {
        self.within("list_grants", async move {
            grants::list(self, tenant, user_id).await
        })
        .await
    }

    async fn settle_grants(&self, settles: Vec<crate::GrantSettle>, at: i64) -> Result<()> {
        self.within("settle_grants", async move {
            if settles.is_empty() {
                return Ok(());
            }
            self.retrying("settle_grants", || grants::settle(self, &settles, at))
                .await
        })
        .await
    }
}

#[async_trait]
impl crate::CalendarStore for PgStore {
    async fn put_calendar(&self, cal: &crate::CalendarRecord) -> Result<crate::CalendarRecord> {
        self.within(
            "put_calendar",
            async move { calendars::put(self, cal).await },
        )
        .await
    }

    async fn get_calendar(
        &self,
        tenant: TenantId,
        name: &str,
    ) -> Result<Option<crate::CalendarRecord>> {
        self.within("get_calendar", async move {
            calendars::get(self, tenant, name).await
        })
        .await
    }

    async fn list_calendars(&self, tenant: TenantId) -> Result<Vec<crate::CalendarRecord>> {
        self.within("list_calendars", async move {
            calendars::list(self, tenant).await
        })
        .await
    }
}

#[async_trait]
impl TemplateStore for PgStore {
    async fn put_template(
        &self,
        new: &NewTemplateVersion,
        how: TemplateWrite,
    ) -> Result<TemplateRecord> {
        self.within("put_template", async move {
            templates::put(self, new, how).await
        })
        .await
    }

    async fn template_census(&self) -> Result<TemplateCensus> {
        self.within(
            "template_census",
            async move { templates::census(self).await },
        )
        .await
    }

    async fn all_templates(&self) -> Result<Vec<TemplateRecord>> {
        self.within("all_templates", async move { templates::all(self).await })
            .await
    }
}

#[async_trait]
impl ReminderStore for PgStore {
    async fn get_subjects(
        &self,
        tenant: TenantId,
        ids: &[String],
    ) -> Result<Vec<crate::SubjectRecord>> {
        self.within("get_subjects", async move {
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let mut ids = ids.to_vec();
            ids.sort_unstable();
            ids.dedup();
            reminders::get_subjects(self, tenant, &ids).await
        })
        .await
    }

    async fn list_subjects(
        &self,
        tenant: TenantId,
        after: Option<&str>,
        limit: usize,
        cap: u64,
    ) -> Result<Vec<crate::SubjectSummary>> {
        self.within("list_subjects", async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            subjects::list(self, tenant, after.unwrap_or_default(), limit, cap).await
        })
        .await
    }

    async fn subject_summary(
        &self,
        tenant: TenantId,
        subject_id: &str,
        cap: u64,
    ) -> Result<Option<crate::SubjectSummary>> {
        self.within("subject_summary", async move {
            subjects::summary(self, tenant, subject_id, cap).await
        })
        .await
    }

    async fn subject_outcomes(
        &self,
        tenant: TenantId,
        subject_id: &str,
        cap: u64,
        errors: usize,
        failed: usize,
    ) -> Result<crate::SubjectOutcomes> {
        self.within("subject_outcomes", async move {
            subjects::outcomes(self, tenant, subject_id, cap, errors, failed).await
        })
        .await
    }

    async fn subject_failures(
        &self,
        tenant: TenantId,
        subject_id: &str,
        from: i64,
        until: i64,
        cap: u64,
    ) -> Result<u64> {
        self.within("subject_failures", async move {
            subjects::failures(self, tenant, subject_id, (from, until), cap).await
        })
        .await
    }

    async fn user_reminders(
        &self,
        tenant: TenantId,
        user_id: &str,
        limit: usize,
    ) -> Result<Vec<crate::ReminderTimer>> {
        self.within("user_reminders", async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            reminders::user_reminders(self, tenant, user_id, limit).await
        })
        .await
    }

    async fn pending_reminders(&self, probes: &[crate::MergeProbe]) -> Result<Vec<TimerRecord>> {
        self.within("pending_reminders", async move {
            if probes.is_empty() {
                return Ok(Vec::new());
            }
            reminders::pending_reminders(self, probes).await
        })
        .await
    }

    async fn reminder_batches(
        &self,
        scope: &crate::BatchScope,
    ) -> Result<Vec<crate::ReminderBatch>> {
        self.within("reminder_batches", async move {
            reminders::reminder_batches(self, scope).await
        })
        .await
    }

    async fn batch_due(
        &self,
        tenant: TenantId,
        subject_id: &str,
        bit: u8,
        due_at: i64,
        after: Option<TimerId>,
        limit: usize,
    ) -> Result<Vec<crate::DueEntry>> {
        self.within("batch_due", async move {
            reminders::batch_due(self, tenant, subject_id, bit, due_at, after, limit).await
        })
        .await
    }
}

#[async_trait]
impl DirectoryStore for PgStore {
    async fn get_subscribers(
        &self,
        tenant: TenantId,
        user_ids: &[String],
    ) -> Result<Vec<crate::SubscriberRecord>> {
        self.within("get_subscribers", async move {
            if user_ids.is_empty() {
                return Ok(Vec::new());
            }
            let mut ids = user_ids.to_vec();
            ids.sort_unstable();
            ids.dedup();
            directory::get_many(self, tenant, &ids).await
        })
        .await
    }

    async fn list_subscribers(
        &self,
        tenant: TenantId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<crate::SubscriberRecord>> {
        self.within("list_subscribers", async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            directory::list(self, tenant, after.unwrap_or_default(), limit).await
        })
        .await
    }
}

/// Whether a plan reads a table with rows from end to end: a `Seq Scan` of
/// an empty partition (no pages, nothing to read) is no scan.
#[cfg(test)]
pub(crate) fn scans_rows(plan: &str) -> bool {
    plan.lines()
        .any(|l| l.contains("Seq Scan") && !l.contains("cost=0.00..0.00"))
}

/// Makes the session's next plans custom (`auto`) or generic, as a cached
/// statement's plan may turn out; the EXPLAIN tests check both. Returns
/// the mode's name for their messages.
#[cfg(test)]
pub(crate) async fn set_plan_mode(client: &tokio_postgres::Client, generic: bool) -> &'static str {
    let mode = if generic {
        "force_generic_plan"
    } else {
        "auto"
    };
    client
        .batch_execute(&format!("SET plan_cache_mode = {mode}"))
        .await
        .expect("set plan_cache_mode");
    mode
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_and_without_our_parameters() {
        let t = parse_target("postgres://herald@db.example:5433/timers", 30_000).unwrap();
        assert_eq!(t.pool_size, DEFAULT_POOL_SIZE);
        assert_eq!(t.config.get_dbname(), Some("timers"));
        assert_eq!(t.config.get_user(), Some("herald"));
        assert_eq!(t.config.get_ports(), &[5433]);
        assert_eq!(t.config.get_application_name(), Some("herald"));
        let t = parse_target(
            "postgresql://u:pw@h/db?application_name=node-a&pool_size=4&connect_timeout=3",
            30_000,
        )
        .unwrap();
        assert_eq!(t.pool_size, 4);
        assert_eq!(t.config.get_application_name(), Some("node-a"));
        assert_eq!(
            t.config.get_connect_timeout(),
            Some(&Duration::from_secs(3))
        );
        assert_eq!(t.config.get_password(), Some(&b"pw"[..]));
        assert!(parse_target("postgres://h/db?pool_size=0", 1).is_err());
        assert!(parse_target("postgres://h/db?pool_size=x", 1).is_err());
        let e = parse_target("postgres://h/db?bogus=1", 1).err().unwrap();
        assert!(e.to_string().contains("bogus"), "{e}");
        use tokio_postgres::config::SslMode;
        let mode = |url: &str| parse_target(url, 1).unwrap().config.get_ssl_mode();
        assert_eq!(mode("postgres://h/db"), SslMode::Prefer);
        assert_eq!(mode("postgres://h/db?sslmode=disable"), SslMode::Disable);
        assert_eq!(mode("postgres://h/db?sslmode=require"), SslMode::Require);
        assert_eq!(
            mode("postgres://h/db?sslmode=verify-full"),
            SslMode::Require
        );
        assert!(parse_target("postgres://h/db?sslmode=verify-ca", 1).is_err());
        let e = parse_target(
            "postgres://h/db?sslmode=verify-full&sslrootcert=/no/ca.pem",
            1,
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("/no/ca.pem"), "{e}");
    }

    #[test]
    fn only_deadlocks_and_serialization_failures_are_retried() {
        let e = |code: &str| StoreError::Unavailable {
            code: Some(code.to_string()),
            message: format!("postgres: apply: ERROR {code}"),
        };
        assert!(retryable(&e("40P01")));
        assert!(retryable(&e("40001")));
        assert!(!retryable(&e("57P01")));
        assert!(!retryable(&StoreError::unavailable(
            "40P01 in the text only"
        )));
        assert!(!retryable(&StoreError::Corrupt("40P01".into())));
    }

    #[test]
    fn origins_differ_per_handle() {
        assert_ne!(new_origin(), new_origin());
        assert!(!new_origin().contains(['|', ';', ',']));
    }
}
