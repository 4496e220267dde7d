/**
 * The service with the user's benchmark data (`AGENTDOJO_DATA_DIR`): a bad directory fails the start-up
 * with the loader's message; with the data (skipped, with the reason, where it is absent) the real
 * process serves every suite it builds, banking first.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, it } from "node:test";
import { fileURLToPath } from "node:url";
import { AgentEnvironment, createGrpcClient } from "@reward-mesh/proto";
import { startServiceProcess, startTestNats } from "@reward-mesh/sdk/testing";
import { SUITE_BUILDERS } from "../src/suites/index.js";
import { BENCHMARK_DATA_DIR, BENCHMARK_DATA_SKIP } from "./benchmark-data-dir.js";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), "agentdojo-data-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs the entrypoint until it exits; its exit code and stderr. */
function runMain(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", main], {
    env: {
      PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
      OTEL_TRACES_EXPORTER: "none",
      AGENTDOJO_WORKER: "false",
      AGENTDOJO_GRPC_PORT: "0",
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return new Promise((resolve) =>
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    }),
  );
}

it("a data directory without tasks.json fails the start-up, naming the file", async () => {
  const r = await runMain({ AGENTDOJO_DATA_DIR: tmp });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /AgentDojo benchmark data: .*tasks\.json: not found/);
});

it("data of another benchmark version fails the start-up, naming both versions", async () => {
  const dir = join(tmp, "v9");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  writeFileSync(join(dir, "tasks.json"), JSON.stringify({ benchmark_version: "v9.0.0", suites: {} }));
  const r = await runMain({ AGENTDOJO_DATA_DIR: dir });
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /is benchmark version v9\.0\.0; this build implements v1\.2\.1/);
});

it("any other error of a suite builder fails the start-up with one line, not a stack trace", async () => {
  const dir = join(tmp, "bomb");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  const names = [...SUITE_BUILDERS.keys()];
  const empty = { user_tasks: {}, injection_tasks: {} };
  writeFileSync(
    join(dir, "tasks.json"),
    JSON.stringify({ benchmark_version: "v1.2.1", suites: Object.fromEntries(names.map((n) => [n, empty])) }),
  );
  // An alias bomb: the YAML parser refuses it with its own ReferenceError (not a BenchmarkDataError).
  const bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"];
  for (const [k, v] of [..."bcdef"].entries()) {
    const prev = "abcde"[k]!;
    bomb.push(`${v}: &${v} [${Array(9).fill(`*${prev}`).join(", ")}]`);
  }
  for (const n of names) {
    mkdirSync(join(dir, n));
    writeFileSync(join(dir, n, "environment.yaml"), `${bomb.join("\n")}\n`);
  }
  const r = await runMain({ AGENTDOJO_DATA_DIR: dir });
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stderr,
    /^agentdojo: AGENTDOJO_DATA_DIR=.*bomb: cannot build the suites: ReferenceError: Excessive alias count/,
  );
  assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
});

it("with the benchmark data, serves every suite it builds (ListTasks)", {
  skip: BENCHMARK_DATA_SKIP,
}, async () => {
  const nats = await startTestNats();
  const service = await startServiceProcess(main, {
    envPrefix: "AGENTDOJO",
    natsUrl: nats.url,
    env: { AGENTDOJO_DATA_DIR: BENCHMARK_DATA_DIR!, AGENTDOJO_WORKER: "false" },
  });
  const env = createGrpcClient(AgentEnvironment, service.address);
  try {
    const l = await env.listTasks({});
    assert.deepEqual(
      l.suites.map((s) => s.name),
      ["banking", ...SUITE_BUILDERS.keys()],
    );
    for (const s of l.suites) {
      assert.ok(s.userTasks.length > 0 && s.injectionTasks.length > 0, s.name);
      assert.ok(
        s.userTasks.every((u) => u.prompt !== ""),
        s.name,
      );
    }
  } finally {
    env.raw.close();
    await service.stop();
    await nats.stop();
  }
});
