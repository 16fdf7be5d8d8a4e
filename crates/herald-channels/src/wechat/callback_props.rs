//! Property tests for the callback XML reader: whatever is posted to the
//! callback route, [`parse_template_event`] answers (never panics) in bounded
//! time, and what it accepts is a well-formed event.

use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

use super::callback::parse_template_event;
use crate::{CallbackError, CallbackEvent};

/// Generous: only a hang (or something close to one) takes this long.
const WATCHDOG: Duration = Duration::from_secs(20);
const SEED: [u8; 32] = *b"herald-issue-14-callback-xml-v1!";

const EVENT: &str = "<xml><ToUserName><![CDATA[gh_7f083739789a]]></ToUserName>\
    <FromUserName><![CDATA[oia2TjuEGTNoeX76QEjQNrcURxG8]]></FromUserName>\
    <CreateTime>1395658920</CreateTime><MsgType><![CDATA[event]]></MsgType>\
    <Event><![CDATA[TEMPLATESENDJOBFINISH]]></Event><MsgID>200163836</MsgID>\
    <Status><![CDATA[success]]></Status></xml>";

fn parse_within(body: Vec<u8>) -> Result<Result<CallbackEvent, CallbackError>, TestCaseError> {
    let mut what = body.escape_ascii().to_string();
    if what.len() > 2000 {
        what.truncate(2000);
        what.push_str("...");
    }
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let out = std::panic::catch_unwind(|| parse_template_event(&body));
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

/// What to splice into a valid event: markup that breaks or bends it.
fn splice() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => prop::sample::select(vec![
            &b"<"[..], b">", b"</", b"/>", b"&", b"&amp;", b"&lt;", b"&#0;", b"&#x110000;",
            b"&#xD800;", b"&nope;", b"<![CDATA[", b"]]>", b"<!--", b"-->", b"<?xml version=\"1.0\"?>",
            b"<?xml version=\"1.0\" encoding=\"GBK\"?>",
            b"<!DOCTYPE xml [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;\">]>", b"&b;",
            b"<Event>subscribe</Event>", b"<MsgID></MsgID>", b"<MsgId>1</MsgId>",
            b"<Status>failed: system failed</Status>", b"\0", b"\xff", b"\xc3", b"\xEF\xBB\xBF",
            b"\r\n", b" ", b"xmlns:a=\"b\"", b"<a:b>", b"</a:b>",
        ])
        .prop_map(<[u8]>::to_vec),
        1 => prop::collection::vec(any::<u8>(), 0..16),
        1 => any::<String>().prop_map(String::into_bytes),
        1 => (1usize..5000).prop_map(|d| ["<a>".repeat(d), "</a>".repeat(d)].concat().into_bytes()),
        1 => (1usize..5000).prop_map(|d| "<a>".repeat(d).into_bytes()),
        1 => (60usize..200).prop_map(|n| format!("<MsgID>{}</MsgID>", "9".repeat(n)).into_bytes()),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::collection::vec((any::<Index>(), splice()), 0..5).prop_map(|edits| {
            let mut b = EVENT.as_bytes().to_vec();
            for (at, s) in edits {
                let at = at.index(b.len() + 1);
                b.splice(at..at, s);
            }
            b
        }),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(from, to)| {
            let b = EVENT.as_bytes();
            let (a, z) = (from.index(b.len() + 1), to.index(b.len() + 1));
            b[a.min(z)..a.max(z)].to_vec()
        }),
        1 => prop::collection::vec(any::<u8>(), 0..256),
    ]
}

#[test]
fn callback_xml_never_panics_and_accepts_only_whole_events() {
    let config = Config {
        cases: 3000,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED));
    runner
        .run(&body(), |body| {
            if let Ok(ev) = parse_within(body.clone())? {
                prop_assert!(
                    !ev.provider_msgid.is_empty() && ev.provider_msgid.len() <= 64,
                    "{:?} from {:.2000}",
                    ev,
                    body.escape_ascii().to_string()
                );
            }
            Ok(())
        })
        .unwrap_or_else(|e| {
            let mut e = e.to_string();
            e.truncate(e.floor_char_boundary(4000));
            panic!("{e}")
        });
}

#[test]
fn the_unedited_event_parses() {
    assert!(parse_template_event(EVENT.as_bytes()).is_ok());
}
