//! Copies of a live SQLite store (`herald backup`) and putting one back into
//! an empty data directory (`herald restore`).
//!
//! # Why `VACUUM INTO`, not the online backup API in steps
//!
//! The copy is taken by a separate process while `herald serve` keeps
//! writing. SQLite's backup API, stepped a few hundred pages at a time, starts
//! over whenever a connection other than its own writes to the source between
//! two steps, so under a steady stream of creates it may never finish. Run as
//! one step it holds one read transaction, which is what `VACUUM INTO` does
//! too; `VACUUM INTO` was picked because its copy is compact (no free pages),
//! rewritten b-tree by b-tree (every row of the source is read on the way),
//! and it is one statement with no page-size or journal-mode rules for the
//! destination. In WAL mode that read transaction never blocks the server's
//! writer: commits go on into the WAL, which only cannot be checkpointed past
//! the copy's snapshot until the copy ends.
//!
//! The copy is written beside the target under a temporary name, fsynced
//! (`VACUUM INTO` itself does not sync), and renamed over the target only when
//! complete, so a crash never leaves half a backup under the final name.
//!
//! A copy holds what the store holds (key hashes, channel tokens, every
//! message), so it is owner-only (`0600`) from its first byte on, whatever
//! the umask, and a data directory `herald restore` creates is `0700`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::files::{self, FILE_MODE};
use super::schema::MIGRATIONS;
use crate::migration;

/// How long the copy waits for a lock the server holds (a checkpoint
/// restarting the WAL) before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a backup or a restore was refused or failed. Nothing is left under the
/// target's name when one is returned.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{} does not exist", .0.display())]
    Missing(PathBuf),
    /// The target exists and the caller did not ask to replace it.
    #[error("{} already exists", .0.display())]
    Exists(PathBuf),
    /// A restore's data directory holds something already.
    #[error(
        "the data directory {} is not empty (it holds {entries}); restore only into an \
         empty or missing directory",
        dir.display()
    )]
    NotEmpty { dir: PathBuf, entries: String },
    #[error("{} is not a Herald database: {why}", path.display())]
    NotHerald { path: PathBuf, why: String },
    #[error("{} failed PRAGMA integrity_check: {detail}", path.display())]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "{} has schema version {found}, newer than this build knows ({known}); use the \
         herald release that wrote it, or a newer one",
        path.display()
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("sqlite: {what}: {source}")]
    Sqlite {
        what: String,
        source: rusqlite::Error,
    },
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

type Result<T> = std::result::Result<T, BackupError>;

/// What a backup or restore copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// The file written.
    pub path: PathBuf,
    pub pages: u64,
    pub page_size: u64,
    /// Size of the file written.
    pub bytes: u64,
    /// `PRAGMA user_version`: the migrations the copy has.
    pub schema_version: i64,
    /// Timers in the copy, whatever their state.
    pub timers: u64,
}

/// The schema version this build's migrations bring a database to.
pub fn known_schema_version() -> i64 {
    migration::latest(MIGRATIONS)
}

fn sql(what: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> BackupError {
    let what = what.into();
    move |source| BackupError::Sqlite { what, source }
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> BackupError {
    let path = path.to_path_buf();
    move |source| BackupError::Io { what, path, source }
}

/// Copies the live store at `db` into `to` (replacing an existing `to` only
/// with `overwrite`), as one consistent snapshot.
pub fn backup(db: &Path, to: &Path, overwrite: bool) -> Result<Copied> {
    if !db.is_file() {
        return Err(BackupError::Missing(db.to_path_buf()));
    }
    if !overwrite && to.exists() {
        return Err(BackupError::Exists(to.to_path_buf()));
    }
    // Read-write without CREATE: a missing file is an error, and a WAL
    // database can be read whether or not its -shm file exists yet.
    let src = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql(format!("opening {}", db.display())))?;
    src.busy_timeout(BUSY_TIMEOUT)
        .map_err(sql("setting busy_timeout"))?;
    herald_version(&src, db)?;
    let partial = Partial::beside(to)?;
    let started = std::time::Instant::now();
    src.execute("VACUUM INTO ?1", [partial.utf8()?])
        .map_err(sql(format!("copying {} (VACUUM INTO)", db.display())))?;
    drop(src);
    tracing::debug!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        "snapshot copied"
    );
    // A backup is one self-contained file: no -wal beside it is needed to
    // read it (`herald serve` turns WAL back on when it opens a restore).
    let copy = Connection::open(&partial.path).map_err(sql("opening the copy"))?;
    let mode: String = copy
        .query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))
        .map_err(sql("setting the copy's journal mode"))?;
    tracing::debug!(journal_mode = %mode, "backup journal mode");
    let copied = describe(&copy, &partial.path)?;
    drop(copy);
    partial.finish(to, copied)
}

/// Puts the backup `from` in place as the database file `db`, whose
/// directory must be empty or missing (it is created). `from` must pass
/// `PRAGMA integrity_check` and carry a Herald schema this build knows.
pub fn restore(from: &Path, db: &Path) -> Result<Copied> {
    if !from.is_file() {
        return Err(BackupError::Missing(from.to_path_buf()));
    }
    let dir = parent(db);
    if db.exists() {
        return Err(BackupError::Exists(db.to_path_buf()));
    }
    if dir.exists() {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io("reading", dir))? {
            let entry = entry.map_err(io("reading", dir))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        if !names.is_empty() {
            names.sort();
            let more = names.len().saturating_sub(3);
            let mut entries = names.into_iter().take(3).collect::<Vec<_>>().join(", ");
            if more > 0 {
                entries.push_str(&format!(" and {more} more"));
            }
            return Err(BackupError::NotEmpty {
                dir: dir.to_path_buf(),
                entries,
            });
        }
    }
    check(from)?;
    files::create_private_dir(dir).map_err(io("creating", dir))?;
    let partial = Partial::beside(db)?;
    std::fs::copy(from, &partial.path).map_err(io("copying into", &partial.path))?;
    let copy = Connection::open(&partial.path).map_err(sql("opening the copy"))?;
    let copied = describe(&copy, &partial.path)?;
    drop(copy);
    partial.finish(db, copied)
}

/// Checks that `path` is a sound Herald database this build can open.
pub fn check(path: &Path) -> Result<i64> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| BackupError::NotHerald {
        path: path.to_path_buf(),
        why: e.to_string(),
    })?;
    let version = herald_version(&conn, path)?;
    let mut stmt = conn
        .prepare("PRAGMA integrity_check")
        .map_err(sql("PRAGMA integrity_check"))?;
    let problems = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(sql("PRAGMA integrity_check"))?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql("PRAGMA integrity_check"))?;
    if problems != ["ok"] {
        return Err(BackupError::Corrupt {
            path: path.to_path_buf(),
            detail: problems.into_iter().take(5).collect::<Vec<_>>().join("; "),
        });
    }
    Ok(version)
}

/// The Herald schema version of `conn`'s database: refused when it is not a
/// database, has no Herald tables, or is newer than this build.
fn herald_version(conn: &Connection, path: &Path) -> Result<i64> {
    let not_herald = |why: String| BackupError::NotHerald {
        path: path.to_path_buf(),
        why,
    };
    // The first read of the file: a file that is not SQLite fails here.
    let timers: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('timers', 'meta')",
            [],
            |r| r.get(0),
        )
        .map_err(|e| not_herald(e.to_string()))?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| not_herald(e.to_string()))?;
    if timers != 2 || version < 1 {
        return Err(not_herald(format!(
            "no Herald tables (schema version {version})"
        )));
    }
    let known = known_schema_version();
    if version > known {
        return Err(BackupError::TooNew {
            path: path.to_path_buf(),
            found: version,
            known,
        });
    }
    Ok(version)
}

/// Pages, size, schema version and timers of a finished copy.
fn describe(conn: &Connection, path: &Path) -> Result<Copied> {
    let pages: i64 = conn
        .pragma_query_value(None, "page_count", |r| r.get(0))
        .map_err(sql("reading page_count"))?;
    let page_size: i64 = conn
        .pragma_query_value(None, "page_size", |r| r.get(0))
        .map_err(sql("reading page_size"))?;
    let schema_version = herald_version(conn, path)?;
    let timers: i64 = conn
        .query_row("SELECT count(*) FROM timers", [], |r| r.get(0))
        .map_err(sql("counting timers"))?;
    let bytes = std::fs::metadata(path).map_err(io("reading", path))?.len();
    Ok(Copied {
        path: path.to_path_buf(),
        pages: u64::try_from(pages).unwrap_or(0),
        page_size: u64::try_from(page_size).unwrap_or(0),
        bytes,
        schema_version,
        timers: u64::try_from(timers).unwrap_or(0),
    })
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A copy being written under a temporary name beside its target; removed
/// when dropped unless [`Partial::finish`] renamed it.
struct Partial {
    path: PathBuf,
    done: bool,
}

impl Partial {
    fn beside(target: &Path) -> Result<Partial> {
        let name = target
            .file_name()
            .ok_or_else(|| BackupError::Io {
                what: "naming a file after",
                path: target.to_path_buf(),
                source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
            })?
            .to_string_lossy();
        let path = parent(target).join(format!(".{name}.partial-{}", std::process::id()));
        // Left by an earlier run that crashed under the same process id.
        if path.exists() {
            std::fs::remove_file(&path).map_err(io("removing", &path))?;
        }
        // Created empty and owner-only before anything is written into it
        // (`VACUUM INTO` takes an empty file).
        files::create_private_file(&path).map_err(io("creating", &path))?;
        Ok(Partial { path, done: false })
    }

    fn utf8(&self) -> Result<&str> {
        self.path.to_str().ok_or_else(|| BackupError::Io {
            what: "naming (not UTF-8)",
            path: self.path.clone(),
            source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
        })
    }

    /// Makes the copy owner-only (a plain file copy takes its source's
    /// mode), syncs it, renames it to `target` and syncs the directory.
    fn finish(mut self, target: &Path, mut copied: Copied) -> Result<Copied> {
        files::set_mode(&self.path, FILE_MODE).map_err(io("restricting", &self.path))?;
        File::open(&self.path)
            .and_then(|f| f.sync_all())
            .map_err(io("syncing", &self.path))?;
        std::fs::rename(&self.path, target).map_err(io("renaming the copy to", target))?;
        self.done = true;
        let dir = parent(target);
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io("syncing", dir))?;
        copied.path = target.to_path_buf();
        Ok(copied)
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.path);
            for suffix in ["-journal", "-wal", "-shm"] {
                let _ = std::fs::remove_file(files::with_suffix(&self.path, suffix));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WriteOp;
    use crate::sqlite::apply::apply;
    use crate::sqlite::pool::open_file_connections;

    fn store_with_timers(dir: &Path, n: i64) -> PathBuf {
        let db = dir.join("live").join("herald.db");
        let conns = open_file_connections(&db, crate::Synchronous::Normal, 0).unwrap();
        let mut writer = conns.writer;
        let ops = (1..=n)
            .map(|i| WriteOp::InsertTimer(crate::testsuite::fixtures::timer(i)))
            .collect();
        apply(&mut writer, ops).unwrap();
        db
    }

    #[test]
    fn backup_then_restore_keeps_every_timer() {
        let dir = tempfile::tempdir().unwrap();
        let db = store_with_timers(dir.path(), 500);
        let to = dir.path().join("b.db");
        let copied = backup(&db, &to, false).unwrap();
        assert_eq!(copied.timers, 500);
        assert_eq!(copied.schema_version, known_schema_version());
        assert_eq!(copied.bytes, copied.pages * copied.page_size);
        assert!(matches!(
            backup(&db, &to, false),
            Err(BackupError::Exists(_))
        ));
        backup(&db, &to, true).unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(
            !names.iter().any(|n| n.contains("partial")),
            "leftovers: {names:?}"
        );
        let into = dir.path().join("new").join("data").join("herald.db");
        let restored = restore(&to, &into).unwrap();
        assert_eq!(restored.timers, 500);
        assert!(matches!(restore(&to, &into), Err(BackupError::Exists(_))));
    }

    #[cfg(unix)]
    #[test]
    fn backups_and_restores_are_owner_only_whatever_the_source() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        let db = store_with_timers(dir.path(), 3);
        let to = dir.path().join("b.db");
        backup(&db, &to, false).unwrap();
        assert_eq!(mode(&to), 0o600);
        // A copy restored from a backup someone made readable is not.
        files::set_mode(&to, 0o644).unwrap();
        let into = dir.path().join("new").join("data").join("herald.db");
        restore(&to, &into).unwrap();
        assert_eq!(mode(&into), 0o600);
        assert_eq!(mode(into.parent().unwrap()), 0o700);
    }

    #[test]
    fn restore_refuses_what_is_not_a_sound_herald_database() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "not a database, just some text that is long enough").unwrap();
        let into = dir.path().join("d").join("herald.db");
        assert!(matches!(
            restore(&text, &into),
            Err(BackupError::NotHerald { .. })
        ));
        let other = dir.path().join("other.db");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (x)")
            .unwrap();
        assert!(matches!(
            restore(&other, &into),
            Err(BackupError::NotHerald { .. })
        ));
        let db = store_with_timers(dir.path(), 3);
        let newer = dir.path().join("newer.db");
        backup(&db, &newer, false).unwrap();
        Connection::open(&newer)
            .unwrap()
            .pragma_update(None, "user_version", known_schema_version() + 1)
            .unwrap();
        assert!(matches!(
            restore(&newer, &into),
            Err(BackupError::TooNew { .. })
        ));
        assert!(!into.parent().unwrap().exists(), "nothing was created");
    }
}
