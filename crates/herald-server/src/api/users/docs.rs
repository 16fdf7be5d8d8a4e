//! How `/v1/users/{user_id}` is documented.

use crate::openapi::operations::{Answer, Doc, Tag};

pub(crate) const GET: Doc = Doc::new(
    Tag::Reminders,
    "One user: profile, reminders, recent timers and campaign sends",
    &[(200, Answer::Json("UserView"))],
);
