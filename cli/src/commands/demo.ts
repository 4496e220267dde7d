/**
 * `reward-mesh demo` (what `npm start` runs): brings the mesh up, publishes a sample batch of rollouts
 * through NATS JetStream, collects the rewards the services stream back, computes CorrGRPO advantages
 * for each group, prints it all, and shuts everything down.
 * @module
 */
import type { Writable } from "node:stream";
import { create, fromBinary } from "@bufbuild/protobuf";
import { type RewardResult, RewardResultSchema, type Rollout, RolloutSchema } from "@reward-mesh/proto";
import { openBus, publishRollout, readStream, Streams } from "@reward-mesh/sdk";
import { computeAdvantages } from "@reward-mesh/trainer";
import type { CliConfig } from "../config.js";
import { startMesh } from "./up.js";
import { printMesh } from "./up.js";

const PROMPTS = [
  { id: "haiku", lengths: [40, 90, 130, 200] },
  { id: "summary", lengths: [60, 110, 150, 170] },
];

/** The sample batch: two groups of four responses of growing length, with a small overlong window. */
export function sampleBatch(runId: string): Rollout[] {
  const out: Rollout[] = [];
  for (const p of PROMPTS) {
    p.lengths.forEach((len, i) => {
      out.push(
        create(RolloutSchema, {
          id: `${runId}-${p.id}-${i}`,
          runId,
          step: 0,
          groupId: p.id,
          index: i,
          groupSize: p.lengths.length,
          task: { id: p.id, prompt: `Write a ${p.id}.`, kind: { case: "custom", value: {} } },
          response: "lorem ipsum ".repeat(Math.ceil(len / 12)).slice(0, len),
          metadata: { "overlong.max_length": "160", "overlong.cache_length": "80" },
        }),
      );
    });
  }
  return out;
}

/** Runs the demo; returns the exit code. */
export async function runDemo(config: CliConfig, out: Writable): Promise<number> {
  const t0 = performance.now();
  out.write("reward-mesh demo: starting NATS JetStream and the reward services...\n");
  const mesh = await startMesh(config);
  try {
    printMesh(mesh, out);
    const bus = await openBus({ ...config.bus, natsUrl: mesh.natsUrl }, "reward-mesh-demo");
    try {
      const runId = `demo-${Date.now().toString(36)}`;
      const batch = sampleBatch(runId);
      for (const r of batch) await publishRollout(bus.js, r);
      out.write(
        `\npublished ${batch.length} rollouts on mesh.rollouts.custom.${runId}; waiting for rewards...\n`,
      );
      const expected = batch.length * mesh.services.length;
      const stored = await readStream(
        bus,
        Streams.rewards,
        `mesh.rewards.${runId}.>`,
        (d) => fromBinary(RewardResultSchema, d),
        expected,
        30_000,
      );
      if (stored.length < expected)
        throw new Error(`only ${stored.length} of ${expected} rewards arrived within 30 s`);
      const byRollout = new Map<string, RewardResult[]>();
      for (const m of stored)
        byRollout.set(m.value.rolloutId, [...(byRollout.get(m.value.rolloutId) ?? []), m.value]);
      const component = (r: Rollout, name: string) =>
        byRollout
          .get(r.id)
          ?.flatMap((x) => x.components)
          .find((c) => c.name === name)?.value ?? Number.NaN;

      // Weighted objective: avoid overlong answers (weight 1), mildly prefer shorter ones (−0.002 / char).
      const groups = PROMPTS.map((p) => batch.filter((r) => r.groupId === p.id));
      const adv = computeAdvantages(
        {
          groups: groups.map((g) => ({
            rewards: g.map((r) => [component(r, "overlong"), component(r, "length")]),
          })),
          weights: [1, -0.002],
          components: ["overlong", "length"],
        },
        { estimator: "grpo_covariance_coefficient" },
      );
      out.write(
        `\n${"rollout".padEnd(28)} ${"length".padStart(7)} ${"overlong".padStart(9)} ${"CorrGRPO A".padStart(11)}\n`,
      );
      groups.forEach((g, gi) => {
        g.forEach((r, i) => {
          out.write(
            `${r.id.padEnd(28)} ${component(r, "length").toFixed(0).padStart(7)} ${component(r, "overlong").toFixed(3).padStart(9)} ${adv.groups[gi]!.advantages[i]!.toFixed(4).padStart(11)}\n`,
          );
        });
      });
      out.write(
        `\n${stored.length} rewards streamed back over JetStream in ${((performance.now() - t0) / 1000).toFixed(1)} s total.\n`,
      );
    } finally {
      await bus.close();
    }
  } finally {
    await mesh.stop();
  }
  out.write("mesh stopped.\n");
  return 0;
}
