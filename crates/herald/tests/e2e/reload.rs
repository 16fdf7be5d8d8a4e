//! Live reload against the real binary: a channel's rate changes on SIGHUP
//! in a running node (measured from the sink's timestamps), a broken file is
//! refused with the key named and the old values keep running, and a new
//! listen address is reported as needing a restart.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{self, Mock, Server};

/// Deliveries a second of the recipients starting with `tag`, from the
/// sink's receive times: the sends after the first over the time they took.
async fn measured_rate(mock: &Mock, tag: &str, n: usize) -> f64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut at: Vec<u64> = loop {
        let at: Vec<u64> = mock
            .requests(None)
            .await
            .iter()
            .filter(|r| {
                r["body"]["recipient"]
                    .as_str()
                    .is_some_and(|to| to.starts_with(&format!("{tag}-")))
            })
            .filter_map(|r| r["received_at_ms"].as_u64())
            .collect();
        if at.len() >= n {
            break at;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{tag}: {} of {n} delivered",
            at.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    at.sort_unstable();
    let span_ms = (at[at.len() - 1] - at[0]).max(1) as f64;
    (at.len() - 1) as f64 * 1000.0 / span_ms
}

async fn channel_rate(server: &Server) -> Option<f64> {
    let (_, v) = server.get("/v1/channels").await;
    v["channels"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == "hooks")?["rate_per_sec"]
        .as_f64()
}

fn rewrite(server: &Server, from: &str, to: &str) {
    let path = server.config_path();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{from:?} in {text}");
    std::fs::write(&path, text.replace(from, to)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_changes_a_channels_rate_and_a_broken_file_is_refused() {
    let mock = Mock::start(&[]).await;
    let server = Server::start(&Server::webhook_config(
        &mock.hook(),
        "rate_per_sec = 20\nconcurrency = 8",
        "",
    ))
    .await;
    assert_eq!(channel_rate(&server).await, Some(20.0));

    // At 20 a second: 60 timers due at once take about three seconds.
    let slow_n = 60;
    server
        .schedule_spread(slow_n, common::now_ms() + 300, 0, "slow")
        .await;
    let slow = measured_rate(&mock, "slow", slow_n).await;

    rewrite(&server, "rate_per_sec = 20", "rate_per_sec = 100");
    server.signal("HUP");
    common::wait_for("the reload to apply", Duration::from_secs(10), || async {
        channel_rate(&server).await == Some(100.0)
    })
    .await;
    // The new settings take effect before the reload is logged.
    common::wait_for(
        "the reload to be logged",
        Duration::from_secs(10),
        || async {
            let log = server.log();
            log.contains("configuration reloaded") && log.contains("channels.hooks.rate_per_sec")
        },
    )
    .await;

    // At 100 a second: 300 timers take about three seconds.
    let fast_n = 300;
    server
        .schedule_spread(fast_n, common::now_ms() + 300, 0, "fast")
        .await;
    let fast = measured_rate(&mock, "fast", fast_n).await;
    println!(
        "reload: measured rate before {slow:.1}/s (rate_per_sec = 20), after SIGHUP {fast:.1}/s (rate_per_sec = 100)"
    );
    assert!(
        fast >= 2.5 * slow,
        "after the reload the channel sent {fast:.1}/s, before {slow:.1}/s"
    );

    // A broken file is refused naming the key; the old values keep running.
    rewrite(&server, "rate_per_sec = 100", "rate_per_sec = \"fast\"");
    let (status, body) = server.post("/v1/admin:reload", &json!({})).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "invalid_config", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("rate_per_sec"), "{body}");
    assert_eq!(channel_rate(&server).await, Some(100.0));
    server
        .schedule_spread(20, common::now_ms() + 100, 0, "after")
        .await;
    measured_rate(&mock, "after", 20).await;

    // A new listen address needs a restart; the live keys still apply.
    rewrite(&server, "rate_per_sec = \"fast\"", "rate_per_sec = 50");
    rewrite(
        &server,
        "listen = \"127.0.0.1:0\"",
        "listen = \"127.0.0.1:1\"",
    );
    let (status, body) = server.post("/v1/admin:reload", &json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["needs_restart"], json!(["listen"]), "{body}");
    assert_eq!(
        body["applied"],
        json!(["channels.hooks.rate_per_sec"]),
        "{body}"
    );
    assert_eq!(channel_rate(&server).await, Some(50.0));
    common::wait_for(
        "the restart-needing keys to be logged",
        Duration::from_secs(10),
        || async { server.log().contains("needs_restart") },
    )
    .await;

    // Each reload is counted, and the signal's one is in the audit log.
    let metrics = server.metrics().await;
    for result in ["applied", "refused"] {
        assert!(
            metrics.contains(&format!(
                "herald_config_reloads_total{{result=\"{result}\"}}"
            )),
            "{result}: {metrics}"
        );
    }
    common::wait_for("the audit entries", Duration::from_secs(10), || async {
        let (_, v) = server.get("/v1/audit").await;
        let entries = v["entries"].as_array().cloned().unwrap_or_default();
        let of = |method: &str| {
            entries
                .iter()
                .filter(|e: &&Value| e["route"] == "/v1/admin:reload" && e["method"] == method)
                .count()
        };
        of("SIGHUP") == 1 && of("POST") == 2
    })
    .await;
}
