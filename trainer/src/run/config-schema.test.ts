/**
 * The published JSON Schema of the run configuration (`trainer/schema/run-config.schema.json`) against
 * the trainer's own validator (`resolveRunConfig`, the source of the start-up messages): the same keys
 * at every level, the same types, bounds, enums, patterns and defaults, and every example valid under
 * both. The documented example (`examples/tool-agent.yaml`) must show every key of the schema.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { fuzzParameters, mutatedValue } from "@reward-mesh/sdk/testing";
import { Ajv } from "ajv";
import fc from "fast-check";
import { parse as parseYaml } from "yaml";
import { type RunConfig, RunConfigError, loadRunConfig, resolveRunConfig } from "./config.js";

type Schema = Record<string, unknown> & {
  properties?: Record<string, Schema>;
  required?: string[];
  anyOf?: Schema[];
  items?: Schema;
  $ref?: string;
};

const schemaPath = fileURLToPath(new URL("../../schema/run-config.schema.json", import.meta.url));
const schema = JSON.parse(readFileSync(schemaPath, "utf8")) as Schema;
const ajv = new Ajv({ strict: true, strictRequired: false, allowUnionTypes: true });
const validate = ajv.compile(schema);
const examplePath = (name: string) => fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));

/** The node at a JSON pointer (`#/a/b`). */
function at(pointer: string): Schema {
  let node: unknown = schema;
  for (const part of pointer.replace(/^#\/?/, "").split("/").filter(Boolean)) {
    node = (node as Record<string, unknown>)[part];
    assert.ok(node !== undefined, `schema has no ${pointer}`);
  }
  return node as Schema;
}

const deref = (s: Schema): Schema => (s.$ref ? deref(at(s.$ref)) : s);

/** Every object node of the schema that lists its keys, by JSON pointer. */
function objectNodes(): Map<string, Schema> {
  const out = new Map<string, Schema>();
  const walk = (node: unknown, pointer: string) => {
    if (typeof node !== "object" || node === null) return;
    const n = node as Schema;
    if (n.properties) out.set(pointer, n);
    for (const [k, v] of Object.entries(n)) {
      if (k === "if" || k === "then" || k === "else") continue; // conditions, not mappings of their own
      if (Array.isArray(v)) {
        for (const [i, x] of v.entries()) walk(x, `${pointer}/${k}/${i}`);
      } else walk(v, `${pointer}/${k}`);
    }
  };
  walk(schema, "#");
  return out;
}

const ajvAccepts = (doc: unknown): boolean => validate(doc) === true;
const ajvErrors = () => JSON.stringify(validate.errors);

/** How to reach one object node of the schema from a document, and its keys in the resolved config. */
interface Location {
  /** The dotted key the validator's messages use for this mapping ("" = the root). */
  readonly key: string;
  /** The smallest valid value of this mapping (its required keys). */
  readonly base: Record<string, unknown>;
  /** A whole run configuration with `o` as this mapping. */
  readonly doc: (o: Record<string, unknown>) => Record<string, unknown>;
  /** This mapping's keys as the resolved configuration holds them. */
  readonly resolved: (c: RunConfig) => Record<string, unknown>;
}

const C = { components: "overlong" };
const top = (k: string, r: (c: RunConfig) => unknown): Location => ({
  key: k,
  base: {},
  doc: (o) => ({ ...C, [k]: o }),
  resolved: (c) => r(c) as Record<string, unknown>,
});

const LOCATIONS: Record<string, Location> = {
  "#": { key: "", base: C, doc: (o) => ({ ...C, ...o }), resolved: (c) => c as never },
  "#/properties/run": top("run", (c) => ({ id: c.runId, seed: c.seed, outputDir: c.outputDir })),
  "#/properties/tasks": top("tasks", (c) => c.tasks),
  "#/properties/loss": top("loss", (c) => c.loss),
  "#/properties/optim": top("optim", (c) => c.optim),
  "#/properties/groups": top("groups", (c) => c.groups),
  "#/properties/rewardNoise": top("rewardNoise", (c) => c.rewardNoise),
  "#/properties/generation": top("generation", (c) => c.generation),
  "#/properties/validation": top("validation", (c) => c.validation),
  "#/properties/episodes": {
    ...top("episodes", (c) => c.episodes),
    base: { environment: "127.0.0.1:50066" },
  },
  "#/properties/estimator/anyOf/1": top("estimator", (c) => c.estimator),
  "#/properties/dynamicSampling/anyOf/1": top("dynamicSampling", (c) => c.dynamicSampling),
  "#/properties/sgrpo/anyOf/2": { ...top("sgrpo", (c) => c.sgrpo), base: { p: 0.1 } },
  "#/definitions/componentItem/anyOf/1": {
    key: "components[0]",
    base: { preset: "overlong" },
    doc: (o) => ({ components: [o] }),
    resolved: (c) => c.components[0] as never,
  },
  "#/definitions/componentItem/anyOf/2": {
    key: "components[0]",
    base: { service: "length", component: "overlong" },
    doc: (o) => ({ components: [o] }),
    resolved: (c) => c.components[0] as never,
  },
  "#/properties/learner/anyOf/3": { ...top("learner", (c) => c.learner), base: { kind: "embedded" } },
  "#/properties/learner/anyOf/4": {
    ...top("learner", (c) => c.learner),
    base: { kind: "grpc", address: "127.0.0.1:5000" },
  },
  "#/definitions/torchLearner": { ...top("learner", (c) => c.learner), base: { kind: "torch" } },
  "#/definitions/torchLearner/properties/warmup": {
    key: "learner.warmup",
    base: { file: "warmup.jsonl" },
    doc: (o) => ({ ...C, learner: { kind: "torch", warmup: o } }),
    resolved: (c) => (c.learner as { warmup: Record<string, unknown> }).warmup,
  },
};

const keyOf = (loc: Location, k: string) => (loc.key === "" ? k : `${loc.key}.${k}`);

/** resolveRunConfig's message for `doc`, or null when it accepts it. */
function resolverMessage(doc: unknown): string | null {
  try {
    resolveRunConfig(doc);
    return null;
  } catch (err) {
    if (!(err instanceof RunConfigError)) throw err;
    return err.message;
  }
}

const reEscape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("run config schema", () => {
  it("is a valid JSON Schema (ajv strict) and every key has a description and a type", () => {
    for (const [pointer, node] of objectNodes()) {
      assert.equal(node["additionalProperties"], false, `${pointer} must not allow unknown keys`);
      for (const [k, p] of Object.entries(node.properties ?? {})) {
        const s = deref(p);
        assert.ok(
          typeof s["description"] === "string" && s["description"] !== "",
          `${pointer}.${k}: description`,
        );
        assert.ok("type" in s || "anyOf" in s, `${pointer}.${k}: type`);
      }
    }
  });

  it("names every mapping of the validator, each with the same keys", () => {
    assert.deepEqual([...objectNodes().keys()].sort(), Object.keys(LOCATIONS).sort());
    for (const [pointer, loc] of Object.entries(LOCATIONS)) {
      const keys = Object.keys(at(pointer).properties ?? {});
      const doc = loc.doc({ ...loc.base, zzUnknown: 1 });
      const msg = resolverMessage(doc);
      const m = msg?.match(/^'(.*)' is not a known key \(known: (.*)\)$/);
      assert.ok(m, `${pointer}: ${msg}`);
      assert.equal(m[1], keyOf(loc, "zzUnknown"));
      assert.deepEqual(
        m[2]!.split(", ").sort(),
        [...keys].sort(),
        `${pointer}: keys of the validator vs schema`,
      );
      assert.equal(ajvAccepts(doc), false, `${pointer}: the schema accepts an unknown key`);
      assert.equal(resolverMessage(loc.doc(loc.base)), null, `${pointer}: base`);
      assert.ok(ajvAccepts(loc.doc(loc.base)), `${pointer}: base ${ajvErrors()}`);
    }
  });

  it("has the validator's defaults, bounds, enums and patterns, with the validator's messages", () => {
    let checked = 0;
    for (const [pointer, loc] of Object.entries(LOCATIONS)) {
      for (const [k, p] of Object.entries(at(pointer).properties ?? {})) {
        const s = deref(p);
        if (k in loc.base && pointer !== "#") continue; // required keys of the mapping are checked by the examples
        const key = keyOf(loc, k);
        const withValue = (v: unknown) => loc.doc({ ...loc.base, [k]: v });
        const rejects = (v: unknown, message: RegExp) => {
          const msg = resolverMessage(withValue(v));
          assert.ok(msg !== null, `${key} = ${JSON.stringify(v)} is accepted by the validator`);
          assert.match(msg, message, key);
          assert.equal(
            ajvAccepts(withValue(v)),
            false,
            `${key} = ${JSON.stringify(v)} is accepted by the schema`,
          );
          checked++;
        };
        const accepts = (v: unknown) => {
          assert.equal(resolverMessage(withValue(v)), null, `${key} = ${JSON.stringify(v)}`);
          assert.ok(ajvAccepts(withValue(v)), `${key} = ${JSON.stringify(v)}: ${ajvErrors()}`);
          checked++;
        };
        if (
          "default" in s &&
          ["number", "integer", "string", "boolean", "array"].includes(s["type"] as string)
        ) {
          const resolved = loc.resolved(resolveRunConfig(loc.doc(loc.base)));
          const actual = pointer === "#" && k === "estimator" ? resolved : resolved[k];
          assert.deepEqual(actual, s["default"], `${key}: default`);
          checked++;
        }
        if (s["type"] === "number" || s["type"] === "integer") {
          const what = s["type"] === "integer" ? "an integer" : "a number";
          const min = (s["minimum"] as number | undefined) ?? Number.NEGATIVE_INFINITY;
          const max = s["maximum"] as number | undefined;
          const range = max === undefined ? `>= ${min}` : `in [${min}, ${max}]`;
          const message = new RegExp(`^'${reEscape(key)}' must be ${what} ${reEscape(range)}, got `);
          rejects("x", message);
          if (min !== Number.NEGATIVE_INFINITY) {
            accepts(min);
            rejects(s["type"] === "integer" ? min - 1 : min - Math.max(Math.abs(min) / 2, 1e-9), message);
          }
          if (max !== undefined) {
            accepts(max);
            rejects(s["type"] === "integer" ? max + 1 : max + 1e-9, message);
          }
          if (s["type"] === "integer") rejects((min === Number.NEGATIVE_INFINITY ? 0 : min) + 0.5, message);
        }
        if (s["type"] === "string" && Array.isArray(s["enum"])) {
          const choices = s["enum"] as string[];
          const listed = reEscape(choices.join(", "));
          rejects(
            "zz-none",
            key === "estimator.name" // the advantage engine's message, with aliases
              ? new RegExp(`^'${reEscape(key)}' unknown advantage estimator 'zz-none'; supported: ${listed}$`)
              : new RegExp(`^'${reEscape(key)}' must be one of ${listed}, got "zz-none"$`),
          );
          for (const c of choices) if (!(pointer === "#/properties/tasks" && c === "jsonl")) accepts(c);
        }
        if (s["type"] === "string" && typeof s["pattern"] === "string") {
          rejects(
            "a b",
            new RegExp(`^'${reEscape(key)}' must match ${reEscape(`/${s["pattern"]}/`)}, got "a b"$`),
          );
        }
        if (s["type"] === "string")
          rejects(7, new RegExp(`^'${reEscape(key)}' must be a non-empty string, got 7`));
        if (s["type"] === "boolean") rejects("x", new RegExp(`^'${reEscape(key)}' must be true or false`));
      }
    }
    assert.ok(checked > 150, `only ${checked} checks`);
  });

  it("agrees with the validator on the alternatives of components, estimator, sgrpo, dynamicSampling, learner and tasks", () => {
    const valid: unknown[] = [
      {
        components: [
          "rlla-tool",
          { preset: "agentdojo" },
          { service: "length", component: "overlong", weight: -1 },
        ],
      },
      { ...C, estimator: "corr_grpo" },
      { ...C, estimator: { name: "gdpo" } },
      { ...C, sgrpo: false },
      { ...C, sgrpo: { p: 0.2, variant: "dr_grpo" } },
      { ...C, dynamicSampling: true },
      { ...C, dynamicSampling: false },
      { ...C, learner: "torch" },
      { ...C, learner: "grpc://learner:50051" },
      { ...C, learner: { kind: "torch", warmup: { file: "w.jsonl", steps: 5, lr: 0.1 } } },
      { ...C, tasks: { source: "jsonl", path: "tasks.jsonl" } },
      { ...C, services: { mine: ["code", "custom"] }, components: [{ service: "mine", component: "x" }] },
    ];
    for (const doc of valid) {
      assert.equal(resolverMessage(doc), null, JSON.stringify(doc));
      assert.ok(ajvAccepts(doc), `${JSON.stringify(doc)}: ${ajvErrors()}`);
    }
    const invalid: unknown[] = [
      {},
      { components: [] },
      { components: 3 },
      { components: [{ service: "length" }] },
      { components: [{ preset: "overlong", weight: 1 }] },
      { ...C, estimator: "ppo" },
      { ...C, estimator: 3 },
      { ...C, sgrpo: {} },
      { ...C, sgrpo: true },
      { ...C, dynamicSampling: "yes" },
      { ...C, learner: "http://x" },
      { ...C, learner: { kind: "grpc" } },
      { ...C, learner: { kind: "embedded", model: "x" } },
      { ...C, learner: { kind: "torch", warmup: { steps: 3 } } },
      { ...C, tasks: { source: "jsonl" } },
      { ...C, tasks: { path: "tasks.jsonl" } },
      { ...C, tasks: { sets: [] } },
      { ...C, tasks: { sets: ["poetry"] } },
      { ...C, services: { "a.b": ["code"] } },
      { ...C, services: { mine: "code" } },
      { ...C, rewardNoise: { components: "x" } },
      { ...C, generation: { stop: [""] } },
    ];
    for (const doc of invalid) {
      assert.ok(resolverMessage(doc) !== null, `validator accepts ${JSON.stringify(doc)}`);
      assert.equal(ajvAccepts(doc), false, `schema accepts ${JSON.stringify(doc)}`);
    }
  });
});

/** The live document of a YAML file, and each commented-out `# key:` block in it (as its own mapping). */
function documentedBlocks(text: string): {
  live: Record<string, unknown>;
  blocks: Record<string, unknown>[];
} {
  const blocks: string[][] = [];
  let current: string[] | null = null;
  for (const line of text.split("\n")) {
    if (/^# [A-Za-z]+:/.test(line)) {
      current = [line.slice(2)];
      blocks.push(current);
    } else if (current && /^# {2}/.test(line)) current.push(line.slice(2));
    else current = null;
  }
  return {
    live: parseYaml(text) as Record<string, unknown>,
    blocks: blocks.map((b) => parseYaml(b.join("\n")) as Record<string, unknown>),
  };
}

/** The dotted key paths of a document (`components[]` for list items; a free mapping's own keys are not followed). */
function keyPaths(doc: unknown, prefix = ""): string[] {
  if (Array.isArray(doc)) return doc.flatMap((x) => keyPaths(x, `${prefix}[]`));
  if (typeof doc !== "object" || doc === null) return [];
  if (prefix === "services" || prefix === "estimator.options") return [];
  return Object.entries(doc).flatMap(([k, v]) => {
    const path = prefix === "" ? k : `${prefix}.${k}`;
    return [path, ...keyPaths(v, path)];
  });
}

/** Every key path the schema describes. */
function schemaPaths(node: Schema = schema, prefix = ""): string[] {
  const s = deref(node);
  const out: string[] = [];
  for (const alt of s.anyOf ?? []) out.push(...schemaPaths(alt, prefix));
  if (s.items) out.push(...schemaPaths(s.items, `${prefix}[]`));
  for (const [k, p] of Object.entries(s.properties ?? {})) {
    const path = prefix === "" ? k : `${prefix}.${k}`;
    out.push(path);
    if (path !== "estimator.options") out.push(...schemaPaths(p, path));
  }
  return [...new Set(out)];
}

describe("run config examples", () => {
  for (const name of ["tool-agent.yaml", "text-tool-call.yaml"]) {
    it(`${name} is valid under the schema and the validator`, () => {
      const text = readFileSync(examplePath(name), "utf8");
      assert.ok(ajvAccepts(parseYaml(text)), ajvErrors());
      loadRunConfig(examplePath(name));
    });
  }

  it("tool-agent.yaml points editors at the schema", () => {
    const first = readFileSync(examplePath("tool-agent.yaml"), "utf8").split("\n")[0]!;
    const m = first.match(/^# yaml-language-server: \$schema=(\S+)$/);
    assert.ok(m, first);
    assert.equal(fileURLToPath(new URL(m[1]!, new URL("../../examples/", import.meta.url))), schemaPath);
  });

  it("tool-agent.yaml shows every key of the schema, live or as a commented-out block that is valid", () => {
    const { live, blocks } = documentedBlocks(readFileSync(examplePath("tool-agent.yaml"), "utf8"));
    assert.ok(blocks.length >= 5, `${blocks.length} commented-out blocks`);
    const shown = new Set(keyPaths(live));
    for (const block of blocks) {
      const doc = { ...live, ...block };
      assert.equal(resolverMessage(doc), null, JSON.stringify(block));
      assert.ok(ajvAccepts(doc), `${JSON.stringify(block)}: ${ajvErrors()}`);
      for (const p of keyPaths(block)) shown.add(p);
    }
    const missing = schemaPaths().filter((p) => !shown.has(p));
    assert.deepEqual(missing, [], "keys of the schema the example does not show");
    const unknown = [...shown].filter((p) => !schemaPaths().includes(p));
    assert.deepEqual(unknown, [], "keys of the example the schema does not describe");
  });
});

/** A value with a null anywhere (the validator reads null as "use the default"; the schema does not). */
const hasNull = (v: unknown): boolean =>
  v === null || (typeof v === "object" && Object.values(v as object).some(hasNull));

/** What only the validator checks: relations between keys, and the estimator's options. */
const CROSS_KEY =
  /^'(components' lists .* twice|components\[\d+\]\.service' unknown service|rewardNoise\.components\[\d+\]' .* is not one of the configured components|estimator' )/;

describe("run config schema vs validator on mutated documents", () => {
  const SEEDS: unknown[] = [
    { components: "corrgrpo-code", run: { id: "r1", seed: 3 }, groupSize: 4 },
    parseYaml(readFileSync(examplePath("tool-agent.yaml"), "utf8")),
    parseYaml(readFileSync(examplePath("text-tool-call.yaml"), "utf8")),
    {
      components: ["rlla-tool", { service: "length", component: "overlong", weight: 0.5 }],
      estimator: { name: "corr_grpo", options: { coefficientSumFloor: 1 } },
      sgrpo: { p: 0.1, component: "tool-call/format", variant: "dr_grpo" },
      dynamicSampling: { component: "tool-call/format" },
      services: { length: ["code"] },
      learner: { kind: "torch", warmup: { file: "w.jsonl" } },
      generation: { stop: ["</s>"] },
      rewardNoise: { p: 0.1, components: ["length/overlong"] },
    },
  ];

  it("the schema accepts what the validator accepts, and rejects nothing else but relations between keys", () => {
    fc.assert(
      fc.property(mutatedValue(SEEDS), (mutated) => {
        let doc: unknown;
        try {
          doc = JSON.parse(JSON.stringify(mutated) ?? "null"); // what a YAML/JSON file can hold
        } catch {
          return; // BigInt and the like: not a document
        }
        const msg = resolverMessage(doc);
        const ok = ajvAccepts(doc);
        if (msg === null && !hasNull(doc))
          assert.ok(ok, `schema rejects ${JSON.stringify(doc)}: ${ajvErrors()}`);
        if (ok && msg !== null) assert.match(msg, CROSS_KEY, JSON.stringify(doc));
      }),
      fuzzParameters(400),
    );
  });
});
