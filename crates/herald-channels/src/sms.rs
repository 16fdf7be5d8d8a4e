//! What the two SMS channels (`aliyun_sms`, `tencent_sms`) share: phone
//! numbers in one canonical form, RFC 3986 encoding, the HMAC and hash
//! helpers their signatures are made of, the callback secret, the wait a
//! per-number limit asks for, and how a batch of deliveries is grouped into
//! provider calls ([`CallPlan`]).

use std::collections::HashSet;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::provider_http::{Secret, retryable};
use crate::{CallbackError, CallbackRequest, Delivery, SendOutcome};

/// A phone number as both providers take it: the country code and the
/// national number, digits only (`8613800138000`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Phone {
    digits: String,
}

/// Digits in an E.164 number, country code included.
const MIN_DIGITS: usize = 7;
const MAX_DIGITS: usize = 15;

impl Phone {
    /// Reads `+8613800138000`, `008613800138000`, `8613800138000` or a bare
    /// mainland mobile `13800138000` (taken as +86); spaces and dashes are
    /// ignored. Whether the number exists is the provider's to say.
    pub fn parse(raw: &str) -> Result<Phone, String> {
        let compact: String = raw
            .trim()
            .chars()
            .filter(|c| *c != ' ' && *c != '-')
            .collect();
        let (international, rest) = if let Some(r) = compact.strip_prefix('+') {
            (true, r)
        } else if let Some(r) = compact.strip_prefix("00") {
            (true, r)
        } else {
            (false, compact.as_str())
        };
        if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "recipient {raw:?} is not a phone number (digits, optionally after + or 00)"
            ));
        }
        let digits = if !international && rest.len() == 11 && rest.starts_with('1') {
            format!("86{rest}")
        } else {
            rest.to_string()
        };
        if !(MIN_DIGITS..=MAX_DIGITS).contains(&digits.len()) {
            return Err(format!(
                "recipient {raw:?} has {} digits; a phone number with its country code has {MIN_DIGITS} to {MAX_DIGITS}",
                digits.len()
            ));
        }
        Ok(Phone { digits })
    }

    /// Country code and number, digits only.
    pub fn digits(&self) -> &str {
        &self.digits
    }

    /// `+8613800138000`.
    pub fn e164(&self) -> String {
        format!("+{}", self.digits)
    }

    /// A mainland China number (+86).
    pub fn domestic(&self) -> bool {
        self.digits.starts_with("86") && self.digits.len() == 13
    }

    /// As Aliyun's `PhoneNumbers` takes it: a mainland number bare
    /// (`13800138000`), any other with its country code (`85261234567`).
    pub fn aliyun(&self) -> &str {
        if self.domestic() {
            &self.digits[2..]
        } else {
            &self.digits
        }
    }
}

/// RFC 3986 percent-encoding, as both providers canonicalize: everything
/// but `A-Z a-z 0-9 - _ . ~` as `%XY` (upper-case hex), a space as `%20`.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3 / 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// HMAC-SHA256 of `msg` under `key`.
pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    // HMAC takes a key of any length; `new_from_slice` cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return [0; 32],
    };
    mac.update(msg);
    mac.finalize().into_bytes().into()
}

/// Lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// Unique enough per request: the time in ns and a process-wide counter.
pub fn nonce() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    format!("{ns:016x}{:08x}{seq:08x}", std::process::id())
}

/// Unix seconds now, by the wall clock the provider compares with.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Neither provider signs its receipt pushes; the channel's
/// `callback_secret`, put in the callback URL (`?secret=...`), is what
/// shows a push comes from the console it was configured in.
pub(crate) fn check_callback_secret(
    secret: Option<&Secret>,
    req: &CallbackRequest<'_>,
) -> Result<(), CallbackError> {
    let Some(want) = secret else {
        return Ok(());
    };
    let given = req.param("secret").unwrap_or("");
    let same = given.len() == want.expose().len()
        && given
            .bytes()
            .zip(want.expose().bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if same {
        Ok(())
    } else {
        Err(CallbackError::Unauthorized(
            "the callback URL's secret is missing or wrong".into(),
        ))
    }
}

/// Milliseconds from `now_s` to the next midnight in Beijing (UTC+8), where
/// Tencent's daily limits start again.
pub fn until_beijing_midnight_ms(now_s: i64) -> u64 {
    const DAY: i64 = 86_400;
    let local = now_s + 8 * 3600;
    let left = DAY - local.rem_euclid(DAY);
    (left as u64) * 1000
}

/// A batch of deliveries grouped into provider calls. One call carries one
/// text (template and parameters) to up to `max` numbers, never the same
/// number twice (the provider would send it once and answer once), and only
/// numbers its `together` rule lets share a call. A delivery that cannot be
/// prepared (no phone number, a bad message) ends permanent without a call.
pub(crate) struct CallPlan<T> {
    calls: Vec<Call<T>>,
    out: Vec<Option<SendOutcome>>,
}

/// One provider call: its text and its members (index into the batch,
/// number).
pub(crate) struct Call<T> {
    pub text: T,
    members: Vec<(usize, Phone)>,
    numbers: HashSet<Phone>,
}

impl<T> Call<T> {
    /// The call's numbers, in the order the answers come back.
    pub fn numbers(&self) -> Vec<&Phone> {
        self.members.iter().map(|(_, p)| p).collect()
    }
}

impl<T: PartialEq> CallPlan<T> {
    pub fn new(
        deliveries: &[Delivery],
        max: usize,
        prepare: impl Fn(&Delivery) -> Result<(Phone, T), String>,
        together: impl Fn(&Phone, &Phone) -> bool,
    ) -> Self {
        let mut out: Vec<Option<SendOutcome>> = vec![None; deliveries.len()];
        let mut calls: Vec<Call<T>> = Vec::new();
        for (i, d) in deliveries.iter().enumerate() {
            let (phone, text) = match prepare(d) {
                Ok(x) => x,
                Err(error) => {
                    out[i] = Some(SendOutcome::Permanent {
                        error,
                        status: None,
                    });
                    continue;
                }
            };
            let fits = |c: &Call<T>| {
                c.text == text
                    && c.members.len() < max
                    && c.members.first().is_some_and(|(_, p)| together(p, &phone))
                    && !c.numbers.contains(&phone)
            };
            match calls.iter_mut().rev().find(|c| fits(c)) {
                Some(c) => {
                    c.numbers.insert(phone.clone());
                    c.members.push((i, phone));
                }
                None => calls.push(Call {
                    text,
                    numbers: HashSet::from([phone.clone()]),
                    members: vec![(i, phone)],
                }),
            }
        }
        CallPlan { calls, out }
    }

    /// The calls to make, and the plan that takes their answers.
    pub fn calls(&mut self) -> Vec<Call<T>> {
        std::mem::take(&mut self.calls)
    }

    /// Records a call's answers, one per number in [`Call::numbers`] order.
    pub fn answer(&mut self, call: &Call<T>, answers: Vec<SendOutcome>) {
        for ((i, _), o) in call.members.iter().zip(answers) {
            if let Some(slot) = self.out.get_mut(*i) {
                *slot = Some(o);
            }
        }
    }

    /// One outcome per delivery, in batch order; a delivery a call did not
    /// answer for is retried.
    pub fn finish(self) -> Vec<SendOutcome> {
        self.out
            .into_iter()
            .map(|o| o.unwrap_or_else(|| retryable("no outcome".into(), None)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phone_numbers_take_one_canonical_form() {
        for raw in [
            "+8613800138000",
            "008613800138000",
            "8613800138000",
            "13800138000",
            "138-0013-8000",
        ] {
            let p = Phone::parse(raw).unwrap();
            assert_eq!(p.digits(), "8613800138000", "{raw}");
            assert_eq!(p.aliyun(), "13800138000");
            assert_eq!(p.e164(), "+8613800138000");
            assert!(p.domestic());
        }
        let hk = Phone::parse("+85261234567").unwrap();
        assert!(!hk.domestic());
        assert_eq!(hk.aliyun(), "85261234567");
        assert!(Phone::parse("abc").is_err());
        assert!(Phone::parse("+12").is_err());
        assert!(Phone::parse("").is_err());
        assert!(Phone::parse("+8613800138000,13900139000").is_err());
    }

    #[test]
    fn encodes_as_rfc3986() {
        assert_eq!(encode("a b*c~d/é"), "a%20b%2Ac~d%2F%C3%A9");
        assert_eq!(encode("{\"code\":\"1\"}"), "%7B%22code%22%3A%221%22%7D");
    }

    #[test]
    fn beijing_midnight() {
        // 16:00 UTC is midnight in Beijing.
        let day = 20_000 * 86_400;
        assert_eq!(until_beijing_midnight_ms(day + 16 * 3600), 86_400_000);
        assert_eq!(until_beijing_midnight_ms(day + 16 * 3600 - 1), 1000);
    }
}
