/**
 * Declarative environment variables: each variable is declared once ({@link defineEnv}) and that
 * declaration drives both the loader ({@link loadEnv}: validated with ajv against the schema, coerced to
 * typed values) and the published JSON Schema ({@link envSchema}; `services/sdk/schema/service-env.schema.json`
 * is written from the services' specs by `scripts/gen-service-env-schema.mjs`). Rules a schema cannot
 * state (one variable against another, files that must exist, PEM contents) stay as code after
 * {@link loadEnv}, as the run configuration does after its schema.
 *
 * The environment is strings: a blank value counts as unset; integers are `-?digits`, numbers anything
 * `Number` reads as finite, booleans `true/false/1/0/yes/no/on/off` in any case. A bad value fails with a
 * {@link ConfigError} `'<KEY>' <problem>`.
 * @module
 */
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { ConfigError } from "./errors.js";

/** One environment variable: its type, bounds or choices, default and description. */
export type EnvVarSpec =
  | {
      readonly type: "string";
      readonly enum?: readonly string[];
      readonly default?: string;
      readonly description: string;
    }
  | {
      readonly type: "integer" | "number";
      readonly minimum?: number;
      readonly maximum?: number;
      readonly default?: number;
      readonly description: string;
    }
  | { readonly type: "boolean"; readonly default?: boolean; readonly description: string }
  /** A path; whether it must exist (and what it must hold) is checked by the loader's code. */
  | { readonly type: "file"; readonly description: string };

/** Variables by name. */
export type EnvSpec = Readonly<Record<string, EnvVarSpec>>;

/** Declares environment variables (returns `spec`, keeping its literal types for {@link loadEnv}). */
export function defineEnv<const S extends EnvSpec>(spec: S): S {
  return spec;
}

/** The typed value of one variable. */
export type EnvValue<V extends EnvVarSpec> = V extends { readonly type: "integer" | "number" }
  ? number
  : V extends { readonly type: "boolean" }
    ? boolean
    : V extends { readonly enum: readonly (infer E extends string)[] }
      ? E
      : string;

/** What {@link loadEnv} returns: each variable's value, its default when unset, or undefined without one. */
export type EnvValues<S extends EnvSpec> = {
  readonly [K in keyof S]: S[K] extends { readonly default: unknown }
    ? EnvValue<S[K]>
    : EnvValue<S[K]> | undefined;
};

/** An environment: the process's or a plain object in tests. */
type RawEnv = Readonly<Record<string, string | undefined>>;

/** Values a boolean variable takes (the loader also takes them in upper case). */
export const BOOLEAN_VALUES = ["true", "false", "1", "0", "yes", "no", "on", "off"] as const;
const TRUE_VALUES: readonly string[] = ["true", "1", "yes", "on"];
const INTEGER = "^-?\\d+$";

/** One variable as a JSON Schema of its (string) value; `x-type`, `x-minimum`, `x-maximum` give type and bounds. */
export function envVarSchema(v: EnvVarSpec): Record<string, unknown> {
  const p: Record<string, unknown> = { description: v.description, type: "string", "x-type": v.type };
  if (v.type === "string" && v.enum) p["enum"] = [...v.enum];
  if (v.type === "integer") p["pattern"] = INTEGER;
  if (v.type === "boolean") p["enum"] = [...BOOLEAN_VALUES];
  if ((v.type === "integer" || v.type === "number") && v.minimum !== undefined) p["x-minimum"] = v.minimum;
  if ((v.type === "integer" || v.type === "number") && v.maximum !== undefined) p["x-maximum"] = v.maximum;
  if ("default" in v && v.default !== undefined) p["default"] = String(v.default);
  return p;
}

/**
 * The JSON Schema (draft-07) of an environment holding `spec`'s variables, as a mapping of strings;
 * properties sorted by name. Other variables are allowed (an environment holds many).
 */
export function envSchema(spec: EnvSpec, description?: string): Record<string, unknown> {
  return {
    ...(description !== undefined ? { description } : {}),
    type: "object",
    properties: Object.fromEntries(
      Object.keys(spec)
        .sort()
        .map((k) => [k, envVarSchema(spec[k]!)]),
    ),
  };
}

/** Bounds an integer or number is checked against: the declared ones, else the type's range. */
function bounds(v: EnvVarSpec): [number, number] {
  if (v.type === "integer") {
    return [v.minimum ?? Number.MIN_SAFE_INTEGER, v.maximum ?? Number.MAX_SAFE_INTEGER];
  }
  if (v.type === "number") return [v.minimum ?? -Infinity, v.maximum ?? Infinity];
  return [-Infinity, Infinity];
}

/** ajv with the `x-` keywords of {@link envVarSchema} as real checks on the string values. */
const ajv = new Ajv({ allErrors: true, strict: true });
ajv.addKeyword({
  keyword: "x-type",
  type: "string",
  schemaType: "string",
  validate: (t: string, data: string) => {
    if (t === "number") return Number.isFinite(Number(data));
    // an integer beyond the safe range (the pattern checks the digits)
    if (t === "integer") return !/^-?\d+$/.test(data) || Number.isSafeInteger(Number(data));
    return true;
  },
});
ajv.addKeyword({
  keyword: "x-minimum",
  type: "string",
  schemaType: "number",
  validate: (min: number, data: string) => !(Number(data) < min),
});
ajv.addKeyword({
  keyword: "x-maximum",
  type: "string",
  schemaType: "number",
  validate: (max: number, data: string) => !(Number(data) > max),
});

const compiled = new WeakMap<EnvSpec, ValidateFunction>();

function validator(spec: EnvSpec): ValidateFunction {
  let v = compiled.get(spec);
  if (!v) {
    v = ajv.compile(envSchema(spec));
    compiled.set(spec, v);
  }
  return v;
}

/** Errors of the type (not a number, not a choice) come before errors of the bounds. */
const TYPE_KEYWORDS = new Set(["type", "pattern", "enum"]);

/** The message of a value the schema rejected, as the loaders have always worded it. */
function problem(v: EnvVarSpec, value: string, errors: readonly ErrorObject[]): string {
  const typeError = errors.some(
    (e) => TYPE_KEYWORDS.has(e.keyword) || (e.keyword === "x-type" && v.type === "number"),
  );
  if (v.type === "integer" && typeError) return `must be an integer, got '${value}'`;
  if (v.type === "number" && typeError) return `must be a number, got '${value}'`;
  if (v.type === "boolean") return `must be a boolean (true/false), got '${value}'`;
  if (v.type === "string" && v.enum) return `must be one of ${v.enum.join(", ")}, got '${value}'`;
  const [min, max] = bounds(v);
  return `must be in [${min}, ${max}], got ${Number(value)}`;
}

/** A variable's value trimmed; undefined when unset or blank. */
function raw(env: RawEnv, key: string): string | undefined {
  const v = env[key];
  if (v === undefined) return undefined;
  const t = v.trim();
  return t === "" ? undefined : t;
}

/**
 * Reads `spec`'s variables (and no others) from `env`, validates them against {@link envSchema} with ajv
 * and returns typed values: defaults for unset ones. The first bad variable, in the spec's order, fails
 * with a {@link ConfigError} naming it.
 */
export function loadEnv<const S extends EnvSpec>(spec: S, env: RawEnv): EnvValues<S> {
  return readEnv(spec, env).values;
}

/** {@link loadEnv}, and which variables the environment sets (a default does not count). */
export function readEnv<const S extends EnvSpec>(
  spec: S,
  env: RawEnv,
): { readonly values: EnvValues<S>; readonly set: ReadonlySet<keyof S & string> } {
  const given: Record<string, string> = {};
  const checked: Record<string, string> = {};
  for (const key of Object.keys(spec)) {
    const value = raw(env, key);
    if (value === undefined) continue;
    given[key] = value;
    checked[key] = spec[key]!.type === "boolean" ? value.toLowerCase() : value;
  }
  const validate = validator(spec);
  if (!validate(checked)) {
    const errors = validate.errors ?? [];
    for (const key of Object.keys(spec)) {
      const own = errors.filter((e) => e.instancePath === `/${key}`);
      if (own.length > 0) throw new ConfigError(key, problem(spec[key]!, given[key]!, own));
    }
    throw new Error(`environment: ${ajv.errorsText(errors)}`); // unreachable: every property is a string
  }
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(spec)) {
    const value = checked[key];
    if (value === undefined) out[key] = "default" in v ? v.default : undefined;
    else if (v.type === "integer" || v.type === "number") out[key] = Number(value);
    else if (v.type === "boolean") out[key] = TRUE_VALUES.includes(value);
    else out[key] = value;
  }
  return { values: out as EnvValues<S>, set: new Set(Object.keys(given)) };
}

/** `spec` with each name prefixed `<prefix>_` (`GRPC_PORT` → `LENGTH_GRPC_PORT`). */
export function prefixEnv(prefix: string, spec: EnvSpec): EnvSpec {
  return Object.fromEntries(Object.entries(spec).map(([k, v]) => [`${prefix}_${k}`, v]));
}
