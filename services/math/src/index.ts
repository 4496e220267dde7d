/**
 * `@reward-mesh/math`: outcome rewards for math answers — final-answer extraction, normalisation and
 * equivalence (exact, numeric, symbolic, structured).
 * @module
 */
export type { MathConfig, MathOptions } from "./config.js";
export { loadConfig, MATH_DEFAULT_PORT, MATH_ENV, MATH_SERVICE_ENV } from "./config.js";
export type { AnswerType, Equivalence, EquivalenceMethod, EquivalenceOptions } from "./equivalence.js";
export { answersEquivalent } from "./equivalence.js";
export type { AnswerSource, ExtractedAnswer } from "./extract.js";
export { AnswerFormat, extractAnswer } from "./extract.js";
export type { JudgeInput, Judgement } from "./judge.js";
export { judge } from "./judge.js";
export type { AnswerLimits } from "./normalize.js";
export { DEFAULT_ANSWER_LIMITS, normalizeAnswer } from "./normalize.js";
export type { JudgePool, JudgePoolOptions, PoolOutcome } from "./pool.js";
export { createJudgePool } from "./pool.js";
export type { MathService } from "./service.js";
export { createMathService, MATH_SERVICE_VERSION } from "./service.js";
export type { AgreementPair, AgreementRates } from "./agreement.js";
export { measureAgreement, pairInput } from "./agreement.js";
