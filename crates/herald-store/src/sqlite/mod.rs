//! SQLite backend: the embedded default store.
//!
//! The files mirror the PostgreSQL backend's: `schema` (migrations),
//! `timers`, `reminders`, `cluster`, `provider` and `campaign` hold each
//! area's SQL; `apply` runs a group-commit batch. What only SQLite needs has
//! its own: `pool` (opening connections and handing them to reads and
//! writes) and `checkpointer` (the WAL checkpoints off the write path).
//!
//! # Connections
//!
//! There is exactly one writer connection (SQLite serializes writers anyway,
//! so a second one would only wait on the lock) and `read_connections` reader
//! connections; a read goes to an idle reader if there is one. An in-memory
//! store has a single connection that serves both reads and writes (each
//! in-memory connection is its own database). Methods must be called from
//! within a tokio runtime.
//!
//! # Atomicity
//!
//! Every write method runs inside one `BEGIN IMMEDIATE` transaction on the writer
//! connection. Any statement error returns early through `?`, which drops the
//! rusqlite `Transaction` and rolls it back; only when every op succeeded is
//! `commit` called. Per-op outcomes that are not errors (duplicate idempotency key,
//! cancel of a non-pending timer, stale completion) are detected with
//! `ON CONFLICT DO NOTHING` / guarded `UPDATE ... WHERE` and never raise an SQL
//! error, so they cannot abort the batch. With `synchronous=full` the commit has
//! been fsynced to the WAL before the method returns `Ok`. Readers use WAL
//! snapshots: a single read statement sees either all of a batch or none of it.
//!
//! If the caller's future is dropped after a query was handed to the blocking pool,
//! the query still runs to completion (a write still commits); the caller just
//! never sees the answer.

mod access;
mod apply;
pub mod backup;
mod calendars;
mod campaign;
mod caps;
mod checkpointer;
mod cluster;
mod digests;
mod directory;
mod error;
mod filer;
mod files;
mod forecast;
mod grants;
mod pool;
mod provider;
mod reminders;
mod reports;
mod retention;
mod schema;
pub mod seed;
mod subjects;
mod templates;
mod timer_counts;
mod timer_ops;
mod timers;

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use herald_core::{TenantId, TimerId, TimerState};
use rusqlite::Connection;

use checkpointer::Checkpointer;
use error::Ctx;
use pool::{ConnPool, Role};

use crate::{
    Applied, ChannelPause, ChannelToken, ClusterStore, Completion, DeadLetters, DeliveryRecord,
    DirectoryStore, DueCounts, DueCursor, DueEntry, Fence, FiringMark, Holder, InDoubtResolved,
    MergeProbe, NamedLease, NewTemplateVersion, NodeInfo, ProviderStore, ReminderStore,
    ReminderTimer, Result, ShardLease, SortOrder, Store, StoreError, StoreOptions, SubjectRecord,
    TemplateCensus, TemplateRecord, TemplateStore, TemplateWrite, TimerFilter, TimerRecord,
    TimerStore, WriteOp, WriteResult,
};

/// The SQLite [`Store`].
pub struct SqliteStore {
    // Dropped in declaration order: the filer stops first, readers and
    // checkpointer close next, so the writer is the last connection and
    // checkpoints the WAL away on close.
    /// Files new timers for search (see [`filer`]); `None` without a runtime.
    _filer: Option<filer::Filer>,
    /// `None` when reads go to the writer (in-memory store, or `read_connections = 0`).
    readers: Option<ConnPool>,
    /// `None` for an in-memory store (no WAL).
    checkpointer: Option<Arc<Checkpointer>>,
    writer: Arc<ConnPool>,
}

impl SqliteStore {
    /// Deletes a finished job in short transactions (see
    /// [`crate::CampaignStore::delete_job`]).
    async fn delete_job_in_batches(&self, id: i64) -> Result<crate::JobDeletion> {
        let mut first = true;
        loop {
            let step = self
                .write(move |c| retention::delete_job_step(c, id, crate::PURGE_BATCH))
                .await?;
            match step {
                None => first = false,
                // Gone between two steps: whoever finished it, it is deleted.
                Some(crate::JobDeletion::NotFound) if !first => {
                    return Ok(crate::JobDeletion::Deleted);
                }
                Some(done) => return Ok(done),
            }
            tokio::task::yield_now().await;
        }
    }

    /// Opens (creating if missing, with its directory) the database file at `path`
    /// and brings its schema up to date. The file, its companions and a
    /// directory it creates are owner-only (see [`files`]).
    pub async fn open(path: impl AsRef<Path>, opts: &StoreOptions) -> Result<Self> {
        let sync = opts.sqlite.synchronous;
        let path = path.as_ref().to_path_buf();
        let readers = opts.sqlite.read_connections;
        let max_pages = opts.sqlite.max_page_count;
        let conns = tokio::task::spawn_blocking(move || {
            if !path.as_os_str().is_empty() {
                // A directory at the path would be opened fine here and
                // refused by SQLite without saying why.
                if path.is_dir() {
                    let e = std::io::Error::from(std::io::ErrorKind::IsADirectory);
                    return Err(StoreError::refused("store", files::problem(&path, &e)));
                }
                files::prepare_database_file(&path).map_err(|e| match e.kind() {
                    std::io::ErrorKind::PermissionDenied
                    | std::io::ErrorKind::NotADirectory
                    | std::io::ErrorKind::IsADirectory
                    // A file where a directory of the path should be.
                    | std::io::ErrorKind::AlreadyExists => {
                        StoreError::refused("store", files::problem(&path, &e))
                    }
                    _ => StoreError::unavailable(format!(
                        "sqlite: preparing {}: {}",
                        path.display(),
                        files::problem(&path, &e)
                    )),
                })?;
            }
            let conns = pool::open_file_connections(&path, sync, readers)?;
            pool::cap_pages(&conns.writer, max_pages)?;
            Ok::<_, StoreError>(conns)
        })
        .await
        .map_err(|e| StoreError::unavailable(format!("opening sqlite store: {e}")))??;
        let checkpointer = Checkpointer::start(conns.checkpointer)?;
        Ok(Self::start(conns.writer, conns.readers, Some(checkpointer)))
    }

    /// A private in-memory database, for tests: one connection serves reads and
    /// writes. `read_connections` is ignored.
    pub async fn open_memory(opts: &StoreOptions) -> Result<Self> {
        let sync = opts.sqlite.synchronous;
        let max_pages = opts.sqlite.max_page_count;
        let writer = tokio::task::spawn_blocking(move || -> Result<Connection> {
            let mut conn = Connection::open_in_memory().ctx("opening in-memory database")?;
            pool::configure(&conn, Role::Writer(sync))?;
            schema::migrate(&mut conn)?;
            pool::cap_pages(&conn, max_pages)?;
            Ok(conn)
        })
        .await
        .map_err(|e| StoreError::unavailable(format!("opening sqlite store: {e}")))??;
        Ok(Self::start(writer, Vec::new(), None))
    }

    fn start(
        writer: Connection,
        readers: Vec<Connection>,
        checkpointer: Option<Checkpointer>,
    ) -> Self {
        let readers = if readers.is_empty() {
            None
        } else {
            Some(ConnPool::new("reader", readers))
        };
        let writer = Arc::new(ConnPool::new("writer", vec![writer]));
        let checkpointer = checkpointer.map(Arc::new);
        SqliteStore {
            _filer: filer::Filer::start(&writer, checkpointer.as_ref()),
            readers,
            checkpointer,
            writer,
        }
    }

    async fn read<R, F>(&self, f: F) -> Result<R>
    where
        F: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        self.readers.as_ref().unwrap_or(&self.writer).call(f).await
    }

    async fn write<R, F>(&self, f: F) -> Result<R>
    where
        F: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let result = self.writer.call(f).await;
        if let Some(c) = &self.checkpointer {
            c.poke();
        }
        result
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn init_shards(&self, wanted: u16) -> Result<u16> {
        self.write(move |c| timers::init_shards(c, wanted)).await
    }

    async fn get_meta(&self, key: &str) -> Result<Option<String>> {
        let key = key.to_string();
        self.read(move |c| {
            use rusqlite::OptionalExtension;
            c.prepare_cached(crate::shared_sql::meta::GET.sqlite)
                .ctx("preparing meta read")?
                .query_row([key], |r| r.get(0))
                .optional()
                .ctx("reading meta")
        })
        .await
    }

    async fn put_meta(&self, key: &str, value: &str) -> Result<()> {
        let (key, value) = (key.to_string(), value.to_string());
        self.write(move |c| {
            c.prepare_cached(crate::shared_sql::meta::PUT.sqlite)
                .ctx("preparing meta write")?
                .execute([key, value])
                .ctx("writing meta")?;
            Ok(())
        })
        .await
    }

    async fn purge(&self, kind: crate::RetentionKind, cutoff: i64, limit: usize) -> Result<u64> {
        self.write(move |c| retention::purge(c, kind, cutoff, limit))
            .await
    }

    async fn maintain_partitions(
        &self,
        _cutoffs: crate::PartitionCutoffs,
    ) -> Result<crate::PartitionChanges> {
        // One file, no partitions: the purge deletes every old row.
        Ok(crate::PartitionChanges::default())
    }

    async fn report(&self, query: crate::ReportQuery) -> Result<Vec<crate::ReportRow>> {
        self.read(move |c| reports::report(c, &query)).await
    }
}

#[async_trait]
impl TimerStore for SqliteStore {
    async fn apply(&self, ops: Vec<WriteOp>) -> Result<Vec<WriteResult>> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        self.write(move |c| apply::apply(c, ops)).await
    }

    async fn get_timer(&self, id: TimerId) -> Result<Option<TimerRecord>> {
        self.read(move |c| timers::get_timer(c, id)).await
    }

    async fn load_due(
        &self,
        shards: &herald_core::ShardSet,
        after: Option<DueCursor>,
        until: i64,
        limit: usize,
    ) -> Result<Vec<DueEntry>> {
        if limit == 0 || shards.is_empty() {
            return Ok(Vec::new());
        }
        let mask = (!shards.is_all()).then(|| shards.to_bytes());
        self.read(move |c| timers::load_due(c, mask, after, until, limit))
            .await
    }

    async fn fetch_pending(&self, ids: &[TimerId]) -> Result<Vec<TimerRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.read(move |c| timers::fetch_pending(c, ids)).await
    }

    async fn complete(&self, batch: Vec<Completion>) -> Result<Vec<Applied>> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        self.write(move |c| timers::complete(c, batch)).await
    }

    async fn mark_firing(&self, marks: Vec<FiringMark>) -> Result<Vec<Applied>> {
        if marks.is_empty() {
            return Ok(Vec::new());
        }
        self.write(move |c| timers::mark_firing(c, marks)).await
    }

    async fn unmark_firing(&self, ids: Vec<TimerId>, at: i64) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        self.write(move |c| timers::unmark_firing(c, &ids, at))
            .await
    }

    async fn resolve_in_doubt(
        &self,
        fences: &[Fence],
        skip: &[String],
        at: i64,
    ) -> Result<InDoubtResolved> {
        if fences.is_empty() {
            return Ok(InDoubtResolved::default());
        }
        let (fences, skip) = (fences.to_vec(), skip.to_vec());
        self.write(move |c| timers::resolve_in_doubt(c, &fences, &skip, at))
            .await
    }

    async fn deliveries_for(&self, timer_id: TimerId) -> Result<Vec<DeliveryRecord>> {
        self.read(move |c| timers::deliveries_for(c, timer_id))
            .await
    }

    async fn pending_digests(&self, probes: &[MergeProbe]) -> Result<Vec<TimerRecord>> {
        if probes.is_empty() {
            return Ok(Vec::new());
        }
        let probes = probes.to_vec();
        self.read(move |c| digests::pending(c, probes)).await
    }

    async fn search_timers(
        &self,
        tenant: TenantId,
        filter: &TimerFilter,
        after: Option<DueCursor>,
        limit: usize,
        order: SortOrder,
    ) -> Result<Vec<TimerRecord>> {
        let filter = filter.clone();
        self.read(move |c| timer_ops::search(c, tenant, &filter, after, limit, order))
            .await
    }

    async fn dead_letters(&self, tenant: TenantId, channel: Option<&str>) -> Result<DeadLetters> {
        let channel = channel.map(str::to_string);
        self.read(move |c| timer_ops::dead_letters(c, tenant, channel))
            .await
    }

    async fn count_by_tenant_state(&self) -> Result<Vec<(TenantId, TimerState, u64)>> {
        self.read(|c| timer_counts::counted(c)).await
    }

    async fn scan_by_tenant_state(&self) -> Result<Vec<(TenantId, TimerState, u64)>> {
        self.read(|c| timer_counts::scanned(c)).await
    }

    async fn fold_timer_counts(&self) -> Result<u64> {
        // The triggers update the counters in place: nothing to fold.
        Ok(0)
    }

    async fn unfiled_since(&self) -> Result<Option<i64>> {
        self.read(filer::oldest_unfiled).await
    }

    async fn due_counts(
        &self,
        from: i64,
        until: i64,
        bucket_ms: i64,
        max_rows: u64,
    ) -> Result<DueCounts> {
        self.read(move |c| forecast::due_counts(c, from, until, bucket_ms, max_rows))
            .await
    }
}

#[async_trait]
impl ClusterStore for SqliteStore {
    async fn heartbeat(&self, node: &Holder, now: i64, ttl_ms: i64) -> Result<Vec<NodeInfo>> {
        let node = node.clone();
        self.write(move |c| cluster::heartbeat(c, &node, now, ttl_ms))
            .await
    }

    async fn leave(&self, node: &Holder) -> Result<()> {
        let node = node.clone();
        self.write(move |c| cluster::leave(c, &node)).await
    }

    async fn shard_leases(&self) -> Result<Vec<ShardLease>> {
        // From the writer: a node deciding what to claim must see the latest claims.
        self.write(cluster::shard_leases).await
    }

    async fn acquire_shards(
        &self,
        node: &Holder,
        shards: &[u16],
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<ShardLease>> {
        let (node, shards) = (node.clone(), shards.to_vec());
        self.write(move |c| cluster::acquire_shards(c, &node, &shards, now, lease_ms))
            .await
    }

    async fn renew_shards(
        &self,
        node: &Holder,
        held: &[Fence],
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<ShardLease>> {
        let (node, held) = (node.clone(), held.to_vec());
        self.write(move |c| cluster::renew_shards(c, &node, &held, now, lease_ms))
            .await
    }

    async fn release_shards(&self, node: &Holder, shards: &[u16]) -> Result<()> {
        let (node, shards) = (node.clone(), shards.to_vec());
        self.write(move |c| cluster::release_shards(c, &node, &shards))
            .await
    }

    async fn acquire_lease(
        &self,
        name: &str,
        holder: &Holder,
        now: i64,
        ttl_ms: i64,
    ) -> Result<Option<NamedLease>> {
        let (name, holder) = (name.to_string(), holder.clone());
        self.write(move |c| cluster::acquire_lease(c, &name, &holder, now, ttl_ms))
            .await
    }

    async fn release_lease(&self, name: &str, holder: &Holder) -> Result<()> {
        let (name, holder) = (name.to_string(), holder.clone());
        self.write(move |c| cluster::release_lease(c, &name, &holder))
            .await
    }

    async fn subscribe(&self) -> Result<Option<tokio::sync::mpsc::Receiver<Vec<DueEntry>>>> {
        // Only this process writes an embedded store: it wheels its own timers.
        Ok(None)
    }
}

#[async_trait]
impl ProviderStore for SqliteStore {
    async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryRecord>> {
        self.read(move |c| provider::get_delivery(c, id)).await
    }

    async fn read_at_step(&self, timer_id: i64, step: u32) -> Result<bool> {
        self.read(move |c| provider::read_at_step(c, timer_id, step))
            .await
    }

    async fn record_final_status(
        &self,
        channel: &str,
        provider_msgid: &str,
        status: &str,
        at: i64,
    ) -> Result<u64> {
        let (channel, msgid, status) = (
            channel.to_string(),
            provider_msgid.to_string(),
            status.to_string(),
        );
        self.write(move |c| provider::record_final_status(c, &channel, &msgid, &status, at))
            .await
    }

    async fn mark_delivery_recalled(&self, id: i64, at: i64) -> Result<bool> {
        self.write(move |c| provider::mark_delivery_recalled(c, id, at))
            .await
    }

    async fn record_receipt(
        &self,
        on: crate::ReceiptOn,
        event: crate::ReceiptEvent,
        at: i64,
    ) -> Result<bool> {
        self.write(move |c| provider::record_receipt(c, on, event, at))
            .await
    }

    async fn job_receipt_counts(&self, job_id: i64) -> Result<crate::ReceiptCounts> {
        self.read(move |c| provider::job_receipt_counts(c, job_id))
            .await
    }

    async fn job_messages(&self, job_id: i64, limit: usize) -> Result<Vec<crate::JobMessage>> {
        self.read(move |c| provider::job_messages(c, job_id, limit))
            .await
    }

    async fn mark_job_message_recalled(&self, job_id: i64, msgid: &str, at: i64) -> Result<u64> {
        let msgid = msgid.to_string();
        self.write(move |c| provider::mark_job_message_recalled(c, job_id, &msgid, at))
            .await
    }

    async fn get_channel_token(&self, key: &str) -> Result<Option<ChannelToken>> {
        let key = key.to_string();
        self.read(move |c| provider::get_channel_token(c, &key))
            .await
    }

    async fn put_channel_token(&self, key: &str, token: &ChannelToken) -> Result<()> {
        let (key, token) = (key.to_string(), token.clone());
        self.write(move |c| provider::put_channel_token(c, &key, &token))
            .await
    }

    async fn expire_channel_token(&self, key: &str, token: &str, now: i64) -> Result<bool> {
        let (key, token) = (key.to_string(), token.to_string());
        self.write(move |c| provider::expire_channel_token(c, &key, &token, now))
            .await
    }

    async fn pause_channel(&self, channel: &str, pause: &ChannelPause, now: i64) -> Result<()> {
        let (channel, pause) = (channel.to_string(), pause.clone());
        self.write(move |c| provider::pause_channel(c, &channel, &pause, now))
            .await
    }

    async fn resume_channel(&self, channel: &str) -> Result<bool> {
        let channel = channel.to_string();
        self.write(move |c| provider::resume_channel(c, &channel))
            .await
    }

    async fn channel_pauses(&self) -> Result<Vec<(String, ChannelPause)>> {
        self.read(provider::channel_pauses).await
    }
}

#[async_trait]
impl crate::CapStore for SqliteStore {
    async fn take_caps(
        &self,
        takes: Vec<crate::CapTake>,
        at: i64,
    ) -> Result<Vec<crate::CapVerdict>> {
        if takes.iter().all(|t| t.checks.is_empty()) {
            return Ok(vec![crate::CapVerdict::Taken; takes.len()]);
        }
        self.write(move |c| caps::take(c, &takes, at)).await
    }
}

#[async_trait]
impl crate::CalendarStore for SqliteStore {
    async fn put_calendar(&self, cal: &crate::CalendarRecord) -> Result<crate::CalendarRecord> {
        let cal = cal.clone();
        self.write(move |c| calendars::put(c, &cal)).await
    }

    async fn get_calendar(
        &self,
        tenant: TenantId,
        name: &str,
    ) -> Result<Option<crate::CalendarRecord>> {
        let name = name.to_string();
        self.read(move |c| calendars::get(c, tenant, &name)).await
    }

    async fn list_calendars(&self, tenant: TenantId) -> Result<Vec<crate::CalendarRecord>> {
        self.read(move |c| calendars::list(c, tenant)).await
    }
}

#[async_trait]
impl TemplateStore for SqliteStore {
    async fn put_template(
        &self,
        new: &NewTemplateVersion,
        how: TemplateWrite,
    ) -> Result<TemplateRecord> {
        let new = new.clone();
        self.write(move |c| templates::put(c, &new, how)).await
    }

    async fn template_census(&self) -> Result<TemplateCensus> {
        self.read(templates::census).await
    }

    async fn all_templates(&self) -> Result<Vec<TemplateRecord>> {
        self.read(templates::all).await
    }
}

#[async_trait]
impl crate::GrantStore for SqliteStore {
    async fn record_grants(&self, rec: crate::GrantRecording) -> Result<crate::GrantsRecorded> {
        self.write(move |c| grants::record(c, &rec)).await
    }

    async fn list_grants(
        &self,
        tenant: herald_core::TenantId,
        user_id: &str,
    ) -> Result<Vec<crate::GrantRecord>> {
        let user = user_id.to_string();
        self.read(move |c| grants::list(c, tenant, &user)).await
    }

    async fn settle_grants(&self, settles: Vec<crate::GrantSettle>, at: i64) -> Result<()> {
        if settles.is_empty() {
            return Ok(());
        }
        self.write(move |c| grants::settle(c, &settles, at)).await
    }
}

#[async_trait]
impl ReminderStore for SqliteStore {
    async fn get_subjects(&self, tenant: TenantId, ids: &[String]) -> Result<Vec<SubjectRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.read(move |c| reminders::get_subjects(c, tenant, ids))
            .await
    }

    async fn list_subjects(
        &self,
        tenant: TenantId,
        after: Option<&str>,
        limit: usize,
        cap: u64,
    ) -> Result<Vec<crate::SubjectSummary>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let after = after.map(str::to_string);
        self.read(move |c| subjects::list(c, tenant, after, limit, cap))
            .await
    }

    async fn subject_summary(
        &self,
        tenant: TenantId,
        subject_id: &str,
        cap: u64,
    ) -> Result<Option<crate::SubjectSummary>> {
        let subject_id = subject_id.to_string();
        self.read(move |c| subjects::summary(c, tenant, subject_id, cap))
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
        let subject_id = subject_id.to_string();
        self.read(move |c| subjects::outcomes(c, tenant, &subject_id, cap, errors, failed))
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
        let subject_id = subject_id.to_string();
        self.read(move |c| subjects::failures(c, tenant, &subject_id, (from, until), cap))
            .await
    }

    async fn user_reminders(
        &self,
        tenant: TenantId,
        user_id: &str,
        limit: usize,
    ) -> Result<Vec<ReminderTimer>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let user_id = user_id.to_string();
        self.read(move |c| reminders::user_reminders(c, tenant, &user_id, limit))
            .await
    }

    async fn pending_reminders(&self, probes: &[MergeProbe]) -> Result<Vec<TimerRecord>> {
        if probes.is_empty() {
            return Ok(Vec::new());
        }
        let probes = probes.to_vec();
        self.read(move |c| reminders::pending_reminders(c, probes))
            .await
    }

    async fn reminder_batches(
        &self,
        scope: &crate::BatchScope,
    ) -> Result<Vec<crate::ReminderBatch>> {
        let scope = scope.clone();
        self.read(move |c| reminders::reminder_batches(c, &scope))
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
        let subject_id = subject_id.to_string();
        self.read(move |c| reminders::batch_due(c, tenant, &subject_id, bit, due_at, after, limit))
            .await
    }
}

#[async_trait]
impl DirectoryStore for SqliteStore {
    async fn get_subscribers(
        &self,
        tenant: TenantId,
        user_ids: &[String],
    ) -> Result<Vec<crate::SubscriberRecord>> {
        if user_ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = user_ids.to_vec();
        self.read(move |c| directory::get_many(c, tenant, ids))
            .await
    }

    async fn list_subscribers(
        &self,
        tenant: TenantId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<crate::SubscriberRecord>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let after = after.map(str::to_string);
        self.read(move |c| directory::list(c, tenant, after, limit))
            .await
    }
}

/// Helpers for the SQLite modules' unit tests.
#[cfg(test)]
mod testing {
    use rusqlite::Connection;

    use super::pool::{self, Role};
    use super::schema;
    use crate::Synchronous;

    /// An in-memory database configured as a writer, with no schema yet.
    pub(super) fn configured() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        pool::configure(&conn, Role::Writer(Synchronous::Normal)).unwrap();
        conn
    }

    /// Whether every scan of `timers` in plan `p` is the walk of the short
    /// index of unfiled timers (migration `0042_search_filing`), never of
    /// the table or another index.
    pub(super) fn scans_only_unfiled(p: &str) -> bool {
        p.lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with("SCAN timers") || l.starts_with("SCAN t "))
            .all(|l| l.contains("INDEX timers_unfiled"))
    }

    /// An in-memory database configured as a writer, at the latest schema.
    pub(super) fn migrated() -> Connection {
        let mut conn = configured();
        schema::migrate(&mut conn).unwrap();
        conn
    }

    /// The query plan of `sql` (one line per step), with 1 bound to every parameter.
    pub(super) fn plan(conn: &Connection, sql: &str) -> String {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let n = stmt.parameter_count();
        let rows = stmt
            .query_map(rusqlite::params_from_iter(vec![1i64; n]), |r| {
                r.get::<_, String>(3)
            })
            .unwrap();
        rows.map(|r| r.unwrap()).collect::<Vec<_>>().join("\n")
    }
}
