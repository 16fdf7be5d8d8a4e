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
    /// Starts a throwaway cluster (fsync off) and creates the bench's database.
    #[cfg(feature = "bench-pg")]
    pub(super) fn throwaway() -> anyhow::Result<Self> {
        let pg = herald_pgtemp::PgTemp::start()
            .map_err(|e| anyhow::anyhow!("starting PostgreSQL: {e}"))?
            .context("--store postgres needs initdb and postgres on this machine")?;
        let url = pg
            .create_database(DATABASE)
            .map_err(|e| anyhow::anyhow!("creating the database: {e}"))?;
        eprintln!(
            "PostgreSQL {} on port {} (fsync off: a throwaway test cluster)",
            pg.server_version(),
            pg.port()
        );
        Ok(Self {
            url,
            cluster: Some(pg),
        })
    }

    #[cfg(not(feature = "bench-pg"))]
    pub(super) fn throwaway() -> anyhow::Result<Self> {
        bail!(NO_THROWAWAY)
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
