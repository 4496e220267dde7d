/** The bubblewrap backend for real: containment suite plus backend specifics (cgroups, prepared sandboxes, cleanup). */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { describe, it } from "node:test";
import { createSandbox, loadSandboxConfig } from "../src/index.js";
import { defineSecuritySuite } from "./security-suite.js";
import { defineVerdictSuite } from "./verdict-suite.js";

// A uid of its own, so "no process left" cannot see sandboxes of test files running in parallel.
const config = {
  ...loadSandboxConfig({}),
  backend: "bwrap" as const,
  concurrency: 2,
  bwrapUid: 61_000 + (process.pid % 4_000),
};

defineSecuritySuite("bwrap", () => createSandbox(config));
defineVerdictSuite("bwrap", () => createSandbox(config));

/** Processes of the sandbox uid on the host (the sandboxes are the only ones here). */
function sandboxProcesses(): string[] {
  try {
    // Zombies are excluded (they hold nothing; pid1-reaping.test.ts checks that none is left behind).
    return execFileSync("ps", ["-u", String(config.bwrapUid), "-o", "stat=,pid=,args="], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l.trim() !== "" && !l.trim().startsWith("Z"));
  } catch {
    return []; // ps exits 1 when none match
  }
}

describe("bwrap sandbox: backend specifics", () => {
  it("runs concurrently up to the bound and leaves no processes, cgroups or staging dirs after close", async () => {
    const sandbox = await createSandbox(config);
    assert.equal(sandbox.backend, "bwrap");
    assert.match(sandbox.description, /cgroup v[12]/);
    const cgroupDir =
      sandbox.description.match(/memory (\S+?)[,)]/)?.[1] ??
      sandbox.description.match(/cgroup v2 \((\S+)\)/)?.[1];
    assert.ok(cgroupDir && existsSync(cgroupDir), sandbox.description);
    const runs = await Promise.all(
      [1, 2, 3, 4].map((i) => sandbox.run({ argv: ["python3", "-c", `print(${i} * 2)`] })),
    );
    assert.deepEqual(
      runs.map((r) => r.stdout.toString().trim()),
      ["2", "4", "6", "8"],
    );
    for (const r of runs) {
      assert.equal(r.backend, "bwrap");
      assert.ok((r.cpuTimeMs ?? 0) > 0, "CPU time from the run's cgroup");
      assert.ok((r.peakMemoryBytes ?? 0) > 0, "peak memory from the run's cgroup");
    }
    await sandbox.close();
    await sandbox.close(); // idempotent
    assert.deepEqual(sandboxProcesses(), []);
    assert.equal(existsSync(cgroupDir), false, `${cgroupDir} left behind`);
    assert.deepEqual(
      readdirSync("/tmp").filter((e) => e.startsWith(`reward-mesh-sandbox-${process.pid}-`)),
      [],
    );
    await assert.rejects(sandbox.run({ argv: ["true"] }), /sandbox unavailable: the sandbox is closed/);
  });

  it("refuses the rootless mode as root (its sandboxes would be the host's uid 0)", async () => {
    await assert.rejects(
      createSandbox({ ...config, bwrapMode: "rootless" }),
      /SANDBOX_BWRAP_MODE.*rootless mode runs sandboxes as the service's own uid, and this service is root/,
    );
  });

  it("rejects requests that would be programming errors", async () => {
    const sandbox = await createSandbox({ ...config, bwrapPrepared: 0 });
    try {
      assert.throws(() => sandbox.run({ argv: [] }), /'argv' must name a program/);
      assert.throws(() => sandbox.run({ argv: ["true"], files: { "../x": "" } }), /file name '\.\.\/x'/);
      assert.throws(() => sandbox.run({ argv: ["true"], limits: { wallTimeMs: -1 } }), /limit 'wallTimeMs'/);
    } finally {
      await sandbox.close();
    }
  });

  it("an aborted run is killed and rejects with the abort reason", async () => {
    const sandbox = await createSandbox(config);
    try {
      const ac = new AbortController();
      const started = performance.now();
      const p = sandbox.run({ argv: ["python3", "-c", "import time; time.sleep(30)"], signal: ac.signal });
      setTimeout(() => ac.abort(new Error("caller gave up")), 200);
      await assert.rejects(p, /caller gave up/);
      assert.ok(performance.now() - started < 5_000);
      const next = await sandbox.run({ argv: ["python3", "-c", "print('alive')"] });
      assert.equal(next.stdout.toString().trim(), "alive");
    } finally {
      await sandbox.close();
    }
  });
});
