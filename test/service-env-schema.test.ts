/**
 * The services' environment schema (`services/sdk/schema/service-env.schema.json`, written by
 * `scripts/gen-service-env-schema.mjs`) against the services' own loaders: the committed file is what
 * the script writes, each service's `loadConfig` reads exactly the variables the schema lists for it, and
 * every typed variable's bad values (not a number, out of bounds, not a choice) fail start-up naming it
 * while the schema's default and bounds are accepted.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { loadConfig as agentdojo } from "@reward-mesh/agentdojo";
import { loadConfig as ast } from "@reward-mesh/ast";
import { loadConfig as codeExec } from "@reward-mesh/code-exec";
import { loadConfig as efficiency } from "@reward-mesh/efficiency";
import { loadConfig as length } from "@reward-mesh/length";
import { loadConfig as toolCall } from "@reward-mesh/tool-call";
import { Ajv } from "ajv";
// @ts-expect-error a plain-JS script without declarations
import { buildServiceEnvSchema, SCHEMA_PATH, schemaText } from "../scripts/gen-service-env-schema.mjs";

type Env = Record<string, string | undefined>;
type Property = {
  description: string;
  type: "string";
  "x-type": "string" | "integer" | "number" | "boolean" | "file";
  enum?: string[];
  "x-minimum"?: number;
  "x-maximum"?: number;
  default?: string;
};
type Definition = { properties: Record<string, Property> };

const LOADERS: Record<string, (env: Env) => unknown> = {
  length,
  "code-exec": codeExec,
  ast,
  efficiency,
  "tool-call": toolCall,
  agentdojo,
};

const schema = JSON.parse(readFileSync(SCHEMA_PATH as string, "utf8")) as {
  definitions: Record<string, Definition>;
};
const ajv = new Ajv({ strict: false });
ajv.addSchema(schema, "env");

/** The variables `load` reads from an otherwise empty environment. */
function reads(load: (env: Env) => unknown): string[] {
  const seen = new Set<string>();
  const env = new Proxy({} as Env, {
    get(_t, key) {
      if (typeof key === "string") seen.add(key);
      return undefined;
    },
  });
  load(env);
  return [...seen].sort();
}

/** Variables another one's good values depend on (checked together by the loader). */
function companions(key: string): Env {
  if (key === "LENGTH_MAX_LENGTH") return { LENGTH_CACHE_LENGTH: "1" };
  if (key.endsWith("_NAK_BACKOFF_MAX_MS")) return { [key.replace(/_MAX_MS$/, "_MS")]: "0" };
  return {};
}

/** The loader's error for `env`, or null when it starts. */
function failure(load: (env: Env) => unknown, env: Env): string | null {
  try {
    load(env);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

describe("service environment schema", () => {
  it("is what scripts/gen-service-env-schema.mjs writes", () => {
    assert.equal(readFileSync(SCHEMA_PATH as string, "utf8"), (schemaText as () => string)());
    assert.deepEqual(schema, (buildServiceEnvSchema as () => unknown)());
  });

  it("lists a definition for every service, and each loader reads exactly its variables", () => {
    assert.deepEqual(Object.keys(schema.definitions).sort(), Object.keys(LOADERS).sort());
    for (const [name, load] of Object.entries(LOADERS)) {
      assert.deepEqual(reads(load), Object.keys(schema.definitions[name]!.properties).sort(), name);
    }
  });

  it("has the loaders' types, bounds and choices: bad values fail naming the variable, good ones start", () => {
    let checked = 0;
    for (const [name, load] of Object.entries(LOADERS)) {
      const validate = ajv.getSchema(`env#/definitions/${name}`)!;
      for (const [key, p] of Object.entries(schema.definitions[name]!.properties)) {
        const bad = (value: string) => {
          const msg = failure(load, { [key]: value });
          assert.ok(msg?.startsWith(`'${key}' `), `${name}: ${key}=${value} gives ${msg}`);
          checked++;
        };
        const good = (value: string) => {
          assert.equal(failure(load, { ...companions(key), [key]: value }), null, `${name}: ${key}=${value}`);
          checked++;
        };
        if (p.default !== undefined && p["x-type"] !== "file") {
          good(p.default);
          assert.ok(validate({ [key]: p.default }), `${name}: ${key} default vs schema`);
        }
        if (p["x-type"] === "integer" || p["x-type"] === "number") {
          bad("not-a-number");
          assert.equal(validate({ [key]: "not-a-number" }), p["x-type"] !== "integer", `${name}: ${key}`);
          const min = p["x-minimum"];
          const max = p["x-maximum"];
          if (min !== undefined) {
            good(String(min));
            bad(String(min - 1));
          }
          if (max !== undefined) {
            good(String(max));
            bad(String(max + 1));
          }
          if (p["x-type"] === "integer") bad("1.5");
        }
        if (p["x-type"] === "boolean") {
          for (const v of p.enum ?? []) good(v);
          bad("maybe");
          assert.equal(validate({ [key]: "maybe" }), false);
        }
        if (p["x-type"] === "string" && p.enum) {
          for (const v of p.enum) good(v);
          bad("zz-none");
          assert.equal(validate({ [key]: "zz-none" }), false);
        }
        if (p["x-type"] === "file") bad("/nonexistent/reward-mesh-env-schema");
      }
    }
    assert.ok(checked > 300, `only ${checked} checks`);
  });
});
