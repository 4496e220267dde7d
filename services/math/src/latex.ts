/**
 * A small LaTeX-to-expression translator: the normal form of an answer (see `normalize.ts`) becomes
 * a mathjs expression string (`\frac{\sqrt{3}}{2}` → `((sqrt(3))/(2))`, `2\pi r` → `2 pi r`). Only a
 * whitelist of commands is translated; anything else throws {@link NotAnExpressionError}, and the
 * answer is then compared as text. Letters are single-letter variables (`xy` is `x·y`), as in
 * mathematics, not identifiers.
 * @module
 */
import { braceGroup } from "./extract.js";

/** The answer is not an expression this translator knows (it is compared as text). */
export class NotAnExpressionError extends Error {
  override readonly name = "NotAnExpressionError";
}

const FUNCTIONS: Readonly<Record<string, string>> = {
  sin: "sin",
  cos: "cos",
  tan: "tan",
  sec: "sec",
  csc: "csc",
  cot: "cot",
  arcsin: "asin",
  arccos: "acos",
  arctan: "atan",
  sinh: "sinh",
  cosh: "cosh",
  tanh: "tanh",
  ln: "log",
  log: "log10",
  exp: "exp",
};

const CONSTANTS: Readonly<Record<string, string>> = {
  pi: "pi",
  infty: "Infinity",
  infinity: "Infinity",
  e: "e",
  cdot: "*",
  times: "*",
  div: "/",
  ast: "*",
};

/** Plain-text function names accepted without a backslash (`sqrt(2)`, `sin(x)`). */
const PLAIN_FUNCTIONS = new Set(["sqrt", "sin", "cos", "tan", "log", "ln", "exp"]);

/** Translates a normalised LaTeX answer into a mathjs expression string. */
export function latexToExpression(latex: string): string {
  // 1e3 / 2.5e-4: scientific notation, not 1·e·3.
  return new Translator(latex.replace(/(\d)e([+-]?\d+)/g, "$1\\cdot10^{$2}")).run();
}

/**
 * Commands the translator knows, longest first: after whitespace removal `\pi r` reads `\pir`, so a
 * command is the longest known name its letters start with.
 */
const KNOWN_COMMANDS: readonly string[] = [
  "frac",
  "dfrac",
  "tfrac",
  "sqrt",
  "binom",
  ...Object.keys(FUNCTIONS),
  ...Object.keys(CONSTANTS),
].sort((a, b) => b.length - a.length);

class Translator {
  private i = 0;
  constructor(private readonly s: string) {}

  run(): string {
    const out = this.sequence(this.s.length);
    if (out.trim() === "") throw new NotAnExpressionError("empty expression");
    return out;
  }

  private sequence(end: number): string {
    const parts: string[] = [];
    while (this.i < end) parts.push(this.token());
    return parts.join("");
  }

  /** One argument of a command: a brace group or a single character/command. */
  private argument(): string {
    const s = this.s;
    while (s[this.i] === " ") this.i++;
    if (s[this.i] === "{") {
      const g = braceGroup(s, this.i);
      if (!g) throw new NotAnExpressionError("unbalanced braces");
      const inner = latexToExpression(g.content);
      this.i = g.end;
      return `(${inner})`;
    }
    if (this.i >= s.length) throw new NotAnExpressionError("missing argument");
    return `(${this.token()})`;
  }

  private token(): string {
    const s = this.s;
    const c = s[this.i]!;
    if (c === "\\") return this.command();
    if (c === "{") {
      const g = braceGroup(s, this.i);
      if (!g) throw new NotAnExpressionError("unbalanced braces");
      this.i = g.end;
      return `(${latexToExpression(g.content)})`;
    }
    if (c === "}") throw new NotAnExpressionError("unbalanced braces");
    if (/[a-zA-Z]/.test(c)) {
      const word = /^[a-zA-Z]+/.exec(s.slice(this.i))![0];
      if (PLAIN_FUNCTIONS.has(word) && s[this.i + word.length] === "(") {
        this.i += word.length;
        return ` ${word === "ln" ? "log" : word === "log" ? "log10" : word}`;
      }
      this.i++;
      // A subscripted variable (`x_1`, `a_{n}`) is one symbol.
      if (s[this.i] === "_") {
        this.i++;
        const sub = s[this.i] === "{" ? braceGroup(s, this.i) : undefined;
        const name = sub ? sub.content : s[this.i];
        if (!name || !/^\w+$/.test(name)) throw new NotAnExpressionError("bad subscript");
        this.i = sub ? sub.end : this.i + 1;
        return ` (${c}_${name}) `;
      }
      // Parenthesised so that `n(n+1)` is a product, not a call of a function `n`.
      return ` (${c}) `;
    }
    if (c === "^") {
      this.i++;
      return `^${this.argument()}`;
    }
    if (c === "!") {
      this.i++;
      return "!";
    }
    if (/[0-9.+\-*/()[\], =]/.test(c)) {
      this.i++;
      return c;
    }
    throw new NotAnExpressionError(`unexpected character ${JSON.stringify(c)}`);
  }

  /**
   * A number written right before a fraction of integer literals is a mixed number (`2\frac{1}{2}`),
   * which the normaliser has already turned into an improper fraction when it is one. What is left
   * (`2\frac{3}{2}`, `2.5\frac{1}{2}`) is ambiguous — a malformed mixed number or a product — and is
   * not evaluated (it is compared as text). A power or subscript before it is a product (`x^2\frac12`).
   */
  private refuseNumberBeforeNumericFraction(at: number): void {
    const s = this.s;
    let k = at;
    while (k > 0 && /[\d.]/.test(s[k - 1]!)) k--;
    if (k === at || s[k - 1] === "^" || s[k - 1] === "_") return;
    if (/^\\[dt]?frac\{\d+\}\{\d+\}/.test(s.slice(at))) {
      throw new NotAnExpressionError("a number juxtaposed with a numeric fraction: mixed number or product");
    }
  }

  private command(): string {
    const s = this.s;
    const start = this.i;
    const m = /^\\([a-zA-Z]+)/.exec(s.slice(this.i, this.i + 40));
    if (!m) throw new NotAnExpressionError(`unexpected ${JSON.stringify(s.slice(this.i, this.i + 2))}`);
    const name = KNOWN_COMMANDS.find((k) => m[1]!.startsWith(k)) ?? m[1]!;
    this.i += name.length + 1;
    if (name === "frac" || name === "dfrac" || name === "tfrac") {
      this.refuseNumberBeforeNumericFraction(start);
      const a = this.argument();
      const b = this.argument();
      return `(${a}/${b})`;
    }
    if (name === "sqrt") {
      if (s[this.i] === "[") {
        const close = s.indexOf("]", this.i);
        if (close === -1) throw new NotAnExpressionError("unclosed root index");
        const n = latexToExpression(s.slice(this.i + 1, close));
        this.i = close + 1;
        return ` nthRoot(${this.argument()}, ${n})`;
      }
      return ` sqrt${this.argument()}`;
    }
    if (name === "binom") {
      const a = this.argument();
      const b = this.argument();
      return ` combinations(${a}, ${b})`;
    }
    const fn = FUNCTIONS[name];
    if (fn !== undefined) {
      if (name === "log" && s[this.i] === "_") {
        this.i++;
        const base = this.argument();
        return ` log(${this.argument()}, ${base})`;
      }
      if (s[this.i] === "^") {
        // \sin^2 x → (sin(x))^2
        this.i++;
        const power = this.argument();
        return ` (${fn}(${this.argument()}))^${power}`;
      }
      if (s[this.i] === "(") return ` ${fn}`;
      return ` ${fn}${this.argument()}`;
    }
    const constant = CONSTANTS[name];
    // Parenthesised: `pi (r)` would be a call of `pi`.
    if (constant !== undefined) return /^[a-zA-Z]/.test(constant) ? ` (${constant}) ` : ` ${constant} `;
    throw new NotAnExpressionError(`unsupported command \\${name}`);
  }
}

/** Names in the translator's output that can make a value irrational: roots, π, e, logarithms, trigonometry. */
const TRANSCENDENTAL =
  /\b(?:sqrt|nthRoot|pi|e|log|log10|exp|sin|cos|tan|sec|csc|cot|asin|acos|atan|sinh|cosh|tanh)\b/;

/** Whether a translated expression has a power whose exponent is not written as an integer (`2^{1/2}`, `8^{0.5}`). */
function hasFractionalPower(expression: string): boolean {
  for (let at = expression.indexOf("^("); at !== -1; at = expression.indexOf("^(", at + 2)) {
    let depth = 0;
    for (let k = at + 1; k < expression.length; k++) {
      const c = expression[k];
      if (c === "(") depth++;
      else if (c === ")" && --depth === 0) break;
      else if (c === "/" || c === ".") return true;
    }
  }
  return false;
}

/**
 * Whether a translated expression (`latexToExpression`) may have an irrational value: it uses a root,
 * π, e, a logarithm, an exponential, a trigonometric function or a fractional power. One that does not
 * (integers, decimals, fractions, integer powers, factorials, binomials) is rational by construction.
 */
export function mayBeIrrational(expression: string): boolean {
  return TRANSCENDENTAL.test(expression) || hasFractionalPower(expression);
}

/**
 * Whether the real value of a translated expression is irrational, as far as a double can tell: the
 * expression {@link mayBeIrrational} and the value is not within 1e-12 (relative) of a fraction with a
 * denominator up to 10^4 (its continued fraction's convergents). So `\pi`, `\sqrt2`, `e`, `\ln 2`,
 * `2^{1/2}` are; `\sqrt4`, `\sin\frac{\pi}{6}`, `\log_2 8` are not.
 */
export function isIrrationalValue(expression: string, value: number): boolean {
  if (!mayBeIrrational(expression) || !Number.isFinite(value)) return false;
  const x = Math.abs(value);
  const limit = 1e-12 * Math.max(1, x);
  let [h0, h1, k0, k1] = [0, 1, 1, 0];
  let rest = x;
  for (let step = 0; step < 40; step++) {
    const a = Math.floor(rest);
    [h0, h1] = [h1, a * h1 + h0];
    [k0, k1] = [k1, a * k1 + k0];
    if (k1 > 1e4) return true;
    if (Math.abs(x - h1 / k1) <= limit) return false;
    const frac = rest - a;
    if (frac < 1e-15) return false;
    rest = 1 / frac;
  }
  return true;
}
