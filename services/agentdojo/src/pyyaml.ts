/**
 * `yaml.safe_dump(value)` byte for byte, for the block-style documents AgentDojo's `tool_result_to_str`
 * prints: a port of PyYAML 6's emitter for mappings (keys sorted), sequences and scalars, including its
 * scalar analysis (plain only when the text would not resolve to another type and has no indicators,
 * single quotes for multi-line text, double quotes with escapes for non-ASCII, tabs and other
 * specials — `safe_dump` does not allow unicode), and folding at 80 columns. Every suite's tool output
 * is printed with it (`render.ts`), and its double-quoted writer is the one injection placement
 * (`yaml-injection.ts`) writes each placeholder's scalar with. Checked against real PyYAML by
 * `test/pyyaml-dump.test.ts`.
 * @module
 */
import { pyFloatRepr as pyFloat } from "@reward-mesh/sdk/rewards";

/** A scalar of a tool result. `float` fields are declared by the caller (Python keeps int and float apart). */
export type Scalar = string | number | boolean | null;

/** A Python `datetime`/`date`/`time` value: PyYAML prints it plain (`2024-05-15 10:00:00`). */
export class PyTemporal {
  /** The text PyYAML prints, e.g. `2024-05-15 10:00:00` or `2024-05-15`. */
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** A Python float value inside a dumped structure (prints `5.0`, not `5`). */
export class PyFloat {
  readonly value: number;
  constructor(value: number) {
    this.value = value;
  }
}

/**
 * What {@link safeDump} can print. Integral numbers print as ints: wrap Python floats in {@link PyFloat},
 * datetimes in {@link PyTemporal}; `undefined` mapping values are left out.
 */
export type Dumpable =
  | Scalar
  | PyTemporal
  | PyFloat
  | readonly Dumpable[]
  | { readonly [key: string]: Dumpable | undefined };

const BEST_WIDTH = 80;
const BEST_INDENT = 2;
const BREAKS = "\n\x85\u2028\u2029";
const isBreak = (ch: string | undefined) => ch !== undefined && BREAKS.includes(ch);

/** PyYAML's (YAML 1.1) implicit resolvers, by first character: a plain scalar matching one is not a str. */
const RESOLVERS: readonly [string, RegExp][] = [
  ["yYnNtTfFoO", /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/],
  [
    "-+0123456789.",
    /^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/,
  ],
  [
    "-+0123456789",
    /^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$/,
  ],
  ["<", /^(?:<<)$/],
  ["~nN", /^(?:~|null|Null|NULL)$/],
  [
    "0123456789",
    /^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$/,
  ],
  ["=", /^(?:=)$/],
];

/** Whether a str would be read back as a str when written plain (`implicit[0]` of the serializer). */
function resolvesToStr(s: string): boolean {
  if (s === "") return false; // the null resolver matches ''
  // Python's `$` also matches before one final newline.
  const t = s.endsWith("\n") ? s.slice(0, -1) : s;
  return !RESOLVERS.some(([first, re]) => first.includes(s[0]!) && re.test(t));
}

interface Analysis {
  readonly empty: boolean;
  readonly multiline: boolean;
  readonly allowFlowPlain: boolean;
  readonly allowBlockPlain: boolean;
  readonly allowSingleQuoted: boolean;
}

const WS_AROUND = "\0 \t\r\n\x85\u2028\u2029";

/** `Emitter.analyze_scalar` with `allow_unicode=False`. */
function analyzeScalar(text: readonly string[]): Analysis {
  if (text.length === 0)
    return {
      empty: true,
      multiline: false,
      allowFlowPlain: false,
      allowBlockPlain: true,
      allowSingleQuoted: true,
    };
  const s = text.join("");
  let block = s.startsWith("---") || s.startsWith("...");
  let flow = block;
  let lineBreaks = false;
  let special = false;
  let leadingSpace = false;
  let leadingBreak = false;
  let trailingSpace = false;
  let trailingBreak = false;
  let breakSpace = false;
  let spaceBreak = false;
  let precededByWs = true;
  let followedByWs = text.length === 1 || WS_AROUND.includes(text[1]!);
  let previousSpace = false;
  let previousBreak = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (i === 0) {
      if ("#,[]{}&*!|>'\"%@`".includes(ch)) flow = block = true;
      if ("?:".includes(ch)) {
        flow = true;
        if (followedByWs) block = true;
      }
      if (ch === "-" && followedByWs) flow = block = true;
    } else {
      if (",?[]{}".includes(ch)) flow = true;
      if (ch === ":") {
        flow = true;
        if (followedByWs) block = true;
      }
      if (ch === "#" && precededByWs) flow = block = true;
    }
    if (isBreak(ch)) lineBreaks = true;
    const c = ch.codePointAt(0)!;
    if (!(ch === "\n" || (c >= 0x20 && c <= 0x7e))) special = true; // unicode is special without allow_unicode
    if (ch === " ") {
      if (i === 0) leadingSpace = true;
      if (i === text.length - 1) trailingSpace = true;
      if (previousBreak) breakSpace = true;
      previousSpace = true;
      previousBreak = false;
    } else if (isBreak(ch)) {
      if (i === 0) leadingBreak = true;
      if (i === text.length - 1) trailingBreak = true;
      if (previousSpace) spaceBreak = true;
      previousSpace = false;
      previousBreak = true;
    } else {
      previousSpace = false;
      previousBreak = false;
    }
    precededByWs = WS_AROUND.includes(ch);
    followedByWs = i + 2 >= text.length || WS_AROUND.includes(text[i + 2]!);
  }
  let allowFlowPlain = true;
  let allowBlockPlain = true;
  let allowSingleQuoted = true;
  if (leadingSpace || leadingBreak || trailingSpace || trailingBreak)
    allowFlowPlain = allowBlockPlain = false;
  if (breakSpace) allowFlowPlain = allowBlockPlain = allowSingleQuoted = false;
  if (spaceBreak || special) allowFlowPlain = allowBlockPlain = allowSingleQuoted = false;
  if (lineBreaks) allowFlowPlain = allowBlockPlain = false;
  if (flow) allowFlowPlain = false;
  if (block) allowBlockPlain = false;
  return { empty: false, multiline: lineBreaks, allowFlowPlain, allowBlockPlain, allowSingleQuoted };
}

const ESCAPES: Readonly<Record<string, string>> = {
  "\0": "0",
  "\x07": "a",
  "\x08": "b",
  "\t": "t",
  "\n": "n",
  "\x0b": "v",
  "\x0c": "f",
  "\r": "r",
  "\x1b": "e",
  '"': '"',
  "\\": "\\",
  "\x85": "N",
  "\xa0": "_",
  "\u2028": "L",
  "\u2029": "P",
};

/**
 * `Emitter.check_simple_key` for a `str` key: not empty, on one line, and shorter than 128 characters
 * counting the `!!str` tag PyYAML prepares (though does not write), so at most 122 characters.
 */
export function isSimpleKey(key: string): boolean {
  return key !== "" && Array.from(key).length + 5 < 128 && !Array.from(key).some(isBreak);
}

interface Context {
  readonly root?: boolean;
  readonly mapping?: boolean;
  readonly simpleKey?: boolean;
}

/** The emitter's state (`column`, `indent`, `whitespace`, `indention`) and its writers. */
class Emitter {
  out = "";
  private column = 0;
  private whitespace = true;
  private indention = true;
  private indent: number | null = null;
  private readonly indents: (number | null)[] = [];
  private flowLevel = 0;
  private rootContext = false;
  private mappingContext = false;
  private simpleKeyContext = false;
  /** A plain scalar was the whole document: PyYAML ends it with `...`. */
  openEnded = false;

  private write(data: string): void {
    this.out += data;
    this.column += data.length; // only ASCII reaches the writers (allow_unicode=False)
  }

  private increaseIndent(flow: boolean, indentless = false): void {
    this.indents.push(this.indent);
    if (this.indent === null) this.indent = flow ? BEST_INDENT : 0;
    else if (!indentless) this.indent += BEST_INDENT;
  }

  private popIndent(): void {
    this.indent = this.indents.pop() ?? null;
  }

  private writeIndicator(
    indicator: string,
    needWhitespace: boolean,
    whitespace = false,
    indention = false,
  ): void {
    this.write(this.whitespace || !needWhitespace ? indicator : ` ${indicator}`);
    this.whitespace = whitespace;
    this.indention = this.indention && indention;
  }

  private writeIndent(): void {
    const indent = this.indent ?? 0;
    if (!this.indention || this.column > indent || (this.column === indent && !this.whitespace))
      this.writeLineBreak();
    if (this.column < indent) {
      this.whitespace = true;
      this.write(" ".repeat(indent - this.column));
    }
  }

  private writeLineBreak(data = "\n"): void {
    this.whitespace = true;
    this.indention = true;
    this.out += data;
    this.column = 0;
  }

  node(v: Dumpable, ctx: Context): void {
    this.rootContext = ctx.root ?? false;
    this.mappingContext = ctx.mapping ?? false;
    this.simpleKeyContext = ctx.simpleKey ?? false;
    if (Array.isArray(v)) this.sequence(v);
    else if (v !== null && typeof v === "object" && !(v instanceof PyTemporal) && !(v instanceof PyFloat))
      this.mapping(v as { readonly [key: string]: Dumpable | undefined });
    else this.scalar(v as Dumpable);
  }

  private emptyFlow(open: string, close: string): void {
    this.writeIndicator(open, true, true);
    this.flowLevel++;
    this.increaseIndent(true);
    this.popIndent();
    this.flowLevel--;
    this.writeIndicator(close, false);
  }

  private sequence(items: readonly Dumpable[]): void {
    if (items.length === 0) {
      this.emptyFlow("[", "]");
      return;
    }
    this.increaseIndent(false, this.mappingContext && !this.indention);
    for (const item of items) {
      this.writeIndent();
      this.writeIndicator("-", true, false, true);
      this.node(item, {});
    }
    this.popIndent();
  }

  private mapping(m: { readonly [key: string]: Dumpable | undefined }): void {
    const entries = Object.entries(m)
      .filter((e): e is [string, Dumpable] => e[1] !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (entries.length === 0) {
      this.emptyFlow("{", "}");
      return;
    }
    this.increaseIndent(false);
    for (const [k, v] of entries) {
      this.writeIndent();
      if (isSimpleKey(k)) {
        this.node(k, { mapping: true, simpleKey: true });
        this.writeIndicator(":", false);
      } else {
        this.writeIndicator("?", true, false, true);
        this.node(k, { mapping: true });
        this.writeIndent();
        this.writeIndicator(":", true, false, true);
      }
      this.node(v, { mapping: true });
    }
    this.popIndent();
  }

  private scalar(v: Dumpable): void {
    let text: string;
    let implicitPlain = true;
    if (v === null) text = "null";
    else if (typeof v === "boolean") text = v ? "true" : "false";
    else if (typeof v === "number") text = String(v);
    else if (v instanceof PyFloat) text = floatText(v.value);
    else if (v instanceof PyTemporal) text = v.text;
    else {
      text = v as string;
      implicitPlain = resolvesToStr(text);
    }
    this.increaseIndent(true);
    const chars = Array.from(text);
    const a = analyzeScalar(chars);
    const split = !this.simpleKeyContext;
    const plainOk =
      implicitPlain &&
      !(this.simpleKeyContext && (a.empty || a.multiline)) &&
      ((this.flowLevel > 0 && a.allowFlowPlain) || (this.flowLevel === 0 && a.allowBlockPlain));
    if (plainOk) this.writePlain(chars, split);
    else if (a.allowSingleQuoted && !(this.simpleKeyContext && a.multiline))
      this.writeSingleQuoted(chars, split);
    else this.writeDoubleQuoted(chars, split);
    this.popIndent();
  }

  private writePlain(text: readonly string[], split: boolean): void {
    if (this.rootContext) this.openEnded = true;
    if (text.length === 0) return;
    if (!this.whitespace) this.write(" ");
    this.whitespace = false;
    this.indention = false;
    let spaces = false;
    let breaks = false;
    let start = 0;
    for (let end = 0; end <= text.length; end++) {
      const ch = end < text.length ? text[end] : undefined;
      if (spaces) {
        if (ch !== " ") {
          if (start + 1 === end && this.column > BEST_WIDTH && split) {
            this.writeIndent();
            this.whitespace = false;
            this.indention = false;
          } else this.write(text.slice(start, end).join(""));
          start = end;
        }
      } else if (breaks) {
        if (!isBreak(ch)) {
          if (text[start] === "\n") this.writeLineBreak();
          for (const br of text.slice(start, end)) this.writeLineBreak(br);
          this.writeIndent();
          this.whitespace = false;
          this.indention = false;
          start = end;
        }
      } else if (ch === undefined || ch === " " || isBreak(ch)) {
        this.write(text.slice(start, end).join(""));
        start = end;
      }
      if (ch !== undefined) {
        spaces = ch === " ";
        breaks = isBreak(ch);
      }
    }
  }

  private writeSingleQuoted(text: readonly string[], split: boolean): void {
    this.writeIndicator("'", true);
    let spaces = false;
    let breaks = false;
    let start = 0;
    for (let end = 0; end <= text.length; end++) {
      const ch = end < text.length ? text[end] : undefined;
      if (spaces) {
        if (ch !== " ") {
          if (start + 1 === end && this.column > BEST_WIDTH && split && start !== 0 && end !== text.length)
            this.writeIndent();
          else this.write(text.slice(start, end).join(""));
          start = end;
        }
      } else if (breaks) {
        if (!isBreak(ch)) {
          if (text[start] === "\n") this.writeLineBreak();
          for (const br of text.slice(start, end)) this.writeLineBreak(br);
          this.writeIndent();
          start = end;
        }
      } else if (ch === undefined || ch === " " || isBreak(ch) || ch === "'") {
        if (start < end) {
          this.write(text.slice(start, end).join(""));
          start = end;
        }
      }
      if (ch === "'") {
        this.write("''");
        start = end + 1;
      }
      if (ch !== undefined) {
        spaces = ch === " ";
        breaks = isBreak(ch);
      }
    }
    this.writeIndicator("'", false);
  }

  /** Starts the emitter mid-line at `column` (right after a space), with scalar indent `indent`. */
  at(column: number, indent: number): this {
    this.column = column;
    this.whitespace = true;
    this.indention = false;
    this.indent = indent;
    return this;
  }

  writeDoubleQuoted(text: readonly string[], split: boolean): void {
    this.writeIndicator('"', true);
    let start = 0;
    for (let end = 0; end <= text.length; end++) {
      const ch = end < text.length ? text[end] : undefined;
      const c = ch?.codePointAt(0) ?? 0;
      if (ch === undefined || '"\\\x85\u2028\u2029\ufeff'.includes(ch) || !(c >= 0x20 && c <= 0x7e)) {
        if (start < end) {
          this.write(text.slice(start, end).join(""));
          start = end;
        }
        if (ch !== undefined) {
          const hex = (w: number) => c.toString(16).toUpperCase().padStart(w, "0");
          this.write(
            ESCAPES[ch] !== undefined
              ? `\\${ESCAPES[ch]}`
              : c <= 0xff
                ? `\\x${hex(2)}`
                : c <= 0xffff
                  ? `\\u${hex(4)}`
                  : `\\U${hex(8)}`,
          );
          start = end + 1;
        }
      }
      if (
        end > 0 &&
        end < text.length - 1 &&
        (ch === " " || start >= end) &&
        this.column + (end - start) > BEST_WIDTH &&
        split
      ) {
        const data = `${text.slice(start, end).join("")}\\`;
        if (start < end) start = end;
        this.write(data);
        this.writeIndent();
        this.whitespace = false;
        this.indention = false;
        if (text[start] === " ") this.write("\\");
      }
    }
    this.writeIndicator('"', false);
  }
}

/** `SafeRepresenter.represent_float`. */
function floatText(x: number): string {
  if (Number.isNaN(x)) return ".nan";
  if (x === Number.POSITIVE_INFINITY) return ".inf";
  if (x === Number.NEGATIVE_INFINITY) return "-.inf";
  const r = pyFloat(x).toLowerCase();
  return !r.includes(".") && r.includes("e") ? r.replace("e", ".0e") : r;
}

/**
 * `yaml.safe_dump(value).strip()`: what `tool_result_to_str` shows for models, lists of models and
 * other dumped structures (a document that is a plain scalar keeps PyYAML's `...` end marker).
 */
export function safeDump(value: Dumpable): string {
  const e = new Emitter();
  e.node(value, { root: true });
  return `${e.out}${e.openEnded ? "\n..." : ""}`.replace(/^\s+|\s+$/g, "");
}

/**
 * `Emitter.write_double_quoted(text, split)` with `allow_unicode=False`: `text` as PyYAML writes it as a
 * double-quoted scalar whose opening quote is at column `quoteColumn`, continuation lines indented to
 * `indent`, folded at 80 columns when `split` (PyYAML never splits a simple key). Returns the scalar,
 * quotes included.
 */
export function emitDoubleQuoted(text: string, quoteColumn: number, indent: number, split: boolean): string {
  const e = new Emitter().at(quoteColumn, indent);
  e.writeDoubleQuoted(Array.from(text), split);
  return e.out;
}
