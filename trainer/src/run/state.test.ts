import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { reconcileMetrics, type TrainerCheckpoint } from "./state.js";

it("reconcileMetrics keeps each checkpointed step exactly once", () => {
  const dir = mkdtempSync(join(tmpdir(), "rm-state-"));
  try {
    const p = join(dir, "metrics.jsonl");
    const ck = (step: number): TrainerCheckpoint => ({
      runId: "r",
      step,
      policyVersion: step,
      metrics: { step, weightedReward: step },
      writtenAt: 0,
    });
    // A crash after the metrics of step 4 but before its checkpoint; a duplicate; a torn line.
    writeFileSync(
      p,
      ['{"step":1}', '{"step":2}', '{"step":2}', '{"step":3}', '{"step":4}', '{"ste'].join("\n"),
    );
    reconcileMetrics(p, ck(3));
    assert.deepEqual(
      readFileSync(p, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).step),
      [1, 2, 3],
    );
    // A crash after the checkpoint of step 4 but before its metrics line.
    reconcileMetrics(p, ck(4));
    assert.deepEqual(
      readFileSync(p, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).step),
      [1, 2, 3, 4],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
