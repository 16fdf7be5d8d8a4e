//! The PostgreSQL a bench runs against: a throwaway cluster the bench starts
//! itself (`--store postgres`), or an existing database the caller names
//! (`--store postgres://...`).
//!
//! Starting a cluster links `herald-pgtemp`, which may create a system user
//! to run `initdb` as: that belongs in a developer's build, not in the
//! product, so it needs the `bench-pg` feature.

use std::path::Path;

use anyhow::{Context, bail};

/// Why `--store postgres` fails in a build without the feature.
const NO_THROWAWAY: &str = "--store postgres starts a throwaway PostgreSQL cluster, which this \
    build of herald leaves out: build it with `cargo build --release -p herald --features \
    bench-pg`, or pass --store postgres://USER@HOST/DB naming an existing, empty database";

/// Fails when this build cannot start a throwaway cluster.
pub(super) fn throwaway_available() -> anyhow::Result<()> {
    if cfg!(feature = "bench-pg") {
        Ok(())
    } else {
        bail!(NO_THROWAWAY)
    }
}

/// The database the bench creates on a cluster it started.
#[cfg(feature = "bench-pg")]
const DATABASE: &str = "herald_bench";

pub(super) struct Postgres {
    url: String,
    /// The cluster the bench started; stopped and removed when dropped.
    #[cfg(feature = "bench-pg")]
    cluster: Option<herald_pgtemp::PgTemp>,
}

impl Postgres {
    /// Starts a throwaway cluster and creates the bench's database. It is
    /// durable (`fsync`, `synchronous_commit` and `full_page_writes` on, as
    /// in production) unless `fast`; with `statements` it loads
    /// `pg_stat_statements` for [`Self::top_statements`]. `settings` are
    /// further server settings (`--pg-set`), applied last.
    #[cfg(feature = "bench-pg")]
    pub(super) fn throwaway(
        fast: bool,
        statements: bool,
        settings: &[(String, String)],
    ) -> anyhow::Result<Self> {
        let mut options = herald_pgtemp::Options::default();
        if !fast {
            for key in ["fsync", "synchronous_commit", "full_page_writes"] {
                options = options.set(key, "on");
            }
        }
        if statements {
            options = options
                .set("shared_preload_libraries", "pg_stat_statements")
                .set("pg_stat_statements.track", "all");
        }
        for (key, value) in settings {
            options = options.set(key, value);
        }
        let pg = herald_pgtemp::PgTemp::start_with(&options)
            .map_err(|e| anyhow::anyhow!("starting PostgreSQL: {e}"))?
            .context("--store postgres needs initdb and postgres on this machine")?;
        let url = pg
            .create_database(DATABASE)
            .map_err(|e| anyhow::anyhow!("creating the database: {e}"))?;
        if statements {
            pg.execute("CREATE EXTENSION pg_stat_statements")
                .map_err(|e| anyhow::anyhow!("loading pg_stat_statements: {e}"))?;
        }
        eprintln!(
            "PostgreSQL {} on port {} ({}: a throwaway cluster)",
            pg.server_version(),
            pg.port(),
            if fast {
                "fsync off"
            } else {
                "durable: fsync and synchronous_commit on"
            }
        );
        Ok(Self {
            url,
            cluster: Some(pg),
        })
    }

    #[cfg(not(feature = "bench-pg"))]
    pub(super) fn throwaway(
        _fast: bool,
        _statements: bool,
        _settings: &[(String, String)],
    ) -> anyhow::Result<Self> {
        bail!(NO_THROWAWAY)
    }

    /// Forgets the statement figures so far (`pg_stat_statements`), on a
    /// cluster the bench started with them.
    #[cfg(feature = "bench-pg")]
    pub(super) fn reset_statements(&self) {
        if let Some(c) = &self.cluster {
            let _ = c.execute("SELECT pg_stat_statements_reset()");
        }
    }

    #[cfg(not(feature = "bench-pg"))]
    pub(super) fn reset_statements(&self) {}

    /// The statements that took the most time since the last reset, one line
    /// each: calls, rows, total and mean time, and the start of the query.
    #[cfg(feature = "bench-pg")]
    pub(super) fn top_statements(&self, limit: usize) -> Vec<String> {
        let Some(c) = &self.cluster else {
            return Vec::new();
        };
        let sql = format!(
            "SELECT calls, rows, round(total_exec_time::numeric, 1), \
             round(mean_exec_time::numeric, 3), \
             left(regexp_replace(query, '\\s+', ' ', 'g'), 150) \
             FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT {limit}"
        );
        let Ok(rows) = c.execute(&sql) else {
            return Vec::new();
        };
        rows.iter()
            .map(|r| {
                let f = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
                format!(
                    "{:>8} calls {:>9} rows {:>10} ms total {:>8} ms each  {}",
                    f(0),
                    f(1),
                    f(2),
                    f(3),
                    f(4)
                )
            })
            .collect()
    }

    #[cfg(not(feature = "bench-pg"))]
    pub(super) fn top_statements(&self, _limit: usize) -> Vec<String> {
        Vec::new()
    }

    /// An existing database. It must hold no timers: the figures count
    /// every delivery the sink sees.
    pub(super) async fn existing(url: &str) -> anyhow::Result<Self> {
        let store = herald_store::open(url, &herald_store::StoreOptions::default())
            .await
            .context("opening the --store database")?;
        let timers: u64 = store
            .count_by_tenant_state()
            .await
            .context("counting the --store database's timers")?
            .iter()
            .map(|(_, _, n)| n)
            .sum();
        if timers > 0 {
            bail!(
                "the --store database holds {timers} timers; give the bench an empty database, \
                 as its figures count every delivery"
            );
        }
        eprintln!(
            "PostgreSQL from --store (its CPU is not measured apart: on this machine it counts as other load)"
        );
        Ok(Self {
            url: url.to_string(),
            #[cfg(feature = "bench-pg")]
            cluster: None,
        })
    }

    pub(super) fn url(&self) -> &str {
        &self.url
    }

    /// The bench database's `pg_database_size`, on a cluster the bench started.
    #[cfg(feature = "bench-pg")]
    pub(super) fn database_bytes(&self) -> Option<u64> {
        let rows = self
            .cluster
            .as_ref()?
            .execute(&format!("SELECT pg_database_size('{DATABASE}')"))
            .ok()?;
        rows.first()?.first()?.as_deref()?.parse().ok()
    }

    #[cfg(not(feature = "bench-pg"))]
    pub(super) fn database_bytes(&self) -> Option<u64> {
        None
    }

    /// The data directory of a cluster the bench started, for the CPU meter.
    #[cfg(feature = "bench-pg")]
    pub(super) fn data_dir(&self) -> Option<&Path> {
        self.cluster.as_ref().map(|c| c.data_dir())
    }

    #[cfg(not(feature = "bench-pg"))]
    pub(super) fn data_dir(&self) -> Option<&Path> {
        None
    }
}
