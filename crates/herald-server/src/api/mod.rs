//! The handlers, one folder per resource of the API: what each route does
//! once the request plumbing (`crate::http`) has read and bounded it and the
//! access layer (`crate::access`) has let it through. A resource imports
//! `http`, `access` and the engine, never the router (`crate::routes`); its
//! `docs.rs` documents its routes in `crate::openapi::operations`' words.

pub mod admin;
pub(crate) mod calendars;
pub mod campaigns;
pub mod channels;
pub mod reminders;
pub(crate) mod subscribers;
pub(crate) mod templates;
pub mod timers;
pub(crate) mod users;
