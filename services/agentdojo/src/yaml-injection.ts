/**
 * How AgentDojo places injection texts into an environment, reproduced string by string. Upstream
 * (`task_suite.py` + `yaml_loader.py`, v1.2.x) loads `environment.yaml`, re-dumps it with
 * `yaml.dump(..., default_flow_style=False)` — every `str` double-quoted (`yaml_loader.quoted_presenter`),
 * keys sorted, ASCII only, lines wrapped at 80 columns — runs `str.format(**injections)` over that TEXT and
 * parses the result with `yaml.safe_load`. An injection therefore lands raw inside a double-quoted scalar:
 * its line breaks are folded, whitespace around them trimmed, backslash escapes interpreted, and a `"`
 * ends the scalar early.
 *
 * For every string that holds a `{`/`}` this module writes the scalar as PyYAML 6's emitter would at its
 * place in the dump (port of `Emitter.write_double_quoted` with the column and indentation the block
 * layout gives it), formats it as Python's `str.format` does, and reads it back as PyYAML's scanner does
 * (port of `Scanner.scan_flow_scalar` for double quotes). Where upstream's document would fail to parse
 * or change structure it throws a {@link YamlInjectionError}. The writer is the dump's own
 * ({@link emitDoubleQuoted} in `pyyaml.ts`, the port tool outputs are printed with).
 * @module
 */
import { emitDoubleQuoted } from "./pyyaml.js";

/** Upstream could not load the injected document, or it would differ in structure. */
export class YamlInjectionError extends Error {
  override readonly name = "YamlInjectionError";
}

/** `Scanner.ESCAPE_REPLACEMENTS`. */
const SCAN_ESCAPES = new Map<string, string>([
  ["0", "\0"],
  ["a", "\x07"],
  ["b", "\x08"],
  ["t", "\t"],
  ["\t", "\t"],
  ["n", "\n"],
  ["v", "\x0B"],
  ["f", "\x0C"],
  ["r", "\r"],
  ["e", "\x1B"],
  [" ", " "],
  ['"', '"'],
  ["\\", "\\"],
  ["/", "/"],
  ["N", "\x85"],
  ["_", "\xA0"],
  ["L", "\u2028"],
  ["P", "\u2029"],
]);

/** `Scanner.ESCAPE_CODES`. */
const SCAN_ESCAPE_CODES = new Map<string, number>([
  ["x", 2],
  ["u", 4],
  ["U", 8],
]);

const LINE_BREAKS = "\r\n\x85\u2028\u2029";
/** The first character `Reader.NON_PRINTABLE` matches (which makes `yaml.safe_load` fail), if any. */
function nonPrintable(text: string): string | undefined {
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    const ok =
      c === 0x09 ||
      c === 0x0a ||
      c === 0x0d ||
      (c >= 0x20 && c <= 0x7e) ||
      c === 0x85 ||
      (c >= 0xa0 && c <= 0xd7ff) ||
      (c >= 0xe000 && c <= 0xfffd) ||
      (c >= 0x10000 && c <= 0x10ffff);
    if (!ok) return ch;
  }
  return undefined;
}

function hex(cp: number, digits: number): string {
  return cp.toString(16).toUpperCase().padStart(digits, "0");
}

/** One replacement field `{name}` of a format string, and where it is. */
interface FormatResult {
  readonly text: string;
  /** Field names in order of appearance. */
  readonly fields: readonly string[];
}

/**
 * Python's `str.format(**values)` for the fields upstream uses (`{name}`; `{{`/`}}` escapes). Whatever
 * Python would reject (a single brace, a positional field, an unknown name) throws; conversions, format
 * specs and attribute/index lookups are not used by the benchmark and throw too.
 */
export function pyFormat(text: string, values: (name: string) => string | undefined): FormatResult {
  let out = "";
  const fields: string[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === "}") {
      if (text[i + 1] !== "}") throw new YamlInjectionError("Single '}' encountered in format string");
      out += "}";
      i += 2;
    } else if (c === "{") {
      if (text[i + 1] === "{") {
        out += "{";
        i += 2;
        continue;
      }
      // Find the matching '}' (Python counts nested braces inside a field).
      let depth = 1;
      let j = i + 1;
      for (; j < text.length; j++) {
        if (text[j] === "{") depth++;
        else if (text[j] === "}" && --depth === 0) break;
      }
      if (j >= text.length) throw new YamlInjectionError("expected '}' before end of string");
      const field = text.slice(i + 1, j);
      if (field === "" || /^[0-9]+$/.test(field))
        throw new YamlInjectionError(
          `positional field {${field}}: str.format(**injections) has no positional arguments`,
        );
      if (/[!:.[]/.test(field))
        throw new YamlInjectionError(
          `field {${field}} uses a conversion, format spec or lookup (not supported)`,
        );
      const v = values(field);
      if (v === undefined) throw new YamlInjectionError(`unknown placeholder {${field}}`);
      out += v;
      fields.push(field);
      i = j + 1;
    } else {
      out += c;
      i += 1;
    }
  }
  return { text: out, fields };
}

/**
 * `Scanner.scan_flow_scalar` for a double-quoted scalar: `text` starts with its opening quote and must
 * end with its closing quote (what follows it in the document is a line break). Returns the value, or
 * throws when the scalar ends before the last character, runs past it, or does not scan. With
 * `trailingComment` (a value, or a `? ` key: nothing follows it on its line), a scalar that an injected
 * `"` ends early still loads when the rest of its line reads as a comment (`"cut here" # rest"`:
 * PyYAML's `scan_to_next_token` skips spaces, not tabs, then a `#` comment) and nothing is left for
 * later lines.
 */
export function scanDoubleQuoted(text: string, trailingComment = false): string {
  const cps = Array.from(text);
  let i = 1;
  const peek = (k = 0): string => cps[i + k] ?? "\0";
  const fail = (what: string): never => {
    throw new YamlInjectionError(
      i >= cps.length - 1
        ? "the scalar's closing quote is escaped, so it runs into the rest of the document"
        : what,
    );
  };
  const lineBreak = (): string => {
    const ch = peek();
    if (ch === "\r" || ch === "\n" || ch === "\x85") {
      i += ch === "\r" && peek(1) === "\n" ? 2 : 1;
      return "\n";
    }
    i += 1;
    return ch;
  };
  const breaks = (): string[] => {
    const chunks: string[] = [];
    for (;;) {
      const prefix = peek(0) + peek(1) + peek(2);
      if ((prefix === "---" || prefix === "...") && `\0 \t${LINE_BREAKS}`.includes(peek(3)))
        fail("a line of the injected text starts with a document separator ('---' or '...')");
      while (peek() === " " || peek() === "\t") i += 1;
      if (LINE_BREAKS.includes(peek()) && peek() !== "\0") chunks.push(lineBreak());
      else return chunks;
    }
  };
  const nonSpaces = (): string[] => {
    const chunks: string[] = [];
    for (;;) {
      let length = 0;
      while (!`'"\\\0 \t${LINE_BREAKS}`.includes(peek(length))) length += 1;
      if (length > 0) {
        chunks.push(cps.slice(i, i + length).join(""));
        i += length;
      }
      const ch = peek();
      if (ch === "'") {
        chunks.push(ch);
        i += 1;
      } else if (ch === "\\") {
        i += 1;
        const e = peek();
        const rep = SCAN_ESCAPES.get(e);
        const codeLen = SCAN_ESCAPE_CODES.get(e);
        if (rep !== undefined) {
          chunks.push(rep);
          i += 1;
        } else if (codeLen !== undefined) {
          i += 1;
          for (let k = 0; k < codeLen; k++)
            if (!/^[0-9A-Fa-f]$/.test(peek(k)))
              fail(`expected escape sequence of ${codeLen} hexadecimal numbers after '\\${e}'`);
          const code = Number.parseInt(cps.slice(i, i + codeLen).join(""), 16);
          if (code > 0x10ffff)
            fail(`escape '\\${e}${cps.slice(i, i + codeLen).join("")}' is not a character`);
          chunks.push(String.fromCodePoint(code));
          i += codeLen;
        } else if (e !== "\0" && LINE_BREAKS.includes(e)) {
          lineBreak();
          chunks.push(...breaks());
        } else fail(`found unknown escape character ${JSON.stringify(e)} after a backslash`);
      } else return chunks;
    }
  };
  const spaces = (): string[] => {
    let length = 0;
    while (peek(length) === " " || peek(length) === "\t") length += 1;
    const whitespace = cps.slice(i, i + length).join("");
    i += length;
    const ch = peek();
    if (ch === "\0") return fail("found unexpected end of stream");
    if (LINE_BREAKS.includes(ch)) {
      const lb = lineBreak();
      const more = breaks();
      const chunks: string[] = [];
      if (lb !== "\n") chunks.push(lb);
      else if (more.length === 0) chunks.push(" ");
      chunks.push(...more);
      return chunks;
    }
    return [whitespace];
  };
  const chunks = nonSpaces();
  while (peek() !== '"') {
    if (i >= cps.length) fail("");
    chunks.push(...spaces(), ...nonSpaces());
  }
  const comment = /^ *#[^\r\n\x85\u2028\u2029]*$/u;
  if (i !== cps.length - 1 && !(trailingComment && comment.test(cps.slice(i + 1).join(""))))
    throw new YamlInjectionError(
      "an unescaped '\"' in the injected text ends the double-quoted scalar early; the rest of the text becomes YAML",
    );
  return chunks.join("");
}

/** Where a string sits in the dump: the column of its opening quote and its continuation indent. */
export interface ScalarPlace {
  readonly quoteColumn: number;
  readonly indent: number;
  /** Mapping keys written as simple keys are never wrapped and must stay on one line. */
  readonly simpleKey: boolean;
}

/**
 * The value upstream ends up with for `template` written at `place`: emitted, formatted, scanned.
 * Returns `template` itself when it holds no brace. `values` gives each placeholder's text.
 */
export function formatScalar(
  template: string,
  place: ScalarPlace,
  values: (name: string) => string | undefined,
): { value: string; fields: readonly string[] } {
  if (!template.includes("{") && !template.includes("}")) return { value: template, fields: [] };
  const emitted = emitDoubleQuoted(template, place.quoteColumn, place.indent, !place.simpleKey);
  const { text, fields } = pyFormat(emitted, values);
  if (fields.length === 0) return { value: scanDoubleQuoted(text), fields };
  const trailingComment = !place.simpleKey;
  const bad = nonPrintable(text);
  if (bad !== undefined)
    throw new YamlInjectionError(
      `the injected text holds ${JSON.stringify(bad)} (U+${hex(bad.codePointAt(0)!, 4)}), which PyYAML's reader rejects`,
    );
  if (place.simpleKey) {
    if (/[\r\n\x85\u2028\u2029]/.test(text))
      throw new YamlInjectionError("a line break in a mapping key: the key no longer scans as a simple key");
    if (Array.from(text).length > 1024)
      throw new YamlInjectionError(
        "a mapping key longer than 1024 characters no longer scans as a simple key",
      );
  }
  return { value: scanDoubleQuoted(text, trailingComment), fields };
}
