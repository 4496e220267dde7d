/**
 * How AgentDojo shows tool results to the agent (`tool_result_to_str`): models and lists of models as
 * YAML (`yaml.safe_dump`, keys sorted), everything else as Python's `str()` (dicts in Python repr,
 * floats as `1810.0`). The YAML is PyYAML's byte for byte (`pyyaml.ts`, a port of its emitter: scalar
 * styles, escapes, folding at 80 columns).
 * @module
 */

import { pyFloatRepr as pyFloat, pyStrRepr as pyStr } from "@reward-mesh/sdk/rewards";
import { type Dumpable, PyFloat, PyTemporal, type Scalar, safeDump } from "./pyyaml.js";

export type { Dumpable, Scalar };
/** Python's `repr(float)` / `str(float)` and `repr(str)` (shared with the tool-call service through the sdk). */
export { PyFloat, PyTemporal, pyFloat, pyStr };

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

/**
 * One string as PyYAML writes it as a whole document (`yaml.safe_dump(s).strip()` without the `...` end
 * marker of a plain scalar): plain when safe, else single- or double-quoted, folded at 80 columns.
 */
export function yamlString(s: string): string {
  return safeDump(s).replace(/\n\.\.\.$/, "");
}

/**
 * `yaml.safe_dump([model.model_dump() for model in models]).strip()`: a YAML list of flat records with
 * keys sorted; `floatFields` are printed as Python floats.
 */
export function yamlRecords(
  records: readonly Readonly<Record<string, Scalar>>[],
  floatFields: ReadonlySet<string>,
): string {
  return safeDump(
    records.map((r) =>
      Object.fromEntries(
        Object.entries(r).map(([k, v]) => [
          k,
          floatFields.has(k) && typeof v === "number" ? new PyFloat(v) : v,
        ]),
      ),
    ),
  );
}

/**
 * `yaml.safe_dump(value).strip()` for nested models (`model_dump()` of emails, events, files, ...):
 * PyYAML's exact output (see `pyyaml.ts`). Integral numbers print as ints: wrap Python floats in
 * {@link PyFloat}, datetimes in {@link PyTemporal}.
 */
export function pyYamlDump(value: Dumpable): string {
  return safeDump(value);
}
