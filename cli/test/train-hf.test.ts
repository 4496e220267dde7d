/**
 * A Hugging Face model directory as `learner.model`, tried as a new user would: `reward-mesh train
 * --config run.json --with-mesh` (its own nats-server, the tool-call service and the PyTorch learner as
 * processes) on a tool-call task file whose chat prompts carry their tool schemas (2–4k tokens each).
 * The models are built locally by `scripts/make-tiny-hf-model.py` (random weights, a BPE tokenizer
 * trained on the repository's text, a chat template): a Qwen2 with full fine-tuning, then resumed from
 * its checkpoint; a Llama with a LoRA adapter, then resumed from the saved adapter.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { freePort } from "@reward-mesh/sdk";
import { buildTinyHfModel, checkTorchAvailable, readMetrics, runPaths } from "@reward-mesh/trainer";
import { loadCliConfig } from "../src/config.js";

const bin = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));
const python = loadCliConfig(process.env).python;
checkTorchAvailable(python);

let dir: string;
let qwen: string;
let llama: string;

/** 10 tools with JSON-schema parameters: the tool list a real agent prompt carries. */
function toolSchemas(): object[] {
  const things = ["weather", "time", "flight", "hotel", "invoice"];
  const verbs = ["get", "search"];
  const tools: object[] = [];
  for (const thing of things)
    for (const verb of verbs)
      tools.push({
        type: "function",
        function: {
          name: `${verb}_${thing}`,
          description: `${verb[0]!.toUpperCase()}${verb.slice(1)} ${thing} records for a user. Returns a JSON object; fails with an error message naming the field at fault when an argument is invalid.`,
          parameters: {
            type: "object",
            properties: {
              city: { type: "string", description: "city name, e.g. Paris or Tokyo" },
              date: { type: "string", description: "ISO 8601 date (YYYY-MM-DD)" },
              limit: { type: "integer", description: "most results to return", minimum: 1, maximum: 50 },
              unit: { type: "string", enum: ["celsius", "fahrenheit"], description: "temperature unit" },
            },
            required: ["city"],
          },
        },
      });
  return tools;
}

function writeTaskFile(path: string): void {
  const tools = toolSchemas();
  const toolsJson = JSON.stringify(tools);
  const system =
    "Answer with <think>...</think> then a <tool_call> block holding one JSON call per line.\n" +
    `You may call these functions (JSON schemas):\n${tools.map((t) => JSON.stringify(t)).join("\n")}`;
  const asks = [
    [
      "weather-paris",
      "What is the weather in Paris, in celsius?",
      "get_weather",
      { city: "Paris", unit: "celsius" },
    ],
    ["time-tokyo", "What time is it in Tokyo right now?", "get_time", { city: "Tokyo" }],
    [
      "hotel-rome",
      "Find me hotels in Rome for 2025-06-01.",
      "search_hotel",
      { city: "Rome", date: "2025-06-01" },
    ],
    ["flight-oslo", "Which flights go to Oslo?", "search_flight", { city: "Oslo" }],
  ] as const;
  const lines = asks.map(([id, user, name, args]) => ({
    id,
    messages: [
      { role: "system", content: system },
      { role: "user", content: user },
    ],
    toolCall: { format: "rlla", toolsJson, groundTruth: [{ name, argumentsJson: JSON.stringify(args) }] },
  }));
  writeFileSync(path, `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
}

/** Prompt lengths in tokens as the learner renders them (each model's chat template, generation prompt). */
function promptTokens(models: string[], tasks: string): number[][] {
  const code =
    "import json,sys\nfrom transformers import AutoTokenizer\n" +
    "ls=[json.loads(l)['messages'] for l in open(sys.argv[1]) if l.strip()]\n" +
    "ts=[AutoTokenizer.from_pretrained(m,local_files_only=True) for m in sys.argv[2:]]\n" +
    "print(json.dumps([[len(t.apply_chat_template(m,tokenize=True,add_generation_prompt=True,return_dict=True)['input_ids']) for m in ls] for t in ts]))";
  const out = execFileSync(python, ["-c", code, tasks, ...models], {
    encoding: "utf8",
    env: { PATH: "/usr/bin:/bin" },
  });
  return JSON.parse(out) as number[][];
}

const runDoc = (id: string, model: string, steps: number, extra: Record<string, unknown> = {}) => ({
  run: { id, seed: 3, outputDir: join(dir, "runs") },
  tasks: { source: "jsonl", path: join(dir, "tasks.jsonl") },
  groupSize: 2,
  promptsPerStep: 2,
  steps,
  components: "rlla-tool",
  estimator: "grpo",
  loss: { type: "dapo", klBeta: 0.01 },
  optim: { lr: 0.001 },
  generation: { maxNewTokens: 12, temperature: 1 },
  learner: { kind: "torch", model, device: "cpu", dtype: "float32", threads: 2, ...extra },
  groups: { deadlineMs: 120_000 },
});

/** `reward-mesh train --config <doc> --with-mesh` as a process; resolves with its exit code and output. */
async function train(name: string, doc: object): Promise<{ code: number | null; output: string }> {
  const cfg = join(dir, `${name}.json`);
  writeFileSync(cfg, JSON.stringify(doc));
  const port = await freePort();
  const child = spawn(process.execPath, [bin, "train", "--config", cfg, "--with-mesh"], {
    env: {
      ...process.env,
      NATS_URL: `nats://127.0.0.1:${port}`,
      REWARD_MESH_NATS_STORE: join(dir, `js-${name}`),
      REWARD_MESH_LOG_DIR: join(dir, "logs"),
      REWARD_MESH_PYTHON: python,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 480_000);
  const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
  clearTimeout(timer);
  return { code, output };
}

/** The checkpointed learner state (policy version, spec). */
function learnerState(id: string): { policyVersion: number; policy: { kind: string; lora: unknown } } {
  const ckpt = runPaths(join(dir, "runs"), id).learnerCheckpointDir;
  return JSON.parse(readFileSync(join(ckpt, "learner.json"), "utf8"));
}

function assertSteps(id: string, n: number) {
  const metrics = readMetrics(runPaths(join(dir, "runs"), id).metrics);
  assert.equal(metrics.length, n);
  for (const m of metrics) {
    assert.equal(m.samples, 4, "2 prompts × G = 2 samples reached the learner");
    assert.ok(
      Number.isFinite(m.loss) && Number.isFinite(m.entropy),
      `finite loss and entropy: ${JSON.stringify(m)}`,
    );
    assert.ok("tool-call/format" in (m.components ?? {}));
  }
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "rm-train-hf-"));
  qwen = join(dir, "tiny-qwen2");
  llama = join(dir, "tiny-llama");
  await Promise.all([
    buildTinyHfModel({ python, out: qwen, arch: "qwen2", hidden: 64, layers: 2, vocab: 2048 }),
    buildTinyHfModel({ python, out: llama, arch: "llama", hidden: 64, layers: 2, vocab: 2048, seed: 1 }),
  ]);
  writeTaskFile(join(dir, "tasks.jsonl"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe("reward-mesh train --with-mesh with a local Hugging Face model directory", () => {
  it("the tool-call prompts with their schemas are 2–4k tokens under both chat templates", () => {
    const lengths = promptTokens([qwen, llama], join(dir, "tasks.jsonl"));
    assert.ok(
      lengths.flat().every((n) => n >= 2000 && n <= 4000),
      JSON.stringify(lengths),
    );
  });

  it("Qwen2, full fine-tuning: 4 steps, a checkpoint, then resumed in a fresh learner for 1 more", async () => {
    const first = await train("qwen-full", runDoc("qwen-full", qwen, 4));
    assert.equal(first.code, 0, first.output);
    assert.match(first.output, /finished run qwen-full: steps 1\.\.4/);
    assertSteps("qwen-full", 4);
    let state = learnerState("qwen-full");
    assert.equal(state.policyVersion, 4, "one policy version per step");
    assert.equal(state.policy.kind, "hf");
    const ckpt = runPaths(join(dir, "runs"), "qwen-full").learnerCheckpointDir;
    assert.ok(existsSync(join(ckpt, "model", "model.safetensors")), "full weights saved");
    const second = await train("qwen-full-2", runDoc("qwen-full", qwen, 5));
    assert.equal(second.code, 0, second.output);
    assert.match(second.output, /steps 5\.\.5 \(resumed after step 4\)/);
    assertSteps("qwen-full", 5);
    state = learnerState("qwen-full");
    assert.equal(state.policyVersion, 5);
  });

  it("Llama, LoRA: 4 steps, the adapter saved, then loaded by a fresh learner for 1 more", async () => {
    const lora = { loraRank: 4 }; // the KL reference is the base model: the adapter disabled
    const first = await train("llama-lora", runDoc("llama-lora", llama, 4, lora));
    assert.equal(first.code, 0, first.output);
    assertSteps("llama-lora", 4);
    const ckpt = runPaths(join(dir, "runs"), "llama-lora").learnerCheckpointDir;
    assert.ok(existsSync(join(ckpt, "adapter", "adapter_model.safetensors")), "the adapter is saved");
    assert.ok(!existsSync(join(ckpt, "model")), "not the base weights");
    assert.deepEqual(learnerState("llama-lora").policy.lora, { rank: 4, alpha: 16, targets: "all-linear" });
    assert.equal(learnerState("llama-lora").policyVersion, 4);
    const second = await train("llama-lora-2", runDoc("llama-lora", llama, 5, lora));
    assert.equal(second.code, 0, second.output);
    assert.match(second.output, /steps 5\.\.5 \(resumed after step 4\)/);
    assert.equal(learnerState("llama-lora").policyVersion, 5);
  });
});
