//! PostgreSQL failures as typed store errors.

use tokio_postgres::Row;
use tokio_postgres::types::FromSql;

use crate::{Result, StoreError};

/// Turns a driver error into a typed store error by its SQLSTATE: a unique
/// violation (`23505`) is a conflict, other integrity (`23`) and data (`22`)
/// errors are refusals, a full disk (`53100`) is [`StoreError::Full`], and everything else (deadlocks and serialization
/// failures included, which [`StoreError::is_retryable`] knows by code) is an
/// unavailable store, with the code kept.
pub(super) fn pg_error(what: &str, e: &tokio_postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        let mut msg = format!(
            "postgres: {what}: {} {code}: {}",
            db.severity(),
            db.message()
        );
        if let Some(detail) = db.detail() {
            msg.push_str(&format!(" ({detail})"));
        }
        return match code {
            // disk_full: nothing was written, and nothing will be until
            // space returns.
            "53100" => StoreError::Full { message: msg },
            "23505" => StoreError::Conflict {
                what: what.to_string(),
                why: msg,
            },
            c if c.starts_with("23") || c.starts_with("22") => StoreError::Refused {
                what: what.to_string(),
                why: msg,
            },
            _ => StoreError::Unavailable {
                code: Some(code.to_string()),
                message: msg,
            },
        };
    }
    let mut msg = format!("postgres: {what}: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(&format!(": {s}"));
        source = s.source();
    }
    StoreError::unavailable(msg)
}

/// Whether an error is a deadlock or serialization failure, after which the
/// whole transaction can simply run again.
pub(super) fn retryable(e: &StoreError) -> bool {
    e.is_retryable()
}

/// Adds context to a driver error.
pub(super) trait Ctx<T> {
    fn ctx(self, what: &str) -> Result<T>;
}

impl<T> Ctx<T> for std::result::Result<T, tokio_postgres::Error> {
    fn ctx(self, what: &str) -> Result<T> {
        self.map_err(|e| pg_error(what, &e))
    }
}

/// A column the shared readers do not cover (arrays, aggregates), typed as
/// the statement returns it; a value of another type means the row is corrupt.
pub(super) fn col<'a, T: FromSql<'a>>(row: &'a Row, idx: usize, name: &str) -> Result<T> {
    row.try_get(idx)
        .map_err(|e| StoreError::Corrupt(format!("postgres: column {name}: {e}")))
}
