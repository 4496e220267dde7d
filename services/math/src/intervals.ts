/**
 * Sets of real numbers written as intervals or as inequalities, read into one canonical form — a
 * sorted list of disjoint intervals — so that `-2 < x \le 3` is `(-2, 3]`, `x \ge 5` is `[5, \infty)`,
 * `x < -1 \text{ or } x > 2` (or `x<-1 \cup x>2`) is `(-\infty,-1)\cup(2,\infty)`, `x \ne 3` is
 * `(-\infty,3)\cup(3,\infty)` and `(3,4)\cup(-\infty,0)` is `(-\infty,0)\cup(3,4)`. Each end keeps its
 * kind (open or closed): the bracket kinds must still match. Ends must have numeric values (the
 * caller evaluates them); anything else is not read here.
 * @module
 */
import { bracketed, isVariable, splitTopLevel } from "./structure.js";

/** An end of an interval: its text (a normal form) and its value (±Infinity for an infinite end). */
export interface Endpoint {
  readonly text: string;
  readonly value: number;
}

/** One interval (never empty; an infinite end is open). */
export interface Interval {
  readonly lo: Endpoint;
  readonly hi: Endpoint;
  readonly loClosed: boolean;
  readonly hiClosed: boolean;
}

/** A set of reals as sorted, disjoint intervals, and how it was written. */
export interface IntervalSet {
  readonly intervals: readonly Interval[];
  /** The variable an inequality or `x \in …` names; undefined for bare interval notation. */
  readonly variable?: string;
  /** How many intervals were written (`(0,1)\cup(1,2)` is 2, `x>1` is 1). */
  readonly written: number;
}

/** The numeric value of a normal form (finite, or ±Infinity for `\infty`), undefined when it has none. */
export type ValueOf = (text: string) => number | undefined;

type Relation = "lt" | "le" | "gt" | "ge" | "ne";

/** Relation symbols of a normal form, longest first (whitespace is gone: `5\lex` is `5 \le x`). */
const RELATIONS: readonly (readonly [string, Relation])[] = [
  ["\\leqslant", "le"],
  ["\\geqslant", "ge"],
  ["\\not=", "ne"],
  ["\\leq", "le"],
  ["\\geq", "ge"],
  ["\\neq", "ne"],
  ["\\le", "le"],
  ["\\ge", "ge"],
  ["\\ne", "ne"],
  ["\\lt", "lt"],
  ["\\gt", "gt"],
  ["<=", "le"],
  [">=", "ge"],
  ["!=", "ne"],
  ["<", "lt"],
  [">", "gt"],
  ["≤", "le"],
  ["≥", "ge"],
  ["≠", "ne"],
];

/** Words and symbols for "or" and "and" between conditions (`\text{ or }` is `or` once normalised). */
const OR = /\\text\{\s*or\s*\}|\\lor|\\vee|\\cup|or/;
const AND = /\\text\{\s*and\s*\}|\\land|\\wedge|and/;

/** Equal values of ends, to rounding noise (an infinite end equals only itself). */
const equalValues = (a: number, b: number) =>
  a === b ||
  (Number.isFinite(a) && Number.isFinite(b) && Math.abs(a - b) <= 1e-12 * Math.max(Math.abs(a), Math.abs(b)));

const INFINITE_LO: Endpoint = { text: "-\\infty", value: -Infinity };
const INFINITE_HI: Endpoint = { text: "\\infty", value: Infinity };

/** An interval from its ends, or undefined when it is empty or malformed (`[\infty, …`, `(3, 1)`). */
function interval(lo: Endpoint, hi: Endpoint, loClosed: boolean, hiClosed: boolean): Interval | undefined {
  if (lo.value === Infinity || hi.value === -Infinity) return undefined;
  if ((loClosed && !Number.isFinite(lo.value)) || (hiClosed && !Number.isFinite(hi.value))) return undefined;
  if (lo.value > hi.value && !equalValues(lo.value, hi.value)) return undefined;
  if (equalValues(lo.value, hi.value) && !(loClosed && hiClosed)) return undefined;
  return { lo, hi, loClosed, hiClosed };
}

/** Sorts and merges overlapping or touching intervals: the canonical form of a union. */
export function canonical(intervals: readonly Interval[]): Interval[] {
  // Closed before open at the same lower end; no subtraction of infinities (−∞ − −∞ is NaN).
  const sorted = [...intervals].sort((a, b) =>
    a.lo.value < b.lo.value ? -1 : a.lo.value > b.lo.value ? 1 : Number(b.loClosed) - Number(a.loClosed),
  );
  const out: Interval[] = [];
  for (const next of sorted) {
    const last = out[out.length - 1];
    const touching =
      last !== undefined &&
      (next.lo.value < last.hi.value ||
        (equalValues(next.lo.value, last.hi.value) && (last.hiClosed || next.loClosed)));
    if (!last || !touching) {
      out.push(next);
      continue;
    }
    const sameEnd = equalValues(next.hi.value, last.hi.value);
    const hi = next.hi.value > last.hi.value && !sameEnd ? next : last;
    out[out.length - 1] = {
      lo: last.lo,
      loClosed: last.loClosed,
      hi: hi.hi,
      hiClosed: sameEnd ? last.hiClosed || next.hiClosed : hi.hiClosed,
    };
  }
  return out;
}

function intersect(a: Interval, b: Interval): Interval | undefined {
  const loFrom = a.lo.value > b.lo.value ? a : a.lo.value < b.lo.value ? b : undefined;
  const hiFrom = a.hi.value < b.hi.value ? a : a.hi.value > b.hi.value ? b : undefined;
  const lo = (loFrom ?? a).lo;
  const hi = (hiFrom ?? a).hi;
  const loClosed = loFrom ? loFrom.loClosed : a.loClosed && b.loClosed;
  const hiClosed = hiFrom ? hiFrom.hiClosed : a.hiClosed && b.hiClosed;
  return interval(lo, hi, loClosed, hiClosed);
}

/** Splits `a < x \le b` into its terms and relations (outside any group). */
function chainOf(s: string): { terms: string[]; relations: Relation[] } | undefined {
  const terms: string[] = [];
  const relations: Relation[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "{" || c === "(" || c === "[") depth++;
    else if (c === "}" || c === ")" || c === "]") depth--;
    if (depth !== 0) continue;
    const r = RELATIONS.find(([sym]) => s.startsWith(sym, i));
    if (!r) continue;
    terms.push(s.slice(start, i));
    relations.push(r[1]);
    i += r[0].length - 1;
    start = i + 1;
  }
  terms.push(s.slice(start));
  if (relations.length === 0 || terms.some((t) => t === "")) return undefined;
  return { terms, relations };
}

/**
 * One chain of relations about one variable — `x \ge 5`, `5 \le x`, `-2 < x \le 3`, `x \ne 3` — as
 * intervals (two for `\ne`); undefined for anything else (`x < y`, `a < x > b`, `2x > 4`).
 */
function conditionOf(s: string, evaluate: ValueOf): { variable: string; intervals: Interval[] } | undefined {
  const chain = chainOf(s);
  if (!chain || chain.terms.length > 3) return undefined;
  let { terms, relations } = chain;
  if (relations.every((r) => r === "gt" || r === "ge")) {
    terms = [...terms].reverse();
    relations = relations.map((r): Relation => (r === "gt" ? "lt" : "le")).reverse();
  }
  const at = terms.findIndex(isVariable);
  if (at === -1 || terms.filter(isVariable).length !== 1 || (terms.length === 3 && at !== 1))
    return undefined;
  const variable = terms[at]!;
  const bound = (t: string): Endpoint | undefined => {
    const value = evaluate(t);
    return value === undefined ? undefined : { text: t, value };
  };
  const bounds = terms.map((t, k) => (k === at ? undefined : bound(t)));
  if (bounds.some((b, k) => k !== at && b === undefined)) return undefined;
  if (relations.includes("ne")) {
    const b = bounds[1 - at];
    if (relations.length !== 1 || !b || !Number.isFinite(b.value)) return undefined;
    const parts = [interval(INFINITE_LO, b, false, false), interval(b, INFINITE_HI, false, false)];
    return parts.every((p) => p !== undefined) ? { variable, intervals: parts } : undefined;
  }
  if (!relations.every((r) => r === "lt" || r === "le")) return undefined;
  // Now every relation reads left to right as "less than": the variable's left term is its lower bound.
  const lo = at > 0 ? bounds[at - 1]! : INFINITE_LO;
  const hi = at < terms.length - 1 ? bounds[at + 1]! : INFINITE_HI;
  const loClosed = at > 0 && relations[at - 1] === "le";
  const hiClosed = at < terms.length - 1 && relations[at] === "le";
  const one = interval(lo, hi, loClosed, hiClosed);
  return one ? { variable, intervals: [one] } : undefined;
}

/** Conditions joined by "or" (a union) of conditions joined by "and" (an intersection), about one variable. */
function inequalityOf(normal: string, evaluate: ValueOf): IntervalSet | undefined {
  if (/\\(?:neg|lnot)/.test(normal)) return undefined;
  let variable: string | undefined;
  const union: Interval[] = [];
  for (const disjunct of normal.split(OR)) {
    let current: Interval[] | undefined;
    for (const conjunct of disjunct.split(AND)) {
      const c = conditionOf(conjunct, evaluate);
      if (!c || (variable !== undefined && c.variable !== variable)) return undefined;
      variable = c.variable;
      current = current
        ? current.flatMap((a) => c.intervals.map((b) => intersect(a, b)).filter((x) => x !== undefined))
        : c.intervals;
    }
    union.push(...(current ?? []));
  }
  const intervals = canonical(union);
  if (intervals.length === 0) return undefined;
  return variable === undefined ? undefined : { intervals, variable, written: intervals.length };
}

/** `(a, b]`, `[a, \infty)`, `(…)\cup[…]`, optionally `x \in …`; every end must have a value. */
function notationOf(normal: string, evaluate: ValueOf): IntervalSet | undefined {
  const member = /^([^\\]+|\\[a-zA-Z]+)\\in(?=[([\\]|R$)(.+)$/.exec(normal);
  if (member && !isVariable(member[1]!)) return undefined;
  const body = member ? member[2]! : normal;
  // `x \in \mathbb{R}` (`\mathbb{R}` is `R` once normalised; a bare `R` may be a variable, so only after `\in`).
  if (member && /^(?:R|\\mathbb\{R\})$/.test(body)) {
    return {
      intervals: [{ lo: INFINITE_LO, hi: INFINITE_HI, loClosed: false, hiClosed: false }],
      written: 1,
      variable: member[1]!,
    };
  }
  const parts = splitTopLevel(body, "\\cup");
  const intervals: Interval[] = [];
  for (const part of parts) {
    const b = bracketed(part);
    const items = b ? splitTopLevel(b.inner, ",") : [];
    if (!b || items.length !== 2) return undefined;
    const ends = items.map((t) => ({ text: t, value: evaluate(t) }));
    if (ends.some((e) => e.value === undefined)) return undefined;
    const [lo, hi] = ends as Endpoint[];
    const one = interval(lo!, hi!, b.open === "[", b.close === "]");
    if (!one) return undefined;
    intervals.push(one);
  }
  return {
    intervals: canonical(intervals),
    written: parts.length,
    ...(member ? { variable: member[1]! } : {}),
  };
}

/**
 * The set of reals a normal form writes, as intervals or inequalities, or undefined when it writes
 * none (a number, an equation, an interval with a symbolic end).
 */
export function intervalSetOf(normal: string, evaluate: ValueOf): IntervalSet | undefined {
  return notationOf(normal, evaluate) ?? inequalityOf(normal, evaluate);
}

/** Whether two interval sets are the same set: the same intervals, ends of the same kind and equal ends. */
export function sameIntervalSet(
  a: IntervalSet,
  b: IntervalSet,
  sameEnd: (x: Endpoint, y: Endpoint) => boolean,
): boolean {
  return (
    a.intervals.length === b.intervals.length &&
    a.intervals.every((x, k) => {
      const y = b.intervals[k]!;
      return (
        x.loClosed === y.loClosed && x.hiClosed === y.hiClosed && sameEnd(x.lo, y.lo) && sameEnd(x.hi, y.hi)
      );
    })
  );
}
