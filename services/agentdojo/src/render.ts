/**
 * How AgentDojo shows tool results to the agent (`tool_result_to_str`): models and lists of models as
 * YAML (`yaml.safe_dump`, keys sorted), everything else as Python's `str()` (dicts in Python repr,
 * floats as `1810.0`). Quoting follows PyYAML's rules closely but not byte for byte (multi-line and
 * tab-containing strings are always double-quoted here).
 * @module
 */

import { pyFloatRepr as pyFloat, pyStrRepr as pyStr } from "@reward-mesh/sdk/rewards";

/** Python's `repr(float)` / `str(float)` and `repr(str)` (shared with the tool-call service through the sdk). */
export { pyFloat, pyStr };

/** A scalar of a tool result. `float` fields are declared by the caller (Python keeps int and float apart). */
export type Scalar = string | number | boolean | null;

/**
 * Python's `repr()` of a JSON-like value; numbers are ints when integral unless `floats` is set
 * (then every number prints as a float).
 */
export function pyRepr(v: unknown, floats = false): string {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "string") return pyStr(v);
  if (typeof v === "number") return floats || !Number.isInteger(v) ? pyFloat(v) : String(v);
  if (Array.isArray(v)) return `[${v.map((x) => pyRepr(x, floats)).join(", ")}]`;
  if (typeof v === "object")
    return `{${Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${pyStr(k)}: ${pyRepr(x, floats)}`)
      .join(", ")}}`;
  return String(v);
}

const YAML_RESOLVES = [
  /^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$/,
  /^(?:~|null|Null|NULL)$/,
  /^[-+]?(?:0b[01_]+|0[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(?::[0-5]?[0-9])*)$/,
  /^[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+][0-9]+)?$/,
  /^[-+]?\.(?:inf|Inf|INF)$/,
  /^\.(?:nan|NaN|NAN)$/,
  /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}/,
];

/** One string as a PyYAML block-context scalar: plain when safe, else single- or double-quoted. */
export function yamlString(s: string): string {
  const needsDouble = [...s].some((ch) => {
    const c = ch.codePointAt(0)!;
    return c < 0x20 || c === 0x7f || c === 0x85 || c === 0x2028 || c === 0x2029 || c === 0xfeff;
  });
  if (needsDouble) return JSON.stringify(s);
  const plain =
    s !== "" &&
    !/^[\s,[\]{}#&*!|>'"%@`]/.test(s) &&
    !/^[-?:](?:\s|$)/.test(s) &&
    !/\s$/.test(s) &&
    !s.includes(": ") &&
    !s.includes(" #") &&
    !s.endsWith(":") &&
    !YAML_RESOLVES.some((re) => re.test(s));
  if (plain) return s;
  return `'${s.replaceAll("'", "''")}'`;
}

function yamlScalar(v: Scalar, isFloat: boolean): string {
  if (v === null) return "null";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") return isFloat ? pyFloat(v) : String(v);
  return yamlString(v);
}

/**
 * `yaml.safe_dump([model.model_dump() for model in models]).strip()`: a YAML list of flat records with
 * keys sorted; `floatFields` are printed as Python floats.
 */
export function yamlRecords(
  records: readonly Readonly<Record<string, Scalar>>[],
  floatFields: ReadonlySet<string>,
): string {
  if (records.length === 0) return "[]";
  const out: string[] = [];
  for (const r of records) {
    const keys = Object.keys(r).sort();
    keys.forEach((k, i) => {
      out.push(`${i === 0 ? "- " : "  "}${k}: ${yamlScalar(r[k]!, floatFields.has(k))}`);
    });
  }
  return out.join("\n");
}

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

/** What {@link pyYamlDump} can print. */
export type Dumpable =
  | Scalar
  | PyTemporal
  | PyFloat
  | readonly Dumpable[]
  | { readonly [key: string]: Dumpable | undefined };

function isScalarLike(v: Dumpable): boolean {
  return (
    v === null ||
    typeof v !== "object" ||
    v instanceof PyTemporal ||
    v instanceof PyFloat ||
    (Array.isArray(v) && v.length === 0) ||
    (!Array.isArray(v) && Object.keys(v).length === 0)
  );
}

function dumpScalar(v: Dumpable): string {
  if (v instanceof PyTemporal) return v.text;
  if (v instanceof PyFloat) return pyFloat(v.value);
  if (Array.isArray(v)) return "[]";
  if (v !== null && typeof v === "object") return "{}";
  return yamlScalar(v as Scalar, false);
}

function dumpLines(v: Dumpable, indent: string, out: string[], firstPrefix: string): void {
  if (isScalarLike(v)) {
    out.push(`${firstPrefix}${dumpScalar(v)}`);
    return;
  }
  if (Array.isArray(v)) {
    v.forEach((item, i) => {
      const prefix = i === 0 ? `${firstPrefix}- ` : `${indent}- `;
      dumpLines(item, `${indent}  `, out, prefix);
    });
    return;
  }
  const entries = Object.entries(v as Record<string, Dumpable | undefined>)
    .filter((e): e is [string, Dumpable] => e[1] !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  entries.forEach(([k, x], i) => {
    const head = `${i === 0 ? firstPrefix : indent}${yamlString(k)}:`;
    if (isScalarLike(x)) out.push(`${head} ${dumpScalar(x)}`);
    else if (Array.isArray(x)) {
      out.push(head);
      dumpLines(x, indent, out, indent);
    } else {
      out.push(head);
      dumpLines(x, `${indent}  `, out, `${indent}  `);
    }
  });
}

/**
 * `yaml.safe_dump(value).strip()` for nested models (`model_dump()` of emails, events, files, ...):
 * block style, keys sorted, sequences in a mapping not indented (PyYAML's layout). Integral numbers
 * print as ints: wrap Python floats in {@link PyFloat}, datetimes in {@link PyTemporal}. Long scalars
 * are not folded at 80 columns as PyYAML does (the content is the same, the line breaks are not).
 */
export function pyYamlDump(value: Dumpable): string {
  const out: string[] = [];
  dumpLines(value, "", out, "");
  return out.join("\n");
}
