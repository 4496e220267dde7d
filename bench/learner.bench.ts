/**
 * The PyTorch learner on the CPU: TrainStep samples/s in process (Python calling the learner core) vs
 * over gRPC (this process → `python3 -m reward_mesh_learner serve`), on the same batch of 64 samples ×
 * 256 completion tokens (+ 32 prompt tokens), and Generate tokens/s for `builtin:tiny`, both ways.
 *
 * Side by side in one run: in-process repeats, then gRPC repeats, then in-process again (each after one
 * untimed warm-up step); medians and the gRPC/in-process ratio. Because two medians on a shared 2-core
 * machine drift by ±15 %, the wire's own cost is also measured directly: the same batch sent with every
 * sample stale, so the learner encodes, streams, decodes and validates it and then has nothing to train. Writes `bench/results/learner.json`.
 *
 * Then the Hugging Face path's CPU ratio (`learner_hf_ratio.py`): a Qwen2 directory built locally by
 * `scripts/make-tiny-hf-model.py` (hidden 256, 2 layers, 4096-token BPE; ~2.6M parameters), the
 * learner's TrainStep in process against a plain PyTorch step (same model, batch of 8 × (512 prompt +
 * 128 completion) tokens, DAPO loss, AdamW), alternating, medians and the ratio, for full fine-tuning
 * and LoRA (rank 8). Needs transformers + tokenizers (+ peft) in the interpreter.
 *
 * Run: `npm run bench:learner` (≈ 2–3 min on 2 cores). Knobs: BENCH_REPEATS (5), BENCH_MODEL
 * (builtin:tiny), BENCH_THREADS (2), REWARD_MESH_PYTHON (the interpreter; default the learner's).
 * Goal: gRPC overhead < 10 % of the TrainStep time.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  buildTinyHfModel,
  checkTorchAvailable,
  createRemoteLearner,
  createRng,
  DEFAULT_PYTHON,
  type Sample,
  startTorchLearner,
  TORCH_LEARNER_DIR,
} from "@reward-mesh/trainer";
import { machineInfo, writeBenchResult } from "./results.js";

const SAMPLES = 64;
const PROMPT_TOKENS = 32;
const TOKENS = 256;
const REPEATS = Number(process.env["BENCH_REPEATS"] ?? 5);
const MODEL = process.env["BENCH_MODEL"] ?? "builtin:tiny";
const THREADS = Number(process.env["BENCH_THREADS"] ?? 2);
const HF_BATCH = { samples: 8, promptTokens: 512, completionTokens: 128 };
const GENERATE = {
  prompts: ["Say something: ", "def f(x):", "The answer is", "<tool_call>"],
  n: 8,
  maxNewTokens: 64,
};

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** A reproducible batch of byte-level tokens (ids 0..255), advantages ±1 per group of 8. */
function makeBatch(): Sample[] {
  const rng = createRng(11);
  const ids = (n: number) => Array.from({ length: n }, () => Math.floor(rng() * 256));
  return Array.from({ length: SAMPLES }, (_, i) => ({
    sampleId: `b${i}`,
    groupId: `g${i >> 3}`,
    contextKey: "bench",
    vocabularySize: 0,
    promptTokenIds: [256, ...ids(PROMPT_TOKENS - 1)], // BOS + bytes
    tokenIds: ids(TOKENS),
    rolloutLogprobs: Array.from({ length: TOKENS }, () => -5.5),
    advantage: i % 2 === 0 ? 1 : -1,
    policyVersion: 0,
  }));
}

/** The repository's .venv (bash scripts/bootstrap.sh --with-torch), or `REWARD_MESH_PYTHON`. */
const PYTHON = process.env["REWARD_MESH_PYTHON"] || DEFAULT_PYTHON;

function inProcess(batchFile: string, prefix: string) {
  const r = spawnSync(
    PYTHON,
    [
      fileURLToPath(new URL("./learner_inprocess.py", import.meta.url)),
      ...["--batch", batchFile, "--model", MODEL, "--threads", String(THREADS)],
      ...["--repeats", String(REPEATS), "--key-prefix", prefix],
    ],
    { env: { PATH: "/usr/bin:/bin", PYTHONPATH: TORCH_LEARNER_DIR }, encoding: "utf8", timeout: 1_200_000 },
  );
  if (r.status !== 0) throw new Error(`in-process bench failed:\n${r.stderr}`);
  return JSON.parse(r.stdout) as { trainStepSeconds: number[]; generateTokensPerSecond: number[] };
}

async function overGrpc(samples: Sample[]) {
  const proc = await startTorchLearner({
    python: PYTHON,
    model: MODEL,
    device: "cpu",
    dtype: "float32",
    threads: THREADS,
  });
  const learner = createRemoteLearner(proc.address);
  try {
    const trainStepSeconds: number[] = [];
    const transportSeconds: number[] = [];
    const step = (key: string, maxStaleness?: number) =>
      learner.trainStep({
        step: 0,
        idempotencyKey: key,
        samples,
        loss: { lossType: "dapo", epsLow: 0.2, epsHigh: 0.28, klBeta: 0, maxCompletionLength: TOKENS },
        optim: { lr: 1e-4 },
        ...(maxStaleness === undefined ? {} : { maxStaleness }),
      });
    await step("grpc-warmup"); // untimed, as the in-process half does
    for (let r = 0; r < REPEATS; r++) {
      const t0 = performance.now();
      await step(`grpc-${r}`);
      trainStepSeconds.push((performance.now() - t0) / 1000);
      // The same batch, every sample stale (version 0 < current): encoded, streamed, decoded and validated,
      // then nothing to train — what the wire costs a step, measured apart from the machine's noise.
      const t1 = performance.now();
      await step(`grpc-stale-${r}`, 0);
      transportSeconds.push((performance.now() - t1) / 1000);
    }
    const generateTokensPerSecond: number[] = [];
    for (let r = 0; r < REPEATS; r++) {
      const t0 = performance.now();
      const out = await learner.generate({
        prompts: GENERATE.prompts.map((text, i) => ({ promptId: `g${i}`, contextKey: "bench", text })),
        n: GENERATE.n,
        maxNewTokens: GENERATE.maxNewTokens,
        seed: r,
      });
      const dt = (performance.now() - t0) / 1000;
      generateTokensPerSecond.push(out.reduce((a, c) => a + c.tokenIds.length, 0) / dt);
    }
    return { trainStepSeconds, transportSeconds, generateTokensPerSecond, info: await learner.info() };
  } finally {
    await learner.close();
    await proc.stop();
  }
}

interface HfRatio {
  readonly model: { architecture: string; parameterCount: number; tokenizer: string; vocabSize: number };
  readonly learnerSeconds: number[];
  readonly plainSeconds: number[];
  readonly learnerMedianSeconds: number;
  readonly plainMedianSeconds: number;
  readonly ratio: number;
}

/** The HF path: learner TrainStep vs a plain PyTorch step, side by side (`learner_hf_ratio.py`). */
function hfRatio(modelDir: string, loraRank: number): HfRatio {
  const r = spawnSync(
    PYTHON,
    [
      fileURLToPath(new URL("./learner_hf_ratio.py", import.meta.url)),
      ...["--model", modelDir, "--threads", String(THREADS), "--repeats", String(REPEATS)],
      ...["--samples", String(HF_BATCH.samples), "--prompt-tokens", String(HF_BATCH.promptTokens)],
      ...["--completion-tokens", String(HF_BATCH.completionTokens), "--lora-rank", String(loraRank)],
    ],
    {
      env: { PATH: "/usr/bin:/bin", PYTHONPATH: TORCH_LEARNER_DIR, HF_HUB_OFFLINE: "1" },
      encoding: "utf8",
      timeout: 1_200_000,
    },
  );
  if (r.status !== 0) throw new Error(`the HF ratio bench failed:\n${r.stderr}`);
  return JSON.parse(r.stdout) as HfRatio;
}

const summary = (x: HfRatio) => ({
  learnerSeconds: x.learnerSeconds,
  plainSeconds: x.plainSeconds,
  learnerMedianSeconds: x.learnerMedianSeconds,
  plainMedianSeconds: x.plainMedianSeconds,
  ratio: x.ratio,
});

/** Builds the model (seconds) and times full fine-tuning and LoRA. */
async function hfPath(dir: string) {
  const modelDir = join(dir, "tiny-qwen2");
  const built = await buildTinyHfModel({
    python: PYTHON,
    out: modelDir,
    arch: "qwen2",
    hidden: 256,
    layers: 2,
  });
  const full = hfRatio(modelDir, 0);
  const lora = hfRatio(modelDir, 8);
  return {
    model: {
      ...full.model,
      built: "scripts/make-tiny-hf-model.py --arch qwen2 --hidden 256 --layers 2",
      parameters: built.parameters,
    },
    batch: { ...HF_BATCH, loss: "dapo" },
    threads: THREADS,
    fullFineTuning: summary(full),
    lora: { rank: 8, ...summary(lora) },
    what: "learner TrainStep in process / a plain PyTorch step (logits_to_keep forward, token-mean PPO-clip, clip 1, AdamW) on the same model and batch",
  };
}

checkTorchAvailable(PYTHON);
const dir = mkdtempSync(join(tmpdir(), "bench-learner-"));
try {
  const samples = makeBatch();
  const batchFile = join(dir, "batch.json");
  writeFileSync(batchFile, JSON.stringify({ samples, tokens: TOKENS, generate: GENERATE }));
  const a = inProcess(batchFile, "a");
  const g = await overGrpc(samples);
  const b = inProcess(batchFile, "b");
  const hf = await hfPath(dir);
  const inproc = [...a.trainStepSeconds, ...b.trainStepSeconds];
  const inprocMedian = median(inproc);
  const grpcMedian = median(g.trainStepSeconds);
  const result = {
    benchmark: "learner",
    machine: machineInfo(),
    model: { name: MODEL, parameterCount: g.info.parameterCount, dtype: "float32", threads: THREADS },
    batch: { samples: SAMPLES, promptTokens: PROMPT_TOKENS, completionTokens: TOKENS, loss: "dapo" },
    repeats: REPEATS,
    trainStep: {
      inProcessSeconds: inproc,
      grpcSeconds: g.trainStepSeconds,
      inProcessMedianSeconds: inprocMedian,
      grpcMedianSeconds: grpcMedian,
      inProcessSamplesPerSecond: SAMPLES / inprocMedian,
      grpcSamplesPerSecond: SAMPLES / grpcMedian,
      grpcOverhead: grpcMedian / inprocMedian - 1,
      grpcTransportSeconds: g.transportSeconds,
      grpcTransportMedianSeconds: median(g.transportSeconds),
      grpcTransportShare: median(g.transportSeconds) / inprocMedian,
      goal: "grpcOverhead < 0.10 (grpcTransportShare is the same cost measured directly, free of the machine's drift)",
    },
    generate: {
      prompts: GENERATE.prompts.length,
      n: GENERATE.n,
      maxNewTokens: GENERATE.maxNewTokens,
      inProcessTokensPerSecondMedian: median([...a.generateTokensPerSecond, ...b.generateTokensPerSecond]),
      grpcTokensPerSecondMedian: median(g.generateTokensPerSecond),
    },
    huggingFace: hf,
    time: new Date().toISOString(),
  };
  const path = writeBenchResult("learner", result);
  console.log(
    `TrainStep ${SAMPLES}×${TOKENS}: in-process ${inprocMedian.toFixed(3)} s (${result.trainStep.inProcessSamplesPerSecond.toFixed(1)} samples/s), ` +
      `gRPC ${grpcMedian.toFixed(3)} s (${result.trainStep.grpcSamplesPerSecond.toFixed(1)} samples/s), overhead ${(100 * result.trainStep.grpcOverhead).toFixed(1)} %; ` +
      `the wire alone (stale batch) ${result.trainStep.grpcTransportMedianSeconds.toFixed(3)} s = ${(100 * result.trainStep.grpcTransportShare).toFixed(1)} % of a step\n` +
      `Generate ${MODEL}: in-process ${result.generate.inProcessTokensPerSecondMedian.toFixed(0)} tokens/s, gRPC ${result.generate.grpcTokensPerSecondMedian.toFixed(0)} tokens/s\n` +
      `HF ${hf.model.architecture} (${hf.model.parameters} parameters) ${HF_BATCH.samples}×(${HF_BATCH.promptTokens}+${HF_BATCH.completionTokens}): ` +
      `learner / plain PyTorch step ${hf.fullFineTuning.ratio.toFixed(3)} (full, ${hf.fullFineTuning.learnerMedianSeconds.toFixed(3)} s vs ${hf.fullFineTuning.plainMedianSeconds.toFixed(3)} s), ` +
      `${hf.lora.ratio.toFixed(3)} (LoRA r8, ${hf.lora.learnerMedianSeconds.toFixed(3)} s vs ${hf.lora.plainMedianSeconds.toFixed(3)} s)\n${path}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
