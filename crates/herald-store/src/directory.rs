//! The subscriber directory: one row per (tenant, user) holding the user's
//! profile as checked JSON (see `herald_core::subscriber`), with a version
//! that every write bumps so a read-merge-write (`PATCH`) can be made
//! conditional. The store looks inside the profile only for the time zone
//! a daily digest closes in (`crate::digest`).
//!
//! [`DirectoryStore`] is one area of [`crate::Store`] (entries are written
//! through [`crate::TimerStore::apply`], with the other writes).
//!
//! Both backends run the statements below (written with `$N`; see
//! [`crate::shared_sql::Statement`]).

use async_trait::async_trait;
use herald_core::TenantId;

use crate::Result;

/// Longest user id (the same rule as reminders' user ids).
pub const MAX_USER_ID_BYTES: usize = 128;

/// A directory entry to write.
#[derive(Debug, Clone, PartialEq)]
pub struct PutSubscriber {
    pub tenant: TenantId,
    pub user_id: String,
    /// The whole profile, JSON, already checked.
    pub profile: String,
    /// Write only if the stored entry is at this version (`Some(0)`: only if
    /// there is none); `None` writes whatever is stored.
    pub if_version: Option<i64>,
    pub at: i64,
}

/// A stored directory entry.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriberRecord {
    pub tenant: TenantId,
    pub user_id: String,
    pub profile: String,
    /// 1 when created, one more at every write.
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

impl PutSubscriber {
    /// The entry this write leaves, given what was stored.
    pub(crate) fn record(&self, old: Option<&SubscriberRecord>) -> SubscriberRecord {
        SubscriberRecord {
            tenant: self.tenant,
            user_id: self.user_id.clone(),
            profile: self.profile.clone(),
            version: old.map_or(1, |o| o.version + 1),
            created_at: old.map_or(self.at, |o| o.created_at),
            updated_at: self.at,
        }
    }

    /// Whether the write may go ahead over `old`.
    pub(crate) fn allowed(&self, old: Option<&SubscriberRecord>) -> bool {
        match self.if_version {
            None => true,
            Some(v) => v == old.map_or(0, |o| o.version),
        }
    }
}

/// The reads of the subscriber directory.
#[async_trait]
pub trait DirectoryStore: Send + Sync + 'static {
    /// The directory entries of `tenant` among `user_ids` that exist (any
    /// order, each once).
    async fn get_subscribers(
        &self,
        tenant: TenantId,
        user_ids: &[String],
    ) -> Result<Vec<SubscriberRecord>>;

    /// One page of `tenant`'s directory in user-id order, after `after` when
    /// given, at most `limit`.
    async fn list_subscribers(
        &self,
        tenant: TenantId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SubscriberRecord>>;
}

pub(crate) mod sql {
    use crate::model::subscriber_cols;
    use crate::shared_sql::{Statement, statement};

    /// $1 tenant, $2 user. PostgreSQL appends `FOR UPDATE` inside a write.
    pub(crate) const ONE: Statement = statement!(concat!(
        "SELECT ",
        subscriber_cols!(),
        " FROM subscribers WHERE tenant_id = $1 AND user_id = $2"
    ));
    /// $1 tenant, $2 the last user id of the previous page (`''` first), $3 limit.
    pub(crate) const LIST: Statement = statement!(concat!(
        "SELECT ",
        subscriber_cols!(),
        " FROM subscribers WHERE tenant_id = $1 AND user_id > $2 ORDER BY user_id LIMIT $3"
    ));
    /// $1 tenant, $2 user, $3 profile, $4 at. Inserts nothing when another
    /// writer created the user meanwhile (PostgreSQL then reads it again).
    pub(crate) const INSERT: Statement = statement!(
        "INSERT INTO subscribers \
         (tenant_id, user_id, profile, version, created_at, updated_at) \
         VALUES ($1, $2, $3, 1, $4, $4) ON CONFLICT (tenant_id, user_id) DO NOTHING"
    );
    /// $1 tenant, $2 user, $3 profile, $4 at.
    pub(crate) const UPDATE: Statement = statement!(
        "UPDATE subscribers \
         SET profile = $3, version = version + 1, updated_at = $4 \
         WHERE tenant_id = $1 AND user_id = $2"
    );
    /// $1 tenant, $2 user.
    pub(crate) const DELETE: Statement =
        statement!("DELETE FROM subscribers WHERE tenant_id = $1 AND user_id = $2");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_guard_the_write() {
        let put = |v| PutSubscriber {
            tenant: TenantId(1),
            user_id: "u".into(),
            profile: "{}".into(),
            if_version: v,
            at: 9,
        };
        let old = put(None).record(None);
        assert_eq!((old.version, old.created_at), (1, 9));
        assert!(put(None).allowed(Some(&old)));
        assert!(put(Some(0)).allowed(None));
        assert!(!put(Some(0)).allowed(Some(&old)));
        assert!(put(Some(1)).allowed(Some(&old)));
        assert!(!put(Some(2)).allowed(Some(&old)));
        assert_eq!(put(Some(1)).record(Some(&old)).version, 2);
    }
}
