//! The ledger of one-time subscribe grants (WeChat mini-program subscribe
//! messages): what each user allowed, per channel and template, and what
//! has been spent.
//!
//! WeChat never tells how many grants a user has left, so the sender keeps
//! count. A grant is spent in the transaction that marks the timer firing
//! (`TimerStore::mark_firing` with a [`GrantUse`]), and a *hold* row names
//! the timer that spent it, so the timer spends at most one grant however
//! many attempts it makes or restarts it survives: a retry reuses the hold.
//! When the send's answer is known, [`GrantStore::settle_grants`] ends the
//! hold: kept spent when the message went (or when the send stays in doubt),
//! given back when the provider refused it for another reason, and the
//! template's count zeroed when the provider says the user has none left.
//! A timer put back unsent by a clean shutdown gives its grant back in the
//! same transaction (`unmark_firing`).

use async_trait::async_trait;
use herald_core::{TenantId, TimerId};

use crate::Result;

/// Most grant entries one recording may carry (`wx.requestSubscribeMessage`
/// asks for at most 3 templates at a time).
pub const MAX_GRANTS_PER_RECORDING: usize = 20;
/// Most one-time grants one entry may add.
pub const MAX_GRANT_COUNT: u32 = 1_000;
/// The most one-time grants a template's count holds; more are not kept.
pub const MAX_GRANTS_HELD: i64 = 1_000_000;

/// One template's grant, as the user's tap returned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantGiven {
    pub template_id: String,
    /// One-time grants to add (0 with `long_term`).
    pub count: u32,
    /// A long-term subscription: sends need no count.
    pub long_term: bool,
}

/// A recording of grants ([`GrantStore::record_grants`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRecording {
    pub tenant: TenantId,
    pub user_id: String,
    /// The channel (a mini-program) the grants are for.
    pub channel: String,
    /// The caller's key: a recording with a key already recorded for the
    /// user changes nothing.
    pub key: String,
    pub grants: Vec<GrantGiven>,
    pub at: i64,
}

/// A user's grants of one template, as the ledger holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRecord {
    pub channel: String,
    pub template_id: String,
    /// One-time grants left.
    pub remaining: i64,
    pub long_term: bool,
    /// One-time grants recorded in all.
    pub granted: i64,
    /// Sends that spent a grant (one-time or long-term).
    pub spent: i64,
    pub updated_at: i64,
}

/// What [`GrantStore::record_grants`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantsRecorded {
    /// `false` when the key had been recorded already: nothing changed.
    pub recorded: bool,
    /// The user's grants on the channel afterwards.
    pub grants: Vec<GrantRecord>,
}

/// The grant a send needs: the user's, for the template its message names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GrantUse {
    pub tenant: TenantId,
    pub user_id: String,
    pub channel: String,
    pub template_id: String,
}

/// How a held grant ends once the send's answer is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantEnd {
    /// The message went: the grant stays spent.
    Spent,
    /// The provider refused the message for a reason of its own (a bad
    /// value, an unknown page): it used no grant, so it is given back.
    Returned,
    /// The provider says the user has no grant left: the template's count
    /// becomes zero (and a long-term subscription ends).
    NoneLeft,
}

/// One hold to end ([`GrantStore::settle_grants`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrantSettle {
    pub timer_id: TimerId,
    pub end: GrantEnd,
}

#[async_trait]
pub trait GrantStore: Send + Sync + 'static {
    /// Adds the grants of one tap, in one transaction, unless the key was
    /// recorded for the user before (then nothing changes). One-time counts
    /// add up (to at most [`MAX_GRANTS_HELD`]); a long-term grant stays.
    async fn record_grants(&self, rec: GrantRecording) -> Result<GrantsRecorded>;

    /// A user's grants, by channel and template.
    async fn list_grants(&self, tenant: TenantId, user_id: &str) -> Result<Vec<GrantRecord>>;

    /// Ends the holds of timers whose send was answered, in one
    /// transaction. A timer without a hold is skipped.
    async fn settle_grants(&self, settles: Vec<GrantSettle>, at: i64) -> Result<()>;
}

/// The statements both backends run.
pub(crate) mod sql {
    use crate::shared_sql::{Statement, statement};

    /// $1 tenant, $2 user, $3 key, $4 at: inserts the key, or nothing.
    pub(crate) const KEY: Statement = statement!(
        "INSERT INTO grant_keys (tenant_id, user_id, client_key, created_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id, user_id, client_key) DO NOTHING"
    );
    /// $1 tenant, $2 user, $3 channel, $4 template, $5 count, $6 long-term
    /// (0/1), $7 at, $8 most held.
    pub(crate) const ADD: Statement = statement!(
        "INSERT INTO grants (tenant_id, user_id, channel, template_id, remaining, long_term, \
         granted, spent, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $5, 0, $7) \
         ON CONFLICT (tenant_id, user_id, channel, template_id) DO UPDATE SET \
         remaining = CASE WHEN grants.remaining + excluded.remaining > $8 THEN $8 \
         ELSE grants.remaining + excluded.remaining END, \
         long_term = CASE WHEN excluded.long_term = 1 THEN 1 ELSE grants.long_term END, \
         granted = grants.granted + excluded.granted, updated_at = excluded.updated_at"
    );
    /// $1 tenant, $2 user.
    pub(crate) const LIST: Statement = statement!(
        "SELECT channel, template_id, remaining, long_term, granted, spent, updated_at \
         FROM grants WHERE tenant_id = $1 AND user_id = $2 ORDER BY channel, template_id"
    );
    /// $1 timer: whether it holds a grant already.
    pub(crate) const HELD: Statement =
        statement!("SELECT one_time FROM grant_holds WHERE timer_id = $1");
    /// $1 tenant, $2 user, $3 channel, $4 template, $5 at: spends one, or
    /// nothing when none is left; answers whether it was one-time.
    pub(crate) const SPEND: Statement = statement!(
        "UPDATE grants SET remaining = remaining - (1 - long_term), spent = spent + 1, \
         updated_at = $5 WHERE tenant_id = $1 AND user_id = $2 AND channel = $3 \
         AND template_id = $4 AND (long_term = 1 OR remaining > 0) RETURNING 1 - long_term"
    );
    /// $1 timer, $2 tenant, $3 user, $4 channel, $5 template, $6 one-time, $7 at.
    pub(crate) const HOLD: Statement = statement!(
        "INSERT INTO grant_holds (timer_id, tenant_id, user_id, channel, template_id, \
         one_time, held_at) VALUES ($1, $2, $3, $4, $5, $6, $7)"
    );
    /// $1 timer: ends its hold, answering what it held.
    pub(crate) const RELEASE: Statement = statement!(
        "DELETE FROM grant_holds WHERE timer_id = $1 \
         RETURNING tenant_id, user_id, channel, template_id, one_time"
    );
    /// $1 tenant, $2 user, $3 channel, $4 template, $5 one-time (0/1), $6 at.
    pub(crate) const GIVE_BACK: Statement = statement!(
        "UPDATE grants SET remaining = remaining + $5, spent = spent - 1, updated_at = $6 \
         WHERE tenant_id = $1 AND user_id = $2 AND channel = $3 AND template_id = $4"
    );
    /// $1 tenant, $2 user, $3 channel, $4 template, $5 at.
    pub(crate) const NONE_LEFT: Statement = statement!(
        "UPDATE grants SET remaining = 0, long_term = 0, updated_at = $5 \
         WHERE tenant_id = $1 AND user_id = $2 AND channel = $3 AND template_id = $4"
    );
}
