//! SQLite failures as typed store errors.

use crate::{Result, StoreError};

/// Adds context to a rusqlite error.
pub(super) trait Ctx<T> {
    fn ctx(self, what: &str) -> Result<T>;
}

impl<T> Ctx<T> for rusqlite::Result<T> {
    fn ctx(self, what: &str) -> Result<T> {
        self.map_err(|e| sqlite_error(what, &e))
    }
}

/// Turns a driver error into a typed store error by its result code: a
/// unique or primary-key violation is a conflict, another constraint
/// violation a refusal, a full disk (or `max_page_count`) is
/// [`StoreError::Full`], and the rest an unavailable store, with the
/// extended result code kept.
pub(super) fn sqlite_error(what: &str, e: &rusqlite::Error) -> StoreError {
    use rusqlite::ffi;
    let message = format!("sqlite: {what}: {e}");
    match e {
        rusqlite::Error::SqliteFailure(f, _) => match f.extended_code {
            ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                StoreError::Conflict {
                    what: what.to_string(),
                    why: message,
                }
            }
            _ if f.code == rusqlite::ErrorCode::ConstraintViolation => StoreError::Refused {
                what: what.to_string(),
                why: message,
            },
            // The disk (or `max_page_count`) is full: the statement and its
            // transaction changed nothing.
            _ if f.code == rusqlite::ErrorCode::DiskFull => StoreError::Full { message },
            code => StoreError::Unavailable {
                code: Some(code.to_string()),
                message,
            },
        },
        _ => StoreError::unavailable(message),
    }
}
