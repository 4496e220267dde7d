#!/usr/bin/env node
// Embeds the trainer's run-config schema (trainer/schema/run-config.schema.json, the one source) into the
// chart's values.schema.json as `definitions.runConfig`, which `trainer.config` refers to: `helm install`,
// `helm template` and `helm lint` then reject a bad run configuration before any pod starts. A chart must
// be self-contained (a packaged chart has no trainer/ beside it, and helm resolves no `$ref` outside the
// schema file), so the schema is copied, and this script keeps the copy equal to the trainer's:
// * `$schema` is dropped (the values schema's own applies);
// * every local `$ref` (`#/...`) is re-rooted at `#/definitions/runConfig/...`;
// * everything else in values.schema.json is kept as is (its key order too).
//   node --import tsx scripts/gen-chart-schema.mjs          write helm/reward-mesh/values.schema.json
//   node --import tsx scripts/gen-chart-schema.mjs --check  fail when it differs
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
export const RUN_CONFIG_SCHEMA_PATH = `${root}trainer/schema/run-config.schema.json`;
export const VALUES_SCHEMA_PATH = `${root}helm/reward-mesh/values.schema.json`;
/** Where the run-config schema lives inside values.schema.json. */
export const RUN_CONFIG_POINTER = "#/definitions/runConfig";

/** `schema` with every local `$ref` re-rooted under {@link RUN_CONFIG_POINTER}. */
function rerooted(node) {
  if (Array.isArray(node)) return node.map(rerooted);
  if (node === null || typeof node !== "object") return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "$ref" && typeof v === "string") {
      if (!v.startsWith("#"))
        throw new Error(
          `trainer/schema/run-config.schema.json: '$ref: ${v}' is not local; the chart can embed only a self-contained schema`,
        );
      out[k] = `${RUN_CONFIG_POINTER}${v.slice(1)}`;
    } else out[k] = rerooted(v);
  }
  return out;
}

/** The run-config schema as values.schema.json embeds it. */
export function embeddedRunConfig(runConfig) {
  const { $schema: _drop, $id, ...rest } = runConfig;
  if ($id !== undefined)
    throw new Error("trainer/schema/run-config.schema.json: an `$id` would change how its `$ref`s resolve once embedded");
  return rerooted(rest);
}

/** values.schema.json's text with `definitions.runConfig` equal to the trainer's run-config schema. */
export function valuesSchemaWithRunConfig(valuesSchemaText, runConfigText) {
  const values = JSON.parse(valuesSchemaText);
  const run = JSON.parse(runConfigText);
  values.definitions = { ...values.definitions, runConfig: embeddedRunConfig(run) };
  const trainer = values.properties?.trainer?.properties;
  if (trainer === undefined) throw new Error("values.schema.json: no properties.trainer.properties");
  trainer.config = {
    description:
      "The run configuration: trainer/schema/run-config.schema.json, embedded as definitions.runConfig by scripts/gen-chart-schema.mjs",
    $ref: RUN_CONFIG_POINTER,
  };
  return `${JSON.stringify(values, null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = readFileSync(VALUES_SCHEMA_PATH, "utf8");
  const want = valuesSchemaWithRunConfig(text, readFileSync(RUN_CONFIG_SCHEMA_PATH, "utf8"));
  if (process.argv.includes("--check")) {
    if (want !== text) {
      console.error(
        "gen-chart-schema: helm/reward-mesh/values.schema.json's definitions.runConfig differs from trainer/schema/run-config.schema.json — run node --import tsx scripts/gen-chart-schema.mjs",
      );
      process.exit(1);
    }
    console.log("gen-chart-schema: helm/reward-mesh/values.schema.json embeds the trainer's run-config schema");
  } else {
    writeFileSync(VALUES_SCHEMA_PATH, want);
    console.log("gen-chart-schema: wrote helm/reward-mesh/values.schema.json");
  }
}
