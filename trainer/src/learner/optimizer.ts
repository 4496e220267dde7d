/**
 * Optimizers of the embedded learner: Adam (the default, as every LLM learner uses AdamW) and plain
 * SGD, after global gradient-norm clipping. Adam keeps one state per context table and, like
 * PyTorch with one tensor per context, steps only the tables that received a gradient.
 * @module
 */
import type { OptimizerName } from "./types.js";

/** Adam's moments and step count for one context table. */
export interface AdamState {
  readonly m: Float64Array;
  readonly v: Float64Array;
  /** Optimizer steps taken on this table. */
  t: number;
}

/** Adam hyper-parameters (PyTorch defaults). */
export const ADAM_BETA1 = 0.9;
/** Adam's second-moment decay (PyTorch default). */
export const ADAM_BETA2 = 0.999;
/** Adam's denominator epsilon (PyTorch default). */
export const ADAM_EPS = 1e-8;

/** L2 norm of all gradients together. */
export function globalGradNorm(grads: ReadonlyMap<string, Float64Array>): number {
  let s = 0;
  for (const g of grads.values()) for (let i = 0; i < g.length; i++) s += g[i]! * g[i]!;
  return Math.sqrt(s);
}

/** Settings of {@link applyUpdate}. */
export interface UpdateConfig {
  readonly optimizer: OptimizerName;
  readonly lr: number;
  /** Global norm clip; `Infinity` = off. */
  readonly maxGradNorm: number;
}

/**
 * Clips `grads` to `maxGradNorm` (global norm, in place) and applies one optimizer step to each
 * `theta` with a gradient. Returns the norm before clipping.
 */
export function applyUpdate(
  thetas: ReadonlyMap<string, Float64Array>,
  grads: ReadonlyMap<string, Float64Array>,
  adam: Map<string, AdamState>,
  cfg: UpdateConfig,
): number {
  const norm = globalGradNorm(grads);
  const scale = norm > cfg.maxGradNorm ? cfg.maxGradNorm / (norm + 1e-6) : 1;
  for (const [key, g] of grads) {
    const theta = thetas.get(key);
    if (!theta) throw new Error(`internal: gradient for unknown context '${key}'`);
    if (scale !== 1) for (let i = 0; i < g.length; i++) g[i] = g[i]! * scale;
    if (cfg.optimizer === "sgd") {
      for (let i = 0; i < g.length; i++) theta[i] = theta[i]! - cfg.lr * g[i]!;
      continue;
    }
    let st = adam.get(key);
    if (!st) {
      st = { m: new Float64Array(theta.length), v: new Float64Array(theta.length), t: 0 };
      adam.set(key, st);
    }
    st.t++;
    const bc1 = 1 - ADAM_BETA1 ** st.t;
    const bc2 = 1 - ADAM_BETA2 ** st.t;
    for (let i = 0; i < g.length; i++) {
      const gi = g[i]!;
      const m = ADAM_BETA1 * st.m[i]! + (1 - ADAM_BETA1) * gi;
      const v = ADAM_BETA2 * st.v[i]! + (1 - ADAM_BETA2) * gi * gi;
      st.m[i] = m;
      st.v[i] = v;
      theta[i] = theta[i]! - (cfg.lr * (m / bc1)) / (Math.sqrt(v / bc2) + ADAM_EPS);
    }
  }
  return norm;
}
