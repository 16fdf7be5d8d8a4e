//! Importing an NDJSON file through a bulk endpoint (`herald reminders
//! import`, `herald subscribers import`): batches of lines, a progress bar,
//! and a tally of the per-line answers.

use std::io::{BufRead, BufReader};
use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;

/// One bulk endpoint and how its answers count.
pub struct Import {
    /// `/v1/...:bulk`.
    pub route: &'static str,
    /// What a line is, for the progress bar.
    pub noun: &'static str,
    /// Line statuses that are not failures, each with its label in the
    /// summary (so an import that is re-run counts, say, `409`s instead of
    /// failing on them).
    pub outcomes: &'static [(u64, &'static str)],
}

impl Import {
    /// Sends `file` in batches of `batch` non-blank lines and prints the
    /// tally; fails when any line failed (after the whole file was sent).
    pub async fn run(
        &self,
        http: &reqwest::Client,
        base: &str,
        file: &Path,
        batch: usize,
    ) -> anyhow::Result<()> {
        let open =
            || std::fs::File::open(file).with_context(|| format!("opening {}", file.display()));
        let total = BufReader::new(open()?)
            .lines()
            .map_while(Result::ok)
            .filter(|l| !l.trim().is_empty())
            .count();
        let bar = indicatif::ProgressBar::new(total as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(&format!(
                "{{elapsed_precise}} [{{bar:40}}] {{pos}}/{{len}} {} ({{per_sec}}, eta {{eta}})",
                self.noun
            ))
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        let mut lines = BufReader::new(open()?).lines();
        let mut counts = vec![0u64; self.outcomes.len()];
        let mut failed = 0u64;
        let mut first_errors: Vec<String> = Vec::new();
        let mut sent_lines = 0usize;
        loop {
            let mut body = String::new();
            let mut n = 0;
            for line in lines.by_ref() {
                let line = line.with_context(|| format!("reading {}", file.display()))?;
                sent_lines += 1;
                if line.trim().is_empty() {
                    continue;
                }
                body.push_str(&line);
                body.push('\n');
                n += 1;
                if n == batch.max(1) {
                    break;
                }
            }
            if n == 0 {
                break;
            }
            let first_line = sent_lines - n;
            let resp = http
                .post(format!("{base}{}", self.route))
                .header("content-type", "application/x-ndjson")
                .body(body)
                .send()
                .await
                .with_context(|| format!("cannot reach {base}"))?;
            let status = resp.status();
            let text = resp.text().await?;
            if !status.is_success() {
                bar.abandon();
                bail!("server answered {status} near line {first_line}: {text}");
            }
            for answer in text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            {
                let status = answer["status"].as_u64();
                match self.outcomes.iter().position(|(s, _)| Some(*s) == status) {
                    Some(i) => counts[i] += 1,
                    None => {
                        failed += 1;
                        if first_errors.len() < 5 {
                            first_errors.push(format!(
                                "request line {}: {}",
                                answer["line"], answer["error"]
                            ));
                        }
                    }
                }
            }
            bar.inc(n as u64);
        }
        bar.finish();
        let tally: Vec<String> = self
            .outcomes
            .iter()
            .zip(&counts)
            .map(|((_, label), n)| format!("{label} {n}"))
            .collect();
        println!("{}, failed {failed}", tally.join(", "));
        for e in &first_errors {
            println!("  {e}");
        }
        if failed > 0 {
            bail!("{failed} lines failed");
        }
        Ok(())
    }
}
