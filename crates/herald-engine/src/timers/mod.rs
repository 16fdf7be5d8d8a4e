//! A timer's path through one node, and the writes that put timers there.
//!
//! The loader (or the writer, or the notification listener) puts a timer in
//! the wheel (`schedule`), the driver moves it to the ready queue (`queue`,
//! fair between tenants: `fair`, `tenants`) when it is due, the fetcher reads
//! its row, resolves its recipients (`recipients`), merges reminders and
//! digests (`bundles`, `reminders`) and queues it on its channel; a channel
//! worker (`crate::channels`) sends it, and the completer records the
//! outcome. `flight` bounds what is fetched and not yet recorded; `marker`
//! marks sends a dead node must not repeat. `pipeline` is what all of those
//! loops share. `timer_path` and `flight_paths` are tests over the whole
//! path.

pub(crate) mod bundles;
pub(crate) mod completer;
pub(crate) mod driver;
pub(crate) mod early;
pub(crate) mod early_plans;
pub(crate) mod fair;
pub(crate) mod fallback;
pub(crate) mod fetcher;
pub(crate) mod flight;
pub(crate) mod limits;
pub(crate) mod loader;
pub(crate) mod marker;
pub(crate) mod pipeline;
pub(crate) mod queue;
pub(crate) mod recipients;
pub(crate) mod reminders;
pub(crate) mod render;
pub(crate) mod schedule;
pub(crate) mod subject_counts;
pub(crate) mod tenants;
pub(crate) mod writer;

#[cfg(test)]
mod flight_paths;
#[cfg(test)]
mod timer_path;
