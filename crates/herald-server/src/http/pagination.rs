//! Keyset pagination of the listings (`GET /v1/jobs`, `/v1/rules`,
//! `/v1/rules/{id}/versions`, `/v1/jobs/{id}/segments`, `/v1/keys`): a cursor
//! id and a limit in, a page and the cursor of the next page out (`null` on
//! the last page).

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use serde::Deserialize;

use crate::http::error::ApiError;
use crate::http::request::{int_param, query};

/// How one listing pages.
pub struct Paging {
    /// The cursor's query parameter: `after` (ascending ids) or `before`
    /// (descending ids).
    pub cursor: &'static str,
    /// Smallest cursor accepted.
    pub min_cursor: i64,
    pub default_limit: i64,
    pub max_limit: i64,
}

/// Oldest first: `?after=&limit=`, 100 by default, at most 1,000.
pub const ASCENDING: Paging = Paging {
    cursor: "after",
    min_cursor: 0,
    default_limit: 100,
    max_limit: 1000,
};

/// Newest first: `?before=&limit=`, 50 by default, at most 500.
pub const DESCENDING: Paging = Paging {
    cursor: "before",
    min_cursor: 1,
    default_limit: 50,
    max_limit: 500,
};

/// The query of a listing: the cursor its [`Paging`] names (the other one
/// is refused) and `limit`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    before: Option<String>,
    #[serde(default)]
    limit: Option<String>,
}

/// The query of a listing paged by an opaque `cursor` rather than an id
/// (`GET /v1/audiences`, `GET /v1/subjects`): each reads its own cursor.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CursorQuery {
    #[serde(default)]
    pub cursor: Option<String>,
    #[serde(default)]
    pub limit: Option<String>,
}

impl CursorQuery {
    /// The page asked of a listing keyed by a text id (subjects,
    /// subscribers): after the cursor (the last id of the previous page,
    /// checked like an id), at most the limit (`default` when not given).
    pub fn id_page(&self, default: i64, max: i64) -> Result<(Option<&str>, usize), ApiError> {
        let after = match self.cursor.as_deref() {
            None | Some("") => None,
            Some(c) => {
                crate::http::fields::check_id("cursor", c)?;
                Some(c)
            }
        };
        let limit = int_param("limit", &self.limit, 1..=max)?.unwrap_or(default);
        Ok((after, limit as usize))
    }
}

/// The cursor of the page after one of `len` items where `limit` were asked
/// for (`None` when it came short: it was the last), `last` the last key.
pub fn next_cursor(len: usize, limit: usize, last: Option<String>) -> Option<String> {
    if len == limit { last } else { None }
}

/// One page asked for.
pub struct Page {
    pub cursor: Option<i64>,
    pub limit: usize,
}

impl Paging {
    pub fn read(&self, q: Result<Query<PageQuery>, QueryRejection>) -> Result<Page, ApiError> {
        let q = query(q)?;
        let (cursor, other, other_name) = if self.cursor == "before" {
            (&q.before, &q.after, "after")
        } else {
            (&q.after, &q.before, "before")
        };
        if other.is_some() {
            return Err(ApiError::field(
                other_name,
                "invalid_query",
                format!(
                    "unknown query parameter `{other_name}`; this listing pages with `{}` \
                     and `limit`",
                    self.cursor
                ),
            ));
        }
        self.page(cursor, &q.limit)
    }

    /// The page a listing's own query asks for: its `cursor` (as named by
    /// this paging) and `limit`, each as sent.
    pub fn page(&self, cursor: &Option<String>, limit: &Option<String>) -> Result<Page, ApiError> {
        let cursor = int_param(self.cursor, cursor, self.min_cursor..=i64::MAX)?;
        let limit = int_param("limit", limit, 1..=self.max_limit)?.unwrap_or(self.default_limit);
        Ok(Page {
            cursor,
            limit: limit as usize,
        })
    }
}

impl Page {
    /// The next page's cursor: `last_id` (the id of the last item) when the
    /// page is full, else `None` (`null`: a page shorter than the limit is
    /// the last one). Each listing answers it beside its items, in its own
    /// typed body (`next_after` or `next_before`).
    pub fn next_cursor(&self, len: usize, last_id: Option<i64>) -> Option<i64> {
        if len == self.limit { last_id } else { None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(paging: &Paging, query: &str) -> Result<Page, ApiError> {
        let uri: axum::http::Uri = format!("/x?{query}")
            .parse()
            .map_err(|_| ApiError::field("query", "invalid_query", "test uri"))?;
        paging.read(Query::try_from_uri(&uri))
    }

    #[test]
    fn each_listing_reads_its_own_cursor() {
        let p = page(&ASCENDING, "after=5").unwrap();
        assert_eq!((p.cursor, p.limit), (Some(5), 100));
        let p = page(&DESCENDING, "before=9&limit=2").unwrap();
        assert_eq!((p.cursor, p.limit), (Some(9), 2));
        // The other listing's cursor would be ignored: it is refused.
        let e = page(&ASCENDING, "after=5&before=9").err().unwrap();
        assert_eq!(
            (e.body.code, e.body.field.as_deref()),
            ("invalid_query", Some("before"))
        );
        let e = page(&DESCENDING, "after=5").err().unwrap();
        assert_eq!(e.body.field.as_deref(), Some("after"));
        let e = page(&DESCENDING, "limit=1&limit=2").err().unwrap();
        assert_eq!(e.body.field.as_deref(), Some("limit"));
        assert_eq!(page(&ASCENDING, "after=0").unwrap().cursor, Some(0));
        let e = page(&DESCENDING, "before=0").err().unwrap();
        assert_eq!(e.body.field.as_deref(), Some("before"));
        let e = page(&ASCENDING, "limit=1001").err().unwrap();
        assert_eq!(e.body.field.as_deref(), Some("limit"));
        assert!(page(&DESCENDING, "limit=500").is_ok());
        assert!(page(&DESCENDING, "limit=501").is_err());
    }

    #[test]
    fn a_full_page_names_the_next_cursor() {
        let p = page(&ASCENDING, "limit=2").unwrap();
        assert_eq!(p.next_cursor(2, Some(2)), Some(2));
        assert_eq!(p.next_cursor(1, Some(1)), None);
    }
}
