/**
 * Multi-turn agent episodes against a real AgentEnvironment gRPC server (the agentdojo package's own
 * session manager, on a free port) with the embedded learner as the policy: episodes reach Close,
 * sessions never leak (also on errors and stops), the loss mask covers exactly the environment's
 * inserted replies, the budgets stop episodes, a failing call is the tool response the policy sees,
 * and the episode's one sample trains through the learner contract.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { agentEnvironmentService, createSessionManager, type SessionManager } from "@reward-mesh/agentdojo";
import { AgentEnvironment, createGrpcClient } from "@reward-mesh/proto";
import { type RunningGrpcServer, silentLogger, startGrpcServices } from "@reward-mesh/sdk";
import {
  answerOf,
  createEmbeddedLearner,
  createRemoteLearner,
  type EpisodeTask,
  episodeSample,
  episodeVocabulary,
  parseToolCalls,
  runEpisodes,
  serveLearner,
  toolResponsesFragment,
} from "../src/index.js";

let manager: SessionManager;
let server: RunningGrpcServer;
let env: ReturnType<typeof createGrpcClient<typeof AgentEnvironment>>;

before(async () => {
  manager = createSessionManager({
    maxSessions: 64,
    idleTimeoutMs: 60_000,
    maxCalls: 6,
    attackModelName: "Qwen",
    defaultAttack: "important_instructions",
  });
  server = await startGrpcServices([agentEnvironmentService(manager)], { logger: silentLogger });
  env = createGrpcClient(AgentEnvironment, server.address);
});

after(async () => {
  env.raw.close();
  await server.close(0);
  manager.stop();
});

const call = (name: string, args: Record<string, unknown>) =>
  `<tool_call>{"name": ${JSON.stringify(name)}, "arguments": ${JSON.stringify(args)}}</tool_call>`;

const billTask: EpisodeTask = {
  id: "bill",
  agent: {
    suite: "banking",
    userTaskId: "user_task_0",
    injectionTaskId: "injection_task_5",
    attack: "important_instructions",
  },
  fragments: [
    call("read_file", { file_path: "bill-december-2023.txt" }),
    call("send_money", {
      recipient: "UK12345678901234567890",
      amount: 98.7,
      subject: "Car Rental",
      date: "2022-01-01",
    }),
    call("no_such_tool", {}),
    "<tool_call>{not json</tool_call>",
    "I paid the bill.",
  ],
  fragmentsPerTurn: 2,
};

const settings = { maxTurns: 4, maxTokens: 64, concurrency: 4 };

describe("episode runner (embedded learner, real AgentEnvironment)", () => {
  it("plays episodes to Close; the mask is 0 exactly on the inserted replies; no session leaks", async () => {
    const learner = createEmbeddedLearner({ seed: 3 });
    const tasks = Array.from({ length: 24 }, () => billTask);
    const results = await runEpisodes(tasks, {
      env,
      learner,
      settings,
      sampling: { maxNewTokens: 16 },
      seed: 7,
    });
    assert.equal(manager.size, 0);
    const vocabulary = episodeVocabulary(billTask, settings.maxTurns);
    for (const r of results) {
      const traj = JSON.parse(r.trajectoryJson) as { calls: unknown[]; final_answer: string };
      assert.equal(traj.calls.length, r.calls);
      assert.equal(traj.final_answer, r.finalAnswer);
      assert.ok(r.turns >= 1 && r.turns <= settings.maxTurns);
      assert.ok(["answer", "turns", "calls", "tokens"].includes(r.stopReason), r.stopReason);
      // The spans tile the sequence: policy turns (their fragments are the assistant's text) and one
      // inserted reply after every turn but the last; the mask is 0 exactly on the inserted replies.
      assert.equal(r.spans.at(-1)?.end ?? 0, r.tokenIds.length);
      r.spans.forEach((sp, k) => {
        assert.equal(sp.start, k === 0 ? 0 : r.spans[k - 1]!.end);
        assert.equal(sp.kind, k % 2 === 0 ? "policy" : "environment");
      });
      const replies = r.spans.filter((sp) => sp.kind === "environment");
      assert.equal(replies.length, r.turns - 1);
      replies.forEach((sp, k) => {
        assert.equal(sp.end - sp.start, 1);
        assert.equal(vocabulary[r.tokenIds[sp.start]!], toolResponsesFragment(k + 1));
      });
      assert.deepEqual(
        r.lossMask.flatMap((m, i) => (m === 0 ? [i] : [])),
        replies.map((sp) => sp.start),
      );
      const turnTexts = r.spans
        .filter((sp) => sp.kind === "policy")
        .map((sp) =>
          r.tokenIds
            .slice(sp.start, sp.end)
            .filter((id) => id !== 0)
            .map((id) => vocabulary[id])
            .join(""),
        );
      assert.deepEqual(
        turnTexts,
        r.messages.filter((m) => m.role === "assistant").map((m) => m.content),
      );
      assert.equal(r.logprobs.length, r.tokenIds.length);
      for (const sp of replies) assert.equal(r.logprobs[sp.start], 0);
      // The conversation: a tool message per parsed call, and the last assistant turn is the answer.
      const assistant = r.messages.filter((m) => m.role === "assistant");
      assert.equal(assistant.length, r.turns);
      assert.equal(r.finalAnswer, answerOf(assistant.at(-1)!.content));
      const parsed = assistant
        .slice(0, r.stopReason === "answer" ? -1 : undefined)
        .flatMap((m) => parseToolCalls(m.content));
      assert.equal(r.messages.filter((m) => m.role === "tool").length, parsed.length);
    }
    // Several turns happened, and failing calls were shown to the policy as their responses.
    assert.ok(results.some((r) => r.turns >= 3));
    const tools = results.flatMap((r) => r.messages.filter((m) => m.role === "tool").map((m) => m.content));
    assert.ok(
      tools.some((t) => /^ToolCallError: not valid JSON/.test(t)),
      "the unparseable call's error",
    );
    assert.ok(
      tools.some((t) => /no_such_tool/.test(t) && /Error/.test(t)),
      "the unknown tool's error",
    );
    assert.ok(
      tools.some((t) => /Car Rental|bill/i.test(t)),
      "a real tool output",
    );
    // The injection reached the policy through read_file.
    assert.ok(tools.some((t) => /This is an important message from me, Emma Johnson, to you, Qwen/.test(t)));

    // One sample per episode, masked tokens included, through the learner contract.
    const step = await learner.trainStep({
      step: 1,
      idempotencyKey: "episodes-1",
      samples: results.map((r, i) =>
        episodeSample(r, { sampleId: `e${i}`, groupId: "g", advantage: i % 2 ? 1 : -1 }),
      ),
      loss: { lossType: "grpo", epsLow: 0.2, epsHigh: 0.2, klBeta: 0, maxCompletionLength: 64 },
      optim: { lr: 0.1 },
    });
    assert.equal(step.metrics.nSamples, results.length);
    const trained = results.reduce((a, r) => a + r.lossMask.reduce((x, m) => x + m, 0), 0);
    assert.equal(step.metrics.nTokens, trained);
  });

  it("generates each turn conditioned on the episode so far, as the sample scores it", async () => {
    const learner = createEmbeddedLearner({ seed: 5, initialScale: 1 });
    const [r] = await runEpisodes([billTask], {
      env,
      learner,
      settings,
      sampling: { maxNewTokens: 16 },
      seed: 11,
    });
    const [lp] = await learner.computeLogprobs([
      {
        sequenceId: "e",
        contextKey: r!.contextKey,
        vocabularySize: r!.vocabularySize,
        tokenIds: r!.tokenIds,
      },
    ]);
    r!.lossMask.forEach((m, i) => {
      if (m === 1) assert.ok(Math.abs(lp![i]! - r!.logprobs[i]!) < 1e-12, `token ${i}`);
    });
  });

  it("drives a learner over gRPC the same way (the remote client of the embedded learner)", async () => {
    const served = await serveLearner(createEmbeddedLearner({ seed: 4, initialScale: 1 }));
    const remote = createRemoteLearner(served.address);
    const local = createEmbeddedLearner({ seed: 4, initialScale: 1 });
    try {
      const tasks = Array.from({ length: 6 }, () => billTask);
      const o = { env, settings, sampling: { maxNewTokens: 16 }, seed: 21 };
      const viaWire = await runEpisodes(tasks, { ...o, learner: remote });
      const inProcess = await runEpisodes(tasks, { ...o, learner: local });
      const view = (rs: typeof viaWire) =>
        rs.map((r) => [r.tokenIds, r.lossMask, r.logprobs, r.trajectoryJson, r.stopReason]);
      assert.deepEqual(view(viaWire), view(inProcess));
      assert.ok(viaWire.some((r) => r.turns >= 2));
    } finally {
      await remote.close();
      await served.close();
      await local.close();
    }
    assert.equal(manager.size, 0);
  });

  it("stops at the turn budget and at the token budget", async () => {
    const learner = createEmbeddedLearner({ seed: 9 });
    const oneTurn = await runEpisodes(
      Array.from({ length: 8 }, () => billTask),
      {
        env,
        learner,
        settings: { ...settings, maxTurns: 1 },
        sampling: { maxNewTokens: 16 },
        seed: 1,
      },
    );
    for (const r of oneTurn) {
      assert.equal(r.turns, 1);
      assert.equal(r.lossMask.includes(0), false);
    }
    assert.ok(oneTurn.some((r) => r.stopReason === "turns"));
    const short = await runEpisodes(
      Array.from({ length: 8 }, () => billTask),
      {
        env,
        learner,
        settings: { ...settings, maxTokens: 3 },
        sampling: { maxNewTokens: 16 },
        seed: 2,
      },
    );
    for (const r of short) assert.ok(r.tokenIds.length <= 3);
    assert.ok(short.some((r) => r.stopReason === "tokens"));
    assert.equal(manager.size, 0);
  });

  it("closes every session when an episode fails or the run is stopped", async () => {
    const learner = createEmbeddedLearner({ seed: 1 });
    const bad: EpisodeTask = {
      ...billTask,
      id: "bad",
      agent: { ...billTask.agent, userTaskId: "user_task_999" },
    };
    await assert.rejects(
      runEpisodes([billTask, billTask, bad, billTask], {
        env,
        learner,
        settings,
        sampling: { maxNewTokens: 8 },
        seed: 1,
      }),
      (e: Error) =>
        e.name === "EpisodeError" && /task 'bad'/.test(e.message) && /unknown user task/.test(e.message),
    );
    assert.equal(manager.size, 0);
    const stop = new AbortController();
    const sessionsSeen: number[] = [];
    const slow = {
      ...learner,
      generate: async (req: Parameters<typeof learner.generate>[0]) => {
        sessionsSeen.push(manager.size);
        stop.abort(new Error("stopped by the test"));
        return learner.generate(req);
      },
    };
    await assert.rejects(
      runEpisodes(
        Array.from({ length: 6 }, () => billTask),
        {
          env,
          learner: slow,
          settings,
          sampling: { maxNewTokens: 8 },
          seed: 1,
          signal: stop.signal,
        },
      ),
      /stopped by the test/,
    );
    assert.ok(Math.max(...sessionsSeen) >= 1);
    assert.equal(manager.size, 0);
  });

  it("rejects bad settings and fragment-less tasks for a fragment policy with clear errors", async () => {
    const learner = createEmbeddedLearner({ seed: 1 });
    const o = { env, learner, sampling: { maxNewTokens: 8 }, seed: 1 };
    await assert.rejects(
      runEpisodes([billTask], { ...o, settings: { ...settings, maxTurns: 0 } }),
      /episodes\.maxTurns is 0/,
    );
    await assert.rejects(
      runEpisodes([billTask], { ...o, settings: { ...settings, concurrency: 1.5 } }),
      /episodes\.concurrency/,
    );
    const { fragments: _, ...noFragments } = billTask;
    await assert.rejects(
      runEpisodes([noFragments], { ...o, settings }),
      /has no fragments: a fragment policy/,
    );
    assert.equal(manager.size, 0);
  });
});

describe("tool-call parsing (Hermes / Qwen layout)", () => {
  it("reads blocks, one object per line, aliases; reports broken blocks", () => {
    const calls = parseToolCalls(
      `<think>x</think>ok ${call("a", { x: 1 })}\n<tool_call>\n{"function": "b", "args": {}}\n{"name": "c", "parameters": {"y": 2}}\n</tool_call><tool_call>[1]</tool_call><tool_call>{"name": "d"`,
    );
    assert.deepEqual(
      calls.map((c) => (c.ok ? [c.name, c.argumentsJson] : c.error.split(":")[0])),
      [["a", '{"x":1}'], ["b", "{}"], ["c", '{"y":2}'], "ToolCallError", "ToolCallError"],
    );
    assert.equal(answerOf(`<think>hmm</think>Paid. ${call("a", {})}`), "Paid.");
  });
});
