//! What the served document knows of the node that serves it: the channels
//! it has and the reminder leads it takes. A request naming another channel
//! or lead is refused, so a document that allowed any string or number
//! there would call refused requests valid.

use std::sync::{Arc, Mutex};

use herald_core::reminder::Leads;
use serde_json::{Value, json};

/// The configuration the document depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeFacts {
    /// Every channel name, sorted; empty: not known (any name is described).
    pub channels: Vec<String>,
    /// The leads a reminder may take (`reminders.leads_minutes`).
    pub leads: Vec<u16>,
}

impl Default for NodeFacts {
    /// No channels known, the default leads.
    fn default() -> Self {
        Self {
            channels: Vec::new(),
            leads: Leads::default().minutes().to_vec(),
        }
    }
}

/// Where request bodies name a channel of the node.
pub const CHANNEL_FIELDS: &[&str] = &[
    "/components/schemas/CreateTimer/properties/channel",
    "/components/schemas/ReminderBody/properties/channel",
    "/components/schemas/JobBody/properties/channel",
    "/components/schemas/RuleBody/properties/channel",
];

/// Where request bodies name a reminder lead.
pub const LEAD_FIELDS: &[&str] = &["/components/schemas/ReminderBody/properties/lead_minutes"];

impl NodeFacts {
    /// A channel name: one of the node's, when they are known.
    pub fn channel_schema(&self) -> Value {
        if self.channels.is_empty() {
            json!({ "type": "string", "minLength": 1 })
        } else {
            json!({ "type": "string", "enum": self.channels })
        }
    }

    /// A lead in minutes: one of the configured leads.
    pub fn lead_schema(&self) -> Value {
        json!({ "type": "integer", "enum": self.leads })
    }

    /// Puts the node's channels and leads where the document names them.
    /// A pointer that does not resolve is left alone (a test checks each
    /// one resolves).
    pub fn apply(&self, doc: &mut Value) {
        for (pointers, schema) in [
            (CHANNEL_FIELDS, self.channel_schema()),
            (LEAD_FIELDS, self.lead_schema()),
        ] {
            for p in pointers {
                if let Some(field) = doc.pointer_mut(p) {
                    // Keep the field's description and whether it may be
                    // `null`; replace what it takes.
                    let description = field.get("description").cloned();
                    let nullable = field["type"]
                        .as_array()
                        .is_some_and(|t| t.iter().any(|t| t == "null"));
                    *field = schema.clone();
                    if nullable {
                        let kind = field["type"].clone();
                        field["type"] = json!([kind, "null"]);
                        if let Some(values) = field["enum"].as_array_mut() {
                            values.push(Value::Null);
                        }
                    }
                    if let Some(d) = description {
                        field["description"] = d;
                    }
                }
            }
        }
    }
}

/// The last document served, with the facts it was built for: one node
/// serves one document, built on the first request.
static SERVED: Mutex<Option<(NodeFacts, Arc<str>)>> = Mutex::new(None);

/// The document text for `facts`, built once per set of facts.
pub fn served_text(facts: NodeFacts, build: impl FnOnce(&NodeFacts) -> String) -> Arc<str> {
    let mut served = match SERVED.lock() {
        Ok(g) => g,
        // A panic while building left nothing half-written: the value is
        // either the old pair or none.
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some((f, text)) = served.as_ref()
        && *f == facts
    {
        return text.clone();
    }
    let text: Arc<str> = build(&facts).into();
    *served = Some((facts, text.clone()));
    text
}
