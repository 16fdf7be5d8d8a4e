//! Herald's engine.
//!
//! It turns committed timers into deliveries: a loader keeps the next window
//! of pending timers in a timing wheel, a driver fires them on time, a fetcher
//! reads their rows and routes them to channels, channel loops send within
//! each channel's limits, and a completer records outcomes in batches. API
//! writes go through a group-commit writer. Each of those loops lives in the
//! module named after it and shares one `Pipeline` (see `timers/pipeline.rs`).
//!
//! The engine sees the world through two seams only: [`herald_store::Store`]
//! and [`herald_channels::Channel`]. It knows neither SQL nor HTTP.
//!
//! This file only names the parts and re-exports what other crates use;
//! one folder per subsystem:
//!
//! - `engine/`: the [`Engine`] handle: starting every loop, what the API
//!   asks of it, reloads, shutdown.
//! - `timers/`: a timer's path through one node, from the wheel to its
//!   recorded outcome, and the writer that commits API writes.
//! - `channels/`: each configured channel at run time and the loops that
//!   send through it; pauses, access tokens.
//! - `cluster/`: membership, shard ownership, other nodes' notifications.
//! - `campaign/`: mass sends: jobs, rules, segment workers.
//! - `retention/`: what is deleted when, and the sweeper that does it.
//! - `observe/`: metrics, health, the live window, the stats sampler.
//! - `loops/`: what every loop runs with: supervision, the stop signal,
//!   settings a reload replaces, group commit.
//! - `config.rs` and `error.rs`: the engine's settings and its error.

pub mod campaign;
mod channels;
mod cluster;
mod config;
mod engine;
mod error;
mod loops;
mod observe;
pub mod retention;
pub mod templates;
mod timers;

#[cfg(test)]
mod testkit;

pub use channels::spec::ChannelSpec;
pub use channels::state::{ChannelStatus, OutcomeSnapshot};
pub use channels::tokens::{StoreVault, token_lease_name};
pub use config::EngineConfig;
pub use engine::{
    ChannelRetune, ENGINE_LIVE_KEYS, Engine, JOBS_LIVE_KEYS, QueuedWrite, RetuneError, SubjectPlan,
    TimerView,
};
pub use error::EngineError;
pub use loops::stop::Stop;
pub use observe::health::{Health, LoopHealth};
pub use observe::live::{ChannelLive, LiveOutcome, LiveSecond, LiveView};
pub use observe::metrics;
pub use observe::sampled::{NodeView, TimerCounts};
pub use observe::trace;
pub use timers::early::EarlyPlan;
pub use timers::tenants::TenantLimits;
