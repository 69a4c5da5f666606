//! Objects walked by their schema, as structured-merge-diff's `typed` package walks them: the
//! set of fields an object sets, the merge of an applied configuration into an object, the
//! comparison of two objects, and the removal of fields. What a list or a map is comes from
//! the built-in kinds' schema (`crate::schema`); an object of an unknown type is taken as
//! structured-merge-diff deduces one: objects field by field, lists whole.
//!
//! It reads and builds JSON values; it knows nothing of managers or requests.

use serde_json::{Map, Value};

use super::fields::{Element, FieldSet};
use crate::schema::{F, Kind, MapValue, Message, REPEATED, Shape, Special};

/// Where a value sits in the schema.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ty {
    /// An object of a built-in message, field by field.
    Message(&'static Message),
    /// A list merged by element: key fields, or the values themselves (`None`).
    List(Elem, Option<&'static [&'static str]>),
    /// A map from names to values, entry by entry.
    Map(Elem),
    /// Owned and replaced whole: a scalar, an atomic list, map or message.
    Leaf,
    /// No schema: objects field by field, lists whole.
    Deduced,
}

/// What a list or map holds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Elem {
    Message(&'static Message),
    Leaf,
}

impl Elem {
    fn ty(self) -> Ty {
        match self {
            Elem::Message(m) if m.atomic => Ty::Leaf,
            Elem::Message(m) => Ty::Message(m),
            Elem::Leaf => Ty::Leaf,
        }
    }

    fn of_message(index: u16) -> Elem {
        match crate::schema::message(index) {
            // Time, Quantity, IntOrString, raw JSON: values, not objects of fields.
            Some(m) if m.special == Special::None => Elem::Message(m),
            _ => Elem::Leaf,
        }
    }
}

impl Ty {
    /// The type of objects of `kind` in `api_version`; a kind without a schema is deduced.
    pub(crate) fn of_kind(api_version: &str, kind: &str) -> Ty {
        crate::schema::message_for(api_version, kind)
            .and_then(crate::schema::message)
            .map_or(Ty::Deduced, |m| Elem::Message(m).ty())
    }

    fn of_field(f: &F) -> Ty {
        let F(_, _, kind, flags, shape) = *f;
        let elem = match kind {
            Kind::Msg(i) | Kind::Map(MapValue::Msg(i)) => Elem::of_message(i),
            _ => Elem::Leaf,
        };
        match (kind, shape) {
            (_, Shape::Atomic) => Ty::Leaf,
            (Kind::Map(_), _) => Ty::Map(elem),
            (_, Shape::Set) if flags & REPEATED != 0 => Ty::List(elem, None),
            (_, Shape::Keys(keys)) if flags & REPEATED != 0 => Ty::List(elem, Some(keys)),
            _ if flags & REPEATED != 0 => Ty::Leaf,
            _ => elem.ty(),
        }
    }

    /// The type of field or entry `name` of an object of this type.
    fn child(self, name: &str) -> Ty {
        match self {
            Ty::Message(m) => m.field_named(name).map_or(Ty::Deduced, Ty::of_field),
            Ty::Map(elem) => elem.ty(),
            Ty::Deduced => Ty::Deduced,
            Ty::List(..) | Ty::Leaf => Ty::Leaf,
        }
    }

    /// How a value of this type is walked.
    fn walk(self, v: &Value) -> Walk {
        match (self, v) {
            (Ty::Message(_) | Ty::Map(_) | Ty::Deduced, Value::Object(_)) => Walk::Object,
            (Ty::List(elem, keys), Value::Array(_)) => Walk::List(elem, keys),
            _ => Walk::Leaf,
        }
    }
}

enum Walk {
    Object,
    List(Elem, Option<&'static [&'static str]>),
    Leaf,
}

/// The path element of a list element: its key fields, or its value.
fn element_of(item: &Value, keys: Option<&[&str]>) -> Element {
    match keys {
        None => Element::Value(item.to_string()),
        Some(keys) => {
            let mut key = Map::new();
            for k in keys {
                match item.get(*k) {
                    Some(v) => {
                        key.insert((*k).to_string(), v.clone());
                    }
                    // The one key field Kubernetes defaults (ports' protocol), as its schema does.
                    None if *k == "protocol" => {
                        key.insert((*k).to_string(), Value::String("TCP".into()));
                    }
                    None => {}
                }
            }
            Element::Key(Value::Object(key).to_string())
        }
    }
}

fn items<'a>(list: &'a [Value], keys: Option<&[&str]>) -> Vec<(Element, &'a Value)> {
    list.iter().map(|v| (element_of(v, keys), v)).collect()
}

/// The fields `v` sets (`ToFieldSet`): its leaves, and each element of a list merged by element.
pub(crate) fn field_set(v: &Value, ty: Ty) -> FieldSet {
    let mut set = FieldSet::default();
    fill(v, ty, &mut set);
    set
}

fn fill(v: &Value, ty: Ty, set: &mut FieldSet) {
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
pub(crate) fn merge(live: &Value, config: &Value, ty: Ty) -> Value {
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
fn merge_list(l: &[Value], r: &[Value], elem: Elem, keys: Option<&[&str]>) -> Vec<Value> {
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

pub(crate) fn compare(old: &Value, new: &Value, ty: Ty) -> Comparison {
    let mut c = Comparison::default();
    compare_at(Some(old), Some(new), ty, &mut Cursor::default(), &mut c);
    c
}

/// The path being compared, and the nodes for it in each result set.
#[derive(Default)]
struct Cursor {
    path: Vec<Element>,
}

fn compare_at(l: Option<&Value>, r: Option<&Value>, ty: Ty, at: &mut Cursor, c: &mut Comparison) {
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
pub(crate) fn remove(v: &Value, remove: &FieldSet, keep: &FieldSet, ty: Ty) -> Value {
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
fn remove_under(v: &Value, r: &FieldSet, keep: &FieldSet, ty: Ty, whole: bool) -> Value {
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

    fn deployment() -> Ty {
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
