//! Request plumbing every resource shares, and nothing resource-specific:
//! reading and bounding bodies (`body_admission`, `body_meter`,
//! `body_limits`, `budget`, `json_body`, `bulk`), reading queries and fields
//! (`request`, `fields`, `text`, `validate`, `document`, `pagination`), the
//! answers (`error`, `fallback`, `trace`), what every request passes
//! through before its route (`edge`), and what a request runs with
//! (`state`, `tenancy`, `quota`, `rate`). The handlers in `crate::api` build
//! on these; nothing here imports a handler.

pub(crate) mod body_admission;
pub(crate) mod body_limits;
pub(crate) mod body_meter;
pub(crate) mod budget;
pub(crate) mod bulk;
pub(crate) mod document;
pub(crate) mod edge;
pub mod error;
pub(crate) mod fallback;
pub(crate) mod fields;
pub(crate) mod json_body;
pub(crate) mod pagination;
pub mod quota;
pub(crate) mod rate;
pub(crate) mod request;
pub mod route_steps;
pub(crate) mod state;
pub(crate) mod template_use;
pub(crate) mod tenancy;
pub(crate) mod text;
pub mod trace;
pub mod validate;
