//! Schema migrations, numbered the same on both backends.
//!
//! Each backend keeps its migrations as `.sql` files in its `migrations/`
//! folder, `NNNN_what.sql`, loaded with `include_str!`. Both take the list of
//! names from [`migrations!`], so migration `N` brings a database to schema
//! version `N` on either backend and a version means the same tables
//! everywhere. Append a name (and a file on each side); never edit a file
//! that has shipped.

/// One migration: its file's name without `.sql`, and its SQL.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    pub(crate) name: &'static str,
    pub(crate) sql: &'static str,
}

/// Every migration, with the SQL of the backend that invokes it: the files of
/// its own `migrations/` folder (`include_str!` reads relative to the
/// invoking file).
macro_rules! migrations {
    () => {
        $crate::migration::migrations!(@
            "0001_timers",
            "0002_cluster",
            "0003_reminders",
            "0004_campaign",
            "0005_provider",
            "0006_segment_cursor_idx",
            "0007_tenants",
            "0008_incarnation",
            "0009_timer_search",
            "0010_channel_pauses",
            "0011_job_sends_failed",
            "0012_subject_counts",
            "0013_subscribers",
            "0014_reminder_leads",
            "0015_timer_routing",
            "0016_receipts",
            "0017_campaign_routing",
            "0018_retention",
            "0019_partitions",
            "0020_timer_counts",
            "0021_reports",
            "0022_timer_counts_batched",
            "0023_report_stripes",
            "0024_tenant_due",
            "0025_pending_shard_key",
            "0026_send_in_doubt",
            "0027_timer_in_doubt",
            "0028_audit_tallies",
            "0029_job_traceparent",
            "0030_templates",
            "0031_subject_timing",
            "0032_cap_counters",
            "0033_fallback_routes",
            "0034_job_labels",
            "0035_segment_finished",
            "0036_actors",
            "0037_cap_counter_expiry",
            "0038_subject_templates",
            "0039_resend_unread",
            "0040_calendars",
            "0041_grants",
            "0042_search_filing",
            "0043_unfiled_done",
            "0044_finished_early",
        )
    };
    (@ $($name:literal),+ $(,)?) => {
        &[$($crate::migration::Migration {
            name: $name,
            sql: include_str!(concat!("migrations/", $name, ".sql")),
        }),+]
    };
}
pub(crate) use migrations;

/// The schema version after `migrations`, as a database records it.
pub(crate) fn latest(migrations: &[Migration]) -> i64 {
    migrations.len() as i64
}

/// Checks a backend's list: names numbered 1, 2, 3, ... in order.
#[cfg(test)]
pub(crate) fn check_numbering(migrations: &[Migration]) {
    for (i, m) in migrations.iter().enumerate() {
        let number = format!("{:04}_", i + 1);
        assert!(
            m.name.starts_with(&number),
            "{} is number {}",
            m.name,
            i + 1
        );
        assert!(!m.sql.trim().is_empty(), "{} is empty", m.name);
    }
}
