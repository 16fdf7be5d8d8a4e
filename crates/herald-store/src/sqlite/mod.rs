//! SQLite backend: the embedded default store.
//!
//! # Threads
//!
//! rusqlite connections are blocking, so every query runs on tokio's blocking
//! pool (`spawn_blocking`) with a connection taken from a small pool, each
//! connection behind a mutex. There is exactly one writer connection (SQLite
//! serializes writers anyway, so a second one would only wait on the lock) and
//! `read_connections` reader connections; a read goes to an idle reader if there
//! is one. Dedicated threads fed by channels were tried first and measured
//! slower on the two-core target: about 45 µs against 25 µs per point read, and
//! 60 µs against 17 µs for an empty round trip. The statement cache lives with
//! each connection, so it stays warm whichever thread uses it. An in-memory
//! store has a single connection that serves both reads and writes (each
//! in-memory connection is its own database). Methods must be called from
//! within a tokio runtime.
//!
//! # Checkpoints
//!
//! SQLite's automatic WAL checkpoint runs inside the commit of whichever write
//! crosses the threshold, which roughly doubled the cost of large batches. A file
//! store therefore has one more thread and connection, the checkpointer: the
//! writer pokes it after each write and it runs `wal_checkpoint(PASSIVE)` (at most
//! every [`CHECKPOINT_INTERVAL`]) beside the writer, which keeps committing
//! meanwhile. Checkpoints never change what is durable: a commit is durable once
//! it is in the WAL (fsynced there with `synchronous=full`).
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

mod campaign;
mod cluster;
mod provider;
mod reminders;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use herald_core::{TimerId, TimerState};
use parking_lot::Mutex;
use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};

use crate::model::{self, delivery_cols, due_cols, timer_cols};
use crate::{
    Applied, ChannelToken, Completion, CompletionOutcome, DeliveryRecord, DueCursor, DueEntry,
    Fence, NamedLease, NodeInfo, Result, ShardLease, Store, StoreError, StoreOptions, TimerRecord,
    WriteOp, WriteResult,
};

/// How long a connection waits for a lock held by another connection (another
/// process on the same file, or a checkpoint) before giving up with `SQLITE_BUSY`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Page cache of the writer, in KiB (negative `cache_size` means KiB).
const WRITER_CACHE_KIB: i64 = 64 * 1024;
/// Page cache of each reader, in KiB.
const READER_CACHE_KIB: i64 = 16 * 1024;
/// After a checkpoint the WAL file is truncated to at most this many bytes.
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;
/// The background checkpointer runs at most this often, so a stream of small
/// commits costs one checkpoint (and its fsync) per interval, not one per commit.
const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(50);
/// When the WAL holds more frames (pages) than this after a passive checkpoint,
/// the checkpointer runs a RESTART checkpoint, which briefly holds writers back so
/// the WAL can start over from the beginning instead of growing without bound
/// under a continuous write load.
const WAL_RESTART_FRAMES: i64 = 16_384;
/// The writer's own automatic checkpoint, only a backstop in case the background
/// checkpointer cannot run; far above what the checkpointer lets the WAL reach.
const WRITER_AUTOCHECKPOINT_FRAMES: i64 = 65_536;
/// Prepared statements kept per connection (all hot statements plus the IN-list sizes).
const STATEMENT_CACHE: usize = 64;

/// Schema migrations, applied in order; `PRAGMA user_version` is the number applied.
/// Append new entries, never edit old ones.
///
/// State codes are `TimerState::code()`: 0 pending, 2 done, 3 failed, 4 cancelled,
/// 5 dead. `timers.id` is `AUTOINCREMENT` so an id is never reused even if old rows
/// are purged one day: `herald-timer-{id}` is the delivery key of timers without an
/// idempotency key, and a reused id would make providers drop a new message as a
/// duplicate of an old one.
const MIGRATIONS: &[&str] = &[
    // 1: timers, send log, meta.
    "CREATE TABLE timers (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        shard           INTEGER NOT NULL,
        due_at          INTEGER NOT NULL,
        priority        INTEGER NOT NULL,
        kind            TEXT    NOT NULL,
        state           INTEGER NOT NULL,
        channel         TEXT    NOT NULL,
        recipient       TEXT    NOT NULL,
        message         TEXT    NOT NULL,
        idempotency_key TEXT,
        attempts        INTEGER NOT NULL DEFAULT 0,
        last_error      TEXT,
        created_at      INTEGER NOT NULL,
        updated_at      INTEGER NOT NULL,
        delivered_at    INTEGER
    ) STRICT;
    CREATE INDEX timers_pending_due ON timers (due_at, id) WHERE state = 0;
    CREATE UNIQUE INDEX timers_idempotency_key ON timers (idempotency_key)
        WHERE idempotency_key IS NOT NULL;
    CREATE TABLE deliveries (
        id              INTEGER PRIMARY KEY,
        timer_id        INTEGER NOT NULL,
        attempt         INTEGER NOT NULL,
        channel         TEXT    NOT NULL,
        outcome         TEXT    NOT NULL,
        idempotency_key TEXT    NOT NULL,
        provider_msgid  TEXT,
        status          INTEGER,
        error           TEXT,
        started_at      INTEGER NOT NULL,
        finished_at     INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX deliveries_timer ON deliveries (timer_id);
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) STRICT, WITHOUT ROWID;",
    // 2: cluster membership, shard leases, named leases.
    cluster::SCHEMA,
    // 3: subjects and reminder subscriptions.
    reminders::SCHEMA,
    // 4: audiences, rules, tasks, jobs, segments, job send log.
    campaign::SCHEMA,
    // 5: final delivery status on both send logs, channel access tokens.
    provider::SCHEMA,
    // 6: index columns end in `_idx` on both backends.
    "ALTER TABLE segments RENAME COLUMN cursor TO cursor_idx;",
];

// The SQL below writes state codes as literals (partial indexes need literals to be
// usable); a unit test checks they match `TimerState::code()`.

const INSERT_TIMER: &str = "INSERT INTO timers \
    (shard, due_at, priority, kind, state, channel, recipient, message, idempotency_key, \
     attempts, created_at, updated_at) \
    VALUES (?1, ?2, ?3, ?4, 0, ?5, ?6, ?7, ?8, 0, ?9, ?9) \
    ON CONFLICT DO NOTHING";
const TIMER_BY_ID: &str = concat!("SELECT ", timer_cols!(), " FROM timers WHERE id = ?1");
const TIMER_BY_KEY: &str = concat!(
    "SELECT ",
    timer_cols!(),
    " FROM timers WHERE idempotency_key = ?1"
);
const CANCEL_TIMER: &str = concat!(
    "UPDATE timers SET state = 4, updated_at = ?2 WHERE id = ?1 AND state = 0 RETURNING ",
    timer_cols!()
);
// Keyset paging over `(due_at, id)`. SQLite cannot seek an index with the row value
// `(due_at, id) > (?, ?)` when `id` is the rowid (it seeks on `due_at` alone and then
// filters, re-reading every timer due at the cursor's millisecond on each page: quadratic
// for a burst of timers due at the same moment). So a page after a cursor is read with
// two seeks: the rest of the cursor's millisecond, then the later ones.
//
// ?9 is the owned-shard bitmap (`ShardSet::to_bytes`), or NULL when every shard is
// owned, which skips the per-row test.
const LOAD_DUE_FIRST: &str = concat!(
    "SELECT ",
    due_cols!(),
    " FROM timers WHERE state = 0 AND due_at < ?1 \
     AND (?9 IS NULL OR herald_shard_in(shard, ?9)) ORDER BY due_at, id LIMIT ?2"
);
// ?1 cursor due_at, ?2 cursor id, ?3 limit.
const LOAD_DUE_SAME: &str = concat!(
    "SELECT ",
    due_cols!(),
    " FROM timers WHERE state = 0 AND due_at = ?1 AND id > ?2 \
     AND (?9 IS NULL OR herald_shard_in(shard, ?9)) ORDER BY due_at, id LIMIT ?3"
);
// ?1 cursor due_at, ?2 until, ?3 limit.
const LOAD_DUE_LATER: &str = concat!(
    "SELECT ",
    due_cols!(),
    " FROM timers WHERE state = 0 AND due_at > ?1 AND due_at < ?2 \
     AND (?9 IS NULL OR herald_shard_in(shard, ?9)) ORDER BY due_at, id LIMIT ?3"
);
const INSERT_DELIVERY: &str = "INSERT INTO deliveries \
    (timer_id, attempt, channel, outcome, idempotency_key, provider_msgid, status, error, \
     started_at, finished_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
// ?1 id, ?2 attempt, ?3 finished_at, ?4 expected previous attempts.
const COMPLETE_DONE: &str = "UPDATE timers SET state = 2, attempts = ?2, delivered_at = ?3, \
    last_error = NULL, updated_at = ?3 \
    WHERE id = ?1 AND state = 0 AND attempts = ?4";
// ... ?5 next due_at, ?6 error.
const COMPLETE_RETRY: &str = "UPDATE timers SET attempts = ?2, due_at = ?5, last_error = ?6, \
    updated_at = ?3 \
    WHERE id = ?1 AND state = 0 AND attempts = ?4";
// ... ?5 final state code, ?6 error.
const COMPLETE_FINAL: &str = "UPDATE timers SET state = ?5, attempts = ?2, last_error = ?6, \
    updated_at = ?3 \
    WHERE id = ?1 AND state = 0 AND attempts = ?4";
const DELIVERIES_FOR: &str = concat!(
    "SELECT ",
    delivery_cols!(),
    " FROM deliveries WHERE timer_id = ?1 ORDER BY id"
);
const COUNT_BY_STATE: &str = "SELECT state, COUNT(*) FROM timers GROUP BY state ORDER BY state";
const INIT_SHARDS: &str =
    "INSERT INTO meta (key, value) VALUES ('shards', ?1) ON CONFLICT (key) DO NOTHING";
const GET_SHARDS: &str = "SELECT value FROM meta WHERE key = 'shards'";

/// `fetch_pending` binds ids in `IN (...)` lists of one of these sizes, padding the
/// last chunk by repeating an id, so only a handful of distinct statements exist
/// and all of them stay in the statement cache.
const IN_LIST_SIZES: [usize; 4] = [8, 32, 128, 512];

static FETCH_PENDING_SQL: LazyLock<Vec<String>> = LazyLock::new(|| {
    IN_LIST_SIZES
        .iter()
        .map(|&n| {
            let mut sql = String::from(concat!(
                "SELECT ",
                timer_cols!(),
                " FROM timers WHERE state = 0 AND id IN ("
            ));
            for i in 0..n {
                sql.push_str(if i == 0 { "?" } else { ",?" });
            }
            sql.push(')');
            sql
        })
        .collect()
});

/// Adds context to a rusqlite error.
trait Ctx<T> {
    fn ctx(self, what: &str) -> Result<T>;
}

impl<T> Ctx<T> for rusqlite::Result<T> {
    fn ctx(self, what: &str) -> Result<T> {
        self.map_err(|e| sqlite_error(what, &e))
    }
}

/// Turns a driver error into a typed store error by its result code: a
/// unique or primary-key violation is a conflict, another constraint
/// violation a refusal, and the rest an unavailable store, with the extended
/// result code kept.
pub(crate) fn sqlite_error(what: &str, e: &rusqlite::Error) -> StoreError {
    use rusqlite::ffi;
    let message = format!("sqlite: {what}: {e}");
    match e {
        rusqlite::Error::SqliteFailure(f, _) => match f.extended_code {
            ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                StoreError::Conflict {
                    what: what.to_string(),
                    why: message,
                }
            }
            _ if f.code == rusqlite::ErrorCode::ConstraintViolation => StoreError::Refused {
                what: what.to_string(),
                why: message,
            },
            code => StoreError::Unavailable {
                code: Some(code.to_string()),
                message,
            },
        },
        _ => StoreError::unavailable(message),
    }
}

/// `synchronous` settings we allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Synchronous {
    Full,
    Normal,
}

impl Synchronous {
    fn parse(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "full" => Ok(Synchronous::Full),
            "normal" => Ok(Synchronous::Normal),
            _ => Err(StoreError::refused(
                "sqlite_synchronous",
                format!(
                    "sqlite: invalid sqlite_synchronous {s:?}: expected \"full\" or \"normal\""
                ),
            )),
        }
    }

    fn pragma_value(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

/// Connections used from tokio's blocking thread pool, each behind a mutex.
struct ConnPool {
    role: &'static str,
    conns: Vec<Arc<Mutex<Connection>>>,
    next: AtomicUsize,
}

impl ConnPool {
    fn new(role: &'static str, conns: Vec<Connection>) -> Self {
        ConnPool {
            role,
            conns: conns.into_iter().map(|c| Arc::new(Mutex::new(c))).collect(),
            next: AtomicUsize::new(0),
        }
    }

    /// A connection nobody is using if there is one (looking from a rotating start),
    /// else the next in turn.
    fn pick(&self) -> Option<&Arc<Mutex<Connection>>> {
        let n = self.conns.len();
        if n <= 1 {
            return self.conns.first();
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..n)
            .map(|k| &self.conns[(start + k) % n])
            .find(|c| !c.is_locked())
            .or_else(|| self.conns.get(start % n))
    }

    /// Runs `f` on one of the connections in the blocking pool and waits
    /// (asynchronously) for its answer.
    async fn call<R, F>(&self, f: F) -> Result<R>
    where
        F: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let role = self.role;
        let conn = Arc::clone(
            self.pick()
                .ok_or_else(|| StoreError::Internal(format!("sqlite {role}: no connections")))?,
        );
        // A panic in `f` unwinds through the guard (parking_lot mutexes are not
        // poisoned) and through any open rusqlite Transaction, which rolls back.
        tokio::task::spawn_blocking(move || f(&mut conn.lock()))
            .await
            .map_err(|e| StoreError::unavailable(format!("sqlite {role} task: {e}")))?
    }
}

/// The background WAL checkpointer: one thread with its own connection.
struct Checkpointer {
    pokes: Option<mpsc::SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    fn start(conn: Connection) -> Result<Self> {
        // One slot: a poke while one is pending adds nothing.
        let (pokes, poked) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("herald-sqlite-checkpointer".into())
            .spawn(move || run_checkpointer(&conn, &poked))
            .map_err(|e| StoreError::unavailable(format!("sqlite: starting checkpointer: {e}")))?;
        Ok(Checkpointer {
            pokes: Some(pokes),
            thread: Some(thread),
        })
    }

    /// Something was written: checkpoint soon.
    fn poke(&self) {
        if let Some(p) = &self.pokes {
            let _ = p.try_send(());
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.pokes = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run_checkpointer(conn: &Connection, poked: &mpsc::Receiver<()>) {
    let mut pending = false;
    loop {
        if !pending && poked.recv().is_err() {
            return;
        }
        pending = false;
        let next = std::time::Instant::now() + CHECKPOINT_INTERVAL;
        if let Err(e) = checkpoint(conn, WAL_RESTART_FRAMES) {
            tracing::warn!(error = %e, "sqlite checkpoint failed");
        }
        // Coalesce the pokes of the next interval into one checkpoint after it.
        loop {
            let now = std::time::Instant::now();
            if now >= next {
                break;
            }
            match poked.recv_timeout(next - now) {
                Ok(()) => pending = true,
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

/// A passive checkpoint, then a RESTART one if more than `restart_above` frames
/// were in the WAL.
fn checkpoint(conn: &Connection, restart_above: i64) -> Result<()> {
    let run = |mode: &str| -> Result<(i64, i64)> {
        conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
            Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
        })
        .ctx("checkpointing")
    };
    let (frames, copied) = run("PASSIVE")?;
    if frames > restart_above {
        // The writer kept the WAL from ever being fully copied; make it start over.
        let (frames_after, copied_after) = run("RESTART")?;
        tracing::debug!(
            frames,
            copied,
            frames_after,
            copied_after,
            "sqlite WAL restarted"
        );
    }
    Ok(())
}

/// The SQLite [`Store`].
pub struct SqliteStore {
    // Dropped in declaration order: readers and checkpointer close first, so the
    // writer is the last connection and checkpoints the WAL away on close.
    /// `None` when reads go to the writer (in-memory store, or `read_connections = 0`).
    readers: Option<ConnPool>,
    /// `None` for an in-memory store (no WAL).
    checkpointer: Option<Checkpointer>,
    writer: ConnPool,
}

impl SqliteStore {
    /// Opens (creating if missing, with its directory) the database file at `path`
    /// and brings its schema up to date.
    pub async fn open(path: impl AsRef<Path>, opts: &StoreOptions) -> Result<Self> {
        let sync = Synchronous::parse(&opts.sqlite_synchronous)?;
        let path = path.as_ref().to_path_buf();
        let readers = opts.read_connections;
        let conns =
            tokio::task::spawn_blocking(move || open_file_connections(&path, sync, readers))
                .await
                .map_err(|e| StoreError::unavailable(format!("opening sqlite store: {e}")))??;
        let checkpointer = Checkpointer::start(conns.checkpointer)?;
        Ok(Self::start(conns.writer, conns.readers, Some(checkpointer)))
    }

    /// A private in-memory database, for tests: one connection serves reads and
    /// writes. `read_connections` is ignored; `sqlite_synchronous` is still checked.
    pub async fn open_memory(opts: &StoreOptions) -> Result<Self> {
        let sync = Synchronous::parse(&opts.sqlite_synchronous)?;
        let writer = tokio::task::spawn_blocking(move || -> Result<Connection> {
            let mut conn = Connection::open_in_memory().ctx("opening in-memory database")?;
            configure(&conn, Role::Writer(sync))?;
            migrate(&mut conn)?;
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
        let writer = ConnPool::new("writer", vec![writer]);
        SqliteStore {
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

#[derive(Clone, Copy)]
enum Role {
    Writer(Synchronous),
    Reader,
    Checkpointer,
}

/// The connections of a file store.
struct FileConnections {
    writer: Connection,
    readers: Vec<Connection>,
    checkpointer: Connection,
}

fn open_file_connections(
    path: &Path,
    sync: Synchronous,
    readers: usize,
) -> Result<FileConnections> {
    if path.as_os_str().is_empty() {
        return Err(StoreError::refused("store", "sqlite: empty database path"));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::unavailable(format!("sqlite: creating directory {}: {e}", dir.display()))
        })?;
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let open = |what: &str| -> Result<Connection> {
        Connection::open_with_flags(path, flags)
            .ctx(&format!("opening {} ({what})", path.display()))
    };
    let mut writer = open("writer")?;
    configure(&writer, Role::Writer(sync))?;
    migrate(&mut writer)?;
    let readers = (0..readers)
        .map(|_| {
            let conn = open("reader")?;
            configure(&conn, Role::Reader)?;
            Ok(conn)
        })
        .collect::<Result<Vec<_>>>()?;
    let checkpointer = open("checkpointer")?;
    configure(&checkpointer, Role::Checkpointer)?;
    Ok(FileConnections {
        writer,
        readers,
        checkpointer,
    })
}

fn configure(conn: &Connection, role: Role) -> Result<()> {
    register_functions(conn)?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .ctx("setting busy_timeout")?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.pragma_update(None, "foreign_keys", "ON")
        .ctx("setting foreign_keys")?;
    conn.pragma_update(None, "temp_store", "MEMORY")
        .ctx("setting temp_store")?;
    match role {
        Role::Writer(sync) => {
            let mode: String = conn
                .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
                .ctx("setting journal_mode")?;
            // An in-memory database reports "memory": WAL needs a file.
            if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
                return Err(StoreError::unavailable(format!(
                    "sqlite: journal_mode is {mode:?}, could not switch to WAL"
                )));
            }
            conn.pragma_update(None, "synchronous", sync.pragma_value())
                .ctx("setting synchronous")?;
            conn.pragma_update(None, "cache_size", -WRITER_CACHE_KIB)
                .ctx("setting cache_size")?;
            conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)
                .ctx("setting journal_size_limit")?;
            conn.pragma_update(None, "wal_autocheckpoint", WRITER_AUTOCHECKPOINT_FRAMES)
                .ctx("setting wal_autocheckpoint")?;
        }
        Role::Reader => {
            conn.pragma_update(None, "cache_size", -READER_CACHE_KIB)
                .ctx("setting cache_size")?;
            conn.pragma_update(None, "query_only", "ON")
                .ctx("setting query_only")?;
        }
        Role::Checkpointer => {
            // Checkpoints copy pages from the WAL to the file; no page cache needed.
            conn.pragma_update(None, "cache_size", -1024)
                .ctx("setting cache_size")?;
        }
    }
    Ok(())
}

/// Applies the migrations this database has not seen yet, all in one transaction.
fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning migration")?;
    let current: i64 = tx
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .ctx("reading user_version")?;
    let known = MIGRATIONS.len();
    let current = usize::try_from(current)
        .map_err(|_| StoreError::Corrupt(format!("sqlite: negative schema version {current}")))?;
    if current > known {
        return Err(StoreError::refused(
            "store",
            format!(
                "sqlite: database schema version {current} is newer than this build knows ({known})"
            ),
        ));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current) {
        tx.execute_batch(sql)
            .ctx(&format!("applying migration {}", i + 1))?;
        tracing::info!(version = i + 1, "applied sqlite migration");
    }
    if current < known {
        tx.pragma_update(None, "user_version", known as i64)
            .ctx("writing user_version")?;
    }
    tx.commit().ctx("committing migration")
}

fn get_timer(conn: &Connection, id: TimerId) -> Result<Option<TimerRecord>> {
    let mut stmt = conn
        .prepare_cached(TIMER_BY_ID)
        .ctx("preparing get_timer")?;
    let mut rows = stmt.query([id]).ctx("querying timer by id")?;
    match rows.next().ctx("reading timer by id")? {
        Some(row) => model::decode(row).map(Some),
        None => Ok(None),
    }
}

fn timer_by_key(conn: &Connection, key: &str) -> Result<Option<TimerRecord>> {
    let mut stmt = conn
        .prepare_cached(TIMER_BY_KEY)
        .ctx("preparing timer by key")?;
    let mut rows = stmt.query([key]).ctx("querying timer by key")?;
    match rows.next().ctx("reading timer by key")? {
        Some(row) => model::decode(row).map(Some),
        None => Ok(None),
    }
}

fn apply_ops(conn: &mut Connection, ops: Vec<WriteOp>) -> Result<Vec<WriteResult>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning apply")?;
    let mut results = Vec::with_capacity(ops.len());
    {
        let mut insert = tx.prepare_cached(INSERT_TIMER).ctx("preparing insert")?;
        for op in ops {
            let result = match op {
                WriteOp::InsertTimer(t) => insert_timer(&tx, &mut insert, t)?,
                WriteOp::CancelTimer { id, at } => cancel_timer(&tx, id, at)?,
                WriteOp::PutSubject(put) => reminders::put_subject(&tx, &put)?,
                WriteOp::DeleteSubject { subject_id, at } => {
                    reminders::delete_subject(&tx, &subject_id, at)?
                }
                WriteOp::AddReminder(r) => reminders::add_reminder(&tx, &mut insert, r)?,
                WriteOp::CancelReminders {
                    user_id,
                    subject_id,
                    mask,
                    at,
                } => reminders::cancel_reminders(&tx, &user_id, &subject_id, mask, at)?,
            };
            results.push(result);
        }
    }
    tx.commit().ctx("committing apply")?;
    Ok(results)
}

/// Inserts one timer with the prepared [`INSERT_TIMER`]: `Created`, or
/// `Existing` when its idempotency key is taken.
fn insert_timer(
    conn: &Connection,
    insert: &mut rusqlite::CachedStatement<'_>,
    t: crate::NewTimer,
) -> Result<WriteResult> {
    let inserted = insert
        .execute(params![
            t.shard,
            t.due_at,
            t.priority,
            t.kind.as_str(),
            t.channel,
            t.recipient,
            t.message,
            t.idempotency_key,
            t.created_at,
        ])
        .ctx("inserting timer")?;
    if inserted == 1 {
        return Ok(WriteResult::Created(
            t.into_record(conn.last_insert_rowid()),
        ));
    }
    // Only the idempotency key can conflict.
    let existing = match &t.idempotency_key {
        Some(key) => timer_by_key(conn, key)?,
        None => None,
    };
    Ok(WriteResult::Existing(existing.ok_or_else(|| {
        StoreError::Internal("sqlite: insert was ignored but no timer has its key".into())
    })?))
}

fn cancel_timer(conn: &Connection, id: TimerId, at: i64) -> Result<WriteResult> {
    {
        let mut stmt = conn.prepare_cached(CANCEL_TIMER).ctx("preparing cancel")?;
        let mut rows = stmt.query(params![id, at]).ctx("cancelling timer")?;
        if let Some(row) = rows.next().ctx("cancelling timer")? {
            return Ok(WriteResult::Cancelled(model::decode(row)?));
        }
    }
    Ok(match get_timer(conn, id)? {
        Some(record) => WriteResult::NotCancellable(record),
        None => WriteResult::NotFound,
    })
}

fn load_due_entries(
    conn: &mut Connection,
    shards: Option<Vec<u8>>,
    after: Option<DueCursor>,
    until: i64,
    limit: usize,
) -> Result<Vec<DueEntry>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut out = Vec::with_capacity(usize::try_from(limit.min(65_536)).unwrap_or(0));
    if limit == 0 {
        return Ok(out);
    }
    let Some(cursor) = after else {
        let mut stmt = conn
            .prepare_cached(LOAD_DUE_FIRST)
            .ctx("preparing load_due")?;
        stmt.raw_bind_parameter(9, &shards).ctx("binding shards")?;
        read_due(bind_and_query(&mut stmt, &[&until, &limit]), &mut out)?;
        return Ok(out);
    };
    // Both seeks read one snapshot.
    let tx = conn.transaction().ctx("beginning load_due")?;
    if cursor.due_at < until {
        let mut stmt = tx.prepare_cached(LOAD_DUE_SAME).ctx("preparing load_due")?;
        stmt.raw_bind_parameter(9, &shards).ctx("binding shards")?;
        read_due(
            bind_and_query(&mut stmt, &[&cursor.due_at, &cursor.id, &limit]),
            &mut out,
        )?;
    }
    let left = limit - out.len() as i64;
    if left > 0 {
        let mut stmt = tx
            .prepare_cached(LOAD_DUE_LATER)
            .ctx("preparing load_due")?;
        stmt.raw_bind_parameter(9, &shards).ctx("binding shards")?;
        read_due(
            bind_and_query(&mut stmt, &[&cursor.due_at, &until, &left]),
            &mut out,
        )?;
    }
    tx.commit().ctx("ending load_due")?;
    Ok(out)
}

/// Binds the leading positional parameters (the shard bitmap is bound apart,
/// as ?9) and runs the statement.
fn bind_and_query<'s>(
    stmt: &'s mut rusqlite::CachedStatement<'_>,
    values: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<rusqlite::Rows<'s>> {
    for (i, v) in values.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, v)?;
    }
    Ok(stmt.raw_query())
}

/// `herald_shard_in(shard, bitmap)`: whether the shard's bit is set.
fn register_functions(conn: &Connection) -> Result<()> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function(
        "herald_shard_in",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let shard: i64 = ctx.get(0)?;
            let bytes = ctx.get_raw(1).as_blob().unwrap_or(&[]);
            Ok(herald_core::ShardSet::bytes_contain(bytes, shard))
        },
    )
    .ctx("registering herald_shard_in")
}

fn read_due(rows: rusqlite::Result<rusqlite::Rows<'_>>, out: &mut Vec<DueEntry>) -> Result<()> {
    let mut rows = rows.ctx("querying load_due")?;
    while let Some(row) = rows.next().ctx("reading load_due")? {
        out.push(model::decode(row)?);
    }
    Ok(())
}

fn sorted_unique(mut ids: Vec<TimerId>) -> Vec<TimerId> {
    // Sorted ids also make the rowid lookups walk the table B-tree in order.
    ids.sort_unstable();
    ids.dedup();
    ids
}

fn fetch_pending_in_lists(conn: &Connection, ids: Vec<TimerId>) -> Result<Vec<TimerRecord>> {
    let ids = sorted_unique(ids);
    let mut out = Vec::with_capacity(ids.len());
    let largest = IN_LIST_SIZES[IN_LIST_SIZES.len() - 1];
    for chunk in ids.chunks(largest) {
        // Smallest list that fits; pad with the chunk's last id (IN ignores repeats).
        let slot = IN_LIST_SIZES
            .iter()
            .position(|&n| n >= chunk.len())
            .unwrap_or(IN_LIST_SIZES.len() - 1);
        let size = IN_LIST_SIZES[slot];
        let Some(&pad) = chunk.last() else { continue };
        let mut stmt = conn
            .prepare_cached(&FETCH_PENDING_SQL[slot])
            .ctx("preparing fetch_pending")?;
        let params = chunk
            .iter()
            .chain(std::iter::repeat_n(&pad, size - chunk.len()));
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params))
            .ctx("querying fetch_pending")?;
        while let Some(row) = rows.next().ctx("reading fetch_pending")? {
            out.push(model::decode(row)?);
        }
    }
    Ok(out)
}

fn complete_batch(conn: &mut Connection, batch: Vec<Completion>) -> Result<Vec<Applied>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning complete")?;
    let mut applied = Vec::with_capacity(batch.len());
    // Current epoch per shard, read once per batch.
    let mut epochs: HashMap<u16, i64> = HashMap::new();
    {
        let mut log = tx
            .prepare_cached(INSERT_DELIVERY)
            .ctx("preparing delivery insert")?;
        let mut done = tx.prepare_cached(COMPLETE_DONE).ctx("preparing done")?;
        let mut retry = tx.prepare_cached(COMPLETE_RETRY).ctx("preparing retry")?;
        let mut fin = tx.prepare_cached(COMPLETE_FINAL).ctx("preparing final")?;
        for c in &batch {
            log.execute(params![
                c.timer_id,
                c.attempt,
                c.channel,
                c.outcome.as_str(),
                c.idempotency_key,
                c.provider_msgid,
                c.status,
                c.error,
                c.started_at,
                c.finished_at,
            ])
            .ctx("inserting delivery")?;
            if let Some(Fence { shard, epoch }) = c.fence {
                let current = match epochs.get(&shard) {
                    Some(e) => *e,
                    None => {
                        let e = cluster::shard_epoch(&tx, shard)?;
                        epochs.insert(shard, e);
                        e
                    }
                };
                if current != epoch {
                    applied.push(Applied::Fenced);
                    continue;
                }
            }
            // Attempt 0 expects -1 and so never matches: no underflow, no update.
            let previous = i64::from(c.attempt) - 1;
            let (id, attempt, at) = (c.timer_id, c.attempt, c.finished_at);
            let changed = match c.outcome {
                CompletionOutcome::Done => done.execute(params![id, attempt, at, previous]),
                CompletionOutcome::Retry { next_due_at } => {
                    retry.execute(params![id, attempt, at, previous, next_due_at, c.error])
                }
                CompletionOutcome::Deferred { next_due_at, .. } => {
                    retry.execute(params![id, previous, at, previous, next_due_at, c.error])
                }
                CompletionOutcome::Failed => fin.execute(params![
                    id,
                    attempt,
                    at,
                    previous,
                    TimerState::Failed.code(),
                    c.error
                ]),
                CompletionOutcome::Dead => fin.execute(params![
                    id,
                    attempt,
                    at,
                    previous,
                    TimerState::Dead.code(),
                    c.error
                ]),
            }
            .ctx("updating completed timer")?;
            applied.push(if changed == 1 {
                Applied::Yes
            } else {
                Applied::NotPending
            });
        }
    }
    tx.commit().ctx("committing complete")?;
    Ok(applied)
}

fn deliveries_for(conn: &Connection, timer_id: TimerId) -> Result<Vec<DeliveryRecord>> {
    let mut stmt = conn
        .prepare_cached(DELIVERIES_FOR)
        .ctx("preparing deliveries_for")?;
    let mut rows = stmt.query([timer_id]).ctx("querying deliveries")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("reading deliveries")? {
        out.push(model::decode(row)?);
    }
    Ok(out)
}

fn count_by_state(conn: &Connection) -> Result<Vec<(TimerState, u64)>> {
    let mut stmt = conn
        .prepare_cached(COUNT_BY_STATE)
        .ctx("preparing count_by_state")?;
    let mut rows = stmt.query([]).ctx("querying count_by_state")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("reading count_by_state")? {
        out.push(model::decode(row)?);
    }
    Ok(out)
}

fn init_shard_count(conn: &mut Connection, wanted: u16) -> Result<u16> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("beginning init_shards")?;
    let stored: String = {
        tx.prepare_cached(INIT_SHARDS)
            .ctx("preparing init_shards")?
            .execute([wanted.to_string()])
            .ctx("storing shards")?;
        let mut stmt = tx.prepare_cached(GET_SHARDS).ctx("preparing shards")?;
        stmt.query_row([], |r| r.get(0)).ctx("reading shards")?
    };
    tx.commit().ctx("committing init_shards")?;
    stored
        .parse()
        .map_err(|_| StoreError::Corrupt(format!("meta shards = {stored:?}")))
}

#[async_trait]
impl Store for SqliteStore {
    async fn get_subjects(&self, ids: &[String]) -> Result<Vec<crate::SubjectRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.read(move |conn| reminders::get_subjects(conn, ids))
            .await
    }

    async fn user_reminders(
        &self,
        user_id: &str,
        limit: usize,
    ) -> Result<Vec<crate::ReminderTimer>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let user_id = user_id.to_string();
        self.read(move |conn| reminders::user_reminders(conn, &user_id, limit))
            .await
    }

    async fn pending_reminders(&self, probes: &[crate::MergeProbe]) -> Result<Vec<TimerRecord>> {
        if probes.is_empty() {
            return Ok(Vec::new());
        }
        let probes = probes.to_vec();
        self.read(move |conn| reminders::pending_reminders(conn, probes))
            .await
    }

    async fn init_shards(&self, wanted: u16) -> Result<u16> {
        self.write(move |conn| init_shard_count(conn, wanted)).await
    }

    async fn apply(&self, ops: Vec<WriteOp>) -> Result<Vec<WriteResult>> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        self.write(move |conn| apply_ops(conn, ops)).await
    }

    async fn get_timer(&self, id: TimerId) -> Result<Option<TimerRecord>> {
        self.read(move |conn| get_timer(conn, id)).await
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
        self.read(move |conn| load_due_entries(conn, mask, after, until, limit))
            .await
    }

    async fn fetch_pending(&self, ids: &[TimerId]) -> Result<Vec<TimerRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.read(move |conn| fetch_pending_in_lists(conn, ids))
            .await
    }

    async fn complete(&self, batch: Vec<Completion>) -> Result<Vec<Applied>> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        self.write(move |conn| complete_batch(conn, batch)).await
    }

    async fn deliveries_for(&self, timer_id: TimerId) -> Result<Vec<DeliveryRecord>> {
        self.read(move |conn| deliveries_for(conn, timer_id)).await
    }

    async fn count_by_state(&self) -> Result<Vec<(TimerState, u64)>> {
        self.read(|conn| count_by_state(conn)).await
    }

    async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryRecord>> {
        self.read(move |c| provider::get_delivery(c, id)).await
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
        self.write(move |c| provider::mark_recalled(c, id, at))
            .await
    }

    async fn get_channel_token(&self, key: &str) -> Result<Option<ChannelToken>> {
        let key = key.to_string();
        self.read(move |c| provider::get_token(c, &key)).await
    }

    async fn put_channel_token(&self, key: &str, token: &ChannelToken) -> Result<()> {
        let (key, token) = (key.to_string(), token.clone());
        self.write(move |c| provider::put_token(c, &key, &token))
            .await
    }

    async fn expire_channel_token(&self, key: &str, token: &str, now: i64) -> Result<bool> {
        let (key, token) = (key.to_string(), token.to_string());
        self.write(move |c| provider::expire_token(c, &key, &token, now))
            .await
    }

    async fn heartbeat(&self, node: &str, now: i64, ttl_ms: i64) -> Result<Vec<NodeInfo>> {
        let node = node.to_string();
        self.write(move |c| cluster::heartbeat(c, &node, now, ttl_ms))
            .await
    }

    async fn leave(&self, node: &str) -> Result<()> {
        let node = node.to_string();
        self.write(move |c| cluster::leave(c, &node)).await
    }

    async fn shard_leases(&self) -> Result<Vec<ShardLease>> {
        // From the writer: a node deciding what to claim must see the latest claims.
        self.write(cluster::shard_leases).await
    }

    async fn acquire_shards(
        &self,
        node: &str,
        shards: &[u16],
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<ShardLease>> {
        let (node, shards) = (node.to_string(), shards.to_vec());
        self.write(move |c| cluster::acquire_shards(c, &node, &shards, now, lease_ms))
            .await
    }

    async fn renew_shards(
        &self,
        node: &str,
        held: &[Fence],
        now: i64,
        lease_ms: i64,
    ) -> Result<Vec<ShardLease>> {
        let (node, held) = (node.to_string(), held.to_vec());
        self.write(move |c| cluster::renew_shards(c, &node, &held, now, lease_ms))
            .await
    }

    async fn release_shards(&self, node: &str, shards: &[u16]) -> Result<()> {
        let (node, shards) = (node.to_string(), shards.to_vec());
        self.write(move |c| cluster::release_shards(c, &node, &shards))
            .await
    }

    async fn acquire_lease(
        &self,
        name: &str,
        holder: &str,
        now: i64,
        ttl_ms: i64,
    ) -> Result<Option<NamedLease>> {
        let (name, holder) = (name.to_string(), holder.to_string());
        self.write(move |c| cluster::acquire_lease(c, &name, &holder, now, ttl_ms))
            .await
    }

    async fn release_lease(&self, name: &str, holder: &str) -> Result<()> {
        let (name, holder) = (name.to_string(), holder.to_string());
        self.write(move |c| cluster::release_lease(c, &name, &holder))
            .await
    }

    async fn subscribe(&self) -> Result<Option<tokio::sync::mpsc::Receiver<Vec<DueEntry>>>> {
        // Only this process writes an embedded store: it wheels its own timers.
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_literals_match_codes() {
        assert_eq!(TimerState::Pending.code(), 0);
        assert_eq!(TimerState::Done.code(), 2);
        assert_eq!(TimerState::Failed.code(), 3);
        assert_eq!(TimerState::Cancelled.code(), 4);
        assert_eq!(TimerState::Dead.code(), 5);
    }

    fn migrated() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        configure(&conn, Role::Writer(Synchronous::Normal)).unwrap();
        migrate(&mut conn).unwrap();
        conn
    }

    fn plan(conn: &Connection, sql: &str, n_params: usize) -> String {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let params: Vec<i64> = vec![1; n_params];
        let rows = stmt
            .query_map(rusqlite::params_from_iter(params), |r| {
                r.get::<_, String>(3)
            })
            .unwrap();
        rows.map(|r| r.unwrap()).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn load_due_searches_the_pending_index() {
        let conn = migrated();
        for (sql, n, range) in [
            // Nine parameters: the shard bitmap is ?9.
            (LOAD_DUE_FIRST, 9, "(due_at<?)"),
            (LOAD_DUE_SAME, 9, "(due_at=? AND id>?)"),
            (LOAD_DUE_LATER, 9, "(due_at>? AND due_at<?)"),
        ] {
            let p = plan(&conn, sql, n);
            assert!(
                p.contains(&format!(
                    "SEARCH timers USING INDEX timers_pending_due {range}"
                )),
                "{sql}:\n{p}"
            );
            assert!(!p.contains("SCAN"), "{sql}:\n{p}");
            assert!(!p.contains("TEMP B-TREE"), "must not sort: {sql}:\n{p}");
        }
    }

    #[test]
    fn point_lookups_use_indexes() {
        let conn = migrated();
        let p = plan(&conn, TIMER_BY_KEY, 1);
        assert!(p.contains("USING INDEX timers_idempotency_key"), "{p}");
        let p = plan(&conn, DELIVERIES_FOR, 1);
        assert!(p.contains("USING INDEX deliveries_timer"), "{p}");
        assert!(!p.contains("TEMP B-TREE"), "{p}");
        for sql in FETCH_PENDING_SQL.iter() {
            let n = sql.matches('?').count();
            let p = plan(&conn, sql, n);
            assert!(p.contains("INTEGER PRIMARY KEY"), "{p}");
        }
    }

    #[test]
    fn rejects_unknown_synchronous() {
        assert_eq!(Synchronous::parse("FULL").unwrap(), Synchronous::Full);
        assert_eq!(Synchronous::parse("normal").unwrap(), Synchronous::Normal);
        assert!(Synchronous::parse("off").is_err());
        assert!(Synchronous::parse("").is_err());
    }

    #[test]
    fn migrations_are_idempotent() {
        let mut conn = migrated();
        migrate(&mut conn).unwrap();
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, MIGRATIONS.len() as i64);
    }

    #[test]
    fn writer_pragmas_are_applied() {
        let dir = tempfile::tempdir().unwrap();
        for (sync, code) in [(Synchronous::Full, 2), (Synchronous::Normal, 1)] {
            let FileConnections {
                writer, readers, ..
            } = open_file_connections(&dir.path().join("p.db"), sync, 1).unwrap();
            let get = |c: &Connection, name: &str| -> i64 {
                c.pragma_query_value(None, name, |r| r.get(0)).unwrap()
            };
            assert_eq!(get(&writer, "synchronous"), code);
            assert_eq!(get(&writer, "foreign_keys"), 1);
            assert_eq!(get(&writer, "temp_store"), 2);
            assert_eq!(get(&writer, "cache_size"), -WRITER_CACHE_KIB);
            assert_eq!(get(&readers[0], "query_only"), 1);
            let mode: String = writer
                .pragma_query_value(None, "journal_mode", |r| r.get(0))
                .unwrap();
            assert_eq!(mode, "wal");
        }
    }

    #[tokio::test]
    async fn a_panicking_job_is_a_task_error_and_the_connection_survives() {
        let threads = ConnPool::new("test", vec![migrated()]);
        let err = threads
            .call(|_conn| -> Result<()> { panic!("boom") })
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Unavailable { .. }), "{err}");
        let n: i64 = threads
            .call(|conn| {
                conn.query_row("SELECT 41 + 1", [], |r| r.get(0))
                    .ctx("select")
            })
            .await
            .unwrap();
        assert_eq!(n, 42);
    }

    #[test]
    fn checkpoints_copy_the_wal_back() {
        let dir = tempfile::tempdir().unwrap();
        let conns =
            open_file_connections(&dir.path().join("c.db"), Synchronous::Normal, 0).unwrap();
        let mut writer = conns.writer;
        let ops = (0..2_000)
            .map(|i| WriteOp::InsertTimer(crate::conformance::fixtures::timer(i)))
            .collect();
        apply_ops(&mut writer, ops).unwrap();
        let frames = |c: &Connection| -> (i64, i64) {
            c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((r.get(1)?, r.get(2)?))
            })
            .unwrap()
        };
        checkpoint(&conns.checkpointer, i64::MAX).unwrap();
        let (log, copied) = frames(&conns.checkpointer);
        assert!(log > 0);
        assert_eq!(log, copied);
        // The RESTART path: afterwards the next write starts the WAL over.
        checkpoint(&conns.checkpointer, 0).unwrap();
        apply_ops(
            &mut writer,
            vec![WriteOp::InsertTimer(crate::conformance::fixtures::timer(1))],
        )
        .unwrap();
        let (log_after, _) = frames(&conns.checkpointer);
        assert!(log_after < log, "WAL did not restart: {log_after} >= {log}");
    }
}
