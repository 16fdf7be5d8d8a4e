//! Backend tuning that is not part of the store URL: `[store_options]` in a
//! config file, one part per backend, each read by its own backend only.

use serde::{Deserialize, Serialize};

/// Backend tuning that is not part of the URL: one part per backend, each
/// read by its own backend only.
///
/// In a config file this is `[store_options.sqlite]` and
/// `[store_options.postgres]`. The flat keys of earlier releases
/// (`sqlite_synchronous`, `read_connections`, `pg_notify_window_ms`) are still
/// read; one given in both forms must agree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StoreOptionsToml")]
pub struct StoreOptions {
    #[serde(skip_serializing_if = "is_default")]
    pub sqlite: SqliteOptions,
    #[serde(skip_serializing_if = "is_default")]
    pub postgres: PostgresOptions,
}

/// The SQLite backend's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SqliteOptions {
    pub synchronous: Synchronous,
    /// Read connections kept open beside the single writer.
    pub read_connections: usize,
    /// A cap on the database's size in pages (`PRAGMA max_page_count`, set on
    /// every connection); past it writes fail as a full disk would
    /// ([`crate::StoreError::Full`]). Unset: only the disk limits it. Mostly
    /// for tests and for keeping a database inside a quota.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_page_count: Option<u64>,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            synchronous: Synchronous::Full,
            read_connections: 4,
            max_page_count: None,
        }
    }
}

/// SQLite's `synchronous`: `full` fsyncs every commit, so an acknowledged
/// write survives power loss; `normal` survives a process crash only. Read
/// without regard to case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    #[default]
    Full,
    Normal,
}

impl<'de> Deserialize<'de> for Synchronous {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.trim().to_ascii_lowercase().as_str() {
            "full" => Ok(Synchronous::Full),
            "normal" => Ok(Synchronous::Normal),
            _ => Err(serde::de::Error::custom(format!(
                "expected \"full\" or \"normal\", found {s:?}"
            ))),
        }
    }
}

/// The PostgreSQL backend's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PostgresOptions {
    /// `apply` announces new timers to other nodes (`NOTIFY`) only when they
    /// fall due within this many milliseconds from now; later ones are found
    /// by the owners' periodic loader scans.
    pub notify_window_ms: i64,
    /// The server ends any statement that runs longer (`statement_timeout`,
    /// set on every session), and every store call gives up on its own a few
    /// seconds after it: either way the call fails as
    /// [`crate::StoreError::Unavailable`].
    pub statement_timeout_ms: u64,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            notify_window_ms: 120_000,
            statement_timeout_ms: 30_000,
        }
    }
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// `store_options` as a config file may spell it: the per-backend tables, or
/// the flat keys of earlier releases.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreOptionsToml {
    #[serde(default)]
    sqlite: SqliteToml,
    #[serde(default)]
    postgres: PostgresToml,
    sqlite_synchronous: Option<Synchronous>,
    read_connections: Option<usize>,
    pg_notify_window_ms: Option<i64>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SqliteToml {
    synchronous: Option<Synchronous>,
    read_connections: Option<usize>,
    max_page_count: Option<u64>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PostgresToml {
    notify_window_ms: Option<i64>,
    statement_timeout_ms: Option<u64>,
}

/// The value of a setting given under its new key, its old one, or both
/// (which must agree).
fn either<T: PartialEq + std::fmt::Debug>(
    new: Option<T>,
    old: Option<T>,
    new_key: &str,
    old_key: &str,
) -> Result<Option<T>, String> {
    match (new, old) {
        (Some(n), Some(o)) if n != o => Err(format!(
            "{old_key} = {o:?} (the older name) and {new_key} = {n:?} disagree: keep {new_key}"
        )),
        (n, o) => Ok(n.or(o)),
    }
}

impl TryFrom<StoreOptionsToml> for StoreOptions {
    type Error = String;

    fn try_from(t: StoreOptionsToml) -> Result<Self, String> {
        let (sqlite, postgres) = (SqliteOptions::default(), PostgresOptions::default());
        Ok(StoreOptions {
            sqlite: SqliteOptions {
                synchronous: either(
                    t.sqlite.synchronous,
                    t.sqlite_synchronous,
                    "sqlite.synchronous",
                    "sqlite_synchronous",
                )?
                .unwrap_or(sqlite.synchronous),
                read_connections: either(
                    t.sqlite.read_connections,
                    t.read_connections,
                    "sqlite.read_connections",
                    "read_connections",
                )?
                .unwrap_or(sqlite.read_connections),
                max_page_count: t.sqlite.max_page_count,
            },
            postgres: PostgresOptions {
                notify_window_ms: either(
                    t.postgres.notify_window_ms,
                    t.pg_notify_window_ms,
                    "postgres.notify_window_ms",
                    "pg_notify_window_ms",
                )?
                .unwrap_or(postgres.notify_window_ms),
                statement_timeout_ms: t
                    .postgres
                    .statement_timeout_ms
                    .filter(|&ms| ms > 0)
                    .unwrap_or(postgres.statement_timeout_ms),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde::de::IntoDeserializer;
    use serde::de::value::{Error, MapDeserializer};

    use super::*;

    /// Reads `store_options` from string keys and values.
    fn read(pairs: &[(&str, &str)]) -> Result<StoreOptions, Error> {
        let map = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        StoreOptions::deserialize(MapDeserializer::new(map))
    }

    #[test]
    fn synchronous_is_full_or_normal_in_any_case() {
        let read = |s: &str| Synchronous::deserialize(s.into_deserializer());
        let ok: Result<_, Error> = read("FULL");
        assert_eq!(ok.unwrap(), Synchronous::Full);
        let ok: Result<_, Error> = read(" normal ");
        assert_eq!(ok.unwrap(), Synchronous::Normal);
        for bad in ["off", "extra", ""] {
            let err: Result<_, Error> = read(bad);
            let err = err.unwrap_err().to_string();
            assert!(err.contains("full") && err.contains("normal"), "{err}");
        }
    }

    /// Both forms of every key, and what a file may not hold, are read
    /// through the config loader's tests (`herald/src/config.rs`).
    #[test]
    fn nothing_given_is_the_default_and_unknown_keys_are_refused() {
        assert_eq!(read(&[]).unwrap(), StoreOptions::default());
        assert!(read(&[("bogus", "1")]).is_err());
    }
}
