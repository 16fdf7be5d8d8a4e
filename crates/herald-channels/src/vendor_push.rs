//! What the China vendor push channels (`xiaomi_push`, `honor_push`,
//! `oppo_push`, `vivo_push`) share: reading Herald's `app` message (FCM's
//! shape), cutting a batch of deliveries into provider calls, and the
//! outcome for a device token the vendor no longer knows.
//!
//! Why one `app` shape for every vendor: a subscriber's `app` addresses are
//! device tokens and a reminder template has one `app` part, so each
//! vendor channel maps the same message onto its own fields and refuses at
//! the door (in `shape`) what its vendor would refuse, such as a title too
//! long for Xiaomi or vivo.

use serde_json::{Map, Value};

use crate::provider_http::ProviderHttp;
use crate::token_cache::{FetchedToken, TokenError};
use crate::{Delivery, SendOutcome};

/// The fields of an `app` message a vendor push carries.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct AppPush {
    /// `notification.title`; `None` for a data-only (pass-through) message.
    pub title: Option<String>,
    /// `notification.body`.
    pub body: Option<String>,
    /// `data`, as the JSON text of its object.
    pub data: Option<String>,
    /// `android.notification.click_action`: an intent action a tap starts.
    pub click_action: Option<String>,
    /// `android.ttl` in seconds.
    pub ttl_secs: Option<u64>,
}

impl AppPush {
    /// Reads a message that passed `shape::check` for the kind.
    pub(crate) fn read(m: &Map<String, Value>) -> AppPush {
        let note = m.get("notification").and_then(Value::as_object);
        let text = |k: &str| {
            note.and_then(|n| n.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let android = m.get("android").and_then(Value::as_object);
        AppPush {
            title: text("title"),
            body: text("body"),
            data: m.get("data").map(Value::to_string),
            click_action: android
                .and_then(|a| a.get("notification"))
                .and_then(|n| n.get("click_action"))
                .and_then(Value::as_str)
                .map(str::to_string),
            ttl_secs: android
                .and_then(|a| a.get("ttl"))
                .and_then(Value::as_str)
                .and_then(ttl_secs),
        }
    }

    /// The Android intent URI (`Intent.toUri` form) that starts the click
    /// action, for vendors that take a URI rather than an action.
    pub(crate) fn intent_uri(&self) -> Option<String> {
        self.click_action
            .as_ref()
            .map(|a| format!("intent:#Intent;action={a};end"))
    }

    /// A stable 31-bit number for this message, for vendors that show only
    /// one notification per id (Xiaomi's `notify_id`, OPPO's and vivo's
    /// notify ids): different messages must not replace each other, while
    /// the same message sent twice replaces itself.
    pub(crate) fn notify_id(&self) -> u32 {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        for part in [&self.title, &self.body, &self.data] {
            h.update(part.as_deref().unwrap_or("").as_bytes());
            h.update([0]);
        }
        let d = h.finalize();
        u32::from_be_bytes([d[0], d[1], d[2], d[3]]) & 0x7fff_ffff
    }
}

/// FCM's `ttl` (`"3600s"`, `"3.5s"`) in whole seconds.
pub(crate) fn ttl_secs(ttl: &str) -> Option<u64> {
    let n: f64 = ttl.strip_suffix('s')?.trim().parse().ok()?;
    (n.is_finite() && n >= 0.0).then(|| n.round() as u64)
}

/// The outcome for a device the vendor no longer knows. `UNREGISTERED` is
/// the word the engine prunes device tokens on.
pub(crate) fn unregistered(vendor: &str, code: &str) -> SendOutcome {
    SendOutcome::Permanent {
        error: format!("the device token is invalid (UNREGISTERED): {vendor} code {code}"),
        status: code.parse().ok(),
    }
}

/// What one call's answer means for its devices.
pub(crate) enum Verdict {
    /// The same for every device.
    All(SendOutcome),
    /// Delivered, except the tokens the vendor named as unknown.
    Partial {
        delivered: SendOutcome,
        invalid: Vec<String>,
        code: String,
    },
}

impl Verdict {
    /// One outcome per token of the call, in order.
    pub(crate) fn spread(self, vendor: &str, tokens: &[&str]) -> Vec<SendOutcome> {
        match self {
            Verdict::All(o) => vec![o; tokens.len()],
            Verdict::Partial {
                delivered,
                invalid,
                code,
            } => tokens
                .iter()
                .map(|t| {
                    if invalid.iter().any(|i| i == t) {
                        unregistered(vendor, &code)
                    } else {
                        delivered.clone()
                    }
                })
                .collect(),
        }
    }
}

/// Deliveries cut into provider calls: those with the same message text
/// share calls of up to `max_batch` devices; a delivery without a
/// recipient, or whose message `prepare` refuses, gets its outcome at once.
pub(crate) struct Calls<'a, M> {
    pub outcomes: Vec<Option<SendOutcome>>,
    /// (prepared message, indexes into the deliveries).
    pub calls: Vec<(M, Vec<usize>)>,
    texts: Vec<&'a str>,
}

impl<'a, M> Calls<'a, M> {
    pub(crate) fn plan(
        deliveries: &'a [Delivery],
        max_batch: usize,
        mut prepare: impl FnMut(&Delivery) -> Result<M, String>,
    ) -> Calls<'a, M> {
        let mut plan = Calls {
            outcomes: vec![None; deliveries.len()],
            calls: Vec::new(),
            texts: Vec::new(),
        };
        for (i, d) in deliveries.iter().enumerate() {
            if d.recipient.trim().is_empty() {
                plan.outcomes[i] = Some(SendOutcome::Permanent {
                    error: "the recipient (a device token) is empty".into(),
                    status: None,
                });
                continue;
            }
            let open = plan
                .texts
                .iter()
                .zip(plan.calls.iter_mut())
                .rfind(|(m, (_, ix))| **m == d.message && ix.len() < max_batch.max(1));
            match open {
                Some((_, (_, ix))) => ix.push(i),
                None => match prepare(d) {
                    Ok(msg) => {
                        plan.texts.push(&d.message);
                        plan.calls.push((msg, vec![i]));
                    }
                    Err(error) => {
                        plan.outcomes[i] = Some(SendOutcome::Permanent {
                            error,
                            status: None,
                        })
                    }
                },
            }
        }
        plan
    }

    /// Every delivery's outcome, once the calls filled theirs in.
    pub(crate) fn finish(self) -> Vec<SendOutcome> {
        self.outcomes
            .into_iter()
            .map(|o| {
                o.unwrap_or_else(|| crate::provider_http::retryable("no outcome".into(), None))
            })
            .collect()
    }
}

/// An OAuth2 client-credentials token from `url` (Huawei's and Honor's
/// token endpoints take the same form and answer alike). A 429 or 503 is
/// the endpoint's flow control, which the token cache waits out.
pub(crate) async fn client_credentials_token(
    http: &ProviderHttp,
    url: &str,
    client_id: &str,
    client_secret: &str,
) -> Result<FetchedToken, TokenError> {
    let req = http.post(url).form(&[
        ("grant_type", "client_credentials"),
        ("client_id", client_id),
        ("client_secret", client_secret),
    ]);
    let path = "token endpoint";
    let answer = http
        .call(req, "POST", path)
        .await
        .map_err(|e| TokenError::Failed(e.to_string()))?;
    if answer.status == 429 || answer.status == 503 {
        return Err(TokenError::Throttled(format!(
            "{path}: HTTP {}",
            answer.status
        )));
    }
    let v = answer.json().unwrap_or(Value::Null);
    match (
        v.get("access_token").and_then(Value::as_str),
        v.get("expires_in").and_then(Value::as_i64),
    ) {
        (Some(t), Some(secs)) if answer.is_success() && !t.is_empty() => Ok(FetchedToken {
            token: t.to_string(),
            expires_in_secs: secs,
        }),
        _ => Err(TokenError::Failed(format!(
            "{path}: HTTP {}: {}",
            answer.status,
            v.get("error_description")
                .and_then(Value::as_str)
                .map_or_else(|| answer.snippet(), str::to_string)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn delivery(to: &str, message: &str) -> Delivery {
        Delivery {
            timer_id: 1,
            kind: herald_core::TimerKind::Timer,
            due_at: 0,
            fired_at: 0,
            attempt: 1,
            recipient: to.into(),
            message: message.into(),
            idempotency_key: "k".into(),
            traceparent: None,
        }
    }

    #[test]
    fn reads_the_app_shape() {
        let m = json!({"notification": {"title": "T", "body": "B"}, "data": {"k": "v"},
                       "android": {"ttl": "90.4s", "notification": {"click_action": "com.x.OPEN"}}});
        let p = AppPush::read(m.as_object().unwrap());
        assert_eq!(p.title.as_deref(), Some("T"));
        assert_eq!(p.data.as_deref(), Some("{\"k\":\"v\"}"));
        assert_eq!(p.ttl_secs, Some(90));
        assert_eq!(
            p.intent_uri().as_deref(),
            Some("intent:#Intent;action=com.x.OPEN;end")
        );
        let other = AppPush {
            title: Some("U".into()),
            ..p.clone()
        };
        assert_ne!(p.notify_id(), other.notify_id());
        assert_eq!(p.notify_id(), p.clone().notify_id());
        assert_eq!(ttl_secs("3600"), None);
        assert_eq!(ttl_secs("-1s"), None);
    }

    #[test]
    fn plans_calls_by_message_and_size() {
        let ds = [
            delivery("a", "m1"),
            delivery("b", "m1"),
            delivery("", "m1"),
            delivery("c", "m2"),
            delivery("d", "m1"),
            delivery("e", "bad"),
        ];
        let plan = Calls::plan(&ds, 2, |d| {
            if d.message == "bad" {
                Err("refused".to_string())
            } else {
                Ok(d.message.clone())
            }
        });
        let calls: Vec<(String, Vec<usize>)> = plan.calls.clone();
        assert_eq!(
            calls,
            [
                ("m1".to_string(), vec![0, 1]),
                ("m2".to_string(), vec![3]),
                ("m1".to_string(), vec![4])
            ]
        );
        let out = plan.finish();
        assert_eq!(out[2].class(), "permanent");
        assert_eq!(out[5].class(), "permanent");
        assert_eq!(out[0].class(), "retry", "no call made: no outcome");
        let v = Verdict::Partial {
            delivered: SendOutcome::Delivered {
                provider_msgid: None,
                status: None,
            },
            invalid: vec!["b".into()],
            code: "65003".into(),
        };
        let o = v.spread("xiaomi", &["a", "b"]);
        assert_eq!(o[0].class(), "delivered");
        assert!(
            matches!(&o[1], SendOutcome::Permanent { error, .. } if error.contains("UNREGISTERED"))
        );
    }
}
