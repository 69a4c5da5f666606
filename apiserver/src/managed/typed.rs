//! Objects walked by their schema, as structured-merge-diff's `typed` package walks them: the
//! set of fields an object sets, the merge of an applied configuration into an object, the
//! comparison of two objects, and the removal of fields. What a list or a map is comes from
//! the built-in kinds' schema (`crate::schema`) or a custom resource's structural schema
//! (`crate::custom::Props`, as apiextensions-apiserver's type converter reads it); an object
//! of an unknown type is taken as structured-merge-diff deduces one: objects field by field,
//! lists whole.
//!
//! It reads and builds JSON values; it knows nothing of managers or requests.

use serde_json::{Map, Value};

use super::fields::{Element, FieldSet};
use crate::custom::Props;
use crate::schema::{F, Kind, MapValue, Message, REPEATED, Shape, Special};

/// Where a value sits in the schema.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ty<'a> {
    /// An object of a built-in message, field by field.
    Message(&'static Message),
    /// A list merged by element: key fields, or the values themselves (`None`).
    List(Elem<'a>, Option<Keys<'a>>),
    /// A map from names to values, entry by entry.
    Map(Elem<'a>),
    /// A value of a custom resource, by its CRD's schema at this node: objects field by field
    /// (unless `x-kubernetes-map-type: atomic`), lists by `x-kubernetes-list-type` (`map` by
    /// its keys, `set` by value, else whole, as kube-openapi's `schemaconv` converts them).
    Custom(&'a Props),
    /// A custom resource itself: as [`Ty::Custom`], but its `metadata` is ObjectMeta (the
    /// CRD's OpenAPI references it there).
    Resource(&'a Props),
    /// Owned and replaced whole: a scalar, an atomic list, map or message.
    Leaf,
    /// No schema: objects field by field, lists whole.
    Deduced,
}

/// What a list or map holds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Elem<'a> {
    Message(&'static Message),
    Custom(&'a Props),
    Leaf,
}

/// The key fields of a list merged by key.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Keys<'a> {
    /// A built-in list's (`+listMapKey`s or its patch merge key).
    Builtin(&'static [&'static str]),
    /// A CRD's `x-kubernetes-list-map-keys`, and the items' schema (for the keys' defaults).
    Custom(&'a [String], Option<&'a Props>),
}

impl<'a> Keys<'a> {
    fn names(self) -> Vec<&'a str> {
        match self {
            Keys::Builtin(names) => names.to_vec(),
            Keys::Custom(names, _) => names.iter().map(String::as_str).collect(),
        }
    }

    /// The value a key field an element omits has, as its schema defaults it.
    fn default(self, name: &str) -> Option<Value> {
        match self {
            // The one key field Kubernetes defaults (ports' protocol), as its schema does.
            Keys::Builtin(_) => (name == "protocol").then(|| Value::String("TCP".into())),
            Keys::Custom(_, items) => items.and_then(|i| i.property(name)).and_then(|p| p.default.clone()),
        }
    }
}

impl<'a> Elem<'a> {
    fn ty(self) -> Ty<'a> {
        match self {
            Elem::Message(m) if m.atomic => Ty::Leaf,
            Elem::Message(m) => Ty::Message(m),
            Elem::Custom(p) => Ty::Custom(p),
            Elem::Leaf => Ty::Leaf,
        }
    }

    fn of_message(index: u16) -> Elem<'a> {
        match crate::schema::message(index) {
            // Time, Quantity, IntOrString, raw JSON: values, not objects of fields.
            Some(m) if m.special == Special::None => Elem::Message(m),
            _ => Elem::Leaf,
        }
    }
}

impl<'a> Ty<'a> {
    /// The type of objects of `kind` in `api_version`; a kind without a schema is deduced.
    pub(crate) fn of_kind(api_version: &str, kind: &str) -> Ty<'static> {
        crate::schema::message_for(api_version, kind)
            .and_then(crate::schema::message)
            .map_or(Ty::Deduced, |m| Elem::Message(m).ty())
    }

    /// The type of custom resources whose CRD version has the structural schema `root`.
    pub(crate) fn of_custom(root: &'a Props) -> Ty<'a> {
        Ty::Resource(root)
    }

    fn of_field(f: &F) -> Ty<'a> {
        let F(_, _, kind, flags, shape) = *f;
        let elem = match kind {
            Kind::Msg(i) | Kind::Map(MapValue::Msg(i)) => Elem::of_message(i),
            _ => Elem::Leaf,
        };
        match (kind, shape) {
            (_, Shape::Atomic) => Ty::Leaf,
            (Kind::Map(_), _) => Ty::Map(elem),
            (_, Shape::Set) if flags & REPEATED != 0 => Ty::List(elem, None),
            (_, Shape::Keys(keys)) if flags & REPEATED != 0 => Ty::List(elem, Some(Keys::Builtin(keys))),
            _ if flags & REPEATED != 0 => Ty::Leaf,
            _ => elem.ty(),
        }
    }

    /// The type of field or entry `name` of an object of this type.
    fn child(self, name: &str) -> Ty<'a> {
        match self {
            Ty::Message(m) => m.field_named(name).map_or(Ty::Deduced, Ty::of_field),
            Ty::Map(elem) => elem.ty(),
            Ty::Resource(_) if name == "metadata" => Ty::of_kind("meta.k8s.io/v1", "ObjectMeta"),
            // A field the schema does not declare (under preserve-unknown-fields, or of an
            // object without properties): deduced, as kube-openapi's element type for them.
            Ty::Custom(p) | Ty::Resource(p) => p.field(name).map_or(Ty::Deduced, Ty::Custom),
            Ty::Deduced => Ty::Deduced,
            Ty::List(..) | Ty::Leaf => Ty::Leaf,
        }
    }

    /// How a value of this type is walked.
    fn walk(self, v: &Value) -> Walk<'a> {
        match (self, v) {
            (Ty::Custom(p) | Ty::Resource(p), Value::Object(_)) if p.map_type.as_deref() == Some("atomic") => {
                Walk::Leaf
            }
            (Ty::Message(_) | Ty::Map(_) | Ty::Custom(_) | Ty::Resource(_) | Ty::Deduced, Value::Object(_)) => {
                Walk::Object
            }
            (Ty::List(elem, keys), Value::Array(_)) => Walk::List(elem, keys),
            (Ty::Custom(p), Value::Array(_)) => {
                let items = p.items.as_deref();
                let elem = items.map_or(Elem::Leaf, Elem::Custom);
                match p.list_type.as_deref() {
                    Some("map") if !p.list_map_keys.is_empty() => {
                        Walk::List(elem, Some(Keys::Custom(&p.list_map_keys, items)))
                    }
                    Some("set") => Walk::List(elem, None),
                    // `atomic`, or no list type: a CRD's lists are atomic unless they say.
                    _ => Walk::Leaf,
                }
            }
            _ => Walk::Leaf,
        }
    }
}

enum Walk<'a> {
    Object,
    List(Elem<'a>, Option<Keys<'a>>),
    Leaf,
}

/// The path element of a list element: its key fields (sorted by name, as
/// structured-merge-diff's `KeyByFields`), or its value.
fn element_of(item: &Value, keys: Option<Keys<'_>>) -> Element {
    match keys {
        None => Element::Value(item.to_string()),
        Some(keys) => {
            let mut key = std::collections::BTreeMap::new();
            for k in keys.names() {
                if let Some(v) = item.get(k).cloned().or_else(|| keys.default(k)) {
                    key.insert(k, v);
                }
            }
            Element::Key(serde_json::to_string(&key).unwrap_or_default())
        }
    }
}

fn items<'v>(list: &'v [Value], keys: Option<Keys<'_>>) -> Vec<(Element, &'v Value)> {
    list.iter().map(|v| (element_of(v, keys), v)).collect()
}

/// The fields `v` sets (`ToFieldSet`): its leaves, and each element of a list merged by element.
pub(crate) fn field_set(v: &Value, ty: Ty<'_>) -> FieldSet {
    let mut set = FieldSet::default();
    fill(v, ty, &mut set);
    set
}

fn fill(v: &Value, ty: Ty<'_>, set: &mut FieldSet) {
    match (ty.walk(v), v) {
        (Walk::Object, Value::Object(map)) => {
            for (k, child) in map {
                fill(child, ty.child(k), set.child_mut(Element::Field(k.clone())));
            }
        }
        (Walk::List(elem, keys), Value::Array(list)) => {
            for (e, item) in items(list, keys) {
                let node = set.child_mut(e);
                node.member = true;
                if keys.is_some() {
                    fill(item, elem.ty(), node);
                }
            }
        }
        _ => set.member = true,
    }
}

/// `config` merged into `live` (`Merge`): the config's values win, objects and lists merged by
/// element are merged element by element, the rest replaced.
pub(crate) fn merge(live: &Value, config: &Value, ty: Ty<'_>) -> Value {
    match (ty.walk(config), live, config) {
        (Walk::Object, Value::Object(l), Value::Object(r)) if !(l.is_empty() && r.is_empty()) => {
            let mut out = l.clone();
            for (k, rv) in r {
                let merged = match l.get(k) {
                    Some(lv) => merge(lv, rv, ty.child(k)),
                    None => rv.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Walk::List(elem, keys), Value::Array(l), Value::Array(r)) => Value::Array(merge_list(l, r, elem, keys)),
        _ => config.clone(),
    }
}

/// structured-merge-diff's list merge: the live order kept, shared elements in the config's
/// order, the config's new elements where it has them.
fn merge_list(l: &[Value], r: &[Value], elem: Elem<'_>, keys: Option<Keys<'_>>) -> Vec<Value> {
    let (lhs, rhs) = (items(l, keys), items(r, keys));
    let in_rhs = |e: &Element| rhs.iter().any(|(x, _)| x == e);
    let in_lhs = |e: &Element| lhs.iter().any(|(x, _)| x == e);
    let mut shared = rhs.iter().filter(|(e, _)| in_lhs(e)).map(|(e, _)| e.clone()).collect::<Vec<_>>().into_iter();
    let mut next_shared = shared.next();
    let mut merged_rhs: Vec<Element> = Vec::new();
    let mut out = Vec::with_capacity(l.len().max(r.len()));
    let merge_item = |e: &Element, rv: &Value| match lhs.iter().find(|(x, _)| x == e) {
        Some((_, lv)) if keys.is_some() => merge(lv, rv, elem.ty()),
        _ => rv.clone(),
    };
    let (mut li, mut ri) = (0, 0);
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            let (pe, _) = &lhs[li];
            if *pe == rhs[ri].0 {
                merged_rhs.push(pe.clone());
                out.push(merge_item(pe, rhs[ri].1));
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if in_rhs(pe) && next_shared.as_ref().is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            let (pe, lv) = &lhs[li];
            if !in_rhs(pe) {
                out.push((*lv).clone());
                li += 1;
                continue;
            } else if merged_rhs.contains(pe) {
                li += 1;
            }
        }
        if ri < rhs.len() {
            let (pe, rv) = &rhs[ri];
            merged_rhs.push(pe.clone());
            out.push(merge_item(pe, rv));
            ri += 1;
            if next_shared.as_ref() == Some(pe) {
                next_shared = shared.next();
            }
        }
    }
    out
}

/// What changed from `old` to `new` (`Compare`).
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub(crate) added: FieldSet,
    pub(crate) removed: FieldSet,
    pub(crate) modified: FieldSet,
}

impl Comparison {
    /// Added or modified: what an update takes ownership of.
    pub(crate) fn changed(&self) -> FieldSet {
        self.added.union(&self.modified)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.modified.is_empty()
    }
}

pub(crate) fn compare(old: &Value, new: &Value, ty: Ty<'_>) -> Comparison {
    let mut c = Comparison::default();
    compare_at(Some(old), Some(new), ty, &mut Cursor::default(), &mut c);
    c
}

/// The path being compared, and the nodes for it in each result set.
#[derive(Default)]
struct Cursor {
    path: Vec<Element>,
}

fn compare_at(l: Option<&Value>, r: Option<&Value>, ty: Ty<'_>, at: &mut Cursor, c: &mut Comparison) {
    let probe = r.or(l).unwrap_or(&Value::Null);
    match ty.walk(probe) {
        Walk::Object if l.is_none_or(Value::is_object) && r.is_none_or(Value::is_object) => {
            let empty = Map::new();
            let (lm, rm) =
                (l.and_then(Value::as_object).unwrap_or(&empty), r.and_then(Value::as_object).unwrap_or(&empty));
            let mut keys: Vec<&String> = lm.keys().chain(rm.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                at.path.push(Element::Field(k.clone()));
                compare_at(lm.get(k), rm.get(k), ty.child(k), at, c);
                at.path.pop();
            }
            node(l, r, at, c);
        }
        Walk::List(elem, keys) if l.is_none_or(Value::is_array) && r.is_none_or(Value::is_array) => {
            let none: Vec<Value> = Vec::new();
            let la = l.and_then(Value::as_array).unwrap_or(&none);
            let ra = r.and_then(Value::as_array).unwrap_or(&none);
            let (li, ri) = (items(la, keys), items(ra, keys));
            let mut elements: Vec<&Element> = li.iter().chain(ri.iter()).map(|(e, _)| e).collect();
            elements.sort();
            elements.dedup();
            for e in elements {
                let lv = li.iter().find(|(x, _)| x == e).map(|(_, v)| *v);
                let rv = ri.iter().find(|(x, _)| x == e).map(|(_, v)| *v);
                at.path.push(e.clone());
                match keys {
                    Some(_) => compare_at(lv, rv, elem.ty(), at, c),
                    None => leaf(lv, rv, at, c),
                }
                at.path.pop();
            }
            node(l, r, at, c);
        }
        _ => leaf(l, r, at, c),
    }
}

/// An object or list node itself: added or removed as a whole.
fn node(l: Option<&Value>, r: Option<&Value>, at: &Cursor, c: &mut Comparison) {
    match (l, r) {
        (None, Some(_)) => c.added.insert(&at.path),
        (Some(_), None) => c.removed.insert(&at.path),
        _ => {}
    }
}

fn leaf(l: Option<&Value>, r: Option<&Value>, at: &Cursor, c: &mut Comparison) {
    match (l, r) {
        (None, Some(_)) => c.added.insert(&at.path),
        (Some(_), None) => c.removed.insert(&at.path),
        (Some(a), Some(b)) if a != b => c.modified.insert(&at.path),
        _ => {}
    }
}

/// `v` without the fields of `remove` (`RemoveItems`), but for what `keep` holds under a
/// removed node: an element another manager owns a field of stays, with the fields owned.
pub(crate) fn remove(v: &Value, remove: &FieldSet, keep: &FieldSet, ty: Ty<'_>) -> Value {
    match (ty.walk(v), v) {
        (Walk::Object, Value::Object(map)) => {
            let mut out = Map::new();
            for (k, child) in map {
                let e = Element::Field(k.clone());
                match remove.child(&e) {
                    None => {
                        out.insert(k.clone(), child.clone());
                    }
                    Some(r) => {
                        let kept = keep.child(&e).cloned().unwrap_or_default();
                        if r.member && kept.is_empty() {
                            continue;
                        }
                        let sub = FieldSet { member: false, children: r.children.clone() };
                        out.insert(k.clone(), remove_under(child, &sub, &kept, ty.child(k), r.member));
                    }
                }
            }
            Value::Object(out)
        }
        (Walk::List(elem, keys), Value::Array(list)) => {
            let mut out = Vec::with_capacity(list.len());
            for (e, item) in items(list, keys) {
                match remove.child(&e) {
                    None => out.push(item.clone()),
                    Some(r) => {
                        let kept = keep.child(&e).cloned().unwrap_or_default();
                        if r.member && kept.is_empty() {
                            continue;
                        }
                        let sub = FieldSet { member: false, children: r.children.clone() };
                        out.push(remove_under(item, &sub, &kept, elem.ty(), r.member));
                    }
                }
            }
            Value::Array(out)
        }
        _ => v.clone(),
    }
}

/// Inside a node that is removed (`whole`) but holds kept fields: only those stay, and the
/// key fields of an element (without which it is no element); otherwise the fields of `r`.
fn remove_under(v: &Value, r: &FieldSet, keep: &FieldSet, ty: Ty<'_>, whole: bool) -> Value {
    if !whole {
        return remove(v, r, keep, ty);
    }
    match (ty.walk(v), v) {
        (Walk::Object, Value::Object(map)) => {
            let mut out = Map::new();
            for (k, child) in map {
                let e = Element::Field(k.clone());
                if let Some(kept) = keep.child(&e) {
                    let value = if kept.member {
                        child.clone()
                    } else {
                        remove_under(child, &FieldSet::default(), kept, ty.child(k), true)
                    };
                    out.insert(k.clone(), value);
                }
            }
            Value::Object(out)
        }
        _ => v.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Ty<'static> {
        Ty::of_kind("apps/v1", "Deployment")
    }

    #[test]
    fn containers_merge_by_name_and_ports_by_port_and_protocol() {
        let live = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "a:1", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
            {"name": "b", "image": "b:1"}]}}}});
        let config = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "b", "image": "b:2"},
            {"name": "a", "ports": [{"containerPort": 80}, {"containerPort": 81}]},
            {"name": "c", "image": "c:1"}]}}}});
        let merged = merge(&live, &config, deployment());
        let containers = &merged["spec"]["template"]["spec"]["containers"];
        let names: Vec<&str> = containers.as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["b", "a", "c"], "shared elements in the config's order, new ones where it has them");
        assert_eq!(containers[0]["image"], "b:2");
        assert_eq!(containers[1]["image"], "a:1", "a field the config leaves out is kept");
        assert_eq!(containers[1]["ports"].as_array().unwrap().len(), 2, "port 80/TCP matched without protocol");
    }

    #[test]
    fn field_sets_own_leaves_and_elements() {
        let config = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        let set = field_set(&config, deployment());
        let paths = set.paths();
        for p in [
            ".metadata.labels.app",
            ".spec.replicas",
            ".spec.selector",
            ".spec.template.spec.containers[name=\"c\"]",
            ".spec.template.spec.containers[name=\"c\"].image",
        ] {
            assert!(paths.contains(&p.to_string()), "{p} in {paths:?}");
        }
        assert!(!paths.contains(&".spec.selector.matchLabels.app".to_string()), "LabelSelector is atomic");
    }

    #[test]
    fn custom_resources_follow_their_crds_list_and_map_types() {
        let root = Props::parse(&json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
                "items": {"type": "object", "properties": {"port": {"type": "integer"},
                    "protocol": {"type": "string", "default": "TCP"}, "name": {"type": "string"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "hosts": {"type": "array", "items": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}));
        let ty = Ty::of_custom(&root);
        let config = json!({"metadata": {"finalizers": ["f"]}, "spec": {"ports": [{"port": 80, "name": "web"}],
            "tags": ["a"], "hosts": ["h"], "selector": {"k": "v"}, "extra": {"x": {"y": 1}, "l": [1]}}});
        let paths = field_set(&config, ty).paths();
        for p in [
            ".metadata.finalizers[=\"f\"]",
            ".spec.ports[port=80,protocol=\"TCP\"]",
            ".spec.ports[port=80,protocol=\"TCP\"].name",
            ".spec.tags[=\"a\"]",
            ".spec.hosts",
            ".spec.selector",
            ".spec.extra.x.y",
            ".spec.extra.l",
        ] {
            assert!(paths.contains(&p.to_string()), "{p} in {paths:?}");
        }
        assert!(!paths.contains(&".spec.selector.k".to_string()), "an atomic map is owned whole: {paths:?}");
        let live =
            json!({"spec": {"ports": [{"port": 80, "protocol": "UDP", "name": "dns"}], "tags": ["b"], "hosts": ["g"]}});
        let merged = merge(&live, &config, ty);
        assert_eq!(merged["spec"]["ports"].as_array().unwrap().len(), 2, "{merged}");
        assert_eq!(merged["spec"]["tags"], json!(["b", "a"]));
        assert_eq!(merged["spec"]["hosts"], json!(["h"]), "a list without a list type is replaced");
    }

    #[test]
    fn compare_and_remove_follow_the_schema() {
        let old = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        let new = json!({"spec": {"replicas": 4, "paused": true, "template": {"spec": {"containers": []}}}});
        let c = compare(&old, &new, deployment());
        assert_eq!(c.modified.paths(), [".spec.replicas"]);
        assert_eq!(c.added.paths(), [".spec.paused"]);
        let removed = c.removed.paths();
        assert!(removed.contains(&".spec.template.spec.containers[name=\"c\"].image".to_string()), "{removed:?}");
        let mut r = FieldSet::default();
        r.insert(&[Element::Field("spec".into()), Element::Field("replicas".into())]);
        let out = remove(&old, &r, &FieldSet::default(), deployment());
        assert_eq!(out, json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}));
    }
}
