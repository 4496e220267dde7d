/**
 * The learned reward model: a HuggingFace `tokenizer.json` (pure-JS `@huggingface/tokenizers`, read from
 * a local file) and an ONNX scoring model (`onnxruntime-node`). Everything is loaded from `modelDir`;
 * nothing is fetched. Stages: {@link loadTokenizer} → {@link encodePair} per request → {@link RewardModel.run}
 * per batch (padded to the longest sequence, with an attention mask).
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import * as ort from "onnxruntime-node";
import type { RewardModelOptions, Truncation } from "./config.js";
import { ConfigError } from "@reward-mesh/sdk";
import { ExecutionProviderError, ModelLoadError, tooLong } from "./errors.js";

/** One (prompt, response) as model input. */
export interface EncodedPair {
  readonly ids: readonly number[];
  readonly typeIds: readonly number[];
  /** Tokens dropped to fit `maxTokens` (0 when none). */
  readonly truncated: number;
}

/** A tokenizer with what the service needs to know about it. */
export interface LoadedTokenizer {
  readonly tokenizer: Tokenizer;
  /** Longest sequence the model takes (special tokens included). */
  readonly maxTokens: number;
  readonly padId: number;
  readonly unkId: number;
  /** Special tokens the post-processor adds around a pair (e.g. 3 for `[CLS] A [SEP] B [SEP]`). */
  readonly specialTokens: number;
}

function readJson(file: string): Record<string, unknown> {
  if (!existsSync(file)) throw new ModelLoadError(file, "does not exist");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ModelLoadError(file, `cannot be read: ${(err as Error).message}`, { cause: err });
  }
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("not a JSON object");
    return v as Record<string, unknown>;
  } catch (err) {
    throw new ModelLoadError(file, `is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Reads `tokenizer.json` and `tokenizer_config.json` from `dir`; throws {@link ModelLoadError} naming a
 * bad file, and `ConfigError` naming `REWARD_MODEL_MAX_TOKENS` when `maxTokensOption` exceeds the
 * config's `model_max_length`.
 */
export function loadTokenizer(dir: string, maxTokensOption: number): LoadedTokenizer {
  const tokenizerFile = resolve(dir, "tokenizer.json");
  const configFile = resolve(dir, "tokenizer_config.json");
  const json = readJson(tokenizerFile);
  const config = readJson(configFile);
  let tokenizer: Tokenizer;
  try {
    tokenizer = new Tokenizer(json, config);
  } catch (err) {
    throw new ModelLoadError(tokenizerFile, `is not a usable tokenizer: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const modelMax = config["model_max_length"];
  const declared =
    typeof modelMax === "number" && Number.isSafeInteger(modelMax) && modelMax > 0 ? modelMax : 0;
  if (maxTokensOption > 0 && declared > 0 && maxTokensOption > declared) {
    throw new ConfigError(
      "REWARD_MODEL_MAX_TOKENS",
      `is ${maxTokensOption}, more than the model's longest sequence (model_max_length ${declared} in ${configFile})`,
    );
  }
  const maxTokens = maxTokensOption > 0 ? maxTokensOption : declared;
  if (maxTokens === 0) {
    throw new ModelLoadError(
      configFile,
      "has no integer 'model_max_length'; set REWARD_MODEL_MAX_TOKENS to the model's longest sequence",
    );
  }
  const idOf = (key: string, fallback: number) => {
    const t = config[key];
    return typeof t === "string" ? (tokenizer.token_to_id(t) ?? fallback) : fallback;
  };
  const specials = tokenizer.post_processor?.post_process([], [], true).tokens.length ?? 0;
  return {
    tokenizer,
    maxTokens,
    padId: idOf("pad_token", 0),
    unkId: idOf("unk_token", 0),
    specialTokens: specials,
  };
}

/**
 * Tokenizes a (prompt, response) pair the way the tokenizer's post-processor joins a pair (e.g.
 * `[CLS] prompt [SEP] response [SEP]`). Too long: `left` drops the prompt's first tokens (keeping the
 * part nearest the response), then the response's last tokens; `error` throws INVALID_ARGUMENT.
 */
export function encodePair(
  t: LoadedTokenizer,
  prompt: string,
  response: string,
  truncation: Truncation,
): EncodedPair {
  const tok = t.tokenizer;
  let p = tok.tokenize(prompt, { add_special_tokens: false });
  let r = tok.tokenize(response, { add_special_tokens: false });
  const total = p.length + r.length + t.specialTokens;
  let truncated = 0;
  if (total > t.maxTokens) {
    if (truncation === "error") throw tooLong(total, t.maxTokens);
    const budget = t.maxTokens - t.specialTokens;
    r = r.slice(0, Math.max(0, budget));
    p = p.slice(p.length - Math.max(0, budget - r.length));
    truncated = total - (p.length + r.length + t.specialTokens);
  }
  const joined: { tokens: string[]; token_type_ids?: number[] } = tok.post_processor
    ? tok.post_processor.post_process(p, r, true)
    : { tokens: [...p, ...r] };
  return {
    ids: joined.tokens.map((x: string) => tok.token_to_id(x) ?? t.unkId),
    typeIds: joined.token_type_ids ?? joined.tokens.map(() => 0),
    truncated,
  };
}

/** A loaded scoring model. */
export interface RewardModel {
  readonly tokenizer: LoadedTokenizer;
  /** The ONNX input names the model takes. */
  readonly inputNames: readonly string[];
  /** Scores a batch (one model call, padded to its longest sequence); one raw score per pair. */
  run(batch: readonly EncodedPair[]): Promise<Float32Array>;
  /** Frees the ONNX Runtime session. */
  close(): Promise<void>;
}

const KNOWN_INPUTS = new Set(["input_ids", "attention_mask", "token_type_ids"]);

async function createSession(file: string, o: RewardModelOptions): Promise<ort.InferenceSession> {
  if (!existsSync(file)) throw new ModelLoadError(file, "does not exist");
  const executionProviders: ort.InferenceSession.ExecutionProviderConfig[] =
    o.executionProvider === "cuda" ? [{ name: "cuda", deviceId: o.cudaDevice }] : ["cpu"];
  try {
    return await ort.InferenceSession.create(file, {
      executionProviders,
      graphOptimizationLevel: "all",
      ...(o.intraOpThreads > 0 ? { intraOpNumThreads: o.intraOpThreads } : {}),
    });
  } catch (err) {
    const msg = (err as Error).message;
    if (o.executionProvider === "cuda" && /cuda|provider|shared library/i.test(msg)) {
      throw new ExecutionProviderError(
        `the CUDA execution provider is not available (${msg.split("\n")[0]}); install onnxruntime-node's CUDA 12 libraries (ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node) or use REWARD_MODEL_EXECUTION_PROVIDER=cpu`,
        { cause: err },
      );
    }
    throw new ModelLoadError(file, `is not a loadable ONNX model: ${msg.split("\n")[0]}`, { cause: err });
  }
}

function checkSignature(file: string, session: ort.InferenceSession): void {
  if (!session.inputNames.includes("input_ids")) {
    throw new ModelLoadError(file, `has no 'input_ids' input (inputs: ${session.inputNames.join(", ")})`);
  }
  const unknown = session.inputNames.filter((n) => !KNOWN_INPUTS.has(n));
  if (unknown.length > 0) {
    throw new ModelLoadError(
      file,
      `has inputs the service cannot feed: ${unknown.join(", ")} (known: ${[...KNOWN_INPUTS].join(", ")})`,
    );
  }
  if (session.outputNames.length === 0) throw new ModelLoadError(file, "has no outputs");
}

/** Pads a batch into int64 `[batch, longest]` tensors: ids (pad id), attention mask, token types. */
function batchTensors(batch: readonly EncodedPair[], padId: number): Record<string, ort.Tensor> {
  const width = Math.max(...batch.map((e) => e.ids.length));
  const ids = new BigInt64Array(batch.length * width).fill(BigInt(padId));
  const mask = new BigInt64Array(batch.length * width);
  const types = new BigInt64Array(batch.length * width);
  batch.forEach((e, row) => {
    for (let i = 0; i < e.ids.length; i++) {
      ids[row * width + i] = BigInt(e.ids[i]!);
      mask[row * width + i] = 1n;
      types[row * width + i] = BigInt(e.typeIds[i] ?? 0);
    }
  });
  const dims = [batch.length, width];
  return {
    input_ids: new ort.Tensor("int64", ids, dims),
    attention_mask: new ort.Tensor("int64", mask, dims),
    token_type_ids: new ort.Tensor("int64", types, dims),
  };
}

/**
 * Loads the tokenizer and the ONNX model from `options.modelDir` and runs it once on full-length inputs
 * ({@link warmUp}). A missing or corrupt file, or a model that does not fit (output type or shape, or
 * `maxTokens` beyond what it takes), fails here with a {@link ModelLoadError} naming it — so the service
 * fails at start, not at its first request.
 */
export async function loadRewardModel(
  options: RewardModelOptions,
  tokenizer: LoadedTokenizer = loadTokenizer(options.modelDir, options.maxTokens),
): Promise<RewardModel> {
  const file = resolve(options.modelDir, options.modelFile);
  const session = await createSession(file, options);
  checkSignature(file, session);
  const output = session.outputNames[0]!;
  const inputNames = [...session.inputNames];
  const run = async (batch: readonly EncodedPair[]): Promise<Float32Array> => {
    if (batch.length === 0) return new Float32Array(0);
    const all = batchTensors(batch, tokenizer.padId);
    const feeds = Object.fromEntries(inputNames.map((n) => [n, all[n]!]));
    const out = (await session.run(feeds))[output]!;
    const d = out.dims;
    if (out.type !== "float32" && out.type !== "float64") {
      throw new ModelLoadError(file, `output '${output}' is ${out.type}; want float32 or float64 scores`);
    }
    if (!(d.length === 1 || (d.length === 2 && d[1] === 1)) || d[0] !== batch.length) {
      throw new ModelLoadError(
        file,
        `output '${output}' has shape [${d.join(", ")}]; want [batch] or [batch, 1] (one score per pair)`,
      );
    }
    return Float32Array.from(out.data as Float32Array | Float64Array);
  };
  try {
    await warmUp(file, run, tokenizer, Math.min(2, options.maxBatch));
  } catch (err) {
    await session.release();
    throw err;
  }
  return { tokenizer, inputNames, run, close: () => session.release() };
}

/**
 * Runs the model once on a batch of full-length inputs (`maxTokens` tokens each), so that a model that
 * does not fit fails start-up, not a batch of rollouts: a wrong output type or shape is a
 * {@link ModelLoadError} from {@link RewardModel.run}'s checks; a model call that fails on inputs of
 * that length (e.g. a position table shorter than `maxTokens`) is a {@link ModelLoadError} naming
 * `REWARD_MODEL_MAX_TOKENS`.
 */
async function warmUp(
  file: string,
  run: (batch: readonly EncodedPair[]) => Promise<Float32Array>,
  t: LoadedTokenizer,
  rows: number,
): Promise<void> {
  const pair: EncodedPair = {
    ids: Array.from({ length: t.maxTokens }, () => t.unkId),
    typeIds: Array.from({ length: t.maxTokens }, (_, i) => (i < t.maxTokens / 2 ? 0 : 1)),
    truncated: 0,
  };
  try {
    await run(Array.from({ length: rows }, () => pair));
  } catch (err) {
    if (err instanceof ModelLoadError) throw err;
    throw new ModelLoadError(
      file,
      `fails on a batch of ${rows} inputs of ${t.maxTokens} tokens (REWARD_MODEL_MAX_TOKENS, else the tokenizer's model_max_length): ${(err as Error).message.split("\n")[0]}; set REWARD_MODEL_MAX_TOKENS to at most the longest sequence the model takes`,
      { cause: err },
    );
  }
}
