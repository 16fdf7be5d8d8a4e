//! How `/v1/calendars` is documented: one doc per handler.

use crate::openapi::operations::{Answer, Doc, Tag};
use Answer::Json as J;

const fn doc(summary: &'static str, ok: &'static [(u16, Answer)]) -> Doc {
    Doc::new(Tag::Campaigns, summary, ok)
}

pub(crate) const PUT: Doc = doc(
    "Store a working-day calendar, replacing one of that name (a built-in one too, for this tenant)",
    &[(200, J("CalendarJson"))],
);
pub(crate) const GET: Doc = doc(
    "A calendar: the tenant's own, else the built-in one",
    &[(200, J("CalendarJson"))],
);
pub(crate) const LIST: Doc = doc(
    "The tenant's calendars and the built-in ones it has not replaced, by name",
    &[(200, J("CalendarList"))],
);
