/**
 * A service whose manifest declares `domainsEnv` (reward-model: `REWARD_MODEL_DOMAINS`) consumes the
 * configured list everywhere: discovery's check of its definition, the NATS user `reward-mesh up`
 * generates for it (real nats-server), and the trainer's default domains. The variable is set before
 * the CLI's modules are imported, as it is for a `reward-mesh` process.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

process.env.REWARD_MODEL_DOMAINS = "custom,math";
const { ensureConsumer, freePort, isPermissionViolation, openBus } = await import("@reward-mesh/sdk");
const { serviceEntry } = await import("../src/services.js");
const { startMeshNats } = await import("../src/commands/mesh-nats.js");
const { loadCliConfig } = await import("../src/config.js");
const { DEFAULT_SERVICE_DOMAINS } = await import("@reward-mesh/trainer");

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "rm-domains-env-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe("REWARD_MODEL_DOMAINS (the reward-model manifest's domainsEnv)", () => {
  it("discovery checks the definition against the configured domains; the trainer defaults to them", async () => {
    const entry = serviceEntry("reward-model");
    assert.deepEqual([...entry.domains], ["custom", "math"]);
    const def = (await entry.load()) as Awaited<ReturnType<typeof entry.load>> & {
      close?: () => Promise<void>;
    };
    try {
      assert.deepEqual([...def.domains].sort(), ["custom", "math"]);
    } finally {
      await def.close?.();
    }
    assert.deepEqual([...DEFAULT_SERVICE_DOMAINS["reward-model"]!], ["custom", "math"]);
  });

  it("the generated NATS user of the service may consume exactly the configured domains", async () => {
    const port = await freePort();
    const config = loadCliConfig({
      NATS_URL: `nats://127.0.0.1:${port}`,
      REWARD_MESH_NATS_STORE: join(dir, "js"),
      REWARD_MESH_LOG_DIR: join(dir, "logs"),
      PATH: process.env.PATH,
    });
    const mesh = await startMeshNats(config);
    try {
      const creds = mesh.credentialsDir!;
      const bus = await openBus(
        {
          ...config.bus,
          natsUrl: mesh.nats.url,
          auth: {
            nkeySeedFile: join(creds, "service-reward-model.nk"),
            inboxPrefix: "_INBOX_service-reward-model",
          },
        },
        "reward-model-creds",
      );
      try {
        assert.equal(await ensureConsumer(bus, "reward-model", "math", 30_000), "reward-model--math");
        await assert.rejects(ensureConsumer(bus, "reward-model", "agent", 30_000), (err: unknown) => {
          assert.ok(isPermissionViolation(err) || /permission|authoriz/i.test(String(err)), String(err));
          return true;
        });
      } finally {
        await bus.close();
      }
    } finally {
      await mesh.nats.stop();
    }
  });
});
