//! Column access over both drivers' rows.

use tokio_postgres::types::Type;

use crate::{Result, StoreError};

/// One column value in the shapes Herald stores. PostgreSQL's `SMALLINT` and
/// `INTEGER` arrive widened to `i64`, like every SQLite integer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'a> {
    Null,
    Int(i64),
    Bool(bool),
    Text(&'a str),
    Bytes(&'a [u8]),
}

impl Value<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) => "an integer",
            Value::Bool(_) => "a boolean",
            Value::Text(_) => "text",
            Value::Bytes(_) => "bytes",
        }
    }
}

/// A value this version cannot read: the row is corrupt.
fn corrupt(name: &str, why: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("column {name}: {why}"))
}

fn expected(name: &str, want: &str, got: &Value<'_>) -> StoreError {
    corrupt(name, format!("expected {want}, found {}", got.kind()))
}

/// A state stored as a code or a name (each table picks one; the campaign
/// send log stores codes on SQLite and names on PostgreSQL).
pub(crate) trait Stored: Sized {
    fn from_stored(v: Value<'_>) -> Option<Self>;
}

/// A row as a list of columns, by position. `name` (`table.column`) only
/// labels the error when a value is missing or of the wrong shape.
pub(crate) trait Columns {
    fn value(&self, idx: usize, name: &str) -> Result<Value<'_>>;

    fn opt_int(&self, idx: usize, name: &str) -> Result<Option<i64>> {
        match self.value(idx, name)? {
            Value::Null => Ok(None),
            Value::Int(v) => Ok(Some(v)),
            other => Err(expected(name, "an integer", &other)),
        }
    }

    fn int(&self, idx: usize, name: &str) -> Result<i64> {
        self.opt_int(idx, name)?
            .ok_or_else(|| expected(name, "an integer", &Value::Null))
    }

    /// An integer column narrowed to the type the record holds.
    fn narrow<T: TryFrom<i64>>(&self, idx: usize, name: &str) -> Result<T> {
        let v = self.int(idx, name)?;
        T::try_from(v).map_err(|_| corrupt(name, format!("{v} is out of range")))
    }

    fn opt_str(&self, idx: usize, name: &str) -> Result<Option<&str>> {
        match self.value(idx, name)? {
            Value::Null => Ok(None),
            Value::Text(s) => Ok(Some(s)),
            other => Err(expected(name, "text", &other)),
        }
    }

    fn str(&self, idx: usize, name: &str) -> Result<&str> {
        self.opt_str(idx, name)?
            .ok_or_else(|| expected(name, "text", &Value::Null))
    }

    fn bytes(&self, idx: usize, name: &str) -> Result<&[u8]> {
        match self.value(idx, name)? {
            Value::Bytes(b) => Ok(b),
            other => Err(expected(name, "bytes", &other)),
        }
    }

    /// A boolean: PostgreSQL's `BOOLEAN`, or SQLite's 0 / 1.
    fn flag(&self, idx: usize, name: &str) -> Result<bool> {
        match self.value(idx, name)? {
            Value::Bool(b) => Ok(b),
            Value::Int(0) => Ok(false),
            Value::Int(1) => Ok(true),
            other => Err(expected(name, "a boolean", &other)),
        }
    }

    fn state<S: Stored>(&self, idx: usize, name: &str) -> Result<S> {
        let v = self.value(idx, name)?;
        S::from_stored(v).ok_or_else(|| match v {
            Value::Int(c) => corrupt(name, format!("unknown state code {c}")),
            Value::Text(s) => corrupt(name, format!("unknown state {s:?}")),
            other => expected(name, "a state", &other),
        })
    }
}

impl Columns for rusqlite::Row<'_> {
    fn value(&self, idx: usize, name: &str) -> Result<Value<'_>> {
        use rusqlite::types::ValueRef;
        Ok(match self.get_ref(idx).map_err(|e| corrupt(name, e))? {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(v) => Value::Int(v),
            ValueRef::Text(b) => Value::Text(std::str::from_utf8(b).map_err(|e| corrupt(name, e))?),
            ValueRef::Blob(b) => Value::Bytes(b),
            ValueRef::Real(v) => return Err(corrupt(name, format!("unexpected real {v}"))),
        })
    }
}

impl Columns for tokio_postgres::Row {
    fn value(&self, idx: usize, name: &str) -> Result<Value<'_>> {
        let ty = self
            .columns()
            .get(idx)
            .map(|c| c.type_())
            .ok_or_else(|| corrupt(name, format!("no column {idx} in the row")))?;
        let bad = |e: tokio_postgres::Error| corrupt(name, e);
        let v = if *ty == Type::INT8 {
            self.try_get::<_, Option<i64>>(idx)
                .map_err(bad)?
                .map(Value::Int)
        } else if *ty == Type::INT4 {
            self.try_get::<_, Option<i32>>(idx)
                .map_err(bad)?
                .map(|v| Value::Int(i64::from(v)))
        } else if *ty == Type::INT2 {
            self.try_get::<_, Option<i16>>(idx)
                .map_err(bad)?
                .map(|v| Value::Int(i64::from(v)))
        } else if *ty == Type::BOOL {
            self.try_get::<_, Option<bool>>(idx)
                .map_err(bad)?
                .map(Value::Bool)
        } else if *ty == Type::BYTEA {
            self.try_get::<_, Option<&[u8]>>(idx)
                .map_err(bad)?
                .map(Value::Bytes)
        } else {
            // TEXT, VARCHAR, NAME, ...: whatever the driver reads as a string.
            self.try_get::<_, Option<&str>>(idx)
                .map_err(bad)?
                .map(Value::Text)
        };
        Ok(v.unwrap_or(Value::Null))
    }
}

/// Reads the columns of a row one after the other, as a column list names them.
pub(crate) struct Reader<'r, R: Columns + ?Sized> {
    row: &'r R,
    next: usize,
}

impl<'r, R: Columns + ?Sized> Reader<'r, R> {
    pub(crate) fn new(row: &'r R) -> Self {
        Reader { row, next: 0 }
    }

    fn take(&mut self) -> usize {
        let i = self.next;
        self.next += 1;
        i
    }

    pub(crate) fn int(&mut self, name: &str) -> Result<i64> {
        let i = self.take();
        self.row.int(i, name)
    }

    pub(crate) fn opt_int(&mut self, name: &str) -> Result<Option<i64>> {
        let i = self.take();
        self.row.opt_int(i, name)
    }

    pub(crate) fn narrow<T: TryFrom<i64>>(&mut self, name: &str) -> Result<T> {
        let i = self.take();
        self.row.narrow(i, name)
    }

    /// A count or index, stored signed.
    pub(crate) fn unsigned(&mut self, name: &str) -> Result<u64> {
        let v = self.int(name)?;
        super::from_db(v, name)
    }

    pub(crate) fn opt_unsigned(&mut self, name: &str) -> Result<Option<u64>> {
        self.opt_int(name)?
            .map(|v| super::from_db(v, name))
            .transpose()
    }

    pub(crate) fn string(&mut self, name: &str) -> Result<String> {
        let i = self.take();
        self.row.str(i, name).map(str::to_owned)
    }

    pub(crate) fn opt_string(&mut self, name: &str) -> Result<Option<String>> {
        let i = self.take();
        Ok(self.row.opt_str(i, name)?.map(str::to_owned))
    }

    /// A tenant id, stored as a (non-negative) integer.
    pub(crate) fn tenant(&mut self, name: &str) -> Result<herald_core::TenantId> {
        self.narrow::<u32>(name).map(herald_core::TenantId)
    }

    /// A SHA-256, stored as 32 bytes.
    pub(crate) fn hash(&mut self, name: &str) -> Result<[u8; 32]> {
        let i = self.take();
        let b = self.row.bytes(i, name)?;
        <[u8; 32]>::try_from(b).map_err(|_| corrupt(name, format!("{} bytes, not 32", b.len())))
    }

    pub(crate) fn flag(&mut self, name: &str) -> Result<bool> {
        let i = self.take();
        self.row.flag(i, name)
    }

    pub(crate) fn state<S: Stored>(&mut self, name: &str) -> Result<S> {
        let i = self.take();
        self.row.state(i, name)
    }

    /// Text parsed with `parse` (a kind, say); a value it refuses is corrupt.
    pub(crate) fn parsed<T>(&mut self, name: &str, parse: fn(&str) -> Option<T>) -> Result<T> {
        let i = self.take();
        let s = self.row.str(i, name)?;
        parse(s).ok_or_else(|| corrupt(name, format!("unknown value {s:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shape SQLite hands over, and the mismatches a corrupt row shows.
    #[test]
    fn sqlite_rows_read_as_values() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.query_row(
            "SELECT 7, NULL, 'seven', x'07', 1, 2, 'x', 1.5, 300",
            [],
            |row| {
                assert_eq!(row.int(0, "a").unwrap(), 7);
                assert_eq!(row.opt_int(1, "b").unwrap(), None);
                assert_eq!(row.str(2, "c").unwrap(), "seven");
                assert_eq!(row.value(3, "d").unwrap(), Value::Bytes(&[7]));
                assert!(row.flag(4, "e").unwrap());
                assert!(matches!(row.flag(5, "f"), Err(StoreError::Corrupt(_))));
                assert!(matches!(row.int(6, "g"), Err(StoreError::Corrupt(_))));
                assert!(matches!(row.int(1, "b"), Err(StoreError::Corrupt(_))));
                assert!(matches!(row.value(7, "h"), Err(StoreError::Corrupt(_))));
                assert_eq!(row.narrow::<u8>(0, "a").unwrap(), 7);
                assert!(matches!(
                    row.narrow::<u8>(8, "i"),
                    Err(StoreError::Corrupt(_))
                ));
                Ok(())
            },
        )
        .unwrap();
    }
}
