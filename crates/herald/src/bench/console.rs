//! `herald bench console`: how fast the console's pages answer with real
//! volumes in the store. It seeds N pending timers (through the bulk
//! endpoint), F failed ones (on a channel whose webhook answers `404`), an
//! audience of M recipients and a job to it (on a node with no
//! segment workers, so the job stays running and sends nothing), a rule and
//! a subject with reminders, then times every page's requests in sequence,
//! several rounds, and prints the median and p90 of each page.
//!
//! The pages and their requests are a table ([`PAGES`]), one row per page
//! of docs/console.md (see "Benchmarks" in docs/architecture.md). A request the server does not serve (`404`, `405`: a route or the
//! HTML shell not built yet) is left out of its page with a note, so the
//! table times whatever the binary under test has.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use herald_core::{Clock, SystemClock, time::format_rfc3339_ms};
use serde_json::{Value, json};

use super::campaign::audience_body;
use super::harness::{Deployment, ServerArgs, http_client};
use super::load::{bulk_ingest, bulk_post};
use super::sink::start_sink;

#[derive(Args, Debug)]
pub struct ConsoleArgs {
    /// Pending timers seeded (due two hours from now and later, never
    /// firing while the bench runs).
    #[arg(long, default_value_t = 1_000_000)]
    timers: usize,
    /// Recipients of the seeded audience and of the job to it.
    #[arg(long, default_value_t = 1_000_000)]
    recipients: usize,
    /// Timers due at once on a channel whose webhook answers `404`: they
    /// end `failed`, for the dead-letter views.
    #[arg(long, default_value_t = 10_000)]
    failed: usize,
    /// Reminders of the seeded subject (past the 100,000 a subject's page
    /// counts, so that page counts as far as it ever does).
    #[arg(long, default_value_t = 200_000)]
    reminders: usize,
    /// Further subjects, each with 1,001 reminders: past the 1,000 the
    /// subject list counts, so a page of them counts as far as it ever does.
    #[arg(long, default_value_t = 49)]
    subjects: usize,
    /// Timed rounds over every page (after one untimed warm-up round).
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// The budget a page's median is checked against, in ms.
    #[arg(long, default_value_t = 300.0)]
    budget_ms: f64,
    /// Start the rounds only once SQLite's filer has put every seeded timer
    /// in the search indexes (`herald_search_filing_lag_seconds` reads 0);
    /// without it they start at once, while searches still read its backlog.
    #[arg(long)]
    after_filing: bool,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

/// One request of a page: `GET path`, or `POST path` with a JSON body.
/// `{timer}`, `{job}`, `{rule}`, `{subject}`, `{recipient}`, `{follower}`
/// and `{due_after}` are filled in from what was seeded.
#[derive(Debug, Clone, Copy)]
enum Step {
    Get(&'static str),
    Post(&'static str, &'static str),
}

/// A console page and the requests it makes on load.
struct Page {
    name: &'static str,
    steps: &'static [Step],
}

const PREVIEW: &str =
    r#"{"schedule":{"type":"cron","cron":"0 9 * * 1-5","timezone":"Asia/Shanghai"},"count":10}"#;

use Step::{Get, Post};

/// The console's pages and what each asks on load; a page's detail view
/// is a page of its own.
const PAGES: &[Page] = &[
    Page {
        name: "overview",
        steps: &[
            Get("/ui"),
            Get("/v1/overview"),
            Get("/v1/forecast?horizon=hour"),
        ],
    },
    Page {
        name: "overview: next day",
        steps: &[Get("/v1/forecast?horizon=day")],
    },
    Page {
        name: "timers",
        steps: &[Get("/ui/timers"), Get("/v1/timers?limit=50")],
    },
    Page {
        name: "timers: search",
        steps: &[
            Get("/v1/timers?recipient={recipient}&limit=50"),
            Get("/v1/timers?state=pending&channel=sink&due_after={due_after}&limit=50"),
        ],
    },
    Page {
        name: "timer",
        steps: &[
            Get("/v1/timers/{timer}"),
            Get("/v1/timers/{timer}/deliveries"),
        ],
    },
    Page {
        name: "dead letters",
        steps: &[
            Get("/ui/dead-letters"),
            Get("/v1/dead-letters"),
            Get("/v1/timers?state=dead&order=desc&limit=50"),
            Get("/v1/jobs?limit=50"),
        ],
    },
    Page {
        name: "reminders",
        steps: &[Get("/ui/reminders"), Get("/v1/subjects?limit=50")],
    },
    Page {
        name: "subject",
        steps: &[Get("/v1/subjects/{subject}")],
    },
    Page {
        name: "rules",
        steps: &[Get("/ui/rules"), Get("/v1/rules?limit=50")],
    },
    Page {
        name: "rule",
        steps: &[
            Get("/v1/rules/{rule}"),
            Get("/v1/rules/{rule}/versions"),
            Get("/v1/rules/{rule}/tasks"),
            Post("/v1/schedules:preview", PREVIEW),
        ],
    },
    Page {
        name: "jobs",
        steps: &[Get("/ui/jobs"), Get("/v1/jobs?limit=50")],
    },
    Page {
        name: "job",
        steps: &[
            Get("/v1/jobs/{job}"),
            Get("/v1/jobs/{job}/segments"),
            Get("/v1/jobs/{job}/failures"),
        ],
    },
    Page {
        name: "job: find a recipient",
        steps: &[Get("/v1/jobs/{job}/sends?recipient={follower}")],
    },
    // A user with a reminder and timers, in none of the jobs: every job's
    // audience is searched to its end.
    Page {
        name: "user",
        steps: &[Get("/ui/users"), Get("/v1/users/{recipient}")],
    },
    Page {
        name: "user: in the campaign",
        steps: &[Get("/v1/users/{follower}")],
    },
    Page {
        name: "channels",
        steps: &[Get("/ui/channels"), Get("/v1/channels")],
    },
    Page {
        name: "cluster",
        steps: &[Get("/ui/cluster"), Get("/v1/cluster")],
    },
    Page {
        name: "audit",
        steps: &[Get("/ui/audit"), Get("/v1/audit?limit=50")],
    },
];

/// What was seeded, for the placeholders of [`PAGES`].
struct Seeded {
    timer: i64,
    job: i64,
    rule: i64,
    subject: String,
    recipient: String,
    /// The last recipient of the seeded audience: found in its last chunk.
    follower: String,
    due_after: String,
}

impl Seeded {
    fn fill(&self, path: &str) -> String {
        path.replace("{timer}", &self.timer.to_string())
            .replace("{job}", &self.job.to_string())
            .replace("{rule}", &self.rule.to_string())
            .replace("{subject}", &self.subject)
            .replace("{recipient}", &self.recipient)
            .replace("{follower}", &self.follower)
            .replace("{due_after}", &self.due_after)
    }
}

/// A request ready to send, and its times over the rounds.
struct Timed {
    label: String,
    method: reqwest::Method,
    url: String,
    body: Option<&'static str>,
    ms: Vec<f64>,
}

/// Where the seeded timers start being due: far enough that none fires
/// while the bench runs, near enough that the next day's forecast counts
/// every one of them (a million, 100 a second, end 4.8 h out).
const DUE_FROM_MS: i64 = 7_200_000;
/// The seeded timers are due this far apart.
const DUE_STEP_MS: i64 = 10;

pub(super) async fn run(mut a: ConsoleArgs) -> anyhow::Result<()> {
    let sink = start_sink().await?;
    // No segment workers: the job stays running with every recipient
    // pending, as a large campaign looks mid-way, and sends nothing.
    a.server.extra_toml = format!(
        "[jobs]\nworkers = 0\n[[channels]]\nname = \"broken\"\nkind = \"webhook\"\nurl = \"{}/no-such-hook\"\n",
        sink.base_url()
    );
    // The stats sampler counts the store as in production.
    a.server.stats_interval_ms = 10_000;
    let server = Deployment::start(&sink, &a.server).await?;
    let result = measure(&a, &server).await;
    server.stop().await;
    result
}

async fn measure(a: &ConsoleArgs, server: &Deployment) -> anyhow::Result<()> {
    let http = http_client()?;
    let seeded = seed(a, server, &http).await?;
    if a.after_filing {
        wait_filed(server, &http, a.server.stats_interval_ms).await?;
    }
    let base = server.base().to_string();

    // Each page's requests; a request the server does not serve is noted
    // and left out.
    let mut pages: Vec<(&'static str, Vec<Timed>)> = Vec::new();
    let mut notes = Vec::new();
    for page in PAGES {
        let mut steps = Vec::new();
        for step in page.steps {
            let (method, path, body) = match *step {
                Get(p) => (reqwest::Method::GET, seeded.fill(p), None),
                Post(p, b) => (reqwest::Method::POST, seeded.fill(p), Some(b)),
            };
            let t = Timed {
                label: format!("{method} {path}"),
                url: format!("{base}{path}"),
                method,
                body,
                ms: Vec::new(),
            };
            let (status, text) = probe(server, &http, &t).await?;
            if (200..300).contains(&status) {
                steps.push(t);
                continue;
            }
            // The router's own 404 says "no such endpoint"; another 404 is
            // a served route that did not find what it was asked for.
            let served = !(status == 405 || (status == 404 && text.contains("no such endpoint")));
            let why = if served {
                format!(
                    "answered {status}: {}",
                    text.chars().take(200).collect::<String>()
                )
            } else {
                format!("not served ({status})")
            };
            notes.push(format!("{}: {why}; not timed", t.label));
        }
        pages.push((page.name, steps));
    }

    for round in 0..a.rounds {
        for (_, steps) in &mut pages {
            for t in steps.iter_mut() {
                let (status, ms) = send(server, &http, t).await?;
                if !(200..300).contains(&status) {
                    bail!("{} answered {status} in round {round}", t.label);
                }
                t.ms.push(ms);
            }
        }
    }

    println!(
        "console: {} pending and {} failed timers, a job to {} recipients, {} reminders on one subject and {} more subjects (store {}); {} rounds, budget {} ms a page",
        a.timers,
        a.failed,
        a.recipients,
        a.reminders,
        a.subjects,
        a.server.store_kind(),
        a.rounds,
        a.budget_ms
    );
    let mut summary = Vec::new();
    let mut over = Vec::new();
    for (name, steps) in &pages {
        if steps.is_empty() {
            println!("  {name:<16} (nothing served yet)");
            continue;
        }
        let totals: Vec<f64> = (0..a.rounds)
            .map(|r| steps.iter().map(|t| t.ms[r]).sum())
            .collect();
        let (p50, p90) = (quantile(&totals, 0.5), quantile(&totals, 0.9));
        let flag = if p50 > a.budget_ms {
            "  OVER BUDGET"
        } else {
            ""
        };
        if p50 > a.budget_ms {
            over.push(*name);
        }
        println!("  {name:<16} median {p50:>8.1} ms   p90 {p90:>8.1} ms{flag}");
        let mut requests = Vec::new();
        for t in steps {
            let (m, n) = (quantile(&t.ms, 0.5), quantile(&t.ms, 0.9));
            println!("      {:<70} median {m:>8.1} ms   p90 {n:>8.1} ms", t.label);
            requests.push(json!({"request": t.label, "median_ms": m, "p90_ms": n}));
        }
        summary.push(json!({"page": name, "median_ms": p50, "p90_ms": p90, "requests": requests}));
    }
    for n in &notes {
        println!("  note: {n}");
    }
    if a.server.json {
        println!(
            "{}",
            json!({"scenario": "console", "store": a.server.store_kind(), "timers": a.timers, "failed": a.failed,
                "recipients": a.recipients, "reminders": a.reminders, "subjects": a.subjects, "rounds": a.rounds,
                "budget_ms": a.budget_ms, "pages": summary, "notes": notes, "over_budget": over})
        );
    }
    Ok(())
}

/// Sends `t` once, reading the whole answer: its status and the ms it took.
async fn send(
    server: &Deployment,
    http: &reqwest::Client,
    t: &Timed,
) -> anyhow::Result<(u16, f64)> {
    let mut req = server.as_admin(http.request(t.method.clone(), &t.url));
    if let Some(b) = t.body {
        req = req.header("content-type", "application/json").body(b);
    }
    let started = Instant::now();
    let resp = req.send().await.with_context(|| t.label.clone())?;
    let status = resp.status().as_u16();
    resp.bytes().await?;
    Ok((status, started.elapsed().as_secs_f64() * 1000.0))
}

/// Sends `t` once: its status and its answer's text.
async fn probe(
    server: &Deployment,
    http: &reqwest::Client,
    t: &Timed,
) -> anyhow::Result<(u16, String)> {
    let mut req = server.as_admin(http.request(t.method.clone(), &t.url));
    if let Some(b) = t.body {
        req = req.header("content-type", "application/json").body(b);
    }
    let resp = req.send().await.with_context(|| t.label.clone())?;
    let status = resp.status().as_u16();
    Ok((status, resp.text().await.unwrap_or_default()))
}

/// The `q` quantile of `xs` (nearest rank).
pub(super) fn quantile(xs: &[f64], q: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// A `POST` of JSON that must succeed; its answer.
async fn post_json(
    server: &Deployment,
    http: &reqwest::Client,
    method: reqwest::Method,
    path: &str,
    body: Value,
) -> anyhow::Result<Value> {
    let resp = server
        .as_admin(http.request(method, format!("{}{path}", server.base())))
        .json(&body)
        .send()
        .await?;
    let status = resp.status();
    let v: Value = resp.json().await?;
    if !status.is_success() {
        bail!("{path}: {status} {v}");
    }
    Ok(v)
}

/// Waits until a sample of the filing lag taken after the seeding reads 0,
/// and says how long that took.
async fn wait_filed(
    server: &Deployment,
    http: &reqwest::Client,
    interval_ms: u64,
) -> anyhow::Result<()> {
    let started = Instant::now();
    // A sample from before the seeding ended could read 0 too.
    tokio::time::sleep(Duration::from_millis(interval_ms + 500)).await;
    let deadline = Instant::now() + Duration::from_secs(1_800);
    loop {
        let lag = server
            .counter(http, "herald_search_filing_lag_seconds")
            .await?;
        if lag == 0.0 {
            break;
        }
        if Instant::now() > deadline {
            bail!("the filer was still {lag} s behind 30 minutes after the seeding");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    eprintln!(
        "console: the filer caught up within {:.0} s of the seeding (sampled every {} s)",
        started.elapsed().as_secs_f64(),
        interval_ms / 1000
    );
    Ok(())
}

async fn seed(
    a: &ConsoleArgs,
    server: &Deployment,
    http: &reqwest::Client,
) -> anyhow::Result<Seeded> {
    let now = SystemClock.now_ms();
    let started = Instant::now();
    let due = Arc::new(move |i: usize| now + DUE_FROM_MS + i as i64 * DUE_STEP_MS);
    let secs = bulk_ingest(
        http,
        &server.bases(),
        super::sink::BenchChannel::Webhook,
        a.timers,
        10_000,
        4,
        due,
    )
    .await?;
    eprintln!("console: {} timers in {secs:.1} s (bulk)", a.timers);

    if a.failed > 0 {
        let lines = Arc::new(|r: std::ops::Range<usize>| {
            let mut s = String::new();
            for i in r {
                s.push_str(&format!(
                    "{{\"delay_ms\":0,\"channel\":\"broken\",\"recipient\":\"broken-{i}\",\"message\":{{\"n\":{i}}}}}\n"
                ));
            }
            s
        });
        bulk_post(
            http,
            &server.bases(),
            "/v1/timers:bulk",
            a.failed,
            10_000,
            1,
            lines,
        )
        .await?;
    }

    // One timer due now, delivered: the detail page has a send log to show.
    let t = post_json(
        server,
        http,
        reqwest::Method::POST,
        "/v1/timers",
        json!({"delay_ms": 0, "channel": "sink", "recipient": "console-bench", "message": {"n": 0}}),
    )
    .await?;
    let timer = t["id"].as_i64().context("timer id")?;

    let resp = server
        .as_admin(http.post(format!("{}/v1/audiences?name=console-bench", server.base())))
        .header("content-type", "application/x-ndjson")
        .body(audience_body(a.recipients))
        .send()
        .await?;
    let status = resp.status();
    let v: Value = resp.json().await?;
    if !status.is_success() {
        bail!("uploading the audience: {status} {v}");
    }
    let audience = v["id"].as_i64().context("audience id")?;
    let j = post_json(
        server,
        http,
        reqwest::Method::POST,
        "/v1/jobs",
        json!({"audience_id": audience, "channel": "sink", "message": {"text": "console bench"}}),
    )
    .await?;
    let job = j["id"].as_i64().context("job id")?;
    eprintln!(
        "console: audience of {} and its job in {:.1} s",
        a.recipients,
        started.elapsed().as_secs_f64() - secs
    );

    let later = format_rfc3339_ms(now + 30 * 86_400_000);
    // The subject starts within the next day's forecast, after the timers
    // begin: its reminders are counted there too.
    let starts = format_rfc3339_ms(now + DUE_FROM_MS + 3_600_000);
    let r = post_json(
        server,
        http,
        reqwest::Method::POST,
        "/v1/rules",
        json!({"name": "console-bench",
            "schedule": {"type": "cron", "cron": "0 9 * * 1-5", "timezone": "Asia/Shanghai", "start_at": later},
            "audience": {"users": ["u1", "u2"]}, "channel": "sink", "message": {"text": "x"}}),
    )
    .await?;
    let rule = r["id"].as_i64().context("rule id")?;

    let subject = "console-bench".to_string();
    post_json(
        server,
        http,
        reqwest::Method::PUT,
        &format!("/v1/subjects/{subject}"),
        json!({"start_at": starts, "title": "console bench"}),
    )
    .await?;
    if a.reminders > 0 {
        let lines = Arc::new(|r: std::ops::Range<usize>| {
            let mut s = String::new();
            for i in r {
                s.push_str(&format!(
                    "{{\"user_id\":\"user-{i}\",\"subject_id\":\"console-bench\",\"channel_type\":\"app\",\"lead_minutes\":5}}\n"
                ));
            }
            s
        });
        bulk_post(
            http,
            &server.bases(),
            "/v1/reminders:bulk",
            a.reminders,
            1_000,
            1,
            lines,
        )
        .await?;
    }
    const LISTED: usize = 1_001;
    for n in 0..a.subjects {
        post_json(
            server,
            http,
            reqwest::Method::PUT,
            &format!("/v1/subjects/console-bench-{n:03}"),
            json!({"start_at": later, "title": format!("console bench {n}")}),
        )
        .await?;
    }
    if a.subjects > 0 {
        let lines = Arc::new(|r: std::ops::Range<usize>| {
            let mut s = String::new();
            for i in r {
                s.push_str(&format!(
                    "{{\"user_id\":\"user-{}\",\"subject_id\":\"console-bench-{:03}\",\"channel_type\":\"app\",\"lead_minutes\":5}}\n",
                    i % LISTED,
                    i / LISTED
                ));
            }
            s
        });
        bulk_post(
            http,
            &server.bases(),
            "/v1/reminders:bulk",
            a.subjects * LISTED,
            1_000,
            1,
            lines,
        )
        .await?;
    }
    // Let the failing timers fail before the rounds start.
    let deadline = Instant::now() + Duration::from_secs(60 + a.failed as u64 / 500);
    loop {
        let failed = server.counter(http, "herald_timers_failed_total").await?;
        if failed as usize >= a.failed {
            break;
        }
        if Instant::now() > deadline {
            bail!("only {failed} of {} timers failed in time", a.failed);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // And the seeded timer be delivered.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v: Value = server
            .as_admin(http.get(format!("{}/v1/timers/{timer}", server.base())))
            .send()
            .await?
            .json()
            .await?;
        if v["state"] == "done" || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(Seeded {
        timer,
        job,
        rule,
        subject,
        recipient: format!("user-{}", a.timers / 2),
        follower: format!("follower-{}", a.recipients.saturating_sub(1)),
        due_after: format_rfc3339_ms(now + DUE_FROM_MS + (a.timers / 2) as i64 * DUE_STEP_MS),
    })
}
