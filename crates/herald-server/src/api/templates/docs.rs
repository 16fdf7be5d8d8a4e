//! How `/v1/templates` is documented: one doc per handler.

use crate::openapi::operations::{ActionDoc, Answer, Doc, Tag, Takes, q};
use Answer::Json as J;

const fn doc(summary: &'static str, ok: &'static [(u16, Answer)]) -> Doc {
    Doc::new(Tag::Templates, summary, ok)
}

const TEMPLATE: &[(u16, Answer)] = &[(200, J("TemplateJson"))];

pub(crate) const CREATE: Doc = doc("Create a template (version 1)", &[(201, J("TemplateJson"))]);
pub(crate) const LIST: Doc = doc(
    "The caller's templates, each at its latest version, by name",
    &[(200, J("TemplateList"))],
);
pub(crate) const GET: Doc =
    doc("A template: its latest version, or `?version=N`", TEMPLATE).query(&[q(
        "version",
        "a version to read instead of the latest",
        Takes::Int(1, u32::MAX as i64),
    )]);
pub(crate) const PUT: Doc = doc(
    "Add a version to a template (sends not pinned to a version use it from now)",
    TEMPLATE,
);
/// `:preview`.
pub(crate) const ACTIONS: &[ActionDoc] = &[doc(
    "Render a template for given data and a subscriber or locale, per part",
    &[(200, J("TemplatePreviewJson"))],
)
.action("preview")
.optional_body("TemplatePreview")];
