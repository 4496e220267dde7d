/**
 * Run by `bwrap-rootless.test.ts` as a non-root uid (never directly as root): the containment and
 * verdict suites against the rootless bwrap engine, plus what is specific to it.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { createSandbox, loadSandboxConfig, type Sandbox } from "../src/index.js";
import { defineSecuritySuite } from "./security-suite.js";
import { defineVerdictSuite } from "./verdict-suite.js";

if (process.getuid?.() === 0) throw new Error("bwrap-rootless.fixture.ts must run as a non-root uid");

const config = { ...loadSandboxConfig({}), backend: "bwrap" as const, concurrency: 2 };

defineSecuritySuite("bwrap rootless", () => createSandbox(config), { rlimitMemory: true });
defineVerdictSuite("bwrap rootless", () => createSandbox(config));

/** Live (non-zombie) descendants of this process, from /proc. */
function ourDescendants(): string[] {
  const parent = new Map<number, number>();
  const info = new Map<number, string>();
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (rest[0] === "Z") continue;
      parent.set(Number(e), Number(rest[1]));
      info.set(Number(e), stat.slice(0, stat.lastIndexOf(")") + 1));
    } catch {
      // gone
    }
  }
  const out: string[] = [];
  for (const [pid] of parent) {
    let p = parent.get(pid);
    while (p !== undefined && p !== process.pid && p > 1) p = parent.get(p);
    if (p === process.pid) out.push(info.get(pid)!);
  }
  return out;
}

const forkBomb =
  "import os, time\nn = 0\nwhile n < 10000:\n    try:\n        pid = os.fork()\n    except OSError as e:\n        print('stopped', n, type(e).__name__, flush=True); break\n    if pid == 0:\n        time.sleep(30); os._exit(0)\n    n += 1\ntime.sleep(2)";

describe("bwrap rootless: backend specifics", () => {
  it("runs without root, cgroups or setpriv; reports no invented measurements; leaves nothing after close", async () => {
    const before = ourDescendants();
    const sandbox = await createSandbox(config);
    assert.equal(sandbox.backend, "bwrap");
    assert.match(sandbox.description, /rootless: host uid \d+, uid 65534 inside, rlimits/);
    const runs = await Promise.all(
      [1, 2, 3].map((i) =>
        sandbox.run({
          argv: [
            "python3",
            "-c",
            `import os; print(${i} * 2, os.getuid(), os.getgid(), open('/proc/self/oom_score_adj').read().strip())`,
          ],
        }),
      ),
    );
    for (const [i, r] of runs.entries()) {
      assert.equal(r.exitCode, 0, r.stderr.toString());
      // uid 65534 inside; on the host it is the service's own uid (the only one a rootless sandbox can have).
      assert.equal(r.stdout.toString().trim(), `${(i + 1) * 2} 65534 65534 1000`);
      assert.equal(r.oomKilled, false);
      assert.equal(r.cpuTimeMs, undefined, "no cgroup: CPU time is not measured");
      assert.equal(r.peakMemoryBytes, undefined, "no cgroup: peak memory is not measured");
    }
    await sandbox.close();
    assert.deepEqual(ourDescendants(), before);
  });

  it("gives every sandbox its own process budget: concurrent fork bombs each stop at the limit, the service still forks", async () => {
    const sandbox = await createSandbox({ ...config, bwrapPrepared: 0 });
    try {
      const bombs = [1, 2].map(() =>
        sandbox.run({ argv: ["python3", "-c", forkBomb], limits: { maxProcesses: 32, wallTimeMs: 15_000 } }),
      );
      await new Promise((r) => setTimeout(r, 1_500)); // both bombs at their limit now
      const service = spawnSync("sh", ["-c", "echo forked"], { encoding: "utf8" });
      assert.equal(service.stdout.trim(), "forked", `the service cannot fork: ${service.error?.message}`);
      for (const r of await Promise.all(bombs)) {
        const m = r.stdout.toString().match(/stopped (\d+) (\w+)/);
        assert.ok(m, `no containment report: ${r.stdout.toString()} ${r.stderr.toString()}`);
        // Per sandbox: bwrap's init and the bomb itself count too, so 30 children; a shared budget would
        // have stopped the second bomb far earlier (or never, at the uid's own limit).
        assert.ok(Number(m[1]) >= 28 && Number(m[1]) < 32, m[0]);
        assert.equal(m[2], "BlockingIOError");
      }
    } finally {
      await sandbox.close();
    }
  });

  it("memory is a per-process limit (RLIMIT_AS), not a per-sandbox one: what rootless loses", async () => {
    const sandbox = await createSandbox({ ...config, bwrapPrepared: 0 });
    try {
      // Four processes of 96 MiB each under a 128 MiB limit: a cgroup would stop the sum (384 MiB);
      // RLIMIT_AS stops each process only. The sandbox's total is bounded by processes × limit.
      const r = await sandbox.run({
        argv: [
          "python3",
          "-c",
          "import os\npids = []\nfor _ in range(4):\n    pid = os.fork()\n    if pid == 0:\n        b = bytearray(96 << 20)\n        b[::4096] = b'x' * len(b[::4096])\n        os._exit(0)\n    pids.append(pid)\nprint(sum(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) == 0 for p in pids))",
        ],
        limits: { memoryBytes: 128 << 20, wallTimeMs: 20_000 },
      });
      assert.equal(r.stdout.toString().trim(), "4", r.stderr.toString());
      const one = await sandbox.run({
        argv: ["python3", "-c", "b = bytearray(160 << 20)"],
        limits: { memoryBytes: 128 << 20 },
      });
      assert.match(one.stderr.toString(), /MemoryError/);
    } finally {
      await sandbox.close();
    }
  });

  it("an aborted run is killed (everything below its init) and rejects with the abort reason", async () => {
    const sandbox: Sandbox = await createSandbox(config);
    try {
      const ac = new AbortController();
      const started = performance.now();
      const p = sandbox.run({
        argv: ["python3", "-c", "import os, time\nfor _ in range(8):\n    os.fork()\ntime.sleep(60)"],
        signal: ac.signal,
        limits: { maxProcesses: 512 },
      });
      setTimeout(() => ac.abort(new Error("caller gave up")), 500);
      await assert.rejects(p, /caller gave up/);
      assert.ok(performance.now() - started < 5_000);
      const next = await sandbox.run({ argv: ["python3", "-c", "print('alive')"] });
      assert.equal(next.stdout.toString().trim(), "alive");
    } finally {
      await sandbox.close();
    }
  });
});
