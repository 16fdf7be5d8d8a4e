//! Answers as tables for a person at a terminal: a list answer
//! (`{"timers": [...], "next_cursor": ...}`) as one row per item, anything
//! else as one row per field. Scripts get the JSON instead (`--json`, or any
//! stdout that is not a terminal).

use comfy_table::{ContentArrangement, Table, presets};
use serde_json::{Map, Value};

/// Longest cell before it is cut short with `…`; the JSON has it whole.
const CELL_CHARS: usize = 60;

/// The answer as text ending in a newline.
pub fn render(v: &Value) -> String {
    let mut out = match v {
        Value::Object(fields) => match list_of(fields) {
            Some((name, items)) => {
                let mut out = rows(name, items);
                for (k, v) in fields.iter().filter(|(k, _)| k.as_str() != name) {
                    out.push_str(&format!("\n{k}: {}", cell(v)));
                }
                out
            }
            None => record(fields),
        },
        Value::Array(items) => rows("items", items),
        other => cell(other),
    };
    out.push('\n');
    out
}

/// The one array of a list answer: the object's only array, when every other
/// field is a plain value (a cursor, a count). A record that merely holds an
/// array among objects is shown field by field.
fn list_of(fields: &Map<String, Value>) -> Option<(&str, &[Value])> {
    let mut arrays = fields.iter().filter(|(_, v)| v.is_array());
    let (name, items) = arrays.next()?;
    let plain = fields.values().all(|v| v.is_array() || !v.is_object());
    if arrays.next().is_some() || !plain {
        return None;
    }
    let items = items.as_array()?;
    items
        .iter()
        .all(Value::is_object)
        .then_some((name.as_str(), items.as_slice()))
}

/// One row per item, a column per field in the order first seen.
fn rows(name: &str, items: &[Value]) -> String {
    if items.is_empty() {
        return format!("(no {name})");
    }
    let mut columns: Vec<&str> = Vec::new();
    for item in items {
        if let Value::Object(fields) = item {
            for k in fields.keys() {
                if !columns.contains(&k.as_str()) {
                    columns.push(k);
                }
            }
        }
    }
    // The id first, where a person looks for it; the rest as the JSON has them.
    if let Some(at) = columns.iter().position(|c| *c == "id") {
        let id = columns.remove(at);
        columns.insert(0, id);
    }
    let mut table = new_table();
    if columns.is_empty() {
        table.set_header(vec![name]);
        for item in items {
            table.add_row(vec![cell(item)]);
        }
    } else {
        table.set_header(columns.clone());
        for item in items {
            table.add_row(columns.iter().map(|c| cell(&item[*c])));
        }
    }
    table.to_string()
}

/// One row per field of a single record.
fn record(fields: &Map<String, Value>) -> String {
    let mut table = new_table();
    table.set_header(vec!["field", "value"]);
    let id = fields.get_key_value("id");
    for (k, v) in id
        .into_iter()
        .chain(fields.iter().filter(|(k, _)| *k != "id"))
    {
        table.add_row(vec![k.clone(), cell(v)]);
    }
    table.to_string()
}

/// Narrowest terminal the columns are wrapped to; below it (or where the
/// terminal reports no width, as a bare pseudo-terminal reports 0) cells are
/// not wrapped, rather than cut to a letter a line.
const MIN_WIDTH: u16 = 40;

fn new_table() -> Table {
    let mut table = Table::new();
    table.load_style(presets::UTF8_FULL_CONDENSED);
    let arrangement = match table.width() {
        Some(w) if w >= MIN_WIDTH => ContentArrangement::Dynamic,
        _ => ContentArrangement::Disabled,
    };
    table.set_content_arrangement(arrangement);
    table
}

/// A value as a cell: strings bare, `null` as `-`, objects and arrays as
/// compact JSON cut at [`CELL_CHARS`].
fn cell(v: &Value) -> String {
    let text = match v {
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.chars().count() <= CELL_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(CELL_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_list_answer_is_a_row_per_item_with_its_cursor_below() {
        let page = json!({"timers": [
            {"id": 1, "state": "pending", "to": {"user_id": "alice"}},
            {"id": 2, "state": "dead", "last_error": null},
        ], "next_cursor": "abc"});
        let text = render(&page);
        let lines: Vec<&str> = text.lines().collect();
        let header = lines.iter().find(|l| l.contains("state")).unwrap();
        assert!(header.find("id") < header.find("state"), "{text}");
        for column in ["id", "state", "to", "last_error"] {
            assert!(header.contains(column), "{text}");
        }
        assert!(text.contains("pending") && text.contains("dead"), "{text}");
        assert!(text.contains(r#"{"user_id":"alice"}"#), "{text}");
        assert!(text.ends_with("next_cursor: abc\n"), "{text}");
    }

    #[test]
    fn a_record_is_a_row_per_field_and_long_cells_are_cut() {
        let long = "x".repeat(200);
        let job = json!({"id": 7, "totals": {"sent": 1}, "segments": [{"n": 1}], "note": long});
        let text = render(&job);
        assert!(text.contains("field") && text.contains("totals"), "{text}");
        assert!(text.contains('…') && !text.contains(&long), "{text}");
        assert_eq!(render(&json!({"rules": []})), "(no rules)\n");
    }
}
