//! The README's tour, run as a new user would run it: every ```` ```sh test ````
//! block, in order, in one `bash` session, against the real binary on a
//! fresh store, with `HERALD` set to the node and `herald` on the `PATH`.
//!
//! A comment line directly under a command (no blank line between) is what
//! that command prints; the test checks it. A JSON answer is compared by
//! shape: every key the README shows must be there, with the same value,
//! except that `...` stands for anything (a value, more keys, more array
//! elements, part of a string), timestamps match any timestamp, and numbers
//! under `id` or a `*_id` key match any number (ids may skip). A trailing
//! ` NNN` is the status `curl -w ' %{http_code}\n'` printed, compared
//! exactly. Any other line is compared as text, `...` matching anything; a
//! line that is only `...` stands for the rest of the output. Every command
//! must succeed (`set -euo pipefail`). The convention is described in
//! docs/contributing.md.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::common::{BIN, Server};

/// The `[[caps]]` entry README.md's "Frequency caps" shows, which the tour's
/// node runs with (the test checks the README still shows it).
const README_CAP: &str =
    "[[caps]]\nname = \"marketing\"\ntopic = \"marketing\"\nmax = 1\nwindow = \"24h\"\n";

/// The marker the generated script prints before each checked answer.
const MARK: &str = "@@readme-answer ";

/// One command (or a few) of the README and the answer shown under it.
#[derive(Debug)]
struct Step {
    /// README line of the first answer line.
    line: usize,
    /// The script text since the previous step, for messages.
    commands: String,
    /// The answer lines, without their `# `.
    expected: Vec<String>,
}

/// The tested blocks as one script with markers, and the steps it checks.
fn script(readme: &str) -> (String, Vec<Step>) {
    #[derive(PartialEq)]
    enum Last {
        Blank,
        Comment,
        Command,
        Answer,
    }
    let mut out = String::new();
    let mut steps: Vec<Step> = Vec::new();
    let mut pending = String::new();
    let mut in_block = false;
    let mut last = Last::Blank;
    for (i, line) in readme.lines().enumerate() {
        let trimmed = line.trim();
        if !in_block {
            if trimmed == "```sh test" {
                in_block = true;
                last = Last::Blank;
            }
            continue;
        }
        if trimmed == "```" {
            in_block = false;
            out.push('\n');
            continue;
        }
        if trimmed.starts_with('#') && matches!(last, Last::Command | Last::Answer) {
            let answer = trimmed.strip_prefix('#').unwrap_or(trimmed);
            let answer = answer.strip_prefix(' ').unwrap_or(answer).to_string();
            if last == Last::Command {
                out.push_str(&format!("printf '\\n{MARK}%d\\n' {}\n", steps.len()));
                steps.push(Step {
                    line: i + 1,
                    commands: std::mem::take(&mut pending),
                    expected: vec![answer],
                });
            } else if let Some(step) = steps.last_mut() {
                step.expected.push(answer);
            }
            last = Last::Answer;
            continue;
        }
        out.push_str(line);
        out.push('\n');
        pending.push_str(line);
        pending.push('\n');
        last = if trimmed.is_empty() {
            Last::Blank
        } else if trimmed.starts_with('#') {
            Last::Comment
        } else {
            Last::Command
        };
    }
    (out, steps)
}

/// The README's `...` elisions made into JSON: `"...": null` where a key
/// would stand, `"..."` where a value or an element would.
fn unelide(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut stack: Vec<char> = Vec::new();
    let (mut in_str, mut escaped) = (false, false);
    let mut last_sig = ' ';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
                last_sig = '"';
            }
            i += 1;
            continue;
        }
        if chars[i..].starts_with(&['.', '.', '.']) {
            if stack.last() == Some(&'{') && matches!(last_sig, '{' | ',') {
                out.push_str("\"...\":null");
            } else {
                out.push_str("\"...\"");
            }
            last_sig = '"';
            i += 3;
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' | '[' => stack.push(c),
            '}' | ']' => {
                stack.pop();
            }
            _ => {}
        }
        if !c.is_whitespace() {
            last_sig = c;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Splits a trailing ` NNN` status off `text`.
fn split_status(text: &str) -> (&str, Option<&str>) {
    match text.trim_end().rsplit_once(' ') {
        Some((body, code)) if code.len() == 3 && code.bytes().all(|b| b.is_ascii_digit()) => {
            (body, Some(code))
        }
        _ => (text.trim_end(), None),
    }
}

/// An expected line that shows JSON: its template and status.
fn template(expected: &str) -> Result<Option<(Value, Option<String>)>, String> {
    let t = expected.trim();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return Ok(None);
    }
    let (body, status) = split_status(t);
    let v: Value = serde_json::from_str(&unelide(body))
        .map_err(|e| format!("the README's answer is not JSON with `...`: {e}: {body}"))?;
    Ok(Some((v, status.map(str::to_string))))
}

/// `text` matches `pattern`, where each `...` matches any text.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split("...").collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || !text.ends_with(last) || text.len() < first.len() + last.len() {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    true
}

fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 20 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T'
}

/// `actual` has the shape `expected` shows (see the module comment).
fn shape(expected: &Value, actual: &Value, path: &str) -> Result<(), String> {
    let differ = || format!("{path}: the README shows {expected}, the node answered {actual}");
    match (expected, actual) {
        (Value::String(e), _) if e == "..." => Ok(()),
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                if k == "..." {
                    continue;
                }
                let av = a
                    .get(k)
                    .ok_or_else(|| format!("{path}.{k}: missing from {actual}"))?;
                if (k == "id" || k.ends_with("_id")) && ev.is_number() {
                    if !av.is_number() {
                        return Err(format!("{path}.{k}: not a number: {av}"));
                    }
                    continue;
                }
                shape(ev, av, &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) => {
            let open = e.last().is_some_and(|v| v == "...");
            let fixed = if open { e.len() - 1 } else { e.len() };
            if a.len() < fixed || (!open && a.len() != fixed) {
                return Err(differ());
            }
            for (n, (ev, av)) in e[..fixed].iter().zip(a).enumerate() {
                shape(ev, av, &format!("{path}[{n}]"))?;
            }
            Ok(())
        }
        (Value::String(e), Value::String(a)) => {
            let ok = if is_timestamp(e) {
                is_timestamp(a)
            } else {
                glob(e, a)
            };
            if ok { Ok(()) } else { Err(differ()) }
        }
        _ if expected == actual => Ok(()),
        _ => Err(differ()),
    }
}

/// One line against its expected line.
fn line_matches(expected: &str, actual: &str) -> Result<(), String> {
    match template(expected)? {
        Some((tmpl, status)) => json_matches(&tmpl, status.as_deref(), actual),
        None if glob(expected.trim(), actual.trim()) => Ok(()),
        None => Err(format!(
            "the README shows `{expected}`, the command printed `{actual}`"
        )),
    }
}

fn json_matches(tmpl: &Value, status: Option<&str>, actual: &str) -> Result<(), String> {
    let (body, got) = if status.is_some() {
        split_status(actual)
    } else {
        (actual.trim(), None)
    };
    if got != status {
        return Err(format!(
            "status: the README shows {status:?}, the command printed {got:?} ({actual})"
        ));
    }
    let v: Value = serde_json::from_str(body)
        .map_err(|e| format!("the answer is not JSON ({e}): {actual}"))?;
    shape(tmpl, &v, "$")
}

/// What a step printed against what the README shows under it.
fn check(expected: &[String], actual: &str) -> Result<(), String> {
    let actual = actual.trim_matches('\n');
    if let [only] = expected
        && let Some((tmpl, status)) = template(only)?
    {
        // One JSON answer, printed on one line or pretty across several.
        return json_matches(&tmpl, status.as_deref(), actual);
    }
    let lines: Vec<&str> = actual.lines().collect();
    for (n, e) in expected.iter().enumerate() {
        if e.trim() == "..." {
            return Ok(());
        }
        let a = lines
            .get(n)
            .ok_or_else(|| format!("the README shows more output: `{e}`"))?;
        line_matches(e, a)?;
    }
    if lines.len() > expected.len() {
        return Err(format!(
            "the command printed more than the README shows: {:?}",
            &lines[expected.len()..]
        ));
    }
    Ok(())
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[tokio::test]
async fn the_readme_tour_runs_as_written() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let (text, steps) = script(&readme);
    assert!(
        readme.contains(&format!("```toml\n{README_CAP}```")),
        "README.md's cap example is the cap the tour's node runs with"
    );
    assert!(
        steps.len() >= 20,
        "the README's tour should show its answers; found {} checked steps",
        steps.len()
    );
    // The embedded default, plus the README's cap ("Frequency caps" shows
    // what it does on a node started with it).
    let server = Server::start(README_CAP).await;
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("bash")
        .args(["-euo", "pipefail", "-s"])
        .current_dir(&root)
        .env("HERALD", &server.url)
        .env("HERALD_SERVER", &server.url)
        .env("PATH", path)
        .env_remove("HERALD_KEY")
        .env_remove("HERALD_ADMIN_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("bash");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(text.as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(180), child.wait_with_output())
        .await
        .expect("the README's tour finishes within 3 minutes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);

    // Output before marker N is step N's; the text after the last marker
    // belongs to commands that show no answer.
    let mut printed: Vec<String> = Vec::new();
    let mut current = String::new();
    for line in stdout.split_inclusive('\n') {
        match line.strip_prefix(MARK) {
            Some(n) => {
                assert_eq!(n.trim(), printed.len().to_string(), "markers in order");
                printed.push(std::mem::take(&mut current));
            }
            None => current.push_str(line),
        }
    }
    if !out.status.success() {
        let step = steps.get(printed.len());
        panic!(
            "a README command failed ({}) after {} checked answers; the next answer is at README line {}:\n{}\nstdout since: {current}\nstderr: {stderr}\nserver log: {}",
            out.status,
            printed.len(),
            step.map_or(0, |s| s.line),
            step.map_or("", |s| s.commands.as_str()),
            server.log()
        );
    }
    assert_eq!(
        printed.len(),
        steps.len(),
        "every step ran; stderr: {stderr}"
    );
    let mut failures = Vec::new();
    for (step, actual) in steps.iter().zip(&printed) {
        if let Err(e) = check(&step.expected, actual) {
            failures.push(format!(
                "README line {}: {e}\n  after:\n{}",
                step.line, step.commands
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} README answers differ from the node's:\n{}\nstderr: {stderr}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn elisions_and_shapes() {
    let (t, s) = template(
        r#"{"id":1,"state":"done",...,"tags":["a",...],"at":"2026-01-01T00:00:00.000Z"} 201"#,
    )
    .unwrap()
    .unwrap();
    assert_eq!(s.as_deref(), Some("201"));
    let a: Value = serde_json::from_str(
        r#"{"id":7,"state":"done","x":1,"tags":["a","b"],"at":"2027-05-05T01:02:03.004Z"}"#,
    )
    .unwrap();
    shape(&t, &a, "$").unwrap();
    let wrong: Value =
        serde_json::from_str(r#"{"id":7,"state":"pending","tags":["a"],"at":"x"}"#).unwrap();
    assert!(shape(&t, &wrong, "$").is_err());
    assert!(glob("job ... done: sent 3", "job 12 done: sent 3"));
    assert!(!glob("job ... done: sent 3", "job 12 done: sent 2"));
    assert!(check(&["a ...".into(), "...".into()], "a b\nc\nd").is_ok());
    assert!(check(&["{\"x\":1} 200".into()], "{\"x\":1} 404").is_err());
}
