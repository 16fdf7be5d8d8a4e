//! Provider pacing and rate keys against the real binary and `herald mock`,
//! on both stores. WeCom drops, without an error, whatever passes 30
//! messages a minute to one member; the mock does the same and counts it.
//! A WeCom channel with its default pacing holds the 31st send back
//! (`cap_deferred`) so nothing is dropped; one with `pacing = []` shows what
//! the provider would have thrown away. A `rate_key` over its tenant's
//! `[[rate_limits]]` waits the same way; another key has its own window.

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

fn wecom(name: &str, mock: &str, extra: &str) -> String {
    format!(
        "[[channels]]\nname = \"{name}\"\nkind = \"wecom\"\napi_base = \"{mock}\"\n\
         corpid = \"wwmockcorp\"\ncorpsecret = \"mock-wecom-secret\"\nagentid = 1000002\n{extra}\n"
    )
}

async fn timer(s: &Server, body: Value) -> i64 {
    let (st, v) = s.post("/v1/timers", &body).await;
    assert_eq!(st, 201, "{v}");
    v["id"].as_i64().unwrap()
}

/// A timer's first send-log outcome and error, once it has one.
async fn first_outcome(s: &Server, id: i64) -> (String, String) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let d = s.get(&format!("/v1/timers/{id}/deliveries")).await.1;
        if let Some(o) = d["deliveries"][0]["outcome"].as_str() {
            let e = d["deliveries"][0]["error"].as_str().unwrap_or("");
            return (o.to_string(), e.to_string());
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timer {id} never fired: {d}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn tally(s: &Server, ids: &[i64]) -> std::collections::BTreeMap<String, usize> {
    let mut t = std::collections::BTreeMap::new();
    for &id in ids {
        *t.entry(first_outcome(s, id).await.0).or_default() += 1;
    }
    t
}

async fn wecom_scenario(store: Option<String>) {
    let mock = Mock::start(&[]).await;
    let cfg = format!(
        "{}{}",
        wecom("wc", &mock.url, ""),
        wecom("wc_unpaced", &mock.url, "pacing = []")
    );
    let s = match store {
        Some(url) => Server::start_on(&url, tempfile::tempdir().unwrap(), &cfg).await,
        None => Server::start(&cfg).await,
    };
    let text = json!({"msgtype": "text", "text": {"content": "The flash sale opens at ten"}});
    let mut paced = Vec::new();
    let mut unpaced = Vec::new();
    for _ in 0..35 {
        paced.push(
            timer(
                &s,
                json!({"delay_ms": 0, "channel": "wc", "recipient": "zhangsan", "message": text}),
            )
            .await,
        );
        unpaced.push(
            timer(
                &s,
                json!({"delay_ms": 0, "channel": "wc_unpaced", "recipient": "lisi", "message": text}),
            )
            .await,
        );
    }
    // Paced: 30 go, 5 wait for the minute to free a slot; the provider
    // drops nothing of zhangsan's.
    let t = tally(&s, &paced).await;
    assert_eq!(
        t,
        [
            ("cap_deferred".to_string(), 5),
            ("delivered".to_string(), 30)
        ]
        .into(),
    );
    for &id in &paced {
        let (o, e) = first_outcome(&s, id).await;
        if o == "cap_deferred" {
            assert!(
                e.contains("pacing of channel \"wc\": 30 per 1m"),
                "the error names the pacing: {e}"
            );
            let t = s.timer(id).await;
            assert_eq!(t["state"], "pending", "{t}");
            assert_eq!(t["attempts"], 0, "a deferral uses no attempt: {t}");
            let wait = parse_ms(t["due_at"].as_str().unwrap()) - now_ms();
            assert!(
                (30_000..=70_000).contains(&wait),
                "due again when the minute frees a slot, not {wait} ms from now: {t}"
            );
        }
    }
    // Unpaced: all 35 "delivered" as far as Herald can tell, and the
    // provider silently dropped 5 of lisi's.
    assert_eq!(
        tally(&s, &unpaced).await,
        [("delivered".to_string(), 35)].into()
    );
    wait_for(
        "the mock counted 70 sends",
        Duration::from_secs(30),
        || async {
            get_json(&format!("{}/_mock/wecom/stats", mock.url)).await.1["person_times"] == 65
        },
    )
    .await;
    let stats = get_json(&format!("{}/_mock/wecom/stats", mock.url)).await.1;
    assert_eq!(stats["dropped_member_limit"], 5, "{stats}");
    assert_eq!(stats["delivered_users"], 60, "{stats}");
}

#[tokio::test]
async fn wecom_pacing_holds_back_what_the_provider_would_drop_on_sqlite() {
    wecom_scenario(None).await;
}

#[tokio::test]
async fn wecom_pacing_holds_back_what_the_provider_would_drop_on_postgres() {
    let Some((_db, url)) = pg_database("pacing") else {
        eprintln!("PostgreSQL not installed: pacing test on PostgreSQL skipped");
        return;
    };
    wecom_scenario(Some(url)).await;
}

async fn rate_key_scenario(store: Option<String>) {
    let mock = Mock::start(&[]).await;
    let cfg = Server::webhook_config(
        &mock.hook(),
        "",
        "[[rate_limits]]\nname = \"shop\"\nmax = 2\nwindow = \"1h\"\n",
    );
    let s = match store {
        Some(url) => Server::start_on(&url, tempfile::tempdir().unwrap(), &cfg).await,
        None => Server::start(&cfg).await,
    };
    let send = |key: &str, n: usize| {
        json!({"delay_ms": 0, "channel": "hooks", "recipient": format!("buyer-{n}"),
               "rate_key": key, "message": {"text": "your order shipped"}})
    };
    // Bad keys are refused, naming the field, and nothing is stored.
    for bad in [
        json!(""),
        json!("a\u{7}b"),
        json!("x".repeat(129)),
        json!(5),
    ] {
        let mut b = send("k", 0);
        b["rate_key"] = bad.clone();
        let (st, v) = s.post("/v1/timers", &b).await;
        assert_eq!(st, 400, "{bad}: {v}");
        assert_eq!(v["error"]["field"], "rate_key", "{bad}: {v}");
    }
    let mut shop1 = Vec::new();
    for n in 0..3 {
        let id = timer(&s, send("shop-1", n)).await;
        // One at a time, so which one waits is the last one made.
        first_outcome(&s, id).await;
        shop1.push(id);
    }
    let shop2 = timer(&s, send("shop-2", 9)).await;
    let mut got = Vec::new();
    for &id in &shop1 {
        got.push(first_outcome(&s, id).await);
    }
    assert_eq!(got[0].0, "delivered");
    assert_eq!(got[1].0, "delivered");
    assert_eq!(got[2].0, "cap_deferred");
    assert!(
        got[2].1.contains("rate limit \"shop\" for key \"shop-1\""),
        "{got:?}"
    );
    assert_eq!(first_outcome(&s, shop2).await.0, "delivered");
    let t = s.timer(shop1[2]).await;
    assert_eq!(t["state"], "pending", "{t}");
    assert_eq!(t["rate_key"], "shop-1", "{t}");
    assert_eq!(mock.stats().await["unique_delivered"], 3);
}

#[tokio::test]
async fn a_rate_key_over_its_limit_waits_on_sqlite() {
    rate_key_scenario(None).await;
}

#[tokio::test]
async fn a_rate_key_over_its_limit_waits_on_postgres() {
    let Some((_db, url)) = pg_database("ratekey") else {
        eprintln!("PostgreSQL not installed: rate key test on PostgreSQL skipped");
        return;
    };
    rate_key_scenario(Some(url)).await;
}
