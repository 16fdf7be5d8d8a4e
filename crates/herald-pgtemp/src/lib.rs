//! A throwaway PostgreSQL cluster for tests and benches.
//!
//! [`PgTemp::start`] runs `initdb` into a fresh temporary directory and starts a
//! `postgres` server on a free loopback port, with `trust` authentication for the
//! superuser `postgres`. Dropping the [`PgTemp`] stops the server and removes the
//! directory. [`PgTemp::shared`] gives one cluster per process instead, started on
//! first use and stopped at process exit, so a test binary with a hundred tests
//! starts one server and makes one database per test ([`PgTemp::fresh_database`]).
//!
//! # Where the binaries come from
//!
//! `$HERALD_PG_BIN` (a directory holding `initdb` and `postgres`; when it is set,
//! nowhere else is searched), else `PATH`, then `/usr/lib/postgresql/*/bin`
//! (newest version first). When none has them,
//! [`PgTemp::start`] prints a loud notice on stderr and returns `Ok(None)`, so
//! tests can skip; with `HERALD_REQUIRE_PG=1` (CI sets it) it returns
//! [`Error::Missing`] instead and the tests fail.
//!
//! # Root
//!
//! PostgreSQL refuses to run as root. When this process is root, `initdb` and
//! `postgres` run as the `postgres` system user (Debian's package creates it); if
//! there is none, a system user `herald-pg` is created with `useradd`. Otherwise
//! they run as the current user.
//!
//! # Durability
//!
//! The server runs with `fsync=off`, `synchronous_commit=off` and
//! `full_page_writes=off`: fine for tests and for benches of query logic, but its
//! numbers say nothing about commit latency on real disks. Pass other settings
//! through [`Options`].
//!
//! # Cleanup
//!
//! The server is started from a dedicated thread that lives as long as the server,
//! with `PR_SET_PDEATHSIG` (Linux): if this process dies, even by `kill -9`, the
//! postmaster gets `SIGQUIT` and shuts down at once. Directories left behind by
//! processes that died are removed the next time a cluster is started.

pub mod wire;

use std::ffi::CString;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once, OnceLock, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tempfile::TempDir;

pub use wire::{Session, WireError};

/// Set to `1` to make a missing PostgreSQL an error instead of a skip.
pub const REQUIRE_ENV: &str = "HERALD_REQUIRE_PG";
/// A directory holding `initdb` and `postgres`, searched first.
pub const BIN_ENV: &str = "HERALD_PG_BIN";
/// The superuser `initdb` creates; it logs in without a password.
pub const SUPERUSER: &str = "postgres";

/// Prefix of the temporary directories, for the stale-directory sweep.
const DIR_PREFIX: &str = "herald-pg-";
/// How long the server may take to accept logins.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a fast shutdown may take before the postmaster is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);
/// Port collisions tolerated before giving up.
const PORT_ATTEMPTS: usize = 8;
/// Timeout of each blocking read or write of the maintenance connection.
const SQL_TIMEOUT: Duration = Duration::from_secs(120);

/// What can go wrong starting or using the cluster.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No `initdb`/`postgres` was found and `HERALD_REQUIRE_PG=1`.
    #[error(
        "PostgreSQL binaries (initdb, postgres) not found (in ${BIN_ENV} if set, else on PATH \
         or in /usr/lib/postgresql/*/bin), and {REQUIRE_ENV}=1 requires them"
    )]
    Missing,
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// `initdb` or the server failed; the tail of its log is included.
    #[error("{what}: {detail}\n--- tail of {log} ---\n{tail}")]
    Server {
        what: String,
        detail: String,
        log: String,
        tail: String,
    },
    #[error("running {sql:?}: {source}")]
    Sql {
        sql: String,
        #[source]
        source: WireError,
    },
    #[error("invalid database name {0:?}: use 1 to 63 ASCII letters, digits and underscores")]
    BadName(String),
    #[error("setting up the user to run PostgreSQL as: {0}")]
    User(String),
    /// The process-wide cluster of [`PgTemp::shared`] failed to start (earlier).
    #[error("the shared PostgreSQL cluster failed to start: {0}")]
    Shared(String),
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}

/// Whether `HERALD_REQUIRE_PG` asks for PostgreSQL to be present.
pub fn required() -> bool {
    std::env::var(REQUIRE_ENV)
        .map(|v| matches!(v.trim(), "1" | "true" | "yes"))
        .unwrap_or(false)
}

/// The two programs a cluster needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binaries {
    pub initdb: PathBuf,
    pub postgres: PathBuf,
}

/// Looks for `initdb` and `postgres` (see the crate docs for the order).
pub fn find_binaries() -> Option<Binaries> {
    // An explicit directory is the only place looked at (pointing it at an empty
    // directory is how to test the skip path on a machine that has PostgreSQL).
    if let Some(d) = std::env::var_os(BIN_ENV).filter(|d| !d.is_empty()) {
        return binaries_in(Path::new(&d));
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    let mut versioned: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .collect();
    versioned.sort_by_key(|v| std::cmp::Reverse(v.0));
    dirs.extend(versioned.into_iter().map(|(_, d)| d));
    dirs.push(PathBuf::from("/usr/local/pgsql/bin"));
    dirs.iter().find_map(|d| binaries_in(d))
}

/// Both programs from one installation: `initdb` in `dir` (symlinks followed),
/// and `postgres` beside the real `initdb`, or else in `dir`.
fn binaries_in(dir: &Path) -> Option<Binaries> {
    let initdb = dir.join("initdb");
    if !is_executable(&initdb) {
        return None;
    }
    let real = fs::canonicalize(&initdb).unwrap_or_else(|_| initdb.clone());
    let beside = real.parent().map(|p| p.join("postgres"));
    let postgres = beside
        .filter(|p| is_executable(p))
        .or_else(|| Some(dir.join("postgres")).filter(|p| is_executable(p)))?;
    Some(Binaries {
        initdb: real,
        postgres,
    })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Prints, once per process and past the test harness's output capture, that
/// PostgreSQL tests are being skipped.
fn announce_skip() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let msg = format!(
            "\n=== SKIPPING PostgreSQL tests: initdb/postgres not found \
             (set {REQUIRE_ENV}=1 to fail instead) ===\n\n"
        );
        // Straight to the file descriptor: libtest captures `eprintln!`.
        let _ = io::stderr().lock().write_all(msg.as_bytes());
    });
}

/// Server settings. The defaults favour speed over durability (see the crate docs).
#[derive(Debug, Clone)]
pub struct Options {
    /// `-c name=value` settings passed to `postgres`, after the defaults (so they win).
    pub settings: Vec<(String, String)>,
    /// A server certificate and its key (both PEM): with them the server
    /// takes TLS connections (`ssl=on`) beside plain ones.
    pub tls: Option<(String, String)>,
}

impl Default for Options {
    fn default() -> Self {
        let settings = [
            ("fsync", "off"),
            ("synchronous_commit", "off"),
            ("full_page_writes", "off"),
            ("max_connections", "300"),
            ("shared_buffers", "128MB"),
        ];
        Options {
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            tls: None,
        }
    }
}

impl Options {
    /// Adds (or overrides) one server setting.
    pub fn set(mut self, name: &str, value: &str) -> Self {
        self.settings.retain(|(k, _)| k != name);
        self.settings.push((name.to_string(), value.to_string()));
        self
    }

    /// Serves TLS with this certificate chain and key (PEM).
    pub fn with_tls(mut self, cert_pem: &str, key_pem: &str) -> Self {
        self.tls = Some((cert_pem.to_string(), key_pem.to_string()));
        self.set("ssl", "on")
    }
}

/// The unprivileged account the server runs as when this process is root.
#[derive(Debug, Clone)]
struct RunAs {
    uid: u32,
    gid: u32,
}

fn lookup_user(name: &str) -> Option<RunAs> {
    let cname = CString::new(name).ok()?;
    // SAFETY: `passwd` is plain data; getpwnam_r fills it and points its strings
    // into `buf`, which outlives the call; we only read the numeric ids.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 16 * 1024];
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwnam_r(
            cname.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        );
        if rc != 0 || result.is_null() {
            return None;
        }
        Some(RunAs {
            uid: pwd.pw_uid,
            gid: pwd.pw_gid,
        })
    }
}

/// Who runs `initdb` and `postgres`: `None` for this process's own user.
fn run_as() -> Result<Option<RunAs>, Error> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    const FALLBACK: &str = "herald-pg";
    if let Some(u) = lookup_user("postgres").or_else(|| lookup_user(FALLBACK)) {
        return Ok(Some(u));
    }
    let out = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            FALLBACK,
        ])
        .output()
        .map_err(|e| Error::User(format!("running useradd: {e}")))?;
    // Another process may have created it meanwhile: look it up either way.
    lookup_user(FALLBACK).map(Some).ok_or_else(|| {
        Error::User(format!(
            "no postgres user, and useradd {FALLBACK} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    })
}

/// The last `lines` lines of a log file (empty if unreadable).
fn tail_of(path: &Path, lines: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut text = String::new();
    let mut bytes = Vec::new();
    if f.read_to_end(&mut bytes).is_ok() {
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// What a log file gained after byte `offset`.
fn log_since(path: &Path, offset: u64) -> String {
    let mut bytes = Vec::new();
    if let Ok(mut f) = File::open(path)
        && f.seek(SeekFrom::Start(offset)).is_ok()
    {
        let _ = f.read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn free_port() -> Result<u16, Error> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(io_err("finding a free port"))?;
    Ok(l.local_addr()
        .map_err(io_err("finding a free port"))?
        .port())
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH))
}

fn signal(pid: i32, sig: libc::c_int) {
    if pid > 0 {
        // SAFETY: sends a signal to a process we started; errors are ignored
        // (it may have exited already).
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Puts the server's certificate and key where `ssl=on` looks for them
/// (`server.crt`, `server.key` in the data directory), owned by the server's
/// user, the key readable by it alone (the server refuses it otherwise).
fn write_tls_files(
    data_dir: &Path,
    cert: &str,
    key: &str,
    user: Option<&RunAs>,
) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    for (name, text, mode) in [("server.crt", cert, 0o644), ("server.key", key, 0o600)] {
        let path = data_dir.join(name);
        fs::write(&path, text).map_err(io_err(format!("writing {name}")))?;
        fs::set_permissions(&path, fs::Permissions::from_mode(mode))
            .map_err(io_err(format!("chmod {name}")))?;
        if let Some(u) = user {
            std::os::unix::fs::chown(&path, Some(u.uid), Some(u.gid))
                .map_err(io_err(format!("chown {name}")))?;
        }
    }
    Ok(())
}

/// Removes directories of clusters whose owning process has died (killed before
/// it could clean up). A postmaster still running there gets `SIGQUIT` and its
/// directory is left for the next sweep.
fn sweep_stale_dirs() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let is_ours = entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(DIR_PREFIX));
            if !is_ours {
                continue;
            }
            let dir = entry.path();
            let owner = fs::read_to_string(dir.join("owner.pid"))
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok());
            let Some(owner) = owner else { continue };
            if pid_alive(owner) {
                continue;
            }
            let data = dir.join("data");
            let postmaster = fs::read_to_string(data.join("postmaster.pid"))
                .ok()
                .and_then(|s| s.lines().next().and_then(|l| l.trim().parse::<i32>().ok()));
            if let Some(pm) = postmaster.filter(|&p| pid_alive(p)) {
                let cmdline = fs::read(format!("/proc/{pm}/cmdline")).unwrap_or_default();
                let needle = data.to_string_lossy();
                if String::from_utf8_lossy(&cmdline).contains(needle.as_ref()) {
                    signal(pm, libc::SIGQUIT);
                }
                continue;
            }
            let _ = fs::remove_dir_all(&dir);
        }
    });
}

/// A running postmaster and what is needed to stop it.
struct Running {
    pid: i32,
    /// The keeper thread reports the postmaster's exit here.
    exited: mpsc::Receiver<io::Result<ExitStatus>>,
    keeper: JoinHandle<()>,
    dir: TempDir,
}

impl Running {
    fn stop(self) {
        signal(self.pid, libc::SIGINT); // fast shutdown: disconnect clients, checkpoint
        let mut gone = matches!(
            self.exited.recv_timeout(STOP_TIMEOUT),
            Ok(_) | Err(mpsc::RecvTimeoutError::Disconnected)
        );
        if !gone {
            signal(self.pid, libc::SIGKILL);
            gone = matches!(
                self.exited.recv_timeout(Duration::from_secs(5)),
                Ok(_) | Err(mpsc::RecvTimeoutError::Disconnected)
            );
        }
        if gone {
            let _ = self.keeper.join();
        }
        // The TempDir removes the directory as it drops.
        drop(self.dir);
    }
}

/// Starts `cmd` from a thread that stays alive as long as the child, so the
/// child's parent-death signal fires only when this whole process dies.
fn spawn_kept(mut cmd: Command, dir: TempDir) -> Result<Running, Error> {
    let (pid_tx, pid_rx) = mpsc::channel::<io::Result<u32>>();
    let (exit_tx, exit_rx) = mpsc::channel();
    let keeper = std::thread::Builder::new()
        .name("herald-pgtemp".into())
        .spawn(move || match cmd.spawn() {
            Ok(mut child) => {
                let _ = pid_tx.send(Ok(child.id()));
                let _ = exit_tx.send(child.wait());
            }
            Err(e) => {
                let _ = pid_tx.send(Err(e));
            }
        })
        .map_err(io_err("starting the postgres keeper thread"))?;
    let pid = pid_rx
        .recv()
        .map_err(|_| Error::Io {
            context: "starting postgres".into(),
            source: io::Error::other("keeper thread ended"),
        })?
        .map_err(io_err("starting postgres"))?;
    let pid = i32::try_from(pid).map_err(|_| Error::Io {
        context: "starting postgres".into(),
        source: io::Error::other(format!("pid {pid} out of range")),
    })?;
    Ok(Running {
        pid,
        exited: exit_rx,
        keeper,
        dir,
    })
}

/// Makes the child die with this process (Linux), and run as `user`.
fn prepare_child(cmd: &mut Command, user: Option<&RunAs>) {
    if let Some(u) = user {
        // std drops supplementary groups when a root parent changes the uid.
        cmd.uid(u.uid).gid(u.gid);
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the closure runs in the forked child before exec and only makes
        // async-signal-safe calls (prctl, getppid), allocating nothing.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The parent may have died before prctl took effect.
                if libc::getppid() != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
}

enum Launch {
    Ready(Running, u32),
    PortTaken(Running),
}

/// A throwaway PostgreSQL cluster. See the crate docs.
pub struct PgTemp {
    port: u16,
    data_dir: PathBuf,
    log_path: PathBuf,
    socket_dir: PathBuf,
    /// `server_version_num`, e.g. 150013.
    version: u32,
    next_db: AtomicU64,
    running: Mutex<Option<Running>>,
    /// What started the server, to start it again ([`PgTemp::restart_immediate`]).
    bins: Binaries,
    options: Options,
    user: Option<RunAs>,
}

impl std::fmt::Debug for PgTemp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTemp")
            .field("port", &self.port)
            .field("data_dir", &self.data_dir)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

static SHARED: OnceLock<Result<Option<PgTemp>, String>> = OnceLock::new();

extern "C" fn stop_shared_at_exit() {
    if let Some(Ok(Some(pg))) = SHARED.get() {
        pg.shutdown();
    }
}

/// What every start attempt on one initialized cluster shares.
struct Cluster<'a> {
    bins: &'a Binaries,
    options: &'a Options,
    data_dir: &'a Path,
    socket_dir: &'a Path,
    log_path: &'a Path,
    user: &'a Option<RunAs>,
}

impl PgTemp {
    /// Starts a cluster with the default [`Options`]. `Ok(None)` when the binaries
    /// are missing and not required (a notice is printed); see the crate docs.
    pub fn start() -> Result<Option<PgTemp>, Error> {
        Self::start_with(&Options::default())
    }

    /// Starts a cluster with these server settings.
    pub fn start_with(options: &Options) -> Result<Option<PgTemp>, Error> {
        match find_binaries() {
            Some(bins) => Self::start_from(&bins, options).map(Some),
            None if required() => Err(Error::Missing),
            None => {
                announce_skip();
                Ok(None)
            }
        }
    }

    /// The one cluster of this process, started on first use with the default
    /// options and stopped when the process exits. `Ok(None)` as for [`Self::start`].
    pub fn shared() -> Result<Option<&'static PgTemp>, Error> {
        let slot = SHARED.get_or_init(|| {
            let started = PgTemp::start().map_err(|e| e.to_string());
            if let Ok(Some(_)) = &started {
                // SAFETY: registers a plain function; it runs once at normal exit.
                unsafe {
                    libc::atexit(stop_shared_at_exit);
                }
            }
            started
        });
        match slot {
            Ok(Some(pg)) => Ok(Some(pg)),
            Ok(None) => {
                announce_skip();
                Ok(None)
            }
            Err(msg) => Err(Error::Shared(msg.clone())),
        }
    }

    /// Starts a cluster from these binaries.
    pub fn start_from(bins: &Binaries, options: &Options) -> Result<PgTemp, Error> {
        sweep_stale_dirs();
        let user = run_as()?;
        let dir = tempfile::Builder::new()
            .prefix(DIR_PREFIX)
            .tempdir()
            .map_err(io_err("creating the cluster directory"))?;
        let root = dir.path().to_path_buf();
        fs::write(root.join("owner.pid"), std::process::id().to_string())
            .map_err(io_err("writing owner.pid"))?;
        let data_dir = root.join("data");
        let socket_dir = root.join("sock");
        fs::create_dir(&socket_dir).map_err(io_err("creating the socket directory"))?;
        if let Some(u) = &user {
            for p in [&root, &socket_dir] {
                std::os::unix::fs::chown(p, Some(u.uid), Some(u.gid))
                    .map_err(io_err(format!("chown {}", p.display())))?;
            }
        }

        let initdb_log = root.join("initdb.log");
        let log = File::create(&initdb_log).map_err(io_err("creating initdb.log"))?;
        let log2 = log.try_clone().map_err(io_err("opening initdb.log"))?;
        let mut initdb = Command::new(&bins.initdb);
        initdb
            .arg("-D")
            .arg(&data_dir)
            .args([
                "-U",
                SUPERUSER,
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .current_dir(&root)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        prepare_child(&mut initdb, user.as_ref());
        let status = initdb
            .status()
            .map_err(io_err(format!("running {}", bins.initdb.display())))?;
        if !status.success() {
            return Err(Error::Server {
                what: "initdb".into(),
                detail: format!("exited with {status}"),
                log: initdb_log.display().to_string(),
                tail: tail_of(&initdb_log, 30),
            });
        }

        if let Some((cert, key)) = &options.tls {
            write_tls_files(&data_dir, cert, key, user.as_ref())?;
        }
        let log_path = root.join("server.log");
        let mut dir = Some(dir);
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port()?;
            let Some(d) = dir.take() else { break };
            let cluster = Cluster {
                bins,
                options,
                data_dir: &data_dir,
                socket_dir: &socket_dir,
                log_path: &log_path,
                user: &user,
            };
            match Self::launch(&cluster, d, port)? {
                Launch::Ready(running, version) => {
                    return Ok(PgTemp {
                        port,
                        data_dir,
                        log_path,
                        socket_dir,
                        version,
                        next_db: AtomicU64::new(1),
                        running: Mutex::new(Some(running)),
                        bins: bins.clone(),
                        options: options.clone(),
                        user: user.clone(),
                    });
                }
                Launch::PortTaken(running) => {
                    // Someone took the port between our probe and the bind: stop
                    // what we started (keeping the directory) and try another.
                    signal(running.pid, libc::SIGQUIT);
                    let _ = running.exited.recv_timeout(STOP_TIMEOUT);
                    dir = Some(running.dir);
                }
            }
        }
        Err(Error::Server {
            what: "postgres".into(),
            detail: format!("no free port after {PORT_ATTEMPTS} attempts"),
            log: log_path.display().to_string(),
            tail: tail_of(&log_path, 30),
        })
    }

    /// Starts `postgres` on `port` over the cluster `initdb` made; a port
    /// someone else took meanwhile is `PortTaken`, so the caller can try another.
    fn launch(cluster: &Cluster<'_>, dir: TempDir, port: u16) -> Result<Launch, Error> {
        let Cluster {
            bins,
            options,
            data_dir,
            socket_dir,
            log_path,
            user,
        } = *cluster;
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log_path)
            .map_err(io_err("opening server.log"))?;
        // Where this attempt's output starts, to tell its port clash from an earlier one.
        let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
        let log2 = log.try_clone().map_err(io_err("opening server.log"))?;
        let mut cmd = Command::new(&bins.postgres);
        cmd.arg("-D")
            .arg(data_dir)
            .arg("-p")
            .arg(port.to_string())
            .arg("-k")
            .arg(socket_dir)
            .args(["-c", "listen_addresses=127.0.0.1"]);
        for (k, v) in &options.settings {
            cmd.arg("-c").arg(format!("{k}={v}"));
        }
        cmd.current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            // Its own process group: a Ctrl-C at the terminal reaches the test
            // process, whose exit then stops the server in order.
            .process_group(0);
        prepare_child(&mut cmd, user.as_ref());
        let running = spawn_kept(cmd, dir)?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + START_TIMEOUT;
        let fail = |running: Running, detail: String| -> Result<Launch, Error> {
            let tail = tail_of(log_path, 30);
            running.stop();
            Err(Error::Server {
                what: "postgres".into(),
                detail,
                log: log_path.display().to_string(),
                tail,
            })
        };
        loop {
            if let Ok(status) = running.exited.try_recv() {
                if log_since(log_path, log_start).contains("already in use") {
                    return Ok(Launch::PortTaken(running));
                }
                let status = status
                    .map(|s| s.to_string())
                    .unwrap_or_else(|e| e.to_string());
                return fail(running, format!("exited during startup ({status})"));
            }
            let last_error =
                match Session::connect(addr, SUPERUSER, "postgres", Duration::from_secs(2)) {
                    Ok(mut s) => {
                        match s.simple_query("SHOW data_directory; SHOW server_version_num") {
                            Ok(rows) => {
                                let cell = |i: usize| {
                                    rows.get(i)
                                        .and_then(|r| r.first().cloned().flatten())
                                        .unwrap_or_default()
                                };
                                if !same_path(Path::new(&cell(0)), data_dir) {
                                    // Another server answers on this port.
                                    return Ok(Launch::PortTaken(running));
                                }
                                let version = cell(1).parse().unwrap_or(0);
                                return Ok(Launch::Ready(running, version));
                            }
                            Err(e) => e.to_string(),
                        }
                    }
                    Err(e) => e.to_string(),
                };
            if Instant::now() > deadline {
                return fail(
                    running,
                    format!("not accepting logins after {START_TIMEOUT:?}: {last_error}"),
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1`: the server listens on loopback only.
    pub fn host(&self) -> &'static str {
        "127.0.0.1"
    }

    /// The superuser name (trust authentication, no password).
    pub fn user(&self) -> &'static str {
        SUPERUSER
    }

    /// `server_version_num`, e.g. `150013` for 15.13.
    pub fn server_version(&self) -> u32 {
        self.version
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Directory of the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// The server's log file (stdout and stderr).
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The last `lines` lines of the server log.
    pub fn log_tail(&self, lines: usize) -> String {
        tail_of(&self.log_path, lines)
    }

    /// `postgres://postgres@127.0.0.1:PORT/DBNAME`.
    pub fn url(&self, dbname: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{dbname}", self.port)
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    /// A superuser session on the `postgres` database, over the small blocking
    /// client in [`wire`]: usable without an async runtime.
    pub fn session(&self) -> Result<Session, Error> {
        let s = Session::connect(self.addr(), SUPERUSER, "postgres", SQL_TIMEOUT).map_err(
            |source| Error::Sql {
                sql: "(login)".into(),
                source,
            },
        )?;
        Ok(s)
    }

    /// Runs SQL on the `postgres` database as the superuser; returns the rows as text.
    pub fn execute(&self, sql: &str) -> Result<Vec<wire::TextRow>, Error> {
        self.session()?
            .simple_query(sql)
            .map_err(|source| Error::Sql {
                sql: sql.to_string(),
                source,
            })
    }

    /// Creates database `name` and returns its URL.
    pub fn create_database(&self, name: &str) -> Result<String, Error> {
        check_name(name)?;
        // FILE_COPY (15+) copies the template's files and checkpoints; with fsync
        // off that is about 2.5x faster here than the default WAL_LOG strategy.
        let strategy = if self.version >= 150_000 {
            " STRATEGY = FILE_COPY"
        } else {
            ""
        };
        self.execute(&format!("CREATE DATABASE \"{name}\"{strategy}"))?;
        Ok(self.url(name))
    }

    /// Drops database `name`, disconnecting its sessions; no error if it is gone.
    pub fn drop_database(&self, name: &str) -> Result<(), Error> {
        check_name(name)?;
        let force = if self.version >= 130_000 {
            " WITH (FORCE)"
        } else {
            ""
        };
        self.execute(&format!("DROP DATABASE IF EXISTS \"{name}\"{force}"))?;
        Ok(())
    }

    /// Creates a database with a name unique in this cluster (`PREFIX_N`), dropped
    /// when the returned guard is dropped.
    pub fn fresh_database(&self, prefix: &str) -> Result<TempDatabase, Error> {
        let n = self.next_db.fetch_add(1, Ordering::Relaxed);
        let name = format!("{prefix}_{n}");
        let url = self.create_database(&name)?;
        Ok(TempDatabase {
            name,
            url,
            addr: self.addr(),
            force: self.version >= 130_000,
            keep: false,
        })
    }

    /// Crashes the server the way `pg_ctl restart -m immediate` does (`SIGQUIT`
    /// to the postmaster: every session is cut, nothing is checkpointed) and
    /// starts it again on the same port and data, which then runs crash
    /// recovery. Returns once it accepts logins again. For outage tests.
    pub fn restart_immediate(&self) -> Result<(), Error> {
        self.restart_after(Duration::ZERO)
    }

    /// Like [`PgTemp::restart_immediate`], with the server left down for
    /// `down` before it starts again.
    pub fn restart_after(&self, down: Duration) -> Result<(), Error> {
        let mut running = self
            .running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let old = running.take().ok_or_else(|| Error::Server {
            what: "postgres".into(),
            detail: "restart of a cluster that was shut down".into(),
            log: self.log_path.display().to_string(),
            tail: String::new(),
        })?;
        signal(old.pid, libc::SIGQUIT);
        if !matches!(
            old.exited.recv_timeout(STOP_TIMEOUT),
            Ok(_) | Err(mpsc::RecvTimeoutError::Disconnected)
        ) {
            signal(old.pid, libc::SIGKILL);
            let _ = old.exited.recv_timeout(Duration::from_secs(5));
        }
        let _ = old.keeper.join();
        std::thread::sleep(down);
        let cluster = Cluster {
            bins: &self.bins,
            options: &self.options,
            data_dir: &self.data_dir,
            socket_dir: &self.socket_dir,
            log_path: &self.log_path,
            user: &self.user,
        };
        match Self::launch(&cluster, old.dir, self.port)? {
            Launch::Ready(r, _) => {
                *running = Some(r);
                Ok(())
            }
            Launch::PortTaken(r) => {
                r.stop();
                Err(Error::Server {
                    what: "postgres".into(),
                    detail: format!("port {} was taken while the server was down", self.port),
                    log: self.log_path.display().to_string(),
                    tail: tail_of(&self.log_path, 30),
                })
            }
        }
    }

    /// Stops the server and removes its directory. Idempotent; dropping does it too.
    pub fn shutdown(&self) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(r) = running {
            r.stop();
        }
    }
}

impl Drop for PgTemp {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn same_path(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}

fn check_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::BadName(name.to_string()))
    }
}

/// A database made by [`PgTemp::fresh_database`]; dropped (with its sessions
/// disconnected) when this guard drops, unless [`TempDatabase::keep`] was called.
#[derive(Debug)]
pub struct TempDatabase {
    name: String,
    url: String,
    addr: SocketAddr,
    force: bool,
    keep: bool,
}

impl TempDatabase {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `postgres://postgres@127.0.0.1:PORT/NAME`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Leaves the database in place when the guard drops (it still goes away with
    /// the cluster).
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for TempDatabase {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let force = if self.force { " WITH (FORCE)" } else { "" };
        let sql = format!("DROP DATABASE IF EXISTS \"{}\"{force}", self.name);
        // Best effort: the cluster may already be shutting down.
        if let Ok(mut s) = Session::connect(self.addr, SUPERUSER, "postgres", SQL_TIMEOUT) {
            let _ = s.simple_query(&sql);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_are_checked() {
        assert!(check_name("herald_test_1").is_ok());
        for bad in ["", "a-b", "x\"; DROP", &"a".repeat(64), "é"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn options_override_defaults() {
        let o = Options::default().set("fsync", "on").set("work_mem", "8MB");
        let get = |k: &str| {
            o.settings
                .iter()
                .filter(|(n, _)| n == k)
                .collect::<Vec<_>>()
        };
        assert_eq!(get("fsync"), vec![&("fsync".to_string(), "on".to_string())]);
        assert_eq!(get("work_mem").len(), 1);
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        fs::write(&p, "a\nb\nc\nd\n").unwrap();
        assert_eq!(tail_of(&p, 2), "c\nd");
        assert_eq!(tail_of(&dir.path().join("none"), 2), "");
    }
}
