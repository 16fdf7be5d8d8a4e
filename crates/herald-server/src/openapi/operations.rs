//! The words a route's documentation is written in, and the parameters
//! several routes share. Each handler folder documents its routes in these
//! (`api/*/docs.rs`) and the route table (`crate::routes`) names each doc
//! beside its route, so the document's operations are made from the same
//! entries as the policies and the router. Method, path, need and body come
//! from the table entry; a doc says only what the table does not.

/// The group an operation is listed under, in the document's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    Timers,
    Reminders,
    Subscribers,
    Templates,
    Campaigns,
    Channels,
    Access,
    Operations,
}

impl Tag {
    /// Every tag, as the document lists them.
    pub const ALL: [Tag; 8] = [
        Tag::Timers,
        Tag::Reminders,
        Tag::Subscribers,
        Tag::Templates,
        Tag::Campaigns,
        Tag::Channels,
        Tag::Access,
        Tag::Operations,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Tag::Timers => "timers",
            Tag::Reminders => "reminders",
            Tag::Subscribers => "subscribers",
            Tag::Templates => "templates",
            Tag::Campaigns => "campaigns",
            Tag::Channels => "channels",
            Tag::Access => "access",
            Tag::Operations => "operations",
        }
    }

    pub const fn description(self) -> &'static str {
        match self {
            Tag::Timers => "One-off timers: schedule, read, change, cancel, replay",
            Tag::Reminders => "Subjects and the users' reminders of them",
            Tag::Subscribers => "The directory: where and how to reach each user",
            Tag::Templates => "Message templates: per-locale variants, per-channel parts",
            Tag::Campaigns => "Audiences, rules and jobs: one message to many",
            Tag::Channels => "Delivery channels, provider callbacks, recalls",
            Tag::Access => "API keys and the audit log",
            Tag::Operations => "Health, metrics, cluster and this reference",
        }
    }
}

/// How one operation is documented, beyond what its table entry says.
#[derive(Clone, Copy)]
pub struct Doc {
    pub tag: Tag,
    pub summary: &'static str,
    /// Query parameters.
    pub query: &'static [Param],
    /// Success status and answer.
    pub ok: &'static [(u16, Answer)],
}

impl Doc {
    pub const fn new(tag: Tag, summary: &'static str, ok: &'static [(u16, Answer)]) -> Doc {
        Doc {
            tag,
            summary,
            query: &[],
            ok,
        }
    }

    pub const fn query(mut self, query: &'static [Param]) -> Doc {
        self.query = query;
        self
    }

    /// This doc as the action `name` of an action route.
    pub const fn action(self, name: &'static str) -> ActionDoc {
        ActionDoc {
            name,
            body: None,
            doc: self,
        }
    }
}

/// One action of an action route: `cancel` of `POST /v1/jobs/{id}`,
/// documented as `POST /v1/jobs/{id}:cancel`.
#[derive(Clone, Copy)]
pub struct ActionDoc {
    /// What follows the `:`.
    pub name: &'static str,
    /// The schema of the JSON body it may take (`:pause`); an action is
    /// also called without one, so the body is never required.
    pub body: Option<&'static str>,
    pub doc: Doc,
}

impl ActionDoc {
    pub const fn optional_body(mut self, schema: &'static str) -> ActionDoc {
        self.body = Some(schema);
        self
    }
}

/// What documents a route of the table: one operation, or for an action
/// route one per action.
#[derive(Clone, Copy)]
pub enum Docs {
    One(Doc),
    Actions(&'static [ActionDoc]),
}

/// A success answer.
#[derive(Clone, Copy)]
pub enum Answer {
    /// `application/json`, this schema.
    Json(&'static str),
    /// `application/x-ndjson`, one line of this schema each.
    Ndjson(&'static str),
    /// `text/plain`.
    Text,
    /// `text/html`.
    Html,
}

/// A query parameter: its name, what it means, and what it takes.
#[derive(Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub what: &'static str,
    pub takes: Takes,
}

/// A query parameter.
pub const fn q(name: &'static str, what: &'static str, takes: Takes) -> Param {
    Param { name, what, takes }
}

/// What a path or query parameter takes, as its handler checks it: the
/// document states exactly this, so a generated value the document calls
/// valid is accepted and one it calls invalid is refused.
#[derive(Clone, Copy)]
pub enum Takes {
    /// Any text; an empty one filters nothing.
    Text,
    /// 1 to this many characters, no control characters
    /// (`http::text::check_printable`).
    Printable(u32),
    /// 1 to this many characters, not all blank, no control characters.
    Label(u32),
    /// A whole number in `min..=max`.
    Int(i64, i64),
    /// One of these words.
    Word(&'static [&'static str]),
    /// A comma-separated list of these words, each at most once.
    Words(&'static [&'static str]),
    /// An RFC 3339 time.
    Time,
    /// A UTC day (`YYYY-MM-DD`) or an RFC 3339 time (its day).
    Day,
    /// Text matching this pattern (ECMA 262).
    Pattern(&'static str),
    /// One of the node's reminder leads (`reminders.leads_minutes`).
    Lead,
}

/// A user or subject id (`http::fields::check_id`), or empty (no cursor).
pub const ID_PATTERN: &str = "^[A-Za-z0-9_.:@-]{1,128}$";
/// The largest id and cursor the API takes (`i64::MAX`).
pub const BIG: i64 = i64::MAX;
/// A tenant's name (`herald_core::tenant::tenant_name_problem`).
pub const TENANT_PATTERN: &str = "^[A-Za-z0-9_.-]{1,64}$";

/// Ascending listings paged by id (`pagination::ASCENDING`).
pub const AFTER: &[Param] = &[AFTER_ID, LIMIT];
pub const AFTER_ID: Param = q(
    "after",
    "the `next_after` of the previous page",
    Takes::Int(0, BIG),
);
pub const LIMIT: Param = q("limit", "rows per page (default 100)", Takes::Int(1, 1000));
/// Listings keyed by a user or subject id (`CursorQuery::id_page`).
pub const ID_CURSOR: Takes = Takes::Pattern("^([A-Za-z0-9_.:@-]{1,128})?$");
pub const CURSOR_DOC: &str = "the `next_cursor` of the previous page";
