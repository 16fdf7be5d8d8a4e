//! Metric names and pre-registered handles, so hot paths do no registry lookups.

use metrics::{
    Counter, Gauge, Histogram, counter, describe_counter, describe_gauge, describe_histogram,
    gauge, histogram,
};

pub const TIMERS_CREATED: &str = "herald_timers_created_total";
pub const TIMERS_CANCELLED: &str = "herald_timers_cancelled_total";
pub const TIMERS_FIRED: &str = "herald_timers_fired_total";
pub const TIMERS_DONE: &str = "herald_timers_done_total";
pub const TIMERS_RETRIED: &str = "herald_timers_retried_total";
pub const TIMERS_FAILED: &str = "herald_timers_failed_total";
pub const TIMERS_DEAD: &str = "herald_timers_dead_total";
pub const TIMERS_PENDING: &str = "herald_timers_pending";
pub const TIMERS_BY_STATE: &str = "herald_timers";
/// Age of the oldest timer not yet in the search indexes (SQLite's filer).
pub const SEARCH_FILING_LAG: &str = "herald_search_filing_lag_seconds";
pub const FIRE_LATENESS: &str = "herald_fire_lateness_seconds";
pub const DELIVERIES: &str = "herald_deliveries_total";
pub const DELIVERY_DURATION: &str = "herald_delivery_duration_seconds";
pub const WHEEL_TIMERS: &str = "herald_wheel_timers";
pub const READY_TIMERS: &str = "herald_ready_timers";
pub const INFLIGHT: &str = "herald_inflight_deliveries";
/// 1 while every in-flight slot stays taken with nothing sending (see
/// `engine.inflight_stall_ms`): the node fires nothing more.
pub const INFLIGHT_STALLED: &str = "herald_inflight_stalled";
/// Stalls of the in-flight slots found since start.
pub const INFLIGHT_STALLS: &str = "herald_inflight_stalls_total";
pub const WRITE_BATCH: &str = "herald_write_batch_ops";
pub const COMPLETE_BATCH: &str = "herald_complete_batch_size";
pub const STORE_ERRORS: &str = "herald_store_errors_total";
pub const OWNED_SHARDS: &str = "herald_owned_shards";
pub const CLUSTER_NODES: &str = "herald_cluster_nodes";
pub const FENCED: &str = "herald_fenced_total";
/// Timers turned away from a full wheel (`max_loaded`); they stay in the store.
pub const WHEEL_FULL: &str = "herald_wheel_full_total";
/// Core loops that died (returned early or panicked) and were restarted.
pub const LOOP_RESTARTS: &str = "herald_loop_restarts_total";
/// Reminders delivered inside another reminder's message (merging).
pub const MERGED: &str = "herald_reminders_merged_total";
/// Timers a stopped node left mid-send, resolved by the node that took their
/// shard: `outcome="in_doubt"` (channel skips in-doubt sends) or `"resent"`.
pub const TIMERS_IN_DOUBT: &str = "herald_timers_in_doubt_total";
/// Rows retention deleted, by kind.
pub const RETENTION_DELETED: &str = "herald_retention_deleted_total";

/// Says what each metric means, once, for `/metrics`.
pub fn describe() {
    describe_counter!(TIMERS_CREATED, "Timers accepted and committed.");
    describe_counter!(TIMERS_CANCELLED, "Timers cancelled before firing.");
    describe_counter!(
        TIMERS_FIRED,
        "Delivery attempts started (a retried timer fires again)."
    );
    describe_counter!(TIMERS_DONE, "Timers delivered and marked done.");
    describe_counter!(
        TIMERS_RETRIED,
        "Attempts that failed retryably and were scheduled again."
    );
    describe_counter!(
        TIMERS_FAILED,
        "Timers refused permanently by their channel."
    );
    describe_counter!(TIMERS_DEAD, "Timers that used up every attempt.");
    describe_counter!(
        TIMERS_IN_DOUBT,
        "Timers a stopped node left mid-send, by what their new owner did: in_doubt or resent."
    );
    describe_counter!(
        MERGED,
        "Reminders delivered inside another reminder's message (merging)."
    );
    describe_counter!(
        RETENTION_DELETED,
        "Rows retention deleted because they were older than their kind's setting, by kind."
    );
    describe_gauge!(TIMERS_PENDING, "Pending timers in the store (sampled).");
    describe_gauge!(TIMERS_BY_STATE, "Timers in the store by state (sampled).");
    describe_gauge!(
        SEARCH_FILING_LAG,
        "Age of the oldest timer searches still find outside the search indexes (SQLite files new timers in the background; 0 when caught up; sampled)."
    );
    describe_histogram!(
        FIRE_LATENESS,
        "Start of a first attempt minus the due time."
    );
    describe_counter!(DELIVERIES, "Delivery attempts by channel and outcome.");
    describe_histogram!(
        DELIVERY_DURATION,
        "Time a channel took to answer an attempt."
    );
    describe_gauge!(WHEEL_TIMERS, "Timers held in this node's timing wheel.");
    describe_gauge!(READY_TIMERS, "Due timers waiting for a delivery slot.");
    describe_gauge!(INFLIGHT, "Deliveries fetched and not yet recorded.");
    describe_gauge!(
        INFLIGHT_STALLED,
        "1 while every in-flight slot stays taken with nothing sending and none given back for engine.inflight_stall_ms: the node fires nothing."
    );
    describe_counter!(
        INFLIGHT_STALLS,
        "Times the in-flight slots were found stalled (full with nothing sending)."
    );
    describe_histogram!(WRITE_BATCH, "API writes per group-commit transaction.");
    describe_histogram!(COMPLETE_BATCH, "Outcomes per completion transaction.");
    describe_counter!(
        WHEEL_FULL,
        "Timers turned away from a full wheel (max_loaded); the loader finds them later."
    );
    describe_counter!(
        LOOP_RESTARTS,
        "Core loops that died (returned or panicked) and were restarted, by loop."
    );
    describe_counter!(
        STORE_ERRORS,
        "Store operations that failed and were retried."
    );
    describe_counter!(
        FENCED,
        "Sends or outcomes dropped because a shard lease moved to another node."
    );
    describe_gauge!(OWNED_SHARDS, "Shards this node holds a lease on.");
    describe_gauge!(CLUSTER_NODES, "Nodes with a live membership lease.");
    herald_channels::metrics::describe();
}

/// Handles used on every delivery.
#[derive(Clone)]
pub(crate) struct Hot {
    pub fired: Counter,
    pub lateness: Histogram,
    pub done: Counter,
    pub retried: Counter,
    pub failed: Counter,
    pub dead: Counter,
    pub created: Counter,
    pub cancelled: Counter,
    pub wheel: Gauge,
    pub ready: Gauge,
    pub inflight: Gauge,
    pub inflight_stalled: Gauge,
    pub inflight_stalls: Counter,
    pub write_batch: Histogram,
    pub complete_batch: Histogram,
    pub store_errors: Counter,
    pub fenced: Counter,
    pub merged: Counter,
}

impl Hot {
    pub fn new() -> Self {
        Self {
            fired: counter!(TIMERS_FIRED),
            lateness: histogram!(FIRE_LATENESS),
            done: counter!(TIMERS_DONE),
            retried: counter!(TIMERS_RETRIED),
            failed: counter!(TIMERS_FAILED),
            dead: counter!(TIMERS_DEAD),
            created: counter!(TIMERS_CREATED),
            cancelled: counter!(TIMERS_CANCELLED),
            wheel: gauge!(WHEEL_TIMERS),
            ready: gauge!(READY_TIMERS),
            inflight: gauge!(INFLIGHT),
            inflight_stalled: gauge!(INFLIGHT_STALLED),
            inflight_stalls: counter!(INFLIGHT_STALLS),
            write_batch: histogram!(WRITE_BATCH),
            complete_batch: histogram!(COMPLETE_BATCH),
            store_errors: counter!(STORE_ERRORS),
            fenced: counter!(FENCED),
            merged: counter!(MERGED),
        }
    }
}

/// Per-channel handles.
#[derive(Clone)]
pub(crate) struct ChannelMetrics {
    pub delivered: Counter,
    pub retry: Counter,
    pub failed: Counter,
    pub dead: Counter,
    /// Throttled or held by quiet hours: due again later, attempt not counted.
    pub deferred: Counter,
    /// Decided from the subscriber directory without a send.
    pub no_address: Counter,
    pub opted_out: Counter,
    /// A template that could not be rendered (final, no send).
    pub template_error: Counter,
    /// Over a frequency cap (`[[caps]]`): final, no send.
    pub capped: Counter,
    /// Reminders whose subject started before they could be sent.
    pub expired: Counter,
    /// Mini-program subscribe messages the user had no grant left for.
    pub no_grant: Counter,
    pub duration: Histogram,
}

impl ChannelMetrics {
    pub fn new(channel: &str) -> Self {
        let c = |outcome: &'static str| counter!(DELIVERIES, "channel" => channel.to_string(), "outcome" => outcome);
        Self {
            delivered: c("delivered"),
            retry: c("retry"),
            failed: c("failed"),
            dead: c("dead"),
            deferred: c("deferred"),
            no_address: c("no_address"),
            opted_out: c("opted_out"),
            template_error: c("template_error"),
            capped: c("capped"),
            expired: c("expired"),
            no_grant: c("no_grant"),
            duration: histogram!(DELIVERY_DURATION, "channel" => channel.to_string()),
        }
    }
}
