//! `herald serve`: decide the access mode, bind the port, open the store, start the
//! engine, serve the API, reload the configuration file on SIGHUP, and on
//! SIGTERM/SIGINT stop taking requests, drain deliveries, and exit.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use herald_core::{Clock, SystemClock};
use herald_engine::Engine;
use herald_server::access::SessionSecret;
use herald_server::{
    Access, AppParts, AppState, AuditLog, AuditSettings, AuthConfig, Mode, Quotas, StoredKeys,
};
use herald_store::RedactedUrl;

use crate::config::Config;
use crate::runtime_spec::{channel_spec, engine_config};

pub async fn run(cfg: Config, file: Option<PathBuf>) -> anyhow::Result<()> {
    // A misspelt HERALD_* variable would otherwise be ignored without a word.
    crate::env_names::warn_unknown(file.as_deref());
    // Before anything is opened: a node that must not serve says so at once.
    let admin_key = env_secret(&cfg.auth.admin_key_env, "the admin key")?;
    let mode = Mode::decide(&cfg.listen, admin_key.as_deref(), &cfg.auth.admin_key_env)?;
    let session_secret = session_secret(&cfg.auth, mode)?;
    // The port next: a node that cannot serve must not migrate the store,
    // take shards or start sending first.
    let listener = bind(&cfg.listen).await?;
    let addr = listener.local_addr()?;
    if mode == Mode::Open && !addr.ip().is_loopback() {
        bail!(
            "listen = {:?} bound {addr}, which is not a loopback address; without an admin \
             key only loopback is served (set {} to protect this node)",
            cfg.listen,
            cfg.auth.admin_key_env
        );
    }
    let node_id = cfg.node_id();
    open_file_limit(cfg.api.max_connections);
    let metrics = herald_server::install_metrics().map_err(anyhow::Error::msg)?;
    let store = herald_store::open(&cfg.store, &cfg.store_options)
        .await
        .with_context(|| format!("opening store {}", RedactedUrl(&cfg.store)))?;
    let shards = store
        .init_shards(cfg.shards)
        .await
        .context("reading the shard count")?;
    if shards != cfg.shards {
        tracing::warn!(
            configured = cfg.shards,
            stored = shards,
            "the store was created with another shard count; using the stored one"
        );
    }
    // Stored subscriptions mean the lead list they were made under.
    herald_server::leads::settle(&*store, &cfg.reminders.leads())
        .await
        .map_err(anyhow::Error::msg)?;
    // Tenants named in the configuration exist before anything uses them.
    let tenancy = crate::tenancy::resolve(&cfg, &*store).await?;
    // Access tokens live in the store, so every node shares one per channel.
    let build_ctx = herald_channels::BuildContext {
        vault: Arc::new(herald_engine::StoreVault::new(store.clone())),
        node_id: node_id.clone(),
    };
    let specs = cfg
        .channels
        .iter()
        .map(|c| channel_spec(c, &build_ctx))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut engine_cfg = engine_config(&cfg);
    engine_cfg.tenants = tenancy.limits;
    engine_cfg.campaign.caps = tenancy.caps.clone();
    engine_cfg.caps = tenancy.caps;
    engine_cfg.rate_limits = tenancy.rate_limits;
    let engine = Engine::start(
        store.clone(),
        clock.clone(),
        specs,
        engine_cfg,
        shards,
        &node_id,
    )
    .await;
    let quotas = Arc::new(Quotas::new(tenancy.max_pending));
    if quotas.any() {
        quotas
            .refresh(&*store)
            .await
            .context("counting pending timers for the tenant quotas")?;
        quotas.spawn_refresher(
            store.clone(),
            Duration::from_millis(cfg.engine.quota_refresh_ms),
        );
    }
    let audit_settings = AuditSettings {
        data_plane: cfg.audit.data_plane,
        ..AuditSettings::default()
    };
    let (audit, audit_writer) = AuditLog::start(store.clone(), audit_settings);
    let reloader = Arc::new(crate::reload::Reloader::new(
        file.clone(),
        engine.clone(),
        build_ctx,
        cfg.clone(),
    ));
    // Taken over before the first request: SIGHUP's default would end the process.
    hangups(reloader.clone(), audit.clone(), clock.clone())?;
    let access = access(admin_key.as_deref(), session_secret, &cfg.auth)
        .with_keys(Arc::new(StoredKeys::new(store.clone())))
        .with_channel_tenants(tenancy.channels);
    let state = AppState::new(AppParts {
        engine: engine.clone(),
        campaigns: engine.campaigns(),
        clock,
        api: Arc::new(cfg.api.clone()),
        reminders: Arc::new(cfg.reminders.clone()),
        default_routes: Arc::new(tenancy.default_routes),
        metrics,
        access: Arc::new(access),
        audit,
        quotas,
        reload: file
            .is_some()
            .then_some(reloader as herald_server::Reloader),
        forecasts: Default::default(),
    });
    let app = herald_server::router(state);
    if mode == Mode::Open {
        tracing::warn!(
            %addr,
            admin_key_env = %cfg.auth.admin_key_env,
            "open mode: no admin key is set, so every request is served as tenant default \
             with every scope (an API key sent with one is not checked), and only loopback \
             Host names are answered; set the admin key variable to protect this node"
        );
    }
    tracing::info!(%addr, node_id, store = %RedactedUrl(&cfg.store), shards, ?mode, "herald serving");
    // Tests and scripts read this line to learn the port.
    println!("herald listening on http://{addr}");
    std::io::stdout().flush().ok();
    // A core loop that cannot restart died: stop serving and exit non-zero
    // rather than keep answering without it.
    let failed = engine.clone();
    let stop_serving = async move {
        tokio::select! {
            _ = shutdown_signal() => {}
            _ = failed.failed() => {}
        }
    };
    let edge = crate::listener::Edge {
        header_read_timeout: Duration::from_millis(cfg.api.header_read_timeout_ms),
        max_connections: cfg.api.max_connections,
        drain_timeout: Duration::from_millis(cfg.engine.drain_timeout_ms),
    };
    crate::listener::serve(listener, app, edge, stop_serving).await;
    // No request is answered any more: write the last audit entries.
    audit_writer.shutdown().await;
    tracing::info!("stopping: draining in-flight deliveries");
    engine.shutdown().await;
    if engine.health().failed {
        bail!("a core loop of the engine died and cannot be restarted");
    }
    tracing::info!("stopped");
    Ok(())
}

/// The API's listener on `listen`, or an error that says what to change: a
/// port in use or one the process may not take is a setting to fix.
async fn bind(listen: &str) -> anyhow::Result<tokio::net::TcpListener> {
    use std::io::ErrorKind;
    const CHOOSE: &str = "choose another with listen = \"HOST:PORT\" in the configuration \
                          file or the HERALD_LISTEN environment variable";
    match tokio::net::TcpListener::bind(listen).await {
        Ok(listener) => Ok(listener),
        Err(e) if e.kind() == ErrorKind::AddrInUse => {
            bail!("address {listen} is already in use; {CHOOSE}")
        }
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            bail!("this process may not listen on {listen} ({e}); {CHOOSE}")
        }
        Err(e) if e.kind() == ErrorKind::AddrNotAvailable => {
            bail!("address {listen} is not an address of this machine ({e}); {CHOOSE}")
        }
        Err(e) => Err(e).with_context(|| format!("binding {listen}")),
    }
}

/// Reloads the configuration on each SIGHUP, recording it in the audit log
/// as the route's entries are (method `SIGHUP`, no key).
#[cfg(unix)]
fn hangups(
    reloader: Arc<crate::reload::Reloader>,
    audit: AuditLog,
    clock: Arc<dyn Clock>,
) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hup = signal(SignalKind::hangup()).context("listening for SIGHUP")?;
    tokio::spawn(async move {
        while hup.recv().await.is_some() {
            tracing::info!("SIGHUP: reloading the configuration");
            let status = match reloader.reload_now().await {
                Ok(_) => 200,
                Err(herald_server::ReloadError::Failed(_)) => 503,
                Err(herald_server::ReloadError::NoFile) => 409,
                Err(herald_server::ReloadError::Invalid(_)) => 422,
            };
            audit.record(herald_store::NewAuditEntry {
                at: clock.now_ms(),
                key_id: None,
                key_name: None,
                tenant: herald_core::DEFAULT_TENANT,
                method: "SIGHUP".into(),
                route: "/v1/admin:reload".into(),
                resource_id: None,
                status,
                count: 1,
                reason: None,
            });
        }
    });
    Ok(())
}

#[cfg(not(unix))]
fn hangups(_: Arc<crate::reload::Reloader>, _: AuditLog, _: Arc<dyn Clock>) -> anyhow::Result<()> {
    Ok(())
}

/// The value of the environment variable `var` holding `what` (set but
/// empty counts as set: the check of its length refuses it).
/// Raises the open-file limit, and says when `api.max_connections` still
/// cannot be reached under it.
fn open_file_limit(max_connections: usize) {
    match crate::open_files::raise() {
        Ok(l) if !l.fits(max_connections) => tracing::warn!(
            soft = l.after,
            hard = l.hard,
            max_connections,
            "the open-file limit is under api.max_connections; raise the hard limit (ulimit -Hn, LimitNOFILE=) or lower api.max_connections"
        ),
        Ok(l) if l.after > l.before => {
            tracing::info!(from = l.before, to = l.after, "raised the open-file limit")
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "could not read or raise the open-file limit"),
    }
}

fn env_secret(var: &str, what: &str) -> anyhow::Result<Option<String>> {
    match std::env::var(var) {
        Ok(value) => Ok(Some(value)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => bail!("{what} in {var} is not valid UTF-8"),
    }
}

/// The secret console sessions are signed with, when `[auth]
/// session_secret_env` names a variable that is set; `None`: derived from
/// the admin key. Open mode has no sessions, so there it is not used.
fn session_secret(auth: &AuthConfig, mode: Mode) -> anyhow::Result<Option<SessionSecret>> {
    let env = &auth.session_secret_env;
    let Some(value) = env_secret(env, "the session secret")? else {
        if mode == Mode::Protected {
            tracing::info!(session_secret_env = %env, "console sessions are signed with a secret derived from the admin key");
        }
        return Ok(None);
    };
    if mode == Mode::Open {
        tracing::warn!(session_secret_env = %env, "the session secret is not used: open mode has no console sessions");
        return Ok(None);
    }
    let secret = SessionSecret::from_setting(&value, env)?;
    tracing::info!(session_secret_env = %env, "console sessions are signed with the secret in the session secret variable");
    Ok(Some(secret))
}

/// The node's access settings: protected exactly when there is an admin
/// key (`Mode::decide` has refused whatever may not be open). Stored API
/// keys and channel tenants are added by the caller.
fn access(
    admin_key: Option<&str>,
    session_secret: Option<SessionSecret>,
    auth: &AuthConfig,
) -> Access {
    match (admin_key, session_secret) {
        (Some(key), Some(secret)) => Access::protected(key, auth).with_session_secret(secret),
        (Some(key), None) => Access::protected(key, auth),
        (None, _) => Access::open(auth),
    }
}

pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
