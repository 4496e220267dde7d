/**
 * The worker's nak back-off: exponential, capped, and jittered so that rollouts which failed together
 * are not redelivered together (and fail together again) delivery after delivery.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { nakDelay } from "../src/index.js";

describe("nakDelay", () => {
  it("stays within [half, all] of the capped exponential back-off", () => {
    for (const n of [1, 2, 3, 5, 8, 12]) {
      const ceiling = Math.min(30_000, 500 * 2 ** (n - 1));
      assert.equal(
        nakDelay(n, 500, 30_000, () => 0),
        Math.round(ceiling / 2),
        `delivery ${n}, lowest`,
      );
      assert.equal(
        nakDelay(n, 500, 30_000, () => 0.999999),
        Math.round(ceiling * 0.9999995),
        `delivery ${n}, highest`,
      );
      for (let k = 0; k < 50; k++) {
        const d = nakDelay(n, 500, 30_000);
        assert.ok(
          d >= ceiling / 2 && d <= ceiling,
          `delivery ${n}: ${d} outside [${ceiling / 2}, ${ceiling}]`,
        );
      }
    }
  });

  it("spreads rollouts that failed together over the interval", () => {
    const seq = [0, 0.25, 0.5, 0.75, 1];
    const delays = seq.map((x) => nakDelay(3, 500, 30_000, () => x));
    assert.deepEqual(delays, [1000, 1250, 1500, 1750, 2000]);
    const drawn = new Set(Array.from({ length: 20 }, () => nakDelay(4, 500, 30_000)));
    assert.ok(drawn.size > 1, "Math.random draws differ");
  });
});
