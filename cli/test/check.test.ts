/**
 * `reward-mesh check` against a real nats-server: it lists the consumers of MESH_ROLLOUTS and reports
 * stored rollouts on a domain no service consumes (orphan subjects), exit code 1; none, exit 0.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createToolCallService } from "@reward-mesh/tool-call";
import {
  type MeshBus,
  openBus,
  publishRollout,
  type RunningService,
  silentLogger,
  Streams,
  startRewardService,
} from "@reward-mesh/sdk";
import {
  type LocalNats,
  makeRollout,
  startTestNats,
  testBusOptions,
  testRuntimeOptions,
} from "@reward-mesh/sdk/testing";

const bin = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));

function check(natsUrl: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, "check"],
      { env: { ...process.env, NATS_URL: natsUrl }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe("reward-mesh check", () => {
  let nats: LocalNats;
  let bus: MeshBus;
  let service: RunningService;
  before(async () => {
    nats = await startTestNats();
    bus = await openBus(testBusOptions(nats.url), "check-test");
    service = await startRewardService(createToolCallService(), testRuntimeOptions(nats.url), silentLogger);
  });
  after(async () => {
    await service.close(1000);
    await bus.close();
    await nats.stop();
  });

  it("reports rollouts on a domain no service consumes as orphans (exit 1), and none once they are gone", async () => {
    await publishRollout(
      bus.js,
      makeRollout({
        runId: "check-run",
        task: { id: "t", domain: "nope", kind: { case: "custom", value: {} } },
      }),
    );
    const r = await check(nats.url);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stdout,
      /^ {2}tool-call--tool_call +mesh\.rollouts\.tool_call\.> +pending \d+, unacked \d+$/m,
    );
    assert.match(r.stdout, /^ {2}mesh\.rollouts\.nope\.check-run +1 message\(s\), domain 'nope'$/m);
    assert.match(r.stdout, /^orphan domains: nope$/m);

    await bus.jsm.streams.purge(Streams.rollouts, { filter: "mesh.rollouts.nope.>" });
    const clean = await check(nats.url);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    assert.match(clean.stdout, /^orphan subjects: none/m);
  });
});
