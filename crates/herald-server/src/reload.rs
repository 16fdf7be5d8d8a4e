//! `POST /v1/admin:reload`: re-reads the configuration file the node was
//! started with and applies what can change without a restart. The binary
//! owns the configuration (its file, its defaults, its environment), so it
//! hands the server a [`Reload`] to call; `SIGHUP` calls the same one.

use std::sync::Arc;

use serde::Serialize;

/// What a reload changed, and what it left for a restart.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ReloadReport {
    /// Keys whose new values are now in use (`channels.NAME.rate_per_sec`).
    pub applied: Vec<String>,
    /// Keys whose new values wait for a restart; the old ones keep running.
    pub needs_restart: Vec<String>,
}

/// Reloads by result (`applied`, `refused`, `failed`), from either trigger.
pub const CONFIG_RELOADS: &str = "herald_config_reloads_total";

/// Counts one reload in [`CONFIG_RELOADS`].
pub fn count(result: &Result<ReloadReport, ReloadError>) {
    metrics::describe_counter!(
        CONFIG_RELOADS,
        "Configuration reloads (SIGHUP or POST /v1/admin:reload) by result."
    );
    let result = match result {
        Ok(_) => "applied",
        Err(ReloadError::Failed(_)) => "failed",
        Err(_) => "refused",
    };
    metrics::counter!(CONFIG_RELOADS, "result" => result).increment(1);
}

/// Why nothing was applied.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReloadError {
    /// The node was started without a configuration file.
    #[error("this node was started without a configuration file; there is nothing to re-read")]
    NoFile,
    /// The new file is unreadable or invalid; the message names the key.
    #[error("{0}")]
    Invalid(String),
    /// Valid, but applying it failed part way (the store did not answer).
    #[error("{0}")]
    Failed(String),
}

/// Reloads the node's configuration; one at a time.
#[async_trait::async_trait]
pub trait Reload: Send + Sync {
    async fn reload(&self) -> Result<ReloadReport, ReloadError>;
}

/// A shared [`Reload`].
pub type Reloader = Arc<dyn Reload>;
