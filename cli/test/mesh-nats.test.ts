/**
 * `reward-mesh up`'s NATS has authentication on by default: generated users (files mode 0600), one per
 * role, anonymous clients refused, each service process connected as itself, the trainer as the
 * trainer; a server open to anonymous clients named by `NATS_URL` is refused unless
 * `REWARD_MESH_NATS_AUTH=off`, whatever `NATS_*` holds; when `NATS_URL` is not set and the default address
 * is held by a server it cannot use, `up` starts its own on a free port with users and store of its own, and
 * a second `up` never touches the first one's seeds or store.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { PassThrough } from "node:stream";
import { after, before, describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { RewardResultSchema } from "@reward-mesh/proto";
import {
  connectBus,
  freePort,
  isJetStreamReachable,
  isPermissionViolation,
  openBus,
  publishReward,
  publishRollout,
} from "@reward-mesh/sdk";
import { makeRollout, startSecuredTestNats, startTestNats } from "@reward-mesh/sdk/testing";
import { createGroupAssembler } from "@reward-mesh/trainer";
import { runCheck } from "../src/commands/check.js";
import { runExperiment } from "../src/commands/experiment.js";
import { runTrain } from "../src/commands/train.js";
import { LOCK_FILE } from "../src/commands/mesh-nats.js";
import { printMesh, type RunningMesh, startMesh } from "../src/commands/up.js";
import { loadCliConfig } from "../src/config.js";
import { meshTestConfig } from "./mesh-config.js";

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "rm-mesh-nats-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const cliConfig = (sub: string, env: Record<string, string | undefined>, defaultNatsUrl?: string) =>
  meshTestConfig(dir, sub, env, defaultNatsUrl);

const portOf = (url: string) => Number(new URL(url).port);
const reEscape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** The mesh's users and store are a fresh pair `<auth dir>/<id>`, `<store dir>/<id>` (mode 0700). */
function assertOwnDirs(mesh: RunningMesh, sub: string): { auth: string; store: string } {
  const auth = mesh.credentialsDir!;
  assert.equal(dirname(auth), join(dir, sub, "auth"));
  const store = join(dir, sub, "js", basename(auth));
  for (const d of [auth, store]) assert.equal(statSync(d).mode & 0o777, 0o700, `${d} is mode 0700`);
  assert.ok(existsSync(join(auth, "admin.nk")));
  assert.ok(mesh.trainerAuth!.nkeySeedFile!.startsWith(`${auth}/`), "the trainer's seed is its own");
  return { auth, store };
}

/** A Writable that keeps what is written to it. */
function sink(): PassThrough & { text(): string } {
  const out = new PassThrough();
  let text = "";
  out.on("data", (d: Buffer) => {
    text += d.toString();
  });
  return Object.assign(out, { text: () => text });
}

function printed(mesh: RunningMesh): string {
  const out = new PassThrough();
  let text = "";
  out.on("data", (d: Buffer) => {
    text += d.toString();
  });
  printMesh(mesh, out);
  return text;
}

/** The length service of `mesh` scores a rollout the trainer publishes with `auth` at `url`. */
async function lengthScores(url: string, auth: RunningMesh["trainerAuth"], runId: string): Promise<void> {
  const trainer = await openBus({ ...loadCliConfig({}).bus, natsUrl: url, auth }, "trainer");
  const asm = await createGroupAssembler({ bus: trainer, runId });
  try {
    const rollout = makeRollout({ runId, id: `${runId}-g1-0`, response: "four" });
    asm.expect({ groupId: "g1", step: 1, rolloutIds: [rollout.id], services: ["length"] });
    await publishRollout(trainer.js, rollout);
    const [g] = await asm.collect(["g1"], Date.now() + 30_000);
    assert.equal(g!.complete, true);
    assert.equal(g!.results[0]!.get("length")!.components.find((c) => c.name === "length")?.value, 4);
  } finally {
    await asm.close();
    await trainer.close();
  }
}

describe("the CLI config's NATS_URL", () => {
  it("tells a NATS_URL the user set from the default, which tests may replace", () => {
    assert.equal(loadCliConfig({}).natsUrlExplicit, false);
    assert.equal(loadCliConfig({}).bus.natsUrl, "nats://127.0.0.1:4222");
    assert.equal(loadCliConfig({ NATS_URL: "  " }).natsUrlExplicit, false, "blank counts as unset");
    const injected = loadCliConfig({}, { natsUrl: "nats://127.0.0.1:1" });
    assert.deepEqual([injected.natsUrlExplicit, injected.bus.natsUrl], [false, "nats://127.0.0.1:1"]);
    const set = loadCliConfig({ NATS_URL: "nats://10.0.0.1:4222" }, { natsUrl: "nats://127.0.0.1:1" });
    assert.deepEqual([set.natsUrlExplicit, set.bus.natsUrl], [true, "nats://10.0.0.1:4222"]);
  });
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
  it("NATS_URL unset and an anonymous server at the default: a mesh of its own on a free port, with its own users and store, as many as are started", async () => {
    // Stands for Debian's nats-server service on 127.0.0.1:4222: anonymous, JetStream on, not reward-mesh's.
    const foreign = await startTestNats();
    try {
      const config = cliConfig("foreign", {}, foreign.url);
      assert.equal(config.natsUrlExplicit, false);
      const mesh = await startMesh(config, { services: ["length"] });
      let second: RunningMesh | undefined;
      try {
        assert.equal(mesh.natsStarted, true);
        assert.notEqual(portOf(mesh.natsUrl), portOf(foreign.url));
        assert.equal(
          mesh.natsNotice,
          `NATS_URL is not set, and the server at the default ${foreign.url} accepts anonymous clients, who could forge rewards: this mesh runs its own NATS, with its own users and store, at ${mesh.natsUrl}`,
        );
        const own = assertOwnDirs(mesh, "foreign");
        assert.equal(
          existsSync(join(dir, "foreign", "auth", "admin.nk")),
          false,
          "the shared dir is not written",
        );
        // Ours has authentication on; the service process got this URL and its own user: rewards flow.
        await assert.rejects(connectBus(mesh.natsUrl, "anonymous"), /requires credentials/);
        await lengthScores(mesh.natsUrl, mesh.trainerAuth, "foreign1");
        // What up/demo print: the notice once, then the URL to use next to the trainer's credentials.
        const text = printed(mesh);
        assert.ok(text.startsWith(`${mesh.natsNotice}\n`), text);
        assert.match(
          text,
          new RegExp(
            `trainer: NATS_URL=${reEscape(mesh.natsUrl)} NATS_NKEY_SEED_FILE=${reEscape(own.auth)}/trainer\\.nk `,
          ),
        );
        const seeds = readFileSync(join(own.auth, "service-length.nk"), "utf8");

        // A second mesh while the first runs: another port, other directories; the first one's users still work.
        second = await startMesh(config, { services: ["length"] });
        assert.equal(second.natsStarted, true);
        assert.notEqual(portOf(second.natsUrl), portOf(mesh.natsUrl));
        const other = assertOwnDirs(second, "foreign");
        assert.notEqual(other.auth, own.auth);
        assert.equal(readFileSync(join(own.auth, "service-length.nk"), "utf8"), seeds, "no seed rewritten");
        await lengthScores(mesh.natsUrl, mesh.trainerAuth, "foreign2"); // the first mesh's service still scores
        await lengthScores(second.natsUrl, second.trainerAuth, "foreign3");
        await second.stop();
        second = undefined;
        assert.equal(existsSync(other.auth) || existsSync(other.store), false, "its directories go with it");
        await lengthScores(mesh.natsUrl, mesh.trainerAuth, "foreign4");
        await mesh.stop();
        assert.equal(existsSync(own.auth) || existsSync(own.store), false);
      } finally {
        await second?.stop();
        await mesh.stop();
      }
      assert.equal(await isJetStreamReachable(foreign.url), true, "the foreign server is left alone");

      // NATS_* credentials do not make it usable: a server open to anonymous clients accepts any NKEY.
      const seed = await startMesh(cliConfig("seed", {}, foreign.url), { services: [] });
      try {
        const t = seed.trainerAuth!;
        const creds = { NATS_NKEY_SEED_FILE: t.nkeySeedFile, NATS_INBOX_PREFIX: t.inboxPrefix };
        const withCreds = await startMesh(cliConfig("creds", creds, foreign.url), { services: [] });
        try {
          assert.equal(withCreds.natsStarted, true);
          assert.notEqual(withCreds.natsUrl, foreign.url);
          assert.notEqual(withCreds.natsUrl, seed.natsUrl);
          assert.match(withCreds.natsNotice ?? "", /accepts anonymous clients, who could forge rewards/);
          assert.notDeepEqual(withCreds.trainerAuth, t, "its own generated users, not NATS_*'s");
        } finally {
          await withCreds.stop();
        }
        // NATS_URL set by the user to that server: their choice stands, and it is refused, credentials or not.
        for (const env of [{ NATS_URL: foreign.url }, { NATS_URL: foreign.url, ...creds }])
          await assert.rejects(
            startMesh(cliConfig("foreign", env, foreign.url), { services: [] }),
            /accepts anonymous clients, who could forge rewards.*REWARD_MESH_NATS_AUTH=off/,
          );
      } finally {
        await seed.stop();
      }
    } finally {
      await foreign.stop();
    }
  });

  it("NATS_URL unset and our own first mesh at the default: a second one goes to a free port with its own directories, the first keeps working", async () => {
    const defaultUrl = `nats://127.0.0.1:${await freePort()}`;
    const config = cliConfig("own", {}, defaultUrl);
    const shared = join(dir, "own", "auth");
    const first = await startMesh(config, { services: ["length"] });
    let second: RunningMesh | undefined;
    try {
      assert.equal(first.natsUrl, defaultUrl);
      assert.equal(first.natsNotice, undefined);
      assert.equal(first.credentialsDir, shared, "at the default address: the shared directories, as before");
      assert.ok(existsSync(join(shared, LOCK_FILE)), "held while its server runs");
      const seeds = readFileSync(join(shared, "service-length.nk"), "utf8");
      second = await startMesh(config, { services: ["length"] });
      assert.notEqual(second.natsUrl, defaultUrl);
      assert.equal(
        second.natsNotice,
        `NATS_URL is not set, and the server at the default ${defaultUrl} requires credentials reward-mesh does not have: this mesh runs its own NATS, with its own users and store, at ${second.natsUrl}`,
      );
      assertOwnDirs(second, "own");
      assert.equal(readFileSync(join(shared, "service-length.nk"), "utf8"), seeds, "no seed rewritten");
      await lengthScores(first.natsUrl, first.trainerAuth, "own1"); // the first mesh's service still scores
      await lengthScores(second.natsUrl, second.trainerAuth, "own2");
      await second.stop();
      second = undefined;
      await lengthScores(first.natsUrl, first.trainerAuth, "own3");
    } finally {
      await second?.stop();
      await first.stop();
    }
    assert.equal(existsSync(join(shared, LOCK_FILE)), false, "released on stop");
    assert.equal(
      existsSync(join(shared, "admin.nk")),
      true,
      "the shared users stay (regenerated by the next up)",
    );
  });

  it("two meshes started at once with the default free: one at the default, the other on a free port; a crashed holder's lock is taken over", async () => {
    const defaultUrl = `nats://127.0.0.1:${await freePort()}`;
    const config = cliConfig("race", {}, defaultUrl);
    const meshes = await Promise.allSettled([
      startMesh(config, { services: ["length"] }),
      startMesh(config, { services: ["length"] }),
    ]);
    const [a, b] = meshes.map((m) => (m.status === "fulfilled" ? m.value : undefined));
    try {
      assert.deepEqual(
        meshes.map((m) => m.status),
        ["fulfilled", "fulfilled"],
        String(meshes.map((m) => (m.status === "rejected" ? m.reason : "")).join(" ")),
      );
      const atDefault = [a!, b!].filter((m) => m.natsUrl === defaultUrl);
      assert.equal(atDefault.length, 1, `${a!.natsUrl} ${b!.natsUrl}`);
      const other = a!.natsUrl === defaultUrl ? b! : a!;
      assert.equal(atDefault[0]!.credentialsDir, join(dir, "race", "auth"));
      assertOwnDirs(other, "race");
      assert.ok(other.natsNotice, "says where it went");
      await lengthScores(a!.natsUrl, a!.trainerAuth, "race1");
      await lengthScores(b!.natsUrl, b!.trainerAuth, "race2");
    } finally {
      await Promise.all([a?.stop(), b?.stop()]);
    }

    // A lock left by a process that is gone (a crashed up): taken over, the default used as usual.
    const dead = spawnSync(process.execPath, ["-e", "0"]).pid;
    const stale = cliConfig("stale", {}, `nats://127.0.0.1:${await freePort()}`);
    mkdirSync(join(dir, "stale", "auth"), { recursive: true });
    writeFileSync(join(dir, "stale", "auth", LOCK_FILE), `${dead} 0123\n`);
    const mesh = await startMesh(stale, { services: [] });
    try {
      assert.equal(mesh.natsUrl, stale.bus.natsUrl);
      assert.equal(mesh.credentialsDir, join(dir, "stale", "auth"));
      assert.equal(mesh.natsNotice, undefined);
    } finally {
      await mesh.stop();
    }
    assert.equal(existsSync(join(dir, "stale", "auth", LOCK_FILE)), false);
  });

  it("train --with-mesh and experiment say where their NATS went (a JSON log record with --log-format json)", async () => {
    const foreign = await startTestNats();
    try {
      const cfg = join(dir, "notice.yaml");
      writeFileSync(
        cfg,
        [
          `run: { outputDir: ${JSON.stringify(join(dir, "notice", "runs"))}, id: notice-train }`,
          "tasks: { sets: [tool_call] }",
          "groupSize: 2",
          "promptsPerStep: 1",
          "steps: 1",
          "components: [rlla-tool]",
        ].join("\n"),
      );
      const notice = new RegExp(
        `^NATS_URL is not set, and the server at the default ${reEscape(foreign.url)} accepts anonymous clients, who could forge rewards: this mesh runs its own NATS, with its own users and store, at (nats://127\\.0\\.0\\.1:\\d+)$`,
      );
      const config = cliConfig("notice", {}, foreign.url);
      const out = sink();
      const err = sink();
      assert.equal(
        await runTrain(["--config", cfg, "--with-mesh", "--log-format", "json"], config, out, err),
        0,
      );
      // The trainer's logger writes to fd 2 and to the run's log file: the record is in the file.
      const records = readFileSync(
        join(dir, "notice", "runs", "notice-train", "logs", "trainer.jsonl"),
        "utf8",
      )
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { level: number; msg: string; natsUrl?: string; natsUsersDir?: string });
      const trainRecord = records.find((r) => notice.test(r.msg));
      assert.ok(trainRecord, records.map((r) => r.msg).join("\n"));
      assert.equal(trainRecord.level, 40);
      assert.equal(trainRecord.natsUrl, notice.exec(trainRecord.msg)![1]);
      assert.equal(dirname(trainRecord.natsUsersDir!), join(dir, "notice", "auth"));

      const expErr = sink();
      const expOut = sink();
      // One GRPO run of `cfg` as experiment `id`, logging in `format`.
      const experiment = (id: string, format: string, out: PassThrough, err: PassThrough) =>
        runExperiment(
          ["--config", cfg, "--estimators", "grpo", "--seeds", "1", "--id", id, "--log-format", format],
          config,
          out,
          err,
        );
      const code = await experiment("exp-notice", "json", expOut, expErr);
      assert.equal(code, 0, expErr.text());
      const expRecord = expErr
        .text()
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { level: number; msg: string; natsUrl?: string })
        .find((r) => notice.test(r.msg));
      assert.ok(expRecord, expErr.text());
      assert.equal(expRecord.natsUrl, notice.exec(expRecord.msg)![1]);
      assert.equal(JSON.parse(expOut.text()).runs, 1, "stdout carries only the result");
      // In human format, the line itself.
      const human = sink();
      assert.equal(await experiment("exp-notice2", "human", sink(), human), 0);
      assert.match(human.text().split("\n")[0]!, notice);
    } finally {
      await foreign.stop();
    }
  });

  it("NATS_URL unset and a server with users that are not ours, or a non-NATS listener, at the default: a free port too", async () => {
    const secured = await startSecuredTestNats([]);
    try {
      const mesh = await startMesh(cliConfig("secured", {}, secured.url), { services: [] });
      try {
        assert.notEqual(mesh.natsUrl, secured.url);
        assert.match(
          mesh.natsNotice ?? "",
          /^NATS_URL is not set, and the server at the default .* requires credentials reward-mesh does not have: this mesh runs its own NATS, with its own users and store, at nats:\/\/127\.0\.0\.1:\d+$/,
        );
      } finally {
        await mesh.stop();
      }
      await assert.rejects(
        startMesh(cliConfig("secured", { NATS_URL: secured.url }), { services: [] }),
        /refused the connection.*requires credentials/,
      );
    } finally {
      await secured.stop();
    }
    const other = createServer((s) => s.destroy());
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", r));
    const port = (other.address() as { port: number }).port;
    try {
      const mesh = await startMesh(cliConfig("tcp", {}, `nats://127.0.0.1:${port}`), { services: [] });
      try {
        assert.notEqual(portOf(mesh.natsUrl), port);
        assert.match(
          mesh.natsNotice ?? "",
          /what listens at the default .* does not answer as NATS JetStream/,
        );
      } finally {
        await mesh.stop();
      }
    } finally {
      other.close();
    }
  });
});
