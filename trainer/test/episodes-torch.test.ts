/**
 * The text-policy path of multi-turn episodes end to end on the CPU: the PyTorch learner
 * (`python3 -m reward_mesh_learner serve`, `builtin:tiny4k`: the tiny byte-level transformer with a
 * 4096-token context, randomly initialised) plays AgentDojo banking episodes through the Learner
 * contract against a real AgentEnvironment gRPC server (the agentdojo package's session manager on a
 * free port), shown compact tool schemas (`episodes.tools: compact`; the full ones are ~5.8 KB of prompt).
 * Each episode becomes one sample; TrainStep takes them and counts exactly the policy's tokens as
 * active (the loss mask is 0 exactly on the environment-inserted stretches). A one-byte stop string
 * ("e") makes some turn end at a stop string the learner reports (`matched_stop`) and the runner puts
 * back; the learner's own tokenizer then reproduces the turn's sampled tokens from the rebuilt text.
 *
 * Skips, printing why, when the repository's `.venv/bin/python` (or `REWARD_MESH_PYTHON`) lacks torch /
 * grpcio / protobuf (CI has them: `scripts/bootstrap.sh --with-torch`).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  agentEnvironmentService,
  createAgentDojoService,
  createSessionManager,
  DEFAULT_AGENTDOJO_OPTIONS,
  type SessionManager,
} from "@reward-mesh/agentdojo";
import { AgentEnvironment, createGrpcClient } from "@reward-mesh/proto";
import {
  type MeshBus,
  openBus,
  type RunningGrpcServer,
  type RunningService,
  silentLogger,
  startGrpcServices,
  startRewardService,
} from "@reward-mesh/sdk";
import { type LocalNats, startTestNats, testBusOptions, testRuntimeOptions } from "@reward-mesh/sdk/testing";
import {
  type Completion,
  checkTorchAvailable,
  createRemoteLearner,
  DEFAULT_PYTHON,
  type EpisodeResult,
  type EpisodeTask,
  episodeSample,
  type GenerateRequest,
  type Learner,
  loadBuiltinTasks,
  readMetrics,
  resolveRunConfig,
  runEpisodes,
  runPaths,
  runTraining,
  startTorchLearner,
  type TorchLearnerProcess,
  withCompactTools,
} from "../src/index.js";

const PYTHON = process.env["REWARD_MESH_PYTHON"] || DEFAULT_PYTHON;
let skip: string | false = false;
try {
  checkTorchAvailable(PYTHON);
} catch (err) {
  skip = `the PyTorch learner cannot start here: ${(err as Error).message}`;
  console.log(`# skipped: ${skip}`);
}

const TASKS: EpisodeTask[] = [
  {
    id: "banking-user_task_0-injection_task_5",
    agent: {
      suite: "banking",
      userTaskId: "user_task_0",
      injectionTaskId: "injection_task_5",
      attack: "important_instructions",
    },
  },
  { id: "banking-user_task_4", agent: { suite: "banking", userTaskId: "user_task_4" } },
];
const SETTINGS = { maxTurns: 2, maxTokens: 64, concurrency: 2 };
const BOS = 256; // the byte-level tokenizer's specials: BOS 256, EOS 257

let manager: SessionManager;
let server: RunningGrpcServer;
let env: ReturnType<typeof createGrpcClient<typeof AgentEnvironment>>;
let proc: TorchLearnerProcess;
let learner: Learner;
let nats: LocalNats;
let bus: MeshBus;
let reward: RunningService;
let dir: string;

before(async () => {
  if (skip) return;
  manager = createSessionManager({
    maxSessions: 16,
    idleTimeoutMs: 60_000,
    maxCalls: 8,
    attackModelName: "Qwen",
    defaultAttack: "important_instructions",
  });
  server = await startGrpcServices([agentEnvironmentService(manager)], { logger: silentLogger });
  env = createGrpcClient(AgentEnvironment, server.address);
  proc = await startTorchLearner({
    python: PYTHON,
    model: "builtin:tiny4k",
    dtype: "float32",
    device: "cpu",
    threads: 2,
    seed: 11,
  });
  learner = createRemoteLearner(proc.address, { timeoutMs: 120_000 });
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "episodes-torch-test");
  reward = await startRewardService(
    createAgentDojoService(DEFAULT_AGENTDOJO_OPTIONS),
    testRuntimeOptions(nats.url),
    silentLogger,
  );
  dir = mkdtempSync(join(tmpdir(), "rm-episodes-torch-"));
});
after(async () => {
  if (skip) return;
  await learner?.close();
  if (proc) assert.equal(await proc.stop(), 0, proc.stderr());
  env?.raw.close();
  await server?.close(0);
  manager?.stop();
  await reward?.close(1000);
  await bus?.close();
  await nats?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The loss mask is 0 exactly on the environment spans, the spans tile the sequence in turn order. */
function checkSequence(r: EpisodeResult): void {
  const n = r.tokenIds.length;
  assert.equal(r.lossMask.length, n);
  assert.equal(r.logprobs.length, n);
  let at = 0;
  for (const s of r.spans) {
    assert.equal(s.start, at, `spans tile the sequence: ${JSON.stringify(r.spans)}`);
    for (let i = s.start; i < s.end; i++) {
      assert.equal(r.lossMask[i], s.kind === "policy" ? 1 : 0, `lossMask[${i}] in a ${s.kind} span`);
      if (s.kind === "environment") assert.equal(r.logprobs[i], 0);
      else assert.ok(r.logprobs[i]! <= 0 && Number.isFinite(r.logprobs[i]!));
    }
    at = s.end;
  }
  assert.equal(at, n);
  assert.equal(r.spans.filter((s) => s.kind === "policy").length, r.turns);
  assert.ok(n <= SETTINGS.maxTokens, `${n} tokens within the episode budget`);
}

describe("text-policy episodes through the PyTorch learner (builtin:tiny4k, CPU)", { skip }, () => {
  it("plays episodes, one sample each, and TrainStep trains exactly the policy's tokens", async () => {
    const info = await learner.info();
    assert.equal(info.tokenizer, "byte-level");
    // Every Generate RPC the runner sends to the PyTorch learner, with what came back.
    const calls: Array<{ req: GenerateRequest; out: Completion[] }> = [];
    const counted: Learner = {
      ...learner,
      async generate(req) {
        const out = await learner.generate(req);
        calls.push({ req, out });
        return out;
      },
    };
    const t0 = performance.now();
    // A one-byte stop string, so that some turn ends at a stop string the learner cuts out of `text`
    // and the runner puts back (the random model never writes `<|im_end|>`): seed 12 has a turn end at
    // "e" (its first token), asserted below.
    const results = await runEpisodes([...TASKS, ...TASKS], {
      env: withCompactTools(env),
      learner: counted,
      info,
      settings: SETTINGS,
      sampling: { maxNewTokens: 24, temperature: 1, stop: ["e"] },
      seed: 12,
    });
    const playMs = performance.now() - t0;
    assert.equal(results.length, 4);
    assert.equal(manager.size, 0, "every session is closed");
    // Only turns are generated: one Generate per turn (plus the turn whose tokens ended the episode,
    // `retokenized` / `tokens`), none to learn which stop string ended a turn — the learner says so.
    for (const { req, out } of calls) {
      assert.equal(req.prompts.length, 1);
      assert.match(req.prompts[0]!.promptId, /^banking-[^/]+\/\d+\/\d+$/, "a turn's prompt");
      assert.deepEqual(req.stop, ["e", "<|im_end|>"]);
      for (const c of out) {
        assert.ok(["", "e", "<|im_end|>"].includes(c.matchedStop), `matched_stop ${c.matchedStop}`);
        assert.equal(c.matchedStop !== "", c.finishReason === "stop" && c.tokenIds.at(-1) !== 257);
      }
    }
    // The turns that ended at "e": cut out of `text`, its token kept, put back in the conversation.
    const hits = calls.flatMap(({ out }) => out).filter((c) => c.matchedStop === "e");
    assert.ok(hits.length > 0, "some turn ended at the stop string 'e'");
    for (const c of hits) {
      assert.ok(!c.text.includes("e"), c.text);
      assert.equal(c.tokenIds.at(-1), "e".charCodeAt(0), "the stop string's token is kept");
      const [taskId, i, turn] = c.promptId.split("/");
      const r = results[Number(i)]!;
      assert.equal(r.taskId, taskId);
      const said = r.messages.filter((m) => m.role === "assistant")[Number(turn) - 1]?.content;
      assert.equal(said, `${c.text}e`, "the runner put the stop string back");
      assert.ok(r.transcript.includes(said));
    }
    // Put back, the turn's text retokenizes to exactly its sampled tokens: the learner's own tokens for
    // the next prompt (as the runner builds it) start with the episode so far, so the next turn would
    // not be `retokenized`; without the stop string they do not. (The random model ends every episode
    // at its first turn — it writes no tool call —, so the runner itself never builds that prompt here.)
    const utf8 = new TextDecoder("utf-8", { fatal: true });
    const valid = (ids: number[]) => {
      try {
        utf8.decode(Uint8Array.from(ids.map((t) => (t < 256 ? t : 0xff))));
        return true;
      } catch {
        return false;
      }
    };
    const clean = hits.find((c) => c.promptId.endsWith("/1") && valid(c.tokenIds));
    assert.ok(clean, "some first turn that ended at 'e' is valid UTF-8 (seed 12)");
    const r = results[Number(clean.promptId.split("/")[1])]!;
    const prompt = Buffer.from(r.promptTokenIds.slice(1)).toString("utf8");
    const reply =
      "<|im_end|>\n<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n<|im_start|>assistant\n";
    const next = (promptId: string, said: string) => ({
      promptId,
      contextKey: r.taskId,
      text: prompt + said + reply,
      maxTokens: 1,
    });
    const [putBack, without] = await learner.generate({
      prompts: [next("put-back", `${clean.text}e`), next("without", clean.text)],
      n: 1,
      seed: 1,
    });
    const sofar = [...r.promptTokenIds, ...r.tokenIds.slice(0, r.spans[0]!.end)];
    assert.deepEqual(putBack!.promptTokenIds.slice(0, sofar.length), sofar);
    assert.notDeepEqual(without!.promptTokenIds.slice(0, sofar.length), sofar);
    results.forEach((r, i) => {
      const n = calls.filter((c) => c.req.prompts[0]!.promptId.startsWith(`${r.taskId}/${i}/`)).length;
      const lastNotKept = r.stopReason === "retokenized" || r.stopReason === "tokens" ? 1 : 0;
      assert.ok(
        n === r.turns || n === r.turns + lastNotKept,
        `episode ${i}: ${n} Generate calls, ${r.turns} turns`,
      );
    });
    const known = new Set(["answer", "turns", "tokens", "calls", "retokenized", "context", "environment"]);
    for (const r of results) {
      assert.ok(known.has(r.stopReason), r.stopReason);
      assert.notEqual(r.stopReason, "retokenized");
      assert.ok(r.turns >= 1 && r.turns <= SETTINGS.maxTurns);
      // The first prompt: BOS, then the ChatML conversation's bytes, with the compact tool schemas.
      assert.equal(r.promptTokenIds[0], BOS);
      const prompt = Buffer.from(r.promptTokenIds.slice(1)).toString("utf8");
      assert.match(prompt, /^<\|im_start\|>system\n/);
      assert.match(
        prompt,
        /<tools>\n\{"name":"get_iban","description":"Get the IBAN of the current bank account\.","parameters":\{\}\}/,
      );
      assert.doesNotMatch(prompt, /Input schema for/, "compact schemas, not the environment's");
      assert.ok(prompt.endsWith("<|im_end|>\n<|im_start|>assistant\n"));
      assert.ok(
        r.promptTokenIds.length < 4096 - 64,
        `${r.promptTokenIds.length}-token prompt fits the context`,
      );
      checkSequence(r);
      // Close's trajectory is what the agentdojo service scores.
      assert.ok("calls" in (JSON.parse(r.trajectoryJson) as object));
    }
    // One sample per episode; TrainStep's active tokens are exactly the policy's.
    const samples = results.map((r, i) =>
      episodeSample(r, { sampleId: `e${i}`, groupId: r.taskId, advantage: i % 2 === 0 ? 1 : -1 }),
    );
    const policyTokens = results.reduce((a, r) => a + r.lossMask.reduce((x, y) => x + y, 0), 0);
    const t1 = performance.now();
    const step = await learner.trainStep({
      step: 1,
      idempotencyKey: "episodes-torch-1",
      samples,
      loss: {
        lossType: "dapo",
        epsLow: 0.2,
        epsHigh: 0.28,
        klBeta: 0,
        maxCompletionLength: SETTINGS.maxTokens,
      },
      optim: { lr: 1e-3 },
    });
    const trainMs = performance.now() - t1;
    assert.equal(step.policyVersion, 1);
    assert.equal(step.metrics.nSamples, 4);
    assert.equal(step.metrics.nTokens, policyTokens);
    assert.ok(Number.isFinite(step.metrics.loss));
    const inserted = results.reduce((a, r) => a + r.lossMask.filter((m) => m === 0).length, 0);
    console.log(
      `# ${results.length} episodes in ${(playMs / 1000).toFixed(1)} s: prompts ${results.map((r) => r.promptTokenIds.length).join("/")} tokens, ` +
        `stop reasons ${results.map((r) => r.stopReason).join(", ")}, turns ${results.map((r) => r.turns).join("/")}, ` +
        `${policyTokens} policy + ${inserted} inserted tokens; TrainStep ${(trainMs / 1000).toFixed(1)} s, loss ${step.metrics.loss.toFixed(4)}`,
    );
  });

  it("runTraining with episodes.tools compact: one step of episodes scored through the mesh; full schemas overflow the context", async () => {
    const doc = (id: string, tools: "full" | "compact") => ({
      run: { id, seed: 2, outputDir: dir },
      tasks: { sets: ["agent"] },
      groupSize: 2,
      promptsPerStep: 1,
      steps: 1,
      components: "agentdojo",
      estimator: "grpo",
      loss: { type: "dapo", maxCompletionLength: SETTINGS.maxTokens },
      optim: { lr: 1e-3 },
      generation: { maxNewTokens: 16, temperature: 1 },
      groups: { deadlineMs: 30_000 },
      episodes: { environment: server.address, ...SETTINGS, tools },
    });
    const tasks = await loadBuiltinTasks(["agent"], { address: server.address });
    // The environment's own schemas make a ~5.8 K-token first prompt: more than builtin:tiny4k holds.
    await assert.rejects(
      runTraining({ config: resolveRunConfig(doc("full", "full")), tasks, bus, learner }),
      /context is 4096 tokens/,
    );
    assert.equal(manager.size, 0, "the failed episodes' sessions are closed");
    const config = resolveRunConfig(doc("compact", "compact"));
    const before = (await learner.info()).policyVersion;
    const r = await runTraining({ config, tasks, bus, learner });
    assert.equal(r.lastStep, 1);
    assert.equal((await learner.info()).policyVersion, before + 1);
    const [m] = readMetrics(runPaths(dir, "compact").metrics) as unknown as [
      { samples: number; episodes: { count: number; stopReasons: Record<string, number> } },
    ];
    assert.equal(m.episodes.count, 2);
    assert.equal(m.samples, 2, "one sample per episode reached TrainStep");
    assert.equal(manager.size, 0);
    console.log(`# runTraining: stop reasons ${JSON.stringify(m.episodes.stopReasons)}`);
  });
});
