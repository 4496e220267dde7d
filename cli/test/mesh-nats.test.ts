/**
 * `reward-mesh up`'s NATS has authentication on by default: generated users (files mode 0600), one per
 * role, anonymous clients refused, each service process connected as itself, the trainer as the
 * trainer; a server open to anonymous clients is refused unless `REWARD_MESH_NATS_AUTH=off`.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { after, before, describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { RewardResultSchema } from "@reward-mesh/proto";
import {
  connectBus,
  freePort,
  isPermissionViolation,
  openBus,
  publishReward,
  publishRollout,
} from "@reward-mesh/sdk";
import { makeRollout, startSecuredTestNats, startTestNats } from "@reward-mesh/sdk/testing";
import { createGroupAssembler } from "@reward-mesh/trainer";
import { runCheck } from "../src/commands/check.js";
import { startMesh } from "../src/commands/up.js";
import { loadCliConfig } from "../src/config.js";

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "rm-mesh-nats-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const cliConfig = (sub: string, env: Record<string, string | undefined>) =>
  loadCliConfig({
    REWARD_MESH_NATS_STORE: join(dir, sub, "js"),
    REWARD_MESH_LOG_DIR: join(dir, sub, "logs"),
    PATH: process.env.PATH,
    ...env,
  });

describe("reward-mesh up's NATS", () => {
  it("runs with generated users by default: anonymous refused, each process as itself, rewards flow", async () => {
    const port = await freePort();
    const config = cliConfig("on", { NATS_URL: `nats://127.0.0.1:${port}` });
    const mesh = await startMesh(config, { services: ["length"] });
    try {
      assert.equal(mesh.natsStarted, true);
      const creds = mesh.credentialsDir!;
      assert.equal(creds, join(dir, "on", "auth"));
      assert.equal(statSync(creds).mode & 0o777, 0o700);
      const files = readdirSync(creds);
      for (const f of [
        "admin.nk",
        "trainer.nk",
        "service-length.nk",
        "service-tool-call.nk",
        "nats-server.conf",
      ])
        assert.ok(files.includes(f), `${f} in ${files.join(", ")}`);
      for (const f of files) assert.equal(statSync(join(creds, f)).mode & 0o777, 0o600, `${f} is mode 0600`);

      await assert.rejects(connectBus(mesh.natsUrl, "anonymous"), /requires credentials/);

      const trainer = await openBus(
        { ...config.bus, natsUrl: mesh.natsUrl, auth: mesh.trainerAuth },
        "trainer",
      );
      const asm = await createGroupAssembler({ bus: trainer, runId: "upauth" });
      try {
        const rollout = makeRollout({ runId: "upauth", id: "upauth-g1-0", response: "four" });
        asm.expect({ groupId: "g1", step: 1, rolloutIds: [rollout.id], services: ["length"] });
        await publishRollout(trainer.js, rollout);
        // The length process, started with its own credentials, scored it.
        const [g] = await asm.collect(["g1"], Date.now() + 30_000);
        assert.equal(g!.complete, true);
        assert.equal(g!.results[0]!.get("length")!.components.find((c) => c.name === "length")?.value, 4);
        const forged = create(RewardResultSchema, { rolloutId: "x", runId: "upauth", service: "length" });
        await assert.rejects(publishReward(trainer.js, forged, "t"), (err: unknown) =>
          isPermissionViolation(err),
        );
      } finally {
        await asm.close();
        await trainer.close();
      }

      const asLength = await openBus(
        {
          ...config.bus,
          natsUrl: mesh.natsUrl,
          auth: { nkeySeedFile: join(creds, "service-length.nk"), inboxPrefix: "_INBOX_service-length" },
        },
        "length-creds",
      );
      try {
        const forged = create(RewardResultSchema, { rolloutId: "x", runId: "upauth", service: "tool-call" });
        await assert.rejects(publishReward(asLength.js, forged, "t"), (err: unknown) =>
          isPermissionViolation(err),
        );
      } finally {
        await asLength.close();
      }

      // `reward-mesh check` works with the trainer's credentials (what `up` prints), not anonymously.
      const asTrainer = loadCliConfig({
        NATS_URL: mesh.natsUrl,
        NATS_NKEY_SEED_FILE: mesh.trainerAuth!.nkeySeedFile,
        NATS_INBOX_PREFIX: mesh.trainerAuth!.inboxPrefix,
        PATH: process.env.PATH,
      });
      const out = new PassThrough();
      let text = "";
      out.on("data", (d: Buffer) => {
        text += d.toString();
      });
      assert.equal(await runCheck([], asTrainer, out), 0, text);
      assert.match(text, /length--custom\s+mesh\.rollouts\.custom\.>/);
      assert.match(text, /orphan subjects: none/);
      await assert.rejects(
        runCheck([], loadCliConfig({ NATS_URL: mesh.natsUrl }), new PassThrough()),
        /requires credentials/,
      );
    } finally {
      await mesh.stop();
    }
  });

  it("refuses a NATS that accepts anonymous clients, unless REWARD_MESH_NATS_AUTH=off", async () => {
    const open = await startTestNats();
    try {
      await assert.rejects(
        startMesh(cliConfig("open", { NATS_URL: open.url }), { services: [] }),
        /accepts anonymous clients.*REWARD_MESH_NATS_AUTH=off/,
      );
      const mesh = await startMesh(cliConfig("open", { NATS_URL: open.url, REWARD_MESH_NATS_AUTH: "off" }), {
        services: [],
      });
      assert.equal(mesh.natsStarted, false);
      assert.equal(mesh.credentialsDir, undefined);
      await mesh.stop();
    } finally {
      await open.stop();
    }
  });

  it("uses a NATS with authentication through the credentials in NATS_*, and says what is missing without them", async () => {
    const secured = await startSecuredTestNats([]);
    try {
      await assert.rejects(
        startMesh(cliConfig("ext", { NATS_URL: secured.url }), { services: [] }),
        /refused the connection.*requires credentials.*NATS_NKEY_SEED_FILE/,
      );
      const t = secured.auth.trainer;
      const mesh = await startMesh(
        cliConfig("ext", {
          NATS_URL: secured.url,
          NATS_NKEY_SEED_FILE: t.nkeySeedFile,
          NATS_INBOX_PREFIX: t.inboxPrefix,
        }),
        { services: [] },
      );
      assert.equal(mesh.natsStarted, false);
      assert.deepEqual(mesh.trainerAuth, t);
      await mesh.stop();
    } finally {
      await secured.stop();
    }
  });
});
