/** The progress line of `reward-mesh train` / `demo`: one line per step off a TTY, and the CorrGRPO guard's mark. */
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { it } from "node:test";
import { progressPrinter } from "./train.js";

it("prints one line per step, and marks the steps where CorrGRPO's degenerate-group guard fired", () => {
  const out = new PassThrough();
  let text = "";
  out.on("data", (d: Buffer) => {
    text += d.toString("utf8");
  });
  const print = progressPrinter(out);
  const metrics = (step: number, corrFallback: number) => ({
    step,
    weightedReward: 0.1 * step,
    loss: 0.5,
    kl: 0.01,
    entropy: 2,
    groups: { used: 6, corrFallback },
  });
  print({ step: 1, steps: 3, metrics: metrics(1, 0) });
  print({ step: 2, steps: 3, metrics: metrics(2, 2) });
  print({ step: 3, steps: 3, metrics: metrics(3, 1) });
  const lines = text.trimEnd().split("\n");
  assert.equal(lines.length, 3);
  assert.match(lines[0]!, /^step 1\/3 .* reward 0\.100 \(\+0\.000\) loss 0\.5000/);
  assert.doesNotMatch(lines[0]!, /CorrGRPO/);
  assert.match(lines[1]!, / ⚠ 2 CorrGRPO fallbacks$/);
  assert.match(lines[2]!, / ⚠ 1 CorrGRPO fallback$/);
});
