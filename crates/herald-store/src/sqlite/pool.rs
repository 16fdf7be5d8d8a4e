//! Connections: opening and configuring them, and the small pools reads and
//! writes take them from.
//!
//! rusqlite connections are blocking, so every query runs on tokio's blocking
//! pool (`spawn_blocking`) with a connection taken from a [`ConnPool`], each
//! connection behind a mutex. Dedicated threads fed by channels were tried
//! first and measured slower on the two-core target: about 45 µs against 25 µs
//! per point read, and 60 µs against 17 µs for an empty round trip. The
//! statement cache lives with each connection, so it stays warm whichever
//! thread uses it.
//!
//! A call waits for a free connection asynchronously (one permit per
//! connection) before it takes a blocking thread, so a burst of calls queues
//! as tasks, not as threads: at most one blocking thread per connection runs
//! or waits, where a thread per waiting call used to be started (and kept,
//! with its allocator arenas).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::{Connection, OpenFlags};
use tokio::sync::Semaphore;

use super::error::Ctx;
use super::schema;
use crate::{Result, StoreError, Synchronous};

/// How long a connection waits for a lock held by another connection (another
/// process on the same file, or a checkpoint) before giving up with `SQLITE_BUSY`.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a call waits for its connection (held by calls before it) before
/// giving up as an unavailable store, so a stuck statement cannot queue every
/// caller behind it forever.
const CONNECTION_WAIT: Duration = Duration::from_secs(30);
/// Page cache of the writer, in KiB (negative `cache_size` means KiB).
const WRITER_CACHE_KIB: i64 = 64 * 1024;
/// Page cache of each reader, in KiB.
const READER_CACHE_KIB: i64 = 16 * 1024;
/// After a checkpoint the WAL file is truncated to at most this many bytes.
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;
/// The writer's own automatic checkpoint, only a backstop in case the background
/// checkpointer cannot run; far above what the checkpointer lets the WAL reach.
const WRITER_AUTOCHECKPOINT_FRAMES: i64 = 65_536;
/// Prepared statements kept per connection (all hot statements plus the IN-list sizes).
pub(super) const STATEMENT_CACHE: usize = 64;

/// The `PRAGMA synchronous` value of a setting.
fn pragma_value(sync: Synchronous) -> &'static str {
    match sync {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    }
}

/// Connections used from tokio's blocking thread pool, each behind a mutex.
pub(super) struct ConnPool {
    role: &'static str,
    conns: Vec<Arc<Mutex<Connection>>>,
    next: AtomicUsize,
    /// One permit per connection, taken before a blocking thread is: a
    /// call holding one always finds a connection free or about to be.
    free: Arc<Semaphore>,
}

impl ConnPool {
    pub(super) fn new(role: &'static str, conns: Vec<Connection>) -> Self {
        let free = Arc::new(Semaphore::new(conns.len()));
        ConnPool {
            role,
            conns: conns.into_iter().map(|c| Arc::new(Mutex::new(c))).collect(),
            next: AtomicUsize::new(0),
            free,
        }
    }

    /// Nobody holds or waits for a connection at this moment.
    pub(super) fn idle(&self) -> bool {
        self.free.available_permits() == self.conns.len()
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
    pub(super) async fn call<R, F>(&self, f: F) -> Result<R>
    where
        F: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let role = self.role;
        let busy = move || {
            StoreError::unavailable(format!(
                "sqlite {role}: no connection free within {} s",
                CONNECTION_WAIT.as_secs()
            ))
        };
        let permit =
            match tokio::time::timeout(CONNECTION_WAIT, self.free.clone().acquire_owned()).await {
                Ok(Ok(p)) => p,
                Ok(Err(_closed)) => {
                    return Err(StoreError::Internal(format!("sqlite {role}: pool closed")));
                }
                Err(_elapsed) => return Err(busy()),
            };
        let conn = Arc::clone(
            self.pick()
                .ok_or_else(|| StoreError::Internal(format!("sqlite {role}: no connections")))?,
        );
        // A panic in `f` unwinds through the guard (parking_lot mutexes are not
        // poisoned) and through any open rusqlite Transaction, which rolls back.
        tokio::task::spawn_blocking(move || {
            // Given back after the connection (locals drop in reverse order),
            // so whoever gets it next finds that connection free.
            let _permit = permit;
            match conn.try_lock_for(CONNECTION_WAIT) {
                Some(mut guard) => f(&mut guard),
                None => Err(busy()),
            }
        })
        .await
        .map_err(|e| StoreError::unavailable(format!("sqlite {role} task: {e}")))?
    }
}

#[derive(Clone, Copy)]
pub(super) enum Role {
    Writer(Synchronous),
    Reader,
    Checkpointer,
}

/// The connections of a file store.
pub(super) struct FileConnections {
    pub(super) writer: Connection,
    pub(super) readers: Vec<Connection>,
    pub(super) checkpointer: Connection,
}

pub(super) fn open_file_connections(
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
    schema::migrate(&mut writer)?;
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

pub(super) fn configure(conn: &Connection, role: Role) -> Result<()> {
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
            conn.pragma_update(None, "synchronous", pragma_value(sync))
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

/// Caps the database at `max_pages` pages on this connection (the writer's:
/// the only one that grows the file); `None` leaves it as the disk allows.
pub(super) fn cap_pages(conn: &Connection, max_pages: Option<u64>) -> Result<()> {
    let Some(pages) = max_pages else {
        return Ok(());
    };
    let pages = i64::try_from(pages).unwrap_or(i64::MAX);
    conn.pragma_update(None, "max_page_count", pages)
        .ctx("setting max_page_count")
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::testing::migrated;

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

    /// Calls waiting for a busy connection wait as tasks: the blocking
    /// threads stay free for other work (they used to wait there, one
    /// thread per call).
    #[test]
    fn calls_waiting_for_a_connection_hold_no_blocking_thread() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(3)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let pool = Arc::new(ConnPool::new("test", vec![migrated()]));
            let (release, held) = std::sync::mpsc::channel::<()>();
            let first = {
                let pool = pool.clone();
                tokio::spawn(async move {
                    pool.call(move |_conn| {
                        held.recv().ok();
                        Ok(())
                    })
                    .await
                })
            };
            let waiting: Vec<_> = (0..4)
                .map(|_| {
                    let pool = pool.clone();
                    tokio::spawn(async move { pool.call(|_conn| Ok(())).await })
                })
                .collect();
            tokio::time::sleep(Duration::from_millis(200)).await;
            // With the connection held and four calls waiting for it, a
            // blocking job still finds a thread.
            let other =
                tokio::time::timeout(Duration::from_secs(10), tokio::task::spawn_blocking(|| 42))
                    .await;
            release.send(()).unwrap();
            assert_eq!(other.expect("a blocking thread was free").unwrap(), 42);
            first.await.unwrap().unwrap();
            for w in waiting {
                w.await.unwrap().unwrap();
            }
        });
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
}
