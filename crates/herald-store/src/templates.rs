//! Message templates: named, versioned, per tenant.
//!
//! A version is written once and never changed, so every node may keep every
//! version in memory and reload only when the table's census (count and
//! largest id) moves. [`TemplateStore`] is one area of [`crate::Store`]; its
//! rows are read through `model::templates`.

use async_trait::async_trait;
use herald_core::TenantId;

use crate::Result;

/// One stored version of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateRecord {
    /// Global, increasing with each version written.
    pub id: i64,
    pub tenant: TenantId,
    pub name: String,
    /// 1 for the first version.
    pub version: u32,
    /// The template body as JSON text (checked by the API before it is stored).
    pub body: String,
    pub created_at: i64,
    /// The API key that wrote the version (its id and name), if known.
    pub created_by: Option<String>,
}

/// A version to write ([`TemplateStore::put_template`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTemplateVersion {
    pub tenant: TenantId,
    pub name: String,
    pub body: String,
    pub created_at: i64,
    pub created_by: Option<String>,
}

/// Whether a write starts a template or adds a version to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateWrite {
    /// Version 1; a template of that name already stored is a conflict.
    Create,
    /// The next version; no template of that name is not found.
    NewVersion,
}

/// How many versions are stored and the largest id: a node reloads its
/// templates when this changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TemplateCensus {
    pub versions: u64,
    pub max_id: i64,
}

#[async_trait]
pub trait TemplateStore: Send + Sync + 'static {
    /// Writes a version in one statement and returns it as stored.
    async fn put_template(
        &self,
        new: &NewTemplateVersion,
        how: TemplateWrite,
    ) -> Result<TemplateRecord>;

    /// The count of stored versions and the largest id, across tenants.
    async fn template_census(&self) -> Result<TemplateCensus>;

    /// Every stored version of every tenant, by id.
    async fn all_templates(&self) -> Result<Vec<TemplateRecord>>;
}

/// The statements both backends run.
pub(crate) mod sql {
    use crate::model::template_cols;
    use crate::shared_sql::{Statement, statement};

    pub(crate) const CREATE: Statement = statement!(concat!(
        "INSERT INTO templates (tenant_id, name, version, body, created_at, created_by) \
         VALUES ($1, $2, 1, $3, $4, $5) RETURNING ",
        template_cols!()
    ));
    // No row comes back when the template does not exist.
    pub(crate) const NEXT: Statement = statement!(concat!(
        "INSERT INTO templates (tenant_id, name, version, body, created_at, created_by) \
         SELECT $1, $2, max(version) + 1, $3, $4, $5 FROM templates \
         WHERE tenant_id = $1 AND name = $2 HAVING count(*) > 0 RETURNING ",
        template_cols!()
    ));
    pub(crate) const CENSUS: Statement =
        statement!("SELECT count(*), coalesce(max(id), 0) FROM templates");
    pub(crate) const ALL: Statement = statement!(concat!(
        "SELECT ",
        template_cols!(),
        " FROM templates ORDER BY id"
    ));
}
