/**
 * Configuration of the reward-model service (prefix `REWARD_MODEL_`). The only module here that reads the
 * environment.
 * @module
 */
import { fileURLToPath } from "node:url";
import {
  ConfigError,
  defineEnv,
  defineServiceEnv,
  type Env,
  loadEnv,
  loadServiceRuntimeOptions,
  processEnv,
  type ServiceRuntimeOptions,
} from "@reward-mesh/sdk";

/** Default gRPC port of the reward-model service. */
export const REWARD_MODEL_DEFAULT_PORT = 50068;

/** The tiny test model this package builds and ships (`model/build.py`): for tests and demos only. */
export const BUNDLED_MODEL_DIR = fileURLToPath(new URL("../model/", import.meta.url));

/** Domains scored when `REWARD_MODEL_DOMAINS` is unset: every text domain of the built-in tasks. */
export const DEFAULT_DOMAINS = ["custom", "code", "tool_call", "agent"] as const;

/** How the optional calibrated component is computed (`none`: not emitted). */
export const Calibration = { none: "none", sigmoid: "sigmoid" } as const;
export type Calibration = (typeof Calibration)[keyof typeof Calibration];

/** What happens to a (prompt, response) longer than the model takes. */
export const Truncation = { left: "left", error: "error" } as const;
export type Truncation = (typeof Truncation)[keyof typeof Truncation];

/** Where inference runs. */
export const ExecutionProvider = { cpu: "cpu", cuda: "cuda" } as const;
export type ExecutionProvider = (typeof ExecutionProvider)[keyof typeof ExecutionProvider];

/** The reward-model service's own variables. */
export const REWARD_MODEL_ENV = defineEnv({
  REWARD_MODEL_MODEL_DIR: {
    type: "string",
    description:
      "Directory with model.onnx, tokenizer.json and tokenizer_config.json (default: the bundled tiny test model).",
  },
  REWARD_MODEL_MODEL_FILE: {
    type: "string",
    default: "model.onnx",
    description: "ONNX file name inside the model directory.",
  },
  REWARD_MODEL_DOMAINS: {
    type: "string",
    default: DEFAULT_DOMAINS.join(","),
    description: "Comma-separated rollout domains to score.",
  },
  REWARD_MODEL_MAX_TOKENS: {
    type: "integer",
    minimum: 0,
    default: 0,
    description:
      "Longest sequence fed to the model, special tokens included; 0 = tokenizer_config model_max_length.",
  },
  REWARD_MODEL_TRUNCATION: {
    type: "string",
    enum: Object.values(Truncation),
    default: "left",
    description:
      "Too long input: 'left' drops the prompt's first tokens, then the response's last; 'error' rejects it.",
  },
  REWARD_MODEL_MAX_BATCH: {
    type: "integer",
    minimum: 1,
    maximum: 1024,
    default: 32,
    description: "Most requests scored in one model call (dynamic batching); 1 disables batching.",
  },
  REWARD_MODEL_MAX_WAIT_MS: {
    type: "number",
    minimum: 0,
    maximum: 1000,
    default: 2,
    description: "Longest a request waits for others to fill a batch.",
  },
  REWARD_MODEL_EXECUTION_PROVIDER: {
    type: "string",
    enum: Object.values(ExecutionProvider),
    default: "cpu",
    description: "ONNX Runtime execution provider; 'cuda' needs the CUDA EP libraries (see the README).",
  },
  REWARD_MODEL_CUDA_DEVICE: {
    type: "integer",
    minimum: 0,
    default: 0,
    description: "CUDA device id when the execution provider is 'cuda'.",
  },
  REWARD_MODEL_INTRA_OP_THREADS: {
    type: "integer",
    minimum: 0,
    maximum: 256,
    default: 1,
    description:
      "ONNX Runtime intra-op threads of one model call; 0 = ONNX Runtime's default (one per core).",
  },
  REWARD_MODEL_SCORE_BOUND: {
    type: "number",
    minimum: 0,
    default: 1000,
    description: "The raw score component's declared range is [-bound, bound]; outputs beyond are clamped.",
  },
  REWARD_MODEL_CALIBRATION: {
    type: "string",
    enum: Object.values(Calibration),
    default: "none",
    description: "'sigmoid' adds score_calibrated = 1 / (1 + exp(-(score - shift) / scale)), in [0, 1].",
  },
  REWARD_MODEL_CALIBRATION_SHIFT: {
    type: "number",
    default: 0,
    description: "Calibration shift (the raw score that maps to 0.5).",
  },
  REWARD_MODEL_CALIBRATION_SCALE: {
    type: "number",
    default: 1,
    description: "Calibration scale (> 0): raw-score units per logit.",
  },
});

/** Every variable the reward-model process reads (its definition in the published schema). */
export const REWARD_MODEL_SERVICE_ENV = defineServiceEnv({
  service: "reward-model",
  prefix: "REWARD_MODEL",
  defaultPort: REWARD_MODEL_DEFAULT_PORT,
  own: REWARD_MODEL_ENV,
});

/** Scoring options of the reward-model service. */
export interface RewardModelOptions {
  /**
   * Directory holding `modelFile`, `tokenizer.json` and `tokenizer_config.json`; nothing is downloaded.
   * @default the bundled tiny test model — a real deployment points this at its own exported model.
   */
  readonly modelDir: string;
  /**
   * ONNX file inside `modelDir`: inputs `input_ids` (+ optional `attention_mask`, `token_type_ids`), int64
   * `[batch, sequence]`; first output `[batch]` or `[batch, 1]` (a scalar head or a 1-label classifier).
   * @default "model.onnx"
   */
  readonly modelFile: string;
  /**
   * Rollout domains consumed. A reward model scores any (prompt, response), so every text domain.
   * @default ["custom", "code", "tool_call", "agent"]
   */
  readonly domains: readonly string[];
  /**
   * Longest sequence fed to the model (special tokens included); 0 = `model_max_length` of
   * `tokenizer_config.json` — the model's position table is no longer.
   * @default 0
   */
  readonly maxTokens: number;
  /**
   * `left`: keep the end of the prompt (nearest the response) and the start of the response;
   * `error`: INVALID_ARGUMENT naming the lengths.
   * @default "left" — training should not stall on one long rollout.
   */
  readonly truncation: Truncation;
  /**
   * Most requests per model call; batching amortises the per-call cost over concurrent requests.
   * @default 32
   */
  readonly maxBatch: number;
  /**
   * Longest a request waits for a fuller batch (a full batch runs at once).
   * @default 2 — small against a model call, enough for concurrent requests to meet.
   */
  readonly maxWaitMs: number;
  /**
   * ONNX Runtime execution provider.
   * @default "cpu" — `cuda` needs the CUDA EP libraries, which the npm package does not ship.
   */
  readonly executionProvider: ExecutionProvider;
  /** CUDA device id (with `executionProvider: "cuda"`). @default 0 */
  readonly cudaDevice: number;
  /**
   * ONNX Runtime intra-op threads of one model call; 0 = ONNX Runtime's default (one per core, which
   * ignores container CPU limits and busy-waits between calls).
   * @default 1 — the service shares its machine with the rest of the mesh; raise it on a dedicated one.
   */
  readonly intraOpThreads: number;
  /**
   * `score` is declared in `[-scoreBound, scoreBound]` (the contract needs finite bounds); a model output
   * beyond is clamped and `details` says so.
   * @default 1000
   */
  readonly scoreBound: number;
  /**
   * Optional `score_calibrated` component in [0, 1]: `sigmoid((score − shift) / scale)`.
   * @default { kind: "none" }
   */
  readonly calibration: { readonly kind: Calibration; readonly shift: number; readonly scale: number };
}

/** Everything the reward-model process needs. */
export interface RewardModelConfig extends RewardModelOptions {
  readonly runtime: ServiceRuntimeOptions;
}

const DOMAIN = /^[a-z0-9_-]+$/;

/** The variable of each option {@link checkRewardModelOptions} checks. */
const ENV_KEYS = {
  domains: "REWARD_MODEL_DOMAINS",
  "calibration.scale": "REWARD_MODEL_CALIBRATION_SCALE",
  maxTokens: "REWARD_MODEL_MAX_TOKENS",
  maxBatch: "REWARD_MODEL_MAX_BATCH",
  maxWaitMs: "REWARD_MODEL_MAX_WAIT_MS",
  scoreBound: "REWARD_MODEL_SCORE_BOUND",
} as const;

/** Where an option comes from, for error messages: its field name, or its variable in {@link loadConfig}. */
type KeyOf = (field: keyof typeof ENV_KEYS) => string;

/** Checks options a schema cannot state; throws {@link ConfigError} `'<key>' <problem>`. */
export function checkRewardModelOptions(o: RewardModelOptions, keyOf: KeyOf = (field) => field): void {
  if (o.domains.length === 0) throw new ConfigError(keyOf("domains"), "must list at least one domain");
  for (const d of o.domains) {
    if (!DOMAIN.test(d))
      throw new ConfigError(keyOf("domains"), `has an invalid domain '${d}' (want [a-z0-9_-]+)`);
  }
  if (o.calibration.kind !== "none" && !(o.calibration.scale > 0)) {
    throw new ConfigError(keyOf("calibration.scale"), `must be > 0, got ${o.calibration.scale}`);
  }
  if (!(Number.isSafeInteger(o.maxBatch) && o.maxBatch >= 1))
    throw new ConfigError(keyOf("maxBatch"), `must be an integer >= 1, got ${o.maxBatch}`);
  if (!(Number.isFinite(o.maxWaitMs) && o.maxWaitMs >= 0))
    throw new ConfigError(keyOf("maxWaitMs"), `must be a finite number >= 0, got ${o.maxWaitMs}`);
  if (!(Number.isFinite(o.scoreBound) && o.scoreBound >= 0))
    throw new ConfigError(keyOf("scoreBound"), `must be a finite number >= 0, got ${o.scoreBound}`);
  if (o.maxTokens !== 0 && o.maxTokens < 4) {
    throw new ConfigError(
      keyOf("maxTokens"),
      `must be 0 (the tokenizer's limit) or >= 4, got ${o.maxTokens}`,
    );
  }
}

/**
 * Reads the `REWARD_MODEL_*` variables and the runtime options. `REWARD_MODEL_CONCURRENCY` defaults to
 * `REWARD_MODEL_MAX_BATCH` (not the SDK's 8): fewer concurrent requests could never fill a batch.
 */
export function loadConfig(env: Env = processEnv()): RewardModelConfig {
  const v = loadEnv(REWARD_MODEL_ENV, env);
  const options: RewardModelOptions = {
    modelDir: v.REWARD_MODEL_MODEL_DIR ?? BUNDLED_MODEL_DIR,
    modelFile: v.REWARD_MODEL_MODEL_FILE,
    domains: v.REWARD_MODEL_DOMAINS.split(",")
      .map((d) => d.trim())
      .filter((d) => d !== ""),
    maxTokens: v.REWARD_MODEL_MAX_TOKENS,
    truncation: v.REWARD_MODEL_TRUNCATION,
    maxBatch: v.REWARD_MODEL_MAX_BATCH,
    maxWaitMs: v.REWARD_MODEL_MAX_WAIT_MS,
    executionProvider: v.REWARD_MODEL_EXECUTION_PROVIDER,
    cudaDevice: v.REWARD_MODEL_CUDA_DEVICE,
    intraOpThreads: v.REWARD_MODEL_INTRA_OP_THREADS,
    scoreBound: v.REWARD_MODEL_SCORE_BOUND,
    calibration: {
      kind: v.REWARD_MODEL_CALIBRATION,
      shift: v.REWARD_MODEL_CALIBRATION_SHIFT,
      scale: v.REWARD_MODEL_CALIBRATION_SCALE,
    },
  };
  checkRewardModelOptions(options, (field) => ENV_KEYS[field]);
  // `env` with REWARD_MODEL_CONCURRENCY defaulting to the max batch; every other read still goes to `env`.
  const concurrencySet = (env.REWARD_MODEL_CONCURRENCY ?? "").trim() !== "";
  const runtimeEnv: Env = concurrencySet
    ? env
    : Object.create(env, {
        REWARD_MODEL_CONCURRENCY: { value: String(options.maxBatch), enumerable: true },
      });
  return {
    ...options,
    runtime: loadServiceRuntimeOptions("REWARD_MODEL", REWARD_MODEL_DEFAULT_PORT, runtimeEnv),
  };
}
