//! The engine's side of each configured channel: what the binary hands it
//! (`spec`), the channel at run time with its queue, rate limit and pause
//! (`runtime`, `state`), the worker loops that send through it (`worker`),
//! one delivery sent as copies to several addresses (`copies`), operators'
//! pauses read from the store (`pauses`), and the access tokens the channels
//! share across nodes (`tokens`). Timers and campaign sends both go out here.

pub(crate) mod copies;
pub(crate) mod gate;
pub(crate) mod pauses;
pub(crate) mod runtime;
pub(crate) mod spec;
pub(crate) mod state;
pub(crate) mod tokens;
pub(crate) mod worker;
