//! `herald config check`: reads the configuration as `herald serve` would
//! (file, then `HERALD_*` variables) and says everything wrong with it at
//! once, without opening the store or the port. Exit code 0 when it would
//! start; unknown `HERALD_*` variables are warnings, not failures.

use std::path::PathBuf;

use herald_server::Mode;

use crate::config::Config;

#[derive(clap::Subcommand, Debug)]
pub enum ConfigCmd {
    /// Check a configuration file and the environment without serving:
    /// prints every problem at once, exits non-zero if `serve` would refuse it.
    Check {
        /// TOML configuration file, as `herald serve` takes it.
        #[arg(long, env = "HERALD_CONFIG")]
        config: Option<PathBuf>,
    },
}

pub fn run(cmd: ConfigCmd) -> anyhow::Result<()> {
    let ConfigCmd::Check { config } = cmd;
    let file = config.as_deref();
    let settings = Config::figment(file)
        .ok()
        .and_then(|f| crate::env_names::settings_of(&f));
    let warnings = crate::env_names::from_process(settings.as_ref());
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let mut problems = match Config::check(file) {
        // What building each channel checks without a request (URLs, files,
        // secrets in the environment, a robot's webhook): `serve` refuses
        // the same when it builds them.
        Ok(cfg) => cfg
            .channels
            .iter()
            .filter_map(|c| c.validate().err().map(|e| e.to_string()))
            .collect(),
        Err(problems) => problems,
    };
    // Read on their own, so they are checked even when other keys are wrong.
    if let Ok(fig) = Config::figment(file)
        && let (Ok(listen), Ok(env)) = (
            fig.extract_inner::<String>("listen"),
            fig.extract_inner::<String>("auth.admin_key_env"),
        )
    {
        problems.extend(start_problems(&listen, &env));
    }
    problems.dedup();
    for p in &problems {
        eprintln!("error: {p}");
    }
    let what = match file {
        Some(f) => f.display().to_string(),
        None => "the built-in defaults".to_string(),
    };
    if problems.is_empty() {
        println!(
            "{what} and the environment are valid ({} warning{})",
            warnings.len(),
            if warnings.len() == 1 { "" } else { "s" }
        );
        Ok(())
    } else {
        anyhow::bail!(
            "{what} and the environment: {} problem{}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        )
    }
}

/// What `herald serve` refuses before opening anything: a public address
/// without an admin key, a short admin key.
fn start_problems(listen: &str, env: &str) -> Vec<String> {
    let key = match std::env::var(env) {
        Ok(k) => Some(k),
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => {
            return vec![format!("the admin key in {env} is not valid UTF-8")];
        }
    };
    match Mode::decide(listen, key.as_deref(), env) {
        Ok(_) => Vec::new(),
        Err(e) => vec![e.to_string()],
    }
}
