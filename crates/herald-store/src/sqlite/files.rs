//! Owner-only files: the database holds every API key's hash, every
//! channel's access token and every tenant's messages, so neither it, its
//! `-wal`/`-shm`/`-journal` files, its data directory nor a backup of it is
//! readable by other users of the machine (left to the umask, they were
//! `0644` in a `0755` directory).
//!
//! Modes are set explicitly, not left to the umask. A directory Herald
//! creates is `0700`; a directory that already exists is left as it is (it
//! may be shared, such as `/var/lib` or the working directory), with a
//! warning when others have access to it. A database file is created `0600`
//! before SQLite opens it, and SQLite gives its `-wal`, `-shm` and
//! `-journal` files the mode of the database file; an existing one that
//! others may read is tightened to `0600` at start, with a warning.

use std::fs::{DirBuilder, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// The mode of every file Herald writes for the store.
pub const FILE_MODE: u32 = 0o600;
/// The mode of a directory Herald creates for the store.
pub const DIR_MODE: u32 = 0o700;

/// The files SQLite keeps beside a database.
const COMPANIONS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// `path` with `suffix` appended to its file name.
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Creates `dir` and any missing parents, each new one owner-only; an
/// existing directory is left as it is, with a warning if others may read
/// it.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() {
        return Ok(());
    }
    if dir.is_dir() {
        warn_if_shared_dir(dir);
        return Ok(());
    }
    // Create parents first, so each directory created here gets its mode set.
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        create_private_dir(parent)?;
    }
    match builder().create(dir) {
        Ok(()) => set_mode(dir, DIR_MODE),
        // Made meanwhile by another process: theirs to decide.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Makes the database file `db` ready to open: its directory exists, the
/// file exists owner-only (created empty if missing, which SQLite reads as
/// an empty database), and so do any `-wal`, `-shm` or `-journal` files
/// already beside it.
pub fn prepare_database_file(db: &Path) -> io::Result<()> {
    if let Some(dir) = db.parent() {
        create_private_dir(dir)?;
    }
    create_private_file(db)?;
    for suffix in COMPANIONS {
        let companion = with_suffix(db, suffix);
        if companion.exists() {
            tighten(&companion)?;
        }
    }
    Ok(())
}

/// Why the database file `db` cannot be prepared, in terms of the path at
/// fault: a directory where the file should be, a file where a directory
/// should be, or a directory Herald may not write in. SQLite's own "unable
/// to open database file" names none of them.
pub fn problem(db: &Path, e: &io::Error) -> String {
    if db.is_dir() {
        return format!(
            "{} is a directory; the store URL names the database file, such as sqlite://{}",
            db.display(),
            db.join("herald.db").display()
        );
    }
    // From the root down: the first part that exists but is no directory.
    let mut parts: Vec<&Path> = db.ancestors().skip(1).collect();
    parts.reverse();
    if let Some(file) = parts.iter().find(|p| p.exists() && !p.is_dir()) {
        return format!(
            "{} is not a directory, so the store {} cannot be created under it",
            file.display(),
            db.display()
        );
    }
    if e.kind() == io::ErrorKind::PermissionDenied {
        // The file itself if it exists, else the deepest directory that does.
        let at = db
            .ancestors()
            .find(|p| !p.as_os_str().is_empty() && p.exists())
            .unwrap_or(db);
        return format!("permission denied on {}", at.display());
    }
    format!("{}: {e}", db.display())
}

/// Creates `path` empty and owner-only if it does not exist; tightens it
/// if it does.
pub fn create_private_file(path: &Path) -> io::Result<()> {
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, FILE_MODE);
    match opts.open(path) {
        // The umask may have taken bits away; never added any.
        Ok(_) => set_mode(path, FILE_MODE),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => tighten(path),
        Err(e) => Err(e),
    }
}

/// Sets `path` owner-only if group or others have any access to it.
fn tighten(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            tracing::warn!(
                path = %path.display(),
                mode = format!("{mode:o}"),
                "the store's file was readable by other users; making it owner-only (0600)"
            );
            set_mode(path, FILE_MODE)?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

fn warn_if_shared_dir(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(dir) {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                tracing::warn!(
                    dir = %dir.display(),
                    mode = format!("{mode:o}"),
                    "the store's directory is open to other users; its files are owner-only, \
                     but `chmod 700` the directory unless it is shared on purpose"
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
}

fn builder() -> DirBuilder {
    #[allow(unused_mut)]
    let mut b = DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, DIR_MODE);
    b
}

/// Sets the permission bits of `path` to `mode` (Unix; elsewhere a no-op).
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_directories_and_files_are_owner_only() {
        let root = tempfile::tempdir().unwrap();
        set_mode(root.path(), 0o755).unwrap();
        let db = root.path().join("a").join("b").join("herald.db");
        prepare_database_file(&db).unwrap();
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(mode(&root.path().join("a").join("b")), 0o700);
        assert_eq!(mode(&db), 0o600);
        assert_eq!(std::fs::metadata(&db).unwrap().len(), 0);
        // An existing directory is not changed.
        assert_eq!(mode(root.path()), 0o755);
    }

    #[test]
    fn existing_files_open_to_others_are_tightened() {
        let root = tempfile::tempdir().unwrap();
        let db = root.path().join("herald.db");
        std::fs::write(&db, b"").unwrap();
        let wal = with_suffix(&db, "-wal");
        std::fs::write(&wal, b"").unwrap();
        let shm = with_suffix(&db, "-shm");
        std::fs::write(&shm, b"").unwrap();
        for p in [&db, &wal] {
            set_mode(p, 0o644).unwrap();
        }
        set_mode(&shm, 0o600).unwrap();
        prepare_database_file(&db).unwrap();
        for p in [&db, &wal, &shm] {
            assert_eq!(mode(p), 0o600, "{}", p.display());
        }
        assert!(!with_suffix(&db, "-journal").exists(), "nothing else made");
    }
}
