/**
 * The episode runner's edge cases, against a real AgentEnvironment gRPC server (the agentdojo
 * package's session manager on a free port):
 *
 * - a text policy that ends turns on a stop string (`</tool_call>`): the runner rebuilds the
 *   conversation from what the policy generated (the learner cuts the stop out of `text` but keeps its
 *   tokens), so the transcript is exactly the sampled tokens and the episode is not `retokenized`;
 * - an episode that outgrows the learner's context stops (`context`) instead of failing the run;
 * - a session that is gone mid-episode ends that episode (`environment`), not the run;
 * - a transcript the agentdojo service would read as invalid (unclosed or broken `<tool_call>`) is the
 *   rollout's response, so the service scores it invalid; a valid one keeps Close's trajectory;
 * - a stopped run opens no more sessions; the prefix cap matches `episodes.maxTokens`.
 *
 * The text policy is a scripted byte-level policy served over the real Learner gRPC contract
 * (`serveLearner` + `createRemoteLearner`): it tokenizes and applies stop strings / end-of-sequence
 * exactly as the PyTorch learner's byte-level tokenizer and sampler do (`reward_mesh_learner/
 * tokenizer.py`, `sampling.py`), and writes scripted turns — the PyTorch learner's untrained models
 * cannot be made to write a tool call (its end-to-end episode test is `torch-learner` / experiment).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  agentEnvironmentService,
  createSessionManager,
  parseTrajectory,
  type SessionManager,
} from "@reward-mesh/agentdojo";
import { AgentEnvironment, createGrpcClient } from "@reward-mesh/proto";
import { type RunningGrpcServer, silentLogger, startGrpcServices } from "@reward-mesh/sdk";
import {
  answerOf,
  type Completion,
  checkEpisodeSettings,
  createEmbeddedLearner,
  createRemoteLearner,
  type EpisodeTask,
  type GenerateRequest,
  type Learner,
  type LearnerInfo,
  LearnerInputError,
  parseToolCalls,
  runEpisodes,
  serveLearner,
  toolCallProblem,
} from "../src/index.js";

// ── a scripted byte-level text policy (the PyTorch learner's tokenizer and stop rules) ────────

const BOS = 256;
const EOS = 257;
const bytesOf = (s: string) => [...Buffer.from(s, "utf8")];
const textOf = (ids: readonly number[]) => Buffer.from(ids.filter((i) => i < 256)).toString("utf8");

/** What the policy writes at its `turn`-th assistant turn (1-based): text, then EOS when `eos`. */
type Script = (turn: number, prompt: string) => { readonly text: string; readonly eos?: boolean };

function scriptedTextLearner(
  script: Script,
  o: {
    maxContext?: number;
    onGenerate?: (turn: number) => Promise<void>;
    /** Receives every Generate request the server gets. */
    requests?: GenerateRequest[];
    /**
     * What the learner reports as `matchedStop` instead of the stop string it cut at (`matched`, ""
     * for none): `undefined` leaves it unset, as a learner that predates
     * `LearnerCompletion.matched_stop`; a string, a learner that reports something else.
     */
    reportStop?: (c: { turn: number; matched: string; finish: "stop" | "length" }) => string | undefined;
  } = {},
): Learner {
  const maxContext = o.maxContext ?? 0;
  const info: LearnerInfo = {
    name: "scripted-byte-policy",
    policyVersion: 0,
    kind: "embedded",
    description: "scripted turns, byte-level tokens (test)",
    model: "scripted",
    architecture: "Script",
    parameterCount: 0,
    tokenizer: "byte-level",
    dtype: "float32",
    device: "cpu",
    vocabSize: 259,
    maxContext,
  };
  const complete = async (req: GenerateRequest, i: number): Promise<Completion> => {
    const p = req.prompts[i]!;
    const prompt = [BOS, ...bytesOf(p.text ?? "")];
    // As the PyTorch learner: a prompt that leaves no room for a completion is refused.
    if (maxContext > 0 && prompt.length >= maxContext)
      throw new LearnerInputError(
        `prompts[${i}]`,
        `has ${prompt.length} tokens but the model's context is ${maxContext} tokens`,
      );
    const turn = (p.text ?? "").split("<|im_start|>assistant").length - 1;
    await o.onGenerate?.(turn);
    const out = script(turn, p.text ?? "");
    const planned = [...bytesOf(out.text), ...(out.eos ? [EOS] : [])];
    let budget = p.maxTokens ?? req.maxNewTokens ?? 64;
    if (maxContext > 0) budget = Math.min(budget, maxContext - prompt.length);
    // sampling.py: a token at a time; EOS stops (text without it), a stop string stops (text cut at
    // its earliest occurrence — of those starting there the shortest —, its tokens kept, the string
    // reported as matchedStop), else the budget.
    const tokens: number[] = [];
    let finish: "stop" | "length" | undefined;
    let cut: number | undefined;
    let matched = "";
    for (const t of planned) {
      tokens.push(t);
      if (t === EOS) finish = "stop";
      else {
        const text = textOf(tokens);
        for (const s of req.stop ?? []) {
          const k = text.indexOf(s);
          if (k >= 0 && (cut === undefined || k < cut || (k === cut && s.length < matched.length)))
            [finish, cut, matched] = ["stop", k, s];
        }
        if (!finish && tokens.length >= budget) finish = "length";
      }
      if (finish) break;
    }
    const text =
      cut !== undefined
        ? textOf(tokens).slice(0, cut)
        : textOf(finish === "stop" ? tokens.slice(0, -1) : tokens);
    const finishReason = finish === "stop" ? "stop" : "length";
    const reported = o.reportStop ? o.reportStop({ turn, matched, finish: finishReason }) : matched;
    // Unset `matchedStop` only as an old server would send it (the type requires it).
    return {
      promptId: p.promptId,
      contextKey: p.contextKey,
      index: 0,
      tokenIds: tokens,
      text,
      logprobs: tokens.map(() => -0.5),
      policyVersion: 0,
      truncated: finish !== "stop",
      finishReason,
      ...(reported === undefined ? {} : { matchedStop: reported }),
      promptTokenIds: prompt,
    } as Completion;
  };
  const unsupported = () => Promise.reject(new Error("the scripted policy does not train"));
  return {
    info: async () => info,
    generate: async (req) => {
      o.requests?.push(req);
      return Promise.all(req.prompts.map((_, i) => complete(req, i)));
    },
    trainStep: unsupported,
    syncWeights: async () => ({ policyVersion: 0 }),
    saveCheckpoint: unsupported,
    computeLogprobs: unsupported,
    close: async () => {},
  };
}

// ── the environment ───────────────────────────────────────────────────────────────────────────

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

const agent = {
  suite: "banking",
  userTaskId: "user_task_0",
  injectionTaskId: "injection_task_5",
  attack: "important_instructions",
};
const textTask: EpisodeTask = { id: "bill-text", agent };

/** Serves `learner` over gRPC for `f`, with the remote client as the policy. */
async function overGrpc<T>(learner: Learner, f: (remote: Learner) => Promise<T>): Promise<T> {
  const served = await serveLearner(learner);
  const remote = createRemoteLearner(served.address);
  try {
    return await f(remote);
  } finally {
    await remote.close();
    await served.close();
  }
}

const READ = call("read_file", { file_path: "bill-december-2023.txt" });
const PAY = call("send_money", {
  recipient: "UK12345678901234567890",
  amount: 98.7,
  subject: "Car Rental",
  date: "2022-01-01",
});

describe("text policy episodes (scripted byte-level policy over gRPC, real AgentEnvironment)", () => {
  it("rebuilds turns from what the policy generated: a stop string it ended on stays in the transcript", async () => {
    // Each tool-call turn runs on past `</tool_call>`; the stop string ends it there.
    const script: Script = (turn) =>
      turn === 1
        ? { text: `${READ}\nand more` }
        : turn === 2
          ? { text: `${PAY} trailing` }
          : { text: "I paid the bill.<|im_end|>" };
    const requests: GenerateRequest[] = [];
    const [r] = await overGrpc(scriptedTextLearner(script, { requests }), (learner) =>
      runEpisodes([textTask], {
        env,
        learner,
        settings: { maxTurns: 4, maxTokens: 4096, concurrency: 1 },
        sampling: { maxNewTokens: 512, stop: ["</tool_call>"] },
        seed: 1,
      }),
    );
    assert.equal(r!.stopReason, "answer");
    assert.equal(r!.turns, 3);
    assert.equal(r!.calls, 2);
    // One Generate per turn and nothing else: the learner says which stop string ended a turn
    // (matchedStop), so no call is spent learning the stop strings' tokens.
    assert.equal(requests.length, 3, "Generate calls the learner server got");
    for (const [k, q] of requests.entries()) {
      assert.equal(q.prompts.length, 1);
      assert.equal(q.prompts[0]!.promptId, `bill-text/0/${k + 1}`);
      assert.deepEqual(q.stop, ["</tool_call>", "<|im_end|>"]);
    }
    assert.deepEqual(
      r!.messages.filter((m) => m.role === "assistant").map((m) => m.content),
      [READ, PAY, "I paid the bill."],
    );
    // The transcript is the sampled sequence (the policy's and the inserted tokens), byte for byte.
    assert.equal(textOf(r!.tokenIds), `${r!.transcript}<|im_end|>`);
    assert.ok(r!.transcript.includes(`${READ}<|im_end|>\n<|im_start|>user\n<tool_response>`));
    assert.equal(r!.invalid, undefined);
    assert.equal(r!.response, r!.trajectoryJson);
    const t = JSON.parse(r!.trajectoryJson) as { calls: Array<{ function: string }>; final_answer: string };
    assert.deepEqual(
      t.calls.map((c) => c.function),
      ["read_file", "send_money"],
    );
    assert.equal(t.final_answer, "I paid the bill.");
    // The service reads the transcript as the same episode.
    const viaText = parseTrajectory(r!.transcript, 6);
    assert.ok(viaText.ok);
    assert.deepEqual(
      viaText.calls.map((c) => c.function),
      ["read_file", "send_money"],
    );
    assert.equal(manager.size, 0);
  });

  it("puts back exactly the stop string the learner reports, of several; refuses a learner that does not report it", async () => {
    // `}</tool_call>` starts before `</tool_call>`: the learner cuts the text there and reports it.
    const script: Script = (turn) => (turn === 1 ? { text: `${READ} more` } : { text: "Done.", eos: true });
    const requests: GenerateRequest[] = [];
    const o = {
      env,
      settings: { maxTurns: 3, maxTokens: 4096, concurrency: 1 },
      sampling: { maxNewTokens: 512, stop: ["</tool_call>", "}</tool_call>"] },
      seed: 1,
    };
    const [r] = await overGrpc(scriptedTextLearner(script, { requests }), (learner) =>
      runEpisodes([textTask], { ...o, learner }),
    );
    assert.deepEqual(
      r!.messages.filter((m) => m.role === "assistant").map((m) => m.content),
      [READ, "Done."],
    );
    assert.equal(r!.calls, 1);
    assert.equal(r!.stopReason, "answer");
    assert.equal(requests.length, 2, "one Generate per turn");
    // The first turn's tokens are exactly its re-rendered text: the sequence is not `retokenized`.
    assert.equal(textOf(r!.tokenIds.slice(0, r!.spans[0]!.end)), READ);
    assert.equal(manager.size, 0);
    // A learner that predates matched_stop: the client does not guess, and says what is missing.
    await assert.rejects(
      overGrpc(scriptedTextLearner(script, { reportStop: () => undefined }), (learner) =>
        runEpisodes([textTask], { ...o, learner }),
      ),
      (e: Error) =>
        e.name === "EpisodeError" &&
        (e.cause as Error | undefined)?.name === "RemoteLearnerError" &&
        /completion 0 \(prompt 'bill-text\/0\/1'\) ended at a stop but does not say which \(LearnerCompletion\.matched_stop is unset\): the learner predates that field/.test(
          e.message,
        ),
    );
    assert.equal(manager.size, 0, "the refused episode's session is closed");
  });

  it('a learner that predates matched_stop: unset is "" where certain (no stop strings asked, the budget), refused where not', async () => {
    // The scripted policy writes "abcdef" (no end-of-sequence): 4 tokens reach the budget.
    const old = scriptedTextLearner(() => ({ text: "abcdef", eos: false }), { reportStop: () => undefined });
    await overGrpc(old, async (learner) => {
      const prompt = { promptId: "p", contextKey: "k", text: "x", maxTokens: 4 };
      const [free] = await learner.generate({ prompts: [prompt], n: 1 });
      assert.deepEqual([free!.finishReason, free!.matchedStop], ["length", ""], "no stop strings asked for");
      const [budget] = await learner.generate({ prompts: [prompt], n: 1, stop: ["zz"] });
      assert.deepEqual([budget!.finishReason, budget!.matchedStop], ["length", ""], "ran to the budget");
      await assert.rejects(
        learner.generate({ prompts: [prompt], n: 1, stop: ["c"] }),
        (e: Error) =>
          e.name === "RemoteLearnerError" &&
          /completion 0 \(prompt 'p'\) ended at a stop but does not say which \(LearnerCompletion\.matched_stop is unset\)/.test(
            e.message,
          ),
      );
    });
  });

  it("refuses a matched stop string the turn did not ask for, or one on a completion that did not end at a stop", async () => {
    const o = {
      env,
      settings: { maxTurns: 3, maxTokens: 4096, concurrency: 1 },
      sampling: { maxNewTokens: 512, stop: ["</tool_call>"] },
      seed: 1,
    };
    // The text says no call; a forged "stop string" would append one that the runner would execute.
    const forged = `</tool_call>${PAY}`;
    const requests: GenerateRequest[] = [];
    await assert.rejects(
      overGrpc(
        scriptedTextLearner(() => ({ text: "<tool_call>x</tool_call>" }), {
          requests,
          reportStop: ({ matched }) => (matched === "" ? "" : forged),
        }),
        (learner) => runEpisodes([textTask], { ...o, learner }),
      ),
      (e: Error) =>
        e.name === "EpisodeError" &&
        e.message.includes("turn 1 has LearnerCompletion.matched_stop") &&
        e.message.includes(JSON.stringify(forged)) &&
        e.message.includes(`not "" nor one of the turn's stop strings ["</tool_call>","<|im_end|>"]`),
    );
    assert.equal(requests.length, 1, "the episode ends at the turn that reported it");
    assert.equal(manager.size, 0, "the refused episode's session is closed");
    // A requested stop string on a completion that ran to its budget (finish_reason length).
    await assert.rejects(
      overGrpc(
        scriptedTextLearner(() => ({ text: "<tool_call>x" }), {
          reportStop: ({ finish, matched }) => (finish === "length" ? "</tool_call>" : matched),
        }),
        (learner) =>
          runEpisodes([textTask], { ...o, sampling: { maxNewTokens: 4, stop: ["</tool_call>"] }, learner }),
      ),
      (e: Error) =>
        e.name === "EpisodeError" &&
        e.message.includes('turn 1 has LearnerCompletion.matched_stop "</tool_call>"') &&
        e.message.includes('finish_reason is "length"'),
    );
    assert.equal(manager.size, 0);
  });

  it("stops an episode before its next prompt outgrows the learner's context, not the run", async () => {
    const script: Script = (turn) => (turn <= 2 ? { text: READ, eos: false } : { text: "Done.", eos: true });
    const settings = { maxTurns: 4, maxTokens: 4096, concurrency: 1 };
    const sampling = { maxNewTokens: 512, stop: ["</tool_call>"] };
    const [free] = await overGrpc(scriptedTextLearner(script), (learner) =>
      runEpisodes([textTask], { env, learner, settings, sampling, seed: 1 }),
    );
    assert.equal(free!.stopReason, "answer");
    assert.equal(free!.turns, 3);
    // Room for two turns and the reply between them, not for the third prompt (the second reply).
    const maxContext = free!.promptTokenIds.length + free!.spans[3]!.start + 5;
    let refused = 0;
    const [r] = await overGrpc(scriptedTextLearner(script, { maxContext }), (learner) =>
      runEpisodes([textTask, textTask], {
        env,
        learner,
        settings: { ...settings, concurrency: 2 },
        sampling,
        seed: 1,
      }).catch((err) => {
        refused++;
        throw err;
      }),
    );
    assert.equal(refused, 0);
    assert.equal(r!.stopReason, "context");
    assert.equal(r!.turns, 2);
    assert.ok(r!.promptTokenIds.length + r!.tokenIds.length < maxContext);
    assert.equal(r!.calls, 2);
    assert.equal(manager.size, 0);
  });

  it("sends an invalid transcript (an unclosed tool call) as the response, so the service scores it invalid", async () => {
    const script: Script = (turn) =>
      turn === 1
        ? { text: '<tool_call>{"name": "get_balance", "arguments": {}}', eos: true }
        : { text: "Done.", eos: true };
    const [r] = await overGrpc(scriptedTextLearner(script), (learner) =>
      runEpisodes([textTask], {
        env,
        learner,
        settings: { maxTurns: 3, maxTokens: 4096, concurrency: 1 },
        sampling: { maxNewTokens: 512 },
        seed: 1,
      }),
    );
    assert.equal(r!.calls, 0);
    assert.match(r!.invalid ?? "", /turn 1: 1 <tool_call> but 0 <\/tool_call>/);
    assert.equal(r!.response, r!.transcript);
    const scored = parseTrajectory(r!.response, 6);
    assert.equal(scored.ok, false);
    // Close's trajectory (no calls) would have been scored as a valid episode.
    assert.ok(parseTrajectory(r!.trajectoryJson, 6).ok);
  });

  it("ends an episode whose session is gone (NOT_FOUND) with stop reason environment; the others go on", async () => {
    // One session at most, and any idle session may be evicted (minEvictIdleMs 0; the default spares
    // sessions idle < 30 s): a second episode's Reset evicts the first episode's session.
    const small = createSessionManager({
      maxSessions: 1,
      idleTimeoutMs: 60_000,
      minEvictIdleMs: 0,
      maxCalls: 6,
      attackModelName: "Qwen",
      defaultAttack: "important_instructions",
    });
    const srv = await startGrpcServices([agentEnvironmentService(small)], { logger: silentLogger });
    const env1 = createGrpcClient(AgentEnvironment, srv.address);
    try {
      let evicted = false;
      const script: Script = (turn) => (turn === 1 ? { text: READ } : { text: "Done.", eos: true });
      const learner = scriptedTextLearner(script, {
        // Before the first episode's turn 1 is answered, a session of someone else's evicts it.
        onGenerate: async (turn) => {
          if (turn !== 1 || evicted) return;
          evicted = true;
          const other = await env1.reset({ task: agent });
          await env1.close({ sessionId: other.sessionId, finalAnswer: "" });
        },
      });
      const results = await overGrpc(learner, (remote) =>
        runEpisodes([textTask, textTask], {
          env: env1,
          learner: remote,
          settings: { maxTurns: 3, maxTokens: 4096, concurrency: 1 },
          sampling: { maxNewTokens: 512, stop: ["</tool_call>"] },
          seed: 1,
        }),
      );
      assert.deepEqual(
        results.map((r) => r.stopReason),
        ["environment", "answer"],
      );
      const [gone, fine] = results;
      assert.equal(gone!.trajectoryJson, "");
      assert.equal(gone!.response, gone!.transcript);
      // The service replays the transcript's calls.
      const replay = parseTrajectory(gone!.response, 6);
      assert.ok(replay.ok);
      assert.deepEqual(
        replay.calls.map((c) => c.function),
        ["read_file"],
      );
      assert.equal(fine!.response, fine!.trajectoryJson);
      assert.equal(small.size, 0);
    } finally {
      env1.raw.close();
      await srv.close(0);
      small.stop();
    }
  });
});

// ── fragment policies (the embedded learner) ──────────────────────────────────────────────────

const billTask: EpisodeTask = {
  id: "bill",
  agent,
  fragments: [READ, PAY, "<tool_call>{not json</tool_call>", "<tool_call>", "I paid the bill."],
  fragmentsPerTurn: 2,
};

describe("episode runner edges (embedded learner, real AgentEnvironment)", () => {
  it("marks episodes with broken tool-call blocks invalid and sends their transcript; valid ones send Close's trajectory", async () => {
    const learner = createEmbeddedLearner({ seed: 5, initialScale: 1 });
    const results = await runEpisodes(
      Array.from({ length: 32 }, () => billTask),
      {
        env,
        learner,
        settings: { maxTurns: 3, maxTokens: 64, concurrency: 4 },
        sampling: { maxNewTokens: 8 },
        seed: 2,
      },
    );
    let invalid = 0;
    for (const r of results) {
      const turns = r.messages.filter((m) => m.role === "assistant").map((m) => m.content);
      const broken = turns.some((t) => toolCallProblem(t) !== undefined);
      assert.equal(r.invalid !== undefined, broken, r.transcript);
      const scored = parseTrajectory(r.response, 6);
      if (broken) {
        invalid++;
        assert.equal(r.response, r.transcript);
        assert.equal(scored.ok, false, r.transcript);
      } else {
        assert.equal(r.response, r.trajectoryJson);
        assert.ok(scored.ok);
        // The service reads the same final answer from the transcript as the runner gave Close.
        const viaText = parseTrajectory(r.transcript, 6);
        assert.ok(viaText.ok);
        assert.equal(viaText.finalAnswer, r.finalAnswer);
      }
    }
    assert.ok(invalid > 0 && invalid < results.length, `${invalid} of ${results.length} invalid`);
    await learner.close();
    assert.equal(manager.size, 0);
  });

  it("opens no session once the run is stopped", async () => {
    let resets = 0;
    const counting = {
      reset: (...a: Parameters<typeof env.reset>) => {
        resets++;
        return env.reset(...a);
      },
      call: env.call.bind(env),
      close: env.close.bind(env),
    };
    const learner = createEmbeddedLearner({ seed: 5 });
    const stop = new AbortController();
    stop.abort(new Error("stopped by the test"));
    await assert.rejects(
      runEpisodes(
        Array.from({ length: 8 }, () => billTask),
        {
          env: counting,
          learner,
          settings: { maxTurns: 3, maxTokens: 64, concurrency: 4 },
          sampling: { maxNewTokens: 8 },
          seed: 2,
          signal: stop.signal,
        },
      ),
      /stopped by the test/,
    );
    assert.equal(resets, 0);
    await learner.close();
  });

  it("accepts episode sequences up to episodes.maxTokens as prefixTokenIds; rejects a longer budget by name", async () => {
    const learner = createEmbeddedLearner({ seed: 1 });
    const [c] = await learner.generate({
      prompts: [
        {
          promptId: "p",
          contextKey: "k",
          vocabulary: ["a", "b"],
          maxTokens: 1,
          prefixTokenIds: new Array(32768).fill(1),
        },
      ],
      n: 1,
    });
    assert.equal(c!.tokenIds.length, 1);
    checkEpisodeSettings({ maxTurns: 8, maxTokens: 32768, concurrency: 1 });
    assert.throws(
      () => checkEpisodeSettings({ maxTurns: 8, maxTokens: 32769, concurrency: 1 }),
      /episodes\.maxTokens is 32769; it must be an integer in \[1, 32768\]/,
    );
    await learner.close();
  });
});

describe("tool-call reading, as the agentdojo service reads it", () => {
  it("takes function before name and args before arguments; strips reasoning, an unclosed <think> too", () => {
    const [c] = parseToolCalls(
      '<tool_call>{"function": "a", "name": "b", "args": {"x": 1}, "arguments": {"y": 2}}</tool_call>',
    );
    assert.deepEqual(c, { ok: true, name: "a", argumentsJson: '{"x":1}' });
    const service = parseTrajectory(
      '<tool_call>{"function": "a", "name": "b", "args": {"x": 1}, "arguments": {"y": 2}}</tool_call>',
      6,
    );
    assert.ok(service.ok);
    assert.deepEqual(service.calls, [{ function: "a", args: { x: 1 } }]);
    assert.equal(answerOf("Paid. <think>still thinking"), "Paid.");
    assert.equal(answerOf("<think>a</think>Paid."), "Paid.");
    assert.equal(answerOf(`${READ} Paid.`), "Paid.");
    assert.equal(toolCallProblem(`${READ}</tool_call>`), "1 <tool_call> but 2 </tool_call>");
    assert.equal(toolCallProblem(READ), undefined);
    assert.match(toolCallProblem('<tool_call>{"arguments": {}}</tool_call>') ?? "", /no "name"/);
  });
});
