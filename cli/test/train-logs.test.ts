/**
 * Logs against progress, as a user runs `reward-mesh train`: by default (`--log-format human`) no JSON log
 * line reaches the terminal, a warning is one readable line on stderr, and every record is in
 * `<run dir>/logs/trainer.jsonl`; with `--log-format json` (or `REWARD_MESH_LOG_FORMAT=json`) stderr is
 * JSON records only and stdout the result as one JSON object.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createLengthService } from "@reward-mesh/length";
import { type RunningService, silentLogger, startRewardService } from "@reward-mesh/sdk";
import {
  type LocalNats,
  neverScoringService,
  startTestNats,
  testRuntimeOptions,
} from "@reward-mesh/sdk/testing";

const bin = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));

function runBin(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, ...env }, timeout: 120_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** Whether `line` is a JSON object (a log record, say). */
function isJsonObject(line: string): boolean {
  try {
    const v: unknown = JSON.parse(line);
    return typeof v === "object" && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

const lines = (s: string) => s.split("\n").filter((l) => l.trim() !== "");

interface LogRecord {
  level: number;
  msg: string;
  service: string;
  runId?: string;
  step?: number;
}

let dir: string;
let nats: LocalNats;
let svc: RunningService;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "rm-train-logs-"));
  nats = await startTestNats();
  // A service named and described like length that never answers: every group misses its deadline, so
  // each step logs the warning "no complete group this step: policy update skipped".
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
  rmSync(dir, { recursive: true, force: true });
});

function writeConfig(id: string): string {
  const path = join(dir, `${id}.yaml`);
  const doc = {
    run: { id, seed: 1, outputDir: join(dir, "runs") },
    tasks: { sets: ["custom"] },
    groupSize: 4,
    promptsPerStep: 1,
    steps: 2,
    components: [{ service: "length", component: "overlong", weight: 1 }],
    estimator: { name: "corr_grpo" },
    groups: { deadlineMs: 300 },
  };
  writeFileSync(path, JSON.stringify(doc)); // JSON is YAML
  return path;
}

const readLog = (id: string) =>
  lines(readFileSync(join(dir, "runs", id, "logs", "trainer.jsonl"), "utf8")).map(
    (l) => JSON.parse(l) as LogRecord,
  );

describe("reward-mesh train: logs and progress", () => {
  it("human (the default): progress and readable warnings on the terminal, every record in logs/trainer.jsonl", async () => {
    const r = await runBin(["train", "--config", writeConfig("human")], { NATS_URL: nats.url });
    assert.equal(r.code, 0, r.stderr);
    const json = [...lines(r.stdout), ...lines(r.stderr)].filter(isJsonObject);
    assert.deepEqual(json, [], "no JSON log line on the terminal");
    assert.match(r.stdout, /^finished run human: steps 1\.\.2$/m);
    assert.match(r.stderr, /^step 2\/2 /m, "the progress lines are still there");
    assert.match(r.stderr, /^warn {2}no complete group this step: policy update skipped step=1$/m);
    assert.match(r.stderr, /^warn {2}no complete group this step: policy update skipped step=2$/m);
    const log = readLog("human");
    assert.ok(
      log.some((l) => l.level === 30 && l.msg === "learner ready"),
      "info records are in the file",
    );
    assert.deepEqual(
      log.filter((l) => l.level === 40).map((l) => [l.msg, l.step, l.runId, l.service]),
      [
        ["no complete group this step: policy update skipped", 1, "human", "trainer"],
        ["no complete group this step: policy update skipped", 2, "human", "trainer"],
      ],
    );
  });

  it("json (--log-format json, or REWARD_MESH_LOG_FORMAT=json): JSON records only on stderr, the result as JSON on stdout", async () => {
    for (const [id, args, env] of [
      ["json-flag", ["--log-format", "json"], {}],
      ["json-env", [], { REWARD_MESH_LOG_FORMAT: "json" }],
    ] as const) {
      const r = await runBin(["train", "--config", writeConfig(id), ...args], { NATS_URL: nats.url, ...env });
      assert.equal(r.code, 0, r.stderr);
      const err = lines(r.stderr);
      assert.deepEqual(
        err.filter((l) => !isJsonObject(l)),
        [],
        `every stderr line is a JSON record:\n${r.stderr}`,
      );
      const records = err.map((l) => JSON.parse(l) as LogRecord);
      assert.ok(records.some((l) => l.level === 30 && l.msg === "learner ready"));
      assert.equal(records.filter((l) => l.level === 40).length, 2);
      const out = lines(r.stdout);
      assert.equal(out.length, 1, r.stdout);
      const result = JSON.parse(out[0]!) as Record<string, unknown>;
      assert.deepEqual(
        [result["runId"], result["stopped"], result["firstStep"], result["lastStep"]],
        [id, false, 1, 2],
      );
      assert.equal(result["log"], join(dir, "runs", id, "logs", "trainer.jsonl"));
      assert.deepEqual(
        readLog(id).map((l) => l.msg),
        records.map((l) => l.msg),
        "the file has the same records",
      );
    }
  });

  it("an unknown format is a usage error naming the flag or the variable", async () => {
    const cfg = writeConfig("bad");
    const flag = await runBin(["train", "--config", cfg, "--log-format", "yaml"], { NATS_URL: nats.url });
    assert.equal(flag.code, 2);
    assert.equal(flag.stderr.trim(), "reward-mesh: '--log-format' must be one of human, json, got 'yaml'");
    const env = await runBin(["train", "--config", cfg], {
      NATS_URL: nats.url,
      REWARD_MESH_LOG_FORMAT: "xml",
    });
    assert.equal(env.code, 2);
    assert.match(env.stderr, /REWARD_MESH_LOG_FORMAT/);
    assert.match(env.stderr, /human, json, got 'xml'/);
  });
});
