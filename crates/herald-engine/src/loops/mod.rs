//! What every long-running loop of the engine runs with: supervision that
//! restarts a dead loop (`supervise`), the stop signal (`stop`), settings a
//! reload replaces while the loops run (`tuned`), and group commit for small
//! writes many loops make at once (`group_commit`). Timers, channels,
//! campaigns and retention all build on these; they import none of those.

pub(crate) mod group_commit;
pub(crate) mod stop;
pub(crate) mod supervise;
pub(crate) mod tuned;
