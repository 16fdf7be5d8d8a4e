//! Which tenant a record belongs to, and the one check that hides other
//! tenants' records.
//!
//! Numeric ids are global, so a read by id can return any tenant's record.
//! Every caller that answers a tenant passes the record through [`owned_by`]:
//! another tenant's record then looks exactly like a missing one, and nothing
//! tells a caller that the id exists.

use herald_core::TenantId;

use crate::{
    ApiKeyRecord, AudienceRecord, DeliveryRecord, JobRecord, RuleRecord, SubjectRecord, TaskRecord,
    TimerRecord,
};

/// A record that belongs to one tenant.
pub trait Owned {
    /// The tenant it belongs to.
    fn owner(&self) -> TenantId;
}

/// `record` if it belongs to `tenant`; `None`, as if it did not exist, when
/// it is another tenant's.
pub fn owned_by<T: Owned>(tenant: TenantId, record: Option<T>) -> Option<T> {
    record.filter(|r| r.owner() == tenant)
}

macro_rules! owned_by_field {
    ($($t:ty),* $(,)?) => {
        $(impl Owned for $t {
            fn owner(&self) -> TenantId {
                self.tenant
            }
        })*
    };
}

owned_by_field!(
    TimerRecord,
    DeliveryRecord,
    SubjectRecord,
    AudienceRecord,
    RuleRecord,
    TaskRecord,
    JobRecord,
    ApiKeyRecord,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_tenants_record_is_none() {
        let audience = |tenant| AudienceRecord {
            id: 7,
            tenant,
            name: None,
            size: Some(1),
            created_at: 0,
        };
        let (a, b) = (TenantId(1), TenantId(2));
        assert_eq!(owned_by(a, Some(audience(a))), Some(audience(a)));
        assert_eq!(owned_by(b, Some(audience(a))), None);
        assert_eq!(owned_by::<AudienceRecord>(a, None), None);
    }
}
