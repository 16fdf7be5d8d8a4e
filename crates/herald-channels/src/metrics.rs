//! The metrics the channels record themselves (the engine records the
//! outcome of every attempt).

/// Token fetches that failed, by token key (`kind:account`).
pub const TOKEN_REFRESH_FAILURES: &str = "herald_token_refresh_failures_total";

/// Says what each metric means, once, for `/metrics`.
pub fn describe() {
    ::metrics::describe_counter!(
        TOKEN_REFRESH_FAILURES,
        "Provider access-token refreshes that failed, by token."
    );
}

/// A token refresh failed (whether or not an unexpired token stays in use).
pub(crate) fn token_refresh_failed(key: &str) {
    ::metrics::counter!(TOKEN_REFRESH_FAILURES, "token" => key.to_string()).increment(1);
}
