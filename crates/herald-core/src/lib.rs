//! Herald's pure core.
//!
//! Everything in this crate is plain Rust: no I/O, no async, no global state.
//! Time comes in through [`Clock`] so that schedules, leases and retries can be
//! driven by tests without sleeping.

pub mod calendar;
pub mod campaign;
pub mod caps;
pub mod clock;
pub mod device;
pub mod digest;
pub mod early;
pub mod forecast;
pub mod pacing;
pub mod quiet;
pub mod reminder;
pub mod retry;
pub mod route;
pub mod schedule;
pub mod shard;
pub mod shardset;
pub mod subscriber;
pub mod template;
pub mod tenant;
pub mod time;
pub mod timer;
pub mod wheel;

pub use clock::{Clock, ManualClock, SystemClock};
pub use quiet::QuietWindow;
pub use reminder::{ChannelType, Slot};
pub use retry::RetryPolicy;
pub use schedule::{Schedule, ScheduleError, ScheduleSpec};
pub use shard::shard_for;
pub use shardset::ShardSet;
pub use tenant::{DEFAULT_TENANT, DEFAULT_TENANT_NAME, TenantId};
pub use timer::{Priority, TimerId, TimerKind, TimerState, TransitionError};
pub use wheel::{Wheel, WheelKey};
