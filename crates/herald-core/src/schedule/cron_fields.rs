//! Says which field of a cron pattern is wrong, in the words of the field
//! (`minute 61 is out of range 0–59`), where croner's own errors name
//! neither the field nor its range ("Component error: Number out of bounds.").

/// The fields of a 5-field pattern, with their ranges.
const FIVE: [(&str, u32, u32); 5] = [
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day-of-month", 1, 31),
    ("month", 1, 12),
    // 7 is Sunday as well as 0.
    ("day-of-week", 0, 7),
];

/// What is wrong with `pattern`, once croner has refused it: its field
/// count, or the first number outside its field's range. `None` when
/// neither: croner's message then stands.
pub(super) fn problem(pattern: &str) -> Option<String> {
    let fields: Vec<&str> = pattern.split_whitespace().collect();
    let names: Vec<(&str, u32, u32)> = match fields.len() {
        5 => FIVE.to_vec(),
        6 => std::iter::once(("second", 0, 59)).chain(FIVE).collect(),
        n => {
            return Some(format!(
                "a cron pattern has 5 fields (minute hour day-of-month month day-of-week), \
                 or 6 with a leading second; this one has {n}"
            ));
        }
    };
    for (text, (name, lo, hi)) in fields.iter().zip(names) {
        for number in numbers(text) {
            let Ok(n) = number.parse::<u64>() else {
                return Some(format!("{name} {number} is out of range {lo}–{hi}"));
            };
            if n < u64::from(lo) || n > u64::from(hi) {
                return Some(format!("{name} {n} is out of range {lo}–{hi}"));
            }
        }
    }
    None
}

/// The plain numbers of a field that must lie in its range: the ends of a
/// range and single values, not a step (`*/15`), an nth weekday (`1#2`) or
/// an offset from the last day (`L-3`).
fn numbers(field: &str) -> impl Iterator<Item = &str> {
    field.split(',').flat_map(|part| {
        let base = part.split('/').next().unwrap_or("");
        let base = base.split('#').next().unwrap_or("");
        let ends: Vec<&str> = if base.starts_with('L') {
            Vec::new()
        } else {
            base.split('-')
                .map(|e| e.trim_end_matches(['W', 'L']))
                .collect()
        };
        ends.into_iter()
            .filter(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::problem;

    #[test]
    fn names_the_field_and_its_range() {
        assert_eq!(
            problem("61 * * * *").as_deref(),
            Some("minute 61 is out of range 0–59")
        );
        assert_eq!(
            problem("0 9 * 13 *").as_deref(),
            Some("month 13 is out of range 1–12")
        );
        assert_eq!(
            problem("0 0 9 * * 1-8").as_deref(),
            Some("day-of-week 8 is out of range 0–7")
        );
        assert_eq!(
            problem("70 0 9 * * *").as_deref(),
            Some("second 70 is out of range 0–59")
        );
        assert_eq!(
            problem("0 0 0,32 * *").as_deref(),
            Some("day-of-month 0 is out of range 1–31")
        );
        assert_eq!(
            problem("0 99999999999999999999 * * *").as_deref(),
            Some("hour 99999999999999999999 is out of range 0–23")
        );
        assert!(problem("* * *").unwrap().contains("this one has 3"));
        // In range: croner's own message stands.
        assert_eq!(problem("*/15 9-17 L * 1#2"), None);
    }
}
