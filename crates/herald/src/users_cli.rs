//! `herald users get USER_ID`: everything about one user at once (what the
//! console's Users page shows): their profile, reminders, newest timers and
//! where they stand in the tenant's newest campaigns, with why each unsent
//! one was not sent.

use anyhow::Context;
use clap::Subcommand;

use crate::client::{Remote, show};

#[derive(Subcommand, Debug)]
pub enum UsersCmd {
    /// Show one user: profile, reminders, newest timers and campaign sends
    /// (`GET /v1/users/{user_id}`).
    Get {
        /// The user's id.
        user_id: String,
    },
}

pub async fn users(remote: &Remote, cmd: UsersCmd) -> anyhow::Result<()> {
    let http = remote.http()?;
    let base = remote.base();
    let resp = match cmd {
        UsersCmd::Get { user_id } => http.get(format!("{base}/v1/users/{user_id}")).send().await,
    }
    .with_context(|| format!("cannot reach {base}"))?;
    show(resp).await
}
