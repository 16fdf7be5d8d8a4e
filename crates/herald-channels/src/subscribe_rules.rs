//! What a WeChat mini-program subscribe message must hold, and the value
//! rules of its template's keyword types.
//!
//! WeChat refuses a value that breaks its keyword's rule with `47003` at
//! send time; checking the same rules when the message is accepted turns
//! that late failure into a `422` naming the field. The type is the key's
//! prefix before its number (`thing1`, `time2`), as the template defines
//! it (`shared/reference/china-providers.md` §3.1).

use serde_json::{Map, Value};

use crate::message_fields::{ShapeError, err, nonempty_string, optional_string};

/// The keyword types a subscribe template's keys may have.
pub const KEYWORD_TYPES: [&str; 12] = [
    "thing",
    "number",
    "letter",
    "symbol",
    "character_string",
    "time",
    "date",
    "amount",
    "phone_number",
    "car_number",
    "name",
    "phrase",
];

/// Checks a subscribe message: `template_id`, `data` of `{key: {value}}`
/// whose values keep their keyword's rule, and optionally `page`,
/// `miniprogram_state` and `lang`.
pub(crate) fn message(m: &Map<String, Value>) -> Result<(), ShapeError> {
    if !nonempty_string(m, "template_id") {
        return Err(err(
            "template_id",
            "the wechat_mini message needs template_id (a non-empty string)",
        ));
    }
    let Some(Value::Object(data)) = m.get("data") else {
        return Err(err(
            "data",
            "the wechat_mini message needs data (an object of template keywords)",
        ));
    };
    for (key, v) in data {
        let field = format!("data.{key}");
        let Some(Value::String(value)) = v.as_object().and_then(|f| f.get("value")) else {
            return Err(err(
                field.as_str(),
                format!("{field} must be an object with a string value: {{\"value\": \"...\"}}"),
            ));
        };
        keyword(key, value).map_err(|why| err(field.as_str(), format!("{field}: {why}")))?;
    }
    optional_string(m, "page", "page")?;
    if let Some(s) = m.get("miniprogram_state") {
        let ok = s
            .as_str()
            .is_some_and(|s| ["formal", "trial", "developer"].contains(&s));
        if !ok {
            return Err(err(
                "miniprogram_state",
                "miniprogram_state must be formal, trial or developer",
            ));
        }
    }
    if let Some(l) = m.get("lang") {
        let ok = l
            .as_str()
            .is_some_and(|l| ["zh_CN", "en_US", "zh_HK", "zh_TW"].contains(&l));
        if !ok {
            return Err(err("lang", "lang must be zh_CN, en_US, zh_HK or zh_TW"));
        }
    }
    Ok(())
}

/// The keyword type of key `key` (`thing12` → `thing`).
pub fn keyword_type(key: &str) -> &str {
    key.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// Whether `value` keeps the rule of key `key`'s type; why not otherwise.
pub fn keyword(key: &str, value: &str) -> Result<(), String> {
    let t = keyword_type(key);
    let n = value.chars().count();
    let within = |max: usize| -> Result<(), String> {
        if n > max {
            Err(format!("a {t} value is at most {max} characters, got {n}"))
        } else {
            Ok(())
        }
    };
    if value.is_empty() {
        return Err(format!("a {t} value must not be empty"));
    }
    match t {
        "thing" => within(20),
        "number" => {
            within(32)?;
            decimal(value)
                .then_some(())
                .ok_or_else(|| "a number value is digits, with an optional decimal part".into())
        }
        "letter" => {
            within(32)?;
            value
                .chars()
                .all(|c| c.is_ascii_alphabetic())
                .then_some(())
                .ok_or_else(|| "a letter value is letters only".into())
        }
        "symbol" => {
            within(5)?;
            value
                .chars()
                .all(|c| c.is_ascii_punctuation())
                .then_some(())
                .ok_or_else(|| "a symbol value is symbols only".into())
        }
        "character_string" => {
            within(32)?;
            value
                .chars()
                .all(|c| c.is_ascii_graphic())
                .then_some(())
                .ok_or_else(|| {
                    "a character_string value is digits, letters and symbols only".into()
                })
        }
        "time" => ranged(value, |part| date_time(part, true))
            .then_some(())
            .ok_or_else(|| {
                "a time value is a 24-hour time, optionally after a date (15:01, 2026年10月1日 15:01, 2026-10-01 15:01), or two joined by ~".into()
            }),
        "date" => ranged(value, |part| date_time(part, false))
            .then_some(())
            .ok_or_else(|| {
                "a date value is a date, optionally with a 24-hour time (2026年10月1日, 2026-10-01 15:01), or two joined by ~".into()
            }),
        "amount" => amount(value)
            .then_some(())
            .ok_or_else(|| {
                "an amount value is one currency symbol and at most 10 digits, decimals allowed, optionally ending in 元 (¥12.50, 100元)".into()
            }),
        "phone_number" => {
            within(17)?;
            value
                .chars()
                .all(|c| c.is_ascii_digit() || "+-()".contains(c))
                .then_some(())
                .ok_or_else(|| "a phone_number value is digits and + - ( ) only".into())
        }
        "car_number" => {
            within(8)?;
            let chars: Vec<char> = value.chars().collect();
            let last = chars.len() - 1;
            let ok = chars.iter().enumerate().all(|(i, &c)| {
                c.is_ascii_alphanumeric() || ((i == 0 || i == last) && is_cjk(c))
            });
            ok.then_some(())
                .ok_or_else(|| {
                    "a car_number value is letters and digits, the first and last may be Chinese".into()
                })
        }
        "name" => {
            if value.chars().any(is_cjk) {
                within(10)
            } else if value.chars().all(|c| c.is_ascii_alphabetic() || c.is_ascii_punctuation() || c == ' ') {
                within(20)
            } else {
                Err("a name value is Chinese (at most 10) or letters (at most 20)".into())
            }
        }
        "phrase" => {
            within(5)?;
            value
                .chars()
                .all(is_cjk)
                .then_some(())
                .ok_or_else(|| "a phrase value is Chinese characters only".into())
        }
        other => Err(format!(
            "keyword type {other:?} is not one of {}",
            KEYWORD_TYPES.join(", ")
        )),
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}' | '\u{F900}'..='\u{FAFF}')
}

fn decimal(s: &str) -> bool {
    let (int, frac) = s.split_once('.').unwrap_or((s, "0"));
    !int.is_empty()
        && !frac.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
}

/// One value, or two joined by `~`, each passing `one`.
fn ranged(value: &str, one: impl Fn(&str) -> bool) -> bool {
    match value.split_once('~') {
        Some((a, b)) => one(a.trim()) && one(b.trim()),
        None => one(value.trim()),
    }
}

/// `[date] [time]`: the time is required when `need_time`, the date
/// otherwise; dates are `2026年10月1日`, `2026-10-01` or `2026/10/01`
/// (the year may be left out of the first), times `15:01` or `15:01:30`.
fn date_time(s: &str, need_time: bool) -> bool {
    let mut parts = s.split_whitespace();
    let (first, second) = (parts.next(), parts.next());
    if parts.next().is_some() {
        return false;
    }
    let (date, time) = match (first, second) {
        (Some(a), Some(b)) => (Some(a), Some(b)),
        (Some(a), None) if clock(a) => (None, Some(a)),
        (Some(a), None) => match a.split_once('日') {
            // `2026年10月1日15:01` without a space.
            Some((d, t)) if !t.is_empty() => (Some(&a[..d.len() + '日'.len_utf8()]), Some(t)),
            _ => (Some(a), None),
        },
        _ => return false,
    };
    if need_time && time.is_none() || !need_time && date.is_none() {
        return false;
    }
    date.is_none_or(calendar_date) && time.is_none_or(clock)
}

fn calendar_date(s: &str) -> bool {
    let numbers = |parts: Vec<&str>| {
        parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit()))
    };
    if let Some(rest) = s.strip_suffix('日') {
        let (year, md) = match rest.split_once('年') {
            Some((y, md)) => (Some(y), md),
            None => (None, rest),
        };
        let Some((m, d)) = md.split_once('月') else {
            return false;
        };
        return numbers(year.into_iter().chain([m, d]).collect()) && in_month(m, d);
    }
    for sep in ['-', '/'] {
        let p: Vec<&str> = s.split(sep).collect();
        if p.len() == 3 {
            return numbers(p.clone()) && p[0].len() == 4 && in_month(p[1], p[2]);
        }
    }
    false
}

fn in_month(m: &str, d: &str) -> bool {
    matches!((m.parse::<u8>(), d.parse::<u8>()), (Ok(1..=12), Ok(1..=31)))
}

fn clock(s: &str) -> bool {
    let p: Vec<&str> = s.split(':').collect();
    let field =
        |v: &str, max: u8| v.len() <= 2 && !v.is_empty() && v.parse::<u8>().is_ok_and(|n| n <= max);
    match p.as_slice() {
        [h, m] => field(h, 23) && m.len() == 2 && field(m, 59),
        [h, m, s] => field(h, 23) && m.len() == 2 && field(m, 59) && s.len() == 2 && field(s, 59),
        _ => false,
    }
}

fn amount(s: &str) -> bool {
    let s = s.strip_suffix('元').unwrap_or(s);
    let s = s.strip_prefix(['¥', '￥', '$', '€', '£']).unwrap_or(s);
    let digits = s.bytes().filter(u8::is_ascii_digit).count();
    digits <= 10 && decimal(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_follow_their_keyword_type() {
        let ok = [
            ("thing1", "满100减20优惠券"),
            ("number2", "3"),
            ("number2", "12.50"),
            ("letter3", "ABc"),
            ("symbol4", "%"),
            ("character_string5", "SN-2026-001"),
            ("time6", "15:01"),
            ("time6", "2026年10月1日 15:01"),
            ("time6", "2026-10-01 09:55~2026-10-01 10:00"),
            ("date7", "2026年2月14日"),
            ("date7", "2026-02-14 09:00"),
            ("amount8", "¥20"),
            ("amount8", "100.5元"),
            ("phone_number9", "+86-0766-66888866"),
            ("car_number10", "粤A12345"),
            ("name11", "李雷"),
            ("name11", "Li Lei"),
            ("phrase12", "已开抢"),
        ];
        for (k, v) in ok {
            assert_eq!(keyword(k, v), Ok(()), "{k}={v}");
        }
        let bad = [
            ("thing1", "这是一个超过二十个字的优惠券名称真的非常非常长"),
            ("number2", "3a"),
            ("letter3", "ab1"),
            ("symbol4", "%%%%%%"),
            ("time6", "25:00"),
            ("time6", "2026-10-01"),
            ("date7", "15:01"),
            ("date7", "2026-13-01"),
            ("amount8", "¥12345678901"),
            ("phone_number9", "call me"),
            ("car_number10", "粤A1234567"),
            ("name11", "李雷和韩梅梅还有很多朋友们"),
            ("phrase12", "open"),
            ("colour13", "red"),
            ("thing1", ""),
        ];
        for (k, v) in bad {
            assert!(keyword(k, v).is_err(), "{k}={v} should be refused");
        }
    }

    #[test]
    fn names_the_field_that_breaks_its_rule() {
        let m =
            serde_json::json!({"template_id": "T", "data": {"thing1": {"value": "x".repeat(21)}}});
        let ShapeError {
            field,
            message: why,
        } = message(m.as_object().unwrap()).unwrap_err();
        assert_eq!(field, "data.thing1");
        assert!(why.contains("at most 20"), "{why}");
        let m = serde_json::json!({"data": {}});
        assert_eq!(
            message(m.as_object().unwrap()).unwrap_err().field,
            "template_id"
        );
    }
}
