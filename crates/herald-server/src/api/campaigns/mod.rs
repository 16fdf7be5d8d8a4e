//! Campaigns, sends to many: the audiences they go to ([`audiences`]), the
//! jobs that send them ([`jobs`], taken back by [`job_recall`]), the
//! versioned rules that start jobs ([`rules`], their schedules previewed by
//! [`schedules`], their expected receivers counted by [`receivers`]), and the `to`/`topic`/`critical` routing jobs and rules
//! share ([`routing`]), and who made or changed each ([`actors`]). The
//! engine's campaign service does the writing.

pub(crate) mod actors;
pub mod audiences;
pub(crate) mod docs;
pub mod job_labels;
pub(crate) mod job_recall;
pub mod jobs;
pub(crate) mod receivers;
pub(crate) mod routing;
pub mod rules;
pub(crate) mod schedules;
