//! Tenants, API keys and the audit log: what access control keeps.
//!
//! The store holds keys only as hashes (the server hashes the secret and
//! compares hashes in constant time) and never sees a secret, a request body
//! or an address. Every method that writes commits one transaction before it
//! returns `Ok`. Times are unix milliseconds.

use async_trait::async_trait;
use herald_core::TenantId;

use crate::Result;

/// An API key to store. Its secret is not here: only its SHA-256.
#[derive(Clone, PartialEq, Eq)]
pub struct NewApiKey {
    pub tenant: TenantId,
    pub name: Option<String>,
    /// Scope names (`read`, `write`, ...), kept in this order. Each is a
    /// non-empty word without whitespace or commas; the store does not
    /// interpret them.
    pub scopes: Vec<String>,
    /// SHA-256 of the whole key.
    pub hash: [u8; 32],
    pub created_at: i64,
    /// The key is refused from this time on; `None`: never expires.
    pub expires_at: Option<i64>,
}

/// A stored API key.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    /// Global and sequential; the key's secret names it (`hrk_<id>_...`).
    pub id: i64,
    pub tenant: TenantId,
    pub name: Option<String>,
    pub scopes: Vec<String>,
    pub hash: [u8; 32],
    pub created_at: i64,
    pub expires_at: Option<i64>,
    /// When it was revoked; `None` while it is not.
    pub revoked_at: Option<i64>,
}

impl NewApiKey {
    /// The record this key becomes once stored under `id`.
    pub fn into_record(self, id: i64) -> ApiKeyRecord {
        ApiKeyRecord {
            id,
            tenant: self.tenant,
            name: self.name,
            scopes: self.scopes,
            hash: self.hash,
            created_at: self.created_at,
            expires_at: self.expires_at,
            revoked_at: None,
        }
    }
}

// Hashes are not secrets, but they have no business in logs either.
impl std::fmt::Debug for NewApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewApiKey")
            .field("tenant", &self.tenant)
            .field("name", &self.name)
            .field("scopes", &self.scopes)
            .field("hash", &"<sha256>")
            .field("created_at", &self.created_at)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

impl std::fmt::Debug for ApiKeyRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeyRecord")
            .field("id", &self.id)
            .field("tenant", &self.tenant)
            .field("name", &self.name)
            .field("scopes", &self.scopes)
            .field("hash", &"<sha256>")
            .field("created_at", &self.created_at)
            .field("expires_at", &self.expires_at)
            .field("revoked_at", &self.revoked_at)
            .finish()
    }
}

/// One request that changed (or tried to change) state, to record. Never a
/// body, an address or a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAuditEntry {
    pub at: i64,
    /// The key that made the request; `None` for the admin key or open mode.
    pub key_id: Option<i64>,
    pub key_name: Option<String>,
    /// The tenant the request acted as.
    pub tenant: TenantId,
    pub method: String,
    /// The matched route pattern, e.g. `/v1/timers/{id}`.
    pub route: String,
    /// The id in the path, or the id a `201` created.
    pub resource_id: Option<String>,
    /// The HTTP status answered.
    pub status: u16,
    /// How many requests the entry stands for: `1`, or more for a tally of
    /// refusals before any key was recognised (`at` is the first of them).
    pub count: u64,
    /// Why a tallied request was refused (`no_key`, `invalid_key`, ...);
    /// `None` for an entry of one request.
    pub reason: Option<String>,
}

/// A stored audit entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// Global and sequential, in the order entries were appended.
    pub id: i64,
    pub at: i64,
    pub key_id: Option<i64>,
    pub key_name: Option<String>,
    pub tenant: TenantId,
    pub method: String,
    pub route: String,
    pub resource_id: Option<String>,
    pub status: u16,
    /// Requests the entry stands for (see [`NewAuditEntry::count`]).
    pub count: u64,
    pub reason: Option<String>,
}

impl NewAuditEntry {
    /// The entry as stored under `id`.
    pub fn into_entry(self, id: i64) -> AuditEntry {
        AuditEntry {
            id,
            at: self.at,
            key_id: self.key_id,
            key_name: self.key_name,
            tenant: self.tenant,
            method: self.method,
            route: self.route,
            resource_id: self.resource_id,
            status: self.status,
            count: self.count,
            reason: self.reason,
        }
    }
}

/// Tenants, API keys and the audit log. Part of every [`crate::Store`].
#[async_trait]
pub trait AccessStore: Send + Sync + 'static {
    // ---- Tenants ----

    /// The id of the tenant called `name`. When there is none: with `create`,
    /// a new tenant is made (safe when several nodes create the same name at
    /// once: all get the one id); without, `None`. A name that breaks the
    /// tenant name rule (`herald_core::tenant_name_problem`) is refused when
    /// `create` is set, and is simply not found otherwise. The default tenant
    /// (`herald_core::DEFAULT_TENANT`, named `default`) always exists.
    async fn tenant_id(&self, name: &str, create: bool) -> Result<Option<TenantId>>;

    /// Every tenant, by id.
    async fn tenants(&self) -> Result<Vec<(TenantId, String)>>;

    // ---- API keys ----

    /// Stores a key under a new id (global, sequential, never reused).
    /// Refused, with nothing written, when a scope is empty or holds
    /// whitespace or a comma.
    async fn create_api_key(&self, key: NewApiKey) -> Result<ApiKeyRecord>;

    /// One key by id, revoked or expired or not.
    async fn get_api_key(&self, id: i64) -> Result<Option<ApiKeyRecord>>;

    /// The keys of `tenant` (every tenant's when `None`) with `id > after`, by
    /// id, at most `limit`, revoked and expired ones included. Read through
    /// an index: never a scan of the keys before the page.
    async fn list_api_keys(
        &self,
        tenant: Option<TenantId>,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<ApiKeyRecord>>;

    /// Revokes a key at `at` and returns it as it is afterwards; a key revoked
    /// already keeps its first `revoked_at`. `None` if no key has that id.
    async fn revoke_api_key(&self, id: i64, at: i64) -> Result<Option<ApiKeyRecord>>;

    // ---- Audit log ----

    /// Appends entries in one transaction, with ids in the order given.
    async fn append_audit(&self, entries: Vec<NewAuditEntry>) -> Result<()>;

    /// A page of the entries `filter` keeps, in its order, at most `limit`.
    /// `after_id` continues a listing after that entry (the last one of the
    /// previous page): only entries after it in the listing's order come
    /// back; an id that names no entry is refused (`what` = `cursor`).
    /// Read through an index on `(at, id)` (with the tenant first when
    /// `filter.tenant` is set), walked from the page's start: never a scan
    /// of entries before the page. The key, route and status are checked on
    /// the entries of that range, so a filter matching few entries reads
    /// every entry between two matches.
    async fn list_audit(
        &self,
        filter: AuditFilter,
        after_id: Option<i64>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>>;
}

/// Which audit entries a listing keeps, and in which order. The default
/// keeps every entry, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only this tenant's entries; every tenant's when `None`.
    pub tenant: Option<TenantId>,
    /// Only entries with `at >= since`.
    pub since: Option<i64>,
    /// Only the entries of this key.
    pub key: Option<AuditKey>,
    /// Only entries whose recorded route is this one, or starts so.
    pub route: Option<AuditRoute>,
    /// Only entries whose status is in this range (both ends included).
    pub status: Option<(u16, u16)>,
    /// Oldest first (`(at, id)` ascending) instead of newest first.
    pub oldest_first: bool,
}

/// The key an audit listing is narrowed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditKey {
    /// The stored key with this id (`key_id`).
    Id(i64),
    /// Keys recorded under this name (`key_name`; `admin` for the admin key).
    Name(String),
}

/// The route an audit listing is narrowed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditRoute {
    /// Exactly this recorded route.
    Exact(String),
    /// Recorded routes that start with this text.
    Prefix(String),
}

/// The statements both backends run ([`crate::shared_sql::Statement`]).
pub(crate) mod sql {
    use crate::model::{api_key_cols, audit_cols};
    use crate::shared_sql::{Statement, statement};

    pub(crate) const TENANT_BY_NAME: Statement =
        statement!("SELECT id FROM tenants WHERE name = $1");
    pub(crate) const TENANTS: Statement = statement!("SELECT id, name FROM tenants ORDER BY id");
    pub(crate) const INSERT_KEY: Statement = statement!(
        "INSERT INTO api_keys \
         (tenant_id, name, scopes, hash, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING id"
    );
    pub(crate) const KEY_BY_ID: Statement = statement!(concat!(
        "SELECT ",
        api_key_cols!(),
        " FROM api_keys WHERE id = $1"
    ));
    pub(crate) const ALL_KEYS: Statement = statement!(concat!(
        "SELECT ",
        api_key_cols!(),
        " FROM api_keys WHERE id > $1 ORDER BY id LIMIT $2"
    ));
    pub(crate) const TENANT_KEYS: Statement = statement!(concat!(
        "SELECT ",
        api_key_cols!(),
        " FROM api_keys WHERE tenant_id = $3 AND id > $1 ORDER BY id LIMIT $2"
    ));
    pub(crate) const REVOKE_KEY: Statement = statement!(concat!(
        "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING ",
        api_key_cols!()
    ));
    pub(crate) const AUDIT_AT: Statement = statement!("SELECT at FROM audit_log WHERE id = $1");
    /// What every audit page checks after its index range: $4 since, $5
    /// key id, $6 key name, $7 exact route, $8 route prefix (each `NULL`: not
    /// asked), $9 and $10 the status range. The casts give PostgreSQL each
    /// parameter's type where it meets `IS NULL` first.
    macro_rules! audit_filters {
        () => {
            " AND at >= $4 \
             AND (CAST($5 AS BIGINT) IS NULL OR key_id = $5) \
             AND (CAST($6 AS TEXT) IS NULL OR key_name = $6) \
             AND (CAST($7 AS TEXT) IS NULL OR route = $7) \
             AND (CAST($8 AS TEXT) IS NULL OR substr(route, 1, length($8)) = $8) \
             AND status BETWEEN $9 AND $10"
        };
    }
    /// Oldest first: $1 start at, $2 start id (exclusive), $3 limit, then
    /// [`audit_filters`].
    pub(crate) const AUDIT_ALL: Statement = statement!(concat!(
        "SELECT ",
        audit_cols!(),
        " FROM audit_log WHERE (at, id) > ($1, $2)",
        audit_filters!(),
        " ORDER BY at, id LIMIT $3"
    ));
    /// [`AUDIT_ALL`] of one tenant, $11.
    pub(crate) const AUDIT_TENANT: Statement = statement!(concat!(
        "SELECT ",
        audit_cols!(),
        " FROM audit_log WHERE tenant_id = $11 AND (at, id) > ($1, $2)",
        audit_filters!(),
        " ORDER BY at, id LIMIT $3"
    ));
    /// Newest first: $1 start at, $2 start id (exclusive, from above), $3
    /// limit, then [`audit_filters`].
    pub(crate) const AUDIT_ALL_DESC: Statement = statement!(concat!(
        "SELECT ",
        audit_cols!(),
        " FROM audit_log WHERE (at, id) < ($1, $2)",
        audit_filters!(),
        " ORDER BY at DESC, id DESC LIMIT $3"
    ));
    /// [`AUDIT_ALL_DESC`] of one tenant, $11.
    pub(crate) const AUDIT_TENANT_DESC: Statement = statement!(concat!(
        "SELECT ",
        audit_cols!(),
        " FROM audit_log WHERE tenant_id = $11 AND (at, id) < ($1, $2)",
        audit_filters!(),
        " ORDER BY at DESC, id DESC LIMIT $3"
    ));

    /// The statement of a listing in this order, of one tenant or all.
    pub(crate) fn audit_page(oldest_first: bool, one_tenant: bool) -> Statement {
        match (oldest_first, one_tenant) {
            (true, false) => AUDIT_ALL,
            (true, true) => AUDIT_TENANT,
            (false, false) => AUDIT_ALL_DESC,
            (false, true) => AUDIT_TENANT_DESC,
        }
    }
}
