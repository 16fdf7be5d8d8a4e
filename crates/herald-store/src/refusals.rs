//! What both backends refuse, worded once, so that the same request gets the
//! same [`StoreError`] variant (and `what`) from either.

use crate::campaign::{AUDIENCE_CHUNK, SendEntry};
use crate::model::to_db;
use crate::{Result, StoreError};
use herald_core::campaign::SendState;

/// An audience that does not exist.
pub(crate) fn no_audience(id: i64) -> StoreError {
    StoreError::NotFound {
        what: format!("audience {id}"),
    }
}

/// An audience in the wrong phase: sealed for an append, open for a read.
pub(crate) fn audience_state(id: i64, why: &str) -> StoreError {
    StoreError::Conflict {
        what: "audience_id".into(),
        why: format!("audience {id} {why}"),
    }
}

/// A segment that does not exist under the claim's job.
pub(crate) fn no_segment(segment_id: i64, job_id: i64) -> StoreError {
    StoreError::NotFound {
        what: format!("segment {segment_id} of job {job_id}"),
    }
}

/// Checks one chunk of an audience upload before anything is written, and
/// returns its chunk number.
pub(crate) fn audience_chunk(start: u64, recipients: &[String]) -> Result<i64> {
    if !start.is_multiple_of(AUDIENCE_CHUNK) {
        return Err(StoreError::refused(
            "start",
            format!("{start} is not a multiple of {AUDIENCE_CHUNK}"),
        ));
    }
    if recipients.len() as u64 > AUDIENCE_CHUNK {
        return Err(StoreError::refused(
            "recipients",
            format!(
                "{} recipients in one chunk, at most {AUDIENCE_CHUNK}",
                recipients.len()
            ),
        ));
    }
    if let Some(i) = recipients.iter().position(|r| r.contains('\n')) {
        return Err(StoreError::refused(
            "recipients",
            format!("recipient {} holds a newline", start + i as u64),
        ));
    }
    to_db(start / AUDIENCE_CHUNK, "start")
}

/// A seal whose size does not match the chunks stored.
pub(crate) fn seal_size(id: i64, size: u64, stored: String) -> StoreError {
    StoreError::refused(
        "size",
        format!(
            "audience {id} cannot be sealed with {size} recipients: {stored}; it needs chunks \
             0..{} of {AUDIENCE_CHUNK}, all full but the last",
            size.div_ceil(AUDIENCE_CHUNK)
        ),
    )
}

/// Only the sweeper expires recipients: `record_sends` refuses `expired`.
pub(crate) fn expired_entry(entries: &[SendEntry]) -> Result<()> {
    match entries.iter().find(|e| e.state == SendState::Expired) {
        Some(e) => Err(StoreError::refused(
            "entries",
            format!(
                "index {} is `expired`; only the sweeper expires recipients",
                e.index
            ),
        )),
        None => Ok(()),
    }
}

/// `record_sends` writes within its segment `[start, end)`: every index
/// inside, the cursor in `[start, end]`.
pub(crate) fn within_segment(
    segment_id: i64,
    start: u64,
    end: u64,
    cursor: u64,
    entries: &[SendEntry],
) -> Result<()> {
    if cursor < start || cursor > end {
        return Err(StoreError::refused(
            "cursor",
            format!("{cursor} is outside segment {segment_id} [{start}, {end}]"),
        ));
    }
    if let Some(e) = entries.iter().find(|e| e.index < start || e.index >= end) {
        return Err(StoreError::refused(
            "entries",
            format!(
                "index {} is outside segment {segment_id} [{start}, {end})",
                e.index
            ),
        ));
    }
    Ok(())
}

/// `finish_segment` on a current claim whose cursor is short of the end.
pub(crate) fn unfinished_segment(segment_id: i64, cursor: u64, end: u64) -> StoreError {
    StoreError::Conflict {
        what: "claim".into(),
        why: format!("segment {segment_id} is at {cursor}, short of its end {end}"),
    }
}

/// A tenant name the tenant rule refuses, when one is to be created.
pub(crate) fn tenant_name(name: &str) -> Result<()> {
    match herald_core::tenant::tenant_name_problem(name) {
        Some(why) => Err(StoreError::refused("tenant", why)),
        None => Ok(()),
    }
}

/// A cursor naming no audit entry (never written, or aged out of the
/// retention since the page before): nothing to continue after, a `404`.
pub(crate) fn no_audit_entry(id: i64) -> StoreError {
    StoreError::NotFound {
        what: format!("audit entry {id} (the cursor)"),
    }
}
