/**
 * values.schema.json checks `trainer.config` against the trainer's run-config schema, embedded by
 * `scripts/gen-chart-schema.mjs` (a chart must be self-contained); the embedded copy must be current.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import {
  RUN_CONFIG_SCHEMA_PATH,
  VALUES_SCHEMA_PATH,
  valuesSchemaWithRunConfig,
  // @ts-expect-error a plain-JS script without declarations
} from "../../scripts/gen-chart-schema.mjs";
import { renderChart } from "./helm.js";
import { validateAll } from "./validate.js";

const gen = valuesSchemaWithRunConfig as (values: string, run: string) => string;
const valuesSchema = readFileSync(VALUES_SCHEMA_PATH as string, "utf8");
const runConfig = readFileSync(RUN_CONFIG_SCHEMA_PATH as string, "utf8");

describe("values.schema.json and the trainer's run-config schema", () => {
  it("embeds trainer/schema/run-config.schema.json as it is now (scripts/gen-chart-schema.mjs)", () => {
    assert.equal(gen(valuesSchema, runConfig), valuesSchema);
    const schema = JSON.parse(valuesSchema);
    assert.deepEqual(schema.properties.trainer.properties.config.$ref, "#/definitions/runConfig");
  });

  it("follows a change of the trainer's schema, with its $refs re-rooted", () => {
    const run = JSON.parse(runConfig);
    run.properties.steps = { type: "integer", minimum: 7 };
    run.properties.extra = { $ref: "#/definitions/token" };
    const out = JSON.parse(gen(valuesSchema, JSON.stringify(run)));
    assert.deepEqual(out.definitions.runConfig.properties.steps, { type: "integer", minimum: 7 });
    assert.equal(out.definitions.runConfig.properties.extra.$ref, "#/definitions/runConfig/definitions/token");
    assert.equal(out.definitions.runConfig.$schema, undefined);
    assert.throws(
      () => gen(valuesSchema, JSON.stringify({ ...run, properties: { x: { $ref: "other.json#/a" } } })),
      /'\$ref: other\.json#\/a' is not local/,
    );
  });

  it("accepts the chart's default run config and a full one with the learner and estimator options", async () => {
    validateAll(
      await renderChart({
        learner: { enabled: true },
        trainer: { config: { estimator: "corrgrpo", groupSize: 4, steps: 2 } },
      }),
    );
  });
});
