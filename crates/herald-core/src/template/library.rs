//! Compiled template versions and rendering.
//!
//! Every string of every part is compiled once into one minijinja
//! environment, and a part is kept as a tree whose literal pieces are copied
//! and whose template strings are rendered: a message is rendered with no
//! parsing and no lookups by formatted name.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use minijinja::{Environment, UndefinedBehavior};
use serde_json::Value;

use super::{
    MAX_RENDERED_BYTES, PartKey, RENDER_FUEL, TemplateBody, TemplateError, TemplateRef, filters,
    locale,
};
use crate::TenantId;

/// Names every render has, whatever the sender gives: a template may read
/// them without the sender's `data` naming them.
const PROVIDED: [&str; 9] = [
    "timezone",
    "locale",
    "range",
    "dict",
    "namespace",
    "debug",
    "lipsum",
    "cycler",
    "joiner",
];

/// Why a message could not be rendered: final for the send (outcome
/// `template_error`), never retried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("no template named {name:?}")]
    UnknownTemplate { name: String },
    #[error("template {name:?} has no version {version}")]
    UnknownVersion { name: String, version: u32 },
    #[error("template {name:?} version {version} has no {part} part in any variant of {locale}")]
    NoPart {
        name: String,
        version: u32,
        part: &'static str,
        locale: String,
    },
    #[error("template {name:?} version {version}, {field}: {message}")]
    Failed {
        name: String,
        version: u32,
        field: String,
        message: String,
    },
}

/// A rendered message and what it was rendered from.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub version: u32,
    /// The variant used (normalized tag, or `default`).
    pub locale: String,
    pub message: Value,
}

/// A part as compiled: literals are kept, template strings name their
/// compiled template in the environment.
#[derive(Debug)]
enum Node {
    Literal(Value),
    Text(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

/// One compiled version.
#[derive(Debug)]
struct Compiled {
    /// Parts by normalized locale tag.
    variants: HashMap<String, HashMap<PartKey, Node>>,
    variables: BTreeSet<String>,
    default_parts: BTreeSet<PartKey>,
}

/// What a caller may ask of a stored version before using it (borrowed:
/// a subscribe checks it for every reminder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionInfo<'a> {
    pub version: u32,
    /// Variables the sender's data must give.
    pub variables: &'a BTreeSet<String>,
    /// Parts of the `default` variant: every locale falls back to it.
    pub default_parts: &'a BTreeSet<PartKey>,
}

/// Every compiled template version a node can render from.
pub struct Library {
    env: Environment<'static>,
    versions: HashMap<(TenantId, String), BTreeMap<u32, Arc<Compiled>>>,
}

impl Default for Library {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("templates", &self.versions.len())
            .finish()
    }
}

/// The sandbox every template runs in: undefined names are errors (never an
/// empty string in a sent message), work is bounded, nothing is loaded.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_fuel(Some(RENDER_FUEL));
    env.set_recursion_limit(32);
    env.add_filter("datetime", filters::datetime);
    env.add_filter("date", filters::date);
    env.add_filter("time", filters::time);
    env
}

/// Whether a string is a template at all (most `template_id`s are not).
fn is_template(s: &str) -> bool {
    s.contains("{{") || s.contains("{%") || s.contains("{#")
}

/// Compiles every template string of `part` (at `at`) in a scratch
/// environment, adding the top-level names they read to `vars`.
pub(super) fn compile_check(
    part: &Value,
    at: &str,
    vars: &mut BTreeSet<String>,
) -> Result<(), TemplateError> {
    let env = environment();
    walk_strings(part, at, &mut |path, s| {
        let t = env
            .template_from_str(s)
            .map_err(|e| TemplateError::new(path, e.to_string()))?;
        vars.extend(
            t.undeclared_variables(false)
                .into_iter()
                .filter(|v| !PROVIDED.contains(&v.as_str())),
        );
        Ok(())
    })
}

fn walk_strings(
    v: &Value,
    at: &str,
    f: &mut dyn FnMut(&str, &str) -> Result<(), TemplateError>,
) -> Result<(), TemplateError> {
    match v {
        Value::String(s) if is_template(s) => f(at, s),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                walk_strings(x, &format!("{at}.{i}"), f)?;
            }
            Ok(())
        }
        Value::Object(o) => {
            for (k, x) in o {
                walk_strings(x, &format!("{at}.{k}"), f)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

impl Library {
    pub fn new() -> Self {
        Library {
            env: environment(),
            versions: HashMap::new(),
        }
    }

    /// Templates (names) held, across tenants.
    pub fn len(&self) -> usize {
        self.versions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.versions.is_empty()
    }

    /// Compiles and adds one version (checked with [`TemplateBody::check`]).
    pub fn insert(
        &mut self,
        tenant: TenantId,
        name: &str,
        version: u32,
        body: &TemplateBody,
    ) -> Result<(), TemplateError> {
        let checked = body.check()?;
        let mut variants = HashMap::new();
        for (tag, parts) in &body.locales {
            let tag = locale::normalize(tag);
            let mut compiled = HashMap::new();
            for (key, part) in parts {
                let Some(k) = PartKey::parse(key) else {
                    continue;
                };
                let prefix = format!("{}/{name}/{version}/{tag}/{key}", tenant.0);
                compiled.insert(k, self.node(part, &prefix)?);
            }
            variants.insert(tag, compiled);
        }
        self.versions
            .entry((tenant, name.to_string()))
            .or_default()
            .insert(
                version,
                Arc::new(Compiled {
                    variants,
                    variables: checked.variables,
                    default_parts: checked.default_parts,
                }),
            );
        Ok(())
    }

    fn node(&mut self, v: &Value, path: &str) -> Result<Node, TemplateError> {
        Ok(match v {
            Value::String(s) if is_template(s) => {
                // An `html` field is escaped as HTML (minijinja escapes by
                // the name's extension); everything else is plain text.
                let name = if path.ends_with("/html") || path.ends_with(".html") {
                    format!("{path}.html")
                } else {
                    path.to_string()
                };
                self.env
                    .add_template_owned(name.clone(), s.clone())
                    .map_err(|e| TemplateError::new(path, e.to_string()))?;
                Node::Text(name)
            }
            Value::Array(a) => Node::Array(
                a.iter()
                    .enumerate()
                    .map(|(i, x)| self.node(x, &format!("{path}.{i}")))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(o) => Node::Object(
                o.iter()
                    .map(|(k, x)| Ok((k.clone(), self.node(x, &format!("{path}.{k}"))?)))
                    .collect::<Result<_, TemplateError>>()?,
            ),
            other => Node::Literal(other.clone()),
        })
    }

    fn compiled(
        &self,
        tenant: TenantId,
        r: &TemplateRef,
    ) -> Result<(u32, &Arc<Compiled>), RenderError> {
        let versions = self
            .versions
            .get(&(tenant, r.name.clone()))
            .ok_or_else(|| RenderError::UnknownTemplate {
                name: r.name.clone(),
            })?;
        match r.version {
            Some(v) => versions
                .get(&v)
                .map(|c| (v, c))
                .ok_or(RenderError::UnknownVersion {
                    name: r.name.clone(),
                    version: v,
                }),
            None => versions
                .iter()
                .next_back()
                .map(|(v, c)| (*v, c))
                .ok_or_else(|| RenderError::UnknownTemplate {
                    name: r.name.clone(),
                }),
        }
    }

    /// The version `r` names (its latest when unpinned), if stored.
    pub fn info(&self, tenant: TenantId, r: &TemplateRef) -> Result<VersionInfo<'_>, RenderError> {
        let (version, c) = self.compiled(tenant, r)?;
        Ok(VersionInfo {
            version,
            variables: &c.variables,
            default_parts: &c.default_parts,
        })
    }

    /// Renders the `part` of the template `r` names for a reader of `locale`
    /// with the variables of `ctx` (a JSON object: the sender's data and what
    /// Herald adds, such as `subject` and `timezone`).
    pub fn render(
        &self,
        tenant: TenantId,
        r: &TemplateRef,
        part: PartKey,
        locale_tag: Option<&str>,
        ctx: &Value,
    ) -> Result<Rendered, RenderError> {
        let (version, c) = self.compiled(tenant, r)?;
        let chain = locale::chain(locale_tag);
        let found = chain.iter().find_map(|tag| {
            c.variants
                .get(tag)
                .and_then(|v| v.get(&part))
                .map(|n| (tag, n))
        });
        let Some((tag, node)) = found else {
            return Err(RenderError::NoPart {
                name: r.name.clone(),
                version,
                part: part.as_str(),
                locale: chain.first().cloned().unwrap_or_default(),
            });
        };
        let vars = minijinja::Value::from_serialize(ctx);
        let message = self
            .fill(node, &vars)
            .map_err(|(field, message)| RenderError::Failed {
                name: r.name.clone(),
                version,
                field: format!("locales.{tag}.{}{field}", part.as_str()),
                message,
            })?;
        Ok(Rendered {
            version,
            locale: tag.clone(),
            message,
        })
    }

    fn fill(&self, node: &Node, vars: &minijinja::Value) -> Result<Value, (String, String)> {
        Ok(match node {
            Node::Literal(v) => v.clone(),
            Node::Text(name) => {
                let field = || {
                    name.rsplit_once('/')
                        .map(|(_, f)| {
                            let f = f.strip_suffix(".html").unwrap_or(f);
                            f.split_once('.')
                                .map(|(_, p)| format!(".{p}"))
                                .unwrap_or_default()
                        })
                        .unwrap_or_default()
                };
                let t = self
                    .env
                    .get_template(name)
                    .map_err(|e| (field(), e.to_string()))?;
                let s = t.render(vars).map_err(|e| (field(), e.to_string()))?;
                if s.len() > MAX_RENDERED_BYTES {
                    return Err((
                        field(),
                        format!("renders {} bytes; at most {MAX_RENDERED_BYTES}", s.len()),
                    ));
                }
                Value::String(s)
            }
            Node::Array(a) => Value::Array(
                a.iter()
                    .map(|n| self.fill(n, vars))
                    .collect::<Result<_, _>>()?,
            ),
            Node::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, n)| Ok((k.clone(), self.fill(n, vars)?)))
                    .collect::<Result<_, (String, String)>>()?,
            ),
        })
    }
}
