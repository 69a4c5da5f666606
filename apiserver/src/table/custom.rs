//! Custom resources' columns: a CRD version's additionalPrinterColumns, printed as the apiextensions table convertor
//! (`apiextensions-apiserver/pkg/registry/customresource/tableconvertor`) does, with the JSONPath subset those columns
//! use in practice. The CRD objects themselves, like any kind without a printer, get the parent's default convertor.

use jiff::Timestamp;
use serde_json::Value;

use super::{CREATION_TIMESTAMP_DOC, NAME_COLUMN, Row, age, column, int, spec_column, text};

/// The columns of a custom resource: its name, then the CRD's.
pub(super) fn columns(columns: &[CustomColumn]) -> Vec<Value> {
    let mut out = vec![spec_column(&NAME_COLUMN)];
    out.extend(columns.iter().map(|c| column(&c.name, &c.kind, &c.format, &c.description, c.priority)));
    out
}

pub(super) fn row(columns: &[CustomColumn], obj: &Value, now: Timestamp) -> Row {
    let mut cells = vec![Value::from(text(obj, "/metadata/name"))];
    cells.extend(columns.iter().map(|c| c.cell(obj, now)));
    Row::new(cells)
}

/// One additionalPrinterColumn. `path` is None when the JSONPath is outside the supported subset (or invalid):
/// the column is still listed, with empty cells, rather than hiding the columns after it as upstream does.
pub(crate) struct CustomColumn {
    name: String,
    kind: String,
    format: String,
    description: String,
    priority: i64,
    path: Option<Vec<Step>>,
}

impl CustomColumn {
    pub(super) fn from_crd(columns: &Value) -> Vec<CustomColumn> {
        let defined = columns.as_array().map_or(&[][..], Vec::as_slice);
        if defined.is_empty() {
            // apiextensions serves this column when a CRD version declares none.
            return vec![CustomColumn {
                name: "Age".into(),
                kind: "date".into(),
                format: String::new(),
                description: CREATION_TIMESTAMP_DOC.into(),
                priority: 0,
                path: parse_json_path(".metadata.creationTimestamp"),
            }];
        }
        defined
            .iter()
            .map(|c| {
                let json_path = text(c, "/jsonPath");
                let description = match text(c, "/description") {
                    "" => format!("Custom resource definition column (in JSONPath format): {json_path}"),
                    d => d.to_string(),
                };
                CustomColumn {
                    name: text(c, "/name").into(),
                    kind: text(c, "/type").into(),
                    format: text(c, "/format").into(),
                    description,
                    priority: int(c, "/priority").unwrap_or(0),
                    path: parse_json_path(json_path),
                }
            })
            .collect()
    }

    /// The tableconvertor's cell: the first JSONPath match, shaped by the column type; null when nothing matches.
    fn cell(&self, obj: &Value, now: Timestamp) -> Value {
        let Some(path) = &self.path else { return Value::Null };
        let Some(value) = eval_json_path(path, obj).ok().and_then(|found| found.into_iter().next()) else {
            return Value::Null;
        };
        match (self.kind.as_str(), value) {
            (_, Value::Null) => Value::Null,
            ("string", Value::String(s)) => s.as_str().into(),
            ("string", Value::Number(n)) => go_number_text(n).into(),
            ("string", Value::Bool(b)) => b.to_string().into(),
            ("string", other) => serde_json::to_string(other).map_or(Value::Null, Value::from),
            ("integer", Value::Number(n)) => {
                n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).map_or(Value::Null, Value::from)
            }
            ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
            ("boolean", Value::Bool(b)) => Value::Bool(*b),
            ("date", Value::String(s)) => match s.as_str() {
                "" | "null" => "<unknown>".into(),
                s => s.parse::<Timestamp>().map_or_else(|_| "<invalid>".into(), |t| age(now, Some(t)).into()),
            },
            _ => Value::Null,
        }
    }
}

/// Go's `fmt.Print` of a decoded JSON number: integers as-is, floats as `%v` (shortest digits, exponent form
/// outside 1e-4 <= |f| < 1e6, e.g. "1.5e+06").
fn go_number_text(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let Some(f) = n.as_f64() else { return n.to_string() };
    let scientific = format!("{f:e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else { return f.to_string() };
    let Ok(exponent) = exponent.parse::<i32>() else { return f.to_string() };
    if (-4..6).contains(&exponent) {
        return f.to_string();
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
}

// ---- a JSONPath subset: what additionalPrinterColumns use in practice (.a.b, ['a.b'], [n], [*], [?(@.x=="y")]).

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    Filter(Box<Filter>),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: Vec<Step>,
    // None: an existence test, `[?(@.x)]`.
    compare: Option<(Op, Operand)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Literal(Value),
    Path(Vec<Step>),
}

fn parse_json_path(path: &str) -> Option<Vec<Step>> {
    let path = path.trim();
    // Users sometimes paste kubectl's `{...}` template form or a leading `$`.
    let path = path.strip_prefix('{').and_then(|p| p.strip_suffix('}')).unwrap_or(path);
    let path = path.strip_prefix('$').unwrap_or(path);
    if path == "." {
        return Some(Vec::new());
    }
    let (steps, rest) = parse_steps(path)?;
    rest.is_empty().then_some(steps)
}

/// Parses steps until the input ends or something that is not a step starts; returns the steps and the rest.
fn parse_steps(mut s: &str) -> Option<(Vec<Step>, &str)> {
    let mut steps = Vec::new();
    loop {
        if let Some(rest) = s.strip_prefix('.') {
            if rest.starts_with('.') {
                return None; // recursive descent: not supported
            }
            let mut name = String::new();
            let mut end = rest.len();
            let mut chars = rest.char_indices();
            while let Some((i, c)) = chars.next() {
                if c == '\\' {
                    // A backslash escapes the next character, as in `.metadata.labels.app\.kubernetes\.io/name`.
                    name.push(chars.next()?.1);
                } else if matches!(c, '.' | '[' | ']' | ',' | '$' | '@' | '{' | '}' | '(' | ')') || c.is_whitespace() {
                    end = i;
                    break;
                } else {
                    name.push(c);
                }
            }
            if name.is_empty() {
                return None;
            }
            steps.push(if name == "*" { Step::All } else { Step::Field(name) });
            s = &rest[end..];
        } else if let Some(rest) = s.strip_prefix("[?(") {
            let close = filter_end(rest)?;
            steps.push(Step::Filter(Box::new(parse_filter(&rest[..close])?)));
            s = rest[close..].strip_prefix(")]")?;
        } else if let Some(rest) = s.strip_prefix('[') {
            let close = bracket_end(rest)?;
            let inner = rest[..close].trim();
            steps.push(if inner == "*" {
                Step::All
            } else if let Some(key) = unquote(inner) {
                Step::Field(key)
            } else {
                Step::Index(inner.parse().ok()?)
            });
            s = &rest[close + 1..];
        } else {
            return Some((steps, s));
        }
    }
}

/// Index of the `)` that closes a `[?(` filter (followed by `]`), skipping quoted text. The first such `)]` ends the
/// filter, so filters cannot nest (as upstream), which also keeps parsing from recursing more than one level.
fn filter_end(s: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == ')' && s[i + 1..].starts_with(']') => return Some(i),
            None => {}
        }
    }
    None
}

/// Index of the `]` closing a bracket step, skipping quoted text.
fn bracket_end(s: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == ']' => return Some(i),
            None => {}
        }
    }
    None
}

fn unquote(s: &str) -> Option<String> {
    let quote = s.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = s.strip_prefix(quote)?.strip_suffix(quote)?;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.push(chars.next()?);
        } else {
            out.push(c);
        }
    }
    Some(out)
}

fn parse_filter(expr: &str) -> Option<Filter> {
    // Like upstream: the left side runs up to the first operator character, the operator is the run of them.
    let Some(op_start) = expr.find(['!', '<', '>', '=']) else {
        return Some(Filter { left: parse_current_path(expr.trim())?, compare: None });
    };
    let op_len = expr[op_start..].find(|c: char| !matches!(c, '!' | '<' | '>' | '=')).unwrap_or(expr.len() - op_start);
    let op = match &expr[op_start..op_start + op_len] {
        "==" => Op::Eq,
        "!=" => Op::Ne,
        "<" => Op::Lt,
        ">" => Op::Gt,
        "<=" => Op::Le,
        ">=" => Op::Ge,
        _ => return None,
    };
    let left = parse_current_path(expr[..op_start].trim())?;
    let right = expr[op_start + op_len..].trim();
    let operand = if right.starts_with('@') {
        Operand::Path(parse_current_path(right)?)
    } else if let Some(s) = unquote(right) {
        Operand::Literal(Value::String(s))
    } else {
        // Numbers and true/false; JSON's grammar is close enough to upstream's literals.
        Operand::Literal(serde_json::from_str(right).ok().filter(|v: &Value| v.is_number() || v.is_boolean())?)
    };
    Some(Filter { left, compare: Some((op, operand)) })
}

fn parse_current_path(s: &str) -> Option<Vec<Step>> {
    let (steps, rest) = parse_steps(s.strip_prefix('@')?)?;
    rest.is_empty().then_some(steps)
}

/// All matches of `steps` under `root`, in document order. Missing keys yield no match (upstream's
/// AllowMissingKeys); Err for what upstream reports as an error (filtering a non-list, mixed-type comparisons),
/// which the caller also shows as an empty cell.
fn eval_json_path<'a>(steps: &[Step], root: &'a Value) -> Result<Vec<&'a Value>, ()> {
    let mut current = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            if value.is_null() {
                continue;
            }
            match step {
                Step::Field(name) => next.extend(value.as_object().and_then(|m| m.get(name))),
                Step::Index(i) => {
                    let list = value.as_array().ok_or(())?;
                    let index = if *i < 0 { i + list.len() as i64 } else { *i };
                    let element = usize::try_from(index).ok().and_then(|i| list.get(i)).ok_or(())?;
                    next.push(element);
                }
                Step::All => match value {
                    Value::Array(list) => next.extend(list),
                    Value::Object(map) => next.extend(map.values()),
                    _ => return Err(()),
                },
                Step::Filter(filter) => {
                    for element in value.as_array().ok_or(())? {
                        if filter.matches(element)? {
                            next.push(element);
                        }
                    }
                }
            }
        }
        current = next;
    }
    Ok(current)
}

impl Filter {
    fn matches(&self, element: &Value) -> Result<bool, ()> {
        let lefts = eval_json_path(&self.left, element)?;
        let Some((op, operand)) = &self.compare else { return Ok(!lefts.is_empty()) };
        let right = match operand {
            Operand::Literal(v) => v,
            Operand::Path(path) => {
                let rights = eval_json_path(path, element)?;
                match rights.as_slice() {
                    [] => return Ok(false),
                    [one] => *one,
                    _ => return Err(()),
                }
            }
        };
        let left = match lefts.as_slice() {
            [] => return Ok(false),
            [one] => *one,
            _ => return Err(()),
        };
        let ordering = match (left, right) {
            (Value::String(a), Value::String(b)) => a.cmp(b),
            (Value::Number(a), Value::Number(b)) => {
                let (a, b) = (a.as_f64().ok_or(())?, b.as_f64().ok_or(())?);
                a.partial_cmp(&b).ok_or(())?
            }
            (Value::Bool(a), Value::Bool(b)) if matches!(op, Op::Eq | Op::Ne) => a.cmp(b),
            _ => return Err(()),
        };
        Ok(match op {
            Op::Eq => ordering.is_eq(),
            Op::Ne => ordering.is_ne(),
            Op::Lt => ordering.is_lt(),
            Op::Gt => ordering.is_gt(),
            Op::Le => ordering.is_le(),
            Op::Ge => ordering.is_ge(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::{ago, cells, columns, now};
    use crate::table::{NAME_DOC, Printer, render};
    use serde_json::json;

    /// The example widget printed with the CRD columns `columns`.
    fn widgets_table(columns: &Value) -> Value {
        render("example.com/v1", "Widget", &[widget()], now(), "Metadata", json!({}), Printer::of(None, Some(columns)))
    }

    fn widget() -> Value {
        json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {
                "name": "gizmo",
                "creationTimestamp": ago(3600 * 5),
                "labels": {"app.kubernetes.io/name": "gizmo"},
            },
            "spec": {"replicas": 3, "size": 2.5, "paused": false, "ports": [80, 443], "owner": {"team": "a"}},
            "status": {
                "conditions": [
                    {"type": "Synced", "status": "True"},
                    {"type": "Ready", "status": "False", "lastTransitionTime": ago(40)},
                ],
                "observedAt": "not a time",
            },
        })
    }

    #[test]
    fn custom_resource_columns() {
        let columns = json!([
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {
                "name": "Ready",
                "type": "string",
                "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status",
                "description": "Readiness",
            },
            {"name": "Since", "type": "date", "jsonPath": ".status.conditions[?(@.type=='Ready')].lastTransitionTime"},
            {"name": "Size", "type": "number", "jsonPath": ".spec.size", "priority": 1},
            {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused", "format": "flag"},
            {"name": "Port", "type": "integer", "jsonPath": ".spec.ports[-1]"},
            {"name": "Owner", "type": "string", "jsonPath": ".spec.owner"},
            {"name": "App", "type": "string", "jsonPath": ".metadata.labels['app.kubernetes.io/name']"},
            {"name": "Observed", "type": "date", "jsonPath": ".status.observedAt"},
            {"name": "Missing", "type": "string", "jsonPath": ".status.nothing.here"},
            {"name": "Mistyped", "type": "integer", "jsonPath": ".metadata.name"},
            {"name": "Unsupported", "type": "string", "jsonPath": "..name"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ]);
        let t = widgets_table(&columns);
        let defs = &t["columnDefinitions"];
        assert_eq!(defs.as_array().unwrap().len(), 14);
        assert_eq!(defs[0], column("Name", "string", "name", NAME_DOC, 0));
        let replicas_doc = "Custom resource definition column (in JSONPath format): .spec.replicas";
        assert_eq!(defs[1], column("Replicas", "integer", "", replicas_doc, 0));
        assert_eq!(defs[2]["description"], "Readiness");
        assert_eq!(json!([defs[4]["priority"], defs[5]["format"]]), json!([1, "flag"]));
        assert_eq!(
            cells(&t, 0),
            json!([
                "gizmo",
                3,
                "False",
                "40s",
                2.5,
                false,
                443,
                "{\"team\":\"a\"}",
                "gizmo",
                "<invalid>",
                null,
                null,
                null,
                "5h"
            ])
        );
    }

    #[test]
    fn custom_resource_without_columns_gets_age() {
        let t = widgets_table(&json!([]));
        assert_eq!(columns(&t), json!([["Name", 0], ["Age", 0]]));
        assert_eq!(t["columnDefinitions"][1]["type"], "date");
        assert_eq!(cells(&t, 0), json!(["gizmo", "5h"]));
    }

    #[test]
    fn json_path_subset() {
        let doc = widget();
        let eval = |path: &str| -> Option<Value> {
            let steps = parse_json_path(path)?;
            eval_json_path(&steps, &doc).ok().map(|found| found.into_iter().cloned().collect())
        };
        assert_eq!(eval(".spec.ports[*]"), Some(json!([80, 443])));
        assert_eq!(eval(".spec.owner.*"), Some(json!(["a"])));
        assert_eq!(eval("{.spec.ports[0]}"), Some(json!([80])));
        assert_eq!(eval("$.spec.replicas"), Some(json!([3])));
        assert_eq!(eval(".status.conditions[?(@.status != 'True')].type"), Some(json!(["Ready"])));
        assert_eq!(eval(".status.conditions[?(@.lastTransitionTime)].type"), Some(json!(["Ready"])));
        assert_eq!(eval(".spec.ports[?(@ > 100)]"), Some(json!([443])));
        assert_eq!(eval(".metadata.labels.app\\.kubernetes\\.io/name"), Some(json!(["gizmo"])));
        assert_eq!(eval(".spec.missing[0]"), Some(json!([])));
        assert_eq!(eval("."), Some(json!([doc.clone()])));
        // Upstream errors; the cell stays empty.
        assert_eq!(eval(".spec.ports[5]"), None);
        assert_eq!(eval(".spec.replicas[?(@.x==1)]"), None);
        assert_eq!(eval(".status.conditions[?(@.type==1)]"), None);
        // Outside the subset, or not JSONPath at all.
        assert_eq!(eval(".spec[0:1]"), None);
        assert_eq!(eval("..name"), None);
        assert_eq!(eval(".spec."), None);
        assert_eq!(eval(".spec.ports[0"), None);
        assert_eq!(eval(".status.conditions[?(@.x[?(@.y)])]"), None, "filters do not nest");
        let deep = format!(".a{}{}", "[?(@.b".repeat(10_000), ")]".repeat(10_000));
        assert_eq!(parse_json_path(&deep), None);
    }

    #[test]
    fn go_style_number_text() {
        let text = |v: Value| go_number_text(v.as_number().unwrap());
        assert_eq!(text(json!(3)), "3");
        assert_eq!(text(json!(2.5)), "2.5");
        assert_eq!(text(json!(3.0)), "3");
        assert_eq!(text(json!(123456.0)), "123456");
        assert_eq!(text(json!(1234567.0)), "1.234567e+06");
        assert_eq!(text(json!(0.0001)), "0.0001");
        assert_eq!(text(json!(0.00001)), "1e-05");
    }
}
