//! Schema migrations, numbered the same on both backends.
//!
//! Each backend keeps its migrations as `.sql` files in its `migrations/`
//! folder, `NNNN_what.sql`, loaded with `include_str!`. Migration `N` brings
//! a database to schema version `N` on either backend, so a version means the
//! same tables everywhere (a test holds the two lists to the same names).
//! Append new files; never edit one that has shipped.

/// One migration: its file's name without `.sql`, and its SQL.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    pub(crate) name: &'static str,
    pub(crate) sql: &'static str,
}

/// The schema version after `migrations`, as a database records it.
pub(crate) fn latest(migrations: &[Migration]) -> i64 {
    migrations.len() as i64
}

/// Checks a backend's list: names numbered 1, 2, 3, ... in order.
#[cfg(test)]
pub(crate) fn check_numbering(migrations: &[Migration]) {
    for (i, m) in migrations.iter().enumerate() {
        let number = format!("{:04}_", i + 1);
        assert!(
            m.name.starts_with(&number),
            "{} is number {}",
            m.name,
            i + 1
        );
        assert!(!m.sql.trim().is_empty(), "{} is empty", m.name);
    }
}
