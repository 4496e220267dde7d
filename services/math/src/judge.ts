/**
 * One judgement: extract the final answer, check it is decidable, normalise it and the references,
 * compare. Pure and synchronous; the service runs it in a worker thread with a deadline
 * (`pool.ts`), so a pathological answer costs at most the time limit.
 * @module
 */
import {
  type AnswerType,
  answersEquivalent,
  type EquivalenceMethod,
  type EquivalenceOptions,
} from "./equivalence.js";
import { type AnswerFormat, type AnswerSource, extractAnswer } from "./extract.js";
import { type AnswerLimits, checkAnswer, normalizeWithUnits, unitsConflict } from "./normalize.js";

/** What a judgement needs from the task and the service's options. */
export interface JudgeInput {
  readonly response: string;
  readonly answers: readonly string[];
  readonly answerType: AnswerType;
  readonly answerFormat: AnswerFormat;
  readonly tolerance: number;
  readonly allowLastNumber: boolean;
  readonly limits: AnswerLimits;
  /** Comparison steps (see {@link EquivalenceOptions.steps}). @default "full" */
  readonly steps?: EquivalenceOptions["steps"];
}

/** A judgement (structured-clone friendly: it crosses the worker boundary). */
export interface Judgement {
  /** A final answer was found where the task asks for it. */
  readonly format: boolean;
  readonly correct: boolean;
  /** Set when the answer could not be decided (too long, macros, overflow): `correct` is then false. */
  readonly error?: string;
  readonly extracted?: string;
  readonly source?: AnswerSource;
  readonly boxedCount?: number;
  readonly normalized?: string;
  readonly method?: EquivalenceMethod;
  /** The reference it matched (or the first one). */
  readonly reference?: string;
}

/** Judges one response against its task's reference answers. */
export function judge(input: JudgeInput): Judgement {
  const found = extractAnswer(input.response, input.answerFormat, input.allowLastNumber);
  if (!found) return { format: false, correct: false };
  const base = { format: true, extracted: found.answer, source: found.source, boxedCount: found.boxedCount };
  try {
    checkAnswer(found.answer, input.limits);
    const { normal: normalized, units } = normalizeWithUnits(found.answer);
    if (normalized === "") return { ...base, format: false, correct: false, normalized };
    let method: EquivalenceMethod = "none";
    for (const reference of input.answers) {
      const ref = normalizeWithUnits(reference);
      // Both name units of measure and they differ (`3 cm` vs `3 m`): not the same answer.
      if (unitsConflict(units, ref.units)) {
        method = "units";
        continue;
      }
      const v = answersEquivalent(normalized, ref.normal, {
        tolerance: input.tolerance,
        answerType: input.answerType,
        ...(input.steps ? { steps: input.steps } : {}),
      });
      if (v.equal) return { ...base, correct: true, normalized, method: v.method, reference };
      method = v.method;
    }
    return { ...base, correct: false, normalized, method, reference: input.answers[0] };
  } catch (e) {
    if ((e as Error).name === "UndecidableAnswerError") {
      return { ...base, correct: false, error: (e as Error).message };
    }
    throw e;
  }
}
