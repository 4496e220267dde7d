/**
 * Answer normalisation, MATH-grader style (Hendrycks et al.'s `strip_string`, extended): LaTeX
 * spacing and sizing commands, `\left`/`\right`, `\dfrac`/`\tfrac`, degrees (`^\circ`), `\%`,
 * dollars, text wrappers and trailing units (`\text{…}` unit phrases, `percent` as a word),
 * thousands separators (`1,000`, `1{,}000`, `1\,000`), `\frac12` shorthands, leading zeros of
 * decimals, mixed numbers (`2\frac12`, `2 1/2` → `\frac{5}{2}`), repeating decimals
 * (`0.\overline{3}` → `\frac{1}{3}`), base numerals (`1011_2` → `1011_{2}`). Two answers whose normal
 * forms are equal strings are equal; base numerals and choice letters with their value have their
 * own comparisons here ({@link baseNumeralsEqual}, {@link choicesEqual}), used by `equivalence.ts`.
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
  /(\\text\{\s*|\s+|(?<=\d))(units?|cm|centimeters?|m|meters?|km|kilometers?|mm|inches|inch|in|feet|foot|ft|yards?|miles?|degrees?|seconds?|minutes?|hours?|days?|weeks?|years?|dollars?|percent|per\s*cent|pct|cents?|pounds?|lbs?|kg|g|grams?|liters?|ml|square|sq|cubic|mph|people|students|apples|marbles|cookies|pages|points?|ways|times)(?:\s+units?)?\s*\}?\s*(?:\^[23]|\^\{[23]\})?\s*\}?\s*$/i;

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
    yd: ["yard", "yards", "yd", "yds"],
    mi: ["mile", "miles", "mi"],
    s: ["second", "seconds", "s", "sec", "secs"],
    min: ["minute", "minutes", "mins"],
    h: ["hour", "hours", "hr", "hrs", "h"],
    d: ["day", "days"],
    wk: ["week", "weeks"],
    yr: ["year", "years"],
    $: ["dollar", "dollars", "$"],
    "¢": ["cent", "cents"],
    lb: ["pound", "pounds", "lb", "lbs"],
    kg: ["kg"],
    g: ["g", "gram", "grams"],
    L: ["liter", "liters", "litre", "litres"],
    mL: ["ml"],
  };
  return Object.fromEntries(Object.entries(groups).flatMap(([unit, words]) => words.map((w) => [w, unit])));
})();

/** Rates with a one-word name: `mph` is `miles per hour`. */
const RATE_WORDS: Readonly<Record<string, string>> = { mph: "mi/h", kph: "km/h", kmh: "km/h", kmph: "km/h" };

/**
 * Words a `\text{…}` unit phrase may consist of besides {@link PHYSICAL_UNITS}: modifiers, counted
 * things and the percent sign's spellings. A phrase of these words is a unit even without MATH's
 * leading space (`16\text{cm}^2`, `\text{square inches}`).
 */
const UNIT_PHRASE_WORDS = new Set([
  "unit",
  "units",
  "square",
  "sq",
  "cubic",
  "cu",
  "per",
  "percent",
  "pct",
  "degree",
  "degrees",
  "people",
  "students",
  "apples",
  "marbles",
  "cookies",
  "pages",
  "point",
  "points",
  "ways",
  "times",
  "cup",
  "cups",
  "gallon",
  "gallons",
  "ounce",
  "ounces",
  "oz",
  "ton",
  "tons",
]);

/** Text commands whose trailing group may be a unit (`5\text{ cm}`, `12\mbox{ inches}`, `3\mathrm{m}`). */
const TRAILING_TEXT_GROUP =
  /\\(?:text|textrm|textnormal|textit|textbf|mbox|mathrm|operatorname)\s*\{([^{}]*)\}\s*(?:\^\s*\{?\s*[23]\s*\}?)?\s*$/;

/** Ends with an operator or an opening bracket: what follows it is an operand, not a unit. */
const ENDS_WITH_OPERATOR = /(?:[+\-*/=,([{^_&]|\\(?:cdot|times|div|pm|mp|le|ge|leq|geq|neq|approx))$/;

/**
 * The physical units a trailing `\text{…}` group names when it is a unit phrase (one canonical name
 * per phrase, a rate as `mi/h`; empty for `units`, `percent`, counted things), else undefined. MATH's
 * `_remove_right_units` drops whatever follows `\text{ ` (a group opening with a space: the dataset's
 * unit marker), so such a group of words is a unit; without the space every word must be a known unit
 * word (`\text{cm}^2`, `\mbox{inches}`). Groups with `and`/`or` or anything but words are not units.
 */
function unitPhrase(content: string): string[] | undefined {
  const phrase = content.replace(/per\s*cent/gi, "percent");
  if (phrase.trim() === "") return [];
  if (!/^[a-zA-Z\s/.^\d-]+$/.test(phrase) || /\b(?:and|or)\b/i.test(phrase)) return undefined;
  const words = phrase
    .replace(/\^\s*\d/g, " ")
    .split(/[\s.-]+|(?=\/)|(?<=\/)/)
    .filter((w) => w !== "" && !/^\d+$/.test(w))
    .map((w) => w.toLowerCase());
  if (words.length === 0) return undefined;
  const known = (w: string) =>
    w === "/" || PHYSICAL_UNITS[w] !== undefined || RATE_WORDS[w] !== undefined || UNIT_PHRASE_WORDS.has(w);
  if (!/^\s/.test(content) && !words.every(known)) return undefined;
  // A rate joins its parts with "/": `miles per hour` = `mi/h` = `mph`; powers and `square` are ignored.
  const parts: string[][] = [[]];
  for (const w of words) {
    if (w === "/" || w === "per") parts.push([]);
    else if (RATE_WORDS[w] !== undefined) parts[parts.length - 1]!.push(RATE_WORDS[w]!);
    else if (PHYSICAL_UNITS[w] !== undefined) parts[parts.length - 1]!.push(PHYSICAL_UNITS[w]!);
  }
  const named = parts.map((p) => p.join("·"));
  return named.every((p) => p === "") ? [] : [named.filter((p) => p !== "").join("/")];
}

/**
 * Removes trailing units: a `\text{…}` unit phrase (see {@link unitPhrase}) after any operand
 * (`4\pi\text{ cm}^2`), and bare unit words after a number, a closing group or π (`18 dollars`,
 * `25 percent`). Returns what is left and the physical units named (canonical).
 */
function stripTrailingUnits(s: string): { rest: string; units: string[] } {
  const units: string[] = [];
  let rest = s;
  for (let k = 0; k < 3; k++) {
    const t = TRAILING_TEXT_GROUP.exec(rest);
    if (t && t.index > 0) {
      const before = rest.slice(0, t.index).trimEnd();
      const named = unitPhrase(t[1]!);
      if (named && before !== "" && !ENDS_WITH_OPERATOR.test(before)) {
        units.push(...named);
        rest = before;
        continue;
      }
    }
    const u = UNIT_WORDS.exec(rest);
    if (!u || u.index === 0) break;
    // A one-letter unit glued to a number (`3m`, `2g`) is a product with a variable, not a unit.
    if (u[1] === "" && u[2]!.length === 1) break;
    // A unit follows a quantity (a number, a closing group, π: `\frac{1}{2} cm`, `4\pi cm`); in `n + m` it does not.
    if (!/(?:[\d})]|\\pi)$/.test(rest.slice(0, u.index).trimEnd())) break;
    const word = u[2]!.toLowerCase();
    const unit = RATE_WORDS[word] ?? PHYSICAL_UNITS[word];
    if (unit !== undefined) units.push(unit);
    rest = rest.slice(0, u.index);
  }
  return { rest, units };
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
  // Spacing commands; thin-space thousands groups (`1\,000`, `1\!000`) close up with them.
  s = s
    .replace(/(?<!\\)\\[!,;:> ]/g, "")
    .replace(/~/g, "")
    .replace(/\\quad|\\qquad/g, "");
  // `{,}` is LaTeX's comma without the space after it (`1{,}000`): a comma (Minerva's normaliser drops it).
  s = s.replace(/\{,\}/g, ",");
  s = s.replace(/\\[dt]frac(?![a-zA-Z])/g, "\\frac");
  // Degrees and percent are dropped (MATH: `30^\circ` = `30`, `50\%` = `50`).
  s = s.replace(/\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|°/g, "");
  s = s.replace(/\\%|%/g, "");
  // Trailing units (`5 \text{ cm}`, `12 dollars`, `25 percent`).
  const stripped = stripTrailingUnits(s);
  s = stripped.rest;
  const units = [...(dollarSign ? ["$"] : []), ...stripped.units];
  for (const w of TEXT_WRAPPERS) s = unwrapCommand(s, w);
  s = s.replace(/\\(?:mathbb|mathcal)\{(\w)\}/g, "$1");
  s = fixFracShorthand(s);
  // Before spaces go: `2 1/2` is a mixed number, not 21/2.
  s = mixedNumbersToFractions(s);
  s = s.replace(/\s+/g, "");
  s = dropThousandsSeparators(s);
  // Before trailing periods go: `0.333...` is a repeating decimal.
  s = repeatingDecimalsToFractions(s);
  // Trailing sentence punctuation; a leading `x=`/`k =` of a short left side (MATH keeps the value).
  s = s.replace(/[.。]+$/, "");
  s = s.replace(/(^|[^\d])\.(\d)/g, "$10.$2"); // .5 → 0.5
  s = s.replace(/^\(([A-E])\)$/, "$1"); // multiple choice: (B) → B
  s = s.replace(/^(-?\d+)\.0+$/, "$1"); // 3.0 → 3
  s = s.replace(/^(-?\d+\.\d*?[1-9])0+$/, "$1"); // 2.50 → 2.5
  s = canonicalBaseNumerals(s);
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

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

/** `p/q` in lowest terms as a normal form: `\frac{p}{q}`, or the integer when q divides p. */
function fractionNormal(p: bigint, q: bigint): string {
  const g = gcd(p, q);
  const [n, d] = g > 1n ? [p / g, q / g] : [p, q];
  return d === 1n ? `${n}` : `\\frac{${n}}{${d}}`;
}

/** The exact value of `I.A` followed by the repetend `R` repeated forever (digit strings; I, A may be empty). */
export function repeatingDecimalValue(int: string, fixed: string, repetend: string): string {
  const i = BigInt(int === "" ? "0" : int);
  const a = BigInt(fixed === "" ? "0" : fixed);
  const r = BigInt(repetend);
  const shift = 10n ** BigInt(fixed.length);
  const nines = 10n ** BigInt(repetend.length) - 1n;
  return fractionNormal((i * shift + a) * nines + r, shift * nines);
}

/**
 * Where a number may start: not inside a word, a number or a command name, not in a subscript or a
 * power (`x^2\frac12`, `a_1`), not after a closing group (`\sqrt{2}3`).
 */
const NUMBER_START = String.raw`(?<![\w.^_}\])!\\])`;
/** Where a mixed number may start: a number start, not after a slash either (`1/2 1/3`). */
const MIXED_START = String.raw`(?<![\w.^_}\])!\\/])`;

/** A repetend marked with a vinculum (`\overline{3}`, `\bar 3`), parentheses (`(3)`) or dots. */
const REPEATING_DECIMAL = new RegExp(
  String.raw`${NUMBER_START}(\d*)\.(\d*)(?:\\(?:overline|bar)(?:\{(\d+)\}|(\d))|\((\d+)\)|\\dot(?:\{(\d)\}|(\d))(?:(\d*)\\dot(?:\{(\d)\}|(\d)))?)(?![\w.({]|\\(?:overline|bar|dot))`,
  "g",
);

/** A decimal ending in an ellipsis (`0.333\ldots`, `0.1666...`). */
const ELLIPSIS_DECIMAL = new RegExp(
  String.raw`${NUMBER_START}(\d*)\.(\d+)(?:\\[lc]?dots(?![a-zA-Z])|\.\.\.|…)(?![\w.({\\])`,
  "g",
);

/**
 * The repetend an ellipsis continues: the shortest block that the digits end with at least three full
 * times (`333`, `1666`, `454545`); undefined when the shown digits do not repeat (`3.14159…` is a
 * truncation — so is `2.718281828…`, whose 1828 shows only twice).
 */
function ellipsisRepetend(digits: string): { fixed: string; repetend: string } | undefined {
  for (let p = 1; 3 * p <= digits.length; p++) {
    let start = digits.length - p;
    while (start > 0 && digits[start - 1] === digits[start - 1 + p]) start--;
    if (digits.length - start >= 3 * p) {
      return { fixed: digits.slice(0, start), repetend: digits.slice(start, start + p) };
    }
  }
  return undefined;
}

/**
 * Repeating decimals become exact fractions: `0.\overline{3}` (vinculum, also `\bar`), `0.(3)`
 * (parentheses), `0.\dot{3}` / `0.\dot{1}4285\dot{7}` (dots over the first and last repeated digit)
 * and `0.333\ldots` / `0.1666...` (an ellipsis after a block shown three times) → `\frac{1}{3}`,
 * `\frac{1}{6}`. An ellipsis after digits that do not repeat is dropped (`3.14159\ldots` is the
 * decimal 3.14159). `\overline{AB}` (a segment) is not a number and stays.
 */
export function repeatingDecimalsToFractions(s: string): string {
  let out = s.replace(
    REPEATING_DECIMAL,
    (
      m,
      int: string,
      fixed: string,
      ob?: string,
      o1?: string,
      par?: string,
      d1?: string,
      d1b?: string,
      mid?: string,
      d2?: string,
      d2b?: string,
    ) => {
      const first = d1 ?? d1b;
      const last = d2 ?? d2b;
      const repetend =
        ob ??
        o1 ??
        par ??
        (first !== undefined ? first + (last !== undefined ? (mid ?? "") + last : "") : undefined);
      if (repetend === undefined || (first !== undefined && last === undefined && mid)) return m;
      if (int === "" && fixed === "" && par !== undefined) return m;
      return repeatingDecimalValue(int, fixed, repetend);
    },
  );
  out = out.replace(ELLIPSIS_DECIMAL, (_m, int: string, digits: string) => {
    const r = ellipsisRepetend(digits);
    return r ? repeatingDecimalValue(int, r.fixed, r.repetend) : `${int === "" ? "0" : int}.${digits}`;
  });
  return out;
}

/**
 * Mixed numbers become improper fractions, as PRM800K's grader reads them (`_inject_implicit_mixed_number`:
 * "7 3/4 => 7+3/4"; its `_parse_latex` puts a space before `\frac` for the same reason): a digit group
 * followed — directly or after spaces — by `\frac{a}{b}` or, after a space, by `a/b`, with integer
 * literals 0 < a < b, is n + a/b: `2\frac{1}{2}`, `2 \frac12`, `2 1/2` → `\frac{5}{2}`, `-1\frac13` →
 * `-\frac{4}{3}` (the sign covers the whole). Not a mixed number: an operator or comma between
 * (`2\cdot\frac12` = 1, `2, \frac12` is a list), a letter, decimal, power or closing group before the
 * fraction (`x\frac12` = x/2, `x^2\frac12`, `2.5\frac12`), a fraction that is not proper or not of
 * integer literals (`2\frac{3}{2}`, `2\frac{\pi}{3}` — the latter a product). The digit group must start
 * a number (not follow a letter, digit, `.`, `^`, `_`, `/` or a closing group).
 */
export function mixedNumbersToFractions(s: string): string {
  const mixed = (m: string, whole: string, a: string, b: string) => {
    const n = BigInt(whole);
    const num = BigInt(a);
    const den = BigInt(b);
    if (!(num > 0n && num < den) || /^0\d/.test(a)) return m;
    return `\\frac{${n * den + num}}{${den}}`;
  };
  return s
    .replace(new RegExp(String.raw`${MIXED_START}(\d+)\s*\\frac\{(\d+)\}\{(\d+)\}`, "g"), mixed)
    .replace(
      new RegExp(String.raw`${MIXED_START}(\d+)\s+(\d+)/(\d+)(?![\w.^/({\\])`, "g"),
      (m, whole: string, a: string, b: string) => {
        const r = mixed(m, whole, a, b);
        // `2 3/2` is no mixed number, and closing the space up would read 23/2: keep the two apart.
        return r === m && !/^0\d/.test(a) && BigInt(b) > 0n ? `${whole}\\,${a}/${b}` : r;
      },
    );
}

/** Digits of bases up to 36. */
const DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/**
 * A numeral with a base subscript: `1011_2`, `1011_{2}`, `(1011)_2`, `{1011}_{2}`, `1011_{(2)}`;
 * base 2–36, every digit valid in that base, at least one decimal digit (so `a_{12}` and `A_{12}`
 * stay subscripted variables).
 */
const BASE_NUMERAL =
  /(?<![\w\\])(?:\(([0-9A-Za-z]+)\)|\{([0-9A-Za-z]+)\}|([0-9A-Za-z]+))_(?:\{\(?(\d{1,2})\)?\}|\((\d{1,2})\)|(\d))(?![\w{(])/g;

function validNumeral(digits: string, base: number): boolean {
  if (base < 2 || base > 36 || !/\d/.test(digits)) return false;
  return [...digits.toUpperCase()].every((d) => DIGITS.indexOf(d) !== -1 && DIGITS.indexOf(d) < base);
}

/**
 * Numerals with a base subscript in one canonical form, `1011_{2}`: braces, upper-case digits, no
 * leading zeros (`(01011)_2`, `2a_{16}` → `1011_{2}`, `2A_{16}`). The subscript stays (base 10
 * included): `1011_{2}` is not the decimal 1011 — see {@link baseNumeralsEqual}.
 */
export function canonicalBaseNumerals(s: string): string {
  return s.replace(
    BASE_NUMERAL,
    (m, paren?: string, brace?: string, bare?: string, b1?: string, b2?: string, b3?: string) => {
      const digits = (paren ?? brace ?? bare)!;
      const base = Number(b1 ?? b2 ?? b3);
      if (!validNumeral(digits, base)) return m;
      return `${digits.toUpperCase().replace(/^0+(?=.)/, "")}_{${base}}`;
    },
  );
}

const CANONICAL_NUMERAL = /^(-?)([0-9A-Z]+)_\{(\d+)\}$/;

/**
 * Whether two normal forms are the same base numeral, or undefined when neither is one. Numerals are
 * compared as written, never by value across bases: the same base and the same digits (`1011_{2}` =
 * `1011_{2}`; `1011_{3}` ≠ `1011_{2}`; `101010_{2}` ≠ `42`, though equal in value — the task asked
 * for one representation). The subscript may be dropped on one side when the digits agree (`1011` =
 * `1011_{2}`: the problem names the base); any other unsubscripted answer differs (`11` ≠ `1011_{2}`).
 */
export function baseNumeralsEqual(a: string, b: string): boolean | undefined {
  const na = CANONICAL_NUMERAL.exec(a);
  const nb = CANONICAL_NUMERAL.exec(b);
  if (!na && !nb) return undefined;
  if (na && nb) return na[1] === nb[1] && na[2] === nb[2] && na[3] === nb[3];
  const [numeral, other] = na ? [na, b] : [nb!, a];
  const plain = /^(-?)0*(\d+)$/.exec(other) ?? /^(-?)0*([0-9A-Z]+)$/.exec(other.toUpperCase());
  return plain !== null && plain[1] === numeral[1] && plain[2] === numeral[2];
}

/** A multiple-choice answer: `(C)12` (a normal form) is letter C with value 12; `C` is the letter alone. */
function choiceOf(normal: string): { letter?: string; value?: string } {
  const both = /^\(([A-E])\)(.+)$/.exec(normal);
  if (both) return { letter: both[1]!, value: both[2]! };
  if (/^[A-E]$/.test(normal)) return { letter: normal };
  return { value: normal };
}

/**
 * Compares answers when either is a choice letter with its value (`(C)12`, from `\text{(C) }12` or
 * `\textbf{(C)}~12`); undefined when neither is. Every part both sides give must agree, and they must
 * share one: `(C)12` equals `C` and `12`, not `D`, `13`, `(B)12` or `(C)13`.
 */
export function choicesEqual(
  a: string,
  b: string,
  same: (x: string, y: string) => boolean,
): boolean | undefined {
  const ca = choiceOf(a);
  const cb = choiceOf(b);
  if (!(ca.letter && ca.value) && !(cb.letter && cb.value)) return undefined;
  const letters = ca.letter !== undefined && cb.letter !== undefined;
  const values = ca.value !== undefined && cb.value !== undefined;
  if (!letters && !values) return false;
  return (!letters || ca.letter === cb.letter) && (!values || same(ca.value!, cb.value!));
}
