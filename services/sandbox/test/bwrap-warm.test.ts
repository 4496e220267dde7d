/**
 * The bwrap backend's warm pool of harness sandboxes (src/warm.ts), for real: every rollout gets a
 * sandbox of its own that no other rollout saw, and the run's limits start at hand-over, not while
 * the sandbox waits in the pool.
 */
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { describe, it } from "node:test";
import {
  createSandbox,
  loadSandboxConfig,
  type PythonProgram,
  runPythonTests,
  type Sandbox,
} from "../src/index.js";

const config = {
  ...loadSandboxConfig({}),
  backend: "bwrap" as const,
  bwrapUid: 61_000 + ((process.pid + 1) % 4_000),
  bwrapPrepared: 0,
};

/** Polls until `n` warm sandboxes report ready (their judge started, harness loaded). */
async function warmReady(sandbox: Sandbox, n: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (sandbox.warmStats!().ready < n) {
    assert.ok(
      Date.now() < deadline,
      `warm pool never reached ${n} ready: ${JSON.stringify(sandbox.warmStats!())}`,
    );
    await delay(20);
  }
}

/** The same sandbox with its run limits overridden (what a service's per-request limits would do). */
function withLimits(sandbox: Sandbox, limits: { wallTimeMs?: number; cpuTimeMs?: number }): Sandbox {
  return {
    backend: sandbox.backend,
    description: sandbox.description,
    limits: sandbox.limits,
    active: 0,
    waiting: 0,
    run: (r) => sandbox.run({ ...r, limits: { ...r.limits, ...limits } }),
    close: () => sandbox.close(),
  };
}

const program = (solution: string, test: string, timeLimitMs = 5_000): PythonProgram => ({
  prompt: "",
  solution,
  test,
  entryPoint: "f",
  ioTests: [],
  timeLimitMs,
  memoryLimitMb: 256,
});

/**
 * Leaves a mark in the sandbox's /tmp and reports whether one was there: the second call of a rollout
 * sees its own mark (so the probe works), the first call of every rollout must see none.
 */
const MARK = program(
  "import os\ndef f(x):\n    seen = os.path.exists('/tmp/rollout-mark')\n    open('/tmp/rollout-mark', 'w').write('x')\n    return -1 if seen else x\n",
  "def check(c):\n    assert c(1) == 1\n    assert c(2) == -1\n",
);

describe("bwrap warm pool", () => {
  it("serves every harness run from its own pre-started sandbox, never one a previous rollout used", async () => {
    const sandbox = await createSandbox({ ...config, concurrency: 2, bwrapWarm: 2 });
    try {
      await warmReady(sandbox, 2);
      const reports = await Promise.all(Array.from({ length: 8 }, () => runPythonTests(sandbox, MARK)));
      for (const r of reports) assert.equal(r.status, "passed", r.summary);
      const stats = sandbox.warmStats!();
      assert.equal(stats.handedOver, 8, JSON.stringify(stats));
      assert.equal(stats.cold, 0, JSON.stringify(stats));
      // Other programs never take a warm sandbox.
      const plain = await sandbox.run({ argv: ["python3", "-c", "print('plain')"] });
      assert.equal(plain.stdout.toString().trim(), "plain");
      assert.equal(sandbox.warmStats!().handedOver, 8);
    } finally {
      await sandbox.close();
    }
  });

  it("starts the wall-clock limit at hand-over, not while the sandbox waits in the pool", async () => {
    const sandbox = await createSandbox({ ...config, concurrency: 1, bwrapWarm: 1 });
    const capped = withLimits(sandbox, { wallTimeMs: 4_000 });
    try {
      await warmReady(sandbox, 1);
      await delay(5_000); // idle in the pool for longer than the run's whole wall limit
      const quick = await runPythonTests(
        capped,
        program("def f(x):\n    return x\n", "def check(c):\n    assert c(3) == 3\n"),
      );
      assert.equal(quick.status, "passed", quick.summary);
      assert.equal(quick.sandbox.timedOut, false);
      await warmReady(sandbox, 1);
      // The harness would allow 20 s; the sandbox's 4 s wall limit ends it.
      const slow = await runPythonTests(
        capped,
        program(
          "import time\ndef f(x):\n    time.sleep(60)\n    return x\n",
          "def check(c):\n    assert c(3) == 3\n",
          20_000,
        ),
      );
      assert.equal(slow.sandbox.timedOut, true, slow.summary);
      assert.equal(slow.status, "timeout", slow.summary);
      assert.ok(
        slow.sandbox.wallTimeMs >= 4_000 && slow.sandbox.wallTimeMs < 15_000,
        String(slow.sandbox.wallTimeMs),
      );
      assert.equal(sandbox.warmStats!().handedOver, 2);
    } finally {
      await sandbox.close();
    }
  });

  it("hands the run's CPU-time limit to the warm judge, and its candidate cannot raise it", async () => {
    const sandbox = await createSandbox({ ...config, concurrency: 1, bwrapWarm: 1 });
    try {
      await warmReady(sandbox, 1);
      // The program may use 30 s of CPU; the run's limit (1 s soft, 2 s hard) is what ends it.
      const r = await runPythonTests(
        withLimits(sandbox, { cpuTimeMs: 1_000, wallTimeMs: 60_000 }),
        program(
          "def f(x):\n    while True:\n        pass\n",
          "def check(c):\n    assert c(3) == 3\n",
          30_000,
        ),
      );
      // The harness lowers the candidate's limit to the judge's hard limit (2 s = soft = hard), so the
      // kernel's SIGKILL, not the harness's SIGXCPU, ends it: a candidate that exited, not a timeout.
      assert.ok(["runtime_error", "timeout"].includes(r.status), r.summary);
      assert.equal(r.passed, 0, r.summary);
      assert.equal(r.sandbox.timedOut, false, "ended by RLIMIT_CPU, not the sandbox's wall clock");
      assert.ok(
        r.sandbox.wallTimeMs < 25_000,
        `the 30 s program limit did not apply: ${r.sandbox.wallTimeMs} ms`,
      );
      assert.equal(sandbox.warmStats!().handedOver, 1);
    } finally {
      await sandbox.close();
    }
  });

  it("with SANDBOX_BWRAP_WARM=0 every harness run starts cold, as before", async () => {
    const sandbox = await createSandbox({ ...config, concurrency: 1, bwrapWarm: 0 });
    try {
      const r = await runPythonTests(sandbox, MARK);
      assert.equal(r.status, "passed", r.summary);
      assert.deepEqual(sandbox.warmStats!(), { ready: 0, starting: 0, handedOver: 0, cold: 1 });
    } finally {
      await sandbox.close();
    }
  });
});
