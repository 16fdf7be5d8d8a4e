//! `herald bench fairness` with tiny numbers: it completes and reports its
//! figures. No timing is asserted (CI machines vary); the full-size run and
//! its figures are in BENCHMARKS.md.

use crate::common;

use common::BIN;
use serde_json::Value;

#[tokio::test]
async fn the_fairness_bench_runs_and_reports() {
    let out = tokio::process::Command::new(BIN)
        .args([
            "bench",
            "fairness",
            "--a-timers",
            "300",
            "--b-timers",
            "20",
            "--b-after-secs",
            "0.3",
            "--lead-secs",
            "1",
            "--runs",
            "1",
            "--concurrency",
            "16",
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
    assert!(stdout.contains("median of 1"), "{stdout}");
    let summary: Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON summary: {stdout}"));
    assert_eq!(summary["scenario"], "fairness");
    let median = &summary["median"];
    for figure in [
        &median["a_per_sec_alone"],
        &median["a_per_sec_with_b"],
        &median["ratio"],
        &median["b_lateness_ms"]["p50"],
        &median["b_lateness_ms"]["p99"],
        &median["b_lateness_ms"]["max"],
    ] {
        assert!(figure.as_f64().is_some_and(|x| x >= 0.0), "{summary}");
    }
}
