//! Working-day calendars through the real binary, on both stores: the
//! built-in `cn` calendar, a preview across the 2026 Spring Festival, a
//! tenant's own calendar a rule fires on (a make-up day today, every minute)
//! and one it does not, unknown calendars refused naming the field, and `cn`
//! replaced for the tenant.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Mock, Server, now_ms, pg_database, wait_for};

fn field(v: &Value) -> &str {
    v["error"]["field"].as_str().unwrap_or_default()
}

/// A weekday-at-nine rule's schedule in Shanghai on calendar `cal`.
fn weekdays_at_nine(cal: &str) -> Value {
    json!({"type": "cron", "cron": "0 9 * * 1-5", "timezone": "Asia/Shanghai",
        "calendar": cal, "days": "working"})
}

/// The UTC date `days` after today's.
fn utc_date(days: i64) -> jiff::civil::Date {
    jiff::Timestamp::from_millisecond(now_ms() + days * 86_400_000)
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
}

/// A UTC calendar with no working weekdays whose only working days are
/// make-up days today and tomorrow.
fn make_up_today() -> Value {
    let mut years = serde_json::Map::new();
    for d in [utc_date(0), utc_date(1)] {
        let y = years
            .entry(d.year().to_string())
            .or_insert_with(|| json!({"source": "e2e", "holidays": [], "workdays": []}));
        y["workdays"]
            .as_array_mut()
            .unwrap()
            .push(json!(d.to_string()));
    }
    json!({"time_zone": "UTC", "working_weekdays": [], "years": years})
}

async fn walk(server: &Server, mock: &Mock) {
    // The built-in calendar answers without being stored.
    let (st, cn) = server.get("/v1/calendars/cn").await;
    assert_eq!(st, 200, "{cn}");
    assert_eq!(cn["builtin"], true);
    assert_eq!(
        (cn["first_year"].as_i64(), cn["last_year"].as_i64()),
        (Some(2024), Some(2026))
    );
    assert_eq!(cn["calendar"]["time_zone"], "Asia/Shanghai");
    let make_up = &cn["calendar"]["years"]["2026"]["workdays"];
    assert!(
        make_up.as_array().unwrap().contains(&json!("2026-02-14")),
        "{make_up}"
    );
    let (st, list) = server.get("/v1/calendars").await;
    assert_eq!(st, 200, "{list}");
    assert_eq!(list["calendars"][0]["name"], "cn", "{list}");

    // A preview across the Spring Festival: the make-up Saturday, then
    // nothing until the holiday ends.
    let (st, p) = server
        .post(
            "/v1/schedules:preview",
            &json!({"schedule": weekdays_at_nine("cn"), "count": 6,
                "from": "2026-02-12T00:00:00+08:00"}),
        )
        .await;
    assert_eq!(st, 200, "{p}");
    assert_eq!(
        p["local"],
        json!([
            "2026-02-12T09:00:00+08:00",
            "2026-02-13T09:00:00+08:00",
            "2026-02-14T09:00:00+08:00",
            "2026-02-24T09:00:00+08:00",
            "2026-02-25T09:00:00+08:00",
            "2026-02-26T09:00:00+08:00",
        ]),
        "{p}"
    );
    assert_eq!(p["instants"][2], "2026-02-14T01:00:00.000Z", "{p}");
    assert!(p.get("warnings").is_none(), "{p}");
    // Past the calendar's last year: the regular weekdays, and a warning.
    let (st, p) = server
        .post(
            "/v1/schedules:preview",
            &json!({"schedule": weekdays_at_nine("cn"), "count": 2,
                "from": "2026-12-31T00:00:00+08:00"}),
        )
        .await;
    assert_eq!(st, 200, "{p}");
    assert_eq!(p["local"][1], "2027-01-01T09:00:00+08:00", "{p}");
    assert!(p["warnings"][0].as_str().unwrap().contains("2027"), "{p}");

    // Unknown calendars are refused, naming the field.
    let (st, e) = server
        .post(
            "/v1/schedules:preview",
            &json!({"schedule": weekdays_at_nine("nowhere")}),
        )
        .await;
    assert_eq!((st, field(&e)), (400, "schedule.calendar"), "{e}");
    let rule = |schedule: Value, name: &str| {
        json!({"name": name, "schedule": schedule, "audience": {"users": ["u1"]},
            "channel": "hooks", "message": {"text": name}})
    };
    let (st, e) = server
        .post("/v1/rules", &rule(weekdays_at_nine("nowhere"), "lost"))
        .await;
    assert_eq!((st, field(&e)), (400, "schedule.calendar"), "{e}");

    // A calendar that does not check is refused, naming the field.
    let bad = json!({"time_zone": "UTC", "working_weekdays": ["mon"],
        "years": {"2030": {"holidays": ["2030-01-01", "2031-01-02"]}}});
    let (st, e) = server.put("/v1/calendars/broken", &bad).await;
    assert_eq!((st, field(&e)), (400, "years.2030.holidays[1]"), "{e}");
    let (st, e) = server.put("/v1/calendars/a%20b", &make_up_today()).await;
    assert_eq!((st, field(&e)), (400, "name"), "{e}");

    // The tenant's own calendar: today is a make-up day, so a rule every
    // minute on its working days sends; one on its non-working days waits
    // for the day after tomorrow.
    let (st, own) = server.put("/v1/calendars/make-up", &make_up_today()).await;
    assert_eq!(st, 200, "{own}");
    assert_eq!(own["builtin"], false);
    let (st, back) = server.get("/v1/calendars/make-up").await;
    assert_eq!((st, &back["calendar"]), (200, &make_up_today()), "{back}");
    let every_minute = |days: &str| {
        json!({"type": "cron", "cron": "* * * * *", "timezone": "UTC",
            "calendar": "make-up", "days": days})
    };
    let (st, off) = server
        .post("/v1/rules", &rule(every_minute("non_working"), "off-days"))
        .await;
    assert_eq!(st, 201, "{off}");
    assert_eq!(
        off["next_run_at"],
        format!("{}T00:00:00.000Z", utc_date(2)),
        "{off}"
    );
    let (st, on) = server
        .post("/v1/rules", &rule(every_minute("working"), "make-up-days"))
        .await;
    assert_eq!(st, 201, "{on}");
    let id = on["id"].as_i64().unwrap();
    wait_for(
        "the make-up day rule to send",
        Duration::from_secs(90),
        || async {
            let (_, t) = server.get(&format!("/v1/rules/{id}/tasks")).await;
            t["tasks"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["state"] == "succeeded"))
        },
    )
    .await;
    assert!(mock.stats().await["unique_delivered"].as_u64() >= Some(1));

    // `cn` replaced for this tenant: its own answers, and previews use it.
    let plain = json!({"time_zone": "Asia/Shanghai",
        "working_weekdays": ["mon", "tue", "wed", "thu", "fri"],
        "years": {"2026": {"source": "e2e", "holidays": ["2026-02-13"]}}});
    let (st, r) = server.put("/v1/calendars/cn", &plain).await;
    assert_eq!(st, 200, "{r}");
    let (_, cn) = server.get("/v1/calendars/cn").await;
    assert_eq!(cn["builtin"], false, "{cn}");
    let (st, p) = server
        .post(
            "/v1/schedules:preview",
            &json!({"schedule": weekdays_at_nine("cn"), "count": 3,
                "from": "2026-02-12T00:00:00+08:00"}),
        )
        .await;
    assert_eq!(st, 200, "{p}");
    assert_eq!(
        p["local"],
        json!([
            "2026-02-12T09:00:00+08:00",
            "2026-02-16T09:00:00+08:00",
            "2026-02-17T09:00:00+08:00"
        ]),
        "{p}"
    );
}

fn config(mock: &Mock) -> String {
    Server::webhook_config(
        &mock.hook(),
        "",
        "[jobs]\nplanner_interval_ms = 200\nsweep_interval_ms = 200\nidle_poll_ms = 100\n",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calendars_on_sqlite() {
    let mock = Mock::start(&[]).await;
    let server = Server::start(&config(&mock)).await;
    walk(&server, &mock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calendars_on_postgres() {
    let Some((_db, url)) = pg_database("calendars") else {
        return;
    };
    let mock = Mock::start(&[]).await;
    let server = Server::start_on(&url, tempfile::tempdir().unwrap(), &config(&mock)).await;
    walk(&server, &mock).await;
}
