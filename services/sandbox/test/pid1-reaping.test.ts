/**
 * Regression: `[bwrap] <defunct>` zombies piled up when the service ran as PID 1 (a container without an
 * init). The fixture drives the bubblewrap sandbox as PID 1 of a fresh pid namespace, where every orphan
 * comes to it, and reports the zombies left after `close()`.
 */
import assert from "node:assert/strict";
import { type SpawnOptions, spawn } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { rootlessBwrapUnsupported } from "../src/testing.js";

const fixture = fileURLToPath(new URL("./pid1-reaping.fixture.ts", import.meta.url));

/** The fixture's report: its pid in its namespace, the runs it made, the zombies left after close(). */
interface Report {
  pid: number;
  runs: number;
  zombies: Array<{ pid: number; ppid: number; comm: string }>;
}

/**
 * Runs the fixture as PID 1 of a fresh pid namespace (`unshare <namespaces> --pid --fork --mount-proc
 * --kill-child`: if this test dies, the namespace and every sandbox in it die with it) and returns its
 * report, after asserting it exited 0.
 */
async function runAsPid1(
  namespaces: readonly string[],
  fixtureArgs: readonly string[],
  options: SpawnOptions,
): Promise<Report> {
  const child = spawn(
    "unshare",
    [
      ...namespaces,
      "--pid",
      "--fork",
      "--mount-proc",
      "--kill-child",
      process.execPath,
      "--import",
      "tsx",
      fixture,
      ...fixtureArgs,
    ],
    { ...options, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((r) => child.once("exit", r));
  assert.equal(code, 0, stderr);
  return JSON.parse(stdout.trim()) as Report;
}

describe("bwrap sandbox as PID 1", () => {
  it("leaves no zombie after normal, orphaning, timed-out, flooding and aborted runs", async () => {
    const runs = 4;
    // Private: the sandbox removes staging dirs of pids it thinks dead, and as PID 1 every pid looks so.
    const tmp = mkdtempSync(join(tmpdir(), "reward-mesh-pid1-"));
    chmodSync(tmp, 0o711); // the sandbox uid reads the harness copy staged under it
    try {
      const report = await runAsPid1([], [String(runs), String(61_000 + (process.pid % 4_000))], {
        env: { ...process.env, PATH: "/usr/sbin:/usr/bin:/sbin:/bin", TMPDIR: tmp },
      });
      assert.equal(report.pid, 1, "the fixture must run as PID 1 of its namespace");
      assert.equal(report.runs, 2 * runs + 4);
      assert.deepEqual(report.zombies, []);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  // Rootless mode (SANDBOX_BWRAP_MODE=auto as a non-root user): the fixture is PID 1 of a pid namespace
  // that a non-root user can create only with a user namespace of its own (as the rootless engine does).
  const why = rootlessBwrapUnsupported();
  it("rootless mode (as uid 65534): leaves no zombie either", {
    skip: why ? `unprivileged user namespaces or bwrap unavailable: ${why}` : false,
  }, async () => {
    const runs = 4;
    const tmp = mkdtempSync(join(tmpdir(), "reward-mesh-pid1-rootless-"));
    const asRoot = process.getuid?.() === 0;
    if (asRoot) chownSync(tmp, 65_534, 65_534);
    try {
      const report = await runAsPid1(["--user", "--map-current-user"], [String(runs)], {
        env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", HOME: tmp, TMPDIR: tmp },
        ...(asRoot ? { uid: 65_534, gid: 65_534 } : {}),
      });
      assert.equal(report.pid, 1);
      assert.equal(report.runs, 2 * runs + 4);
      assert.deepEqual(report.zombies, []);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
