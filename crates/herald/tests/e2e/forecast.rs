//! The forecast of what falls due (`GET /v1/forecast`, issue 41), end to
//! end on both stores: timers and reminders counted per channel and minute,
//! a channel whose rate cannot send what falls due on it flagged with when
//! it falls behind, and the day's view in quarter hours.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// The forecast once counted (the first request may find it counting).
async fn counted(server: &Server, horizon: &str) -> Value {
    let path = format!("/v1/forecast?horizon={horizon}");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (s, v) = server.get(&path).await;
        assert_eq!(s, 200, "{v}");
        if v["state"] == "counted" {
            return v;
        }
        assert!(std::time::Instant::now() < deadline, "never counted: {v}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn channel<'a>(f: &'a Value, name: &str) -> &'a Value {
    f["channels"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["channel"] == name))
        .unwrap_or_else(|| panic!("no channel {name} in {f}"))
}

fn sum(v: &Value) -> u64 {
    v.as_array()
        .map(|xs| xs.iter().filter_map(Value::as_u64).sum())
        .unwrap_or(0)
}

async fn what_falls_due_is_counted_against_each_rate(store: Option<&str>) {
    let mock = Mock::start(&[]).await;
    // `slow` sends 2 a second: 400 due in one minute wait 280 s past it.
    let cfg = format!(
        "{}\n[[channels]]\nname = \"slow\"\nkind = \"webhook\"\nurl = \"{}\"\nrate_per_sec = 2\n",
        Server::webhook_config(
            &mock.hook(),
            "",
            "[reminders]\nleads_minutes = [15]\n[reminders.channels]\napp = \"hooks\"\n"
        ),
        mock.hook()
    );
    let server = match store {
        Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), &cfg).await,
        None => Server::start(&cfg).await,
    };
    let now = now_ms();
    let in_10 = now + 10 * 60_000 + 20_000;
    let mut lines = String::new();
    for i in 0..400 {
        lines.push_str(
            &json!({"channel": "slow", "recipient": format!("u{i}"), "fire_at": rfc3339(in_10),
                    "message": {"text": "coupon"}})
            .to_string(),
        );
        lines.push('\n');
    }
    for i in 0..30 {
        lines.push_str(
            &json!({"channel": "hooks", "recipient": format!("h{i}"),
                    "fire_at": rfc3339(now + 20 * 60_000 + i * 60_000),
                    "message": {"text": "hello"}})
            .to_string(),
        );
        lines.push('\n');
    }
    // Far outside the hour, inside the day.
    lines.push_str(
        &json!({"channel": "hooks", "recipient": "later", "fire_at": rfc3339(now + 5 * 3_600_000),
                "message": {"text": "later"}})
        .to_string(),
    );
    lines.push('\n');
    let (s, out) = server.bulk(&lines).await;
    assert_eq!(s, 200);
    assert!(out.iter().all(|l| l["status"] == 201), "{out:?}");
    // Reminders: a subject starting in 40 minutes, a 15-minute lead.
    let (s, v) = server
        .put(
            "/v1/subjects/sale",
            &json!({"start_at": rfc3339(now + 40 * 60_000), "title": "Sale"}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    for i in 0..5 {
        let (s, v) = server
            .post(
                "/v1/reminders",
                &json!({"user_id": format!("r{i}"), "subject_id": "sale",
                        "channel_type": "app", "lead_minutes": 15}),
            )
            .await;
        assert_eq!(s, 201, "{v}");
    }

    let f = counted(&server, "hour").await;
    // A count made before the inserts above may still be the latest: wait
    // for one that sees them.
    let f = if f["channels"].as_array().is_none_or(|c| c.is_empty()) {
        tokio::time::sleep(Duration::from_secs(16)).await;
        counted(&server, "hour").await
    } else {
        f
    };
    assert_eq!(f["bucket_s"], 60, "{f}");
    assert_eq!(f["complete_until"], Value::Null, "{f}");
    let slow = channel(&f, "slow");
    assert_eq!(slow["total"], 400, "{f}");
    assert_eq!(slow["timers"].as_array().map(Vec::len), Some(60));
    assert_eq!(slow["rate_per_sec"], 2.0);
    // 400 in one minute at 2/s: 120 go in it, 280 wait 140 s past it.
    let behind = &slow["behind"];
    assert_eq!(behind["waiting"], 280, "{f}");
    assert_eq!(behind["worst_late_s"], 140.0, "{f}");
    assert_eq!(behind["from"], behind["worst_at"], "{f}");
    let minute = parse_ms(behind["from"].as_str().unwrap());
    assert!(
        minute <= in_10 && in_10 < minute + 60_000,
        "behind from {} for timers due {}",
        rfc3339(minute),
        rfc3339(in_10)
    );
    // `hooks` has no rate: counted, never behind; reminders apart.
    let hooks = channel(&f, "hooks");
    assert_eq!(hooks["rate_per_sec"], Value::Null);
    assert_eq!(hooks["behind"], Value::Null);
    assert_eq!(sum(&hooks["reminders"]), 5, "{f}");
    assert_eq!(sum(&hooks["timers"]), 30, "{f}");
    // The busiest channel first.
    assert_eq!(f["channels"][0]["channel"], "slow");

    // The day: quarter hours, and the timer five hours out.
    let d = counted(&server, "day").await;
    assert_eq!(d["bucket_s"], 900, "{d}");
    let hooks = channel(&d, "hooks");
    assert_eq!(hooks["timers"].as_array().map(Vec::len), Some(96));
    assert_eq!(sum(&hooks["timers"]), 31, "{d}");
    assert_eq!(channel(&d, "slow")["total"], 400);

    // A bad horizon names the field and counts nothing.
    let (s, v) = server.get("/v1/forecast?horizon=week").await;
    assert_eq!(s, 400, "{v}");
    assert_eq!(v["error"]["field"], "horizon", "{v}");
}

#[tokio::test]
async fn what_falls_due_is_counted_against_each_rate_on_sqlite() {
    what_falls_due_is_counted_against_each_rate(None).await;
}

#[tokio::test]
async fn what_falls_due_is_counted_against_each_rate_on_postgres() {
    let Some((_db, url)) = common::pg_database("forecast") else {
        return;
    };
    what_falls_due_is_counted_against_each_rate(Some(&url)).await;
}
