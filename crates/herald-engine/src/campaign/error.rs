//! What the campaign service refuses, and why, so that the API can answer
//! each case with its own status, code and field.

use herald_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// The job, rule or audience asked for does not exist.
    #[error("{what} not found")]
    NotFound { what: &'static str },
    /// The audience a request names does not exist; `field` is the request
    /// field that named it.
    #[error("no audience {id}")]
    UnknownAudience { field: &'static str, id: i64 },
    /// The audience a request names is still being uploaded.
    #[error("audience {id} is still uploading")]
    AudienceNotReady { field: &'static str, id: i64 },
    /// The audience was checked, then gone or unsealed when the job was
    /// written (dropped concurrently).
    #[error("audience {id} is unknown or still uploading")]
    AudienceUnusable { field: &'static str, id: i64 },
    /// A job's failed sends cannot be sent again once it was cancelled or
    /// expired.
    #[error("job is {state}; only a running or finished job's failed sends are retried")]
    NotRetryable {
        state: herald_core::campaign::JobState,
    },
    /// Only a pending task can be cancelled on its own; one that started
    /// ends with its job (cancel the job).
    #[error("task is {state}; only a pending task can be cancelled (cancel its job instead)")]
    TaskNotPending {
        state: herald_core::campaign::TaskState,
    },
    /// The audience cannot be deleted while a job or a rule names it.
    #[error("audience {id} is used by a job or a rule; delete those first")]
    AudienceInUse { id: i64 },
    /// Only a finished job (done, cancelled or expired, with no follow-up
    /// waiting) can be deleted.
    #[error("job {id} is not finished (running, or a follow-up is waiting); cancel it first")]
    JobNotFinished { id: i64 },
    /// Only a job that ended `done` or `expired` is resent to its unread.
    #[error(
        "job is {state}; only a job that ended done or expired is resent to its unread \
         (a running one sends a follow-up when it ends)"
    )]
    JobNotEnded {
        state: herald_core::campaign::JobState,
    },
    /// Every recipient the job delivered to sent a `read` receipt (or it
    /// delivered to nobody): a resend to the unread has nobody to send to.
    #[error(
        "nobody is unread: every recipient job {id} delivered to has read it, or it delivered to none"
    )]
    NobodyUnread { id: i64 },
    /// A job that follows this one (its follow-up, or an earlier resend) is
    /// still sending: a resend waits for it to end.
    #[error("{}", resend_running(*.job))]
    ResendRunning { job: Option<i64> },
    /// An upload went over its limit; nothing of it remains.
    #[error("more than {max} recipients; at most {max} per audience")]
    TooManyRecipients { max: u64 },
    /// A write the store took disappeared before the use case ended (a
    /// concurrent removal, or a write task that died). Nothing remains.
    #[error("{why}")]
    Interrupted { why: &'static str },
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn resend_running(job: Option<i64>) -> String {
    match job {
        Some(j) => format!(
            "job {j}, which follows this job (its follow-up or a resend), is still sending; \
             resend again once it has ended"
        ),
        None => "a job that follows this job (its follow-up or a resend) is still sending; \
                 resend again once it has ended"
            .to_string(),
    }
}
