//! The audit log: which key changed (or tried to change) what, when, and
//! with what answer. [`recorder`] makes the entries, [`writer`] stores them
//! in batches, [`tally`] counts what was refused before any key was
//! recognised (one entry a minute per kind, not one per request). The route
//! that reads them back (`GET /v1/audit`) is with the admin's, in
//! `crate::api::admin::audit`.

mod recorder;
mod tally;
mod writer;

pub use recorder::{AuditedTenant, Recorder, record};
pub use tally::{RefusalKey, UNAUTHENTICATED_REFUSALS};
pub use writer::{AUDIT_DROPPED, AUDIT_WRITTEN, AuditLog, AuditSettings, AuditWriter};
