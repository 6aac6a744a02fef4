//! What every stage registry shares: kinds named in YAML as `kind: NAME`, each with a typed,
//! strictly parsed entry; lookup with a "did you mean"; the tagged `{kind, ...fields}` form an
//! entry serialises to (its identity); and the Markdown kinds table for README.
//!
//! The stage registries are [`crate::strategies`] (chunkers) and [`crate::retrievers`].

use serde::de::DeserializeOwned;
use serde::Serialize;

/// What every stage module would otherwise write by hand, from one declaration: the entry
/// type `$entry` (a `Box` around the object-safe `DynParams` face of the stage's params
/// trait `$params`, which has `KIND` and `SUMMARY`), the blanket `impl<P: $params> DynParams`
/// forwarding every listed method, the `Kind` alias, `kind_of`, `kinds_markdown`, the entry's
/// `new`, `from_yaml`, `kind` and `params`, one public forwarding method per method listed
/// under `public`/`public_mut` (those under `private` are reachable only as `self.0.m(..)`,
/// for wrappers that add to them), and `Clone`, `PartialEq` (by serialised form),
/// `Serialize` (the tagged form) and `Deserialize` (through `from_yaml`). `$what` names the
/// stage in messages (`"strategy"`).
macro_rules! stage_entry {
    (
        $(#[$entry_doc:meta])*
        pub struct $entry:ident: $params:ident, $what:literal;
        public {
            $( $(#[$doc:meta])* fn $m:ident(&self $(, $a:ident: $t:ty)*) -> $r:ty; )*
        }
        public_mut {
            $( $(#[$mdoc:meta])* fn $mm:ident(&mut self $(, $ma:ident: $mt:ty)*); )*
        }
        private {
            $( fn $pm:ident(&self $(, $pa:ident: $pt:ty)*) -> $pr:ty; )*
        }
    ) => {
        /// Object-safe face of the stage's params trait, implemented for every kind; it
        /// serialises as the kind's params (erased-serde), so an entry serialises straight
        /// from its typed params.
        trait DynParams: erased_serde::Serialize + std::fmt::Debug + Send + Sync {
            fn kind(&self) -> &'static str;
            fn to_yaml(&self) -> serde_yaml::Value;
            fn clone_box(&self) -> Box<dyn DynParams>;
            fn as_any(&self) -> &dyn std::any::Any;
            fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
            $( fn $m(&self $(, $a: $t)*) -> $r; )*
            $( fn $mm(&mut self $(, $ma: $mt)*); )*
            $( fn $pm(&self $(, $pa: $pt)*) -> $pr; )*
        }

        erased_serde::serialize_trait_object!(DynParams);

        impl<P: $params> DynParams for P {
            fn kind(&self) -> &'static str {
                P::KIND
            }
            fn to_yaml(&self) -> serde_yaml::Value {
                $crate::registry::tagged_yaml(P::KIND, self)
            }
            fn clone_box(&self) -> Box<dyn DynParams> {
                Box::new(self.clone())
            }
            fn as_any(&self) -> &dyn std::any::Any {
                self
            }
            fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
                self
            }
            $( fn $m(&self $(, $a: $t)*) -> $r {
                $params::$m(self $(, $a)*)
            } )*
            $( fn $mm(&mut self $(, $ma: $mt)*) {
                $params::$mm(self $(, $ma)*)
            } )*
            $( fn $pm(&self $(, $pa: $pt)*) -> $pr {
                $params::$pm(self $(, $pa)*)
            } )*
        }

        $(#[$entry_doc])*
        #[derive(Debug)]
        pub struct $entry(Box<dyn DynParams>);

        /// One registered kind of this stage ([`crate::registry::Kind`] over the entry type).
        pub type Kind = $crate::registry::Kind<$entry>;

        /// The registry entry of params type `P`.
        pub const fn kind_of<P: $params>() -> Kind {
            Kind {
                name: P::KIND,
                summary: P::SUMMARY,
                parse: parse_as::<P>,
            }
        }

        fn parse_as<P: $params>(fields: serde_yaml::Value) -> Result<$entry, String> {
            $crate::registry::parse_as(fields, $entry::new::<P>)
        }

        /// This stage's kinds table for README.md (Markdown rows `| name | summary |`),
        /// generated from [`KINDS`]; a test keeps README's copy equal to it.
        pub fn kinds_markdown() -> String {
            $crate::registry::kinds_markdown(KINDS)
        }

        impl $entry {
            /// Wraps typed params.
            pub fn new<P: $params>(params: P) -> Self {
                $entry(Box::new(params))
            }

            /// Parses an entry from its YAML mapping `{kind: NAME, ...fields}`.
            ///
            /// # Errors
            /// A missing or unknown `kind` (with the known kinds and the closest), unknown
            /// fields (naming the kinds they belong to), missing fields (naming the kind),
            /// values of the wrong type (naming the field).
            pub fn from_yaml(value: serde_yaml::Value) -> Result<Self, String> {
                $crate::registry::parse_entry(value, KINDS, $what)
            }

            /// The kind's registry name.
            pub fn kind(&self) -> &'static str {
                self.0.kind()
            }

            /// The typed params, when the entry is of kind `P`.
            pub fn params<P: $params>(&self) -> Option<&P> {
                self.0.as_any().downcast_ref()
            }

            /// The typed params, mutable, when the entry is of kind `P`.
            pub fn params_mut<P: $params>(&mut self) -> Option<&mut P> {
                self.0.as_any_mut().downcast_mut()
            }

            $( $(#[$doc])* pub fn $m(&self $(, $a: $t)*) -> $r {
                self.0.$m($($a),*)
            } )*

            $( $(#[$mdoc])* pub fn $mm(&mut self $(, $ma: $mt)*) {
                self.0.$mm($($ma),*)
            } )*
        }

        impl Clone for $entry {
            fn clone(&self) -> Self {
                $entry(self.0.clone_box())
            }
        }

        impl PartialEq for $entry {
            fn eq(&self, other: &Self) -> bool {
                self.0.to_yaml() == other.0.to_yaml()
            }
        }

        impl serde::Serialize for $entry {
            /// `{kind, ...fields in declaration order}`, straight from the typed params (the
            /// JSON a cell id hashes; no YAML value in between).
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let tagged = $crate::registry::Tagged {
                    kind: self.0.kind(),
                    params: &*self.0,
                };
                serde::Serialize::serialize(&tagged, s)
            }
        }

        impl<'de> serde::Deserialize<'de> for $entry {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let value = <serde_yaml::Value as serde::Deserialize>::deserialize(d)?;
                $entry::from_yaml(value).map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use stage_entry;

/// One registered kind of a stage whose entries are `C`.
pub struct Kind<C: 'static> {
    /// The registry name (`kind: NAME`).
    pub name: &'static str,
    /// One line for `ls` and README: what it does, its fields and defaults.
    pub summary: &'static str,
    /// Parses the entry's fields (the mapping without `kind`).
    pub parse: fn(serde_yaml::Value) -> Result<C, String>,
}

/// The tagged form `{kind, ...fields}` an entry serialises to.
#[derive(Serialize)]
pub(crate) struct Tagged<'a, P: ?Sized + Serialize> {
    /// The registry name.
    pub(crate) kind: &'static str,
    /// The kind's params, flattened after `kind`.
    #[serde(flatten)]
    pub(crate) params: &'a P,
}

/// `{kind: KIND, ...params' fields in declaration order}` as YAML; cell ids hash its JSON, so
/// a kind's field order is part of its results' identity.
///
/// # Panics
/// Never for serde-derived params of plain data (strings, numbers, options, lists).
pub fn tagged_yaml<P: Serialize>(kind: &'static str, params: &P) -> serde_yaml::Value {
    serde_yaml::to_value(Tagged { kind, params }).expect("stage params serialise")
}

/// Deserialises the fields of a `P` entry and wraps them, naming the field of a type error
/// (`field `ear.radius`: invalid type …`).
///
/// # Errors
/// serde's message: unknown fields (with the expected ones), missing fields, wrong types.
pub fn parse_as<P: DeserializeOwned, C>(
    fields: serde_yaml::Value,
    wrap: fn(P) -> C,
) -> Result<C, String> {
    match serde_path_to_error::deserialize::<_, P>(fields) {
        Ok(p) => Ok(wrap(p)),
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner().to_string();
            if path == "." || inner.starts_with("unknown field") || inner.starts_with("missing") {
                Err(inner)
            } else {
                Err(format!("field `{path}`: {inner}"))
            }
        }
    }
}

/// Parses an entry `{kind: NAME, ...}` of the stage `what` (`strategy`, `retriever`) against
/// `kinds`.
///
/// # Errors
/// Not a mapping, a missing or non-string `kind` (listing the kinds), an unknown kind (with
/// the closest name), or the kind's own parse error. An unknown field that another kind
/// takes is named as not applying to this kind; a missing field names the kind needing it.
pub fn parse_entry<C>(
    value: serde_yaml::Value,
    kinds: &[Kind<C>],
    what: &str,
) -> Result<C, String> {
    let serde_yaml::Value::Mapping(mut map) = value else {
        return Err(format!(
            "a {what} entry is a mapping with `kind` and its fields"
        ));
    };
    let kind = match map.remove("kind") {
        Some(serde_yaml::Value::String(k)) => k,
        Some(_) => return Err("field `kind`: give the kind's name as a string".into()),
        None => {
            return Err(format!(
                "missing field `kind` (one of {})",
                kind_list(kinds)
            ))
        }
    };
    let Some(k) = kinds.iter().find(|k| k.name == kind) else {
        let close = kinds
            .iter()
            .map(|k| (strsim::levenshtein(&kind, k.name), k.name))
            .min()
            .filter(|(d, _)| *d <= 3)
            .map(|(_, n)| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        return Err(format!(
            "unknown variant `{kind}`, expected one of {}{close}",
            kind_list(kinds)
        ));
    };
    let fields = serde_yaml::Value::Mapping(map.clone());
    (k.parse)(fields).map_err(|e| {
        if let Some(n) = nested_origin(&map, &e) {
            // The problem is inside a nested entry (`over:`, `pieces:`): name the chain, and
            // keep the nested entry's own message (its did-you-mean, its kind).
            return format!("field `{n}`: {e}");
        }
        if e.starts_with("missing field `") {
            return format!("{e} (required by kind `{}`)", k.name);
        }
        // A field of another kind: say where it belongs rather than only "unknown".
        let Some(field) = e
            .strip_prefix("unknown field `")
            .and_then(|r| r.split('`').next())
        else {
            return e;
        };
        let owners: Vec<String> = kinds
            .iter()
            .filter(|o| o.name != k.name && accepts_field(o, &map, field))
            .map(|o| format!("`{}`", o.name))
            .collect();
        if owners.is_empty() {
            e
        } else {
            format!(
                "field `{field}` does not apply to kind `{}` (it is a setting of {}); remove it",
                k.name,
                owners.join(", ")
            )
        }
    })
}

/// The key of the nested entry (a mapping value of `map` with a `kind`, as `over:` and
/// `pieces:` are) that error `e` of parsing `map` comes from: the field `e` names is a key of
/// that entry and not of `map`, or `e` names that entry's kind.
fn nested_origin(map: &serde_yaml::Mapping, e: &str) -> Option<String> {
    let field = e.split('`').nth(1)?;
    map.iter().find_map(|(key, value)| {
        let inner = value.as_mapping()?;
        let kind = inner.get("kind")?.as_str()?;
        let from_inner = (inner.contains_key(field) && !map.contains_key(field))
            || e.contains(&format!("`{kind}`"));
        from_inner
            .then(|| key.as_str().map(str::to_string))
            .flatten()
    })
}

/// True when kind `k` takes `field`: parsing `{field: value}` alone as `k` fails, if at all,
/// on something other than that field being unknown (a missing required field, say).
fn accepts_field<C>(k: &Kind<C>, fields: &serde_yaml::Mapping, field: &str) -> bool {
    let mut only = serde_yaml::Mapping::new();
    if let Some(v) = fields.get(field) {
        only.insert(field.into(), v.clone());
    }
    match (k.parse)(serde_yaml::Value::Mapping(only)) {
        Ok(_) => true,
        Err(e) => !e.starts_with(&format!("unknown field `{field}`")),
    }
}

/// The kinds as `` `a`, `b`, `c` ``.
pub fn kind_list<C>(kinds: &[Kind<C>]) -> String {
    kinds
        .iter()
        .map(|k| format!("`{}`", k.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A kinds table (Markdown rows `| name | summary |`) for README.
pub fn kinds_markdown<C>(kinds: &[Kind<C>]) -> String {
    let mut s = String::from("| kind | what it does, fields (defaults) |\n|---|---|\n");
    for k in kinds {
        s.push_str(&format!("| `{}` | {} |\n", k.name, k.summary));
    }
    s
}

/// Checks that README.md's table between `<!-- MARKER:` and `<!-- end of MARKER -->` is
/// `want`; with `CHUNKBENCH_BLESS=1` it rewrites the table instead.
///
/// # Panics
/// When the markers are missing or the table differs (the message holds the table to paste).
#[cfg(test)]
pub(crate) fn assert_readme_table(marker: &str, want: &str) {
    // The stage tests run in parallel and may rewrite README.md: one at a time.
    static README: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = README.lock().unwrap_or_else(|e| e.into_inner());
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let begin = readme
        .find(&format!("<!-- {marker}:"))
        .unwrap_or_else(|| panic!("README has no `<!-- {marker}:` marker"));
    let body = readme[begin..].find('\n').unwrap() + begin + 1;
    let end = readme
        .find(&format!("<!-- end of {marker} -->"))
        .unwrap_or_else(|| panic!("README has no `<!-- end of {marker} -->` marker"));
    if readme[body..end] != *want {
        if std::env::var_os("CHUNKBENCH_BLESS").is_some() {
            let fixed = format!("{}{want}{}", &readme[..body], &readme[end..]);
            std::fs::write(&path, fixed).unwrap();
        } else {
            panic!("README.md's {marker} table differs from the registry; run with CHUNKBENCH_BLESS=1 or paste:\n{want}");
        }
    }
}
