//! The operator's lookups of issue 41, end to end on both stores: one user
//! (`GET /v1/users/{user_id}`: profile, reminders, timers, campaign sends),
//! a subject's outcomes (failed reminders with their errors; the list's
//! failed count) and one recipient of a job (`?recipient=`).

use crate::common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

async fn ok(r: (u16, Value), want: u16) -> Value {
    let (s, v) = r;
    assert_eq!(s, want, "{v}");
    v
}

async fn job_done(server: &Server, id: i64) -> Value {
    wait_for("the job to end", Duration::from_secs(30), || async {
        server.get(&format!("/v1/jobs/{id}")).await.1["state"] == "done"
    })
    .await;
    server.get(&format!("/v1/jobs/{id}")).await.1
}

async fn lookups(store: Option<&str>) {
    let mock = Mock::start(&[]).await;
    let refusing = Mock::start(&["--permanent-status", "400"]).await;
    // App reminders go to a channel that refuses them for good, email ones
    // to one that delivers.
    let cfg = format!(
        "{}\n[[channels]]\nname = \"refusing\"\nkind = \"webhook\"\nurl = \"{}\"\n",
        Server::webhook_config(
            &mock.hook(),
            "",
            "[reminders]\nleads_minutes = [5]\n[reminders.channels]\napp = \"refusing\"\nemail = \"hooks\"\n\
             [jobs]\nsweep_interval_ms = 200\nplanner_interval_ms = 200\nidle_poll_ms = 100\n"
        ),
        refusing.hook()
    );
    let server = match store {
        Some(url) => Server::start_on(url, tempfile::tempdir().unwrap(), &cfg).await,
        None => Server::start(&cfg).await,
    };
    let now = now_ms();
    ok(
        server
            .put(
                "/v1/subscribers/alice",
                &json!({"addresses": {"email": "alice@example.com"}}),
            )
            .await,
        201,
    )
    .await;
    // The lead is 5 minutes: due in about 3 s.
    let start = now + 5 * 60_000 + 3_000;
    ok(
        server
            .put(
                "/v1/subjects/sale",
                &json!({"start_at": rfc3339(start), "title": "Sale"}),
            )
            .await,
        201,
    )
    .await;
    for (user, ct) in [("alice", "app"), ("bob", "email"), ("carol", "app")] {
        ok(
            server
                .post(
                    "/v1/reminders",
                    &json!({"user_id": user, "subject_id": "sale",
                            "channel_type": ct, "lead_minutes": 5}),
                )
                .await,
            201,
        )
        .await;
    }
    let timer = ok(
        server
            .post(
                "/v1/timers",
                &json!({"channel": "hooks", "recipient": "alice", "delay_ms": 0,
                        "message": {"text": "hello"}}),
            )
            .await,
        201,
    )
    .await;
    // Three campaigns: alice delivered, alice refused, one without her.
    let mut jobs = Vec::new();
    for (name, channel, users) in [
        ("welcome", "hooks", vec!["bob", "alice", "dave"]),
        ("partner", "refusing", vec!["alice"]),
        ("others", "hooks", vec!["bob"]),
    ] {
        let j = ok(
            server
                .post(
                    "/v1/jobs",
                    &json!({"name": name, "channel": channel, "users": users,
                            "message": {"text": name}}),
                )
                .await,
            201,
        )
        .await;
        jobs.push(j["id"].as_i64().expect("job id"));
    }
    for id in &jobs {
        job_done(&server, *id).await;
    }
    wait_for(
        "the reminders to be sent",
        Duration::from_secs(30),
        || async {
            let v = server.get("/v1/subjects/sale").await.1;
            v["outcomes"]["by_state"]["pending"].is_null() && v["outcomes"]["counted"] == 3
        },
    )
    .await;

    // The subject: one sent, two failed with the refusing channel's error.
    let subject = ok(server.get("/v1/subjects/sale").await, 200).await;
    let o = &subject["outcomes"];
    assert_eq!(o["by_state"]["done"], 1, "{subject}");
    let failed =
        o["by_state"]["failed"].as_u64().unwrap_or(0) + o["by_state"]["dead"].as_u64().unwrap_or(0);
    assert_eq!(failed, 2, "{subject}");
    assert_eq!(o["capped"], false, "{subject}");
    // carol's was refused by the channel; alice has a profile without an
    // app address, so hers was never sent, and the error says so.
    let errors: Vec<&str> = o["top_errors"]
        .as_array()
        .expect("top errors")
        .iter()
        .filter_map(|e| e["error"].as_str())
        .collect();
    assert_eq!(errors.len(), 2, "{subject}");
    assert!(errors.iter().any(|e| e.contains("HTTP 400")), "{subject}");
    assert!(errors.iter().any(|e| e.contains("no address")), "{subject}");
    let mut users: Vec<&str> = o["failed"]
        .as_array()
        .expect("failed list")
        .iter()
        .filter_map(|f| f["user_id"].as_str())
        .collect();
    users.sort();
    assert_eq!(users, ["alice", "carol"], "{subject}");
    assert_eq!(o["failed"][0]["channel_type"], "app", "{subject}");
    let list = ok(server.get("/v1/subjects").await, 200).await;
    assert_eq!(list["subjects"][0]["failed"], 2, "{list}");
    assert_eq!(list["failed_cap"], 1000, "{list}");

    // One user: everything above, from alice's side.
    let me = ok(server.get("/v1/users/alice").await, 200).await;
    assert_eq!(me["user_id"], "alice");
    assert_eq!(
        me["subscriber"]["addresses"]["email"], "alice@example.com",
        "{me}"
    );
    assert_eq!(me["reminders"][0]["subject_id"], "sale", "{me}");
    let timers = me["timers"].as_array().expect("timers");
    // Her reminder and her timer, newest due first.
    assert_eq!(timers.len(), 2, "{me}");
    assert!(
        timers
            .iter()
            .any(|t| t["id"] == timer["id"] && t["state"] == "done"),
        "{me}"
    );
    assert!(
        timers
            .iter()
            .any(|t| t["kind"] == "reminder" && t["state"] == "failed"),
        "{me}"
    );
    let sends = me["campaign_sends"].as_array().expect("sends");
    assert_eq!(me["jobs_searched"], 20);
    // Newest first: the refused job, then the welcome; not the third.
    assert_eq!(sends.len(), 2, "{me}");
    assert_eq!(sends[0]["job_id"], jobs[1], "{me}");
    assert_eq!(sends[0]["send"]["state"], "failed", "{me}");
    assert!(sends[0]["send"]["error"].is_string(), "{me}");
    assert_eq!(sends[1]["job_name"], "welcome", "{me}");
    assert_eq!(sends[1]["index"], 1, "{me}");
    assert_eq!(sends[1]["send"]["state"], "delivered", "{me}");

    // A stranger has nothing, and is not an error.
    let nobody = ok(server.get("/v1/users/nobody").await, 200).await;
    assert!(nobody["subscriber"].is_null(), "{nobody}");
    assert_eq!(nobody["campaign_sends"], json!([]), "{nobody}");

    // One recipient of a job.
    let welcome = jobs[0];
    let found = ok(
        server
            .get(&format!("/v1/jobs/{welcome}/sends?recipient=dave"))
            .await,
        200,
    )
    .await;
    assert_eq!(found["recipient_index"], 2, "{found}");
    assert_eq!(found["sends"][0]["recipient"], "dave", "{found}");
    assert_eq!(found["sends"][0]["state"], "delivered", "{found}");
    let absent = ok(
        server
            .get(&format!("/v1/jobs/{welcome}/sends?recipient=al"))
            .await,
        200,
    )
    .await;
    assert!(absent.get("recipient_index").is_none(), "{absent}");
    assert_eq!(absent["sends"], json!([]), "{absent}");
    let (s, v) = server
        .get(&format!("/v1/jobs/{welcome}/sends?recipient=a%0Ab"))
        .await;
    assert_eq!(s, 400, "{v}");
    assert!(v.to_string().contains("recipient"), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_user_subject_outcomes_and_a_recipient_on_sqlite() {
    lookups(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_user_subject_outcomes_and_a_recipient_on_postgres() {
    let Some((_db, url)) = common::pg_database("one_user") else {
        return;
    };
    lookups(Some(&url)).await;
}
