//! Template versions.

use super::{Columns, Decode, Reader};
use crate::{Result, TemplateRecord};

/// The columns of a `templates` row, as [`TemplateRecord`] reads them.
macro_rules! template_cols {
    ($($t:literal)?) => {
        $crate::model::columns!($($t)?;
            "id", "tenant_id", "name", "version", "body", "created_at", "created_by")
    };
}
pub(crate) use template_cols;

impl Decode for TemplateRecord {
    fn decode<R: Columns + ?Sized>(r: &mut Reader<'_, R>) -> Result<Self> {
        Ok(TemplateRecord {
            id: r.int("templates.id")?,
            tenant: r.tenant("templates.tenant_id")?,
            name: r.string("templates.name")?,
            version: r.narrow("templates.version")?,
            body: r.string("templates.body")?,
            created_at: r.int("templates.created_at")?,
            created_by: r.opt_string("templates.created_by")?,
        })
    }
}
