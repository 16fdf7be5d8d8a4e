//! What providers lend us: channel access tokens.

use super::{Columns, Decode, Reader};
use crate::{ChannelToken, Result};

/// The value columns of a `channel_tokens` row (its key is the lookup), as
/// [`ChannelToken`] reads them.
macro_rules! token_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?; "token", "expires_at", "fetched_at", "updated_at")
    };
}
pub(crate) use token_cols;

impl Decode for ChannelToken {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(ChannelToken {
            token: r.string("channel_tokens.token")?,
            expires_at: r.int("channel_tokens.expires_at")?,
            fetched_at: r.int("channel_tokens.fetched_at")?,
            updated_at: r.int("channel_tokens.updated_at")?,
        })
    }
}
