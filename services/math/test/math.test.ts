/**
 * The math service end to end: its real process entrypoint (worker-thread judging pool), real NATS,
 * real gRPC; pathological answers get a bounded verdict and the process keeps serving.
 */
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import {
  ComponentStatus,
  createGrpcClient,
  grpc,
  type MathTask,
  RewardResultSchema,
  RewardService,
} from "@reward-mesh/proto";
import { type MeshBus, openBus, publishRollout, readStream, Streams } from "@reward-mesh/sdk";
import {
  type LocalNats,
  makeRollout,
  type ServiceProcess,
  startServiceProcess,
  startTestNats,
  testBusOptions,
} from "@reward-mesh/sdk/testing";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
let nats: LocalNats;
let bus: MeshBus;
let service: ServiceProcess;

const mathTask = (answers: string[], extra: Partial<MathTask> = {}) => ({
  id: "m",
  kind: { case: "math" as const, value: { problem: "p", answers, ...extra } as MathTask },
});

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "math-test");
  service = await startServiceProcess(main, {
    envPrefix: "MATH",
    natsUrl: nats.url,
    env: { MATH_TIME_LIMIT_MS: "1500", MATH_WORKERS: "1" },
  });
});

after(async () => {
  await service.stop();
  await bus.close();
  await nats.stop();
});

it("scores over gRPC: correct, format and details with the extracted and normalised answer", async () => {
  const c = createGrpcClient(RewardService, service.address);
  try {
    const res = await c.score({
      rollout: makeRollout({
        response: "First \\boxed{3}, no wait: the answer is $\\boxed{\\dfrac{1}{2}}$.",
        task: mathTask(["0.5"]),
      }),
    });
    const byName = new Map(res.components.map((x) => [x.name, x]));
    assert.equal(byName.get("correct")!.value, 1);
    assert.equal(byName.get("format")!.value, 1);
    const details = JSON.parse(byName.get("correct")!.details);
    assert.equal(details.extracted, "\\dfrac{1}{2}");
    assert.equal(details.normalized, "\\frac{1}{2}");
    assert.equal(details.method, "numeric");
    assert.equal(details.boxed, 2);
    const none = await c.score({ rollout: makeRollout({ response: "I think 7", task: mathTask(["7"]) }) });
    assert.deepEqual(
      none.components.map((x) => [x.name, x.value]),
      [
        ["correct", 0],
        ["format", 0],
      ],
    );
    await assert.rejects(c.score({ rollout: makeRollout({ response: "x", task: mathTask([]) }) }), {
      code: grpc.status.INVALID_ARGUMENT,
      details: /'rollout\.task\.math\.answers' must hold at least one reference answer/,
    });
  } finally {
    c.close();
  }
});

it("gives pathological answers a bounded verdict (ERROR or TIMEOUT with a reason) and keeps serving", async () => {
  const c = createGrpcClient(RewardService, service.address);
  try {
    const cases = [
      {
        response: "\\boxed{10^{10^{10}}}",
        answers: ["5"],
        status: ComponentStatus.ERROR,
        reason: /overflows/,
      },
      {
        response: "\\boxed{\\def\\x{1}\\x}",
        answers: ["1"],
        status: ComponentStatus.ERROR,
        reason: /macros/,
      },
      {
        response: `\\boxed{${"{".repeat(500)}1${"}".repeat(500)}}`,
        answers: ["1"],
        status: ComponentStatus.ERROR,
        reason: /nests 500 levels/,
      },
      {
        response: `\\boxed{${"1+".repeat(600_000)}1}`,
        answers: ["1"],
        status: ComponentStatus.ERROR,
        reason: /more than the 2000 judged/,
      },
    ];
    for (const k of cases) {
      const res = await c.score({
        rollout: makeRollout({ response: k.response, task: mathTask(k.answers) }),
      });
      const correct = res.components.find((x) => x.name === "correct")!;
      assert.equal(correct.value, 0);
      assert.equal(correct.status, k.status, correct.details);
      assert.match(correct.details, k.reason);
    }
    // A combinatorial explosion no normaliser bounds: the worker is killed at the time limit.
    const slow = await c.score({
      rollout: makeRollout({ response: "\\boxed{\\binom{2000000000}{1000000000}}", task: mathTask(["1"]) }),
    });
    const correct = slow.components.find((x) => x.name === "correct")!;
    assert.equal(correct.value, 0);
    assert.equal(correct.status, ComponentStatus.TIMEOUT, correct.details);
    assert.match(correct.details, /time limit of 1500 ms/);
    const after = await c.score({ rollout: makeRollout({ response: "\\boxed{2}", task: mathTask(["2"]) }) });
    assert.equal(after.components.find((x) => x.name === "correct")!.value, 1);
  } finally {
    c.close();
  }
});

it("scores math rollouts published on JetStream", async () => {
  const runId = "math-e2e";
  const sent = [
    makeRollout({ runId, response: "so #### 1,000", task: mathTask(["1000"], { answerFormat: "gsm8k" }) }),
    makeRollout({ runId, response: "The answer is 1.000", task: mathTask(["1,000"]) }),
    makeRollout({ runId, response: "\\boxed{(x+1)^2}", task: mathTask(["x^2+2x+1"]) }),
  ];
  for (const r of sent) await publishRollout(bus.js, r);
  const got = await readStream(
    bus,
    Streams.rewards,
    `mesh.rewards.${runId}.math.*`,
    (d) => fromBinary(RewardResultSchema, d),
    3,
  );
  const correct = new Map(
    got.map((m) => [m.value.rolloutId, m.value.components.find((c) => c.name === "correct")!.value]),
  );
  assert.deepEqual(
    sent.map((r) => correct.get(r.id)),
    [1, 0, 1],
  );
});

it("drains and exits 0 on SIGTERM", async () => {
  assert.equal(await service.stop(), 0);
});
