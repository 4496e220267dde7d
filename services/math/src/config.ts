/**
 * Configuration of the math service (prefix `MATH_`). The only module here that reads the
 * environment.
 * @module
 */
import {
  defineEnv,
  defineServiceEnv,
  type Env,
  loadEnv,
  loadServiceRuntimeOptions,
  processEnv,
  type ServiceRuntimeOptions,
} from "@reward-mesh/sdk";

/** Default gRPC port of the math service. */
export const MATH_DEFAULT_PORT = 50067;

/** The math service's own variables. */
export const MATH_ENV = defineEnv({
  MATH_TIME_LIMIT_MS: {
    type: "integer",
    minimum: 10,
    maximum: 600_000,
    default: 2000,
    description: "Time limit of one judgement (extraction + comparisons); past it correct = 0 with TIMEOUT.",
  },
  MATH_WORKERS: {
    type: "integer",
    minimum: 1,
    maximum: 256,
    default: 2,
    description: "Worker threads that judge answers (untrusted LaTeX never runs on the event loop).",
  },
  MATH_TOLERANCE: {
    type: "number",
    minimum: 0,
    maximum: 1,
    default: 1e-6,
    description: "Default relative tolerance of numeric comparison (a task's tolerance overrides it).",
  },
  MATH_LAST_NUMBER_FALLBACK: {
    type: "boolean",
    default: false,
    description: "Whether answer_format auto falls back to the last number of the response.",
  },
  MATH_MAX_ANSWER_CHARS: {
    type: "integer",
    minimum: 1,
    maximum: 1_000_000,
    default: 2000,
    description: "Longest extracted answer judged; a longer one is correct = 0 with ERROR.",
  },
});

/** Every variable the math process reads (its definition in the published schema). */
export const MATH_SERVICE_ENV = defineServiceEnv({
  service: "math",
  prefix: "MATH",
  defaultPort: MATH_DEFAULT_PORT,
  own: MATH_ENV,
});

/** Scoring options of the math service. */
export interface MathOptions {
  /**
   * Time limit of one judgement in milliseconds.
   * @default 2000 — a MATH answer takes well under a millisecond; the limit only bounds pathological input.
   */
  readonly timeLimitMs: number;
  /**
   * Judging worker threads.
   * @default 2 — judging is cheap; more threads only help a service scoring many groups at once.
   */
  readonly workers: number;
  /**
   * Relative tolerance of numeric comparison when the task sets none.
   * @default 1e-6 — equal doubles of a computed value, not a rounded answer (0.333 is not 1/3, as in MATH).
   */
  readonly tolerance: number;
  /**
   * Whether `answer_format` auto falls back to the last number of the response.
   * @default false — MATH's grader needs a marked answer; GSM8K tasks ask for it with `last_number`.
   */
  readonly lastNumberFallback: boolean;
  /**
   * Longest extracted answer judged (characters).
   * @default 2000 — ten times the longest MATH reference answer.
   */
  readonly maxAnswerChars: number;
  /**
   * Heap limit of each judging worker (MiB); a judgement past it is `correct = 0` with ERROR.
   * @default 512 — start-up takes well under 100; no answer within `maxAnswerChars` comes near it.
   */
  readonly memoryLimitMb?: number;
}

/** Everything the math process needs. */
export interface MathConfig extends MathOptions {
  readonly runtime: ServiceRuntimeOptions;
}

/** Reads the `MATH_*` variables and the runtime options. */
export function loadConfig(env: Env = processEnv()): MathConfig {
  const v = loadEnv(MATH_ENV, env);
  return {
    timeLimitMs: v.MATH_TIME_LIMIT_MS,
    workers: v.MATH_WORKERS,
    tolerance: v.MATH_TOLERANCE,
    lastNumberFallback: v.MATH_LAST_NUMBER_FALLBACK,
    maxAnswerChars: v.MATH_MAX_ANSWER_CHARS,
    runtime: loadServiceRuntimeOptions("MATH", MATH_DEFAULT_PORT, env),
  };
}
