/**
 * `reward-mesh train` as a user runs it: a `run.outputDir` that cannot be created is a clear error (it
 * used to spin at 100 % CPU, deaf to SIGTERM), and SIGTERM stops the run promptly at start-up and in the
 * middle of a step; an unreachable environment service for the agent set is an error that ends the
 * process (it used to hang on the NATS connection opened before the listing).
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createLengthService } from "@reward-mesh/length";
import { freePort, type RunningService, silentLogger, startRewardService } from "@reward-mesh/sdk";
import {
  type LocalNats,
  neverScoringService,
  startTestNats,
  testRuntimeOptions,
} from "@reward-mesh/sdk/testing";

const bin = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));

interface Trainer {
  readonly child: ChildProcess;
  output(): string;
  /** Exit code (null for a signal) and seconds from `since` to the exit. */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startTrainer(args: string[], env: Record<string, string>): Trainer {
  const child = spawn(process.execPath, [bin, "train", ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once("exit", (code, signal) => r({ code, signal })),
  );
  return { child, output: () => out, exited: () => exit };
}

/** Polls `cond` every 20 ms until it holds, the process exits, or `ms` pass. */
async function until(t: Trainer, cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (t.child.exitCode !== null) assert.fail(`the trainer exited before ${what}: ${t.output()}`);
    if (Date.now() > end) {
      t.child.kill("SIGKILL");
      assert.fail(`no ${what} within ${ms} ms: ${t.output()}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Sends SIGTERM and returns how the trainer exited and how long that took. */
async function terminate(t: Trainer, boundMs: number) {
  const t0 = Date.now();
  t.child.kill("SIGTERM");
  const timer = setTimeout(() => t.child.kill("SIGKILL"), boundMs);
  const how = await t.exited();
  clearTimeout(timer);
  const ms = Date.now() - t0;
  assert.ok(ms < boundMs, `exited ${ms} ms after SIGTERM (bound ${boundMs} ms): ${t.output()}`);
  return how;
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });

const runDoc = (id: string, outputDir: string, deadlineMs: number) => ({
  run: { id, seed: 1, outputDir },
  tasks: { sets: ["custom"] },
  groupSize: 4,
  promptsPerStep: 1,
  steps: 3,
  components: [{ service: "length", component: "overlong", weight: 1 }],
  estimator: { name: "corr_grpo" },
  groups: { deadlineMs },
});

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "rm-train-sig-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function writeConfig(name: string, doc: object): string {
  const path = join(dir, `${name}.yaml`);
  writeFileSync(path, JSON.stringify(doc)); // JSON is YAML
  return path;
}

describe("reward-mesh train: run.outputDir", () => {
  it("an outputDir that cannot be created is an error naming run.outputDir, not a spin", async () => {
    const port = await freePort(); // nothing listens: the path is checked before NATS is needed
    for (const outputDir of ["/proc/reward-mesh-runs", "/proc"]) {
      const t = startTrainer(["--config", writeConfig("proc", runDoc("proc", outputDir, 10_000))], {
        NATS_URL: `nats://127.0.0.1:${port}`,
      });
      const timer = setTimeout(() => t.child.kill("SIGKILL"), 30_000);
      const { code } = await t.exited();
      clearTimeout(timer);
      assert.equal(code, 2, t.output());
      assert.match(
        t.output(),
        /^reward-mesh: 'run\.outputDir' cannot hold the run directory '\/proc\/[^']*proc'/m,
      );
    }
  });
});

describe("reward-mesh train: SIGTERM", () => {
  let nats: LocalNats;
  let svc: RunningService;
  before(async () => {
    nats = await startTestNats();
    // A service named and described like length (so the run's Describe check passes) that never finishes
    // scoring: a step waits for its rewards.
    const length = createLengthService({ maxLength: 100, cacheLength: 10, penaltyFactor: 1 });
    svc = await startRewardService(
      neverScoringService({
        name: length.name,
        version: length.version,
        domains: length.domains,
        components: length.components,
      }),
      testRuntimeOptions(nats.url),
      silentLogger,
    );
  });
  after(async () => {
    await svc.close(1000);
    await nats.stop();
  });

  it("during a step (waiting for rewards) stops at once; the step stays journalled for the resume", async () => {
    const out = join(dir, "runs");
    const t = startTrainer(["--config", writeConfig("step", runDoc("mid-step", out, 120_000)), "--quiet"], {
      NATS_URL: nats.url,
    });
    const pending = join(out, "mid-step", "pending-step.json");
    await until(t, () => existsSync(pending), 60_000, "step in progress");
    const { code } = await terminate(t, 15_000);
    assert.equal(code, 0, t.output());
    assert.match(t.output(), /stopped run mid-step: steps 1\.\.0/);
    assert.ok(existsSync(pending), "the interrupted step is still journalled");
  });

  it("--ui serves the live page while the run goes on and stops it with the run on SIGTERM", async () => {
    const t = startTrainer(
      ["--config", writeConfig("ui", runDoc("ui", join(dir, "runs"), 120_000)), "--quiet", "--ui"],
      { NATS_URL: nats.url },
    );
    await until(t, () => /live page: http:\/\/127\.0\.0\.1:\d+\//.test(t.output()), 60_000, "live page");
    const url = /live page: (http:\/\/127\.0\.0\.1:(\d+)\/)/.exec(t.output())!;
    const page = await fetch(url[1]!);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /reward-mesh run ui \(live\)/);
    await until(
      t,
      () => existsSync(join(dir, "runs", "ui", "pending-step.json")),
      60_000,
      "step in progress",
    );
    const { code } = await terminate(t, 15_000);
    assert.equal(code, 0, t.output());
    assert.equal(await portOpen(Number(url[2])), false, "the live page stopped with the run");
  });

  it("during start-up (--with-mesh starting NATS and the services) stops and stops what it started", async () => {
    const port = await freePort();
    const logs = join(dir, "logs");
    const t = startTrainer(
      ["--config", writeConfig("startup", runDoc("startup", join(dir, "runs"), 60_000)), "--with-mesh"],
      {
        NATS_URL: `nats://127.0.0.1:${port}`,
        REWARD_MESH_NATS_STORE: join(dir, "js"),
        REWARD_MESH_LOG_DIR: logs,
      },
    );
    // The service's log file appears once NATS is up and the service process is being started.
    await until(t, () => existsSync(join(logs, "length.log")), 60_000, "service start-up");
    const { code } = await terminate(t, 20_000);
    assert.equal(code, 0, t.output());
    assert.match(t.output(), /stopped run startup during start-up/);
    assert.equal(await portOpen(port), false, "the NATS it started is stopped");
  });
});

describe("reward-mesh train: the agent set's environment service unreachable", () => {
  let nats: LocalNats;
  before(async () => {
    nats = await startTestNats();
  });
  after(async () => {
    await nats.stop();
  });

  it("exits non-zero promptly with the listing's error (no bus connection left open to hang on)", async () => {
    const envPort = await freePort(); // nothing listens there
    const doc = { ...runDoc("agent-unreachable", join(dir, "runs"), 10_000), tasks: { sets: ["agent"] } };
    const t0 = Date.now();
    const t = startTrainer(["--config", writeConfig("agent-unreachable", doc), "--quiet"], {
      NATS_URL: nats.url,
      REWARD_MESH_AGENT_ENV_ADDR: `127.0.0.1:${envPort}`,
    });
    const timer = setTimeout(() => t.child.kill("SIGKILL"), 30_000);
    const { code, signal } = await t.exited();
    clearTimeout(timer);
    assert.equal(signal, null, `killed after 30 s (hung): ${t.output()}`);
    assert.notEqual(code, 0, t.output());
    assert.match(t.output(), new RegExp(`^reward-mesh: .*127\\.0\\.0\\.1:${envPort}`, "m"));
    assert.ok(Date.now() - t0 < 30_000);
  });
});
