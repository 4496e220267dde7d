/**
 * JSON as Python's `json.loads` reads it, and Python's `==` on the result.
 *
 * The reference checkers (ToolRL / CorrGRPO `rlla.py`, BFCL `ast_checker.py`) are Python: they tell
 * `1` (int) from `1.0` (float), treat `True == 1` and `1 == 1.0` as equal, and accept `NaN` /
 * `Infinity`. `JSON.parse` loses the int/float distinction, so this module has its own small parser
 * (linear time, bounded nesting) that keeps it.
 * @module
 */

import { pyFloatRepr, pyStrRepr } from "@reward-mesh/sdk/rewards";

/** A Python `int` (arbitrary precision, like Python). */
export interface PyInt {
  readonly kind: "int";
  readonly value: bigint;
}

/** A Python `float`. */
export interface PyFloat {
  readonly kind: "float";
  readonly value: number;
}

/** A Python `dict` with string keys (insertion order kept; a repeated key keeps its last value). */
export type PyDict = Map<string, PyValue>;

/** A value `json.loads` can return. */
export type PyValue = null | boolean | string | PyInt | PyFloat | PyValue[] | PyDict;

/** Python type names, as `type(x).__name__` prints them. */
export type PyTypeName = "NoneType" | "bool" | "str" | "int" | "float" | "list" | "dict";

/** Deepest nesting the parser accepts (deeper input is a parse error, not a stack overflow). */
export const MAX_JSON_DEPTH = 64;

/** Python 3.11+ refuses to convert integer strings longer than this (`sys.get_int_max_str_digits`). */
const MAX_INT_DIGITS = 4300;

/** `json.loads` failed; `message` says where and why. */
export class PyJsonError extends Error {
  override readonly name = "PyJsonError";
}

/** A Python int. */
export function pyInt(v: number | bigint): PyInt {
  return { kind: "int", value: BigInt(v) };
}

/** A Python float. */
export function pyFloat(v: number): PyFloat {
  return { kind: "float", value: v };
}

/** True for a Python `dict`. */
export function isDict(v: PyValue): v is PyDict {
  return v instanceof Map;
}

/** True for a Python `list`. */
export function isList(v: PyValue): v is PyValue[] {
  return Array.isArray(v);
}

/** `type(v).__name__`. */
export function pyType(v: PyValue): PyTypeName {
  if (v === null) return "NoneType";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "string") return "str";
  if (Array.isArray(v)) return "list";
  if (v instanceof Map) return "dict";
  return v.kind;
}

const WS = new Set([" ", "\t", "\n", "\r"]);

/**
 * `json.loads(text)`: one JSON value, surrounding JSON whitespace allowed; NaN / Infinity / -Infinity
 * accepted (as Python does). Throws {@link PyJsonError}.
 */
export function pyJsonLoads(text: string, maxDepth = MAX_JSON_DEPTH): PyValue {
  let i = 0;
  const n = text.length;
  const fail = (what: string): never => {
    throw new PyJsonError(`${what} at char ${i}`);
  };
  const skip = () => {
    while (i < n && WS.has(text[i]!)) i++;
  };
  const literal = (word: string) => text.startsWith(word, i);

  const parseString = (): string => {
    // text[i] === '"'
    i++;
    let out = "";
    let start = i;
    while (true) {
      if (i >= n) fail("unterminated string");
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i++;
        return out;
      }
      if (c < 0x20) fail("invalid control character in string");
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(start, i);
      const e = text[i + 1];
      switch (e) {
        case '"':
          out += '"';
          break;
        case "\\":
          out += "\\";
          break;
        case "/":
          out += "/";
          break;
        case "b":
          out += "\b";
          break;
        case "f":
          out += "\f";
          break;
        case "n":
          out += "\n";
          break;
        case "r":
          out += "\r";
          break;
        case "t":
          out += "\t";
          break;
        case "u": {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail("invalid \\uXXXX escape");
          out += String.fromCharCode(Number.parseInt(hex, 16));
          i += 4;
          break;
        }
        default:
          fail("invalid escape");
      }
      i += 2;
      start = i;
    }
  };

  const parseNumber = (): PyValue => {
    const start = i;
    if (text[i] === "-") i++;
    if (literal("Infinity")) {
      i += 8;
      return pyFloat(text[start] === "-" ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY);
    }
    const digitsStart = i;
    if (text[i] === "0") i++;
    else if (text[i]! >= "1" && text[i]! <= "9") while (i < n && text[i]! >= "0" && text[i]! <= "9") i++;
    else fail("expecting value");
    let isFloat = false;
    if (text[i] === "." && text[i + 1]! >= "0" && text[i + 1]! <= "9") {
      isFloat = true;
      i++;
      while (i < n && text[i]! >= "0" && text[i]! <= "9") i++;
    }
    if ((text[i] === "e" || text[i] === "E") && /[-+0-9]/.test(text[i + 1] ?? "")) {
      const save = i;
      i++;
      if (text[i] === "-" || text[i] === "+") i++;
      if (text[i]! >= "0" && text[i]! <= "9") {
        isFloat = true;
        while (i < n && text[i]! >= "0" && text[i]! <= "9") i++;
      } else i = save;
    }
    const lexeme = text.slice(start, i);
    if (isFloat) return pyFloat(Number(lexeme));
    if (i - digitsStart > MAX_INT_DIGITS) fail(`integer longer than ${MAX_INT_DIGITS} digits`);
    return { kind: "int", value: BigInt(lexeme) };
  };

  const parseValue = (depth: number): PyValue => {
    if (depth > maxDepth) fail(`nesting deeper than ${maxDepth}`);
    skip();
    const c = text[i];
    if (c === '"') return parseString();
    if (c === "{") {
      i++;
      const obj: PyDict = new Map();
      skip();
      if (text[i] === "}") {
        i++;
        return obj;
      }
      while (true) {
        skip();
        if (text[i] !== '"') fail("expecting property name enclosed in double quotes");
        const key = parseString();
        skip();
        if (text[i] !== ":") fail("expecting ':' delimiter");
        i++;
        const v = parseValue(depth + 1);
        obj.set(key, v); // a repeated key keeps its first position and its last value, as in Python
        skip();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return obj;
        }
        fail("expecting ',' delimiter");
      }
    }
    if (c === "[") {
      i++;
      const arr: PyValue[] = [];
      skip();
      if (text[i] === "]") {
        i++;
        return arr;
      }
      while (true) {
        arr.push(parseValue(depth + 1));
        skip();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return arr;
        }
        fail("expecting ',' delimiter");
      }
    }
    if (literal("true")) {
      i += 4;
      return true;
    }
    if (literal("false")) {
      i += 5;
      return false;
    }
    if (literal("null")) {
      i += 4;
      return null;
    }
    if (literal("NaN")) {
      i += 3;
      return pyFloat(Number.NaN);
    }
    if (c === "-" || (c !== undefined && ((c >= "0" && c <= "9") || c === "I"))) return parseNumber();
    return fail("expecting value");
  };

  const v = parseValue(1);
  skip();
  if (i !== n) fail("extra data");
  return v;
}

/** Like {@link pyJsonLoads} but returns the error message instead of throwing. */
export function tryPyJsonLoads(text: string): { value: PyValue } | { error: string } {
  try {
    return { value: pyJsonLoads(text) };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

function asNumber(v: PyValue): PyInt | PyFloat | undefined {
  if (typeof v === "boolean") return pyInt(v ? 1 : 0);
  if (v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Map)) return v;
  return undefined;
}

function numbersEqual(a: PyInt | PyFloat, b: PyInt | PyFloat): boolean {
  if (a.kind === "int" && b.kind === "int") return a.value === b.value;
  if (a.kind === "float" && b.kind === "float") return a.value === b.value;
  const i = a.kind === "int" ? a.value : (b as PyInt).value;
  const f = a.kind === "float" ? a.value : (b as PyFloat).value;
  return Number.isFinite(f) && Number.isInteger(f) && BigInt(f) === i;
}

/** Python's `a == b` for JSON values (`True == 1`, `1 == 1.0`, `nan != nan`, dicts order-free). */
export function pyEquals(a: PyValue, b: PyValue): boolean {
  const na = asNumber(a);
  const nb = asNumber(b);
  if (na || nb) return na !== undefined && nb !== undefined && numbersEqual(na, nb);
  if (a === null || b === null) return a === b;
  if (typeof a === "string" || typeof b === "string") return a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let k = 0; k < a.length; k++) if (!pyEquals(a[k]!, b[k]!)) return false;
    return true;
  }
  if (a instanceof Map && b instanceof Map) {
    if (a.size !== b.size) return false;
    for (const [k, v] of a) {
      if (!b.has(k) || !pyEquals(v, b.get(k)!)) return false;
    }
    return true;
  }
  return false;
}

/** Python's `value in items`. */
export function pyIn(value: PyValue, items: readonly PyValue[]): boolean {
  return items.some((x) => pyEquals(value, x));
}

export { pyFloatRepr };

/** Python's `repr(v)` (for details messages). Output is cut at `max` characters. */
export function pyRepr(v: PyValue, max = 200): string {
  const s = reprInner(v, 0);
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}

function reprInner(v: PyValue, depth: number): string {
  if (depth > 8) return "...";
  if (v === null) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "string") return pyStrRepr(v.length > 400 ? `${v.slice(0, 400)}…` : v);
  if (Array.isArray(v)) return `[${v.map((x) => reprInner(x, depth + 1)).join(", ")}]`;
  if (v instanceof Map)
    return `{${[...v].map(([k, x]) => `${pyStrRepr(k)}: ${reprInner(x, depth + 1)}`).join(", ")}}`;
  return v.kind === "int" ? v.value.toString() : pyFloatRepr(v.value);
}

/** A plain JS value (numbers for int and float) for JSON output. */
export function toPlain(v: PyValue): unknown {
  if (v === null || typeof v === "boolean" || typeof v === "string") return v;
  if (Array.isArray(v)) return v.map(toPlain);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [k, toPlain(x)]));
  return Number(v.value);
}
