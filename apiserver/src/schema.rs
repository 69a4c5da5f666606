//! The schema of the built-in kinds, generated at build time from the k8s-pb and k8s-openapi
//! sources (`build/protobuf_schema.rs`): each message's fields with their protobuf tags, JSON
//! names and kinds, for the protobuf decoder, and the list and map semantics of the Kubernetes
//! OpenAPI (`x-kubernetes-list-type`, `-list-map-keys`, `-map-type`, and patch merge keys where
//! no list type is given, as kube-openapi converts them), for server-side apply.
//!
//! Each message also lists its JSON fields by name ([`J`]), with their place in Go's struct
//! order (what kube-apiserver's JSON encoder writes them in, `src/json.rs`), which is also what
//! strict field validation looks names up in (`src/custom/builtin.rs`).
//!
//! It describes; it decodes, encodes and merges nothing.

/// How a message's JSON differs from an object of its fields.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Special {
    None,
    Time,
    MicroTime,
    Duration,
    /// JSON carried as bytes in field 1 (RawExtension, FieldsV1, apiextensions JSON).
    RawJson,
    IntOrString,
    Quantity,
    /// apiextensions' JSONSchemaPropsOr{Bool,Array,StringArray}: Go writes one of the two
    /// fields as the value itself (a schema, or a bool / list), never an object of both.
    SchemaOrBool,
    SchemaOrArray,
    SchemaOrStringArray,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum MapValue {
    Str,
    Bytes,
    Msg(u16),
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    I32,
    I64,
    Bool,
    F64,
    Str,
    Bytes,
    Msg(u16),
    Map(MapValue),
}

pub(crate) const REPEATED: u8 = 1;
/// Keep a zero value: Go's encoder writes every non-pointer field, so zeros are normally noise
/// that Kubernetes JSON omits, but for these fields an explicit zero differs from unset.
pub(crate) const KEEP_ZERO: u8 = 2;
/// An embedded Go struct (`json:",inline"`): its fields go into the parent object.
pub(crate) const INLINE: u8 = 4;

/// How server-side apply merges a list or a map (a message is a map of its fields), and which
/// parts of it a manager owns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A list: replaced whole, owned whole. A map or message: field by field.
    Default,
    /// Replaced whole, owned whole (`+listType=atomic`, `+mapType=atomic`, `+structType=atomic`).
    Atomic,
    /// A list of distinct scalars, merged and owned by value (`+listType=set`).
    Set,
    /// A list of objects merged and owned by these key fields (`+listType=map` and its
    /// `+listMapKey`s, or else `+patchMergeKey` with `+patchStrategy=merge`).
    Keys(&'static [&'static str]),
}

/// One field: tag, JSON name, kind, flags, shape. A tuple so the generated table stays compact.
#[derive(Debug)]
pub(crate) struct F(pub(crate) u32, pub(crate) &'static str, pub(crate) Kind, pub(crate) u8, pub(crate) Shape);

/// One JSON field of a message by name: its rank in Go's struct order (fields of embedded
/// structs in their place) and its kind. Sorted by name.
#[derive(Debug)]
pub(crate) struct J(pub(crate) &'static str, pub(crate) u16, pub(crate) Kind);

#[derive(Debug)]
pub(crate) struct Message {
    pub(crate) name: &'static str,
    pub(crate) special: Special,
    /// Owned and replaced whole by server-side apply (`+structType=atomic`).
    pub(crate) atomic: bool,
    /// Sorted by tag.
    pub(crate) fields: &'static [F],
    /// Its JSON fields, inline-embedded ones included, sorted by name.
    pub(crate) json: &'static [J],
}

include!(concat!(env!("OUT_DIR"), "/protobuf_schema.rs"));

impl Message {
    pub(crate) fn field(&self, tag: u32) -> Option<&'static F> {
        self.fields.binary_search_by_key(&tag, |f| f.0).ok().and_then(|i| self.fields.get(i))
    }

    /// The JSON field named `name` (inline-embedded messages' included).
    pub(crate) fn json_field(&self, name: &str) -> Option<&'static J> {
        self.json.binary_search_by(|j| j.0.cmp(name)).ok().and_then(|i| self.json.get(i))
    }

    /// The field with JSON name `json`, looking into inline-embedded messages.
    pub(crate) fn field_named(&self, json: &str) -> Option<&'static F> {
        self.fields.iter().find_map(|f| match f {
            F(_, name, _, _, _) if *name == json => Some(f),
            F(_, _, Kind::Msg(inner), flags, _) if flags & INLINE != 0 => {
                MESSAGES.get(usize::from(*inner)).and_then(|m| m.field_named(json))
            }
            _ => None,
        })
    }
}

/// The message of a kind, by index into [`MESSAGES`].
pub(crate) fn message(index: u16) -> Option<&'static Message> {
    MESSAGES.get(usize::from(index))
}

/// Whether `api_version` is a built-in group version (one whose kinds have messages); a
/// custom resource's is not, even if its kind shares a name with a meta kind (`Status`).
pub(crate) fn is_built_in(api_version: &str) -> bool {
    // Generated sorted (tested below): this runs for every object a list writes.
    MODULES.binary_search_by(|(v, _)| (*v).cmp(api_version)).is_ok()
}

/// The message of a kind, or of a list or options kind of its group version.
pub(crate) fn message_for(api_version: &str, kind: &str) -> Option<u16> {
    if let Ok(i) = RESOURCES.binary_search_by(|(v, k, _)| (*v, *k).cmp(&(api_version, kind))) {
        return RESOURCES.get(i).map(|r| r.2);
    }
    // Lists and options have no `Resource` entry; they live in the module of the group version,
    // or, for the meta kinds every group version accepts (DeleteOptions, Status), in meta/v1.
    let module = MODULES.iter().find(|(v, _)| *v == api_version).map(|(_, m)| *m);
    let by_name = |name: &str| MESSAGES.binary_search_by(|m| m.name.cmp(name)).ok().and_then(|i| u16::try_from(i).ok());
    module
        .and_then(|m| by_name(&format!("{m}.{kind}")))
        .or_else(|| by_name(&format!("apimachinery.pkg.apis.meta.v1.{kind}")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_generated_tables_are_sorted_for_binary_search() {
        assert!(super::MODULES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(super::RESOURCES.windows(2).all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)));
        assert!(super::MESSAGES.windows(2).all(|w| w[0].name < w[1].name));
        assert!(super::MESSAGES.iter().all(|m| m.json.windows(2).all(|w| w[0].0 < w[1].0)));
        assert!(super::is_built_in("v1") && super::is_built_in("apps/v1") && !super::is_built_in("example.com/v1"));
    }
}
