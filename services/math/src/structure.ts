/**
 * The shape of a structured answer, read from its normal form (`normalize.ts`): matrices (a scalar
 * factored in front is multiplied into the entries), sets, bare lists (an element written with `\pm`
 * is both elements), tuples and intervals, unions of intervals; named tuples (`(x, y) = (2, 4)`) and
 * assignment lists (`x = 2, y = 4`); the value of a one-variable assignment written either way round
 * (`x = 3`, `3 = x`). Pure string work: values are compared in `equivalence.ts`.
 * @module
 */
import type { AnswerType } from "./equivalence.js";
import { valueOfSimpleEquation } from "./normalize.js";

/** An answer's structure. */
export type Structured =
  | { kind: "matrix"; rows: string[][] }
  | { kind: "set"; items: string[] }
  | { kind: "list"; items: string[] }
  | { kind: "tuple"; open: string; close: string; items: string[] }
  | { kind: "union"; intervals: { open: string; close: string; items: string[] }[] }
  | { kind: "scalar"; value: string };

/** Splits at top-level occurrences of `sep` (outside braces, parentheses and brackets). */
export function splitTopLevel(s: string, sep: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "\\" && (s[i + 1] === "{" || s[i + 1] === "}")) {
      depth += s[i + 1] === "{" ? 1 : -1;
      i++;
    } else if (c === "{" || c === "(" || c === "[") depth++;
    else if (c === "}" || c === ")" || c === "]") depth--;
    else if (depth === 0 && s.startsWith(sep, i)) {
      parts.push(s.slice(start, i));
      start = i + sep.length;
      i += sep.length - 1;
    }
  }
  parts.push(s.slice(start));
  return parts;
}

/** `(…)` or `[…]` (either kind at either end) enclosing the whole string, with its content. */
export function bracketed(s: string): { open: string; close: string; inner: string } | undefined {
  const open = s[0];
  const close = s[s.length - 1];
  if ((open !== "(" && open !== "[") || (close !== ")" && close !== "]")) return undefined;
  // The outer pair must enclose everything: `(1)(2)` is not one group.
  let depth = 0;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s[i];
    if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") depth--;
    if (depth === 0) return undefined;
  }
  return { open, close, inner: s.slice(1, -1) };
}

const GREEK =
  "alpha|beta|gamma|delta|epsilon|varepsilon|zeta|eta|theta|vartheta|iota|kappa|lambda|mu|nu|xi|rho|sigma|tau|upsilon|phi|varphi|chi|psi|omega|Gamma|Delta|Theta|Lambda|Xi|Sigma|Phi|Psi|Omega";
/** A variable: one Latin letter (not `e`, `i`: constants), optionally subscripted, or a Greek letter other than π. */
const VARIABLE = new RegExp(`^(?:[a-df-hj-zA-Z](?:_(?:\\d|[a-zA-Z]|\\{\\w+\\}))?|\\\\(?:${GREEK}))$`);

/** Whether a normal form is a bare variable (`x`, `a_1`, `\theta`). */
export function isVariable(s: string): boolean {
  return VARIABLE.test(s);
}

/** `a \pm b` → `a+b`, `a-b` (MATH writes both roots either way); anything else is itself. */
function expandPm(item: string): string[] {
  const pm = item.split("\\pm");
  if (pm.length !== 2 || pm[1] === "") return [item];
  return pm[0] === "" ? [pm[1]!, `-${pm[1]}`] : [`${pm[0]}+${pm[1]}`, `${pm[0]}-${pm[1]}`];
}

// A matrix environment (`vmatrix` is a determinant, a number: not a matrix), with a scalar in front.
const MATRIX = /^(.*?)\\begin\{([pbB]?matrix)\}(.*)\\end\{[pbB]?matrix\}$/;
// `\left(\begin{array}{cc}…\end{array}\right)`, after normalisation.
const ARRAY = /^(.*?)[([]\\begin\{array\}\{[lcr|]*\}(.*)\\end\{array\}[)\]]$/;

/** A matrix, its entries multiplied by the scalar written in front (`\frac12\begin{pmatrix}…`, `-\begin{pmatrix}…`). */
function matrixOf(normal: string): Structured | undefined {
  const m = MATRIX.exec(normal);
  const a = m ? undefined : ARRAY.exec(normal);
  const prefix = m ? m[1]! : a?.[1];
  const body = m ? m[3]! : a?.[2];
  if (prefix === undefined || body === undefined) return undefined;
  // The scalar is a plain factor: no other matrix, cell or row separator, no relation.
  if (/\\begin|\\end|&|\\\\|=/.test(prefix)) return undefined;
  const scalar = prefix.replace(/\\(?:cdot|times)$/, "");
  const scale = (e: string) => (scalar === "" ? e : scalar === "-" ? `-(${e})` : `(${scalar})\\cdot(${e})`);
  const rows = body
    .split("\\\\")
    .filter((r) => r !== "")
    .map((r) => r.split("&").map(scale));
  return { kind: "matrix", rows };
}

function unionOf(normal: string): Structured | undefined {
  const union = splitTopLevel(normal, "\\cup");
  if (union.length < 2) return undefined;
  const intervals = union.map((u) => {
    const b = bracketed(u);
    return b ? { open: b.open, close: b.close, items: splitTopLevel(b.inner, ",") } : undefined;
  });
  return intervals.every((x) => x !== undefined) ? { kind: "union", intervals } : undefined;
}

/** The structure of a normal form; `type` is the task's answer type (a number or expression is never a list). */
export function structure(normal: string, type: AnswerType): Structured {
  const matrix = matrixOf(normal);
  if (matrix) return matrix;
  if (normal.startsWith("\\{") && normal.endsWith("\\}")) {
    return { kind: "set", items: splitTopLevel(normal.slice(2, -2), ",").flatMap(expandPm) };
  }
  const union = unionOf(normal);
  if (union) return union;
  const b = bracketed(normal);
  if (b) {
    const items = splitTopLevel(b.inner, ",");
    if (items.length >= 2) return { kind: "tuple", open: b.open, close: b.close, items };
  }
  if (type !== "number" && type !== "expression") {
    // MATH's "all solutions" lists; `1\pm\sqrt2` alone is the list of both roots.
    const items = splitTopLevel(normal, ",").flatMap(expandPm);
    if (items.length >= 2) return { kind: "list", items };
  }
  return { kind: "scalar", value: normal };
}

/** Values named by variables: `(x, y) = (2, 4)` or `x = 2, y = 4` (names distinct, at least two). */
export interface Assignment {
  readonly names: string[];
  readonly values: string[];
}

function namedTuple(normal: string): Assignment | undefined {
  const sides = splitTopLevel(normal, "=");
  if (sides.length !== 2) return undefined;
  const left = bracketed(sides[0]!);
  const right = bracketed(sides[1]!);
  if (
    !left ||
    !right ||
    left.open !== "(" ||
    left.close !== ")" ||
    right.open !== "(" ||
    right.close !== ")"
  ) {
    return undefined;
  }
  const names = splitTopLevel(left.inner, ",");
  const values = splitTopLevel(right.inner, ",");
  if (names.length !== values.length) return undefined;
  return { names, values };
}

function assignmentList(normal: string): Assignment | undefined {
  const items = splitTopLevel(normal, ",").map((item) => splitTopLevel(item, "="));
  if (items.some((sides) => sides.length !== 2 || sides[1] === "")) return undefined;
  return { names: items.map((sides) => sides[0]!), values: items.map((sides) => sides[1]!) };
}

/**
 * The assignment a normal form states: a named tuple `(x,y)=(2,4)` or an assignment list `x=2,y=4`;
 * undefined for anything else, for one variable (`x = 3` is a value, see {@link assignedValue}) and for
 * a repeated name (`x=1,x=2` is MATH's list of all solutions).
 */
export function assignmentOf(normal: string): Assignment | undefined {
  const a = namedTuple(normal) ?? assignmentList(normal);
  if (!a || a.names.length < 2 || !a.names.every(isVariable)) return undefined;
  return new Set(a.names).size === a.names.length ? a : undefined;
}

/** Coordinate systems whose order is not alphabetical: polar, cylindrical, spherical. */
const COORDINATE_ORDERS: readonly string[] = [
  "r,\\theta",
  "r,\\theta,z",
  "\\rho,\\theta,\\phi",
  "\\rho,\\theta,\\varphi",
];

/**
 * Whether names are in the order an "ordered pair (x, y)" problem lists them, so that the values in
 * that order are the tuple: Latin letters alphabetically (`x, y, z`; `a, b, c`; `m, n`), one letter's
 * subscripts by index (`x_1, x_2`), or a coordinate system's own order (`r, \theta`). In any other order
 * (`y = 4, x = 2`) the tuple the problem asked for is unknown: the answer is not read as one.
 */
export function inConventionalOrder(names: readonly string[]): boolean {
  if (COORDINATE_ORDERS.includes(names.join(","))) return true;
  const subscripted = names.map((n) => /^([a-zA-Z])_\{?(\d+)\}?$/.exec(n));
  if (subscripted.every((m) => m !== null)) {
    const base = subscripted[0]![1];
    return subscripted.every(
      (m, k) => m![1] === base && (k === 0 || Number(m![2]) > Number(subscripted[k - 1]![2])),
    );
  }
  if (!names.every((n) => /^[a-zA-Z]$/.test(n))) return false;
  const lower = names.map((n) => n.toLowerCase());
  return lower.every((n, k) => k === 0 || n > lower[k - 1]!);
}

/**
 * The value a one-variable assignment states, written either way round: `x=3` → `3`, `3=x` → `3`
 * (the other side must not itself be a bare variable: `x=y` has no value). Undefined otherwise —
 * `-x=3` and `3=-x` state `x = -3`, and are not read as 3.
 */
export function assignedValue(normal: string): string | undefined {
  const sides = splitTopLevel(normal, "=");
  // Reversed first: in `\pi = x` the variable is x (the forward reading takes any command for one).
  if (sides.length === 2 && sides[0] !== "" && isVariable(sides[1]!) && !isVariable(sides[0]!))
    return sides[0];
  return valueOfSimpleEquation(normal);
}
