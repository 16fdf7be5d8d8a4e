//! The audit log: which key changed (or tried to change) what, when, and
//! with what answer. [`recorder`] makes the entries, [`writer`] stores them
//! in batches, [`list`] reads them back (`GET /v1/audit`).

pub mod list;
mod recorder;
mod writer;

pub use recorder::{Recorder, record};
pub use writer::{AUDIT_DROPPED, AUDIT_WRITTEN, AuditLog, AuditSettings, AuditWriter};
