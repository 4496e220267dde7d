/**
 * Small, randomly initialised Hugging Face model directories built locally (no model hub needed) by
 * `scripts/make-tiny-hf-model.py`: a Qwen2 or Llama config, random seeded weights (safetensors) and a
 * byte-level BPE tokenizer trained by `tokenizers` on the repository's own text, with a chat template.
 * What tests, the torch demo and `bench:learner` give the PyTorch learner as `learner.model`.
 * @module
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The builder script (`python3 scripts/make-tiny-hf-model.py --help`). */
export const TINY_HF_MODEL_SCRIPT = fileURLToPath(
  new URL("../../../scripts/make-tiny-hf-model.py", import.meta.url),
);

/** Options of {@link buildTinyHfModel} (the script's flags; its defaults when absent). */
export interface TinyHfModelOptions {
  /** Output directory (created). */
  readonly out: string;
  /** Interpreter with torch, transformers, tokenizers and safetensors. */
  readonly python: string;
  /** @default "qwen2" */
  readonly arch?: "qwen2" | "llama";
  /** @default 128 */
  readonly hidden?: number;
  /** @default 2 */
  readonly layers?: number;
  /** BPE vocabulary. @default 4096 */
  readonly vocab?: number;
  /** `max_position_embeddings`. @default 8192 */
  readonly maxPositions?: number;
  /** @default 0 */
  readonly seed?: number;
  /** @default 120000 */
  readonly timeoutMs?: number;
}

/** What the builder printed. */
export interface TinyHfModel {
  readonly out: string;
  readonly arch: string;
  readonly architecture: string;
  readonly parameters: number;
  readonly vocab_size: number;
  readonly max_positions: number;
  readonly eos_token: string;
}

/** The script's arguments for `o`. */
export function tinyHfModelArgs(o: TinyHfModelOptions): string[] {
  const args = [TINY_HF_MODEL_SCRIPT, "--out", o.out, "--arch", o.arch ?? "qwen2"];
  const flags: [string, number | undefined][] = [
    ["--hidden", o.hidden],
    ["--layers", o.layers],
    ["--vocab", o.vocab],
    ["--max-positions", o.maxPositions],
    ["--seed", o.seed],
  ];
  for (const [flag, v] of flags) if (v !== undefined) args.push(flag, String(v));
  return args;
}

/**
 * Builds the model directory `o.out` (a few seconds); rejects with the script's stderr when the
 * interpreter lacks a package or an option is wrong.
 */
export function buildTinyHfModel(o: TinyHfModelOptions): Promise<TinyHfModel> {
  return new Promise((resolve, reject) => {
    execFile(
      o.python,
      tinyHfModelArgs(o),
      { timeout: o.timeoutMs ?? 120_000, env: { PATH: "/usr/bin:/bin", HF_HUB_OFFLINE: "1" } },
      (err, stdout, stderr) => {
        if (err) {
          reject(
            new Error(
              `building a tiny Hugging Face model in ${o.out} with ${o.python} failed ` +
                `(needs torch, transformers, tokenizers, safetensors): ${stderr.trim().split("\n").slice(-5).join("\n") || err.message}`,
            ),
          );
          return;
        }
        const line = stdout.trim().split("\n").at(-1) ?? "";
        try {
          resolve(JSON.parse(line) as TinyHfModel);
        } catch {
          reject(new Error(`the tiny Hugging Face model builder printed no JSON line: ${stdout}\n${stderr}`));
        }
      },
    );
  });
}

/** True when `dir` holds a built model (config, weights, tokenizer). */
export function isHfModelDir(dir: string): boolean {
  return ["config.json", "model.safetensors", "tokenizer.json"].every((f) => existsSync(join(dir, f)));
}
