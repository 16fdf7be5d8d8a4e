//! `herald bench console` with small numbers: it seeds, times every page it
//! can and reports. No timing is asserted (CI machines vary); the full-size
//! figures are in BENCHMARKS.md.

use crate::common;

use common::BIN;
use serde_json::Value;

#[tokio::test]
async fn the_console_bench_runs_and_reports() {
    let out = tokio::process::Command::new(BIN)
        .args([
            "bench",
            "console",
            "--timers",
            "2000",
            "--recipients",
            "2000",
            "--reminders",
            "20",
            "--subjects",
            "2",
            "--failed",
            "50",
            "--rounds",
            "2",
            "--concurrency",
            "4",
            "--json",
        ])
        .env_remove("HERALD_ADMIN_KEY")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let summary: Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON summary: {stdout}"));
    assert_eq!(summary["scenario"], "console");
    assert_eq!(summary["failed"], 50);
    let pages = summary["pages"].as_array().cloned().unwrap_or_default();
    let timed: Vec<&str> = pages.iter().filter_map(|p| p["page"].as_str()).collect();
    for page in [
        "overview",
        "overview: next day",
        "timers",
        "timers: search",
        "timer",
        "dead letters",
        "reminders",
        "subject",
        "rules",
        "rule",
        "jobs",
        "job",
        "channels",
        "cluster",
        "audit",
    ] {
        assert!(timed.contains(&page), "{page} not timed: {summary}");
    }
    assert_eq!(summary["notes"], serde_json::json!([]), "{summary}");
    for p in &pages {
        assert!(p["median_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{p}");
        assert!(p["p90_ms"].as_f64().is_some_and(|ms| ms >= 0.0), "{p}");
    }
}
