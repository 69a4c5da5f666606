//! Label selectors with the semantics of apimachinery's `labels.Selector`: from a
//! `LabelSelector` (`metav1.LabelSelectorAsSelector`) or from the query form kubectl sends
//! (`labels.Parse`), and matching.

use std::collections::BTreeMap;

use crate::validation;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// The operator of a [`Requirement`], as a `LabelSelectorRequirement`'s `operator`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    /// The label is present and its value is one of the requirement's values.
    In,
    /// The label is absent, or its value is none of the requirement's values.
    NotIn,
    /// The label is present, whatever its value (the requirement has no values).
    Exists,
    /// The label is absent (the requirement has no values).
    DoesNotExist,
}

impl Operator {
    /// Every operator, in the order `LabelSelectorRequirement` documents them.
    const ALL: [Operator; 4] = [Operator::In, Operator::NotIn, Operator::Exists, Operator::DoesNotExist];

    /// Its name in a `LabelSelectorRequirement`: `In`, `NotIn`, `Exists`, `DoesNotExist`.
    ///
    /// ```
    /// use wasmcm_core::Operator;
    /// assert_eq!(Operator::DoesNotExist.name(), "DoesNotExist");
    /// assert_eq!(Operator::parse("NotIn"), Some(Operator::NotIn));
    /// assert_eq!(Operator::parse("notin"), None);
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
        }
    }

    /// The operator of that [`name`](Self::name), exactly (as apimachinery compares them).
    pub fn parse(name: &str) -> Option<Operator> {
        Self::ALL.into_iter().find(|o| o.name() == name)
    }
}

/// One requirement of a [`Selector`] on one label key, as a `LabelSelectorRequirement`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The label key, `[prefix/]name`.
    pub key: String,
    /// How the label's value is compared with `values`.
    pub operator: Operator,
    /// The values for [`Operator::In`] and [`Operator::NotIn`] (at least one); empty for
    /// [`Operator::Exists`] and [`Operator::DoesNotExist`].
    pub values: Vec<String>,
}

/// Matching follows apimachinery's `labels.Selector`: an object matches when it carries every
/// pair of `match_labels` and meets every requirement of `match_expressions`; the empty
/// selector selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    /// Labels an object must carry with exactly these values, as `matchLabels`.
    pub match_labels: Vec<(String, String)>,
    /// Requirements an object's labels must all meet, as `matchExpressions`.
    pub match_expressions: Vec<Requirement>,
}

impl Selector {
    /// The empty selector, which matches every object.
    pub fn everything() -> Self {
        Selector::default()
    }

    /// Whether this selector has no labels and no requirements (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// `metav1.LabelSelectorAsSelector`: validates operators and their values.
    pub fn from_label_selector(ls: &LabelSelector) -> Result<Self, String> {
        let match_labels = ls.match_labels.iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut match_expressions = Vec::new();
        for expr in ls.match_expressions.iter().flatten() {
            let values = expr.values.clone().unwrap_or_default();
            let Some(operator) = Operator::parse(&expr.operator) else {
                return Err(format!("{:?} is not a valid label selector operator", expr.operator));
            };
            match operator {
                Operator::In | Operator::NotIn if values.is_empty() => {
                    return Err(format!("for 'in', 'notin' operators, values set can't be empty (key {:?})", expr.key));
                }
                Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                    return Err(format!("values set must be empty for exists and does not exist (key {:?})", expr.key));
                }
                _ => {}
            }
            match_expressions.push(Requirement { key: expr.key.clone(), operator, values });
        }
        Ok(Selector { match_labels, match_expressions })
    }

    /// Whether an object with `labels` is selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| {
                let value = labels.get(&r.key);
                match r.operator {
                    Operator::In => value.is_some_and(|v| r.values.contains(v)),
                    Operator::NotIn => value.is_none_or(|v| !r.values.contains(v)),
                    Operator::Exists => value.is_some(),
                    Operator::DoesNotExist => value.is_none(),
                }
            })
    }

    /// `labels.Parse`: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, comma-joined.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut selector = Selector::default();
        for term in split_terms(s)? {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            let req = if let Some(key) = term.strip_prefix('!') {
                Requirement { key: label_key(key)?, operator: Operator::DoesNotExist, values: vec![] }
            } else if let Some(paren) = term.find('(') {
                let (head, set) = term.split_at(paren);
                let mut words = head.split_whitespace();
                let (Some(key), Some(op), None) = (words.next(), words.next(), words.next()) else {
                    return Err(format!("unable to parse requirement: {term:?}"));
                };
                let operator = match op {
                    "in" => Operator::In,
                    "notin" => Operator::NotIn,
                    other => return Err(format!("unable to parse requirement: unknown operator {other:?}")),
                };
                Requirement { key: label_key(key)?, operator, values: set_values(set)? }
            } else if let Some((key, value)) = term.split_once("!=") {
                Requirement { key: label_key(key)?, operator: Operator::NotIn, values: vec![label_value(value)?] }
            } else if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
                Requirement { key: label_key(key)?, operator: Operator::In, values: vec![label_value(value)?] }
            } else {
                Requirement { key: label_key(term)?, operator: Operator::Exists, values: vec![] }
            };
            selector.match_expressions.push(req);
        }
        Ok(selector)
    }

    /// Matching against optional labels, as objects carry them.
    pub fn matches_opt(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        match labels {
            Some(labels) => self.matches(labels),
            None => self.matches(&BTreeMap::new()),
        }
    }
}

/// Splits on commas outside parentheses.
fn split_terms(s: &str) -> Result<Vec<&str>, String> {
    let (mut depth, mut start, mut terms) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err(format!("unable to parse requirement: unbalanced parentheses in {s:?}"));
        }
    }
    if depth != 0 {
        return Err(format!("unable to parse requirement: unbalanced parentheses in {s:?}"));
    }
    terms.push(&s[start..]);
    Ok(terms)
}

fn set_values(rest: &str) -> Result<Vec<String>, String> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("unable to parse requirement: expected a set in parentheses, found {rest:?}"))?;
    inner.split(',').map(label_value).collect()
}

/// A key as `labels.Parse` takes it: a qualified name (`[prefix/]name`).
fn label_key(k: &str) -> Result<String, String> {
    let k = k.trim();
    match validation::qualified_name(k).first() {
        None => Ok(k.to_string()),
        Some(why) => Err(format!("unable to parse requirement: invalid label key {k:?}: {why}")),
    }
}

fn label_value(v: &str) -> Result<String, String> {
    let v = v.trim();
    match validation::label_value(v).first() {
        None => Ok(v.to_string()),
        Some(why) => Err(format!("unable to parse requirement: invalid label value {v:?}: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    #[test]
    fn empty_selects_everything() {
        assert!(Selector::everything().matches(&labels(&[])));
        assert!(Selector::everything().matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn labels_and_expressions_all_must_hold() {
        let ls = LabelSelector {
            match_labels: Some(labels(&[("app", "web")])),
            match_expressions: Some(vec![
                expr("tier", "In", &["front", "edge"]),
                expr("canary", "DoesNotExist", &[]),
                expr("zone", "NotIn", &["b"]),
                expr("team", "Exists", &[]),
            ]),
        };
        let s = Selector::from_label_selector(&ls).unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "edge"), ("team", "x")])));
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "front"), ("team", "x"), ("zone", "a")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "back"), ("team", "x")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "edge"), ("team", "x"), ("canary", "1")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "edge"), ("team", "x"), ("zone", "b")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "edge")])));
        assert!(!s.matches(&labels(&[("app", "api"), ("tier", "edge"), ("team", "x")])));
    }

    #[test]
    fn query_selectors_parse_like_kubectl() {
        let s = Selector::parse("app=web,tier in (front, edge),env!=prod,team,!canary").unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "edge"), ("team", "a")])));
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "front"), ("team", "a"), ("env", "dev")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "front"), ("team", "a"), ("env", "prod")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "front"), ("team", "a"), ("canary", "1")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "back"), ("team", "a")])));
        let s = Selector::parse("app==web,zone notin (a,b),example.com/team").unwrap();
        assert!(s.matches(&labels(&[("app", "web"), ("example.com/team", "x")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("zone", "a"), ("example.com/team", "x")])));
        assert!(Selector::parse("").unwrap().is_empty());
        for bad in ["a in (b", "a=b c", "-a=b", "a=-b-", "a/b/c=d"] {
            assert!(Selector::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn invalid_selectors_are_rejected() {
        for bad in [expr("a", "Like", &["x"]), expr("a", "In", &[]), expr("a", "Exists", &["x"])] {
            let ls = LabelSelector { match_labels: None, match_expressions: Some(vec![bad]) };
            assert!(Selector::from_label_selector(&ls).is_err());
        }
    }
}
