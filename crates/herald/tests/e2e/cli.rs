//! The client commands as a user and a script meet them, on the real binary
//! against a real server: one grammar with the old verbs still taken, help on
//! every flag, JSON through a pipe and a table on request or on a terminal,
//! the create flags reaching the API, an error printed once, completions,
//! `herald version`, and the admin acting for a tenant.

use std::process::Output;

use serde_json::{Value, json};

use crate::common::{BIN, Server, pg_database};

const ADMIN: &str = "e2e-cli-admin-key-0123456789abcdef";

/// `herald ARGS --server URL`, with no key from the environment unless given.
fn herald(url: &str, key: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(args)
        .args(["--server", url])
        .env_remove("HERALD_KEY")
        .env_remove("HERALD_SERVER")
        .env_remove("HERALD_TENANT");
    if let Some(k) = key {
        cmd.env("HERALD_KEY", k);
    }
    cmd.output().expect("run herald")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a command that must succeed and print JSON (stdout is a pipe here).
fn json_of(url: &str, key: Option<&str>, args: &[&str]) -> Value {
    let out = herald(url, key, args);
    assert!(
        out.status.success(),
        "herald {args:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("herald {args:?} printed no JSON ({e}): {out:?}"))
}

/// The help text `herald help PATH...` prints.
fn help(path: &[String]) -> String {
    let out = std::process::Command::new(BIN)
        .arg("help")
        .args(path)
        .output()
        .expect("run herald help");
    assert!(out.status.success(), "herald help {path:?}: {out:?}");
    text(&out.stdout)
}

/// One section of a help text: its heading ("Options", "Commands", ...) and
/// its entries, each the entry's first line and whether it has a help text
/// (on the same line, or on the more indented lines under it).
fn sections(help: &str) -> Vec<(String, Vec<(String, bool)>)> {
    let lines: Vec<&str> = help.lines().collect();
    let mut out: Vec<(String, Vec<(String, bool)>)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with(' ') && line.ends_with(':') && !line.contains(' ') || {
            // "Client options:" has a space but is a heading all the same.
            !line.starts_with(' ') && line.ends_with(" options:")
        } {
            out.push((line.trim_end_matches(':').to_string(), Vec::new()));
            continue;
        }
        let Some((heading, entries)) = out.last_mut() else {
            continue;
        };
        // An entry: a command's name indented by two, or a flag (`-x`,
        // `--long`, indented by two or six) or an argument (`<ID>`). Its help
        // follows after two spaces, or on the next line, indented further.
        let spec_and_help = line.trim_start();
        let indent = line.len() - spec_and_help.len();
        let is_entry = if heading == "Commands" {
            indent == 2
        } else {
            // Deeper lines are help text (`[default: ...]`, a bullet).
            (indent == 2 || indent == 6) && spec_and_help.starts_with(['-', '<', '['])
        };
        if !is_entry || spec_and_help.is_empty() {
            continue;
        }
        let same_line = spec_and_help
            .split_once("  ")
            .is_some_and(|(_, rest)| !rest.trim().is_empty());
        let next_line = lines.get(i + 1).is_some_and(|n| {
            let text = n.trim_start();
            // Not `[default: 5]` alone: clap prints that without any help.
            n.len() - text.len() > indent + 2 && !text.is_empty() && !text.starts_with(['-', '['])
        });
        entries.push((spec_and_help.to_string(), same_line || next_line));
    }
    out
}

/// Every command, from `herald` down, lists a help text for each of its
/// subcommands, arguments and flags.
#[test]
fn every_subcommand_and_flag_has_a_help_line() {
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    let mut seen = 0;
    let mut missing = Vec::new();
    while let Some(path) = todo.pop() {
        seen += 1;
        let page = help(&path);
        for (heading, entries) in sections(&page) {
            for (entry, has_help) in entries {
                if !has_help {
                    missing.push(format!("herald {} | {heading}: {entry}", path.join(" ")));
                }
                if heading == "Commands" {
                    let name = entry.split_whitespace().next().unwrap_or("").to_string();
                    if name != "help" {
                        let mut sub = path.clone();
                        sub.push(name);
                        todo.push(sub);
                    }
                }
            }
        }
    }
    assert!(missing.is_empty(), "without help:\n{}", missing.join("\n"));
    // The walk reached the commands below the resources and the benches.
    assert!(seen > 60, "only {seen} commands walked");
    // And it would have noticed a flag without help.
    let bare = "Options:\n      --listen <LISTEN>\n          [default: x]\n  -h, --help  Print help\n      --seed <SEED>\n          Seed.\n";
    assert_eq!(
        sections(bare)[0].1,
        [
            ("--listen <LISTEN>".to_string(), false),
            ("-h, --help  Print help".to_string(), true),
            ("--seed <SEED>".to_string(), true)
        ]
    );
}

/// Every resource has the verbs of the one grammar where its API has them.
#[test]
fn the_resources_share_one_grammar() {
    let verbs = |resource: &str| -> Vec<String> {
        let page = help(&[resource.to_string()]);
        sections(&page)
            .into_iter()
            .filter(|(h, _)| h == "Commands")
            .flat_map(|(_, e)| e)
            .filter_map(|(entry, _)| entry.split_whitespace().next().map(str::to_string))
            .collect()
    };
    for (resource, wanted) in [
        ("timers", &["list", "get", "create", "update", "delete"][..]),
        ("subjects", &["list", "get", "create", "update", "delete"]),
        (
            "subscribers",
            &["list", "get", "create", "update", "delete"],
        ),
        ("reminders", &["list", "create", "delete"]),
        ("users", &["get"]),
        ("audiences", &["list", "get", "create", "delete"]),
        ("rules", &["list", "get", "create", "update"]),
        ("jobs", &["list", "get", "create", "delete"]),
        ("keys", &["list", "create", "delete"]),
        ("channels", &["list"]),
        ("audit", &["list"]),
        ("reports", &["list"]),
        ("dead-letters", &["list"]),
    ] {
        let have = verbs(resource);
        for verb in wanted {
            assert!(
                have.iter().any(|v| v == verb),
                "herald {resource} has no {verb}: {have:?}"
            );
        }
    }
    // The old verbs are shown as aliases.
    let timers = help(&["timers".to_string()]);
    assert!(timers.contains("[alias: add]") && timers.contains("[alias: cancel]"));
}

#[test]
fn completions_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = std::process::Command::new(BIN)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}: {out:?}");
        let script = text(&out.stdout);
        for word in ["timers", "dead-letters", "--tenant"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    let out = std::process::Command::new(BIN)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    let script = text(&out.stdout);
    assert!(
        script.contains("complete -F _herald") && script.contains("herald__subcmd__timers"),
        "{script}"
    );
    let bad = std::process::Command::new(BIN)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
}

#[test]
fn version_prints_the_commit_and_the_features() {
    let out = std::process::Command::new(BIN)
        .arg("version")
        .output()
        .unwrap();
    assert!(out.status.success());
    let page = text(&out.stdout);
    let field = |name: &str| {
        page.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no {name} line: {page}"))
            .to_string()
    };
    let commit = field("commit");
    assert!(!commit.is_empty() && !commit.contains(' '), "{page}");
    let features = field("features");
    assert_eq!(
        features.contains("bench-pg"),
        cfg!(feature = "bench-pg"),
        "{page}"
    );
    let out = std::process::Command::new(BIN)
        .args(["version", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["commit"], json!(commit), "{v}");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"), "{v}");
    assert!(v["features"].is_array(), "{v}");
}

async fn scenario(store: Option<&str>) {
    let env = [("HERALD_ADMIN_KEY", ADMIN)];
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}", dir.path().join("herald.db").display());
    // The embedded default: one `log` channel that every reminder type uses.
    let s = Server::start_with_env(store.unwrap_or(&sqlite), dir, "", &env).await;
    let url = s.url.as_str();
    let admin = Some(ADMIN);

    old_verbs_still_work(url, admin);
    output_is_json_through_a_pipe_and_a_table_on_request(url, admin);
    create_flags_reach_the_api(url, admin);
    an_error_is_printed_once(url, admin);
    the_admin_acts_for_a_tenant(url);
}

/// A sample of the verbs scripts used before the one grammar.
fn old_verbs_still_work(url: &str, key: Option<&str>) {
    let t = json_of(
        url,
        key,
        &[
            "timers",
            "add",
            "--channel",
            "log",
            "--recipient",
            "old-verbs",
            "--delay-ms",
            "3600000",
        ],
    );
    let id = t["id"].as_i64().expect("timer id").to_string();
    let patched = json_of(url, key, &["timers", "patch", &id, "--priority", "7"]);
    assert_eq!(patched["priority"], 7, "{patched}");
    let cancelled = json_of(url, key, &["timers", "cancel", &id]);
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");

    let start = "2030-01-01T10:00:00Z";
    json_of(url, key, &["subjects", "put", "s-old", "--start-at", start]);
    json_of(
        url,
        key,
        &[
            "reminders",
            "add",
            "--user",
            "u-old",
            "--subject",
            "s-old",
            "--channel-type",
            "app",
            "--lead",
            "5",
        ],
    );
    let mine = json_of(url, key, &["reminders", "ls", "--user", "u-old"]);
    assert!(mine.to_string().contains("s-old"), "{mine}");
    json_of(
        url,
        key,
        &["reminders", "rm", "--user", "u-old", "--subject", "s-old"],
    );
    json_of(url, key, &["subjects", "rm", "s-old"]);
    json_of(
        url,
        key,
        &[
            "subscribers",
            "put",
            "u-old",
            "--profile",
            r#"{"addresses":{"email":"old@example.com"}}"#,
        ],
    );
    // One user at once: the profile just put, with their (empty) timers.
    let user = json_of(url, key, &["users", "get", "u-old"]);
    assert_eq!(
        user["subscriber"]["addresses"]["email"], "old@example.com",
        "{user}"
    );
    assert!(user["timers"].is_array(), "{user}");
    json_of(url, key, &["subscribers", "rm", "u-old"]);
    assert!(json_of(url, key, &["rules", "ls"])["rules"].is_array());
    assert!(json_of(url, key, &["jobs", "ls"])["jobs"].is_array());
    assert!(json_of(url, key, &["keys", "ls"])["keys"].is_array());
    // `herald audit` and `herald reports` without a verb, as before.
    let audit = json_of(url, key, &["audit", "--limit", "100"]);
    assert!(audit.to_string().contains("/v1/timers"), "{audit}");
    let reports = json_of(url, key, &["reports", "--group-by", "channel"]);
    assert!(reports["rows"].is_array(), "{reports}");
    // The same through the new verbs.
    let listed = json_of(url, key, &["audit", "list", "--limit", "1"]);
    assert_eq!(listed["entries"].as_array().map(Vec::len), Some(1));
    let new = json_of(
        url,
        key,
        &["subjects", "update", "s-new", "--start-at", start],
    );
    assert_eq!(new["subject_id"], "s-new", "{new}");
    json_of(url, key, &["subjects", "delete", "s-new"]);
}

fn output_is_json_through_a_pipe_and_a_table_on_request(url: &str, key: Option<&str>) {
    let t = json_of(
        url,
        key,
        &[
            "timers",
            "create",
            "--channel",
            "log",
            "--recipient",
            "tabled",
            "--delay-ms",
            "3600000",
        ],
    );
    let id = t["id"].as_i64().unwrap().to_string();
    // Piped (as here): JSON with or without --json.
    let piped = json_of(url, key, &["timers", "get", &id]);
    let flagged = json_of(url, key, &["timers", "get", &id, "--json"]);
    assert_eq!(piped, flagged);
    assert_eq!(piped["recipient"], "tabled");
    // --table: one row per field for a record, one per item for a list.
    let out = herald(url, key, &["timers", "get", &id, "--table"]);
    assert!(out.status.success(), "{out:?}");
    let table = text(&out.stdout);
    assert!(serde_json::from_str::<Value>(&table).is_err(), "{table}");
    assert!(
        table.contains("field") && table.contains("recipient") && table.contains("tabled"),
        "{table}"
    );
    let out = herald(
        url,
        key,
        &["timers", "list", "--recipient", "tabled", "--table"],
    );
    let list = text(&out.stdout);
    let header = list
        .lines()
        .find(|l| l.contains("recipient"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(
        header.contains("state") && header.contains("due_at"),
        "{list}"
    );
    assert!(list.contains(&format!(" {id} ")), "{list}");
    // On a terminal (a pseudo-terminal through `script`, where there is
    // one), a table without asking.
    let command = format!("{BIN} timers get {id} --server {url} --key {ADMIN}");
    if let Ok(out) = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env_remove("HERALD_KEY")
        .output()
    {
        let shown = text(&out.stdout);
        assert!(out.status.success(), "{out:?}");
        assert!(
            shown.contains("field")
                && shown.contains("tabled")
                && !shown.trim_start().starts_with('{'),
            "{shown}"
        );
    }
}

/// `timers create --to --topic --critical --digest` and `jobs create --to
/// --topic --follow-up` send the API's fields.
fn create_flags_reach_the_api(url: &str, key: Option<&str>) {
    let t = json_of(
        url,
        key,
        &[
            "timers",
            "create",
            "--channel",
            "log",
            "--to",
            "alice",
            "--channel-type",
            "email",
            "--topic",
            "orders",
            "--critical",
            "--digest",
            "daily",
            "--digest-at",
            "08:30",
            "--message",
            r#"{"text":"shipped"}"#,
        ],
    );
    let id = t["id"].as_i64().expect("timer id").to_string();
    // Read back as the API stores it (`GET /v1/timers/{id}`).
    let got = json_of(url, key, &["timers", "get", &id]);
    assert_eq!(
        got["to"],
        json!({"user_id": "alice", "channel_type": "email"})
    );
    assert_eq!(got["topic"], "orders", "{got}");
    assert_eq!(got["critical"], true, "{got}");
    assert_eq!(got["digest"]["key"], "daily", "{got}");
    assert_eq!(got["digest"]["at_local"], "08:30", "{got}");
    assert_eq!(got["message"], json!({"text": "shipped"}), "{got}");

    let job = json_of(
        url,
        key,
        &[
            "jobs",
            "create",
            "--users",
            "alice,bob",
            "--channel",
            "log",
            "--message",
            r#"{"text":"sale"}"#,
            "--to",
            "--channel-type",
            "email",
            "--topic",
            "promotions",
            "--follow-up",
            r#"{"text":"last day"}"#,
            "--follow-up-after-secs",
            "3600",
        ],
    );
    let id = job["id"].as_i64().expect("job id").to_string();
    let got = json_of(url, key, &["jobs", "get", &id]);
    assert_eq!(got["topic"], "promotions", "{got}");
    assert_eq!(got["to"]["channel_type"], "email", "{got}");
    assert_eq!(got["follow_up"]["after_secs"], 3600, "{got}");
    assert_eq!(got["follow_up"]["only"], "unread", "{got}");
}

/// A refused request: one line on stderr naming status, code and message,
/// nothing on stdout, a failing exit.
fn an_error_is_printed_once(url: &str, key: Option<&str>) {
    let out = herald(url, key, &["timers", "get", "987654321"]);
    assert!(!out.status.success());
    assert_eq!(text(&out.stdout), "", "nothing on stdout");
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].starts_with("error: 404 not_found: "), "{err}");
    // A field the server names is in the line.
    let out = herald(url, key, &["timers", "list", "--state", "firing"]);
    let err = text(&out.stderr);
    assert!(!out.status.success() && text(&out.stdout).is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: 400 ") && err.contains("state"),
        "{err}"
    );
    // A server that is not there: one line too.
    let out = herald("http://127.0.0.1:9", key, &["timers", "get", "1"]);
    let err = text(&out.stderr);
    assert!(!out.status.success() && text(&out.stdout).is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: cannot reach http://127.0.0.1:9"),
        "{err}"
    );
}

/// `--tenant` lets the admin key act for a tenant (`X-Herald-Tenant`); on
/// `keys create` it names the key's tenant.
fn the_admin_acts_for_a_tenant(url: &str) {
    let out = herald(
        url,
        Some(ADMIN),
        &["keys", "create", "--tenant", "shop", "--scope", "read"],
    );
    assert!(out.status.success(), "{out:?}");
    let printed = text(&out.stdout);
    let shop_key = printed.lines().next().unwrap().trim().to_string();
    let made = json_of(
        url,
        Some(ADMIN),
        &[
            "--tenant",
            "shop",
            "timers",
            "create",
            "--channel",
            "log",
            "--recipient",
            "for-shop",
            "--delay-ms",
            "3600000",
        ],
    );
    let id = made["id"].as_i64().unwrap().to_string();
    // The shop's own key sees it; the admin's own tenant does not.
    let seen = json_of(url, Some(&shop_key), &["timers", "get", &id]);
    assert_eq!(seen["recipient"], "for-shop", "{seen}");
    let out = herald(url, Some(ADMIN), &["timers", "get", &id]);
    assert!(!out.status.success(), "{out:?}");
    assert!(text(&out.stderr).contains("404"), "{out:?}");
    // HERALD_TENANT works as the flag does, anywhere on the line.
    let out = std::process::Command::new(BIN)
        .args(["timers", "get", &id, "--server", url])
        .env("HERALD_KEY", ADMIN)
        .env("HERALD_TENANT", "shop")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // A tenant's key may not act for another.
    let out = herald(
        url,
        Some(&shop_key),
        &["--tenant", "default", "timers", "list"],
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("403"), "{out:?}");
    // keys list --tenant filters by it.
    let keys = json_of(url, Some(ADMIN), &["keys", "list", "--tenant", "shop"]);
    assert_eq!(keys["keys"].as_array().map(Vec::len), Some(1), "{keys}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_grammar_output_and_errors_on_sqlite() {
    scenario(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_grammar_output_and_errors_on_postgres() {
    let Some((_db, store)) = pg_database("cli") else {
        return;
    };
    scenario(Some(&store)).await;
}
