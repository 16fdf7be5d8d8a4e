//! What the request types' derived schemas cannot say by themselves: the
//! words, forms and ranges their handlers check. Each refinement is merged
//! into the schema a JSON pointer names, so a request the document calls
//! valid gets past the checks that can be stated in JSON Schema; a test
//! fails when a pointer stops resolving (a field was renamed).

use serde_json::{Value, json};

use super::operations::{ID_PATTERN, TENANT_PATTERN};

/// Each pointer and the keywords merged into the schema there.
pub fn refinements() -> Vec<(&'static str, Value)> {
    let time = json!({ "format": "date-time" });
    let user = json!({ "pattern": ID_PATTERN });
    vec![
        (
            "/components/schemas/ReminderBody/properties/user_id",
            user.clone(),
        ),
        (
            "/components/schemas/ReminderBody/properties/subject_id",
            user.clone(),
        ),
        (
            "/components/schemas/ReminderBody/properties/channel_type",
            json!({ "enum": ["app", "email", "sms", "wechat", "wecom"] }),
        ),
        (
            "/components/schemas/TimerTo/properties/user_id",
            json!({ "minLength": 1, "maxLength": 128 }),
        ),
        (
            "/components/schemas/SubjectBody/properties/start_at",
            time.clone(),
        ),
        (
            "/components/schemas/CreateKey/properties/tenant",
            json!({ "pattern": TENANT_PATTERN }),
        ),
        (
            "/components/schemas/CreateKey/properties/scopes",
            json!({
                "minItems": 1,
                "items": { "enum": ["read", "write", "campaign", "admin", "metrics"] },
            }),
        ),
        (
            "/components/schemas/ReceiptBody/properties/event",
            json!({ "enum": ["delivered", "read", "clicked"] }),
        ),
        (
            "/components/schemas/ReceiptBody/properties/at",
            time.clone(),
        ),
        (
            "/components/schemas/JobBody/properties/name",
            json!({ "minLength": 1, "maxLength": 200, "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$" }),
        ),
        (
            "/components/schemas/JobBody/properties/category",
            json!({ "pattern": crate::api::campaigns::job_labels::CATEGORY_PATTERN }),
        ),
        (
            "/components/schemas/JobBody/properties/segment_size",
            json!({ "minimum": 1, "maximum": 100_000 }),
        ),
        (
            "/components/schemas/JobBody/properties/priority",
            json!({ "minimum": 0, "maximum": 9 }),
        ),
        ("/components/schemas/JobBody/properties/deadline", time),
        (
            "/components/schemas/RuleBody/properties/priority",
            json!({ "minimum": 0, "maximum": 9 }),
        ),
        (
            "/components/schemas/FollowUpBody/properties/after_secs",
            json!({ "minimum": 1, "maximum": 30 * 24 * 3600 }),
        ),
        (
            "/components/schemas/FollowUpBody/properties/only",
            json!({ "enum": ["unread"] }),
        ),
        (
            "/components/schemas/CampaignTo/properties/channel_type",
            json!({ "enum": ["app", "email", "sms", "wechat", "wecom", null] }),
        ),
    ]
}

/// Merges every refinement into `doc`.
pub fn apply(doc: &mut Value) {
    for (pointer, keywords) in refinements() {
        let (Some(target), Some(add)) = (doc.pointer_mut(pointer), keywords.as_object()) else {
            continue;
        };
        for (k, v) in add {
            target[k] = v.clone();
        }
    }
}
