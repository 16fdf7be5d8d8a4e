//! The subscriber directory's row.

use super::{Columns, Decode, Reader};
use crate::{Result, SubscriberRecord};

/// The columns of `subscribers`, as [`SubscriberRecord`] reads them.
macro_rules! subscriber_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "tenant_id", "user_id", "profile", "version", "created_at", "updated_at")
    };
}
pub(crate) use subscriber_cols;

impl Decode for SubscriberRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(SubscriberRecord {
            tenant: r.tenant("subscribers.tenant_id")?,
            user_id: r.string("subscribers.user_id")?,
            profile: r.string("subscribers.profile")?,
            version: r.int("subscribers.version")?,
            created_at: r.int("subscribers.created_at")?,
            updated_at: r.int("subscribers.updated_at")?,
        })
    }
}
