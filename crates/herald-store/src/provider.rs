//! What providers lend and report: channel access tokens shared by every
//! node, operators' pauses of channels, and what a provider says after a
//! send (final statuses, receipts, recalls) on both send logs.
//!
//! [`ProviderStore`] is one area of [`crate::Store`]; its rows are read
//! through `model::provider` and written by each backend's `provider` module.

use async_trait::async_trait;

use crate::{DeliveryRecord, Result};

/// What a receipt reports about a sent message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReceiptEvent {
    Delivered,
    Read,
    Clicked,
}

impl ReceiptEvent {
    pub const ALL: [ReceiptEvent; 3] = [
        ReceiptEvent::Delivered,
        ReceiptEvent::Read,
        ReceiptEvent::Clicked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptEvent::Delivered => "delivered",
            ReceiptEvent::Read => "read",
            ReceiptEvent::Clicked => "clicked",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// The receipt a provider's reported final status amounts to: WeChat's
    /// `TEMPLATESENDJOBFINISH` with `success` says the message reached the
    /// user, a delivery receipt; its refusals (`user_block`, ...) are none.
    pub fn of_final_status(status: &str) -> Option<Self> {
        (status == "success").then_some(ReceiptEvent::Delivered)
    }
}

/// The send a receipt is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptOn {
    /// Recipient `idx` of job `job_id`.
    JobSend { job_id: i64, idx: u64 },
    /// A timer's send-log row.
    Delivery(i64),
}

/// A job's receipts, counted once per recipient and event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiptCounts {
    pub delivered: u64,
    pub read: u64,
    pub clicked: u64,
}

impl ReceiptCounts {
    /// Adds a stored count of `event` (names it does not know are ignored).
    pub(crate) fn add(&mut self, event: &str, n: i64) {
        let n = n.max(0) as u64;
        match ReceiptEvent::parse(event) {
            Some(ReceiptEvent::Delivered) => self.delivered += n,
            Some(ReceiptEvent::Read) => self.read += n,
            Some(ReceiptEvent::Clicked) => self.clicked += n,
            None => {}
        }
    }
}

/// One provider message of a job's delivered sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobMessage {
    pub msgid: String,
    /// When its earliest send was recorded (unix ms): providers recall
    /// only within a window after the send.
    pub sent_at: i64,
    /// Delivered sends under this message id.
    pub sends: u64,
    /// Sends of it already marked recalled.
    pub recalled: u64,
}

/// The final status [`ProviderStore::mark_delivery_recalled`] writes.
pub const FINAL_RECALLED: &str = "recalled";

/// A channel's access token, kept in the store so that every node of a
/// deployment uses the same one (see [`ProviderStore::get_channel_token`]).
/// Its `Debug` never shows the token.
#[derive(Clone, PartialEq, Eq)]
pub struct ChannelToken {
    /// The secret value.
    pub token: String,
    /// Unix ms after which the token must not be used.
    pub expires_at: i64,
    /// Unix ms the provider issued it.
    pub fetched_at: i64,
    /// Unix ms the row was last written.
    pub updated_at: i64,
}

/// An operator's pause of a channel, stored cluster-wide: while it holds,
/// every node keeps the channel's deliveries back without using attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelPause {
    /// Unix ms the pause began.
    pub since: i64,
    /// Unix ms it ends by itself; `None` until resumed.
    pub until: Option<i64>,
    /// Why, as the operator said.
    pub reason: Option<String>,
}

impl ChannelPause {
    /// Whether the pause holds at `now`.
    pub fn holds_at(&self, now: i64) -> bool {
        self.until.is_none_or(|u| u > now)
    }
}

impl std::fmt::Debug for ChannelToken {
    // Tokens are credentials: never print them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelToken")
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .field("fetched_at", &self.fetched_at)
            .field("updated_at", &self.updated_at)
            .finish()
    }
}

/// What providers lend and report: final statuses, receipts and recalls of
/// sends, channel tokens, and channel pauses.
#[async_trait]
pub trait ProviderStore: Send + Sync + 'static {
    /// One send-log row by its id (`DeliveryRecord::id`), whatever its outcome.
    async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryRecord>>;

    /// Records what a provider reported later about the message it gave
    /// `provider_msgid` on `channel` (e.g. WeChat's `TEMPLATESENDJOBFINISH`
    /// callback: `success`, `user_block`, `system_failed`), in one transaction,
    /// on both send logs: the timer send log rows with that channel and message
    /// id, and the campaign send-log rows with that message id whose job is on
    /// that channel. Sets `final_status = status` and `final_at = at`; a row
    /// that already has this very status keeps its first `final_at` (callbacks
    /// are re-sent), and a row marked `recalled` is left alone. Looked up by an
    /// index on the message id in each log, never a scan.
    ///
    /// Returns the number of rows set (0 when the message id is unknown on that
    /// channel, or only matches recalled rows).
    async fn record_final_status(
        &self,
        channel: &str,
        provider_msgid: &str,
        status: &str,
        at: i64,
    ) -> Result<u64>;

    /// Marks a timer send-log row recalled (`final_status = "recalled"`,
    /// `final_at = at`) in one transaction, but only a row whose outcome is
    /// `delivered`, that has a provider message id, and that is not already
    /// recalled. Returns whether this call marked it.
    async fn mark_delivery_recalled(&self, id: i64, at: i64) -> Result<bool>;

    /// Records that the send `on` was `event` at `at`, in one transaction
    /// (a job's count of that event goes up with it). Only the first report
    /// of an event for a send counts; returns whether this was it.
    async fn record_receipt(&self, on: ReceiptOn, event: ReceiptEvent, at: i64) -> Result<bool>;

    /// Whether a send-log row of timer `timer_id` at step `step` of its
    /// fallback route has a `read` receipt: a step taken on `unread` is then
    /// not sent. By the send log's timer index.
    async fn read_at_step(&self, timer_id: i64, step: u32) -> Result<bool>;

    /// Job `job_id`'s receipts, each recipient counted once per event.
    async fn job_receipt_counts(&self, job_id: i64) -> Result<ReceiptCounts>;

    /// The provider messages of job `job_id`'s delivered sends, oldest first,
    /// each once with the sends it carried (a provider that batches, like
    /// WeCom, sends up to 1,000 recipients under one message id). At most
    /// `limit + 1`, so a caller can tell there were more. Reads the job's
    /// part of its send log.
    async fn job_messages(&self, job_id: i64, limit: usize) -> Result<Vec<JobMessage>>;

    /// Marks the delivered sends of job `job_id` under `msgid` recalled
    /// (`final_status = "recalled"`, `final_at = at`) in one transaction,
    /// leaving those already recalled; returns how many it marked.
    async fn mark_job_message_recalled(&self, job_id: i64, msgid: &str, at: i64) -> Result<u64>;

    // ---- Cluster-wide channel access tokens ----

    /// The token stored under `key` (one per channel and credential), expired or
    /// not; `None` if none was ever put.
    async fn get_channel_token(&self, key: &str) -> Result<Option<ChannelToken>>;

    /// Stores `token` under `key`, replacing whatever was there (all four fields
    /// are written as given).
    async fn put_channel_token(&self, key: &str, token: &ChannelToken) -> Result<()>;

    /// Compare-and-expire: if the token stored under `key` is still `token`, sets
    /// its `expires_at` to `min(expires_at, now)` and its `updated_at` to `now`,
    /// in one statement, and returns `true`. A different stored token (another
    /// node already fetched a fresh one) or no token at all is left alone: `false`.
    ///
    /// Refreshing is serialized with the named lease `token:{key}`
    /// ([`ClusterStore::acquire_lease`]); this method takes no lock itself.
    async fn expire_channel_token(&self, key: &str, token: &str, now: i64) -> Result<bool>;

    // ---- Operator pauses of channels ----

    /// Pauses `channel` cluster-wide, replacing any earlier pause of it, at
    /// `now` (its `updated_at`).
    async fn pause_channel(&self, channel: &str, pause: &ChannelPause, now: i64) -> Result<()>;

    /// Ends the pause of `channel`; returns whether one was stored (expired or not).
    async fn resume_channel(&self, channel: &str) -> Result<bool>;

    /// Every stored channel pause, expired or not, ordered by channel. A few
    /// rows at most (one per configured channel): every node reads them about
    /// once a second.
    async fn channel_pauses(&self) -> Result<Vec<(String, ChannelPause)>>;
}

/// The statements both backends run ([`crate::shared_sql::Statement`]).
pub(crate) mod sql {
    use crate::model::{delivery_cols, token_cols};
    use crate::shared_sql::{Statement, statement};

    pub(crate) const DELIVERY_BY_ID: Statement = statement!(concat!(
        "SELECT ",
        delivery_cols!(),
        " FROM deliveries WHERE id = $1"
    ));
    pub(crate) const DELIVERY_RECEIPT: Statement = statement!(
        "INSERT INTO delivery_receipts (delivery_id, event, at) \
         VALUES ($1, $2, $3) ON CONFLICT DO NOTHING"
    );
    pub(crate) const JOB_RECEIPT: Statement = statement!(
        "INSERT INTO job_receipts (job_id, idx, event, at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING"
    );
    pub(crate) const READ_AT_STEP: Statement = statement!(
        "SELECT count(*) FROM deliveries d JOIN delivery_receipts r ON r.delivery_id = d.id \
         WHERE d.timer_id = $1 AND d.step = $2 AND r.event = 'read'"
    );
    pub(crate) const RECEIPT_COUNTS: Statement =
        statement!("SELECT event, n FROM job_receipt_counts WHERE job_id = $1");
    pub(crate) const TOKEN_OF: Statement = statement!(concat!(
        "SELECT ",
        token_cols!(),
        " FROM channel_tokens WHERE key = $1"
    ));
    pub(crate) const PAUSES: Statement =
        statement!("SELECT channel, since, until, reason FROM channel_pauses ORDER BY channel");
    pub(crate) const DELETE_PAUSE: Statement =
        statement!("DELETE FROM channel_pauses WHERE channel = $1");
}
