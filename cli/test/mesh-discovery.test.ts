/**
 * Every command finds the mesh the same way (issue 29, items 2 and 3): with `NATS_URL` unset, `train`,
 * `check`, `serve <service>` and `serve --remote` use only the mesh `reward-mesh up` recorded in `<auth dir>/mesh.json`, each
 * with its role's credentials, and never a NATS nobody named (a foreign anonymous server at the default
 * address keeps an empty stream list); `REWARD_MESH_NATS_AUTH=off` needs `NATS_URL`. A service served
 * elsewhere joins `up`'s NATS through `up --remote name=host:port` with a least-privilege user of its own,
 * and a permission error names the subject and the roles. Real nats-server, real `up` and sidecar
 * processes, a real gRPC reward service as the remote.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { jetstreamManager } from "@nats-io/jetstream";
import {
  connectBus,
  defineRewardService,
  freePort,
  type RunningService,
  silentLogger,
  startRewardService,
} from "@reward-mesh/sdk";
import { type LocalNats, startTestNats, testRuntimeOptions } from "@reward-mesh/sdk/testing";
import { runCheck } from "../src/commands/check.js";
import { MESH_RECORD, meshBusOptions } from "../src/commands/mesh-record.js";
import { provisionWithRetry } from "../src/commands/provision.js";
import { runServe } from "../src/commands/serve.js";
import { runTrain } from "../src/commands/train.js";
import { startMesh } from "../src/commands/up.js";
import { loadCliConfig } from "../src/config.js";

const cli = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));
const QUIET = { OTEL_TRACES_EXPORTER: "none", OTEL_METRICS_EXPORTER: "none", OTEL_LOGS_EXPORTER: "none" };

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "rm-discovery-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** The CLI config of a checkout whose `.nats` is `dir/sub` (no `NATS_URL` unless `env` sets it). */
const configOf = (sub: string, env: Record<string, string> = {}, defaultNatsUrl?: string) =>
  loadCliConfig(
    { REWARD_MESH_NATS_STORE: join(dir, sub, "js"), REWARD_MESH_LOG_DIR: join(dir, sub, "logs"), ...env },
    { meshAppearMs: 0, ...(defaultNatsUrl ? { natsUrl: defaultNatsUrl } : {}) },
  );

/** The environment of a CLI process of that checkout. */
const envOf = (sub: string, env: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? "",
  REWARD_MESH_NATS_STORE: join(dir, sub, "js"),
  REWARD_MESH_LOG_DIR: join(dir, sub, "logs"),
  ...QUIET,
  ...env,
});

/** A CLI process, its output so far, a wait for a line of it, and its end. */
function cliProcess(args: string[], env: Record<string, string>) {
  const c: ChildProcess = spawn(process.execPath, [cli, ...args], { env });
  let out = "";
  c.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  c.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => c.once("exit", (code) => r(code)));
  const waitFor = (re: RegExp, ms = 120_000) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const t0 = Date.now();
      const tick = () => {
        const m = re.exec(out);
        if (m) return resolve(m);
        if (c.exitCode !== null) return reject(new Error(`${args.join(" ")} exited ${c.exitCode}:\n${out}`));
        if (Date.now() - t0 > ms) return reject(new Error(`no ${re} within ${ms} ms:\n${out}`));
        setTimeout(tick, 50);
      };
      tick();
    });
  const stop = async (term = true) => {
    if (term && c.exitCode === null && c.signalCode === null) c.kill("SIGTERM");
    return exited;
  };
  return { waitFor, stop, output: () => out };
}

/** A reward service served elsewhere: gRPC only (its bus half is the sidecar's). */
function remoteService(name: string): Promise<RunningService> {
  const def = defineRewardService({
    name,
    version: "1.0.0",
    domains: ["custom"],
    components: [{ name: "chars", description: "characters of the response", min: 0, max: 1e9 }],
    score: async (r) => [{ name: "chars", value: r.response.length }],
  });
  return startRewardService(
    def,
    { ...testRuntimeOptions("nats://127.0.0.1:1"), workerEnabled: false },
    silentLogger,
  );
}

async function streamNames(nats: LocalNats): Promise<string[]> {
  const nc = await connectBus(nats.url, "peek");
  try {
    const names: string[] = [];
    for await (const s of (await jetstreamManager(nc)).streams.list()) names.push(s.config.name);
    return names;
  } finally {
    await nc.close();
  }
}

function runConfig(id: string, components: string): string {
  const file = join(dir, `${id}.yaml`);
  writeFileSync(
    file,
    `{run: {id: ${id}, seed: 1, outputDir: ${JSON.stringify(join(dir, "runs"))}}, tasks: {sets: [custom]}, services: {ext-chars: [custom]}, groupSize: 2, promptsPerStep: 1, steps: 2, components: [${components}]}\n`,
  );
  return file;
}

describe("NATS_URL unset and no reward-mesh up: nothing connects to a NATS nobody named", () => {
  it("train, check, serve --remote, provision and REWARD_MESH_NATS_AUTH=off up refuse, naming the cure; the foreign server stays empty", async () => {
    // Stands for Debian's nats-server service at the default address: anonymous, JetStream on.
    const foreign = await startTestNats();
    const remote = await remoteService("ext-chars");
    try {
      const config = configOf("none", {}, foreign.url);
      const noMesh =
        /NATS_URL is not set, and no reward-mesh up runs here \(none is recorded in .*mesh\.json\): start the mesh with 'reward-mesh up'.*or set NATS_URL/;
      const cfg = runConfig("nomesh", "{service: length, component: length, weight: 1}");
      await assert.rejects(
        runTrain(["--config", cfg, "--quiet"], config, new PassThrough(), new PassThrough()),
        noMesh,
      );
      await assert.rejects(runCheck([], config, new PassThrough()), noMesh);
      await assert.rejects(runServe(["--remote", remote.grpc.address], {}, config), noMesh);
      await assert.rejects(runServe(["length"], {}, config), noMesh);
      await assert.rejects(provisionWithRetry(config, { timeoutMs: 1000 }), /NATS_URL is not set/);
      await assert.rejects(
        startMesh(configOf("none", { REWARD_MESH_NATS_AUTH: "off" }, foreign.url), { services: ["length"] }),
        /REWARD_MESH_NATS_AUTH=off .* needs NATS_URL naming that server/,
      );
      assert.deepEqual(await streamNames(foreign), [], "no stream was created on the foreign server");
    } finally {
      await remote.close(0);
      await foreign.stop();
    }
  });
});

describe("reward-mesh up records its mesh; the others find it, each with its role", () => {
  let up: ReturnType<typeof cliProcess>;
  let remote: RunningService;
  let stranger: RunningService;
  let natsUrl: string;
  before(async () => {
    remote = await remoteService("ext-chars");
    stranger = await remoteService("ext-other");
    // NATS_URL names where up's own NATS goes (a free port: never the default address in a test); the
    // others run without NATS_URL.
    const port = await freePort();
    up = cliProcess(
      ["up", "--services", "length", "--remote", `ext-chars=${remote.grpc.address}`],
      envOf("rec", {
        NATS_URL: `nats://127.0.0.1:${port}`,
      }),
    );
    await up.waitFor(/mesh is up/);
    natsUrl = `nats://127.0.0.1:${port}`;
  });
  after(async () => {
    await up?.stop();
    await remote?.close(0);
    await stranger?.close(0);
  });

  it("writes the record (mode 0600, credential file paths, no secret) and prints where it is", () => {
    const file = join(dir, "rec", "auth", MESH_RECORD);
    assert.match(up.output(), /mesh recorded in .*mesh\.json: train, serve --remote and check find it there/);
    assert.match(
      up.output(),
      new RegExp(
        `ext-chars .* remote: its NATS user is ready; join with 'reward-mesh serve --remote ${remote.grpc.address}'`,
      ),
    );
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const r = JSON.parse(readFileSync(file, "utf8"));
    assert.equal(r.state, "ready");
    assert.equal(r.natsUrl, natsUrl);
    assert.equal(r.users, "generated");
    assert.match(r.trainer.nkeySeedFile, /trainer\.nk$/);
    assert.match(r.services["ext-chars"].nkeySeedFile, /service-ext-chars\.nk$/);
    assert.doesNotMatch(readFileSync(file, "utf8"), /SU[A-Z2-7]{20,}/, "no seed in the record");
  });

  it("a sidecar without NATS_URL joins as service-ext-chars; check and train find the mesh as the trainer", async () => {
    const sidecar = cliProcess(
      ["serve", "--remote", remote.grpc.address],
      envOf("rec", { EXT_CHARS_ACK_WAIT_MS: "2000" }),
    );
    try {
      await sidecar.waitFor(/ext-chars ready/);
      const config = configOf("rec");
      assert.equal((await meshBusOptions(config, { kind: "trainer" })).natsUrl, natsUrl);
      let text = "";
      const out = new PassThrough().on("data", (d: Buffer) => (text += d.toString()));
      assert.equal(await runCheck([], config, out), 0, text);
      assert.match(text, /ext-chars--custom\s+mesh\.rollouts\.custom\.>/);
      assert.match(text, /length--custom/);
      const cfg = runConfig(
        "joined",
        "{service: length, component: length, weight: 1}, {service: ext-chars, component: chars, weight: 1}",
      );
      assert.equal(
        await runTrain(["--config", cfg, "--quiet"], config, new PassThrough(), new PassThrough()),
        0,
      );
      const steps = readFileSync(join(dir, "runs", "joined", "metrics.jsonl"), "utf8")
        .trim()
        .split("\n");
      assert.equal(steps.length, 2);
      for (const l of steps) assert.equal(typeof JSON.parse(l).weightedReward, "number", l);
    } finally {
      assert.equal(await sidecar.stop(), 0, sidecar.output());
    }
  });

  it("a built-in service served without NATS_URL joins as its own user", async () => {
    const served = cliProcess(["serve", "length"], envOf("rec", { LENGTH_GRPC_PORT: "0" }));
    try {
      await served.waitFor(/length ready/);
    } finally {
      assert.equal(await served.stop(), 0, served.output());
    }
    assert.doesNotMatch(served.output(), /Permissions Violation|Authorization Violation/);
  });

  it("a remote up has no user for is refused naming the cure; another role's credentials get a refusal naming the subject and both roles", async () => {
    const none = cliProcess(["serve", "--remote", stranger.grpc.address], envOf("rec"));
    assert.notEqual(await none.stop(false), 0);
    assert.match(
      none.output(),
      /has no NATS user for service 'ext-other': restart it with 'reward-mesh up --remote ext-other=<host:port>'/,
    );
    const r = JSON.parse(readFileSync(join(dir, "rec", "auth", MESH_RECORD), "utf8"));
    const asTrainer = cliProcess(
      ["serve", "--remote", remote.grpc.address],
      envOf("rec", {
        NATS_URL: natsUrl,
        NATS_NKEY_SEED_FILE: r.trainer.nkeySeedFile,
        NATS_INBOX_PREFIX: r.trainer.inboxPrefix,
      }),
    );
    assert.notEqual(await asTrainer.stop(false), 0);
    assert.match(
      asTrainer.output(),
      /NATS refused the role 'trainer' permission to publish to '\$JS\.API\.CONSUMER\.INFO\.MESH_ROLLOUTS\.ext-chars--custom' \(Permissions Violation\): service 'ext-chars' needs the role 'service-ext-chars'/,
    );
  });

  it("once up stops, its record is gone and the others say to start one", async () => {
    assert.equal(await up.stop(), 0, up.output());
    await assert.rejects(
      runCheck([], configOf("rec"), new PassThrough()),
      /NATS_URL is not set, and no reward-mesh up runs here \(none is recorded in/,
    );
  });
});
