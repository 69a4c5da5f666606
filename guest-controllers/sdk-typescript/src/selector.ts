/**
 * Label selectors with the semantics of apimachinery's `labels.Selector` (as `wasmcm-core`'s
 * `Selector`, which the host matches with): from a `LabelSelector`
 * (`metav1.LabelSelectorAsSelector`) or kubectl's query form (`labels.Parse`), and matching.
 * What {@link Cache.list} takes.
 *
 * @module
 */

/** The operator of a {@link Requirement}, as a `LabelSelectorRequirement`'s `operator`. */
export type Operator = "In" | "NotIn" | "Exists" | "DoesNotExist";

const OPERATORS: readonly Operator[] = ["In", "NotIn", "Exists", "DoesNotExist"];

/** One requirement on one label key, as a `LabelSelectorRequirement`. */
export interface Requirement {
  readonly key: string;
  readonly operator: Operator;
  /** At least one for `In` and `NotIn`; none for `Exists` and `DoesNotExist`. */
  readonly values: readonly string[];
}

/** `metav1.LabelSelector`, as objects carry it in `spec.selector`. */
export interface LabelSelector {
  matchLabels?: { [key: string]: string };
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `key` is not a label key (`[prefix/]name`), if it is not. */
function keyProblem(key: string): string | undefined {
  const parts = key.split("/");
  if (parts.length > 2) {
    return "a qualified name must consist of alphanumeric characters, '-', '_' or '.', with an optional DNS subdomain prefix and '/'";
  }
  const [prefix, name] = parts.length === 2 ? parts : [undefined, parts[0]];
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return "prefix part must be a DNS subdomain";
  }
  if (!name) {
    return "name part must be non-empty";
  }
  if (name.length > 63) {
    return "name part must be no more than 63 characters";
  }
  return NAME_PART.test(name) ? undefined : "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
}

/** Why `value` is not a label value, if it is not. */
function valueProblem(value: string): string | undefined {
  if (value.length > 63) {
    return "must be no more than 63 characters";
  }
  return value === "" || NAME_PART.test(value)
    ? undefined
    : "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
}

function labelKey(key: string): string {
  const k = key.trim();
  const why = keyProblem(k);
  if (why) {
    throw new SyntaxError(`unable to parse requirement: invalid label key ${JSON.stringify(k)}: ${why}`);
  }
  return k;
}

function labelValue(value: string): string {
  const v = value.trim();
  const why = valueProblem(v);
  if (why) {
    throw new SyntaxError(`unable to parse requirement: invalid label value ${JSON.stringify(v)}: ${why}`);
  }
  return v;
}

/** Splits on commas outside parentheses. */
function splitTerms(s: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "(") depth++;
    if (c === ")") depth--;
    if (depth < 0) break;
    if (c === "," && depth === 0) {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  if (depth !== 0) {
    throw new SyntaxError(`unable to parse requirement: unbalanced parentheses in ${JSON.stringify(s)}`);
  }
  terms.push(s.slice(start));
  return terms;
}

/**
 * A label selector: an object matches when it carries every pair of `matchLabels` and meets
 * every requirement of `matchExpressions`; the empty selector selects everything.
 *
 * ```ts
 * const selector = Selector.fromLabelSelector({ matchLabels: { app: "web" } });
 * selector.matches({ app: "web", tier: "front" }); // true
 * Selector.parse("app=web,tier in (front,edge)");  // kubectl's syntax
 * Selector.everything().matches({});               // true
 * ```
 */
export class Selector {
  constructor(
    readonly matchLabels: readonly (readonly [string, string])[] = [],
    readonly matchExpressions: readonly Requirement[] = [],
  ) {}

  /** The empty selector, which matches every object. */
  static everything(): Selector {
    return new Selector();
  }

  /** Whether it has no labels and no requirements (and so matches everything). */
  isEmpty(): boolean {
    return this.matchLabels.length === 0 && this.matchExpressions.length === 0;
  }

  /** `metav1.LabelSelectorAsSelector`: checks operators and their values; throws a `SyntaxError`. */
  static fromLabelSelector(ls: LabelSelector): Selector {
    const labels = Object.entries(ls.matchLabels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const expressions: Requirement[] = [];
    for (const expr of ls.matchExpressions ?? []) {
      const values = expr.values ?? [];
      const operator = OPERATORS.find((o) => o === expr.operator);
      if (operator === undefined) {
        throw new SyntaxError(`${JSON.stringify(expr.operator)} is not a valid label selector operator`);
      }
      if ((operator === "In" || operator === "NotIn") && values.length === 0) {
        throw new SyntaxError(`for 'in', 'notin' operators, values set can't be empty (key ${JSON.stringify(expr.key)})`);
      }
      if ((operator === "Exists" || operator === "DoesNotExist") && values.length > 0) {
        throw new SyntaxError(`values set must be empty for exists and does not exist (key ${JSON.stringify(expr.key)})`);
      }
      expressions.push({ key: expr.key, operator, values: [...values] });
    }
    return new Selector(labels, expressions);
  }

  /** `labels.Parse`: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, comma-joined. */
  static parse(s: string): Selector {
    const expressions: Requirement[] = [];
    for (const raw of splitTerms(s)) {
      const term = raw.trim();
      if (term === "") continue;
      const paren = term.indexOf("(");
      if (term.startsWith("!")) {
        expressions.push({ key: labelKey(term.slice(1)), operator: "DoesNotExist", values: [] });
      } else if (paren >= 0) {
        const words = term.slice(0, paren).trim().split(/\s+/);
        if (words.length !== 2) {
          throw new SyntaxError(`unable to parse requirement: ${JSON.stringify(term)}`);
        }
        const [key, op] = words as [string, string];
        const operator = op === "in" ? "In" : op === "notin" ? "NotIn" : undefined;
        if (!operator) {
          throw new SyntaxError(`unable to parse requirement: unknown operator ${JSON.stringify(op)}`);
        }
        const set = term.slice(paren).trim();
        if (!set.endsWith(")")) {
          throw new SyntaxError(`unable to parse requirement: expected a set in parentheses, found ${JSON.stringify(set)}`);
        }
        const values = set.slice(1, -1).split(",").map(labelValue);
        expressions.push({ key: labelKey(key), operator, values });
      } else if (term.includes("!=")) {
        const at = term.indexOf("!=");
        expressions.push({ key: labelKey(term.slice(0, at)), operator: "NotIn", values: [labelValue(term.slice(at + 2))] });
      } else if (term.includes("=")) {
        const at = term.indexOf("=");
        const value = term.slice(at + 1).replace(/^=/, "");
        expressions.push({ key: labelKey(term.slice(0, at)), operator: "In", values: [labelValue(value)] });
      } else {
        expressions.push({ key: labelKey(term), operator: "Exists", values: [] });
      }
    }
    return new Selector([], expressions);
  }

  /** Whether an object with `labels` is selected. */
  matches(labels: { readonly [key: string]: string } | undefined): boolean {
    const has = (k: string) => labels !== undefined && Object.prototype.hasOwnProperty.call(labels, k);
    return (
      this.matchLabels.every(([k, v]) => has(k) && labels?.[k] === v) &&
      this.matchExpressions.every((r) => {
        const value = has(r.key) ? labels?.[r.key] : undefined;
        switch (r.operator) {
          case "In":
            return value !== undefined && r.values.includes(value);
          case "NotIn":
            return value === undefined || !r.values.includes(value);
          case "Exists":
            return value !== undefined;
          case "DoesNotExist":
            return value === undefined;
        }
      })
    );
  }
}
