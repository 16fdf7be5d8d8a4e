//! What every handler does with the caller's tenant beyond passing it on:
//! hiding other tenants' records, and placing keyed records in shards.

use herald_core::{DEFAULT_TENANT, TenantId, shard_for};
use herald_store::{Owned, owned_by};

use crate::access::Caller;
use crate::http::error::ApiError;

/// The record read by its numeric id if it is the caller's. A missing record
/// and another tenant's give the same `404` (`what` not found), byte for
/// byte, so an id of another tenant cannot be told from a free one. Every
/// handler that reads by id goes through here (the campaign service applies
/// the same [`owned_by`] check for audiences, jobs and rules).
pub fn mine<T: Owned>(caller: &Caller, record: Option<T>, what: &str) -> Result<T, ApiError> {
    owned_by(caller.tenant, record).ok_or_else(|| ApiError::not_found(what))
}

/// The shard of a record placed by a key of `tenant` (an idempotency key, a
/// user id): the tenant's id and the key, so that equal keys of different
/// tenants spread apart. The default tenant hashes the bare key, as every
/// release before tenants did: its keys keep their shards across the
/// upgrade, and a user's old and new reminders still meet on one shard to be
/// merged.
pub fn shard_of(tenant: TenantId, key: &str, shards: u16) -> u16 {
    if tenant == DEFAULT_TENANT {
        return shard_for(key.as_bytes(), shards);
    }
    let mut bytes = Vec::with_capacity(4 + key.len());
    bytes.extend_from_slice(&tenant.0.to_be_bytes());
    bytes.extend_from_slice(key.as_bytes());
    shard_for(&bytes, shards)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_tenant_keeps_its_shards() {
        assert_eq!(
            shard_of(DEFAULT_TENANT, "alice", 256),
            shard_for(b"alice", 256)
        );
        let spread = (0..64)
            .filter(|i| {
                let key = format!("k{i}");
                shard_of(TenantId(2), &key, 256) != shard_of(TenantId(3), &key, 256)
            })
            .count();
        assert!(spread > 48, "{spread}");
    }
}
