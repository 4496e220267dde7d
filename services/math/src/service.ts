/**
 * The math service: outcome rewards for math answers (MATH / GSM8K style). Components:
 * `correct` (1 when the response's final answer is equivalent to a reference answer) and `format`
 * (1 when a final answer was found where the task asks for it). `details` of `correct` is JSON with
 * the extracted and normalised answer, where it was found, how equivalence was decided and the
 * reference; an undecidable answer (too long, macro definitions, overflow) is `correct = 0` with
 * ERROR, one past the time limit `correct = 0` with TIMEOUT, each with the reason.
 * @module
 */
import { ComponentStatus, type MathTask, type Rollout } from "@reward-mesh/proto";
import { type ComponentValue, defineRewardService, type RewardServiceDefinition } from "@reward-mesh/sdk";
import type { MathOptions } from "./config.js";
import type { AnswerType } from "./equivalence.js";
import { type AnswerFormat, AnswerFormat as Formats } from "./extract.js";
import { invalidTask } from "./errors.js";
import type { JudgeInput, Judgement } from "./judge.js";
import { DEFAULT_ANSWER_LIMITS } from "./normalize.js";
import { createJudgePool, type JudgePool } from "./pool.js";

/** Version of the scoring logic. */
export const MATH_SERVICE_VERSION = "1.0.0";

const ANSWER_TYPES: readonly AnswerType[] = [
  "",
  "number",
  "expression",
  "equation",
  "interval",
  "set",
  "tuple",
  "matrix",
  "text",
];
const ANSWER_FORMATS: readonly string[] = ["", ...Object.values(Formats)];
const MAX_REFERENCE_CHARS = 10_000;

function mathTask(rollout: Rollout): MathTask {
  const kind = rollout.task?.kind;
  if (kind?.case !== "math") throw invalidTask("", "is required");
  return kind.value;
}

function checkTask(t: MathTask): void {
  if (t.answers.length === 0) throw invalidTask("answers", "must hold at least one reference answer");
  t.answers.forEach((a, k) => {
    if (a.trim() === "") throw invalidTask(`answers[${k}]`, "must not be blank");
    if (a.length > MAX_REFERENCE_CHARS)
      throw invalidTask(`answers[${k}]`, `must be at most ${MAX_REFERENCE_CHARS} characters`);
  });
  if (!(ANSWER_TYPES as readonly string[]).includes(t.answerType))
    throw invalidTask(
      "answer_type",
      `must be one of ${ANSWER_TYPES.slice(1).join(", ")} or empty, got ${JSON.stringify(t.answerType)}`,
    );
  if (!ANSWER_FORMATS.includes(t.answerFormat))
    throw invalidTask(
      "answer_format",
      `must be one of ${ANSWER_FORMATS.slice(1).join(", ")} or empty, got ${JSON.stringify(t.answerFormat)}`,
    );
  if (!(Number.isFinite(t.tolerance) && t.tolerance >= 0 && t.tolerance < 1))
    throw invalidTask("tolerance", `must be in [0, 1), got ${t.tolerance}`);
}

/** The judging input of a (validated) rollout. */
export function judgeInput(rollout: Rollout, options: MathOptions): JudgeInput {
  const t = mathTask(rollout);
  return {
    response: rollout.response,
    answers: t.answers,
    answerType: t.answerType as AnswerType,
    answerFormat: (t.answerFormat === "" ? "auto" : t.answerFormat) as AnswerFormat,
    tolerance: t.tolerance > 0 ? t.tolerance : options.tolerance,
    allowLastNumber: options.lastNumberFallback,
    limits: { ...DEFAULT_ANSWER_LIMITS, maxAnswerChars: options.maxAnswerChars },
  };
}

const clip = (s: string | undefined, n = 300) => (s === undefined || s.length <= n ? s : `${s.slice(0, n)}…`);

/** The `details` JSON of a judgement (answers clipped to 300 characters). */
export function judgementDetails(j: Judgement): string {
  return JSON.stringify({
    extracted: clip(j.extracted),
    normalized: clip(j.normalized),
    source: j.source,
    boxed: j.boxedCount,
    method: j.method,
    reference: clip(j.reference),
    ...(j.error ? { error: j.error } : {}),
  });
}

/** Components of a judgement. */
export function judgementComponents(j: Judgement): ComponentValue[] {
  return [
    {
      name: "correct",
      value: j.correct ? 1 : 0,
      status: j.error ? ComponentStatus.ERROR : ComponentStatus.OK,
      details: j.format ? judgementDetails(j) : "no final answer found",
    },
    { name: "format", value: j.format ? 1 : 0, details: j.source ?? "no final answer found" },
  ];
}

/** A math service and the judging pool it owns (close it when done). */
export type MathService = RewardServiceDefinition & { readonly pool: JudgePool };

/** Creates the math service: judging runs on `options.workers` threads with `options.timeLimitMs` each. */
export function createMathService(options: MathOptions): MathService {
  const pool = createJudgePool({
    workers: options.workers,
    timeLimitMs: options.timeLimitMs,
    ...(options.memoryLimitMb !== undefined ? { memoryLimitMb: options.memoryLimitMb } : {}),
  });
  const def = defineRewardService({
    name: "math",
    version: MATH_SERVICE_VERSION,
    domains: ["math"],
    taskKinds: ["math"],
    components: [
      {
        name: "correct",
        description: "1 when the final answer is equivalent to a reference answer",
        min: 0,
        max: 1,
      },
      {
        name: "format",
        description: "1 when a final answer was found where the task asks for it",
        min: 0,
        max: 1,
      },
    ],
    validate: (rollout) => checkTask(mathTask(rollout)),
    score: async (rollout, ctx) => {
      const outcome = await pool.judge(judgeInput(rollout, options), ctx.signal);
      if (outcome.kind === "timeout") {
        return [
          {
            name: "correct",
            value: 0,
            status: ComponentStatus.TIMEOUT,
            details: `judging ran past the time limit of ${outcome.limitMs} ms`,
          },
          { name: "format", value: 0, status: ComponentStatus.TIMEOUT, details: "not decided in time" },
        ];
      }
      if (outcome.kind === "failed") {
        return [
          { name: "correct", value: 0, status: ComponentStatus.ERROR, details: outcome.reason },
          { name: "format", value: 0, status: ComponentStatus.ERROR, details: "not decided" },
        ];
      }
      return judgementComponents(outcome.judgement);
    },
  });
  return Object.assign(def, { pool });
}
