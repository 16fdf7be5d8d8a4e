//! Stored calendars.

use super::{Columns, Decode, Reader};
use crate::{CalendarRecord, Result};

/// The columns of a `calendars` row, as [`CalendarRecord`] reads them.
macro_rules! calendar_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "tenant_id", "name", "body", "created_at", "updated_at", "updated_by")
    };
}
pub(crate) use calendar_cols;

impl Decode for CalendarRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(CalendarRecord {
            tenant: r.tenant("calendars.tenant_id")?,
            name: r.string("calendars.name")?,
            body: r.string("calendars.body")?,
            created_at: r.int("calendars.created_at")?,
            updated_at: r.int("calendars.updated_at")?,
            updated_by: r.opt_string("calendars.updated_by")?,
        })
    }
}
