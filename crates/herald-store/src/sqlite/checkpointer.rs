//! The background WAL checkpointer.
//!
//! SQLite's automatic WAL checkpoint runs inside the commit of whichever write
//! crosses the threshold, which roughly doubled the cost of large batches. A file
//! store therefore has one more thread and connection, the checkpointer: the
//! writer pokes it after each write and it runs `wal_checkpoint(PASSIVE)` (at most
//! every [`CHECKPOINT_INTERVAL`]) beside the writer, which keeps committing
//! meanwhile. Checkpoints never change what is durable: a commit is durable once
//! it is in the WAL (fsynced there with `synchronous=full`).

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use super::error::Ctx;
use crate::{Result, StoreError};

/// The background checkpointer runs at most this often, so a stream of small
/// commits costs one checkpoint (and its fsync) per interval, not one per commit.
const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(50);
/// When the WAL holds more frames (pages) than this after a passive checkpoint,
/// the checkpointer runs a RESTART checkpoint, which briefly holds writers back so
/// the WAL can start over from the beginning instead of growing without bound
/// under a continuous write load.
const WAL_RESTART_FRAMES: i64 = 16_384;

/// The background WAL checkpointer: one thread with its own connection.
pub(super) struct Checkpointer {
    pokes: Option<mpsc::SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    pub(super) fn start(conn: Connection) -> Result<Self> {
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
    pub(super) fn poke(&self) {
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

/// How long a RESTART checkpoint may hold new writers back while it waits
/// for readers to leave the WAL. Short: a reader that stays (a long read, or
/// `herald backup` copying the store) is waited out at the next attempt, not
/// for the connection's whole busy timeout with every writer stalled.
const RESTART_WAIT: Duration = Duration::from_millis(100);

/// What a checkpoint did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Checkpointed {
    /// Copied what it could; the WAL was small enough to keep.
    Passive,
    /// The WAL starts over from its beginning.
    Restarted,
    /// A reader holds an older snapshot (a long read or a backup), so the
    /// WAL could not be copied whole; no RESTART was tried, since it would
    /// only hold writers back until that reader ends.
    HeldByReader,
    /// A RESTART was tried and readers did not leave within
    /// [`RESTART_WAIT`]; tried again at the next checkpoint.
    RestartBusy,
}

/// A passive checkpoint, then a RESTART one if more than `restart_above` frames
/// were in the WAL and all of them were copied.
pub(super) fn checkpoint(conn: &Connection, restart_above: i64) -> Result<Checkpointed> {
    let run = |mode: &str| -> Result<(bool, i64, i64)> {
        conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
            Ok((
                r.get::<_, i64>(0)? != 0,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .ctx("checkpointing")
    };
    let (_, frames, copied) = run("PASSIVE")?;
    if frames <= restart_above {
        return Ok(Checkpointed::Passive);
    }
    if copied < frames {
        tracing::debug!(frames, copied, "sqlite WAL held by a reader");
        return Ok(Checkpointed::HeldByReader);
    }
    // The writer kept the WAL from ever being fully copied; make it start over.
    conn.busy_timeout(RESTART_WAIT)
        .ctx("setting the restart wait")?;
    let restarted = run("RESTART");
    conn.busy_timeout(super::pool::BUSY_TIMEOUT)
        .ctx("setting busy_timeout")?;
    let (busy, frames_after, copied_after) = restarted?;
    tracing::debug!(
        frames,
        copied,
        frames_after,
        copied_after,
        busy,
        "sqlite WAL restart"
    );
    Ok(if busy {
        Checkpointed::RestartBusy
    } else {
        Checkpointed::Restarted
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Synchronous;
    use crate::WriteOp;
    use crate::sqlite::apply::apply;
    use crate::sqlite::pool::open_file_connections;

    #[test]
    fn checkpoints_copy_the_wal_back() {
        let dir = tempfile::tempdir().unwrap();
        let conns =
            open_file_connections(&dir.path().join("c.db"), Synchronous::Normal, 0).unwrap();
        let mut writer = conns.writer;
        let ops = (0..2_000)
            .map(|i| WriteOp::InsertTimer(crate::testsuite::fixtures::timer(i)))
            .collect();
        apply(&mut writer, ops).unwrap();
        let frames = |c: &Connection| -> (i64, i64) {
            c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((r.get(1)?, r.get(2)?))
            })
            .unwrap()
        };
        assert_eq!(
            checkpoint(&conns.checkpointer, i64::MAX).unwrap(),
            Checkpointed::Passive
        );
        let (log, copied) = frames(&conns.checkpointer);
        assert!(log > 0);
        assert_eq!(log, copied);
        // The RESTART path: afterwards the next write starts the WAL over.
        assert_eq!(
            checkpoint(&conns.checkpointer, 0).unwrap(),
            Checkpointed::Restarted
        );
        apply(
            &mut writer,
            vec![WriteOp::InsertTimer(crate::testsuite::fixtures::timer(1))],
        )
        .unwrap();
        let (log_after, _) = frames(&conns.checkpointer);
        assert!(log_after < log, "WAL did not restart: {log_after} >= {log}");
    }

    /// A reader holding an old snapshot (as `herald backup` does while it
    /// copies) is not waited for: the checkpoint reports it and returns, and
    /// the writer commits at once.
    #[test]
    fn a_long_reader_is_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let conns =
            open_file_connections(&dir.path().join("c.db"), Synchronous::Normal, 1).unwrap();
        let mut writer = conns.writer;
        let timers = |from: i64| {
            (from..from + 500)
                .map(|i| WriteOp::InsertTimer(crate::testsuite::fixtures::timer(i)))
                .collect()
        };
        apply(&mut writer, timers(0)).unwrap();
        let reader = &conns.readers[0];
        reader.execute_batch("BEGIN").unwrap();
        let n: i64 = reader
            .query_row("SELECT count(*) FROM timers", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 500);
        // Written after the reader's snapshot: the WAL cannot be copied whole.
        apply(&mut writer, timers(1_000)).unwrap();
        assert_eq!(
            checkpoint(&conns.checkpointer, 0).unwrap(),
            Checkpointed::HeldByReader
        );
        writer.busy_timeout(Duration::ZERO).unwrap();
        apply(&mut writer, timers(2_000)).unwrap();
        reader.execute_batch("COMMIT").unwrap();
        // Once it has gone, the WAL starts over.
        assert_eq!(
            checkpoint(&conns.checkpointer, 0).unwrap(),
            Checkpointed::Restarted
        );
    }
}
