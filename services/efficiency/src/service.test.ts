/** efficiency against the real harness in a real bwrap sandbox. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ComponentStatus } from "@reward-mesh/proto";
import { createSandbox, loadSandboxConfig, type Sandbox } from "@reward-mesh/sandbox";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { loadConfig } from "./config.js";
import {
  compareTimings,
  createEfficiencyService,
  efficiencyScore,
  MIN_SPEEDUP,
  mannWhitneyP,
  median,
} from "./service.js";

const sandboxConfig = { ...loadSandboxConfig({}), backend: "bwrap" as const };

const SLOW = "def total(n):\n    s = 0\n    for i in range(n + 1):\n        s += i\n    return s\n";
const FAST = "def total(n):\n    return n * (n + 1) // 2\n";
const task = (referenceSolution: string, extra: object = {}) => ({
  language: "python",
  test: "def check(candidate):\n    assert candidate(4000000) == 8000002000000\n    assert candidate(10) == 55\n",
  entryPoint: "total",
  referenceSolution,
  timeLimitMs: 3_000,
  ...extra,
});
const fence = (code: string) => `\`\`\`python\n${code}\`\`\``;

describe("efficiencyScore (CorrGRPO's table, §1.3 item 9)", () => {
  it("clip(1 - t_gen/t_ref, 0, 1), undefined when not measurable", () => {
    assert.equal(efficiencyScore(0.25, 1), 0.75);
    assert.equal(efficiencyScore(1, 1), 0);
    assert.equal(efficiencyScore(2, 1), 0);
    assert.equal(efficiencyScore(0.5, 1), 0.5);
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.equal(efficiencyScore(1, bad), undefined);
      assert.equal(efficiencyScore(bad, 1), undefined);
    }
  });
});

describe("timing statistics", () => {
  it("exact one-sided Mann–Whitney p-values and medians", () => {
    assert.equal(mannWhitneyP([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]), 1 / 252);
    assert.equal(mannWhitneyP([1, 2, 3, 4, 6], [5, 7, 8, 9, 10]), 2 / 252);
    assert.equal(mannWhitneyP([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]), 1);
    assert.equal(mannWhitneyP([1, 1, 1], [1, 1, 1]), 1, "ties count against the candidate");
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 2, 3]), 2.5);
    // Identical distributions: 0; a clearly 2x faster one: ~0.5.
    assert.equal(compareTimings([10, 11, 9.5, 10.2, 10.4], [10.1, 9.9, 10.6, 10, 10.3]).value, 0);
    const fast = compareTimings([5, 5.2, 4.9, 5.1, 5.3], [10.1, 9.9, 10.6, 10, 10.3]);
    assert.ok(fast.significant && Math.abs(fast.value - (1 - 5.1 / 10.1)) < 1e-12, JSON.stringify(fast));
  });

  it("a speed-up under MIN_SPEEDUP is jitter, even when the samples do not overlap", () => {
    const ref = [100, 100.5, 99.5, 100.2, 99.8];
    const by4 = ref.map((t) => t * 0.96);
    assert.equal(mannWhitneyP(by4, ref), 1 / 252, "completely separated");
    assert.deepEqual(compareTimings(by4, ref, 0).significant, true, "without a margin: significant");
    const v = compareTimings(by4, ref);
    assert.deepEqual([MIN_SPEEDUP, v.significant, v.value], [0.05, false, 0]);
    const by10 = compareTimings(
      ref.map((t) => t * 0.9),
      ref,
    );
    assert.ok(by10.significant && Math.abs(by10.value - 0.1) < 1e-12, JSON.stringify(by10));
  });
});

describe("efficiency service (bwrap sandbox)", () => {
  let sandbox: Sandbox;
  const runs: string[] = [];
  let svc: ReturnType<typeof createEfficiencyService>;
  before(async () => {
    sandbox = await createSandbox(sandboxConfig);
    // Record which program each execution ran (candidate or reference), to check interleaving and the cache.
    const recording: Sandbox = {
      ...sandbox,
      backend: sandbox.backend,
      limits: sandbox.limits,
      run: (req) => {
        const text = Buffer.from(req.stdin as Uint8Array).toString();
        runs.push(
          text.includes("for i in range(n + 1)") ? (text.includes("# candidate") ? "cand" : "ref") : "cand",
        );
        return sandbox.run(req);
      },
    };
    svc = createEfficiencyService({
      repeats: 5,
      maxRepeats: 9,
      cacheSize: 16,
      sandbox: sandboxConfig,
      sandboxInstance: recording,
    });
  });
  after(() => sandbox.close());

  const score = async (response: string, t: object) => {
    const r = await svc.scoreRollout(
      makeRollout({ response, task: { id: "t", kind: { case: "code", value: t } } }),
    );
    return r.components[0]!;
  };

  it("a much faster passing candidate scores high; runs interleave with the reference; the reference is cached, and re-measured before it grants a speed-up", async () => {
    runs.length = 0;
    const c = await score(fence(FAST), task(SLOW));
    assert.equal(c.status, ComponentStatus.OK, c.details);
    assert.ok(c.value > 0.5, `${c.value} ${c.details}`);
    assert.match(
      c.details,
      /^t_gen [\d.]+ ms ±\d+%, t_ref [\d.]+ ms ±\d+% — CPU time, median of 5 and 5 runs; speed-up ×[\d.]+$/,
    );
    assert.deepEqual(runs, ["cand", "ref", "ref", "cand", "cand", "ref", "ref", "cand", "cand", "ref"]);
    // A slower candidate: the cached reference (checked by one fresh run) says so.
    runs.length = 0;
    const slower = `${SLOW.replace("    return s\n", "    for i in range(n + 1):\n        s += 0\n    return s\n")}# candidate\n`;
    const again = await score(fence(slower), task(SLOW));
    assert.deepEqual(runs.slice(0, 6), ["cand", "cand", "cand", "cand", "cand", "ref"]);
    assert.equal(again.value, 0, again.details);
    // (cached), or re-measured when the probe found the machine's speed changed since.
    assert.match(again.details, /\((cached|re-measured: a fresh reference run took [\d.]+ ms, outside)/);
    // A faster one: a speed-up is only granted on reference runs interleaved with the candidate's.
    runs.length = 0;
    const faster = await score(fence(`${FAST}# another rollout\n`), task(SLOW));
    assert.ok(faster.value > 0.5, `${faster.value} ${faster.details}`);
    assert.match(faster.details, /\(re-measured/);
    assert.deepEqual(runs, [
      ...["cand", "cand", "cand", "cand", "cand", "ref"],
      ...["cand", "ref", "ref", "cand", "cand", "ref", "ref", "cand", "cand", "ref"],
    ]);
  });

  it("a rollout waiting for another's reference timing is not failed by that rollout's abort", async () => {
    const ref = `${SLOW}# reference measured by an aborted rollout\n`;
    const rollout = (response: string) =>
      makeRollout({ response, task: { id: "t-abort", kind: { case: "code", value: task(ref) } } });
    const ac = new AbortController();
    const first = svc.scoreRollout(rollout(fence(FAST)), { signal: ac.signal });
    const second = svc.scoreRollout(rollout(fence(`${FAST}# the waiting rollout\n`)));
    setTimeout(() => ac.abort(new Error("deadline")), 300);
    await assert.rejects(first, /deadline/);
    const c = (await second).components[0]!;
    assert.equal(c.status, ComponentStatus.OK, c.details);
    assert.ok(c.value > 0.5, `${c.value} ${c.details}`);
  });

  it("a reference that timed out is not cached as failing: the next rollout measures it again", async () => {
    const ref = `import time\n${SLOW}    time.sleep(30)\n`.replace(
      "    return s\n    time.sleep(30)\n",
      "    time.sleep(30)\n    return s\n",
    );
    const t = task(ref, { timeLimitMs: 1_000 });
    for (const attempt of [1, 2]) {
      runs.length = 0;
      const c = await score(fence(`${FAST}# attempt ${attempt}\n`), t);
      assert.equal(c.status, ComponentStatus.NOT_APPLICABLE, c.details);
      assert.match(c.details, /^reference fails its own tests: timeout/);
      assert.ok(runs.includes("ref"), `attempt ${attempt} ran the reference: ${runs.join(",")}`);
    }
  });

  it("a slower passing candidate scores 0 (one-sided)", async () => {
    const c = await score(fence(`${SLOW}# candidate\n`), task(FAST));
    assert.equal(c.value, 0);
    assert.equal(c.status, ComponentStatus.OK);
    assert.match(c.details, /speed-up ×0\./);
  });

  it("the reference against itself is inside the noise: 0 with the reason, not a random speed-up", async () => {
    const c = await score(fence(`${SLOW}# candidate\n`), task(SLOW));
    assert.equal(c.value, 0, c.details);
    assert.equal(c.status, ComponentStatus.OK);
  });

  it("a cached reference may deny a speed-up but not grant one: it is re-measured interleaved with the candidate", async () => {
    // The sandbox runs both programs for real; the CPU times it reports are replaced by scripted ones
    // (the test's clock), so the drift between the two measurements is exact.
    const times: Record<"ref" | "cand", number[]> = { ref: [], cand: [] };
    const roles: string[] = [];
    const scripted: Sandbox = {
      ...sandbox,
      backend: sandbox.backend,
      limits: sandbox.limits,
      run: async (req) => {
        const role = Buffer.from(req.stdin as Uint8Array)
          .toString()
          .includes("# the reference")
          ? "ref"
          : "cand";
        roles.push(role);
        const r = await sandbox.run(req);
        const lines = r.stdout.toString("utf8").split("\n");
        const report = JSON.parse(lines[1]!) as { check: { cpuMs: number } };
        const t = times[role].shift();
        assert.ok(t !== undefined, `an unscripted ${role} run after ${roles.join(",")}`);
        // Scripted: this run hit the time limit — killed before its report line.
        if (Number.isNaN(t)) return { ...r, timedOut: true, stdout: Buffer.from(`${lines[0]}\n`) };
        report.check.cpuMs = t;
        lines[1] = JSON.stringify(report);
        return { ...r, stdout: Buffer.from(lines.join("\n")) };
      },
    };
    const own = createEfficiencyService({
      repeats: 5,
      maxRepeats: 9,
      cacheSize: 16,
      sandbox: sandboxConfig,
      sandboxInstance: scripted,
    });
    const ref = `${SLOW}# the reference\n`;
    const run = async (response: string) =>
      (
        await own.scoreRollout(
          makeRollout({ response, task: { id: "t-drift", kind: { case: "code", value: task(ref) } } }),
        )
      ).components[0]!;
    const around = (t: number) => [t, t + 0.5, t - 0.5, t + 0.2, t - 0.2];

    // 1. A fast candidate; the reference is measured on a busy machine (115 ms) and cached.
    times.cand = around(40);
    times.ref = around(115);
    const fast = await run(fence(FAST));
    assert.ok(fast.value > 0.6, fast.details);
    assert.deepEqual([times.cand.length, times.ref.length], [0, 0]);

    // 2. A copy of the reference on a quiet machine (100 ms): the fresh probe run (100.1 ms) is outside
    // the cached samples, so fresh interleaved runs of both decide — 0 — and replace the cached samples.
    roles.length = 0;
    times.cand = [...around(100), ...around(100)];
    times.ref = [100.1, ...around(100.1)];
    const copy = await run(fence(`${SLOW}# a copy\n`));
    assert.equal(copy.value, 0, copy.details);
    assert.equal(copy.status, ComponentStatus.OK);
    assert.match(
      copy.details,
      /\(re-measured: a fresh reference run took 100\.1 ms, outside the cached 114\.5–115\.5 ms\)/,
    );
    assert.match(copy.details, /inside the measurement noise/);
    assert.deepEqual(roles, [
      ...["cand", "cand", "cand", "cand", "cand", "ref"],
      ...["cand", "ref", "ref", "cand", "cand", "ref", "ref", "cand", "cand", "ref"],
    ]);
    assert.deepEqual([times.cand.length, times.ref.length], [0, 0]);

    // 3. The next copy meets the fresh cached samples, and the probe agrees: 0 inside the noise.
    roles.length = 0;
    times.cand = around(100);
    times.ref = [100.3];
    const again = await run(fence(`${SLOW}# another copy\n`));
    assert.equal(again.value, 0, again.details);
    assert.match(again.details, /\(cached\)/);
    assert.deepEqual(roles, ["cand", "cand", "cand", "cand", "cand", "ref"]);

    // 4. A real speed-up against samples the probe confirms: still re-timed interleaved before it counts.
    roles.length = 0;
    times.cand = [...around(50), ...around(50)];
    times.ref = [100, ...around(100)];
    const half = await run(fence(`${FAST}# half\n`));
    assert.ok(Math.abs(half.value - 0.5) < 0.01, half.details);
    assert.match(
      half.details,
      /\(re-measured before crediting a speed-up: the cached median was 100\.1 ms\)/,
    );
    assert.equal(roles.filter((r) => r === "ref").length, 6);

    // 5. The machine slowed down since: a slower probe also marks the cache stale, and a reference
    // that then times out credits nothing (value 0, status OK) rather than disabling the component.
    roles.length = 0;
    times.cand = [...around(100), ...around(100)];
    times.ref = [130, Number.NaN];
    const busy = await run(fence(`${SLOW}# a copy on a busy machine\n`));
    assert.deepEqual([busy.value, busy.status], [0, ComponentStatus.OK]);
    assert.match(busy.details, /^could not re-measure the reference \(.*\): no speed-up credited$/);
    assert.deepEqual(roles.slice(0, 8), ["cand", "cand", "cand", "cand", "cand", "ref", "cand", "ref"]);
  });

  it("0 unless every test passes: wrong answer (OK), crash (ERROR), timeout (TIMEOUT)", async () => {
    const wrong = await score(fence("def total(n):\n    return 55\n"), task(SLOW));
    assert.deepEqual([wrong.value, wrong.status], [0, ComponentStatus.OK]);
    assert.match(wrong.details, /^not every test passes: 1\/2 tests passed/);
    const crash = await score(fence("def total(n):\n    return n / 0\n"), task(SLOW));
    assert.deepEqual([crash.value, crash.status], [0, ComponentStatus.ERROR]);
    const slow = await score(
      fence("def total(n):\n    while True:\n        pass\n"),
      task(SLOW, { timeLimitMs: 1_000 }),
    );
    assert.deepEqual([slow.value, slow.status], [0, ComponentStatus.TIMEOUT]);
  });

  it("NOT_APPLICABLE without a reference, or when the reference fails its own tests", async () => {
    const none = await score(fence(FAST), task(""));
    assert.deepEqual(
      [none.value, none.status, none.details],
      [0, ComponentStatus.NOT_APPLICABLE, "no reference_solution"],
    );
    const broken = await score(fence(FAST), task("def total(n):\n    return 0\n"));
    assert.equal(broken.status, ComponentStatus.NOT_APPLICABLE);
    assert.match(broken.details, /^reference fails its own tests: 0\/2 tests passed/);
  });

  it("reads EFFICIENCY_* and SANDBOX_*", () => {
    const c = loadConfig({ EFFICIENCY_REPEATS: "5", SANDBOX_BACKEND: "docker" });
    assert.equal(c.repeats, 5);
    assert.equal(c.maxRepeats, 9);
    assert.equal(loadConfig({ EFFICIENCY_REPEATS: "12" }).maxRepeats, 12);
    assert.equal(c.cacheSize, 4096);
    assert.equal(c.sandbox.backend, "docker");
    assert.equal(c.runtime.grpcPort, 50064);
    assert.throws(
      () => loadConfig({ EFFICIENCY_REPEATS: "0" }),
      /'EFFICIENCY_REPEATS' must be in \[1, 100\]/,
    );
  });
});
