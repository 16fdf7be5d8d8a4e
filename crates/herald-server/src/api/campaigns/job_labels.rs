//! A job's `name` and `category` (the business kind, e.g. `coupon-reminder`):
//! how each is checked where a job is created, and how `GET /v1/jobs`
//! filters by them (`?category=` exact, `?name=` a prefix). One check serves
//! both, so a value the list is asked for is one a job could hold.

use herald_store::{JobFilter, JobMeta};

use crate::http::error::ApiError;
use crate::http::fields::check_word;
use crate::http::text::{Text, control_problem};

/// Longest job name, in characters (a rule's name, at most 200 bytes, fits:
/// a job a rule starts takes it).
pub const MAX_JOB_NAME_CHARS: usize = 200;
/// Longest category, in characters.
pub const MAX_CATEGORY_CHARS: usize = 64;
/// What a category may hold, for the OpenAPI document.
pub const CATEGORY_PATTERN: &str = "^[A-Za-z0-9_.:-]{1,64}$";

/// A name: 1..=200 characters, no control character.
pub fn check_name(field: &str, name: &str) -> Result<(), ApiError> {
    let n = name.chars().count();
    if n == 0 || n > MAX_JOB_NAME_CHARS {
        return Err(ApiError::field(
            field,
            "invalid_field",
            format!("{field} must be 1..={MAX_JOB_NAME_CHARS} characters"),
        ));
    }
    match control_problem(name, Text::Id) {
        None => Ok(()),
        Some(p) => Err(ApiError::field(
            field,
            "invalid_field",
            format!("{field} {p}"),
        )),
    }
}

/// A category: 1..=64 of `A-Z a-z 0-9 _ - . :`, so it reads the same in a
/// URL, a metric label and a log line.
pub fn check_category(field: &str, category: &str) -> Result<(), ApiError> {
    check_word(field, category, MAX_CATEGORY_CHARS, "_-.:")
}

/// The `name` and `category` of a job body, checked.
pub fn meta(name: Option<String>, category: Option<String>) -> Result<JobMeta, ApiError> {
    if let Some(n) = &name {
        check_name("name", n)?;
    }
    if let Some(c) = &category {
        check_category("category", c)?;
    }
    Ok(JobMeta {
        name,
        category,
        ..Default::default()
    })
}

/// The filter of `GET /v1/jobs?category=&name=`: the category exactly, the
/// name as a prefix.
pub fn filter(name: Option<String>, category: Option<String>) -> Result<JobFilter, ApiError> {
    let JobMeta { name, category, .. } = meta(name, category)?;
    Ok(JobFilter {
        category,
        name_prefix: name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_take_any_printable_text_and_categories_a_slug() {
        assert!(check_name("name", "Spring sale · 春季").is_ok());
        assert!(check_name("name", &"名".repeat(200)).is_ok());
        for bad in ["", "a\nb"] {
            let e = check_name("name", bad).unwrap_err();
            assert_eq!(e.body.field.as_deref(), Some("name"));
        }
        assert!(check_name("name", &"a".repeat(201)).is_err());
        assert!(check_category("category", "coupon-reminder").is_ok());
        for bad in ["", "coupon reminder", "a/b", &"c".repeat(65)] {
            let e = check_category("category", bad).unwrap_err();
            assert_eq!(e.body.field.as_deref(), Some("category"), "{bad:?}");
        }
    }
}
