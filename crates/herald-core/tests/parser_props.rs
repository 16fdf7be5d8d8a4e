//! Property tests for the parsers of `herald-core` that read what callers
//! send: RFC 3339 instants, and rule schedules (cron patterns in IANA zones,
//! with exclude dates and bounds). Any input gives an answer, never a panic,
//! and in bounded time: each case runs under a watchdog that fails the test
//! (instead of hanging it) if one input takes far longer than it should.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use herald_core::schedule::{Schedule, ScheduleSpec};
use herald_core::time::{format_rfc3339_ms, parse_rfc3339_ms};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// Generous: only a hang (or something close to one) takes this long.
const WATCHDOG: Duration = Duration::from_secs(20);
const SEED: [u8; 32] = *b"herald-issue-14-parser-props-v1!";

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

fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED))
}

/// Text shaped like an RFC 3339 instant, every part possibly out of range.
fn rfc3339_like() -> impl Strategy<Value = String> {
    let num = |lo: i64, hi: i64, width: usize| (lo..hi).prop_map(move |n| format!("{n:0width$}"));
    let offset = prop_oneof![
        Just("Z".to_string()),
        Just("z".to_string()),
        Just(String::new()),
        Just("-00:00".to_string()),
        Just("+24:00".to_string()),
        ("[+-]", num(0, 30, 2), num(0, 70, 2)).prop_map(|(s, h, m)| format!("{s}{h}:{m}")),
        ("[+-]", num(0, 9999, 4)).prop_map(|(s, hm)| format!("{s}{hm}")),
    ];
    let fraction = prop_oneof![
        Just(String::new()),
        "\\.[0-9]{0,40}".prop_map(String::from),
        (1usize..5000).prop_map(|n| format!(".{}", "9".repeat(n))),
    ];
    (
        prop_oneof![num(0, 10_000, 4), num(-99_999, 999_999, 6), "[+-][0-9]{6}"],
        num(0, 14, 2),
        num(0, 33, 2),
        "[Tt ]",
        num(0, 26, 2),
        num(0, 62, 2),
        num(0, 62, 2),
        fraction,
        offset,
    )
        .prop_map(|(y, mo, d, t, h, mi, s, f, o)| format!("{y}-{mo}-{d}{t}{h}:{mi}:{s}{f}{o}"))
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => rfc3339_like(),
        2 => any::<String>(),
        1 => "[0-9:TZ+.-]{0,40}",
        1 => (rfc3339_like(), any::<prop::sample::Index>(), any::<char>()).prop_map(|(s, i, c)| {
            let mut chars: Vec<char> = s.chars().collect();
            let at = i.index(chars.len() + 1);
            chars.insert(at, c);
            chars.into_iter().collect()
        }),
    ]
}

#[test]
fn rfc3339_parsing_never_panics_and_round_trips() {
    runner(2000)
        .run(&any_text(), |s| {
            let input = s.clone();
            let parsed = within(format!("{s:?}"), move || parse_rfc3339_ms(&input))?;
            if let Ok(ms) = parsed {
                // What was accepted formats and reads back to the same instant.
                let again = format_rfc3339_ms(ms);
                prop_assert_eq!(parse_rfc3339_ms(&again), Ok(ms), "{:?} -> {}", s, again);
            }
            Ok(())
        })
        .unwrap();
}

/// One cron field: the shapes croner knows, plus out-of-range numbers and
/// junk.
fn cron_field() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        Just("*".to_string()),
        Just("?".to_string()),
        Just("L".to_string()),
        (0u32..70).prop_map(|n| n.to_string()),
        (0u32..70, 0u32..70).prop_map(|(a, b)| format!("{a}-{b}")),
        (0u32..70).prop_map(|n| format!("*/{n}")),
        (0u32..70, 0u32..70, 0u32..70).prop_map(|(a, b, s)| format!("{a}-{b}/{s}")),
        (0u32..9, 0u32..7).prop_map(|(d, n)| format!("{d}#{n}")),
        (0u32..40).prop_map(|n| format!("{n}W")),
        (0u32..9).prop_map(|n| format!("{n}L")),
        prop::sample::select(vec![
            "MON", "sun", "JAN", "dec", "MON-FRI", "LW", "L-3", "FOO"
        ])
        .prop_map(String::from),
        "[0-9*/,#LW?-]{1,8}",
        "99999999999999999999",
        "-1",
    ];
    prop::collection::vec(atom, 1..4).prop_map(|a| a.join(","))
}

/// A field croner should take: in range for its position (croner refuses
/// `*` inside a list).
fn plausible_field(lo: u32, hi: u32) -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        2 => (lo..=hi).prop_map(|n| n.to_string()),
        1 => (lo..=hi, lo..=hi).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        1 => (1..=hi.max(1)).prop_map(|n| format!("*/{n}")),
    ];
    prop_oneof![
        1 => Just("*".to_string()),
        1 => prop::collection::vec(atom, 1..3).prop_map(|a| a.join(",")),
    ]
}

fn plausible_pattern() -> impl Strategy<Value = String> {
    (
        prop::option::of(plausible_field(0, 59)),
        plausible_field(0, 59),
        plausible_field(0, 23),
        plausible_field(1, 31),
        plausible_field(1, 12),
        plausible_field(0, 7),
    )
        .prop_map(|(s, mi, h, d, mo, w)| {
            let five = format!("{mi} {h} {d} {mo} {w}");
            match s {
                Some(s) => format!("{s} {five}"),
                None => five,
            }
        })
}

fn cron_pattern() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => plausible_pattern(),
        4 => (prop::collection::vec(cron_field(), 4..8), prop::sample::select(vec![" ", "  ", "\t"]))
            .prop_map(|(f, sep)| f.join(sep)),
        1 => prop::sample::select(vec!["@daily", "@yearly", "@every 1s", "", " ", "* * * * * * * *"])
            .prop_map(String::from),
        1 => any::<String>(),
        1 => (1usize..2000).prop_map(|n| vec!["1"; n].join(",") + " * * * *"),
    ]
}

fn timezone() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec![
            "UTC",
            "Asia/Shanghai",
            "America/New_York",
            "Europe/London",
            "Australia/Lord_Howe",
            "Pacific/Chatham",
            "Pacific/Apia",
            "America/St_Johns",
            "Asia/Kathmandu",
            "Antarctica/Troll",
            "Etc/GMT+12",
            "Etc/GMT-14",
        ])
        .prop_map(String::from),
        1 => prop::sample::select(vec!["", "utc", "Not/AZone", "../../etc/passwd", "Asia/Shanghai\0", "+08:00"])
            .prop_map(String::from),
        1 => any::<String>(),
    ]
}

fn schedule_spec() -> impl Strategy<Value = ScheduleSpec> {
    let date = prop_oneof![
        6 => (1990i32..2100, 1u32..13, 1u32..32).prop_map(|(y, m, d)| format!("{y:04}-{m:02}-{d:02}")),
        1 => "[0-9-]{0,12}",
        1 => any::<String>(),
    ];
    let bound = prop_oneof![
        4 => Just(None),
        2 => (0i64..4_102_444_800_000).prop_map(|ms| Some(format_rfc3339_ms(ms))),
        1 => rfc3339_like().prop_map(Some),
        1 => any::<String>().prop_map(Some),
    ];
    prop_oneof![
        1 => Just(ScheduleSpec::Immediate),
        1 => any_text().prop_map(|at| ScheduleSpec::At { at }),
        8 => (
            cron_pattern(),
            timezone(),
            prop::collection::vec(date, 0..4),
            bound.clone(),
            bound,
        )
            .prop_map(|(cron, timezone, exclude_dates, start_at, end_at)| ScheduleSpec::Cron {
                cron,
                timezone,
                exclude_dates,
                start_at,
                end_at,
                calendar: None,
                days: None,
            }),
    ]
}

/// Instants to ask "what comes next?" from: the edges of `i64`, the epoch,
/// now-ish and around daylight saving transitions.
fn after_ms() -> impl Strategy<Value = i64> {
    prop_oneof![
        prop::sample::select(vec![
            i64::MIN,
            i64::MIN + 1,
            -1,
            0,
            1_773_000_000_000,   // 2026-03-08, New York springs forward
            1_793_500_000_000,   // 2026-11-01, New York falls back
            253_402_300_799_000, // 9999-12-31T23:59:59Z
            i64::MAX - 1,
            i64::MAX,
        ]),
        -62_000_000_000_000i64..300_000_000_000_000,
        // 1970 to 2100, where rules live.
        0i64..4_102_444_800_000,
        0i64..4_102_444_800_000,
    ]
}

#[test]
fn schedules_compile_and_answer_next_without_panics_or_hangs() {
    let fired = Arc::new(AtomicUsize::new(0));
    let strategy = (schedule_spec(), after_ms(), after_ms());
    runner(1500)
        .run(&strategy, |(spec, created, after)| {
            let what = format!("{spec:?}, created {created}, after {after}");
            let fired = fired.clone();
            let chain = within(what.clone(), move || {
                let Ok(schedule) = Schedule::compile(&spec) else {
                    return Ok(());
                };
                // A few occurrences in a row: each strictly after the one before.
                let mut from = after;
                for _ in 0..4 {
                    match schedule.next_after(created, from) {
                        Some(at) if at <= from => {
                            return Err(format!("next_after({from}) = {at}, not after it"));
                        }
                        Some(at) => {
                            fired.fetch_add(1, Ordering::Relaxed);
                            from = at;
                        }
                        None => break,
                    }
                }
                Ok(())
            })?;
            prop_assert!(chain.is_ok(), "{}: {:?}", what, chain);
            Ok(())
        })
        .unwrap();
    // The generator reaches the walk, not only the refusals.
    let fired = fired.load(Ordering::Relaxed);
    eprintln!("{fired} occurrences computed");
    assert!(fired > 200, "only {fired} occurrences computed");
}

#[test]
fn cron_patterns_that_never_fire_answer_none_in_bounded_time() {
    // The walk gives up at the search horizon, whatever the pattern.
    for (cron, tz) in [
        ("0 0 30 2 *", "UTC"),
        ("0 0 31 4,6,9,11 *", "Asia/Shanghai"),
        ("* * * 30 2 *", "America/New_York"),
        ("30 2 31 2 *", "America/New_York"),
    ] {
        let spec = ScheduleSpec::Cron {
            cron: cron.into(),
            timezone: tz.into(),
            exclude_dates: Vec::new(),
            start_at: None,
            end_at: None,
            calendar: None,
            days: None,
        };
        let got = within(cron.to_string(), move || {
            Schedule::compile(&spec).map(|s| s.next_after(0, 1_773_000_000_000))
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got, Ok(None), "{cron} in {tz}");
    }
}
