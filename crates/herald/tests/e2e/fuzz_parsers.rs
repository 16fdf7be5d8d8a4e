//! Property tests for the audience upload parser (NDJSON and CSV), which
//! reads request bodies in whatever pieces the network delivers: any bytes,
//! cut anywhere, give an answer (never a panic) in bounded time, and the
//! answer does not depend on where the body was cut.

use std::sync::mpsc;
use std::time::Duration;

use herald_server::audiences::parser::{Format, LineError, MAX_RECORD_BYTES, Parser};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// Generous: only a hang (or something close to one) takes this long.
const WATCHDOG: Duration = Duration::from_secs(20);
const SEED: [u8; 32] = *b"herald-issue-14-audience-props-1";

fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED))
}

/// Parses `body` cut at `cuts` (offsets into it, any order).
fn parse(format: Format, body: &[u8], cuts: &[usize]) -> Result<Vec<String>, LineError> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.push(body.len());
    let mut p = Parser::new(format);
    let mut out = Vec::new();
    let mut from = 0;
    for to in cuts {
        p.push(&body[from..to], &mut out)?;
        from = to;
    }
    p.finish(&mut out)?;
    Ok(out)
}

/// Runs `f` on its own thread; `Err` if it panics or outlives [`WATCHDOG`].
fn within<T: Send + 'static>(
    what: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, TestCaseError> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(out);
    });
    match rx.recv_timeout(WATCHDOG) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(_)) => Err(TestCaseError::fail(format!("panicked on {what}"))),
        Err(_) => Err(TestCaseError::fail(format!(
            "no answer within {WATCHDOG:?} on {what}"
        ))),
    }
}

/// Pieces NDJSON and CSV bodies are made of: good records, near misses,
/// quotes, separators, control bytes, invalid UTF-8, a byte order mark.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => "[a-z0-9@._+-]{1,20}".prop_map(|r| format!("{{\"recipient\":\"{r}\"}}").into_bytes()),
        3 => "[a-z0-9@._+-]{1,20}".prop_map(String::into_bytes),
        1 => Just(b"recipient".to_vec()),
        2 => prop::sample::select(vec![
            &b"\n"[..], b"\r\n", b"\r", b",", b"\"", b"\"\"", b" ", b"\t", b"\0", b"\x1b",
            b"\xEF\xBB\xBF", b"\xff", b"\xc3", b"{", b"}", b"[]", b"null", b"\\",
            b"{\"recipient\":1}", b"{\"recipient\":\"a\",\"x\":1}", b"{\"recipient\":\"a\\u0000\"}",
            b"\"a\"\"b\"", b"\"a\nb\"",
        ])
        .prop_map(<[u8]>::to_vec),
        1 => prop::collection::vec(any::<u8>(), 0..32),
        1 => prop::sample::select(vec![256usize, 257, MAX_RECORD_BYTES - 1, MAX_RECORD_BYTES + 1])
            .prop_map(|n| vec![b'r'; n]),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(piece(), 0..40).prop_map(|p| p.concat())
}

#[test]
fn audience_uploads_parse_the_same_however_they_are_cut() {
    let strategy = (
        prop::sample::select(vec![Format::Ndjson, Format::Csv]),
        body(),
        prop::collection::vec(any::<usize>(), 0..12),
        any::<Index>(),
    );
    runner(3000)
        .run(&strategy, |(format, body, cuts, one)| {
            let what = format!("{format:?} {:?}", body.escape_ascii().to_string());
            let (whole, pieces, bytewise) = within(what.clone(), move || {
                let whole = parse(format, &body, &[]);
                let pieces = parse(format, &body, &cuts);
                // Byte by byte is the worst split there is; bodies past a few
                // KiB are cut at one place only, to keep the case quick.
                let bytewise = if body.len() <= 4096 {
                    parse(format, &body, &(0..body.len()).collect::<Vec<_>>())
                } else {
                    parse(format, &body, &[one.index(body.len() + 1)])
                };
                (whole, pieces, bytewise)
            })?;
            // The same recipients, or an error on the same line. (The text
            // of an over-long record's error depends on whether its end had
            // arrived: "longer than N bytes" or "... without a line end".)
            let short = |r: &Result<Vec<String>, LineError>| r.clone().map_err(|e| e.line);
            prop_assert_eq!(short(&whole), short(&pieces), "{}", cut(&what));
            prop_assert_eq!(short(&whole), short(&bytewise), "{}", cut(&what));
            if let Ok(recipients) = &whole {
                for r in recipients {
                    prop_assert!(
                        !r.is_empty() && !r.chars().any(char::is_control),
                        "{:?} accepted from {}",
                        r,
                        cut(&what)
                    );
                }
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{}", cut(&e.to_string())));
}

/// A failure report short enough to read.
fn cut(s: &str) -> String {
    if s.len() <= 2000 {
        return s.to_string();
    }
    let mut end = 2000;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...(+{} bytes)", &s[..end], s.len() - end)
}

#[test]
fn an_endless_record_is_refused_without_being_held_whole() {
    // Fed 1 MiB without a line end, the parser refuses as soon as it passes
    // the record limit, whatever the format.
    for format in [Format::Ndjson, Format::Csv] {
        let mut p = Parser::new(format);
        let mut out = Vec::new();
        let chunk = vec![b'"'; 8192];
        let mut fed = 0;
        let err = loop {
            match p.push(&chunk, &mut out) {
                Ok(()) => fed += chunk.len(),
                Err(e) => break e,
            }
            assert!(fed < 1 << 20, "{format:?}: 1 MiB taken without a line end");
        };
        assert!(
            fed <= MAX_RECORD_BYTES,
            "{format:?}: refused only after {fed} bytes"
        );
        assert_eq!(err.line, 1, "{format:?}: {err:?}");
    }
}
