//! Sets of fields, as structured-merge-diff's `fieldpath.Set`: a tree of path elements whose
//! nodes may be members themselves, and their `FieldsV1` encoding in `managedFields`
//! (`{"f:spec": {"f:replicas": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}`).
//!
//! It knows nothing of objects or schemas: `typed` makes sets from objects.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One step of a path: a field (of an object or a map), an associative list's element by its
/// key fields, a set's element by its value. Ordered as structured-merge-diff orders them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Element {
    Field(String),
    /// The key fields' JSON object, keys sorted (`{"name":"nginx"}`).
    Key(String),
    /// The element's JSON.
    Value(String),
}

impl Element {
    fn encode(&self) -> String {
        match self {
            Element::Field(name) => format!("f:{name}"),
            Element::Key(json) => format!("k:{json}"),
            Element::Value(json) => format!("v:{json}"),
        }
    }

    fn decode(text: &str) -> Result<Element, String> {
        let valid_json = |json: &str| serde_json::from_str::<Value>(json).is_ok();
        match text.split_once(':') {
            Some(("f", name)) => Ok(Element::Field(name.to_string())),
            Some(("k", json)) if valid_json(json) => Ok(Element::Key(json.to_string())),
            Some(("v", json)) if valid_json(json) => Ok(Element::Value(json.to_string())),
            _ => Err(format!("invalid path element {text:?}")),
        }
    }

    /// As kube-apiserver prints a path in a conflict: `.spec`, `[name="nginx"]`, `[=value]`.
    fn display(&self) -> String {
        match self {
            Element::Field(name) => format!(".{name}"),
            Element::Key(json) => {
                let keys: Map<String, Value> = serde_json::from_str(json).unwrap_or_default();
                let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("[{}]", parts.join(","))
            }
            Element::Value(json) => format!("[={json}]"),
        }
    }
}

/// A set of paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    /// The path ending here is in the set.
    pub(crate) member: bool,
    pub(crate) children: BTreeMap<Element, FieldSet>,
}

impl FieldSet {
    pub(crate) fn is_empty(&self) -> bool {
        !self.member && self.children.values().all(FieldSet::is_empty)
    }

    pub(crate) fn child(&self, e: &Element) -> Option<&FieldSet> {
        self.children.get(e)
    }

    pub(crate) fn child_mut(&mut self, e: Element) -> &mut FieldSet {
        self.children.entry(e).or_default()
    }

    /// Inserts the path `path` (relative to this node).
    pub(crate) fn insert(&mut self, path: &[Element]) {
        match path.split_first() {
            None => self.member = true,
            Some((first, rest)) => self.child_mut(first.clone()).insert(rest),
        }
    }

    fn prune_empty(&mut self) {
        self.children.retain(|_, c| {
            c.prune_empty();
            !c.is_empty()
        });
    }

    pub(crate) fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.member |= other.member;
        for (e, c) in &other.children {
            let mine = out.children.entry(e.clone()).or_default();
            *mine = mine.union(c);
        }
        out
    }

    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet { member: self.member && other.member, children: BTreeMap::new() };
        for (e, c) in &self.children {
            if let Some(o) = other.children.get(e) {
                let both = c.intersection(o);
                if !both.is_empty() {
                    out.children.insert(e.clone(), both);
                }
            }
        }
        out
    }

    /// The paths of `self` not in `other` (membership by membership, as `Set.Difference`).
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet { member: self.member && !other.member, children: BTreeMap::new() };
        for (e, c) in &self.children {
            let rest = match other.children.get(e) {
                Some(o) => c.difference(o),
                None => c.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(e.clone(), rest);
            }
        }
        out
    }

    /// Without every path at or under a member of `other` (`Set.RecursiveDifference`).
    pub(crate) fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        if other.member {
            return FieldSet::default();
        }
        let mut out = FieldSet { member: self.member, children: BTreeMap::new() };
        for (e, c) in &self.children {
            let rest = match other.children.get(e) {
                Some(o) => c.recursive_difference(o),
                None => c.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(e.clone(), rest);
            }
        }
        out
    }

    /// Every member path, as kube-apiserver prints them (`.spec.containers[name="x"].image`).
    pub(crate) fn paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect("", &mut out);
        out
    }

    fn collect(&self, prefix: &str, out: &mut Vec<String>) {
        if self.member {
            out.push(prefix.to_string());
        }
        for (e, c) in &self.children {
            c.collect(&format!("{prefix}{}", e.display()), out);
        }
    }

    /// The `fieldsV1` JSON: a member with children is marked by a `.` entry.
    pub(crate) fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.member && !self.children.is_empty() {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for (e, c) in &self.children {
            if !c.is_empty() {
                map.insert(e.encode(), c.to_fields_v1());
            }
        }
        Value::Object(map)
    }

    pub(crate) fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        let Value::Object(map) = v else { return Err("fieldsV1 must be an object".into()) };
        let mut set = FieldSet::default();
        for (k, child) in map {
            if k == "." {
                set.member = true;
                continue;
            }
            let Value::Object(grand) = child else { return Err(format!("fieldsV1 entry {k:?} must be an object")) };
            let mut sub = FieldSet::from_fields_v1(child)?;
            // A leaf (`{}`) is a member.
            if grand.is_empty() {
                sub.member = true;
            }
            set.children.insert(Element::decode(k)?, sub);
        }
        set.prune_empty();
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_v1_round_trips_with_dots_for_members_with_children() {
        let v = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                       "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}},
                                  "f:finalizers": {"v:\"a\"": {}}}});
        let set = FieldSet::from_fields_v1(&v).unwrap();
        assert_eq!(set.to_fields_v1(), v);
        let paths = set.paths();
        assert!(paths.contains(&".metadata.labels".to_string()), "{paths:?}");
        assert!(paths.contains(&".spec.containers[name=\"c\"].image".to_string()), "{paths:?}");
        assert!(paths.contains(&".spec.finalizers[=\"a\"]".to_string()), "{paths:?}");
    }

    #[test]
    fn set_algebra_is_by_membership() {
        let mut a = FieldSet::default();
        a.insert(&[Element::Field("spec".into()), Element::Field("replicas".into())]);
        a.insert(&[Element::Field("spec".into()), Element::Field("paused".into())]);
        let mut b = FieldSet::default();
        b.insert(&[Element::Field("spec".into()), Element::Field("replicas".into())]);
        assert_eq!(a.difference(&b).paths(), [".spec.paused"]);
        assert_eq!(a.intersection(&b).paths(), [".spec.replicas"]);
        let mut spec = FieldSet::default();
        spec.insert(&[Element::Field("spec".into())]);
        assert!(a.recursive_difference(&spec).is_empty());
        assert_eq!(a.difference(&spec), a, "a member is not its children");
    }
}
