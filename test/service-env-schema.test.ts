/**
 * The services' environment schema (`services/sdk/schema/service-env.schema.json`, written by
 * `scripts/gen-service-env-schema.mjs` from the `defineServiceEnv` each service's config.ts exports)
 * against the services' own loaders: the committed file is what the script writes, each service's
 * `loadConfig` reads exactly the variables its spec declares (true by construction: the loaders read the
 * environment only through `loadEnv` with those specs; checked here on a recording environment), every
 * typed variable's bad values (not a number, out of bounds, not a choice) fail start-up naming it while
 * the schema's default and bounds are accepted, and every declared variable is documented in a README.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { AGENTDOJO_SERVICE_ENV, loadConfig as agentdojo } from "@reward-mesh/agentdojo";
import { AST_SERVICE_ENV, loadConfig as ast } from "@reward-mesh/ast";
import { CODE_EXEC_SERVICE_ENV, loadConfig as codeExec } from "@reward-mesh/code-exec";
import { EFFICIENCY_SERVICE_ENV, loadConfig as efficiency } from "@reward-mesh/efficiency";
import { LENGTH_SERVICE_ENV, loadConfig as length } from "@reward-mesh/length";
import { loadConfig as math, MATH_SERVICE_ENV } from "@reward-mesh/math";
import { SANDBOX_CONFIG_ENV } from "@reward-mesh/sandbox";
import { COMMON_SERVICE_ENV, type ServiceEnv, serviceEnvSchema } from "@reward-mesh/sdk";
import { loadConfig as toolCall, TOOL_CALL_SERVICE_ENV } from "@reward-mesh/tool-call";
import { Ajv } from "ajv";
import {
  buildServiceEnvSchema,
  SCHEMA_PATH,
  schemaText,
  serviceEnvs,
  // @ts-expect-error a plain-JS script without declarations
} from "../scripts/gen-service-env-schema.mjs";

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
  math,
};

const SPECS: Record<string, ServiceEnv> = {
  length: LENGTH_SERVICE_ENV,
  "code-exec": CODE_EXEC_SERVICE_ENV,
  ast: AST_SERVICE_ENV,
  efficiency: EFFICIENCY_SERVICE_ENV,
  "tool-call": TOOL_CALL_SERVICE_ENV,
  agentdojo: AGENTDOJO_SERVICE_ENV,
  math: MATH_SERVICE_ENV,
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

  it("lists a definition for every service, from the spec its config.ts exports", async () => {
    assert.deepEqual(Object.keys(schema.definitions).sort(), Object.keys(LOADERS).sort());
    const found = (await (serviceEnvs as () => Promise<ServiceEnv[]>)()).map((s) => s.service);
    assert.deepEqual(found.sort(), Object.keys(SPECS).sort());
    for (const [name, spec] of Object.entries(SPECS)) {
      assert.equal(spec.service, name);
      assert.deepEqual(schema.definitions[name], serviceEnvSchema(spec), name);
    }
  });

  it("each loader reads exactly the variables its spec declares", () => {
    for (const [name, load] of Object.entries(LOADERS)) {
      assert.deepEqual(reads(load), Object.keys(SPECS[name]!.variables).sort(), name);
    }
  });

  it("documents every declared variable in a README", () => {
    const readme = (dir: string) =>
      readFileSync(new URL(`../services/${dir}/README.md`, import.meta.url), "utf8");
    const sdk = readme("sdk");
    const sandbox = readme("sandbox");
    const mentions = (text: string, name: string) => text.includes(`\`${name}\``);
    for (const name of Object.keys(COMMON_SERVICE_ENV)) assert.ok(mentions(sdk, name), `sdk README: ${name}`);
    for (const name of Object.keys(SANDBOX_CONFIG_ENV))
      assert.ok(mentions(sandbox, name), `sandbox README: ${name}`);
    for (const [dir, spec] of Object.entries(SPECS)) {
      const text = readme(dir);
      for (const name of Object.keys(spec.variables)) {
        if (name in COMMON_SERVICE_ENV || name in SANDBOX_CONFIG_ENV) continue;
        // gRPC security: `<PREFIX>_GRPC_TLS_CERT_FILE` / `_TLS_KEY_FILE`, ..., falling back to `REWARD_MESH_GRPC_*`
        const security = `${spec.prefix}_GRPC_`;
        const ok =
          mentions(text, name) ||
          (name.startsWith(security) && mentions(text, `_${name.slice(security.length)}`)) ||
          (name.startsWith("REWARD_MESH_GRPC_") && mentions(text, "REWARD_MESH_GRPC_*"));
        assert.ok(ok, `services/${dir}/README.md does not document ${name}`);
      }
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
