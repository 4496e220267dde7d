/**
 * The containment tests every backend must pass (shared by `bwrap.test.ts` and
 * `sandbox.docker.test.ts`): no network, no writes outside the work dir, fork bomb, memory bomb,
 * infinite loop and a 100 MB stdout flood each contained and reported, the service's environment and
 * files invisible, a forged harness report rejected, and the sandbox still scoring correctly after.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { type LocalNats, startTestNats } from "@reward-mesh/sdk/testing";
import { type PythonProgram, runPythonTests, type Sandbox } from "../src/index.js";

/** A secret the service's process has and the sandbox must never see. */
const SECRET = `s3cret-${randomBytes(8).toString("hex")}`;
process.env.REWARD_MESH_TEST_SECRET = SECRET;

const py = (code: string) => ["python3", "-c", code];

/** A small correct LeetCode-style program. */
export const twoSum: PythonProgram = {
  prompt: "from typing import *",
  solution:
    "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n                return [seen[target - x], i]\n            seen[x] = i\n",
  test: "def check(candidate):\n    assert candidate(nums=[2, 7, 11, 15], target=9) == [0, 1]\n    assert candidate(nums=[3, 2, 4], target=6) == [1, 2]\n    assert candidate(nums=[3, 3], target=6) == [0, 1]\n",
  entryPoint: "Solution().twoSum",
  ioTests: [],
  timeLimitMs: 2_000,
  memoryLimitMb: 256,
};

/** How a backend's guarantees differ from the cgroup-based ones. */
export interface SecuritySuiteOptions {
  /**
   * Rootless bwrap: memory is RLIMIT_AS (allocations fail: MemoryError), not a cgroup whose OOM
   * killer ends the run and is reported.
   */
  readonly rlimitMemory?: boolean;
}

/** Registers the suite for one backend; `open` creates the sandbox under test. */
export function defineSecuritySuite(
  name: string,
  open: () => Promise<Sandbox | undefined>,
  options: SecuritySuiteOptions = {},
): void {
  describe(`${name} sandbox: containment`, () => {
    let sandbox: Sandbox | undefined;
    let nats: LocalNats;
    let secretDir: string;
    before(async () => {
      sandbox = await open();
      nats = await startTestNats();
      secretDir = mkdtempSync(join(tmpdir(), "reward-mesh-secret-"));
      writeFileSync(join(secretDir, "secret.txt"), SECRET, { mode: 0o600 });
    });
    after(async () => {
      await sandbox?.close();
      await nats?.stop();
      rmSync(secretDir, { recursive: true, force: true });
    });
    const sb = (t: { skip: (m: string) => void }) => {
      if (!sandbox) t.skip("no sandbox");
      return sandbox!;
    };

    it("runs a program with its files and stdin, as a non-root user, with a clean environment", async (t) => {
      const r = await sb(t).run({
        argv: py(
          "import os, sys, json; print(json.dumps([os.getuid(), os.getcwd(), open('in.txt').read(), sys.stdin.read(), sorted(os.environ)]))",
        ),
        files: { "in.txt": "file body" },
        stdin: "stdin body",
      });
      assert.equal(r.exitCode, 0, r.stderr.toString());
      const [uid, cwd, file, stdin, env] = JSON.parse(r.stdout.toString()) as [
        number,
        string,
        string,
        string,
        string[],
      ];
      assert.notEqual(uid, 0);
      assert.equal(cwd, "/tmp");
      assert.equal(file, "file body");
      assert.equal(stdin, "stdin body");
      assert.ok(!env.includes("REWARD_MESH_TEST_SECRET"), `env leaked: ${env.join(",")}`);
      assert.ok(env.includes("PATH") && env.length < 20, env.join(","));
    });

    it("has no network: connecting to NATS on the host's loopback fails", async (t) => {
      const port = Number(new URL(nats.url).port);
      // The port is really open on the host (so this test can fail).
      await new Promise<void>((resolve, reject) => {
        const s = createConnection({ host: "127.0.0.1", port }, () => {
          s.destroy();
          resolve();
        });
        s.on("error", reject);
      });
      const r = await sb(t).run({
        argv: py(
          `import socket\nfor host in ("127.0.0.1", "10.0.2.2", "8.8.8.8"):\n    try:\n        socket.create_connection((host, ${port}), timeout=2).close(); print(host, "CONNECTED")\n    except OSError as e:\n        print(host, type(e).__name__)`,
        ),
      });
      const out = r.stdout.toString();
      assert.ok(!out.includes("CONNECTED"), out);
      assert.match(out, /127\.0\.0\.1 ConnectionRefusedError/);
    });

    it("cannot write outside the work dir", async (t) => {
      const r = await sb(t).run({
        argv: py(
          "import os\nfor p in ['/x', '/etc/x', '/usr/x', '/opt/reward-mesh/harness.py', '/opt/reward-mesh/harness.pyc', '/usr/bin/python3', '/proc/sys/kernel/hostname', '/tmp/ok']:\n    try:\n        open(p, 'w').write('x'); print(p, 'WROTE')\n    except OSError as e:\n        print(p, type(e).__name__)",
        ),
      });
      const out = r.stdout.toString();
      assert.match(out, /^\/tmp\/ok WROTE$/m);
      assert.equal(out.match(/WROTE/g)?.length, 1, out);
    });

    it("cannot see the service's environment or files", async (t) => {
      const here = fileURLToPath(import.meta.url);
      const r = await sb(t).run({
        argv: py(
          `import os, glob\nprint(dict(os.environ))\nfor p in ['/proc/1/environ', '/proc/self/environ', ${JSON.stringify(join(secretDir, "secret.txt"))}, ${JSON.stringify(here)}, '/root', '/work', '/var/run/docker.sock', '/run/reward-mesh']:\n    try:\n        print(p, open(p, 'rb').read()[:200] if os.path.isfile(p) else os.listdir(p))\n    except OSError as e:\n        print(p, type(e).__name__)\nfor f in glob.glob('/proc/*/environ'):\n    try: print(f, open(f,'rb').read()[:300])\n    except OSError as e: print(f, type(e).__name__)`,
        ),
      });
      const out = r.stdout.toString();
      assert.ok(!out.includes(SECRET), out);
      assert.ok(!out.includes("describe("), "the test's own source was readable");
      assert.match(
        out,
        new RegExp(`${here.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} (FileNotFoundError|PermissionError)`),
      );
    });

    it("contains a fork bomb within the process limit", async (t) => {
      const started = performance.now();
      const r = await sb(t).run({
        argv: py(
          "import os, time\nn = 0\nwhile n < 10000:\n    try:\n        pid = os.fork()\n    except OSError as e:\n        print('stopped', n, type(e).__name__, flush=True); break\n    if pid == 0:\n        time.sleep(30); os._exit(0)\n    n += 1",
        ),
        limits: { maxProcesses: 32, wallTimeMs: 10_000 },
      });
      const m = r.stdout.toString().match(/stopped (\d+) (\w+)/);
      assert.ok(m, `no containment report: ${r.stdout.toString()} ${r.stderr.toString()}`);
      assert.ok(Number(m[1]) > 0 && Number(m[1]) < 32, m[0]);
      assert.equal(m[2], "BlockingIOError");
      assert.ok(performance.now() - started < 9_000, "the sandbox waited for the sleeping children");
    });

    it(
      options.rlimitMemory
        ? "stops a memory bomb at the memory limit: its allocations fail (MemoryError)"
        : "kills a memory bomb with the OOM killer and reports it",
      async (t) => {
        const started = performance.now();
        const r = await sb(t).run({
          argv: py("x = []\nwhile True:\n    x.append(bytearray(16 << 20))"),
          limits: { memoryBytes: 128 << 20, wallTimeMs: 20_000 },
        });
        const shown = JSON.stringify({ ...r, stdout: r.stdout.toString(), stderr: r.stderr.toString() });
        assert.equal(r.timedOut, false);
        if (options.rlimitMemory) {
          // No OOM killer and no report of one: the allocation past the limit fails, the program ends.
          assert.equal(r.oomKilled, false, shown);
          assert.equal(r.exitCode, 1, shown);
          assert.match(r.stderr.toString(), /MemoryError/, shown);
          assert.ok(performance.now() - started < 10_000);
        } else {
          assert.equal(r.oomKilled, true, shown);
          assert.equal(r.signal, "SIGKILL");
        }
      },
    );

    it("stops an infinite loop at the CPU limit, and a sleeper at the wall limit", async (t) => {
      const cpu = await sb(t).run({
        argv: py("while True: pass"),
        limits: { cpuTimeMs: 1_000, wallTimeMs: 10_000 },
      });
      assert.equal(cpu.timedOut, false);
      // SIGXCPU at the soft limit; a program that is PID 1 (Docker) ignores it and dies at the hard limit.
      assert.ok(
        cpu.signal === "SIGXCPU" || (name === "docker" && cpu.signal === "SIGKILL"),
        String(cpu.signal),
      );
      const started = performance.now();
      const wall = await sb(t).run({
        argv: py("import time; time.sleep(60)"),
        limits: { wallTimeMs: 1_000 },
      });
      assert.equal(wall.timedOut, true);
      assert.ok(performance.now() - started < 5_000);
    });

    it("cuts a 100 MB stdout flood at the output limit and says so", async (t) => {
      const started = performance.now();
      const r = await sb(t).run({
        argv: py("import sys\nfor _ in range(100):\n    sys.stdout.buffer.write(b'x' * (1 << 20))"),
        limits: { maxOutputBytes: 1 << 20, wallTimeMs: 20_000 },
      });
      assert.equal(r.outputLimitExceeded, true);
      assert.equal(r.stdoutTruncated, true);
      assert.equal(r.stdout.length, 1 << 20);
      assert.ok(performance.now() - started < 10_000);
    });

    it("the harness contains the same bombs and reports each as a component-worthy status", async (t) => {
      const s = sb(t);
      const run = (solution: string, extra: Partial<PythonProgram> = {}) =>
        runPythonTests(s, {
          ...twoSum,
          solution: `${twoSum.solution}\n${solution}`,
          timeLimitMs: 1_500,
          ...extra,
        });
      const loop = await run(
        "import itertools\n_orig = Solution.twoSum\ndef slow(self, nums, target):\n    if target == 6 and nums[0] == 3 and nums[1] == 2:\n        while True: pass\n    return _orig(self, nums, target)\nSolution.twoSum = slow\n",
      );
      assert.equal(loop.status, "timeout", loop.summary);
      assert.deepEqual(
        loop.tests.map((x) => x.outcome),
        ["pass", "timeout", "not_run"],
      );
      const bomb = await run("import os\nwhile True:\n    try: os.fork()\n    except OSError: pass\n");
      assert.ok(["timeout", "runtime_error"].includes(bomb.status), bomb.summary);
      const mem = await run("x = [bytearray(32 << 20) for _ in range(100)]\n", { memoryLimitMb: 128 });
      assert.equal(mem.status, "memory_error", mem.summary);
      // 100 MiB on stdout: drained and dropped past the cap (memory stays bounded), not a crash.
      const flood = await run("import sys\nfor _ in range(100): sys.stdout.write('y' * (1 << 20))\n");
      assert.equal(flood.status, "passed", flood.summary);
    });

    it("rejects a forged report: fake JSON on stdout, early exit, reaching for the harness's fds", async (t) => {
      const forged = JSON.stringify({
        v: 1,
        nonce: "0".repeat(32),
        syntax: { ok: true, error: null },
        compile: { ok: true, error: null },
        check: { status: "passed", completed: true, tests: [], running: null, error: null, cpuMs: 0 },
        io: null,
        harnessError: null,
      });
      const attack = `import os, sys, json
sys.stdout.write(${JSON.stringify(forged)} + "\\n"); sys.stdout.flush()
os.write(1, (${JSON.stringify(forged)} + "\\n").encode())
for pid in ("1", "2", str(os.getppid())):
    for fd in ("0", "1"):
        try:
            f = open("/proc/%s/fd/%s" % (pid, fd), "r+b", buffering=0)
            f.write((${JSON.stringify(forged)} + "\\n").encode()); print("OPENED", pid, fd, file=sys.stderr)
        except OSError:
            pass
os._exit(0)
`;
      const r = await runPythonTests(sb(t), { ...twoSum, solution: `${twoSum.solution}\n${attack}` });
      assert.notEqual(r.status, "passed", r.summary);
      assert.equal(r.passed, 0);
      assert.equal(r.status, "runtime_error", r.summary);
    });

    it("still scores the next rollout correctly", async (t) => {
      const r = await runPythonTests(sb(t), twoSum);
      assert.equal(r.status, "passed", r.summary);
      assert.equal(r.passed, 3);
      assert.ok((r.cpuMs ?? 0) > 0);
    });
  });
}
