/**
 * Injections placed the way AgentDojo places them (`TaskSuite.load_and_inject_default_environment`):
 * the environment is loaded, dumped back to YAML with **every string double-quoted** (its
 * `yaml_loader.quoted_presenter`; PyYAML escapes non-ASCII and folds lines at 80 columns), the injection
 * texts are `str.format`-ed into that text, and the result is parsed again. An injected text is therefore
 * read as the inside of a YAML double-quoted scalar: a single line break becomes a space, n + 1 breaks
 * become n newlines, spaces before a break and indentation after it disappear, and `\` starts an escape.
 * This module reproduces that for every string holding a `{vector}` placeholder: it writes the string as
 * PyYAML would at its place in the dump (column and indentation follow from its path), puts the texts
 * in, and scans the scalar back with PyYAML's rules.
 *
 * A `"` in an injected text ends the scalar there (upstream loads it when the rest of the line reads as
 * a comment). Where upstream could not load the result at all (an unknown escape, a document separator,
 * a non-printable character, or YAML left after an early `"`), the text is inserted verbatim instead.
 * @module
 */
import { BenchmarkDataError } from "../../benchmark-data.js";
import type { InjectionVector } from "../../suite.js";
import { emitDoubleQuoted } from "./yaml-dump.js";

const PLACEHOLDER = /\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const NON_PRINTABLE = /[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u;
const BREAK_CHARS = "\r\n\x85\u2028\u2029";

const ESCAPE_REPLACEMENTS: Readonly<Record<string, string>> = {
  "0": "\0",
  a: "\x07",
  b: "\x08",
  t: "\t",
  "\t": "\t",
  n: "\n",
  v: "\x0b",
  f: "\x0c",
  r: "\r",
  e: "\x1b",
  " ": " ",
  '"': '"',
  "\\": "\\",
  "/": "/",
  N: "\x85",
  _: "\xa0",
  L: "\u2028",
  P: "\u2029",
};
const ESCAPE_CODES: Readonly<Record<string, number>> = { x: 2, u: 4, U: 8 };

class ScanError extends Error {}

/**
 * PyYAML's `scan_flow_scalar` for a double-quoted scalar: `src` holds ` "…"` (leading spaces allowed);
 * returns the value, or throws {@link ScanError} where PyYAML raises or the scalar ends before `src` does.
 */
export function scanDoubleQuoted(src: string): string {
  const s = Array.from(src);
  let i = 0;
  while (s[i] === " ") i++;
  if (s[i] !== '"') throw new ScanError("no opening quote");
  i++;
  const peek = (k = 0) => s[i + k] ?? "\0";
  const lineBreak = (): string => {
    const ch = peek();
    if (ch === "\r" && peek(1) === "\n") {
      i += 2;
      return "\n";
    }
    i++;
    return ch === "\r" || ch === "\n" || ch === "\x85" ? "\n" : ch;
  };
  const breaks = (): string[] => {
    const out: string[] = [];
    for (;;) {
      const three = s.slice(i, i + 3).join("");
      if ((three === "---" || three === "...") && "\0 \t\r\n\x85\u2028\u2029".includes(peek(3)))
        throw new ScanError("found unexpected document separator");
      while (peek() === " " || peek() === "\t") i++;
      if (BREAK_CHARS.includes(peek()) && peek() !== "\0") out.push(lineBreak());
      else return out;
    }
  };
  const nonSpaces = (): string[] => {
    const out: string[] = [];
    for (;;) {
      let n = 0;
      while (!"'\"\\\0 \t\r\n\x85\u2028\u2029".includes(peek(n))) n++;
      if (n > 0) {
        out.push(s.slice(i, i + n).join(""));
        i += n;
      }
      const ch = peek();
      if (ch === "'") {
        out.push(ch);
        i++;
      } else if (ch === "\\") {
        i++;
        const e = peek();
        if (Object.hasOwn(ESCAPE_REPLACEMENTS, e)) {
          out.push(ESCAPE_REPLACEMENTS[e]!);
          i++;
        } else if (Object.hasOwn(ESCAPE_CODES, e)) {
          const len = ESCAPE_CODES[e]!;
          i++;
          const hex = s.slice(i, i + len).join("");
          if (!/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== len) throw new ScanError("bad escape code");
          out.push(String.fromCodePoint(Number.parseInt(hex, 16)));
          i += len;
        } else if (BREAK_CHARS.includes(e) && e !== "\0") {
          lineBreak();
          out.push(...breaks());
        } else throw new ScanError("found unknown escape character");
      } else return out;
    }
  };
  const spaces = (): string[] => {
    let n = 0;
    while (peek(n) === " " || peek(n) === "\t") n++;
    const ws = s.slice(i, i + n).join("");
    i += n;
    const ch = peek();
    if (ch === "\0" && i >= s.length) throw new ScanError("found unexpected end of stream");
    if (BREAK_CHARS.includes(ch) && ch !== "\0") {
      const lb = lineBreak();
      const more = breaks();
      const out: string[] = [];
      if (lb !== "\n") out.push(lb);
      else if (more.length === 0) out.push(" ");
      out.push(...more);
      return out;
    }
    return [ws];
  };
  const chunks = nonSpaces();
  while (peek() !== '"') {
    if (i >= s.length) throw new ScanError("found unexpected end of stream");
    chunks.push(...spaces(), ...nonSpaces());
  }
  i++;
  // A `"` in the injected text ends the scalar early; PyYAML still loads the document when the rest of
  // the line is a comment (and nothing of the scalar is left on later lines).
  if (!/^[ \t]*(?:#[^\r\n\x85\u2028\u2029]*)?$/u.test(s.slice(i).join("")))
    throw new ScanError("the injected text ends the scalar early");
  return chunks.join("");
}

/** Where a string sits in the dump: the column after the indicator before it, and its indentation. */
interface Place {
  readonly column: number;
  readonly indent: number;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The environment document with the injections placed as upstream places them (missing vectors get
 * their default). An unknown vector name is a `BenchmarkDataError`, as upstream's `validate_injections`.
 */
export function injectLikeUpstream<T>(
  document: T,
  vectors: Readonly<Record<string, InjectionVector>>,
  injections: Readonly<Record<string, string>>,
): T {
  for (const k of Object.keys(injections))
    if (!Object.hasOwn(vectors, k))
      throw new BenchmarkDataError(`unknown injection vector ${JSON.stringify(k)}`);
  const text = (name: string, m: string): string => {
    if (Object.hasOwn(injections, name)) return injections[name]!;
    if (Object.hasOwn(vectors, name)) return vectors[name]!.default;
    throw new BenchmarkDataError(`environment refers to unknown placeholder ${m}`);
  };
  const fill = (s: string): string =>
    s.replace(PLACEHOLDER, (m, name?: string) => (m === "{{" ? "{" : m === "}}" ? "}" : text(name!, m)));
  const str = (s: string, place: Place | undefined): string => {
    if (!s.includes("{") && !s.includes("}")) return s;
    if (place === undefined) return fill(s);
    const dumped = fill(emitDoubleQuoted(s, place.column, place.indent));
    // PyYAML's reader rejects non-printable characters anywhere in the stream.
    if (NON_PRINTABLE.test(dumped)) return fill(s);
    try {
      return scanDoubleQuoted(dumped);
    } catch (e) {
      if (e instanceof ScanError) return fill(s); // upstream cannot load this text: keep it verbatim
      throw e;
    }
  };
  // Layout of PyYAML's block style: a mapping's keys at its indent, a sequence under a key at the key's
  // indent ("indentless"), a mapping in a sequence item two further; keys are double-quoted too.
  const mapping = (m: Record<string, unknown>, indent: number): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(m)) {
      const after = indent + emitDoubleQuoted(k, 0, 0).trimStart().length + 1;
      out[fill(k)] = value(v, { column: after, indent: indent + 2 }, indent + 2, indent);
    }
    return out;
  };
  const sequence = (xs: unknown[], indent: number): unknown[] =>
    xs.map((x) => value(x, { column: indent + 1, indent: indent + 2 }, indent + 2, indent + 2));
  const value = (v: unknown, place: Place, mappingIndent: number, sequenceIndent: number): unknown => {
    if (typeof v === "string") return str(v, place);
    if (Array.isArray(v)) return sequence(v, sequenceIndent);
    if (isRecord(v)) return mapping(v, mappingIndent);
    return v;
  };
  if (isRecord(document)) return mapping(document, 0) as T;
  if (Array.isArray(document)) return sequence(document, 0) as T;
  return (typeof document === "string" ? str(document, undefined) : document) as T;
}
