/**
 * `REWARD_MESH_START_WAIT_SECONDS`: read by the CLI's config module (default 0 = fail at once), handed to
 * `runTraining` by `reward-mesh train`; a bad value is a configuration error naming the variable.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { loadCliConfig } from "../src/config.js";

describe("REWARD_MESH_START_WAIT_SECONDS", () => {
  it("defaults to 0 (fail at once, as before)", () => {
    assert.equal(loadCliConfig({}).startWaitSeconds, 0);
  });
  it("reads whole seconds", () => {
    assert.equal(loadCliConfig({ REWARD_MESH_START_WAIT_SECONDS: "600" }).startWaitSeconds, 600);
  });
  it("refuses a negative or non-integer value, naming the variable", () => {
    for (const v of ["-1", "ten", "1.5", "86401"])
      assert.throws(
        () => loadCliConfig({ REWARD_MESH_START_WAIT_SECONDS: v }),
        /REWARD_MESH_START_WAIT_SECONDS/,
      );
  });
});
