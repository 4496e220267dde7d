/**
 * The walk-through as printed, in a fresh copy of the repository with `NATS_URL` unset: `reward-mesh new
 * service word-count`, then the commands of its printed step 3 exactly as printed (a run config, `reward-mesh
 * up &`, `reward-mesh train`, the mesh stopped), then docs/reward-services.md's remote-walkthrough block (a
 * Python service joining `up --remote` through `serve --remote`, a run with it, `explain`), on a free port
 * instead of the block's 50100. One bash script in a process group of its own, killed as a whole at its end.
 * When an anonymous NATS listens at the default address (Debian's service), none of the mesh's consumers
 * appears on it.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { jetstreamManager } from "@nats-io/jetstream";
import { connectBus, freePort, isJetStreamReachable } from "@reward-mesh/sdk";
import { runInGroup } from "../../test/process-group.js";
import { scratchCopy } from "../../test/scratch-copy.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const PYTHON = "/usr/bin/python3";
const noGrpc = spawnSync(PYTHON, ["-c", "import grpc, google.protobuf"]).status !== 0;
const DEFAULT_NATS = "nats://127.0.0.1:4222";

/** The environment of a user's shell: no NATS_* at all (and no test runner context for child tests). */
function userEnv(dir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith("NATS_") && !k.startsWith("REWARD_MESH_") && k !== "NODE_TEST_CONTEXT") env[k] = v;
  return {
    ...env,
    PATH: `${join(dir, "node_modules", ".bin")}:${process.env.PATH ?? ""}`,
    OTEL_TRACES_EXPORTER: "none",
    OTEL_METRICS_EXPORTER: "none",
    OTEL_LOGS_EXPORTER: "none",
  };
}

/** The commands of step 3 of what `new service` printed: its lines indented by 7 spaces. */
function stepCommands(printed: string, step: number): string {
  const from = printed.indexOf(`\n  ${step}. `);
  assert.ok(from >= 0, `no step ${step} in:\n${printed}`);
  const next = printed.indexOf(`\n  ${step + 1}. `, from + 1);
  const block = printed.slice(from, next < 0 ? undefined : next);
  return block
    .split("\n")
    .filter((l) => l.startsWith("       "))
    .map((l) => l.slice(7))
    .join("\n");
}

/** Consumers on an anonymous server at the default address, if one is there (undefined: none). */
async function defaultServerConsumers(): Promise<string[] | undefined> {
  if (!(await isJetStreamReachable(DEFAULT_NATS, 3000).catch(() => false))) return undefined;
  const nc = await connectBus(DEFAULT_NATS, "walkthrough-peek");
  try {
    const jsm = await jetstreamManager(nc);
    const names: string[] = [];
    for await (const s of jsm.streams.list())
      for await (const c of jsm.consumers.list(s.config.name)) names.push(c.name);
    return names;
  } finally {
    await nc.close();
  }
}

it("scaffold → up & → train (as printed) → up --remote → serve --remote → train → explain, NATS_URL unset", {
  skip: noGrpc && `${PYTHON} has no grpcio/protobuf (apt-get install python3-grpcio python3-protobuf)`,
}, async (t) => {
  const dir = scratchCopy();
  const t0 = performance.now();
  try {
    const env = userEnv(dir);
    const printed = execFileSync("reward-mesh", ["new", "service", "word-count", "--domain", "custom"], {
      cwd: dir,
      env,
      encoding: "utf8",
    });
    const step3 = stepCommands(printed, 3);
    assert.match(step3, /^reward-mesh up --services word-count &$/m);
    const docs = readFileSync(join(root, "docs", "reward-services.md"), "utf8");
    const remote = /^```sh remote-walkthrough\n([\s\S]*?)^```\s*$/m.exec(docs)?.[1];
    assert.ok(remote, "docs/reward-services.md has its remote-walkthrough block");
    const port = await freePort();
    const script = `${step3}\n${remote.replaceAll("50100", String(port))}`;
    const r = await runInGroup("bash", ["-euo", "pipefail", "-c", script], {
      cwd: dir,
      env,
      timeoutMs: 300_000,
    });
    const logs = ["up.log", "sidecar.log", "py.log"]
      .filter((f) => existsSync(join(dir, f)))
      .map((f) => `--- ${f}\n${readFileSync(join(dir, f), "utf8").slice(-3000)}`)
      .join("\n");
    if (r.code !== 0)
      assert.fail(
        `the walkthrough ${r.timedOut ? "timed out" : `exited with ${r.code ?? r.signal}`}\n--- script\n${script}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-4000)}\n${logs}`,
      );
    const lines = (id: string) =>
      readFileSync(join(dir, "runs", id, "metrics.jsonl"), "utf8")
        .trim()
        .split("\n");
    assert.equal(lines("word-count-1").length, 3);
    assert.equal(lines("remote-1").length, 2);
    assert.match(r.stdout, /remote-1-s1-p0-0/, "explain answers for the rollout");
    assert.match(r.stdout, /finished run word-count-1: steps 1\.\.3/);
    assert.equal(existsSync(join(dir, ".nats", "auth", "mesh.json")), false, "each up removed its record");
    const foreign = await defaultServerConsumers();
    if (foreign)
      for (const c of ["word-count--custom", "py-brevity--custom"])
        assert.ok(!foreign.includes(c), `${c} on the anonymous server at ${DEFAULT_NATS}`);
    t.diagnostic(`walkthrough took ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
