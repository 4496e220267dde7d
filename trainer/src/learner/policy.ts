/**
 * The embedded learner's policy: a tabular bigram softmax per context. For context `c` with a
 * vocabulary of V fragments, the logits of the next token are `θ_c[prev][·]`, a row of a
 * `(V + 1) × V` table (row 0 = beginning of sequence, row `k + 1` = previous token `k`). Small and
 * exact: every logprob and gradient is computed in closed form, in float64.
 * @module
 */
import { createPrng, hashString, normal, seedToUint32 } from "./prng.js";

/** Row of the table used after `prev` (-1 = beginning of sequence). */
export function rowOf(prev: number): number {
  return prev + 1;
}

/** The parameters of one context. */
export interface ContextParams {
  readonly key: string;
  readonly vocabularySize: number;
  /** `(V + 1) × V` logits, row-major. Mutated in place by the optimizer. */
  readonly theta: Float64Array;
  /** Frozen copy of the initial `theta` (the KL reference), or null when there is none. */
  readonly reference: Float64Array | null;
}

/** Deterministic initial logits of a context: N(0, scale²) from (seed, key, V), independent of creation order. */
export function initialTheta(seed: number, key: string, vocabularySize: number, scale: number): Float64Array {
  const theta = new Float64Array((vocabularySize + 1) * vocabularySize);
  if (scale === 0) return theta;
  const rng = createPrng(hashString(`${vocabularySize}\u0000${key}`, seedToUint32(seed)));
  for (let i = 0; i < theta.length; i++) theta[i] = scale * normal(rng);
  return theta;
}

/**
 * Writes the softmax of row `row` of `theta` (divided by `temperature`) into `probs` and returns its
 * log-normaliser (log Σ exp), so that `logp(k) = theta[row·V + k] / temperature − lse`.
 */
export function rowSoftmax(
  theta: Float64Array,
  row: number,
  vocabularySize: number,
  probs: Float64Array,
  temperature = 1,
): number {
  const off = row * vocabularySize;
  let max = Number.NEGATIVE_INFINITY;
  for (let k = 0; k < vocabularySize; k++) max = Math.max(max, theta[off + k]! / temperature);
  let sum = 0;
  for (let k = 0; k < vocabularySize; k++) {
    const e = Math.exp(theta[off + k]! / temperature - max);
    probs[k] = e;
    sum += e;
  }
  for (let k = 0; k < vocabularySize; k++) probs[k] = probs[k]! / sum;
  return max + Math.log(sum);
}

/** Logprob of every token of a sequence under `theta` (temperature 1). */
export function sequenceLogprobs(
  theta: Float64Array,
  vocabularySize: number,
  tokenIds: ArrayLike<number>,
  scratch: Float64Array = new Float64Array(vocabularySize),
): Float64Array {
  const out = new Float64Array(tokenIds.length);
  let prev = -1;
  for (let t = 0; t < tokenIds.length; t++) {
    const row = rowOf(prev);
    const a = tokenIds[t]!;
    const lse = rowSoftmax(theta, row, vocabularySize, scratch);
    out[t] = theta[row * vocabularySize + a]! - lse;
    prev = a;
  }
  return out;
}

/** Entropy of a distribution given as probabilities. */
export function entropyOf(probs: Float64Array, n: number): number {
  let h = 0;
  for (let k = 0; k < n; k++) {
    const p = probs[k]!;
    if (p > 0) h -= p * Math.log(p);
  }
  return h;
}
