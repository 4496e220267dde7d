/**
 * AgentDojo's `ToolsExecutor` turns every string argument that Python's `ast.literal_eval` reads as a
 * list into that list before running the tool (models often send `"['a@b.c']"` for a `list[str]`).
 * This is the part of `literal_eval` that decision needs: Python literals (strings with their prefixes,
 * escapes and implicit concatenation, ints, floats, `True`/`False`/`None`, unary signs, lists, tuples,
 * dicts and sets). Anything else is "not a literal", as `literal_eval` raising ValueError/SyntaxError.
 * @module
 */

class NotLiteral extends Error {}

/** Arrays that stand for a tuple or a set (Python's list check must not accept them). */
const NOT_LISTS = new WeakSet<unknown[]>();
function notList(a: unknown[]): unknown[] {
  NOT_LISTS.add(a);
  return a;
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  "\n": "",
  "\\": "\\",
  "'": "'",
  '"': '"',
  a: "\x07",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
  v: "\v",
};

class Parser {
  private i = 0;
  constructor(private readonly s: string) {}

  parseAll(): unknown {
    const v = this.value();
    this.ws();
    if (this.i !== this.s.length) throw new NotLiteral();
    return v;
  }

  /** Skips spaces, tabs, newlines (inside brackets Python joins lines), backslash-newlines and comments. */
  private ws(): void {
    for (;;) {
      const c = this.s[this.i];
      if (c === " " || c === "\t" || c === "\n" || c === "\r" || c === "\f") this.i++;
      else if (c === "\\" && this.s[this.i + 1] === "\n") this.i += 2;
      else if (c === "#") while (this.i < this.s.length && this.s[this.i] !== "\n") this.i++;
      else return;
    }
  }

  private value(): unknown {
    this.ws();
    const c = this.s[this.i];
    if (c === undefined) throw new NotLiteral();
    if (c === "[") return this.sequence("[", "]");
    if (c === "(") return this.tuple();
    if (c === "{") return this.braces();
    if (c === "-" || c === "+") {
      this.i++;
      const v = this.value();
      if (typeof v !== "number") throw new NotLiteral();
      return c === "-" ? -v : v;
    }
    if (/[0-9.]/.test(c)) return this.number();
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.s.slice(this.i))?.[0];
    if (word !== undefined) {
      const next = this.s[this.i + word.length];
      if ((next === "'" || next === '"') && /^(?:[rRuU]|[bB][rR]?|[rR][bB])$/.test(word))
        return this.strings();
      this.i += word.length;
      if (word === "True") return true;
      if (word === "False") return false;
      if (word === "None") return null;
      throw new NotLiteral();
    }
    if (c === "'" || c === '"') return this.strings();
    throw new NotLiteral();
  }

  private number(): number {
    const rest = this.s.slice(this.i);
    const m =
      /^0[xX](?:_?[0-9a-fA-F])+|^0[oO](?:_?[0-7])+|^0[bB](?:_?[01])+|^(?:\d(?:_?\d)*)?\.?(?:\d(?:_?\d)*)?(?:[eE][+-]?\d(?:_?\d)*)?/.exec(
        rest,
      );
    const text = m?.[0] ?? "";
    if (text === "" || text === "." || /[jJ]/.test(rest[text.length] ?? "")) throw new NotLiteral();
    this.i += text.length;
    const clean = text.replaceAll("_", "");
    if (/^0[xXoObB]/.test(clean)) return Number(clean.toLowerCase());
    // Python rejects leading zeros on a non-zero decimal int ("012").
    if (/^0+[1-9]\d*$/.test(clean)) throw new NotLiteral();
    return Number(clean);
  }

  /** One or more adjacent string (or bytes) literals, implicitly concatenated. */
  private strings(): string {
    let out = "";
    let any = false;
    let bytes = false;
    for (;;) {
      this.ws();
      const m = /^([rRuUbB]{0,2})('''|"""|'|")/.exec(this.s.slice(this.i));
      if (m === null) break;
      const prefix = m[1]!.toLowerCase();
      // Bytes are literals too (kept as text here); Python refuses to concatenate them with str.
      if (any && prefix.includes("b") !== bytes) throw new NotLiteral();
      bytes = prefix.includes("b");
      this.i += m[0].length;
      out += this.stringBody(m[2]!, prefix.includes("r"));
      any = true;
    }
    if (!any) throw new NotLiteral();
    return out;
  }

  private stringBody(quote: string, raw: boolean): string {
    let out = "";
    for (;;) {
      if (this.i >= this.s.length) throw new NotLiteral();
      if (this.s.startsWith(quote, this.i)) {
        this.i += quote.length;
        return out;
      }
      const c = this.s[this.i]!;
      if (c === "\n" && quote.length === 1) throw new NotLiteral();
      if (c !== "\\") {
        out += c;
        this.i++;
        continue;
      }
      const e = this.s[this.i + 1];
      if (e === undefined) throw new NotLiteral();
      if (raw) {
        out += c + e;
        this.i += 2;
        continue;
      }
      this.i += 2;
      if (Object.hasOwn(SIMPLE_ESCAPES, e)) out += SIMPLE_ESCAPES[e];
      else if (/[0-7]/.test(e)) {
        const oct = /^[0-7]{1,3}/.exec(this.s.slice(this.i - 1))![0];
        out += String.fromCodePoint(Number.parseInt(oct, 8));
        this.i += oct.length - 1;
      } else if (e === "x" || e === "u" || e === "U") {
        const n = e === "x" ? 2 : e === "u" ? 4 : 8;
        const hex = this.s.slice(this.i, this.i + n);
        if (!new RegExp(`^[0-9a-fA-F]{${n}}$`).test(hex)) throw new NotLiteral();
        const cp = Number.parseInt(hex, 16);
        if (cp > 0x10ffff) throw new NotLiteral();
        out += String.fromCodePoint(cp);
        this.i += n;
      } else if (e === "N") throw new NotLiteral();
      else out += `\\${e}`;
    }
  }

  /** `[a, b, ...]` (a trailing comma is allowed). */
  private sequence(open: string, close: string): unknown[] {
    this.i++;
    const out: unknown[] = [];
    for (;;) {
      this.ws();
      if (this.s[this.i] === close) {
        this.i++;
        return out;
      }
      if (out.length > 0 && open === "") throw new NotLiteral();
      out.push(this.value());
      this.ws();
      if (this.s[this.i] === ",") this.i++;
      else if (this.s[this.i] !== close) throw new NotLiteral();
    }
  }

  /** `()`, `(x)` (just x), `(x,)`, `(x, y)`: tuples come back as arrays. */
  private tuple(): unknown {
    this.i++;
    this.ws();
    if (this.s[this.i] === ")") {
      this.i++;
      return notList([]);
    }
    const first = this.value();
    this.ws();
    if (this.s[this.i] === ")") {
      this.i++;
      return first;
    }
    if (this.s[this.i] !== ",") throw new NotLiteral();
    this.i++;
    const rest = this.sequence("", ")");
    return notList([first, ...rest]);
  }

  /** `{}` (a dict), `{k: v, ...}` or `{a, b}` (a set, as an array). */
  private braces(): unknown {
    this.i++;
    this.ws();
    if (this.s[this.i] === "}") {
      this.i++;
      return {};
    }
    const first = this.value();
    this.ws();
    if (this.s[this.i] !== ":") {
      if (this.s[this.i] === "}") {
        this.i++;
        return notList([first]);
      }
      if (this.s[this.i] !== ",") throw new NotLiteral();
      this.i++;
      return notList([first, ...this.sequence("", "}")]);
    }
    const dict: Record<string, unknown> = {};
    let key: unknown = first;
    for (;;) {
      this.ws();
      if (this.s[this.i] !== ":") throw new NotLiteral();
      this.i++;
      const v = this.value();
      dict[typeof key === "string" ? key : JSON.stringify(key)] = v;
      this.ws();
      if (this.s[this.i] === ",") {
        this.i++;
        this.ws();
      }
      if (this.s[this.i] === "}") {
        this.i++;
        return dict;
      }
      key = this.value();
    }
  }
}

/** `ast.literal_eval(s)` when it is a Python literal, else `undefined`. */
export function pyLiteralEval(s: string): { value: unknown } | undefined {
  try {
    return { value: new Parser(s.replace(/^[ \t]+/, "")).parseAll() };
  } catch (e) {
    if (e instanceof NotLiteral || e instanceof RangeError) return undefined;
    throw e;
  }
}

/** `is_string_list(s)`: `literal_eval(s)` succeeds and gives a `list` (not a tuple or set). */
export function isStringList(s: string): boolean {
  const parsed = pyLiteralEval(s);
  return parsed !== undefined && Array.isArray(parsed.value) && !NOT_LISTS.has(parsed.value);
}

/**
 * The ToolsExecutor step: every string argument that is a Python list literal becomes that list.
 * Other arguments are unchanged; returns `args` itself when nothing changed.
 */
export function convertStringLists(args: unknown): unknown {
  if (args === null || typeof args !== "object" || Array.isArray(args)) return args;
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(args as Record<string, unknown>)) {
    if (typeof v !== "string" || !v.includes("[") || !isStringList(v)) continue;
    out ??= { ...(args as Record<string, unknown>) };
    out[k] = pyLiteralEval(v)!.value;
  }
  return out ?? args;
}
