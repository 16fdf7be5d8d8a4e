//! herald-channels' integration tests, as one test binary (one link of the
//! crate instead of one per file, and all the tests spread over libtest's
//! threads). Run one file's tests with its module name as the filter, e.g.
//! `cargo test -p herald-channels --test integration providers::`.

mod providers;
mod webhook;
