//! Herald's end-to-end tests, as one test binary: the real `herald` binary,
//! as `serve` and as `mock`, in child processes, talked to over real HTTP.
//!
//! One binary rather than one per file: each would link the whole workspace
//! again, and cargo runs test binaries one after another, so a file's slowest
//! test ran alone while the other core idled. Here libtest spreads all of
//! them over its threads. Run one file's tests with its module name as the
//! filter, e.g. `cargo test -p herald --test e2e cluster::`.
//!
//! The tests share one process: they must not set environment variables (a
//! child's environment goes on its `Command`), and the PostgreSQL tests share
//! one throwaway cluster (`common::pg_database` gives each its own database).

mod common;

mod access;
mod backup;
mod bad_input;
mod bench_console;
mod bench_fairness;
mod body_budget;
mod burst_threads;
mod calendars;
mod callbacks;
mod campaigns;
mod caps;
mod channels;
mod cli;
mod cluster;
mod console;
mod crash;
mod defaults;
mod describe;
mod digests;
mod disk_full;
mod edge;
mod errors_fix;
mod fallback;
mod fencing;
mod flight;
mod forecast;
mod fuzz_api;
mod fuzz_parsers;
mod gaps;
mod grants;
mod honor_push;
mod in_doubt;
mod in_time;
mod input;
mod isolation;
mod logs;
mod office_apps;
mod one_user;
mod oppo_push;
mod otel;
mod outage;
mod pacing;
mod readme;
mod receipts;
mod reload;
mod reminders;
mod reports;
mod resend_unread;
mod robots;
mod security;
mod sms;
mod subject_templates;
mod subscribers;
mod templates;
mod timers;
mod vendor_push;
mod vivo_push;
mod xiaomi_push;
