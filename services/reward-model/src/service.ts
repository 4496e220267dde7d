/**
 * The reward-model service: a learned reward model scores a rollout's (prompt, response).
 *
 * Components: `score`, the model's raw scalar output (declared in `[-scoreBound, scoreBound]`, clamped
 * beyond), and — with calibration `sigmoid` — `score_calibrated = sigmoid((score − shift) / scale)` in
 * [0, 1]. Concurrent requests share model calls through the dynamic batcher.
 *
 * The prompt is the task's `prompt`; without one, its chat `messages` as `role: content` lines; for a
 * code task without either, the code task's own prompt.
 * @module
 */
import type { Rollout } from "@reward-mesh/proto";
import { defineRewardService, type RewardServiceDefinition } from "@reward-mesh/sdk";
import { createBatcher } from "./batcher.js";
import { checkRewardModelOptions, type RewardModelOptions } from "./config.js";
import { type EncodedPair, encodePair, loadRewardModel, loadTokenizer, type RewardModel } from "./model.js";

/** Version of the scoring logic (the model itself is configuration). */
export const REWARD_MODEL_SERVICE_VERSION = "1.0.0";

/** The reward-model service: a service definition plus its model's life cycle. */
export interface RewardModelService extends RewardServiceDefinition {
  /**
   * Settles when the ONNX model is loaded; rejects with a `ModelLoadError` naming the file when it
   * cannot be (`main.ts` awaits it before serving, so a bad model fails start-up).
   */
  readonly ready: Promise<void>;
  /** Model calls and their sizes so far. */
  batchStats(): { readonly batches: number; readonly items: number; readonly largestBatch: number };
  /** Frees the model. */
  close(): Promise<void>;
}

/** The text a rollout's response answers. */
export function promptText(rollout: Rollout): string {
  const task = rollout.task;
  if (!task) return "";
  if (task.prompt !== "") return task.prompt;
  if (task.messages.length > 0) return task.messages.map((m) => `${m.role}: ${m.content}`).join("\n");
  if (task.kind.case === "code") return task.kind.value.prompt;
  return "";
}

/** `sigmoid((x − shift) / scale)`, computed without overflow. */
export function calibrate(x: number, shift: number, scale: number): number {
  const z = (x - shift) / scale;
  return z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z));
}

/**
 * Creates the reward-model service and waits for its ONNX session (the factory service discovery calls:
 * a bad model file fails here, before the service serves).
 */
export async function loadRewardModelService(options: RewardModelOptions): Promise<RewardModelService> {
  const service = createRewardModelService(options);
  await service.ready;
  return service;
}

/**
 * Creates the reward-model service. The options are checked and the tokenizer is read now (a bad option
 * throws `ConfigError`, a bad file `ModelLoadError`);
 * the ONNX session loads in the background — await {@link RewardModelService.ready} before serving.
 */
export function createRewardModelService(options: RewardModelOptions): RewardModelService {
  checkRewardModelOptions(options);
  const tokenizer = loadTokenizer(options.modelDir, options.maxTokens);
  const encode = (rollout: Rollout): EncodedPair =>
    encodePair(tokenizer, promptText(rollout), rollout.response, options.truncation);
  const loading = loadRewardModel(options, tokenizer);
  let model: RewardModel | undefined;
  const ready = loading.then((m) => {
    model = m;
  });
  ready.catch(() => {}); // reported to whoever awaits `ready` or scores
  const batcher = createBatcher<EncodedPair, number>({
    maxBatch: options.maxBatch,
    maxWaitMs: options.maxWaitMs,
    run: async (batch) => (await loading).run(batch),
  });
  const calibrated = options.calibration.kind === "sigmoid";
  const bound = options.scoreBound;
  const definition = defineRewardService({
    name: "reward-model",
    version: REWARD_MODEL_SERVICE_VERSION,
    domains: options.domains,
    components: [
      {
        name: "score",
        description: "the reward model's raw scalar score of (prompt, response)",
        min: -bound,
        max: bound,
      },
      ...(calibrated
        ? [
            {
              name: "score_calibrated",
              description: `sigmoid((score - ${options.calibration.shift}) / ${options.calibration.scale})`,
              min: 0,
              max: 1,
            },
          ]
        : []),
    ],
    validate: (rollout) => {
      if (options.truncation === "error") encode(rollout); // too long: INVALID_ARGUMENT before scoring
    },
    score: async (rollout, ctx) => {
      const encoded = encode(rollout);
      const raw = await batcher.submit(encoded, ctx.signal);
      const value = Math.min(bound, Math.max(-bound, raw));
      const notes = [`${encoded.ids.length} tokens`];
      if (encoded.truncated > 0) notes.push(`${encoded.truncated} truncated`);
      if (value !== raw) notes.push(`raw ${raw} clamped to ±${bound}`);
      const details = notes.join("; ");
      return [
        { name: "score", value, details },
        ...(calibrated
          ? [
              {
                name: "score_calibrated",
                value: calibrate(value, options.calibration.shift, options.calibration.scale),
                details,
              },
            ]
          : []),
      ];
    },
  });

  return {
    ...definition,
    ready,
    batchStats: () => batcher.stats(),
    close: async () => {
      await ready.catch(() => {});
      await model?.close();
    },
  };
}
