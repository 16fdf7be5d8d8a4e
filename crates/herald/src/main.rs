//! `herald`: the service, the provider mocks, the load generator and a client,
//! in one binary.

mod audit_cli;
mod backup_cli;
mod bench;
mod campaign_cli;
mod channels_cli;
mod client;
mod config;
mod config_check;
mod config_errors;
mod env_names;
mod import;
mod keys_cli;
mod listener;
mod open_files;
mod reload;
mod remind_cli;
mod reports_cli;
mod runtime_spec;
mod serve;
mod subscribers_cli;
mod suggest;
mod tables;
mod telemetry;
mod tenancy;
mod timers_cli;
mod users_cli;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{CommandFactory, Parser, Subcommand};

/// mimalloc: the delivery path allocates many small, short-lived buffers
/// across threads, where glibc's malloc measured ~12% of server CPU. Built
/// with `no_thp` (it does not ask for transparent huge pages), and
/// [`no_huge_pages`] turns them off for the whole process.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Most threads the runtime starts for blocking work. The SQLite store
/// takes one per connection at most (a writer and `read_connections`
/// readers); the rest is name lookups and file reads.
const MAX_BLOCKING_THREADS: usize = 32;
/// How long an idle blocking thread is kept. Short: a thread costs its
/// stack and its allocator heap, and after a burst the node should give
/// them back within seconds.
const BLOCKING_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(2);

/// Turns transparent huge pages off for this process. With them, the
/// kernel backs a 2 MiB range of the heap with a huge page as soon as a
/// part of it is touched (and khugepaged fills in the rest later), so an
/// idle node's RSS climbed to about 1 GB after a burst, against 60 MB
/// without. Where the call is not supported, nothing changes.
#[cfg(target_os = "linux")]
fn no_huge_pages() {
    // SAFETY: prctl with PR_SET_THP_DISABLE takes integer arguments only
    // and changes a flag of this process; it touches no memory of ours.
    let rc = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if rc != 0 {
        tracing::debug!(
            error = %std::io::Error::last_os_error(),
            "could not turn transparent huge pages off"
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn no_huge_pages() {}

/// The commit the binary was built from (`build.rs`; `unknown` without git).
const COMMIT: &str = env!("HERALD_COMMIT");

/// The version and the commit: the first line of `herald version`, which
/// scripts read (`scripts/image/build.sh`).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("HERALD_COMMIT"),
    ")"
);

/// The Cargo features this binary was built with, comma-separated, or
/// `none` (`build.rs`).
const FEATURES: &str = env!("HERALD_FEATURES");

/// `herald version` and `herald --version`: the version line, then the
/// commit and the features each on a line of its own.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("HERALD_COMMIT"),
    ")\ncommit: ",
    env!("HERALD_COMMIT"),
    "\nfeatures: ",
    env!("HERALD_FEATURES"),
);

#[derive(Parser, Debug)]
#[command(
    name = "herald",
    version = VERSION,
    long_version = LONG_VERSION,
    about = "Durable scheduler for reminders and mass push messages",
    long_about = "Durable scheduler for reminders and mass push messages.\n\n\
        The client commands share one grammar, `herald RESOURCE list|get|create|update|delete`, \
        print a table on a terminal and JSON with --json or through a pipe, and take \
        --server, --key and --tenant anywhere on the line."
)]
struct Cli {
    #[command(flatten)]
    remote: client::Remote,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run the service (embedded SQLite in ./herald-data/ unless configured otherwise).
    Serve {
        /// TOML configuration file.
        #[arg(long, env = "HERALD_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Print the version, the commit this binary was built from and its features.
    Version {
        /// Print them as a JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script (e.g. `herald completions bash > /etc/bash_completion.d/herald`).
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Check the configuration (`config check`) without serving.
    Config {
        #[command(subcommand)]
        cmd: config_check::ConfigCmd,
    },
    /// Copy a live SQLite store (the one `serve` would open) into one file.
    Backup(backup_cli::BackupArgs),
    /// Put a backup in place as the store of an empty data directory.
    Restore(backup_cli::RestoreArgs),
    /// Run the provider mocks (webhook sink at /hook, WeChat, WeCom, FCM, Huawei, Honor, Xiaomi, OPPO and vivo Push, DingTalk work notifications, Feishu app messages, Aliyun and Tencent SMS on their real paths, stats at /_mock/stats).
    Mock(Box<MockArgs>),
    /// Load generators that measure Herald against its budgets.
    Bench {
        #[command(subcommand)]
        cmd: bench::BenchCmd,
    },
    /// Timers: list, get, create, update, delete; replay and inspect.
    Timers {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: timers_cli::TimersCmd,
    },
    /// Subjects (what reminders count down to): list, get, create, update, delete.
    Subjects {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: remind_cli::SubjectsCmd,
    },
    /// Reminder subscriptions: list, create, delete, import.
    Reminders {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: remind_cli::RemindersCmd,
    },
    /// The subscriber directory (where and how to reach each user): list,
    /// get, create, update, delete, import.
    Subscribers {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: subscribers_cli::SubscribersCmd,
    },
    /// One user at once: profile, reminders, timers and campaign sends.
    Users {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: users_cli::UsersCmd,
    },
    /// Audiences (uploaded recipient lists): list, get, create, delete.
    Audiences {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: campaign_cli::AudiencesCmd,
    },
    /// Send rules (versioned, scheduled sends): list, get, create, update.
    Rules {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: campaign_cli::RulesCmd,
    },
    /// Jobs (mass sends): list, get, create, delete; `watch` shows progress.
    Jobs {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: campaign_cli::JobsCmd,
    },
    /// Channels' state; pause and resume a channel cluster-wide (admin key).
    Channels {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: channels_cli::ChannelsCmd,
    },
    /// API keys (needs the admin key): list, create, delete (revoke).
    Keys {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: keys_cli::KeysCmd,
    },
    /// Dead and failed timers grouped by channel and error.
    DeadLetters {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: timers_cli::DeadLettersCmd,
    },
    /// Read the audit log: who changed what, when, with which answer
    /// (`herald audit list`, or `herald audit` with the same flags).
    #[command(args_conflicts_with_subcommands = true)]
    Audit {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: Option<audit_cli::AuditCmd>,
        #[command(flatten)]
        args: audit_cli::AuditArgs,
    },
    /// Stored delivery counts per day, channel, outcome, rule and job
    /// (`herald reports list`, or `herald reports` with the same flags).
    #[command(args_conflicts_with_subcommands = true)]
    Reports {
        #[command(flatten)]
        output: client::OutputArgs,
        #[command(subcommand)]
        cmd: Option<reports_cli::ReportsCmd>,
        #[command(flatten)]
        args: reports_cli::ReportsArgs,
    },
}

impl Cmd {
    /// How a client command prints its answers; `None` for the others.
    fn output(&self) -> Option<client::OutputArgs> {
        match self {
            Cmd::Timers { output, .. }
            | Cmd::Subjects { output, .. }
            | Cmd::Reminders { output, .. }
            | Cmd::Subscribers { output, .. }
            | Cmd::Users { output, .. }
            | Cmd::Audiences { output, .. }
            | Cmd::Rules { output, .. }
            | Cmd::Jobs { output, .. }
            | Cmd::Channels { output, .. }
            | Cmd::Keys { output, .. }
            | Cmd::DeadLetters { output, .. }
            | Cmd::Audit { output, .. }
            | Cmd::Reports { output, .. } => Some(*output),
            _ => None,
        }
    }
}

/// What `herald version --json` prints.
fn version_json() -> serde_json::Value {
    let features: Vec<&str> = FEATURES
        .split(',')
        .map(str::trim)
        .filter(|f| !f.is_empty() && *f != "none")
        .collect();
    serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "commit": COMMIT,
        "features": features,
    })
}

#[derive(clap::Args, Debug)]
struct MockArgs {
    /// Address the mocks listen on.
    #[arg(long, default_value = "127.0.0.1:9000")]
    listen: SocketAddr,
    /// Probability (0..=1) of answering --error-status instead of 200.
    #[arg(long, default_value_t = 0.0)]
    error_rate: f64,
    /// Status used for injected errors.
    #[arg(long, default_value_t = 500)]
    error_status: u16,
    /// Delay added before every answer.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Fail the first N requests of every idempotency key.
    #[arg(long, default_value_t = 0)]
    fail_first: u32,
    /// Send Retry-After with injected errors.
    #[arg(long)]
    retry_after_secs: Option<u64>,
    /// Answer every request with this status (e.g. 400).
    #[arg(long)]
    permanent_status: Option<u16>,
    /// Verify X-Herald-Signature with this secret.
    #[arg(long, env = "HERALD_MOCK_SECRET")]
    secret: Option<String>,
    /// Seed of the injected errors' random draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// WeChat mock: where TEMPLATESENDJOBFINISH callbacks are POSTed.
    #[arg(long)]
    wechat_callback_url: Option<String>,
    /// WeChat mock: sign callbacks with this server-configuration Token.
    #[arg(long, env = "HERALD_MOCK_WECHAT_CALLBACK_TOKEN")]
    wechat_callback_token: Option<String>,
    /// WeChat mock: encrypt callbacks (safe mode) with this 43-character
    /// EncodingAESKey; needs --wechat-callback-token.
    #[arg(
        long,
        env = "HERALD_MOCK_WECHAT_ENCODING_AES_KEY",
        requires = "wechat_callback_token"
    )]
    wechat_encoding_aes_key: Option<String>,
    /// WeChat mock: template messages accepted per day.
    #[arg(long, default_value_t = 100_000)]
    wechat_send_quota: u64,
    /// WeCom mock: the agent id sends must carry.
    #[arg(long, default_value_t = 1_000_002)]
    wecom_agentid: u64,
    /// FCM project id served at /v1/projects/{id}/messages:send (default herald-mock).
    #[arg(long)]
    fcm_project: Option<String>,
    /// Google service-account JSON whose key verifies the JWTs sent to /token.
    #[arg(long)]
    fcm_service_account: Option<std::path::PathBuf>,
    /// Also run the SMTP sink on this address (e.g. 127.0.0.1:2525).
    #[arg(long)]
    smtp_listen: Option<SocketAddr>,
    /// Require AUTH with this user (and --smtp-password) on the SMTP sink.
    #[arg(long, requires = "smtp_password")]
    smtp_username: Option<String>,
    /// The password for --smtp-username.
    #[arg(long, env = "HERALD_MOCK_SMTP_PASSWORD", requires = "smtp_username")]
    smtp_password: Option<String>,
    /// Aliyun SMS mock: where SmsReport receipt arrays are POSTed.
    #[arg(long)]
    aliyun_sms_callback_url: Option<String>,
    /// Tencent SMS mock: where receipt arrays are POSTed.
    #[arg(long)]
    tencent_sms_callback_url: Option<String>,
    /// Group-robot mocks (WeCom, DingTalk, Feishu): a JSON file with the
    /// robots and limits, `{"robots": [{"provider", "token", "secret",
    /// "keyword"}], "limits": {...}}`. Without it, one default robot each.
    #[arg(long)]
    robots_config: Option<PathBuf>,
    /// Huawei Push mock: the app id (OAuth client_id, and {appId} in
    /// /v1/{appId}/messages:send).
    #[arg(long, default_value = herald_mock::DEFAULT_HUAWEI_APP_ID)]
    huawei_app_id: String,
    /// Huawei Push mock: the app secret (OAuth client_secret); default
    /// `mock-huawei-app-secret`.
    #[arg(long, env = "HERALD_MOCK_HUAWEI_APP_SECRET", hide_env_values = true)]
    huawei_app_secret: Option<String>,
    /// Xiaomi MiPush mock: the app's package name (restricted_package_name).
    #[arg(long, default_value = herald_mock::DEFAULT_XIAOMI_PACKAGE)]
    xiaomi_package_name: String,
    /// Xiaomi MiPush mock: the AppSecret sends carry as `Authorization:
    /// key=...`; default `mock-xiaomi-app-secret`.
    #[arg(long, env = "HERALD_MOCK_XIAOMI_APP_SECRET", hide_env_values = true)]
    xiaomi_app_secret: Option<String>,
    /// Honor Push mock: the app id ({appId} in /api/v1/{appId}/sendMessage).
    #[arg(long, default_value = herald_mock::DEFAULT_HONOR_APP_ID)]
    honor_app_id: String,
    /// Honor Push mock: the OAuth client id of POST /auth/token.
    #[arg(long, default_value = herald_mock::DEFAULT_HONOR_CLIENT_ID)]
    honor_client_id: String,
    /// Honor Push mock: the OAuth client secret; default
    /// `mock-honor-client-secret`.
    #[arg(long, env = "HERALD_MOCK_HONOR_CLIENT_SECRET", hide_env_values = true)]
    honor_client_secret: Option<String>,
    /// OPPO Push mock: the app key of POST /server/v1/auth.
    #[arg(long, default_value = herald_mock::DEFAULT_OPPO_APP_KEY)]
    oppo_app_key: String,
    /// OPPO Push mock: the master secret the auth sign is made with;
    /// default `mock-oppo-master-secret`.
    #[arg(long, env = "HERALD_MOCK_OPPO_MASTER_SECRET", hide_env_values = true)]
    oppo_master_secret: Option<String>,
    /// vivo Push mock: the app id of POST /message/auth and every body.
    #[arg(long, default_value = herald_mock::DEFAULT_VIVO_APP_ID)]
    vivo_app_id: String,
    /// vivo Push mock: the app key.
    #[arg(long, default_value = herald_mock::DEFAULT_VIVO_APP_KEY)]
    vivo_app_key: String,
    /// vivo Push mock: the app secret the auth sign is made with; default
    /// `mock-vivo-app-secret`.
    #[arg(long, env = "HERALD_MOCK_VIVO_APP_SECRET", hide_env_values = true)]
    vivo_app_secret: Option<String>,
    /// DingTalk work-notification mock: the internal app's AppKey (the
    /// `appkey` of /gettoken).
    #[arg(long, default_value = herald_mock::DEFAULT_DINGTALK_APPKEY)]
    dingtalk_appkey: String,
    /// DingTalk mock: the app's AppSecret; default `mock-dingtalk-app-secret`.
    #[arg(long, env = "HERALD_MOCK_DINGTALK_APPSECRET", hide_env_values = true)]
    dingtalk_appsecret: Option<String>,
    /// DingTalk mock: the AgentId every asyncsend_v2 must carry.
    #[arg(long, default_value_t = herald_mock::DEFAULT_DINGTALK_AGENT_ID)]
    dingtalk_agent_id: i64,
    /// Feishu app-message mock: the app's App ID.
    #[arg(long, default_value = herald_mock::DEFAULT_FEISHU_APP_ID)]
    feishu_app_id: String,
    /// Feishu mock: the App Secret; default `mock-feishu-app-secret`.
    #[arg(long, env = "HERALD_MOCK_FEISHU_APP_SECRET", hide_env_values = true)]
    feishu_app_secret: Option<String>,
}

async fn run_mock(a: MockArgs) -> anyhow::Result<()> {
    let faults = herald_mock::Faults {
        error_rate: a.error_rate,
        error_status: a.error_status,
        latency_ms: a.latency_ms,
        fail_first: a.fail_first,
        retry_after_secs: a.retry_after_secs,
        permanent_status: a.permanent_status,
    };
    faults.validate().map_err(anyhow::Error::msg)?;
    let robots = match &a.robots_config {
        Some(path) => {
            let text =
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            let robots: herald_mock::RobotsConfig = serde_json::from_slice(&text)
                .with_context(|| format!("parsing {}", path.display()))?;
            robots
                .validate()
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("checking {}", path.display()))?;
            robots
        }
        None => herald_mock::RobotsConfig::default(),
    };
    let cfg = herald_mock::MockConfig {
        faults,
        secret: a.secret,
        seed: a.seed,
        wechat: herald_mock::WechatConfig {
            callback_url: a.wechat_callback_url,
            callback_token: a.wechat_callback_token,
            encoding_aes_key: a.wechat_encoding_aes_key,
            send_daily_quota: a.wechat_send_quota,
            ..Default::default()
        },
        wecom: herald_mock::WecomConfig {
            agentid: a.wecom_agentid,
            ..Default::default()
        },
        fcm_project: a.fcm_project,
        fcm_service_account: a.fcm_service_account,
        smtp_listen: a.smtp_listen,
        smtp_username: a.smtp_username,
        smtp_password: a.smtp_password,
        aliyun_sms: herald_mock::AliyunSmsConfig {
            callback_url: a.aliyun_sms_callback_url,
            ..Default::default()
        },
        tencent_sms: herald_mock::TencentSmsConfig {
            callback_url: a.tencent_sms_callback_url,
            ..Default::default()
        },
        robots,
        huawei: herald_mock::HuaweiConfig {
            app_id: a.huawei_app_id,
            client_secret: a
                .huawei_app_secret
                .unwrap_or_else(|| herald_mock::DEFAULT_HUAWEI_APP_SECRET.to_owned()),
            ..Default::default()
        },
        xiaomi: herald_mock::XiaomiConfig {
            app_secret: a
                .xiaomi_app_secret
                .unwrap_or_else(|| herald_mock::DEFAULT_XIAOMI_APP_SECRET.to_owned()),
            package_names: vec![a.xiaomi_package_name],
            ..Default::default()
        },
        honor: herald_mock::HonorConfig {
            app_id: a.honor_app_id,
            client_id: a.honor_client_id,
            client_secret: a
                .honor_client_secret
                .unwrap_or_else(|| herald_mock::DEFAULT_HONOR_CLIENT_SECRET.to_owned()),
            ..Default::default()
        },
        oppo: herald_mock::OppoConfig {
            app_key: a.oppo_app_key,
            master_secret: a
                .oppo_master_secret
                .unwrap_or_else(|| herald_mock::DEFAULT_OPPO_MASTER_SECRET.to_owned()),
            ..Default::default()
        },
        vivo: herald_mock::VivoConfig {
            app_id: a.vivo_app_id,
            app_key: a.vivo_app_key,
            app_secret: a
                .vivo_app_secret
                .unwrap_or_else(|| herald_mock::DEFAULT_VIVO_APP_SECRET.to_owned()),
            ..Default::default()
        },
        dingtalk: herald_mock::DingtalkConfig {
            appkey: a.dingtalk_appkey,
            appsecret: a
                .dingtalk_appsecret
                .unwrap_or_else(|| herald_mock::DEFAULT_DINGTALK_APPSECRET.to_owned()),
            agent_id: a.dingtalk_agent_id,
            ..Default::default()
        },
        feishu: herald_mock::FeishuConfig {
            app_id: a.feishu_app_id,
            app_secret: a
                .feishu_app_secret
                .unwrap_or_else(|| herald_mock::DEFAULT_FEISHU_APP_SECRET.to_owned()),
            ..Default::default()
        },
        ..Default::default()
    };
    cfg.feishu
        .validate()
        .map_err(anyhow::Error::msg)
        .context("checking --feishu-app-id and --feishu-app-secret")?;
    cfg.dingtalk
        .validate()
        .map_err(anyhow::Error::msg)
        .context("checking --dingtalk-appkey, --dingtalk-appsecret and --dingtalk-agent-id")?;
    cfg.huawei
        .validate()
        .map_err(anyhow::Error::msg)
        .context("checking --huawei-app-id and --huawei-app-secret")?;
    cfg.xiaomi
        .validate()
        .map_err(anyhow::Error::msg)
        .context("checking --xiaomi-package-name and --xiaomi-app-secret")?;
    cfg.honor
        .validate()
        .map_err(anyhow::Error::msg)
        .context("checking --honor-app-id, --honor-client-id and --honor-client-secret")?;
    cfg.oppo
        .validate()
        .map_err(anyhow::Error::msg)
        .context("checking --oppo-app-key and --oppo-master-secret")?;
    cfg.vivo
        .validate()
        .map_err(anyhow::Error::msg)
        .context("checking --vivo-app-id, --vivo-app-key and --vivo-app-secret")?;
    let server = herald_mock::MockServer::start(a.listen, cfg)
        .await
        .with_context(|| format!("binding {}", a.listen))?;
    println!("herald mock listening on {}", server.base_url());
    use std::io::Write;
    std::io::stdout().flush().ok();
    tracing::info!(hook = %server.hook_url(), "webhook sink ready; stats at /_mock/stats");
    if let Some(smtp) = server.smtp_addr() {
        println!("herald mock smtp listening on {smtp}");
        std::io::stdout().flush().ok();
        tracing::info!(%smtp, "smtp sink ready; mail at /_mock/smtp/messages");
    }
    serve::shutdown_signal().await;
    server.shutdown_and_wait().await;
    Ok(())
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // `serve` sets up logging once its configuration says whether spans
    // are exported; every other command logs at once.
    if !matches!(cli.cmd, Cmd::Serve { .. }) {
        telemetry::init_logging(None);
    }
    if let Some(output) = cli.cmd.output() {
        client::set_output(output);
    }
    no_huge_pages();
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One line with the whole cause chain; no backtrace for a user error.
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let remote = cli.remote;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .thread_keep_alive(BLOCKING_KEEP_ALIVE)
        .build()?;
    rt.block_on(async move {
        match cli.cmd {
            Cmd::Version { json } => {
                if json {
                    client::print_json(&version_json());
                } else {
                    client::print_line(&format!("herald {LONG_VERSION}"));
                }
                Ok(())
            }
            Cmd::Completions { shell } => {
                // Into a buffer first: the generator panics on a write error,
                // and a closed pipe (`| head`) is not one worth a panic.
                let mut script = Vec::new();
                clap_complete::generate(shell, &mut Cli::command(), "herald", &mut script);
                use std::io::Write as _;
                let _ = std::io::stdout().lock().write_all(&script);
                Ok(())
            }
            Cmd::Serve { config } => {
                let cfg = match config::Config::load(config.as_deref()) {
                    Ok(cfg) => cfg,
                    Err(e) => {
                        telemetry::init_logging(None);
                        return Err(e);
                    }
                };
                let exporter = telemetry::Exporter::start(&cfg.telemetry, &cfg.node_id());
                let exporter = match exporter {
                    Ok(exporter) => exporter,
                    Err(e) => {
                        telemetry::init_logging(None);
                        return Err(e);
                    }
                };
                telemetry::init_logging(exporter.as_ref());
                let served = serve::run(cfg, config).await;
                if let Some(exporter) = exporter {
                    exporter.shutdown().await;
                }
                served
            }
            Cmd::Config { cmd } => config_check::run(cmd),
            Cmd::Backup(a) => backup_cli::backup(a).await,
            Cmd::Restore(a) => backup_cli::restore(a).await,
            Cmd::Mock(a) => run_mock(*a).await,
            Cmd::Bench { cmd } => bench::run(cmd).await,
            Cmd::Timers { cmd, .. } => timers_cli::run(&remote, cmd).await,
            Cmd::Subjects { cmd, .. } => remind_cli::subjects(&remote, cmd).await,
            Cmd::Reminders { cmd, .. } => remind_cli::reminders(&remote, cmd).await,
            Cmd::Subscribers { cmd, .. } => subscribers_cli::subscribers(&remote, cmd).await,
            Cmd::Users { cmd, .. } => users_cli::users(&remote, cmd).await,
            Cmd::Audiences { cmd, .. } => campaign_cli::audiences(&remote, cmd).await,
            Cmd::Rules { cmd, .. } => campaign_cli::rules(&remote, cmd).await,
            Cmd::Jobs { cmd, .. } => campaign_cli::jobs(&remote, cmd).await,
            Cmd::Channels { cmd, .. } => channels_cli::run(&remote, cmd).await,
            Cmd::Keys { cmd, .. } => keys_cli::run(&remote, cmd).await,
            Cmd::DeadLetters { cmd, .. } => timers_cli::dead_letters(&remote, cmd).await,
            Cmd::Audit { cmd, args, .. } => audit_cli::run(&remote, cmd, args).await,
            Cmd::Reports { cmd, args, .. } => reports_cli::run(&remote, cmd, args).await,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own checks of every command (unique names, valid relations).
    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn version_json_names_the_commit_and_the_features() {
        let v = version_json();
        assert_eq!(v["commit"], COMMIT);
        assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
        let bench_pg = v["features"]
            .as_array()
            .is_some_and(|f| f.contains(&serde_json::json!("bench-pg")));
        assert_eq!(bench_pg, cfg!(feature = "bench-pg"), "{v}");
    }
}
