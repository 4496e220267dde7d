/**
 * `runInGroup` (what the docs walkthrough test runs its scripts with) leaves no process behind: not
 * what a script started in the background when it finishes, not the script's children when it times out.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { runInGroup } from "./process-group.js";

const dir = mkdtempSync(join(tmpdir(), "rm-process-group-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/** Polls until `pid` is gone (a killed process is reaped by init shortly after), at most 5 s. */
async function gone(pid: number): Promise<boolean> {
  for (const t0 = Date.now(); Date.now() - t0 < 5000; ) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

describe("runInGroup", () => {
  it("ends what a finished script left running in the background", async () => {
    const pidFile = join(dir, "bg.pid");
    const t0 = Date.now();
    const r = await runInGroup("bash", ["-c", `sleep 300 & echo $! > ${pidFile}; echo done`], {
      timeoutMs: 60_000,
    });
    // Done when the script is, though the sleep holds its output pipes: not at the timeout.
    assert.equal(r.timedOut, false);
    assert.ok(Date.now() - t0 < 30_000, `${Date.now() - t0} ms`);
    assert.equal(r.code, 0);
    assert.equal(r.stdout.trim(), "done");
    const pid = Number(readFileSync(pidFile, "utf8"));
    assert.ok(await gone(pid), `background sleep ${pid} still running`);
  });

  it("on timeout ends the script and its children, and says it timed out", async () => {
    const pidFile = join(dir, "child.pid");
    const t0 = Date.now();
    // The script must start its child and write the pid before the timeout ends it: 5 s leaves a loaded
    // machine room to start bash (500 ms could end bash first, leaving no pid file and no child to check).
    const r = await runInGroup("bash", ["-c", `sleep 300 & echo $! > ${pidFile}; wait`], {
      timeoutMs: 5_000,
      graceMs: 1000,
    });
    assert.equal(r.timedOut, true);
    assert.notEqual(r.code, 0);
    assert.ok(Date.now() - t0 < 30_000);
    assert.ok(existsSync(pidFile), "the script wrote its child's pid before the timeout");
    const pid = Number(readFileSync(pidFile, "utf8"));
    assert.ok(Number.isInteger(pid) && pid > 0, `child pid '${readFileSync(pidFile, "utf8")}'`);
    assert.ok(await gone(pid), `child sleep ${pid} still running`);
  });
});
