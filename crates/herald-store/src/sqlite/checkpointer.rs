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

/// A passive checkpoint, then a RESTART one if more than `restart_above` frames
/// were in the WAL.
pub(super) fn checkpoint(conn: &Connection, restart_above: i64) -> Result<()> {
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
        checkpoint(&conns.checkpointer, i64::MAX).unwrap();
        let (log, copied) = frames(&conns.checkpointer);
        assert!(log > 0);
        assert_eq!(log, copied);
        // The RESTART path: afterwards the next write starts the WAL over.
        checkpoint(&conns.checkpointer, 0).unwrap();
        apply(
            &mut writer,
            vec![WriteOp::InsertTimer(crate::testsuite::fixtures::timer(1))],
        )
        .unwrap();
        let (log_after, _) = frames(&conns.checkpointer);
        assert!(log_after < log, "WAL did not restart: {log_after} >= {log}");
    }
}
