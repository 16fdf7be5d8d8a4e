//! Helpers for unit tests.
