//! `herald backup` and `herald restore`: a consistent copy of a live SQLite
//! store, and putting one back into an empty data directory. The store is
//! found as `herald serve` finds it (configuration file, `HERALD_STORE`),
//! with `--store` to name it directly. The copying itself is
//! `herald_store::sqlite::backup`'s.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use herald_store::sqlite::backup::{self, BackupError, Copied};
use herald_store::{RedactedUrl, StoreUrl};

use crate::config::Config;

/// Which store: the one `herald serve --config` would open.
#[derive(clap::Args, Debug)]
pub struct StoreArgs {
    /// TOML configuration file, as `herald serve` takes it.
    #[arg(long, env = "HERALD_CONFIG")]
    config: Option<PathBuf>,
    /// The store URL (`sqlite://PATH`), instead of the configuration's.
    #[arg(long)]
    store: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct BackupArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// The backup file to write.
    #[arg(long)]
    to: PathBuf,
    /// Replace the file if it exists.
    #[arg(long)]
    force: bool,
}

#[derive(clap::Args, Debug)]
pub struct RestoreArgs {
    #[command(flatten)]
    store: StoreArgs,
    /// The backup file (made by `herald backup`) to restore.
    #[arg(long)]
    from: PathBuf,
}

/// The database file of the SQLite store `args` names; refuses the others.
fn sqlite_file(args: &StoreArgs, command: &str) -> anyhow::Result<PathBuf> {
    let url = match &args.store {
        Some(url) => url.clone(),
        None => Config::load(args.config.as_deref())?.store,
    };
    match StoreUrl::parse(&url)? {
        StoreUrl::SqliteFile(path) => Ok(PathBuf::from(path)),
        StoreUrl::SqliteMemory => {
            bail!("the store is sqlite::memory:, which lives only inside its server process")
        }
        StoreUrl::Postgres => bail!(
            "herald {command} works on an SQLite store; {} is PostgreSQL: use pg_dump/pg_restore \
             for a logical copy, or base backups with WAL archiving for point-in-time recovery \
             (see \"Backup and restore\" in docs/operations.md)",
            RedactedUrl(&url)
        ),
    }
}

pub async fn backup(args: BackupArgs) -> anyhow::Result<()> {
    let db = sqlite_file(&args.store, "backup")?;
    let (to, force) = (args.to, args.force);
    check_target(&to)?;
    tracing::info!(db = %db.display(), to = %to.display(), "backing up");
    let started = std::time::Instant::now();
    let copied = run_blocking({
        let (db, to) = (db.clone(), to.clone());
        move || backup::backup(&db, &to, force)
    })
    .await?
    .map_err(|e| match e {
        BackupError::Exists(p) => {
            anyhow::anyhow!("{} already exists; pass --force to replace it", p.display())
        }
        e => anyhow::Error::new(e),
    })
    .with_context(|| format!("backing up {}", db.display()))?;
    tracing::info!(
        to = %copied.path.display(),
        pages = copied.pages,
        bytes = copied.bytes,
        schema_version = copied.schema_version,
        timers = copied.timers,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "backup written"
    );
    print_copied("backed up", &db, &copied);
    Ok(())
}

pub async fn restore(args: RestoreArgs) -> anyhow::Result<()> {
    let db = sqlite_file(&args.store, "restore")?;
    let from = args.from;
    let copied = run_blocking({
        let (db, from) = (db.clone(), from.clone());
        move || backup::restore(&from, &db)
    })
    .await?
    .map_err(|e| match e {
        BackupError::Exists(p) => anyhow::anyhow!(
            "a database already exists at {}; restore only into an empty data directory",
            p.display()
        ),
        e => anyhow::Error::new(e),
    })
    .with_context(|| format!("restoring {}", from.display()))?;
    tracing::info!(
        db = %copied.path.display(),
        pages = copied.pages,
        bytes = copied.bytes,
        schema_version = copied.schema_version,
        timers = copied.timers,
        "restored"
    );
    print_copied("restored", &from, &copied);
    Ok(())
}

/// Refuses a `--to` that cannot be written before anything is copied: the
/// copy is first written to a temporary file beside it, whose name would
/// otherwise be the one the error gives.
fn check_target(to: &Path) -> anyhow::Result<()> {
    if to.is_dir() {
        bail!(
            "--to {} is a directory; name the backup file, such as {}",
            to.display(),
            to.join("herald-backup.db").display()
        );
    }
    let dir = match to.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        let what = if dir.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        bail!(
            "cannot write the backup {}: its directory {} {what}; create it first",
            to.display(),
            dir.display()
        );
    }
    Ok(())
}

/// Runs a copy on the blocking pool: an outer error when the task itself
/// failed (it panicked), the copy's own answer inside.
async fn run_blocking<F>(f: F) -> anyhow::Result<Result<Copied, BackupError>>
where
    F: FnOnce() -> Result<Copied, BackupError> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .context("the copy stopped unexpectedly")
}

fn print_copied(verb: &str, from: &Path, c: &Copied) {
    println!(
        "{verb} {} to {}: {} pages of {} bytes ({} bytes), schema version {} (this build: {}), \
         {} timers",
        from.display(),
        c.path.display(),
        c.pages,
        c.page_size,
        c.bytes,
        c.schema_version,
        backup::known_schema_version(),
        c.timers
    );
}
