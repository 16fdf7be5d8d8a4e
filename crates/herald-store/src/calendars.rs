//! Working-day calendars a tenant stored (`PUT /v1/calendars/{name}`): one
//! row per tenant and name, replaced whole. The built-in ones are not stored;
//! a stored calendar of the same name stands in for it, for that tenant.
//! [`CalendarStore`] is one area of [`crate::Store`]; its rows are read
//! through `model::calendars`.

use async_trait::async_trait;
use herald_core::TenantId;

use crate::Result;

/// One stored calendar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarRecord {
    pub tenant: TenantId,
    pub name: String,
    /// The calendar spec as JSON text (checked by the API before it is stored).
    pub body: String,
    /// When the name was first stored.
    pub created_at: i64,
    /// When it was last written.
    pub updated_at: i64,
    /// The API key that last wrote it, if known.
    pub updated_by: Option<String>,
}

#[async_trait]
pub trait CalendarStore: Send + Sync + 'static {
    /// Stores `cal` under its tenant and name, replacing what was there (and
    /// keeping its `created_at`), in one statement; returns the row as stored.
    async fn put_calendar(&self, cal: &CalendarRecord) -> Result<CalendarRecord>;

    /// A tenant's calendar by name.
    async fn get_calendar(&self, tenant: TenantId, name: &str) -> Result<Option<CalendarRecord>>;

    /// A tenant's calendars, by name.
    async fn list_calendars(&self, tenant: TenantId) -> Result<Vec<CalendarRecord>>;
}

/// The statements both backends run.
pub(crate) mod sql {
    use crate::model::calendar_cols;
    use crate::shared_sql::{Statement, statement};

    pub(crate) const PUT: Statement = statement!(concat!(
        "INSERT INTO calendars (tenant_id, name, body, created_at, updated_at, updated_by) \
         VALUES ($1, $2, $3, $4, $4, $5) \
         ON CONFLICT (tenant_id, name) DO UPDATE SET body = excluded.body, \
         updated_at = excluded.updated_at, updated_by = excluded.updated_by RETURNING ",
        calendar_cols!()
    ));
    pub(crate) const GET: Statement = statement!(concat!(
        "SELECT ",
        calendar_cols!(),
        " FROM calendars WHERE tenant_id = $1 AND name = $2"
    ));
    pub(crate) const LIST: Statement = statement!(concat!(
        "SELECT ",
        calendar_cols!(),
        " FROM calendars WHERE tenant_id = $1 ORDER BY name"
    ));
}
