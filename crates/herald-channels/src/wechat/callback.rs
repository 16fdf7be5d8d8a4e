//! WeChat's delivery report: the `TEMPLATESENDJOBFINISH` event XML posted to
//! the account's server URL once a template message reached the user or not.

use quick_xml::events::Event;

use crate::{CallbackError, CallbackEvent, FinalStatus};

/// Longest msgid taken; WeChat's are numbers of about ten digits.
const MAX_MSGID: usize = 64;

/// Reads the event XML. Tag names as WeChat sends them (`MsgID`; `MsgId` is
/// accepted too), values in CDATA or plain text.
pub(super) fn parse_template_event(body: &[u8]) -> Result<CallbackEvent, CallbackError> {
    let body = std::str::from_utf8(body).map_err(|_| invalid("body is not UTF-8"))?;
    let mut reader = quick_xml::Reader::from_str(body);
    let mut current: Option<String> = None;
    let mut fields = Fields::default();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                current = Some(String::from_utf8_lossy(e.name().as_ref()).into_owned());
            }
            Ok(Event::End(_)) => current = None,
            Ok(Event::Text(t)) => fields.set(&current, &t),
            Ok(Event::CData(c)) => fields.set(&current, &c),
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => return Err(invalid(&format!("body: not well-formed XML: {e}"))),
        }
    }
    match fields.event.as_deref() {
        Some(e) if e.eq_ignore_ascii_case("TEMPLATESENDJOBFINISH") => {}
        Some(e) => {
            return Err(invalid(&format!(
                "Event: {e:?} is not TEMPLATESENDJOBFINISH"
            )));
        }
        None => return Err(invalid("Event: missing")),
    }
    let provider_msgid = fields
        .msgid
        .filter(|m| !m.is_empty() && m.len() <= MAX_MSGID)
        .ok_or_else(|| invalid("MsgID: missing or empty"))?;
    let status = fields.status.ok_or_else(|| invalid("Status: missing"))?;
    let status = final_status(&status)
        .ok_or_else(|| invalid(&format!("Status: {status:?} is not a known outcome")))?;
    Ok(CallbackEvent {
        provider_msgid,
        status,
    })
}

/// The `<Encrypt>` text of a safe-mode callback
/// (`<xml><ToUserName>..</ToUserName><Encrypt>..</Encrypt></xml>`).
pub(super) fn encrypted_part(body: &[u8]) -> Result<String, CallbackError> {
    let body = std::str::from_utf8(body).map_err(|_| invalid("body is not UTF-8"))?;
    let mut reader = quick_xml::Reader::from_str(body);
    let mut in_encrypt = false;
    let mut found: Option<String> = None;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => in_encrypt = e.name().as_ref() == b"Encrypt",
            Ok(Event::End(_)) => in_encrypt = false,
            Ok(Event::Text(t)) if in_encrypt => {
                found
                    .get_or_insert_with(String::new)
                    .push_str(&String::from_utf8_lossy(&t));
            }
            Ok(Event::CData(c)) if in_encrypt => {
                found
                    .get_or_insert_with(String::new)
                    .push_str(&String::from_utf8_lossy(&c));
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => return Err(invalid(&format!("body: not well-formed XML: {e}"))),
        }
    }
    found
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid("Encrypt: missing or empty"))
}

fn invalid(message: &str) -> CallbackError {
    CallbackError::Invalid(message.to_string())
}

/// The tags of the event that matter.
#[derive(Default)]
struct Fields {
    event: Option<String>,
    msgid: Option<String>,
    status: Option<String>,
}

impl Fields {
    fn set(&mut self, tag: &Option<String>, raw: &[u8]) {
        let v = String::from_utf8_lossy(raw).trim().to_string();
        match tag.as_deref() {
            Some("Event") => self.event = Some(v),
            Some("MsgID") | Some("MsgId") => self.msgid = Some(v),
            Some("Status") => self.status = Some(v),
            _ => {}
        }
    }
}

/// WeChat spells the failures `failed:user block` and `failed: system failed`,
/// and SDK samples vary the spacing; compare without spaces or case.
fn final_status(raw: &str) -> Option<FinalStatus> {
    let squashed: String = raw
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    match squashed.as_str() {
        "success" => Some(FinalStatus::Success),
        "failed:userblock" => Some(FinalStatus::UserBlock),
        "failed:systemfailed" => Some(FinalStatus::SystemFailed),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(xml: &str) -> Result<CallbackEvent, CallbackError> {
        parse_template_event(xml.as_bytes())
    }

    #[test]
    fn parses_the_template_event_in_its_spellings() {
        let xml = "<xml><ToUserName><![CDATA[gh_7f083739789a]]></ToUserName>\
            <FromUserName><![CDATA[oia2TjuEGTNoeX76QEjQNrcURxG8]]></FromUserName>\
            <CreateTime>1395658920</CreateTime><MsgType><![CDATA[event]]></MsgType>\
            <Event><![CDATA[TEMPLATESENDJOBFINISH]]></Event><MsgID>200163836</MsgID>\
            <Status><![CDATA[success]]></Status></xml>";
        assert_eq!(
            parse(xml),
            Ok(CallbackEvent {
                provider_msgid: "200163836".into(),
                status: FinalStatus::Success,
            })
        );
        let block = xml.replace("[success]", "[failed:user block]");
        assert_eq!(parse(&block).unwrap().status, FinalStatus::UserBlock);
        let block = xml.replace("[success]", "[failed: user block]");
        assert_eq!(parse(&block).unwrap().status, FinalStatus::UserBlock);
        let sys = xml
            .replace("[success]", "[failed: system failed]")
            .replace("MsgID", "MsgId");
        let ev = parse(&sys).unwrap();
        assert_eq!(
            (ev.provider_msgid.as_str(), ev.status.as_str()),
            ("200163836", "system_failed")
        );
    }

    #[test]
    fn rejects_other_events_and_garbage() {
        assert!(parse("<xml><Event>subscribe</Event></xml>").is_err());
        assert!(parse("<xml><Event>TEMPLATESENDJOBFINISH</Event></xml>").is_err());
        assert!(parse("<xml><Event>TEMPLATESENDJOBFINISH</Event><MsgID>1</MsgID><Status>maybe</Status></xml>").is_err());
        assert!(parse("not xml <<").is_err());
        assert!(parse("").is_err());
        assert_eq!(
            parse_template_event(&[0xff, 0xfe]),
            Err(CallbackError::Invalid("body is not UTF-8".into()))
        );
    }

    #[test]
    fn finds_the_encrypted_part() {
        let xml = "<xml><ToUserName><![CDATA[gh_1]]></ToUserName><Encrypt><![CDATA[abc+/=]]></Encrypt></xml>";
        assert_eq!(encrypted_part(xml.as_bytes()).unwrap(), "abc+/=");
        assert!(encrypted_part(b"<xml><Encrypt></Encrypt></xml>").is_err());
        assert!(encrypted_part(b"<xml><ToUserName>x</ToUserName></xml>").is_err());
        assert!(encrypted_part(b"<<").is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Whatever arrives, the readers answer (an error at worst).
        #[test]
        fn readers_never_panic(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
            let _ = parse_template_event(&body);
            let _ = encrypted_part(&body);
        }

        #[test]
        fn readers_never_panic_on_near_xml(
            tag in "(Event|MsgID|Status|Encrypt|xml|ToUserName)",
            text in "[ -~]{0,64}",
            cdata in proptest::prelude::any::<bool>(),
        ) {
            let inner = if cdata { format!("<![CDATA[{text}]]>") } else { text };
            let xml = format!("<xml><{tag}>{inner}</{tag}><Event>TEMPLATESENDJOBFINISH</Event></xml>");
            let _ = parse_template_event(xml.as_bytes());
            let _ = encrypted_part(xml.as_bytes());
        }
    }
}
