/**
 * AgentDojo's `FunctionsRuntime.run_function`: find the tool (else `ToolNotFoundError`), validate the
 * arguments the way pydantic's lax mode does (`model_validate(...).model_dump()`: unknown arguments
 * ignored, `"5"` → 5.0 for a float, `1` → True for a bool, a missing required argument is a
 * `ValidationError`), run the tool on the environment, and turn an exception into `"<Type>: <message>"`.
 * A failed call changes nothing and is still part of the trajectory.
 * @module
 */
import { convertStringLists } from "./py-literal.js";
import { pyRepr } from "./render.js";
import { type Suite, type Tool, ToolError, type ToolParameter } from "./suite.js";

/** The outcome of one call: what the agent sees, or the error (then `output` is empty). */
export interface CallOutcome {
  readonly output: string;
  readonly error: string;
}

const BOOL_STRINGS: Readonly<Record<string, boolean>> = {
  "0": false,
  off: false,
  f: false,
  false: false,
  n: false,
  no: false,
  "1": true,
  on: true,
  t: true,
  true: true,
  y: true,
  yes: true,
};

const FLOAT_STRING = /^\s*[+-]?(?:\d+(?:_\d+)*\.?(?:\d+(?:_\d+)*)?|\.\d+(?:_\d+)*)(?:[eE][+-]?\d+)?\s*$/;
const INT_STRING = /^\s*[+-]?\d+(?:_\d+)*\s*$/;

/** Python's `type(v).__name__` of a JSON value (pydantic's `input_type`). */
export function pyTypeName(v: unknown): string {
  if (v === null || v === undefined) return "NoneType";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "string") return "str";
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "float";
  if (Array.isArray(v)) return "list";
  return "dict";
}

interface FieldError {
  readonly loc: string;
  readonly msg: string;
  readonly type: string;
  readonly input?: unknown;
}

/** Pydantic v2 lax coercion of one value; returns the value or a field error. */
export function coerce(
  p: ToolParameter,
  v: unknown,
): { ok: true; value: unknown } | { ok: false; error: FieldError } {
  const fail = (msg: string, type: string) => ({
    ok: false as const,
    error: { loc: p.name, msg, type, input: v },
  });
  if (v === null && p.nullable) return { ok: true, value: null };
  switch (p.type) {
    case "string":
      if (typeof v !== "string") return fail("Input should be a valid string", "string_type");
      if (p.enum && !p.enum.includes(v)) return fail(`Input should be ${enumList(p.enum)}`, "enum");
      return { ok: true, value: v };
    case "object":
      return v !== null && typeof v === "object" && !Array.isArray(v)
        ? { ok: true, value: v }
        : fail("Input should be a valid dictionary", "dict_type");
    case "array": {
      if (!Array.isArray(v)) return fail("Input should be a valid list", "list_type");
      if (!p.items) return { ok: true, value: v };
      const out: unknown[] = [];
      for (let i = 0; i < v.length; i++) {
        const c = coerce({ name: `${p.name}.${i}`, type: p.items, description: "", required: true }, v[i]);
        if (!c.ok) return c;
        out.push(c.value);
      }
      return { ok: true, value: out };
    }
    case "number":
      if (typeof v === "number") return { ok: true, value: v };
      if (typeof v === "boolean") return { ok: true, value: v ? 1 : 0 };
      if (typeof v === "string") {
        return FLOAT_STRING.test(v)
          ? { ok: true, value: Number(v.trim().replaceAll("_", "")) }
          : fail("Input should be a valid number, unable to parse string as a number", "float_parsing");
      }
      return fail("Input should be a valid number", "float_type");
    case "integer":
      if (typeof v === "number") {
        return Number.isInteger(v)
          ? { ok: true, value: v }
          : fail("Input should be a valid integer, got a number with a fractional part", "int_from_float");
      }
      if (typeof v === "boolean") return { ok: true, value: v ? 1 : 0 };
      if (typeof v === "string") {
        return INT_STRING.test(v)
          ? { ok: true, value: Number(v.trim().replaceAll("_", "")) }
          : fail("Input should be a valid integer, unable to parse string as an integer", "int_parsing");
      }
      return fail("Input should be a valid integer", "int_type");
    case "boolean":
      if (typeof v === "boolean") return { ok: true, value: v };
      if (v === 0 || v === 1) return { ok: true, value: v === 1 };
      if (typeof v === "string" && v.toLowerCase() in BOOL_STRINGS)
        return { ok: true, value: BOOL_STRINGS[v.toLowerCase()] };
      return typeof v === "string" || typeof v === "number"
        ? fail("Input should be a valid boolean, unable to interpret input", "bool_parsing")
        : fail("Input should be a valid boolean", "bool_type");
  }
}

/** Pydantic's "'a', 'b' or 'c'". */
function enumList(values: readonly string[]): string {
  const q = values.map((x) => `'${x}'`);
  return q.length <= 1 ? (q[0] ?? "") : `${q.slice(0, -1).join(", ")} or ${q.at(-1)}`;
}

function formatValidationError(tool: string, errors: readonly FieldError[], raw: unknown): string {
  const lines = [
    `${errors.length} validation error${errors.length === 1 ? "" : "s"} for Input schema for \`${tool}\``,
  ];
  for (const e of errors) {
    const input = e.type === "missing" ? raw : e.input;
    lines.push(
      e.loc,
      `  ${e.msg} [type=${e.type}, input_value=${pyRepr(input)}, input_type=${pyTypeName(input)}]`,
    );
  }
  return lines.join("\n");
}

/**
 * Validates `raw` against the tool's parameters: a plain object, every required parameter present,
 * every known parameter coercible. Unknown keys are dropped (pydantic's default `extra="ignore"`).
 */
export function validateArguments<Env>(
  tool: Tool<Env>,
  raw: unknown,
): { ok: true; args: Record<string, unknown> } | { ok: false; error: string } {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    return {
      ok: false,
      error: `1 validation error for Input schema for \`${tool.name}\`\n  Input should be a valid dictionary or instance of Input schema for \`${tool.name}\` [type=model_type, input_value=${pyRepr(raw)}, input_type=${pyTypeName(raw)}]`,
    };
  }
  const given = raw as Record<string, unknown>;
  const args: Record<string, unknown> = {};
  const errors: FieldError[] = [];
  for (const p of tool.parameters) {
    if (!Object.hasOwn(given, p.name)) {
      if (p.required) errors.push({ loc: p.name, msg: "Field required", type: "missing" });
      else args[p.name] = p.default ?? null;
      continue;
    }
    const c = coerce(p, given[p.name]);
    if (c.ok) args[p.name] = c.value;
    else errors.push(c.error);
  }
  return errors.length === 0
    ? { ok: true, args }
    : { ok: false, error: formatValidationError(tool.name, errors, raw) };
}

/** Runs one call on `env` (mutating it), AgentDojo style; never throws for the agent's mistakes. */
export function runFunction<Env>(suite: Suite<Env>, env: Env, fn: string, raw: unknown): CallOutcome {
  const tool = suite.tools.find((t) => t.name === fn);
  if (!tool)
    return { output: "", error: `ToolNotFoundError: The requested function \`${fn}\` is not available.` };
  // AgentDojo's ToolsExecutor first turns string arguments that are Python list literals into lists.
  const v = validateArguments(tool, convertStringLists(raw));
  if (!v.ok) return { output: "", error: `ValidationError: ${v.error}` };
  try {
    return { output: tool.run(env, v.args), error: "" };
  } catch (err) {
    if (err instanceof ToolError) return { output: "", error: `${err.pyType}: ${err.message}` };
    throw err;
  }
}

/** The tools as OpenAI function-calling schemas (what `Reset` hands to the policy). */
export function toolSchemas<Env>(suite: Suite<Env>): object[] {
  return suite.tools.map((t) => ({
    type: "function",
    function: {
      name: t.name,
      description: t.description,
      parameters: {
        type: "object",
        title: `Input schema for \`${t.name}\``,
        properties: Object.fromEntries(
          t.parameters.map((p) => {
            const type = typeSchema(p);
            const base = { ...type, description: p.description, title: titleOf(p.name) };
            const schema = p.nullable
              ? {
                  anyOf: [type, { type: "null" }],
                  description: p.description,
                  title: titleOf(p.name),
                }
              : base;
            return [p.name, p.required ? schema : { ...schema, default: p.default ?? null }];
          }),
        ),
        required: t.parameters.filter((p) => p.required).map((p) => p.name),
      },
    },
  }));
}

/** JSON Schema of a parameter's type (without description/title). */
function typeSchema(p: ToolParameter): Record<string, unknown> {
  if (p.type === "array")
    return p.items ? { type: "array", items: { type: p.items } } : { type: "array", items: {} };
  if (p.enum) return { type: p.type, enum: [...p.enum] };
  return { type: p.type };
}

function titleOf(name: string): string {
  return name
    .split("_")
    .map((w) => (w === "" ? w : w[0]!.toUpperCase() + w.slice(1)))
    .join(" ");
}
