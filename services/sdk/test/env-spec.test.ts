/**
 * The declarative environment specs (`defineEnv`, `loadEnv`, `envSchema`): values coerced from strings as
 * the loaders always did, the loaders' error texts, only the declared variables read, and the published
 * schema form (a draft-07 mapping of strings that a plain validator, as an editor's, accepts).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Ajv } from "ajv";
import { ConfigError, defineEnv, envSchema, loadEnv, prefixEnv, readEnv } from "../src/index.js";

const SPEC = defineEnv({
  N: { type: "integer", minimum: 1, maximum: 10, default: 5, description: "an integer" },
  FREE: { type: "integer", description: "an unbounded integer" },
  F: { type: "number", minimum: 0, default: 1, description: "a number" },
  B: { type: "boolean", default: true, description: "a boolean" },
  E: { type: "string", enum: ["a", "b"], default: "a", description: "a choice" },
  S: { type: "string", description: "a string" },
  P: { type: "file", description: "a path" },
});

const message = (env: Record<string, string>): string => {
  try {
    loadEnv(SPEC, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.message;
  }
  assert.fail(`${JSON.stringify(env)} was accepted`);
};

describe("loadEnv", () => {
  it("gives defaults for unset and blank variables, and undefined without a default", () => {
    const v = loadEnv(SPEC, { N: "  ", S: "" });
    assert.deepEqual(v, { N: 5, FREE: undefined, F: 1, B: true, E: "a", S: undefined, P: undefined });
  });

  it("coerces the strings: integers, numbers, booleans in any case, choices, trimmed strings", () => {
    const v = loadEnv(SPEC, { N: " 10 ", FREE: "-7", F: "0.25", B: "OFF", E: "b", S: " x y ", P: "/p" });
    assert.deepEqual(v, { N: 10, FREE: -7, F: 0.25, B: false, E: "b", S: "x y", P: "/p" });
    for (const t of ["true", "1", "yes", "on", "TRUE", "Yes"]) assert.equal(loadEnv(SPEC, { B: t }).B, true);
    for (const f of ["false", "0", "no", "off", "False"]) assert.equal(loadEnv(SPEC, { B: f }).B, false);
  });

  it("fails with the loaders' texts, naming the variable", () => {
    assert.equal(message({ N: "x" }), "'N' must be an integer, got 'x'");
    assert.equal(message({ N: "1.5" }), "'N' must be an integer, got '1.5'");
    assert.equal(message({ N: "1e3" }), "'N' must be an integer, got '1e3'");
    assert.equal(message({ N: "0" }), "'N' must be in [1, 10], got 0");
    assert.equal(message({ N: "11" }), "'N' must be in [1, 10], got 11");
    assert.equal(
      message({ FREE: "99999999999999999999" }),
      "'FREE' must be in [-9007199254740991, 9007199254740991], got 100000000000000000000",
    );
    assert.equal(message({ F: "NaN" }), "'F' must be a number, got 'NaN'");
    assert.equal(message({ F: "Infinity" }), "'F' must be a number, got 'Infinity'");
    assert.equal(message({ F: "-0.5" }), "'F' must be in [0, Infinity], got -0.5");
    assert.equal(message({ B: "maybe" }), "'B' must be a boolean (true/false), got 'maybe'");
    assert.equal(message({ E: "c" }), "'E' must be one of a, b, got 'c'");
    assert.equal(new ConfigError("N", "x").key, "N");
  });

  it("names the first bad variable in the spec's order", () => {
    assert.equal(message({ E: "c", N: "x" }), "'N' must be an integer, got 'x'");
  });

  it("reads the declared variables and no others", () => {
    const seen = new Set<string>();
    const env = new Proxy({} as Record<string, string | undefined>, {
      get(_t, key) {
        if (typeof key === "string") seen.add(key);
        return undefined;
      },
      ownKeys() {
        throw new Error("the environment was enumerated");
      },
    });
    loadEnv(SPEC, env);
    assert.deepEqual([...seen].sort(), Object.keys(SPEC).sort());
  });

  it("readEnv says which variables the environment sets (a default does not count)", () => {
    const { values, set } = readEnv(SPEC, { B: "true", N: " " });
    assert.equal(values.B, true);
    assert.deepEqual([...set], ["B"]);
  });
});

describe("envSchema", () => {
  it("is a draft-07 mapping of strings that a plain validator uses: patterns and choices, x-bounds for tools", () => {
    const schema = envSchema(SPEC, "test");
    assert.deepEqual(Object.keys(schema["properties"] as object), ["B", "E", "F", "FREE", "N", "P", "S"]);
    assert.deepEqual((schema["properties"] as Record<string, unknown>)["N"], {
      description: "an integer",
      type: "string",
      "x-type": "integer",
      pattern: "^-?\\d+$",
      "x-minimum": 1,
      "x-maximum": 10,
      default: "5",
    });
    const validate = new Ajv({ strict: false }).compile(schema);
    assert.equal(validate({ N: "3", B: "on", E: "b" }), true);
    assert.equal(validate({ N: "x" }), false);
    assert.equal(validate({ B: "maybe" }), false);
    assert.equal(validate({ E: "c" }), false);
    assert.equal(validate({ OTHER: "anything" }), true);
  });

  it("prefixEnv names each variable <PREFIX>_<NAME>", () => {
    assert.deepEqual(Object.keys(prefixEnv("LENGTH", { GRPC_PORT: SPEC.N })), ["LENGTH_GRPC_PORT"]);
  });
});
