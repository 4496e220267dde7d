/**
 * Answer normalisation, MATH-grader style (Hendrycks et al.'s `strip_string`, extended): LaTeX
 * spacing and sizing commands, `\left`/`\right`, `\dfrac`/`\tfrac`, degrees (`^\circ`), `\%`,
 * dollars, text wrappers and trailing units, thousands separators, `\frac12` shorthands, leading
 * zeros of decimals. Two answers whose normal forms are equal strings are equal.
 * @module
 */
import { braceGroup } from "./extract.js";

/** Bad input the normaliser refuses to decide (becomes `correct = 0` with ERROR and this reason). */
export class UndecidableAnswerError extends Error {
  override readonly name = "UndecidableAnswerError";
}

/** Limits on what is judged at all. */
export interface AnswerLimits {
  /** Longest answer (characters) judged; a longer one is ERROR. */
  readonly maxAnswerChars: number;
  /** Deepest brace / parenthesis nesting judged. */
  readonly maxDepth: number;
}

/** Defaults: far above any MATH / GSM8K answer (the longest MATH answers are matrices of ~200 chars). */
export const DEFAULT_ANSWER_LIMITS: AnswerLimits = { maxAnswerChars: 2000, maxDepth: 40 };

const MACRO_DEFINITIONS =
  /\\(?:def|gdef|edef|xdef|let|newcommand|renewcommand|providecommand|DeclareMathOperator|catcode|input|include)(?![a-zA-Z])/;

/** Throws {@link UndecidableAnswerError} when `answer` is too long, too deep or defines macros. */
export function checkAnswer(answer: string, limits: AnswerLimits): void {
  if (answer.length > limits.maxAnswerChars) {
    throw new UndecidableAnswerError(
      `answer is ${answer.length} characters, more than the ${limits.maxAnswerChars} judged`,
    );
  }
  const macro = MACRO_DEFINITIONS.exec(answer);
  if (macro) throw new UndecidableAnswerError(`answer defines or loads macros (${macro[0]}), not evaluated`);
  let depth = 0;
  let max = 0;
  for (const c of answer) {
    if (c === "{" || c === "(" || c === "[") max = Math.max(max, ++depth);
    else if (c === "}" || c === ")" || c === "]") depth--;
  }
  if (max > limits.maxDepth) {
    throw new UndecidableAnswerError(
      `answer nests ${max} levels deep, more than the ${limits.maxDepth} judged`,
    );
  }
}

/** Replaces every `\cmd{…}` by its content (nested braces respected). */
export function unwrapCommand(s: string, cmd: string): string {
  let out = s;
  for (let at = out.indexOf(cmd); at !== -1; at = out.indexOf(cmd, at)) {
    const next = out[at + cmd.length];
    if (next !== undefined && /[a-zA-Z]/.test(next)) {
      at += cmd.length;
      continue;
    }
    let i = at + cmd.length;
    while (out[i] === " ") i++;
    const g = out[i] === "{" ? braceGroup(out, i) : undefined;
    if (!g) {
      at += cmd.length;
      continue;
    }
    out = out.slice(0, at) + g.content + out.slice(g.end);
  }
  return out;
}

const TEXT_WRAPPERS = ["\\text", "\\textbf", "\\textit", "\\mathrm", "\\mathbf", "\\mbox", "\\operatorname"];

/** `1,000,000` → `1000000` (only well-formed groups of three: `1,00` and `1, 2` are lists). */
export function dropThousandsSeparators(s: string): string {
  return s.replace(/(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])/g, (m) => m.replace(/,/g, ""));
}

function fixFracShorthand(s: string): string {
  // \frac12 → \frac{1}{2}, \frac1{x} → \frac{1}{x}, \frac{a}2 → \frac{a}{2}
  return s
    .replace(/\\frac(\d)(\d)/g, "\\frac{$1}{$2}")
    .replace(/\\frac(\d)\{/g, "\\frac{$1}{")
    .replace(/\\frac\{([^{}]*)\}(\d)/g, "\\frac{$1}{$2}")
    .replace(/\\sqrt(\d)/g, "\\sqrt{$1}");
}

const UNIT_WORDS =
  /(\\text\{\s*|\s+|(?<=\d))(units?|cm|centimeters?|m|meters?|km|kilometers?|mm|inches|inch|in|feet|foot|ft|yards?|miles?|degrees?|seconds?|minutes?|hours?|days?|weeks?|years?|dollars?|cents?|pounds?|lbs?|kg|g|grams?|liters?|ml|square|sq|cubic|mph|people|students|apples|marbles|cookies|pages|points?|ways|times)(?:\s+units?)?\s*\}?\s*(?:\^[23]|\^\{[23]\})?\s*\}?\s*$/i;

/**
 * The answer's normal form: what the MATH grader's string comparison sees, extended with the
 * normalisations listed in the module doc.
 */
export function normalizeAnswer(answer: string): string {
  return normalizeWithUnits(answer).normal;
}

/** Physical units (canonical names); other trailing words (`units`, `people`, `square`) are not units of measure. */
const PHYSICAL_UNITS: Readonly<Record<string, string>> = (() => {
  const groups: Record<string, string[]> = {
    cm: ["cm", "centimeter", "centimeters"],
    m: ["m", "meter", "meters"],
    km: ["km", "kilometer", "kilometers"],
    mm: ["mm"],
    in: ["in", "inch", "inches"],
    ft: ["ft", "foot", "feet"],
    yd: ["yard", "yards"],
    mi: ["mile", "miles"],
    s: ["second", "seconds"],
    min: ["minute", "minutes"],
    h: ["hour", "hours"],
    d: ["day", "days"],
    wk: ["week", "weeks"],
    yr: ["year", "years"],
    $: ["dollar", "dollars", "$"],
    "¢": ["cent", "cents"],
    lb: ["pound", "pounds", "lb", "lbs"],
    kg: ["kg"],
    g: ["g", "gram", "grams"],
    L: ["liter", "liters"],
    mL: ["ml"],
    mph: ["mph"],
  };
  return Object.fromEntries(Object.entries(groups).flatMap(([unit, words]) => words.map((w) => [w, unit])));
})();

/** Removes trailing unit words; returns what is left and the words removed (last first). */
function stripTrailingUnits(s: string): { rest: string; words: string[] } {
  const words: string[] = [];
  let rest = s;
  for (let k = 0; k < 3; k++) {
    const u = UNIT_WORDS.exec(rest);
    if (!u || u.index === 0) break;
    // A one-letter unit glued to a number (`3m`, `2g`) is a product with a variable, not a unit.
    if (u[1] === "" && u[2]!.length === 1) break;
    // A unit follows a quantity (a number or a closing group: `\frac{1}{2} cm`); in `n + m` it does not.
    if (!/[\d})]$/.test(rest.slice(0, u.index).trimEnd())) break;
    words.push(u[2]!.toLowerCase());
    rest = rest.slice(0, u.index);
  }
  return { rest, words };
}

/**
 * The normal form and the physical units the answer named (canonical, e.g. `["cm"]`; empty when it
 * named none). Units are dropped from the normal form, as MATH's grader does, but two answers that
 * both name units must name the same ones: `3 cm` is not `3 m` (see `judge.ts`).
 */
export function normalizeWithUnits(answer: string): { normal: string; units: string[] } {
  let s = answer.trim();
  const dollarSign = /\\\$/.test(s);
  s = s.replace(/\\\$/g, "").replace(/\$/g, "");
  s = s.replace(/\\(?:left|right|big|Big|bigg|Bigg)(?![a-zA-Z])\s*/g, "");
  s = s.replace(/\\(?:displaystyle|textstyle|scriptstyle)(?![a-zA-Z])\s*/g, "");
  s = s
    .replace(/(?<!\\)\\[!,;:> ]/g, "")
    .replace(/~/g, "")
    .replace(/\\quad|\\qquad/g, "");
  s = s.replace(/\\[dt]frac(?![a-zA-Z])/g, "\\frac");
  // Degrees and percent are dropped (MATH: `30^\circ` = `30`, `50\%` = `50`).
  s = s.replace(/\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|°/g, "");
  s = s.replace(/\\%|%/g, "");
  // Trailing units (`5 \text{ cm}`, `12 dollars`) after a number or closing group.
  const stripped = stripTrailingUnits(s);
  s = stripped.rest;
  const units = [...(dollarSign ? ["$"] : []), ...stripped.words]
    .map((w) => PHYSICAL_UNITS[w])
    .filter((u): u is string => u !== undefined);
  for (const w of TEXT_WRAPPERS) s = unwrapCommand(s, w);
  s = s.replace(/\\(?:mathbb|mathcal)\{(\w)\}/g, "$1");
  s = fixFracShorthand(s);
  s = s.replace(/\s+/g, "");
  s = dropThousandsSeparators(s);
  // Trailing sentence punctuation; a leading `x=`/`k =` of a short left side (MATH keeps the value).
  s = s.replace(/[.。]+$/, "");
  s = s.replace(/(^|[^\d])\.(\d)/g, "$10.$2"); // .5 → 0.5
  s = s.replace(/^\(([A-E])\)$/, "$1"); // multiple choice: (B) → B
  s = s.replace(/^(-?\d+)\.0+$/, "$1"); // 3.0 → 3
  s = s.replace(/^(-?\d+\.\d*?[1-9])0+$/, "$1"); // 2.50 → 2.5
  return { normal: s, units: [...new Set(units)].sort() };
}

/** Whether two answers' units contradict: both name physical units and they differ. */
export function unitsConflict(a: readonly string[], b: readonly string[]): boolean {
  return a.length > 0 && b.length > 0 && a.join(" ") !== b.join(" ");
}

/** `x=3` → `3` when the left side is a single variable (MATH's `a = 5` answers); else undefined. */
export function valueOfSimpleEquation(normal: string): string | undefined {
  const m = /^([a-zA-Z](?:_\{?\w+\}?)?|\\[a-zA-Z]+)=([^=]+)$/.exec(normal);
  return m ? m[2] : undefined;
}
