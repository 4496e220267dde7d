/** The fuzz helpers themselves: a hang, a foreign error type and prototype pollution each fail. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  FUZZ_SEED,
  fuzzCall,
  fuzzCallAsync,
  fuzzParameters,
  mutatedText,
  mutatedValue,
  toJsonText,
} from "./fuzz.js";

describe("fuzz helpers", () => {
  it("fuzzCall returns the value or an allowed named error", () => {
    assert.deepEqual(
      fuzzCall("f", () => 42),
      { ok: true, value: 42 },
    );
    const r = fuzzCall("f", () => {
      throw new SyntaxError("bad token at 3");
    }, ["SyntaxError"]);
    assert.equal(r.ok, false);
  });

  it("fails on another error type, an empty message, a non-Error and a stack overflow", () => {
    const boom = (e: unknown) => () => {
      throw e;
    };
    assert.throws(() => fuzzCall("p", boom(new TypeError("x of undefined")), ["SyntaxError"]), {
      name: "FuzzFailure",
      message: /p threw TypeError/,
    });
    assert.throws(() => fuzzCall("p", boom(new SyntaxError("")), ["SyntaxError"]), /empty message/);
    assert.throws(() => fuzzCall("p", boom("a string")), /non-Error/);
    const deep = (n: number): number => (n === 0 ? 0 : 1 + deep(n - 1));
    assert.throws(() => fuzzCall("p", () => deep(1e7)), /p threw RangeError/);
  });

  it("a synchronous busy loop is stopped at the deadline and reported as a hang", () => {
    assert.throws(
      () =>
        fuzzCall(
          "p",
          () => {
            for (;;);
          },
          [],
          100,
        ),
      /p did not return within 100 ms \(hang\)/,
    );
  });

  it("an async call that never settles is reported as a hang", async () => {
    await assert.rejects(
      fuzzCallAsync("p", () => new Promise(() => {}), [], 50),
      /did not settle/,
    );
  });

  it("a change to Object.prototype is reported as prototype pollution", () => {
    try {
      assert.throws(
        () =>
          fuzzCall("p", () => {
            (Object.prototype as Record<string, unknown>)["polluted"] = 1;
          }),
        /prototype pollution/,
      );
    } finally {
      delete (Object.prototype as Record<string, unknown>)["polluted"];
    }
  });

  it("parameters carry the fixed seed; generators are deterministic under it", () => {
    assert.equal(fuzzParameters(10).seed, FUZZ_SEED);
    const sample = () => fc.sample(mutatedText(['{"a": [1, 2]}']), { seed: FUZZ_SEED, numRuns: 20 });
    assert.deepEqual(sample(), sample());
    const values = fc.sample(mutatedValue([{ a: [1, { b: "c" }] }]), { seed: FUZZ_SEED, numRuns: 200 });
    assert.ok(values.some((v) => toJsonText(v) !== '{"a":[1,{"b":"c"}]}'));
    assert.ok(
      values.some((v) => toJsonText(v).includes("__proto__")),
      "prototype keys are generated",
    );
  });
});

describe("toJsonText", () => {
  it("writes what JSON.stringify writes, and values too deep for it", () => {
    const v = { a: [1, -0, Number.NaN, "x\u2028", null, { b: true }], c: {} };
    assert.equal(toJsonText(v), JSON.stringify(v));
    let deep: unknown = 1;
    for (let d = 0; d < 50_000; d++) deep = [deep];
    assert.equal(toJsonText(deep), `${"[".repeat(50_000)}1${"]".repeat(50_000)}`);
  });
});
