/**
 * Equivalence of a candidate answer and a reference, in three steps: the normal forms are equal
 * strings (`exact`); both are numbers equal within a relative tolerance (`numeric`); both are
 * expressions of the same variables equal at seeded random points — polynomial identity testing
 * on the mathjs evaluation of the translated LaTeX (`symbolic`). Structured answers are compared
 * element by element (`structure`), in three stages: sets of reals written as intervals, unions or
 * inequalities, as sorted disjoint intervals (`intervals.ts`: `-2 < x \le 3` = `(-2, 3]`, unions in
 * any order; bracket kinds must match); named tuples and assignment lists (`(x, y) = (2, 4)`,
 * `x = 2, y = 4`) against tuples; then sets and bare lists (any order), tuples (in order), matrices
 * (a factored scalar multiplied in), and equations (`x = 3` and `3 = x` are `3` unless the task asks
 * for an equation; two equations are equal when their sides' differences are proportional).
 * @module
 */
import { all, create, type MathNode } from "mathjs";
import { type Endpoint, intervalSetOf, sameIntervalSet } from "./intervals.js";
import { isIrrationalValue, latexToExpression, mayBeIrrational } from "./latex.js";
import { baseNumeralsEqual, choicesEqual, UndecidableAnswerError } from "./normalize.js";
import {
  type Assignment,
  assignedValue,
  assignmentOf,
  inConventionalOrder,
  splitTopLevel,
  structure,
} from "./structure.js";

export { splitTopLevel } from "./structure.js";

// A mathjs instance without the functions that evaluate or define anything (mathjs's own advice for
// untrusted expressions); expressions come from our translator, which emits a whitelist anyway.
const math = create(all, { number: "number" });
const parse = math.parse;
// The same functions on 64-digit decimals: integers past 2^53 (`10^{20}+1`) are told apart exactly.
const bigMath = create(all, { number: "BigNumber", precision: 64 });
const bigParse = bigMath.parse;
const limited = () => {
  throw new Error("disabled");
};
const DISABLED = {
  import: limited,
  createUnit: limited,
  evaluate: limited,
  parse: limited,
  simplify: limited,
  derivative: limited,
  resolve: limited,
  reviver: limited,
};
math.import(DISABLED, { override: true });
bigMath.import(DISABLED, { override: true });

/** How an equivalence was decided. */
export type EquivalenceMethod = "exact" | "numeric" | "symbolic" | "structure" | "text" | "units" | "none";

/** The answer kinds a task may declare (`MathTask.answer_type`); "" infers it. */
export type AnswerType =
  | ""
  | "number"
  | "expression"
  | "equation"
  | "interval"
  | "set"
  | "tuple"
  | "matrix"
  | "text";

/** Options of a comparison. */
export interface EquivalenceOptions {
  /** Relative tolerance of numeric comparison. */
  readonly tolerance: number;
  readonly answerType: AnswerType;
  /**
   * Which steps run (for measuring what each adds): `exact` compares normal forms only (the MATH
   * grader's string test), `numeric` adds numbers within tolerance, `full` adds symbolic and
   * structured comparison.
   * @default "full"
   */
  readonly steps?: "exact" | "numeric" | "full";
}

/** A verdict. */
export interface Equivalence {
  readonly equal: boolean;
  readonly method: EquivalenceMethod;
}

// Seeded points (a fixed LCG): the same answer pair always gets the same verdict.
const POINTS: readonly number[] = (() => {
  let x = 12345;
  const out: number[] = [];
  for (let k = 0; k < 64; k++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push(0.35 + (2.3 * x) / 2147483648);
  }
  return out;
})();

const CONSTANT_SYMBOLS = new Set(["pi", "e", "i", "Infinity"]);

function freeVariables(node: MathNode): string[] {
  const names = new Set<string>();
  node.traverse((n, path, parent) => {
    if (n.type === "SymbolNode" && !(parent?.type === "FunctionNode" && path === "fn")) {
      const name = (n as unknown as { name: string }).name;
      if (!CONSTANT_SYMBOLS.has(name)) names.add(name);
    }
  });
  return [...names].sort();
}

type Complexish = { re: number; im: number };

function toComplex(v: unknown): Complexish | undefined {
  if (typeof v === "number") return { re: v, im: 0 };
  if (typeof v === "boolean") return undefined;
  if (v && typeof v === "object" && "re" in v && "im" in v) {
    const c = v as Complexish;
    return { re: c.re, im: c.im };
  }
  return undefined;
}

/**
 * Absolute difference below which two values are equal whatever their size: rounding noise of a
 * double computation (`\sin\pi` is 1.2e-16, not 0). Relative tolerance alone applies above it, so
 * `10^{-7}` is not `2\cdot10^{-7}` (a floor of 1 on the scale made every pair of small numbers equal).
 */
const ABSOLUTE_FLOOR = 1e-12;

/** Relative tolerance of the symbolic step (values at sample points are exact computations, not roundings). */
const SYMBOLIC_TOLERANCE = 1e-9;

function close(a: Complexish, b: Complexish, tol: number): boolean {
  const scale = Math.max(Math.hypot(a.re, a.im), Math.hypot(b.re, b.im));
  return Math.hypot(a.re - b.re, a.im - b.im) <= Math.max(tol * scale, ABSOLUTE_FLOOR);
}

/**
 * Two real values that are both integers are one answer only when they are the same integer: the
 * relative tolerance is for values that are not exact (`1234567` is not `1234568`, though they differ
 * by less than 1e-6). Past 2^53 doubles cannot tell neighbours apart, so both sides are evaluated
 * again on 64-digit decimals; past that precision the pair is undecidable.
 */
function integersEqual(a: Compiled, b: Compiled, va: Complexish, vb: Complexish): boolean | undefined {
  if (va.im !== 0 || vb.im !== 0 || !Number.isInteger(va.re) || !Number.isInteger(vb.re)) return undefined;
  if (Number.isSafeInteger(va.re) && Number.isSafeInteger(vb.re)) return va.re === vb.re;
  const big = (c: Compiled) => {
    try {
      const v = bigParse(c.text).evaluate({}) as unknown;
      return bigMath.isBigNumber(v) ? v : undefined;
    } catch {
      return undefined;
    }
  };
  const ba = big(a);
  const bb = big(b);
  const limit = bigMath.bignumber("1e60");
  if (!ba || !bb || ba.abs().gte(limit) || bb.abs().gte(limit)) {
    throw new UndecidableAnswerError(
      "an integer value is beyond the precision compared exactly (60 digits); not decided",
    );
  }
  return ba.eq(bb);
}

function finite(c: Complexish): boolean {
  return Number.isFinite(c.re) && Number.isFinite(c.im);
}

interface Compiled {
  readonly node: MathNode;
  readonly vars: string[];
  readonly text: string;
}

/** The parsed expression of a normal form, or undefined when it is not one (then compared as text). */
function compile(normal: string): Compiled | undefined {
  try {
    const text = latexToExpression(normal);
    const node = parse(text);
    return { node, vars: freeVariables(node), text };
  } catch {
    // NotAnExpressionError from the translator, or mathjs's SyntaxError: not an expression.
    return undefined;
  }
}

function evaluateAt(c: Compiled, scope: Record<string, number>): Complexish | undefined {
  try {
    return toComplex(c.node.evaluate({ ...scope }));
  } catch {
    return undefined;
  }
}

const DECIMAL_LITERAL = /^-?\d+(?:\.\d+)?$/;

/**
 * Tolerances up to this one (the service's default) leave two decimal literals exact: `1000000.4` is
 * not `1000000` and `3.0000001` is not `3` — numbers written out are what they say; the tolerance is
 * for a value computed from an expression (`\frac{1}{3}` against `0.3333333`), never for a rational
 * against an irrational one (`0.8660254` is not `\frac{\sqrt3}{2}`, see `rationalAgainstIrrational`). A
 * task that sets a looser tolerance (rounded answers) gets it for literals and irrationals too.
 */
const LITERAL_EXACT_UP_TO = 1e-6;

/**
 * Two values of which one at least is not finite: equal only when both write `\infty` and have the same
 * value; `3` is not `-\infty` (an interval's ends). A non-finite value from an expression that writes
 * no `\infty` is an overflow, undecidable.
 */
function infiniteEqual(ca: Compiled, cb: Compiled, va: Complexish, vb: Complexish): Equivalence {
  const overflow = (c: Compiled, v: Complexish) => !finite(v) && !c.text.includes("Infinity");
  if (overflow(ca, va) || overflow(cb, vb)) {
    throw new UndecidableAnswerError(
      "a value overflows double precision (huge power or factorial); not decided",
    );
  }
  return { equal: va.re === vb.re && va.im === vb.im, method: "numeric" };
}

/**
 * The real value of a variable-free normal form (±Infinity for one that writes `\infty`), undefined
 * when it has none: an interval's end or an inequality's bound (`intervals.ts`).
 */
function realValue(normal: string): number | undefined {
  const c = compile(normal);
  if (!c || c.vars.length > 0) return undefined;
  const v = evaluateAt(c, {});
  if (v?.im !== 0 || Number.isNaN(v.re)) return undefined;
  return Number.isFinite(v.re) || c.text.includes("Infinity") ? v.re : undefined;
}

/**
 * One side is rational by construction (a decimal, a fraction, integers: `3.14159`, `\frac{355}{113}`)
 * and the other irrational (`\pi`): never the same number, whatever their distance, so under the
 * default tolerance an approximation is not the exact answer. A task's looser tolerance accepts it.
 */
function rationalAgainstIrrational(ca: Compiled, va: Complexish, cb: Compiled, vb: Complexish): boolean {
  if (va.im !== 0 || vb.im !== 0) return false;
  const irrational = (c: Compiled, v: Complexish) => isIrrationalValue(c.text, v.re);
  return (
    (!mayBeIrrational(ca.text) && irrational(cb, vb)) || (!mayBeIrrational(cb.text) && irrational(ca, va))
  );
}

/** Compares two scalar (non-structured) normal forms. */
function scalarEqual(a: string, b: string, o: EquivalenceOptions): Equivalence {
  if (a === b) return { equal: true, method: "exact" };
  if (o.steps === "exact") return { equal: false, method: "exact" };
  // Base numerals compare as written: `1011_{2}` is `1011`, never 11 (normalize.ts).
  const numerals = baseNumeralsEqual(a, b);
  if (numerals !== undefined) return { equal: numerals, method: "exact" };
  if (DECIMAL_LITERAL.test(a) && DECIMAL_LITERAL.test(b) && o.tolerance <= LITERAL_EXACT_UP_TO) {
    return { equal: bigMath.bignumber(a).eq(bigMath.bignumber(b)), method: "numeric" };
  }
  // Words (`Evelyn`, `odd`) are text, not products of single-letter variables; case does not matter.
  if (/^[a-zA-Z]{3,}$/.test(a) || /^[a-zA-Z]{3,}$/.test(b)) {
    return { equal: a.toLowerCase() === b.toLowerCase(), method: "text" };
  }
  const ca = compile(a);
  const cb = compile(b);
  if (!ca || !cb) return { equal: a.toLowerCase() === b.toLowerCase(), method: "text" };
  const vars = [...new Set([...ca.vars, ...cb.vars])];
  if (vars.length === 0) {
    const va = evaluateAt(ca, {});
    const vb = evaluateAt(cb, {});
    if (!va || !vb) return { equal: false, method: "none" };
    if (!finite(va) || !finite(vb)) return infiniteEqual(ca, cb, va, vb);
    if (o.tolerance <= LITERAL_EXACT_UP_TO && rationalAgainstIrrational(ca, va, cb, vb)) {
      return { equal: false, method: "numeric" };
    }
    const integers = integersEqual(ca, cb, va, vb);
    if (integers !== undefined) return { equal: integers, method: "numeric" };
    return { equal: close(va, vb, o.tolerance), method: "numeric" };
  }
  if (o.steps === "numeric") return { equal: false, method: "none" };
  // Different variable sets can still be equal (x - x + y vs y), so evaluate on the union.
  let valid = 0;
  for (let k = 0; k + vars.length <= POINTS.length && valid < 6; k += vars.length) {
    const scope: Record<string, number> = {};
    vars.forEach((v, j) => {
      scope[v] = POINTS[k + j]!;
    });
    const va = evaluateAt(ca, scope);
    const vb = evaluateAt(cb, scope);
    if (!va || !vb || !finite(va) || !finite(vb)) continue;
    if (!close(va, vb, SYMBOLIC_TOLERANCE)) return { equal: false, method: "symbolic" };
    valid++;
  }
  return { equal: valid >= 3, method: valid >= 3 ? "symbolic" : "none" };
}

/** Two equations are equal when `l1 − r1` and `l2 − r2` are proportional (a nonzero constant ratio). */
function equationsEqual(a: string[], b: string[]): Equivalence {
  const fa = compile(`${a[0]}-(${a[1]})`);
  const fb = compile(`${b[0]}-(${b[1]})`);
  if (!fa || !fb) return { equal: a.join("=") === b.join("="), method: "text" };
  const vars = [...new Set([...fa.vars, ...fb.vars])];
  // Statements without variables (`3 = 4`) are not equations of anything: only identical ones match.
  if (vars.length === 0) return { equal: a.join("=") === b.join("="), method: "text" };
  let ratio: Complexish | undefined;
  let valid = 0;
  for (let k = 0; k + vars.length <= POINTS.length && valid < 6; k += vars.length) {
    const scope: Record<string, number> = {};
    vars.forEach((v, j) => {
      scope[v] = POINTS[k + j]!;
    });
    const va = evaluateAt(fa, scope);
    const vb = evaluateAt(fb, scope);
    if (!va || !vb || !finite(va) || !finite(vb)) continue;
    if (Math.hypot(vb.re, vb.im) < 1e-12) {
      if (Math.hypot(va.re, va.im) > 1e-9) return { equal: false, method: "symbolic" };
      continue;
    }
    const d = vb.re * vb.re + vb.im * vb.im;
    const r = { re: (va.re * vb.re + va.im * vb.im) / d, im: (va.im * vb.re - va.re * vb.im) / d };
    if (ratio === undefined) ratio = r;
    else if (!close(ratio, r, 1e-6)) return { equal: false, method: "symbolic" };
    valid++;
  }
  if (ratio && Math.hypot(ratio.re, ratio.im) < 1e-12) return { equal: false, method: "symbolic" };
  return { equal: valid >= 1, method: "symbolic" };
}

function elementEqual(a: string, b: string, o: EquivalenceOptions): Equivalence {
  const ea = splitTopLevel(a, "=");
  const eb = splitTopLevel(b, "=");
  if (ea.length === 2 && eb.length === 2) return equationsEqual(ea, eb);
  if (o.answerType !== "equation") {
    // `x = 3` (or `3 = x`) vs `3`: the value of a one-variable equation is its answer (MATH's `k = 5` answers).
    const va = ea.length === 2 ? assignedValue(a) : a;
    const vb = eb.length === 2 ? assignedValue(b) : b;
    if (va !== undefined && vb !== undefined && (va !== a || vb !== b)) return scalarEqual(va, vb, o);
  }
  if (ea.length !== eb.length) return { equal: false, method: "structure" };
  return scalarEqual(a, b, o);
}

function allInOrder(a: string[], b: string[], o: EquivalenceOptions): boolean {
  return a.length === b.length && a.every((x, k) => elementEqual(x, b[k]!, o).equal);
}

/** Whether `b` is a permutation of `a` under `same` (each element of `b` used once). */
function sameMultiset<T>(a: readonly T[], b: readonly T[], same: (x: T, y: T) => boolean): boolean {
  if (a.length !== b.length) return false;
  const used = new Array<boolean>(b.length).fill(false);
  return a.every((x) => {
    const k = b.findIndex((y, j) => !used[j] && same(x, y));
    if (k === -1) return false;
    used[k] = true;
    return true;
  });
}

const structured = (equal: boolean): Equivalence => ({ equal, method: "structure" });

/** Two ends of intervals: infinite ends by sign, finite ones as scalars (`\frac12` = `0.5`, π ≠ 3.14). */
function sameEnd(x: Endpoint, y: Endpoint, o: EquivalenceOptions): boolean {
  if (!Number.isFinite(x.value) || !Number.isFinite(y.value)) return x.value === y.value;
  return scalarEqual(x.text, y.text, o).equal;
}

/**
 * Sets of reals written as inequalities or unions (`intervals.ts`): `-2 < x \le 3` = `(-2, 3]`,
 * `(3,4)\cup(-\infty,0)` = `(-\infty,0)\cup(3,4)`. Undefined when either side is not such a set, or
 * both are a single interval in bare notation (then compared as tuples below: `(1, 2)` may be a point).
 */
function intervalsEquivalent(a: string, b: string, o: EquivalenceOptions): Equivalence | undefined {
  if (o.answerType !== "" && o.answerType !== "interval") return undefined;
  const ia = intervalSetOf(a, realValue);
  const ib = ia && intervalSetOf(b, realValue);
  if (!ia || !ib) return undefined;
  if (ia.variable === undefined && ib.variable === undefined && ia.written === 1 && ib.written === 1) {
    return undefined;
  }
  // Two inequalities must be about the same variable (`x > 5` is not `y > 5`).
  if (ia.variable !== undefined && ib.variable !== undefined && ia.variable !== ib.variable) {
    return structured(false);
  }
  return structured(sameIntervalSet(ia, ib, (x, y) => sameEnd(x, y, o)));
}

/**
 * Named tuples and assignment lists (`structure.ts`): `(x, y) = (2, 4)` and `x = 2, y = 4` are the
 * tuple `(2, 4)` when the names are in conventional order; two assignments are compared name by name.
 * Undefined when neither side is an assignment or the other side is not a tuple.
 */
function assignmentsEquivalent(a: string, b: string, o: EquivalenceOptions): Equivalence | undefined {
  if (o.answerType !== "" && o.answerType !== "tuple") return undefined;
  const na = assignmentOf(a);
  const nb = assignmentOf(b);
  if (na && nb) return structured(sameAssignment(na, nb, o));
  const named = na ?? nb;
  if (!named) return undefined;
  const other = structure(na ? b : a, o.answerType);
  const tuple =
    (other.kind === "tuple" && (o.answerType === "tuple" || (other.open === "(" && other.close === ")"))) ||
    (other.kind === "list" && o.answerType === "tuple");
  if (!tuple) return undefined;
  return structured(inConventionalOrder(named.names) && allInOrder(named.values, other.items, o));
}

function sameAssignment(a: Assignment, b: Assignment, o: EquivalenceOptions): boolean {
  if (a.names.length !== b.names.length) return false;
  return a.names.every((name, k) => {
    const at = b.names.indexOf(name);
    return at !== -1 && elementEqual(a.values[k]!, b.values[at]!, o).equal;
  });
}

/** Matrices, sets and lists, tuples and intervals, unions: element by element (`structure.ts`). */
function structuresEquivalent(candidate: string, reference: string, o: EquivalenceOptions): Equivalence {
  const a = structure(candidate, o.answerType);
  const b = structure(reference, o.answerType);
  if (a.kind === "scalar" && b.kind === "scalar") return elementEqual(a.value, b.value, o);
  if (a.kind === "matrix" && b.kind === "matrix") {
    return structured(
      a.rows.length === b.rows.length && a.rows.every((row, k) => allInOrder(row, b.rows[k]!, o)),
    );
  }
  if ((a.kind === "set" || a.kind === "list") && (b.kind === "set" || b.kind === "list")) {
    if (o.answerType === "tuple") return structured(allInOrder(a.items, b.items, o));
    return structured(sameMultiset(a.items, b.items, (x, y) => elementEqual(x, y, o).equal));
  }
  if (a.kind === "tuple" && b.kind === "tuple") {
    // Brackets matter for intervals ((0,1] is not [0,1]); a declared tuple ignores them.
    const brackets = o.answerType === "tuple" || (a.open === b.open && a.close === b.close);
    return structured(brackets && allInOrder(a.items, b.items, o));
  }
  if (a.kind === "union" && b.kind === "union") {
    // Reached when an end has no value (`(a,b)\cup(c,\infty)`); a union is a set, so in any order.
    return structured(
      sameMultiset(
        a.intervals,
        b.intervals,
        (x, y) => x.open === y.open && x.close === y.close && allInOrder(x.items, y.items, o),
      ),
    );
  }
  // A bare list against a tuple when the task says tuple: `1, 2` vs `(1, 2)`.
  if (
    o.answerType === "tuple" &&
    (a.kind === "list" || a.kind === "tuple") &&
    (b.kind === "list" || b.kind === "tuple")
  ) {
    return structured(allInOrder(a.items, b.items, o));
  }
  return structured(false);
}

/**
 * Whether candidate and reference (both normal forms, `normalize.ts`) are the same answer.
 * Throws {@link UndecidableAnswerError} when a value cannot be decided (overflow).
 */
export function answersEquivalent(candidate: string, reference: string, o: EquivalenceOptions): Equivalence {
  if (candidate === reference) return { equal: true, method: "exact" };
  if (o.steps === "exact") return { equal: false, method: "exact" };
  if (o.steps === "numeric") return scalarEqual(candidate, reference, o);
  // A choice letter with its value (`(C)12`) against a letter or a value (normalize.ts).
  const choice = choicesEqual(candidate, reference, (x, y) => answersEquivalent(x, y, o).equal);
  if (choice !== undefined) return { equal: choice, method: "structure" };
  return (
    intervalsEquivalent(candidate, reference, o) ??
    assignmentsEquivalent(candidate, reference, o) ??
    structuresEquivalent(candidate, reference, o)
  );
}
