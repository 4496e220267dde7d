/**
 * Agreement with the MATH / GSM8K grading conventions on the project's labelled pair set
 * (`test/agreement-pairs.json`, ≥ 300 pairs, a `why` on each): false-positive and false-negative
 * rates of the full judge, and what each comparison step adds (normal-form strings only, + numeric,
 * + symbolic and structured).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { type AgreementPair, measureAgreement } from "./agreement.js";

const pairs = (
  JSON.parse(readFileSync(new URL("../test/agreement-pairs.json", import.meta.url), "utf8")) as {
    pairs: AgreementPair[];
  }
).pairs;

describe("agreement with the MATH / GSM8K conventions", () => {
  it("covers every class with equal and not-equal pairs, each argued", () => {
    assert.ok(pairs.length >= 300, `${pairs.length} pairs`);
    const classes = new Set(pairs.map((p) => p.class));
    for (const c of [
      "extraction",
      "normalisation",
      "numeric",
      "symbolic",
      "equation",
      "interval",
      "structure",
      "matrix",
      "text",
      "gsm8k",
      "adversarial",
    ]) {
      assert.ok(classes.has(c), c);
      const of = pairs.filter((p) => p.class === c);
      assert.ok(of.some((p) => p.expected) && of.some((p) => !p.expected), `${c} has both verdicts`);
    }
    for (const p of pairs) assert.ok(p.why.length > 5, `pair without a reason: ${p.response}`);
  });

  it("has no false positive and at most 1% false negatives", () => {
    const { rates, misses } = measureAgreement(pairs);
    // A false positive rewards a wrong answer: the policy learns it. None is tolerated.
    assert.equal(rates.falsePositives, 0, JSON.stringify(misses.filter((m) => !m.expected)));
    // A false negative only withholds a reward; at most 1% of the equal pairs may be missed.
    assert.ok(rates.fnRate <= 0.01, JSON.stringify(misses));
  });

  it("each comparison step adds agreement: exact < + numeric < + symbolic/structured", () => {
    const exact = measureAgreement(pairs, "exact").rates;
    const numeric = measureAgreement(pairs, "numeric").rates;
    const full = measureAgreement(pairs, "full").rates;
    assert.ok(exact.agreement < numeric.agreement && numeric.agreement < full.agreement);
    // None of the steps buys recall with false positives on this set.
    assert.equal(exact.falsePositives + numeric.falsePositives, 0);
  });
});
