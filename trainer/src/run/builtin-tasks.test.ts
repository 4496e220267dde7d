/** The built-in tasks are real and solvable: their gold fragment sequences score the maxima on the real services. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { bankingSuite, createAgentDojoService } from "@reward-mesh/agentdojo";
import { RolloutSchema } from "@reward-mesh/proto";
import { createToolCallService } from "@reward-mesh/tool-call";
import { AGENT_TASKS, TOOL_CALL_TASKS } from "./builtin-tool-agent-tasks.js";
import type { FragmentTaskDefinition } from "./tasks.js";

const rollout = (t: FragmentTaskDefinition, tokens: readonly number[]) =>
  create(RolloutSchema, {
    id: "r",
    runId: "t",
    groupId: "g",
    groupSize: 1,
    task: t.task as MessageInitShape<typeof RolloutSchema>["task"],
    response: t.render(tokens.map((i) => t.vocabulary[i]!)),
  });
const values = (r: { components: Array<{ name: string; value: number }> }) =>
  Object.fromEntries(r.components.map((c) => [c.name, c.value]));

describe("built-in tool_call tasks", () => {
  const svc = createToolCallService();
  for (const t of TOOL_CALL_TASKS) {
    it(`${t.id}: the gold call scores every maximum; a wrong function does not`, async () => {
      const gold = (t.task.kind as { value: { groundTruth: Array<{ name: string; argumentsJson: string }> } })
        .value.groundTruth[0]!;
      const args = Object.entries(JSON.parse(gold.argumentsJson) as Record<string, unknown>).map(([k, v]) =>
        t.vocabulary.indexOf(`${k}=${v}`),
      );
      const tokens = [t.vocabulary.indexOf(gold.name), ...args, 0];
      assert.ok(
        tokens.every((i) => i >= 0),
        "every gold fragment is in the vocabulary",
      );
      const best = values(await svc.scoreRollout(rollout(t, tokens)));
      assert.deepEqual(best, {
        format: 1,
        function_name: 0.5,
        parameter_name: 1,
        parameter_value: 1.5,
        exact_match: 1,
      });
      const wrongName = t.vocabulary.findIndex((f, i) => i > 0 && !f.includes("=") && f !== gold.name);
      const worse = values(await svc.scoreRollout(rollout(t, [wrongName, ...args, 0])));
      assert.ok(worse["function_name"]! < 0.5 && worse["exact_match"] === 0);
      const empty = values(await svc.scoreRollout(rollout(t, [0])));
      assert.equal(empty["parameter_value"], -1.5, "no call at all gets the minimum");
    });
  }
});

describe("built-in agent tasks", () => {
  const svc = createAgentDojoService();
  for (const t of AGENT_TASKS) {
    it(`${t.id}: the user's steps give utility 1; following the injection loses security`, async () => {
      const agent = (t.task.kind as { value: { userTaskId: string; injectionTaskId: string } }).value;
      const pre = bankingSuite.loadEnvironment({});
      const indexOf = (calls: Array<{ function: string; args: unknown }>) =>
        calls.map((c) => t.vocabulary.indexOf(JSON.stringify({ function: c.function, args: c.args })));
      const userSteps = indexOf(
        bankingSuite.userTasks.find((u) => u.id === agent.userTaskId)!.groundTruth(pre),
      );
      const injection = bankingSuite.injectionTasks.find((u) => u.id === agent.injectionTaskId);
      const attackSteps = injection ? indexOf(injection.groundTruth(pre)) : [];
      assert.ok(
        [...userSteps, ...attackSteps].every((i) => i > 0),
        "every ground-truth step is in the vocabulary",
      );
      const clean = values(await svc.scoreRollout(rollout(t, [...userSteps, 0])));
      assert.equal(clean["utility"], 1);
      assert.equal(clean["valid"], 1);
      if (agent.injectionTaskId) {
        assert.equal(clean["security"], 1);
        assert.ok(attackSteps.length > 0, "the attacker's steps are in the vocabulary");
        const attacked = values(await svc.scoreRollout(rollout(t, [...userSteps, ...attackSteps, 0])));
        assert.equal(attacked["security"], 0);
      }
      const nothing = values(await svc.scoreRollout(rollout(t, [0])));
      assert.equal(nothing["utility"], 0);
    });
  }
});
