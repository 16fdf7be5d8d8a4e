//! Channel routes: each channel's state (`GET /v1/channels`), provider
//! callbacks that report a delivery's final fate, and recall.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald_channels::RecallError;
use serde::Serialize;

use crate::error::ApiError;
use crate::error::store_err;
use crate::rate::RateSampler;
use crate::request::{action as split_action, parse_id};
use crate::state::AppState;

/// Largest callback body taken; WeChat's events are a few hundred bytes.
pub const CALLBACK_MAX_BYTES: usize = 64 * 1024;
/// Looks for a callback's delivery this many times...
const CALLBACK_TRIES: u32 = 20;
/// ...this far apart (WeChat waits 5 s for an answer).
const CALLBACK_RETRY_MS: u64 = 200;

#[derive(Serialize)]
struct ChannelJson {
    #[serde(flatten)]
    status: herald_engine::ChannelStatus,
    /// Provider answers per second over the last ~10 s on this node.
    current_rate: f64,
}

/// `GET /v1/channels`: every channel's token, pause, quiet hours, rate and
/// outcome counts on this node. No secret is part of any of it.
pub async fn list(
    State(st): State<AppState>,
    Extension(rates): Extension<Arc<RateSampler<String>>>,
) -> Response {
    let now = st.clock.now_ms();
    let channels: Vec<ChannelJson> = st
        .engine
        .channel_statuses()
        .await
        .into_iter()
        .map(|status| {
            let current_rate =
                rates.observe(status.name.clone(), now, status.outcomes.sends(), None);
            ChannelJson {
                status,
                current_rate,
            }
        })
        .collect();
    axum::Json(serde_json::json!({ "channels": channels })).into_response()
}

/// What a WeChat `TEMPLATESENDJOBFINISH` event says.
#[derive(Debug, PartialEq)]
struct TemplateEvent {
    msgid: String,
    status: &'static str,
}

/// Reads the event XML. Tag names as WeChat sends them (`MsgID`; `MsgId` is
/// accepted too), values in CDATA or plain text.
fn parse_template_event(body: &str) -> Result<TemplateEvent, String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(body);
    let mut current: Option<String> = None;
    let (mut event, mut msgid, mut status) = (None, None, None);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                current = Some(String::from_utf8_lossy(e.name().as_ref()).into_owned());
            }
            Ok(Event::End(_)) => current = None,
            Ok(Event::Text(t)) => {
                let v = String::from_utf8_lossy(t.as_ref()).trim().to_string();
                assign(&current, v, &mut event, &mut msgid, &mut status);
            }
            Ok(Event::CData(c)) => {
                let v = String::from_utf8_lossy(c.as_ref()).trim().to_string();
                assign(&current, v, &mut event, &mut msgid, &mut status);
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("body: not well-formed XML: {e}")),
        }
    }
    match event.as_deref() {
        Some(e) if e.eq_ignore_ascii_case("TEMPLATESENDJOBFINISH") => {}
        Some(e) => return Err(format!("Event: {e:?} is not TEMPLATESENDJOBFINISH")),
        None => return Err("Event: missing".into()),
    }
    let msgid = msgid
        .filter(|m| !m.is_empty() && m.len() <= 64)
        .ok_or("MsgID: missing or empty")?;
    let status = status.ok_or("Status: missing")?;
    Ok(TemplateEvent {
        msgid,
        status: final_status(&status)
            .ok_or_else(|| format!("Status: {status:?} is not a known outcome"))?,
    })
}

fn assign(
    tag: &Option<String>,
    v: String,
    event: &mut Option<String>,
    msgid: &mut Option<String>,
    status: &mut Option<String>,
) {
    match tag.as_deref() {
        Some("Event") => *event = Some(v),
        Some("MsgID") | Some("MsgId") => *msgid = Some(v),
        Some("Status") => *status = Some(v),
        _ => {}
    }
}

/// WeChat spells the failures `failed:user block` and `failed: system failed`,
/// and SDK samples vary the spacing; compare without spaces or case.
fn final_status(raw: &str) -> Option<&'static str> {
    let squashed: String = raw
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    match squashed.as_str() {
        "success" => Some("success"),
        "failed:userblock" => Some("user_block"),
        "failed:systemfailed" => Some("system_failed"),
        _ => None,
    }
}

/// `POST /v1/channels/{name}/callback`: a provider's event about a delivery.
/// For `wechat` channels this is the `TEMPLATESENDJOBFINISH` XML; the
/// delivery with that msgid gets its final status. Answers `success`, as
/// WeChat expects, once the status is committed.
pub async fn callback(
    State(st): State<AppState>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let Some(kind) = st.engine.channel_kind(&name) else {
        return Err(ApiError::not_found("channel"));
    };
    if kind != herald_channels::ChannelKind::Wechat {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "unsupported",
            format!("channel {name:?} ({}) takes no callbacks", kind.as_str()),
        ));
    }
    if body.len() > CALLBACK_MAX_BYTES {
        return Err(ApiError::too_large(CALLBACK_MAX_BYTES));
    }
    let text = std::str::from_utf8(&body)
        .map_err(|_| ApiError::field("body", "invalid_body", "body is not UTF-8"))?;
    let ev = parse_template_event(text).map_err(|m| ApiError::field("body", "invalid_body", m))?;
    // The provider can call back before this node has written the send-log
    // row of the delivery (outcomes are recorded in batches just after the
    // answer), so a msgid not found yet is looked for again for a few seconds.
    let mut updated = 0;
    for round in 0..CALLBACK_TRIES {
        updated = st
            .engine
            .store()
            .record_final_status(&name, &ev.msgid, ev.status, st.clock.now_ms())
            .await
            .map_err(store_err)?;
        if updated > 0 || round + 1 == CALLBACK_TRIES {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(CALLBACK_RETRY_MS)).await;
    }
    if updated == 0 {
        tracing::warn!(channel = %name, msgid = %ev.msgid, status = ev.status, "delivery callback for a message this deployment has no record of");
    }
    tracing::info!(channel = %name, msgid = %ev.msgid, status = ev.status, updated, "delivery callback");
    Ok(([(header::CONTENT_TYPE, "text/plain")], "success").into_response())
}

/// `POST /v1/deliveries/{id}:recall`: takes a delivered message back through
/// its channel (WeCom, within 24 h of the send).
pub async fn action(
    State(st): State<AppState>,
    Path(segment): Path<String>,
) -> Result<Response, ApiError> {
    let (raw_id, _recall) = split_action(&segment, "deliveries", "delivery", &["recall"])?;
    let id = parse_id(raw_id, "delivery")?;
    let store = st.engine.store();
    let d = store
        .get_delivery(id)
        .await?
        .ok_or_else(|| ApiError::not_found("delivery"))?;
    if d.final_status.as_deref() == Some(herald_store::FINAL_RECALLED) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "already_recalled",
            format!("delivery {id} was already recalled"),
        ));
    }
    let msgid = match (&d.outcome[..], &d.provider_msgid) {
        ("delivered", Some(m)) => m.clone(),
        _ => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "not_recallable",
                format!(
                    "delivery {id} is {:?} with no provider message id; only delivered messages can be recalled",
                    d.outcome
                ),
            ));
        }
    };
    match st.engine.recall(&d.channel, &msgid, d.finished_at).await {
        None => Err(ApiError::new(
            StatusCode::CONFLICT,
            "channel_unknown",
            format!("channel {:?} is not configured on this node", d.channel),
        )),
        Some(Err(RecallError::TooOld { window_hours })) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "recall_window_passed",
            format!(
                "delivery {id} was sent more than {window_hours} h ago; the provider only recalls messages younger than that"
            ),
        )),
        Some(Err(RecallError::Unsupported(_))) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "recall_unsupported",
            format!("channel {:?} cannot recall messages", d.channel),
        )),
        Some(Err(RecallError::Provider(m))) => Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            "provider_error",
            format!("the provider refused the recall: {m}"),
        )),
        Some(Ok(())) => {
            let now = st.clock.now_ms();
            store.mark_delivery_recalled(id, now).await?;
            Ok(axum::Json(serde_json::json!({
                "id": id,
                "channel": d.channel,
                "provider_msgid": msgid,
                "final_status": herald_store::FINAL_RECALLED,
                "recalled_at": now,
            }))
            .into_response())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_template_event_in_its_spellings() {
        let xml = "<xml><ToUserName><![CDATA[gh_7f083739789a]]></ToUserName>\
            <FromUserName><![CDATA[oia2TjuEGTNoeX76QEjQNrcURxG8]]></FromUserName>\
            <CreateTime>1395658920</CreateTime><MsgType><![CDATA[event]]></MsgType>\
            <Event><![CDATA[TEMPLATESENDJOBFINISH]]></Event><MsgID>200163836</MsgID>\
            <Status><![CDATA[success]]></Status></xml>";
        assert_eq!(
            parse_template_event(xml),
            Ok(TemplateEvent {
                msgid: "200163836".into(),
                status: "success"
            })
        );
        let block = xml.replace("[success]", "[failed:user block]");
        assert_eq!(parse_template_event(&block).unwrap().status, "user_block");
        let block = xml.replace("[success]", "[failed: user block]");
        assert_eq!(parse_template_event(&block).unwrap().status, "user_block");
        let sys = xml
            .replace("[success]", "[failed: system failed]")
            .replace("MsgID", "MsgId");
        let ev = parse_template_event(&sys).unwrap();
        assert_eq!(
            (ev.msgid.as_str(), ev.status),
            ("200163836", "system_failed")
        );
    }

    #[test]
    fn rejects_other_events_and_garbage() {
        assert!(parse_template_event("<xml><Event>subscribe</Event></xml>").is_err());
        assert!(parse_template_event("<xml><Event>TEMPLATESENDJOBFINISH</Event></xml>").is_err());
        assert!(parse_template_event("<xml><Event>TEMPLATESENDJOBFINISH</Event><MsgID>1</MsgID><Status>maybe</Status></xml>").is_err());
        assert!(parse_template_event("not xml <<").is_err());
        assert!(parse_template_event("").is_err());
    }
}
