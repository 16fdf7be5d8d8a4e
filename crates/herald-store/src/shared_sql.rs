//! What lets one statement text serve both backends: SQLite's reading of
//! PostgreSQL's `$N` placeholders, and the statements of the `meta` settings.
//!
//! A statement both backends run is written once, with `$N`, as a
//! [`Statement`] made by [`statement!`]: the SQLite text is rewritten at
//! compile time, so a hot path (timer fetch and complete) pays no allocation
//! per call for sharing its SQL. [`sqlite_placeholders`] remains for text
//! built at run time.

/// One statement in both backends' placeholder syntax.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Statement {
    /// As written, with PostgreSQL's `$N`.
    pub(crate) pg: &'static str,
    /// The same text with SQLite's `?N` (SQLite would read `$N` as a named
    /// parameter).
    pub(crate) sqlite: &'static str,
}

/// A [`Statement`] from a `$N` text (a literal or `concat!`), its SQLite
/// form computed by the compiler.
macro_rules! statement {
    ($text:expr) => {{
        const PG: &str = $text;
        const BYTES: [u8; PG.len()] = $crate::shared_sql::sqlite_bytes(PG);
        $crate::shared_sql::Statement {
            pg: PG,
            sqlite: $crate::shared_sql::utf8(&BYTES),
        }
    }};
}
pub(crate) use statement;

/// `sql`'s bytes with every `$` made `?`, for [`statement!`]. `N` is the
/// text's length (the macro passes it).
pub(crate) const fn sqlite_bytes<const N: usize>(sql: &str) -> [u8; N] {
    let src = sql.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = if src[i] == b'$' { b'?' } else { src[i] };
        i += 1;
    }
    out
}

/// The text [`sqlite_bytes`] made: it swapped one ASCII byte for another in
/// UTF-8, so it is still UTF-8 (checked while compiling).
pub(crate) const fn utf8(bytes: &'static [u8]) -> &'static str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(_) => panic!("a shared statement is not UTF-8"),
    }
}

/// `sql` with SQLite's `?N` placeholders for PostgreSQL's `$N`, for text
/// built at run time (a fixed statement is a [`Statement`]).
pub(crate) fn sqlite_placeholders(sql: &str) -> String {
    sql.replace('$', "?")
}

/// The `meta` settings (`Store::get_meta`, `Store::put_meta`).
pub(crate) mod meta {
    use super::Statement;

    /// $1 key.
    pub(crate) const GET: Statement = statement!("SELECT value FROM meta WHERE key = $1");
    /// $1 key, $2 value.
    pub(crate) const PUT: Statement = statement!(
        "INSERT INTO meta (key, value) VALUES ($1, $2) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    );
}

#[cfg(test)]
mod tests {
    use super::Statement;

    #[test]
    fn placeholders_become_sqlite_s() {
        assert_eq!(
            super::sqlite_placeholders("a = $1 AND b > $2"),
            "a = ?1 AND b > ?2"
        );
    }

    #[test]
    fn statements_carry_both_texts() {
        const S: Statement = statement!(concat!("a = $1", " AND b > $2"));
        assert_eq!(S.pg, "a = $1 AND b > $2");
        assert_eq!(S.sqlite, "a = ?1 AND b > ?2");
        assert_eq!(S.sqlite, super::sqlite_placeholders(S.pg));
    }
}
