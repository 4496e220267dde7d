/**
 * Agreement of the judge with a labelled answer-pair set (`test/agreement-pairs.json`): false-positive
 * rate (judged correct, labelled not equal) and false-negative rate (judged wrong, labelled equal),
 * per class and overall. Used by the agreement test and `npm run bench:math`.
 * @module
 */
import type { AnswerType, EquivalenceOptions } from "./equivalence.js";
import type { AnswerFormat } from "./extract.js";
import { type JudgeInput, judge } from "./judge.js";
import { DEFAULT_ANSWER_LIMITS } from "./normalize.js";

/** One labelled pair. */
export interface AgreementPair {
  readonly class: string;
  readonly response: string;
  readonly reference: string;
  readonly expected: boolean;
  readonly why: string;
  readonly answer_type?: AnswerType;
  readonly answer_format?: AnswerFormat;
  readonly tolerance?: number;
}

/** Rates over a set of pairs. */
export interface AgreementRates {
  readonly pairs: number;
  readonly positives: number;
  readonly negatives: number;
  readonly falsePositives: number;
  readonly falseNegatives: number;
  /** falsePositives / negatives. */
  readonly fpRate: number;
  /** falseNegatives / positives. */
  readonly fnRate: number;
  readonly agreement: number;
}

/** The judging input of a pair (service defaults: tolerance 1e-6, no last-number fallback). */
export function pairInput(p: AgreementPair, steps: EquivalenceOptions["steps"] = "full"): JudgeInput {
  return {
    response: p.response,
    answers: [p.reference],
    answerType: p.answer_type ?? "",
    answerFormat: p.answer_format ?? "auto",
    tolerance: p.tolerance ?? 1e-6,
    allowLastNumber: false,
    limits: DEFAULT_ANSWER_LIMITS,
    steps,
  };
}

/** Judges every pair; returns the rates and the pairs judged against their label. */
export function measureAgreement(
  pairs: readonly AgreementPair[],
  steps: EquivalenceOptions["steps"] = "full",
): { rates: AgreementRates; misses: AgreementPair[] } {
  const misses: AgreementPair[] = [];
  let fp = 0;
  let fn = 0;
  for (const p of pairs) {
    const got = judge(pairInput(p, steps)).correct;
    if (got === p.expected) continue;
    misses.push(p);
    if (got) fp++;
    else fn++;
  }
  const positives = pairs.filter((p) => p.expected).length;
  const negatives = pairs.length - positives;
  return {
    rates: {
      pairs: pairs.length,
      positives,
      negatives,
      falsePositives: fp,
      falseNegatives: fn,
      fpRate: negatives === 0 ? 0 : fp / negatives,
      fnRate: positives === 0 ? 0 : fn / positives,
      agreement: (pairs.length - fp - fn) / pairs.length,
    },
    misses,
  };
}
