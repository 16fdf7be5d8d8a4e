//! Reminder templates: how a reminder's fields become a provider's message.
//!
//! A reminder's message is Herald's own shape (`user_id`, `subject_id`,
//! `subject`, `start_at`, `lead_minutes`, `count`, ...), which a webhook
//! receiver reads as is. A WeChat template message or an email needs the
//! provider's shape instead, so a channel may carry a `reminder_template`: any
//! JSON value whose strings may name the reminder's top-level fields in
//! braces, e.g. `{"subject": "{subject} starts at {start_at}"}`.

use serde_json::{Map, Value};

/// Fills `template` from the top-level scalar fields of `fields` (a JSON
/// object as text). A placeholder naming no such field is left as written, so
/// a typo shows in the delivered message instead of vanishing.
pub fn render(template: &Value, fields: &str) -> String {
    let fields: Map<String, Value> = match serde_json::from_str(fields) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    fill(template, &fields).to_string()
}

fn fill(v: &Value, fields: &Map<String, Value>) -> Value {
    match v {
        Value::String(s) => Value::String(fill_str(s, fields)),
        Value::Array(a) => Value::Array(a.iter().map(|x| fill(x, fields)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), fill(x, fields)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn fill_str(s: &str, fields: &Map<String, Value>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                let name = &after[..close];
                match fields.get(name) {
                    Some(Value::String(v)) => out.push_str(v),
                    Some(Value::Number(n)) => out.push_str(&n.to_string()),
                    Some(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
                    _ => {
                        out.push('{');
                        out.push_str(name);
                        out.push('}');
                    }
                }
                rest = &after[close + 1..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fills_strings_anywhere_and_keeps_unknown_placeholders() {
        let t = json!({"template_id": "TPL",
                       "data": {"first": {"value": "{subject} opens at {start_at}"},
                                "remark": {"value": "{count} reminder(s), lead {lead_minutes} min; {nope}"}},
                       "n": 3});
        let fields = json!({"subject": "Coupon 42", "start_at": "2026-11-23T02:00:00.000Z",
                            "count": 2, "lead_minutes": 5, "reminders": []})
        .to_string();
        let out: Value = serde_json::from_str(&render(&t, &fields)).unwrap();
        assert_eq!(
            out,
            json!({"template_id": "TPL",
                   "data": {"first": {"value": "Coupon 42 opens at 2026-11-23T02:00:00.000Z"},
                            "remark": {"value": "2 reminder(s), lead 5 min; {nope}"}},
                   "n": 3})
        );
        assert_eq!(fill_str("a { b", &Map::new()), "a { b");
        assert_eq!(fill_str("{reminders}", &Map::new()), "{reminders}");
    }
}
