//! What lets one statement text serve both backends: SQLite's reading of
//! PostgreSQL's `$N` placeholders, and the statements of the `meta` settings.

/// `sql` with SQLite's `?N` placeholders for PostgreSQL's `$N` (SQLite would
/// read `$N` as a named parameter).
pub(crate) fn sqlite_placeholders(sql: &str) -> String {
    sql.replace('$', "?")
}

/// The `meta` settings (`Store::get_meta`, `Store::put_meta`).
pub(crate) mod meta {
    /// $1 key.
    pub(crate) const GET: &str = "SELECT value FROM meta WHERE key = $1";
    /// $1 key, $2 value.
    pub(crate) const PUT: &str = "INSERT INTO meta (key, value) VALUES ($1, $2) \
        ON CONFLICT (key) DO UPDATE SET value = excluded.value";
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_become_sqlite_s() {
        assert_eq!(
            super::sqlite_placeholders("a = $1 AND b > $2"),
            "a = ?1 AND b > ?2"
        );
    }
}
