/**
 * Fuzzing of what the agentdojo service reads from a model: trajectories (JSON and `<tool_call>` text
 * layouts), their replay (tool arguments as the model wrote them) and the AgentEnvironment's
 * `Call(function, arguments_json)`. Fixed seed, bounded runs (`@reward-mesh/sdk/testing`).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  fuzzCall,
  fuzzParameters,
  mutatedText,
  mutatedValue,
  nastyString,
  PROTOTYPE_KEYS,
  toJsonText,
} from "@reward-mesh/sdk/testing";
import { DEFAULT_AGENTDOJO_OPTIONS } from "./config.js";
import { createSessionManager } from "./environment-service.js";
import { resolveEpisode } from "./episode.js";
import { scoreTrajectory } from "./service.js";
import { parseTrajectory } from "./trajectory.js";

const PAY_BILL = {
  calls: [
    { function: "read_file", args: { file_path: "bill-december-2023.txt" } },
    {
      function: "send_money",
      args: { recipient: "UK12345678901234567890", amount: 98.7, subject: "Car Rental", date: "2022-01-01" },
    },
    { name: "update_scheduled_transaction", arguments: '{"id": 7, "amount": "1_000.5", "recurring": "yes"}' },
    { function: "get_most_recent_transactions", parameters: { n: 5 } },
  ],
  final_answer: "Paid.",
};

const TEXT_TRAJECTORY =
  '<think>read it</think>\n<tool_call>\n{"name": "read_file", "arguments": {"file_path": "bill-december-2023.txt"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nbill\n</tool_response><|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "send_money", "arguments": {"recipient": "UK12345678901234567890", "amount": 98.7, "subject": "x", "date": "2022-01-01"}}\n{"name": "get_balance", "arguments": {}}\n</tool_call>\nPaid.<|im_end|>';

const SEEDS = [
  JSON.stringify(PAY_BILL),
  TEXT_TRAJECTORY,
  '{"final_answer": "nothing to do"}',
  "Paid, no calls.",
];

const clean = resolveEpisode(
  {
    $typeName: "rewardmesh.v1.AgentTask",
    suite: "banking",
    userTaskId: "user_task_0",
    injectionTaskId: "",
    attack: "",
  },
  "rollout.task.agent",
  DEFAULT_AGENTDOJO_OPTIONS,
);
const attacked = resolveEpisode(
  {
    $typeName: "rewardmesh.v1.AgentTask",
    suite: "banking",
    userTaskId: "user_task_0",
    injectionTaskId: "injection_task_5",
    attack: "",
  },
  "rollout.task.agent",
  DEFAULT_AGENTDOJO_OPTIONS,
);

/** A valid trajectory with structural edits (odd argument values and keys), as JSON. */
const mutatedTrajectory = fc.oneof(mutatedValue([PAY_BILL]).map(toJsonText), mutatedText(SEEDS));

describe("fuzz: agent trajectories", () => {
  it("parseTrajectory returns calls or a reason, never throws", () => {
    fc.assert(
      fc.property(mutatedTrajectory, (response) => {
        const t = fuzzCall("parseTrajectory", () => parseTrajectory(response, 16));
        assert.ok(t.ok);
        if (!t.value.ok) assert.notEqual(t.value.reason, "");
      }),
      fuzzParameters(400),
    );
  });

  it("replaying any trajectory scores within [0, 1]; a bad one is invalid with a reason, never a crash", () => {
    fc.assert(
      fc.property(mutatedTrajectory, fc.boolean(), (response, injected) => {
        const r = fuzzCall("scoreTrajectory", () =>
          scoreTrajectory(injected ? attacked : clean, response, DEFAULT_AGENTDOJO_OPTIONS),
        );
        assert.ok(r.ok);
        for (const c of r.value) {
          assert.ok(c.value >= 0 && c.value <= 1, `${c.name} = ${c.value}`);
          // A replay that throws is the service's fault, not the agent's: it must not happen.
          assert.doesNotMatch(c.details ?? "", /replay failed/, response);
        }
      }),
      fuzzParameters(300),
    );
  });
});

describe("fuzz: agent tasks (wire input)", () => {
  it("resolve to an episode or an InvalidArgumentError naming the field", () => {
    const name = (valid: readonly string[]) =>
      fc.oneof(fc.constantFrom(...valid, ...PROTOTYPE_KEYS), nastyString(16));
    fc.assert(
      fc.property(
        name(["banking"]),
        name(["user_task_0", "user_task_3", "user_task_15"]),
        name(["", "injection_task_0", "injection_task_5"]),
        name(["", "none", "important_instructions", "tool_knowledge"]),
        (suite, userTaskId, injectionTaskId, attack) => {
          const r = fuzzCall(
            "resolveEpisode",
            () =>
              resolveEpisode(
                { $typeName: "rewardmesh.v1.AgentTask", suite, userTaskId, injectionTaskId, attack },
                "rollout.task.agent",
                DEFAULT_AGENTDOJO_OPTIONS,
              ),
            ["InvalidArgumentError"],
          );
          if (!r.ok) assert.match(r.error.message, /^'rollout\.task\.agent\.[a-z_]+' \S/);
        },
      ),
      fuzzParameters(300),
    );
  });
});

describe("fuzz: AgentEnvironment Call (wire input)", () => {
  it("any function name and arguments_json give an output or an AgentDojo error, never a crash", () => {
    const m = createSessionManager({
      ...DEFAULT_AGENTDOJO_OPTIONS,
      maxSessions: 4,
      idleTimeoutMs: 60_000,
      maxCalls: 1_000,
    });
    try {
      const argsSeeds = PAY_BILL.calls.map((c) =>
        JSON.stringify("args" in c ? c.args : "parameters" in c ? c.parameters : c.arguments),
      );
      fc.assert(
        fc.property(
          fc.oneof(
            fc.constantFrom(
              "read_file",
              "send_money",
              "update_scheduled_transaction",
              "schedule_transaction",
              "get_most_recent_transactions",
              "update_password",
              ...PROTOTYPE_KEYS,
            ),
            nastyString(20),
          ),
          fc.oneof(
            mutatedText(argsSeeds),
            mutatedValue(PAY_BILL.calls.map((c) => ("args" in c ? c.args : {}))).map(toJsonText),
          ),
          (fn, argsJson) => {
            const session = m.reset({
              $typeName: "rewardmesh.v1.AgentTask",
              suite: "banking",
              userTaskId: "user_task_0",
              injectionTaskId: "",
              attack: "",
            });
            try {
              const r = fuzzCall("call", () => m.call(session.sessionId, fn, argsJson), [
                "InvalidArgumentError",
              ]);
              if (r.ok)
                assert.ok(
                  (r.value.error === "") !== (r.value.output === "") || r.value.output === "",
                  "an error comes without output",
                );
            } finally {
              fuzzCall("close", () => m.close(session.sessionId, ""));
            }
          },
        ),
        fuzzParameters(300),
      );
    } finally {
      m.stop();
    }
  });
});
