//! `herald bench app-push`: one campaign to users whose app devices are
//! spread over FCM and China's vendor push services, each device a token of
//! its own service's mock in this process. It checks what the user of an
//! `app` send cares about (every live device reached once, through its own
//! service; every dead token pruned from its subscriber) and measures device
//! pushes a second.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use herald_mock::{FcmFaults, MockConfig, MockServer};

use super::cpu::CpuMeter;
use super::harness::{Deployment, ServerArgs, http_client};

/// A test service account, so the FCM mock checks the JWT Herald signs as
/// Google does. It signs nothing anywhere else.
const FCM_KEY: &str = include_str!("../../../herald-mock/tests/fixtures/fcm-service-account.json");

#[derive(Args, Debug)]
pub struct AppPushArgs {
    /// App devices in all, two to a user.
    #[arg(long, default_value_t = 100_000)]
    pub(super) devices: usize,
    /// One device in this many has a dead token (the app was uninstalled).
    #[arg(long, default_value_t = 100)]
    pub(super) dead_every: usize,
    /// Users per segment.
    #[arg(long, default_value_t = 1_000)]
    pub(super) segment_size: u64,
    /// Segment worker loops per node.
    #[arg(long, default_value_t = 4)]
    pub(super) workers: usize,
    /// Sends in flight per worker.
    #[arg(long, default_value_t = 64)]
    pub(super) worker_concurrency: usize,
    #[command(flatten)]
    pub(super) server: ServerArgs,
}

/// The push services the devices are spread over, in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Service {
    Fcm,
    Huawei,
    Xiaomi,
    Honor,
    Oppo,
    Vivo,
}

const SERVICES: [Service; 6] = [
    Service::Fcm,
    Service::Huawei,
    Service::Xiaomi,
    Service::Honor,
    Service::Oppo,
    Service::Vivo,
];

impl Service {
    fn name(self) -> &'static str {
        match self {
            Service::Fcm => "fcm",
            Service::Huawei => "huawei",
            Service::Xiaomi => "xiaomi",
            Service::Honor => "honor",
            Service::Oppo => "oppo",
            Service::Vivo => "vivo",
        }
    }

    /// Device `d`'s token; a dead one is one the mock refuses as gone.
    fn token(self, d: usize, dead: bool) -> String {
        match (self, dead) {
            // The FCM mock is told its dead tokens; the vendors' mocks call
            // every `invalid-` token gone.
            (Service::Fcm, true) => format!("dead-fcm-{d}"),
            (s, true) => format!("invalid-{}-{d}", s.name()),
            (s, false) => format!("{}-dev-{d}", s.name()),
        }
    }

    /// (delivered, distinct devices, repeated deliveries) at its mock.
    fn counts(self, mock: &MockServer) -> (u64, u64, u64) {
        match self {
            Service::Fcm => {
                let s = mock.state().fcm_stats();
                (s.delivered, s.devices, s.repeated_devices)
            }
            Service::Huawei => {
                let s = mock.state().huawei_stats();
                (s.delivered, s.devices, s.repeated_devices)
            }
            Service::Xiaomi => {
                let s = mock.state().xiaomi_stats();
                (s.delivered, s.devices, s.repeated_devices)
            }
            Service::Honor => {
                let s = mock.state().honor_stats();
                (s.delivered, s.devices, s.repeated_devices)
            }
            Service::Oppo => {
                let s = mock.state().oppo_stats();
                (s.delivered, s.devices, s.repeated_devices)
            }
            Service::Vivo => {
                let s = mock.state().vivo_stats();
                (s.delivered, s.devices, s.repeated_devices)
            }
        }
    }

    /// Provider calls made.
    fn calls(self, mock: &MockServer) -> u64 {
        match self {
            Service::Fcm => mock.state().fcm_stats().received,
            Service::Huawei => mock.state().huawei_stats().calls,
            Service::Xiaomi => mock.state().xiaomi_stats().calls,
            Service::Honor => mock.state().honor_stats().calls,
            Service::Oppo => mock.state().oppo_stats().calls,
            Service::Vivo => mock.state().vivo_stats().calls,
        }
    }
}

/// Device `d` (user `d / 2`): its service, and whether its token is dead
/// (about one in `dead_every`, scattered by a multiplicative hash so every
/// service has some).
fn device(d: usize, dead_every: usize) -> (Service, bool) {
    let scatter = (d as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 17;
    (
        SERVICES[d % SERVICES.len()],
        dead_every > 0 && scatter.is_multiple_of(dead_every as u64),
    )
}

/// The `[[channels]]` of the node: `push` (FCM, the job's channel), `hms`
/// (Huawei), `mi` (Xiaomi, on an approved private channel) and `hn` (Honor,
/// service-class importance), `op` (OPPO, an approved category) and `vv`
/// (vivo, system messages), each to its mock.
fn channels_toml(mock: &MockServer, key: &std::path::Path, concurrency: usize) -> String {
    let base = mock.base_url();
    let h = herald_mock::HuaweiConfig::default();
    format!(
        "[[channels]]\nname = \"push\"\nkind = \"fcm\"\napi_base = \"{base}\"\n\
         token_url = \"{base}/token\"\nservice_account = \"{key}\"\nproject_id = \"{project}\"\n\
         concurrency = {concurrency}\n\n\
         [[channels]]\nname = \"hms\"\nkind = \"huawei_push\"\napi_base = \"{base}\"\n\
         token_url = \"{base}/oauth2/v3/token\"\napp_id = \"{app}\"\napp_secret = \"{secret}\"\n\
         category = \"SUBSCRIPTION\"\nconcurrency = {concurrency}\n\n\
         [[channels]]\nname = \"mi\"\nkind = \"xiaomi_push\"\napi_base = \"{base}\"\n\
         app_secret = \"{mi_secret}\"\npackage_name = \"{mi_package}\"\n\
         channel_id = \"herald_private\"\nconcurrency = {concurrency}\n\n\
         [[channels]]\nname = \"hn\"\nkind = \"honor_push\"\napi_base = \"{base}\"\n\
         token_url = \"{base}/auth/token\"\napp_id = \"{hn_app}\"\nclient_id = \"{hn_client}\"\n\
         client_secret = \"{hn_secret}\"\nimportance = \"NORMAL\"\nconcurrency = {concurrency}\n\n\
         [[channels]]\nname = \"op\"\nkind = \"oppo_push\"\napi_base = \"{base}\"\n\
         app_key = \"{op_key}\"\nmaster_secret = \"{op_secret}\"\ncategory = \"ORDER\"\n\
         channel_id = \"orders\"\nconcurrency = {concurrency}\n\n\
         [[channels]]\nname = \"vv\"\nkind = \"vivo_push\"\napi_base = \"{base}\"\n\
         app_id = \"{vv_id}\"\napp_key = \"{vv_key}\"\napp_secret = \"{vv_secret}\"\n\
         classification = 1\nconcurrency = {concurrency}\n",
        key = key.display(),
        project = herald_mock::DEFAULT_FCM_PROJECT,
        app = h.app_id,
        secret = h.client_secret,
        mi_secret = herald_mock::DEFAULT_XIAOMI_APP_SECRET,
        mi_package = herald_mock::DEFAULT_XIAOMI_PACKAGE,
        hn_app = herald_mock::DEFAULT_HONOR_APP_ID,
        hn_client = herald_mock::DEFAULT_HONOR_CLIENT_ID,
        hn_secret = herald_mock::DEFAULT_HONOR_CLIENT_SECRET,
        op_key = herald_mock::DEFAULT_OPPO_APP_KEY,
        op_secret = herald_mock::DEFAULT_OPPO_MASTER_SECRET,
        vv_id = herald_mock::DEFAULT_VIVO_APP_ID,
        vv_key = herald_mock::DEFAULT_VIVO_APP_KEY,
        vv_secret = herald_mock::DEFAULT_VIVO_APP_SECRET,
    )
}

/// NDJSON subscriber lines: user `u` has devices `2u` and `2u + 1`.
fn subscribers_body(users: usize, dead_every: usize) -> String {
    let mut s = String::with_capacity(users * 120);
    for u in 0..users {
        let devices: Vec<serde_json::Value> = [2 * u, 2 * u + 1]
            .into_iter()
            .map(|d| {
                let (svc, dead) = device(d, dead_every);
                serde_json::json!({"service": svc.name(), "token": svc.token(d, dead)})
            })
            .collect();
        s.push_str(
            &serde_json::json!({"user_id": format!("u-{u}"), "addresses": {"app": devices}})
                .to_string(),
        );
        s.push('\n');
    }
    s
}

pub(super) async fn run(mut a: AppPushArgs) -> anyhow::Result<()> {
    let users = a.devices.div_ceil(2).max(1);
    let devices = users * 2;
    let tmp = tempfile::Builder::new()
        .prefix("herald-bench-push-")
        .tempdir()?;
    let key = tmp.path().join("fcm-service-account.json");
    std::fs::write(&key, FCM_KEY)?;
    let mut cfg = MockConfig {
        fcm_service_account: Some(key.clone()),
        // The bench measures Herald, not the providers' quotas.
        fcm_quota_per_minute: Some(u64::MAX / 2),
        ..MockConfig::default()
    };
    cfg.huawei.calls_per_second = 0;
    cfg.xiaomi.calls_per_second = 0;
    cfg.honor.calls_per_second = 0;
    cfg.oppo.calls_per_second = 0;
    cfg.vivo.calls_per_second = 0;
    let mock = MockServer::start("127.0.0.1:0".parse()?, cfg).await?;
    let dead: Vec<usize> = (0..devices)
        .filter(|&d| device(d, a.dead_every).1)
        .collect();
    mock.state().set_fcm_faults(FcmFaults {
        unregistered: dead
            .iter()
            .filter(|&&d| device(d, a.dead_every).0 == Service::Fcm)
            .map(|&d| Service::Fcm.token(d, true))
            .collect(),
        ..FcmFaults::default()
    });

    a.server.extra_toml = format!(
        "[jobs]\nworkers = {}\nworker_concurrency = {}\nsegment_size = {}\n",
        a.workers, a.worker_concurrency, a.segment_size
    );
    let server = Deployment::start_with_channel(
        &channels_toml(&mock, &key, a.server.concurrency),
        &a.server,
    )
    .await?;
    let http = http_client()?;
    let base = server.base().to_string();

    let t0 = Instant::now();
    let resp = http
        .post(format!("{base}/v1/subscribers:bulk"))
        .header("content-type", "application/x-ndjson")
        .body(subscribers_body(users, a.dead_every))
        .send()
        .await?;
    let status = resp.status();
    let body = resp.text().await?;
    if !status.is_success() || body.lines().any(|l| !l.contains("\"status\":20")) {
        let bad = body.lines().find(|l| !l.contains("\"status\":20"));
        bail!("importing the subscribers: {status} {bad:?}");
    }
    let import_s = t0.elapsed().as_secs_f64();
    let mut audience = String::with_capacity(users * 24);
    for u in 0..users {
        audience.push_str(&format!("{{\"recipient\":\"u-{u}\"}}\n"));
    }
    let v: serde_json::Value = http
        .post(format!("{base}/v1/audiences?name=app-push"))
        .header("content-type", "application/x-ndjson")
        .body(audience)
        .send()
        .await?
        .json()
        .await?;
    let audience = v["id"].as_i64().with_context(|| format!("audience: {v}"))?;
    eprintln!(
        "app-push: {users} users with {devices} devices over {} imported in {import_s:.2} s",
        SERVICES.map(Service::name).join(", ")
    );

    let cpu = CpuMeter::start(&server);
    let t0 = Instant::now();
    let resp = http
        .post(format!("{base}/v1/jobs"))
        .json(
            &serde_json::json!({"audience_id": audience, "channel": "push",
            "to": {"channel_type": "app"}, "segment_size": a.segment_size,
            "message": {"notification": {"title": "20% off today", "body": "until midnight"}}}),
        )
        .send()
        .await?;
    let status = resp.status();
    let job: serde_json::Value = resp.json().await?;
    if !status.is_success() {
        bail!("creating the job: {status} {job}");
    }
    let id = job["id"].as_i64().context("job id")?;
    let timeout = Duration::from_secs_f64(120.0 + devices as f64 / 500.0);
    let final_job = loop {
        let j: serde_json::Value = http
            .get(format!("{base}/v1/jobs/{id}"))
            .send()
            .await?
            .json()
            .await?;
        if j["state"] != "running" {
            break j;
        }
        if t0.elapsed() > timeout {
            bail!("the job did not finish within {timeout:?}: {j}");
        }
        eprint!("\r  users sent {} of {users}   ", j["totals"]["sent"]);
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let send_s = t0.elapsed().as_secs_f64();
    eprintln!();
    let c = cpu.read();

    // Every live device once, through its own service.
    let live = (devices - dead.len()) as u64;
    let mut reached = 0;
    let mut repeats = 0;
    println!(
        "app-push: {devices} devices of {users} users over {} ({} dead tokens), one job on `push` (store {}, workers {} x {} in flight)",
        SERVICES.map(Service::name).join(" and "),
        dead.len(),
        a.server.store_kind(),
        a.workers,
        a.worker_concurrency,
    );
    for s in SERVICES {
        let (delivered, distinct, repeated) = s.counts(&mock);
        let expected = (0..devices)
            .filter(|&d| device(d, a.dead_every) == (s, false))
            .count() as u64;
        println!(
            "  {:<7} {delivered} delivered to {distinct} devices of {expected} live, {repeated} repeated, {} calls",
            s.name(),
            s.calls(&mock)
        );
        if distinct != expected {
            bail!("{}: {distinct} devices reached, {expected} live", s.name());
        }
        reached += distinct;
        repeats += repeated;
    }
    let pushes_per_sec = reached as f64 / send_s;
    println!(
        "  job {} in {send_s:.2} s => {pushes_per_sec:.0} device pushes/s ({:.0} users/s)",
        final_job["state"],
        users as f64 / send_s
    );
    println!("  cpu while sending   {}", c.describe(devices));

    // Every dead token pruned from its subscriber.
    let mut kept = Vec::new();
    for &d in &dead {
        let (svc, _) = device(d, a.dead_every);
        let token = svc.token(d, true);
        let v: serde_json::Value = http
            .get(format!("{base}/v1/subscribers/u-{}", d / 2))
            .send()
            .await?
            .json()
            .await?;
        if v["addresses"]["app"].to_string().contains(&token) {
            kept.push(token);
        }
    }
    println!(
        "  dead tokens pruned  {} of {}",
        dead.len() - kept.len(),
        dead.len()
    );
    if a.server.json {
        println!(
            "{}",
            serde_json::json!({"scenario": "app-push", "store": a.server.store_kind(),
                "users": users, "devices": devices, "dead": dead.len(), "reached": reached,
                "repeated": repeats, "send_s": send_s, "pushes_per_sec": pushes_per_sec,
                "pruned": dead.len() - kept.len(), "totals": final_job["totals"],
                "server_cpu_s": c.nodes, "sink_cpu_s": c.own})
        );
    }
    server.stop().await;
    if reached != live || repeats > 0 {
        bail!("{reached} of {live} live devices reached, {repeats} repeated");
    }
    if !kept.is_empty() {
        bail!(
            "{} dead tokens not pruned, such as {:?}",
            kept.len(),
            &kept[..kept.len().min(3)]
        );
    }
    Ok(())
}
