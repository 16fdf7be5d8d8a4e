//! The schema of a directory entry, apart from the other schemas: the
//! handlers that answer with one (`api::subscribers`, `api::users`) name it,
//! and `schemas` (which imports every handler's types) lists it.

use herald_core::subscriber::{Addresses, Preferences, QuietHours};
use utoipa::ToSchema;

/// A directory entry: the profile with its version and times.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SubscriberJson {
    user_id: String,
    timezone: Option<String>,
    locale: Option<String>,
    addresses: Option<Addresses>,
    preferences: Option<Preferences>,
    quiet_hours: Option<QuietHours>,
    version: i64,
    created_at: String,
    updated_at: String,
}
