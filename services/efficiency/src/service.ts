/**
 * The efficiency service (`specs/rewards.md` §1.3 item 9, §4):
 * `efficiency = clip(1 − t_gen / t_ref, 0, 1)` when the candidate passes every test, else 0;
 * NOT_APPLICABLE when the task has no `reference_solution`, the reference fails its own tests, or
 * the times are not measurable.
 *
 * Times are CPU times (user + sys) of the program's execution, measured by the harness with `wait4`
 * on the worker that runs it — interpreter start-up and the task's prompt imports excluded — in the
 * same sandbox (backend and image) for both. The candidate runs `repeats` times; on a reference-cache
 * miss the reference runs as often, interleaved (cand, ref, ref, cand, …) so drifts hit both alike.
 * The score compares medians, and only counts when the candidate is faster beyond the measurement
 * noise: faster than `(1 − MIN_SPEEDUP) ×` the reference by an exact one-sided Mann–Whitney test at
 * {@link SIGNIFICANCE}; while it looks faster but is not yet significant, both sides get more runs (up
 * to `maxRepeats`). Inside the noise the value is 0 and `details` says so. Reference samples are cached
 * per task and sandbox image, with their spread; cached samples come from another time window: one
 * fresh reference run checks they still hold, and they may deny a speed-up but never grant one — a
 * candidate faster than them, or than stale ones, is timed again interleaved with fresh reference runs,
 * which then replace the cached ones.
 * @module
 */
import { createHash } from "node:crypto";
import { type CodeTask, ComponentStatus } from "@reward-mesh/proto";
import {
  createSandbox,
  extractCode,
  programFor,
  type PythonProgram,
  referenceCode,
  runPythonTests,
  type Sandbox,
  type TestReport,
  validateCodeTask,
} from "@reward-mesh/sandbox";
import {
  activeContext,
  type ComponentValue,
  defineRewardService,
  inSpan,
  meshMeter,
  type RewardServiceDefinition,
  SECONDS_BUCKETS,
} from "@reward-mesh/sdk";
import type { EfficiencyOptions } from "./config.js";
import { sandboxStartFailed } from "./errors.js";

// Created on first use: the meter of the SDK main.ts starts after this module is imported.
let sandboxMetrics:
  | {
      runs: ReturnType<ReturnType<typeof meshMeter>["createCounter"]>;
      duration: ReturnType<ReturnType<typeof meshMeter>["createHistogram"]>;
    }
  | undefined;

/**
 * One sandbox run (candidate or reference) in a `reward/efficiency/sandbox` span, counted per outcome
 * (`error` when it threw) in `reward_mesh_efficiency_sandbox_runs` and timed, like code-exec's runs.
 */
async function sandboxed<R extends { status: string }>(role: string, run: () => Promise<R>): Promise<R> {
  return inSpan("reward/efficiency/sandbox", activeContext(), { "sandbox.role": role }, async (span) => {
    const t0 = performance.now();
    let outcome = "error";
    try {
      const r = await run();
      outcome = r.status;
      span.setAttributes({ "sandbox.outcome": outcome });
      return r;
    } finally {
      sandboxMetrics ??= {
        runs: meshMeter().createCounter("reward_mesh_efficiency_sandbox_runs", {
          description: "Sandbox executions of efficiency, per role (candidate, reference) and outcome",
        }),
        duration: meshMeter().createHistogram("reward_mesh_efficiency_sandbox_duration_seconds", {
          unit: "s",
          advice: { explicitBucketBoundaries: [...SECONDS_BUCKETS] },
          description: "Wall time of each sandbox execution of efficiency, per role and outcome",
        }),
      };
      sandboxMetrics.runs.add(1, { role, outcome });
      sandboxMetrics.duration.record((performance.now() - t0) / 1000, { role, outcome });
    }
  });
}

/** Version of the scoring logic. */
export const EFFICIENCY_SERVICE_VERSION = "2.1.0";

/** Options of {@link createEfficiencyService}. */
export interface EfficiencyServiceOptions extends EfficiencyOptions {
  /** A sandbox created by the caller (main.ts logs its backend and closes it); else created on first use. */
  readonly sandboxInstance?: Sandbox;
}

/**
 * `clip(1 − tGen/tRef, 0, 1)`, or undefined when either time is not finite and > 0 (CorrGRPO then
 * removes the weight). Equal times give 0, twice as fast 0.5, slower 0.
 */
export function efficiencyScore(tGenMs: number, tRefMs: number): number | undefined {
  if (!(Number.isFinite(tGenMs) && tGenMs > 0 && Number.isFinite(tRefMs) && tRefMs > 0)) return undefined;
  return Math.min(1, Math.max(0, 1 - tGenMs / tRefMs));
}

type RefTiming =
  | { readonly ok: true; readonly samples: readonly number[] }
  | { readonly ok: false; readonly reason: string };

/** One-sided significance level of "the candidate is faster" (exact Mann–Whitney U). */
export const SIGNIFICANCE = 0.01;

function cacheKey(sandbox: string, program: PythonProgram, repeats: number): string {
  return createHash("sha256")
    .update(
      JSON.stringify([
        sandbox,
        repeats,
        program.prompt,
        program.solution,
        program.test,
        program.entryPoint,
        program.ioTests.map((t) => [t.stdin, t.expectedStdout]),
        program.timeLimitMs,
        program.memoryLimitMb,
      ]),
    )
    .digest("hex");
}

const ms = (x: number) => (x >= 10 ? x.toFixed(1) : x.toFixed(3));

/** The median of a non-empty list. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * Exact one-sided p-value of "`faster` tends to be smaller than `slower`" (Mann–Whitney U, no
 * normal approximation): U counts pairs where the `faster` sample is not smaller (ties count against
 * it, so ties make the test more conservative); p = P(U₀ ≤ U) over all C(n+m, n) equally likely
 * rankings under the null. Complete separation of 5 vs 5 runs gives p = 1/252 ≈ 0.004.
 */
export function mannWhitneyP(faster: readonly number[], slower: readonly number[]): number {
  const n = faster.length;
  const m = slower.length;
  if (n === 0 || m === 0) return 1;
  let u = 0;
  for (const f of faster) for (const s of slower) if (f >= s) u++;
  // ways[i][j][k]: rankings of i "faster" and j "slower" values with U = k (Mann–Whitney recurrence).
  const max = n * m;
  let prev: number[][] = Array.from({ length: m + 1 }, () => new Array<number>(max + 1).fill(0));
  for (let j = 0; j <= m; j++) prev[j]![0] = 1;
  for (let i = 1; i <= n; i++) {
    const cur: number[][] = Array.from({ length: m + 1 }, () => new Array<number>(max + 1).fill(0));
    cur[0]![0] = 1;
    for (let j = 1; j <= m; j++)
      for (let k = 0; k <= i * j; k++) cur[j]![k] = (k >= j ? prev[j]![k - j]! : 0) + cur[j - 1]![k]!;
    prev = cur;
  }
  const ways = prev[m]!;
  let below = 0;
  let total = 0;
  for (let k = 0; k <= max; k++) {
    total += ways[k]!;
    if (k <= u) below += ways[k]!;
  }
  return below / total;
}

/**
 * Smallest speed-up ever credited: CPU times of one program jitter by a few per cent from run to run,
 * so a candidate must be faster than `(1 − MIN_SPEEDUP) ×` the reference, significantly, to count.
 */
export const MIN_SPEEDUP = 0.05;

/**
 * Verdict on two sets of CPU times: `significant` when `gen` is faster than `(1 − margin) × ref` by an
 * exact one-sided Mann–Whitney test at {@link SIGNIFICANCE} and the medians differ by more than the
 * margin; the score when significant, else 0. `ratio` is median(gen) / median(ref).
 */
export function compareTimings(
  gen: readonly number[],
  ref: readonly number[],
  margin = MIN_SPEEDUP,
): { readonly value: number; readonly significant: boolean; readonly p: number; readonly ratio: number } {
  const ratio = median(gen) / median(ref);
  const p = mannWhitneyP(
    gen,
    ref.map((t) => t * (1 - margin)),
  );
  const raw = efficiencyScore(median(gen), median(ref)) ?? 0;
  const significant = p <= SIGNIFICANCE && raw > margin;
  return { value: significant ? raw : 0, significant, p, ratio };
}

const spread = (xs: readonly number[]) => {
  const med = median(xs);
  return med > 0 ? `±${((100 * (Math.max(...xs) - Math.min(...xs))) / 2 / med).toFixed(0)}%` : "";
};

/** Creates the efficiency service. */
export function createEfficiencyService(options: EfficiencyServiceOptions): RewardServiceDefinition {
  let sandbox: Promise<Sandbox> | undefined = options.sandboxInstance
    ? Promise.resolve(options.sandboxInstance)
    : undefined;
  const getSandbox = () => {
    sandbox ??= createSandbox(options.sandbox).catch((err: unknown) => {
      sandbox = undefined;
      throw sandboxStartFailed(err);
    });
    return sandbox;
  };
  const cache = new Map<string, Promise<RefTiming>>();
  const remember = (key: string, value: Promise<RefTiming>) => {
    cache.delete(key);
    cache.set(key, value);
    while (cache.size > options.cacheSize) cache.delete(cache.keys().next().value!);
  };

  return defineRewardService({
    name: "efficiency",
    version: EFFICIENCY_SERVICE_VERSION,
    domains: ["code"],
    taskKinds: ["code"],
    components: [
      {
        name: "efficiency",
        description: "clip(1 - t_gen/t_ref, 0, 1) in CPU time when every test passes, else 0",
        min: 0,
        max: 1,
      },
    ],
    validate: (rollout) => validateCodeTask(rollout.task!.kind.value as CodeTask),
    score: async (rollout, { signal }): Promise<ComponentValue[]> => {
      const task = rollout.task!.kind.value as CodeTask;
      const one = (value: number, details: string, status?: ComponentStatus): ComponentValue[] => [
        { name: "efficiency", value, details, ...(status === undefined ? {} : { status }) },
      ];
      const refCode = referenceCode(task);
      if (refCode === "") return one(0, "no reference_solution", ComponentStatus.NOT_APPLICABLE);
      const candidate = extractCode(rollout.response, task.entryPoint).code;
      if (candidate === "") return one(0, "no code in the response", ComponentStatus.ERROR);

      const sb = await getSandbox();
      const candProgram = programFor(task, candidate, options.sandbox);
      const refProgram = programFor(task, refCode, options.sandbox);
      // Per task and sandbox image (the description names the backend and its image / interpreter).
      const key = cacheKey(`${sb.backend} ${sb.description}`, refProgram, options.repeats);
      let refEntry = cache.get(key);
      let settle: ((t: RefTiming) => void) | undefined;
      let fail: ((e: unknown) => void) | undefined;
      if (refEntry) {
        remember(key, refEntry);
      } else {
        refEntry = new Promise<RefTiming>((resolve, reject) => {
          settle = resolve;
          fail = reject;
        });
        refEntry.catch(() => {}); // observed below or by a concurrent rollout
        remember(key, refEntry);
      }
      const owner = settle !== undefined;

      const candTimes: number[] = [];
      let candFailure: TestReport | undefined;
      const refTimes: number[] = [];
      let refFailure: string | undefined;
      let refTransient = false;
      // The owner of a cache entry measures the reference; a rollout re-checking a cached one too.
      let measureRef = owner;
      const runCandidate = async () => {
        if (candFailure) return;
        const r = await sandboxed("candidate", () => runPythonTests(sb, candProgram, { signal }));
        if (r.status === "passed" && r.cpuMs !== undefined) candTimes.push(r.cpuMs);
        else candFailure = r;
      };
      const runReference = async () => {
        if (!measureRef || refFailure) return;
        const r = await sandboxed("reference", () => runPythonTests(sb, refProgram, { signal }));
        if (r.status === "passed" && r.cpuMs !== undefined) refTimes.push(r.cpuMs);
        else {
          refFailure = r.summary;
          refTransient = r.status === "timeout" || r.status === "memory_error" || r.status === "worker_error";
        }
      };
      // Interleaved pairs (cand, ref, ref, cand, …) so drifts hit both alike.
      const pair = async (i: number) => {
        if (i % 2 === 0) {
          await runCandidate();
          await runReference();
        } else {
          await runReference();
          await runCandidate();
        }
      };
      const maxRepeats = Math.max(options.repeats, options.maxRepeats ?? 9);
      /** `repeats` pairs; while the candidate looks faster but not yet significantly, more, up to maxRepeats. */
      const measure = async () => {
        let pairs = 0;
        for (; pairs < options.repeats; pairs++) await pair(pairs);
        while (measureRef && !candFailure && !refFailure && pairs < maxRepeats) {
          const v = compareTimings(candTimes, refTimes);
          if (v.significant || v.ratio >= 1 - MIN_SPEEDUP) break;
          await pair(pairs++);
        }
      };
      try {
        await measure();
      } catch (err) {
        if (owner) {
          cache.delete(key); // not a verdict: the next rollout measures again
          fail!(err);
        }
        throw err;
      }
      if (owner) {
        settle!(refFailure ? { ok: false, reason: refFailure } : { ok: true, samples: refTimes });
        // A reference that timed out or ran out of memory may have met a busy machine: not cached, the
        // next rollout of the task measures it again (a wrong answer or a crash is cached).
        if (refTransient && cache.get(key) === refEntry) cache.delete(key);
      }
      let ref: RefTiming;
      try {
        ref = await refEntry;
      } catch (err) {
        if (owner || signal?.aborted) throw err;
        // The rollout measuring the reference for everyone failed (e.g. its request was aborted): its
        // error is not this rollout's — measure the reference here, uncached.
        const own: number[] = [];
        let why: string | undefined;
        for (let k = 0; k < options.repeats && why === undefined; k++) {
          const r = await runPythonTests(sb, refProgram, { signal });
          if (r.status === "passed" && r.cpuMs !== undefined) own.push(r.cpuMs);
          else why = r.summary;
        }
        ref = why === undefined ? { ok: true, samples: own } : { ok: false, reason: why };
      }
      if (!ref.ok)
        return one(0, `reference fails its own tests: ${ref.reason}`, ComponentStatus.NOT_APPLICABLE);
      // Cached samples were measured in another time window (another load, another CPU frequency: CPU
      // times of one program drift by up to ×1.5 on a shared machine). One fresh reference run probes
      // them: outside their range (± MIN_SPEEDUP) they are stale. Fresh or not, they may deny a speed-up
      // but never grant one. Stale or beaten, fresh candidate runs interleaved with fresh reference runs
      // decide, and the fresh reference samples replace the cached ones.
      let probe: TestReport | undefined;
      if (!owner && !candFailure)
        probe = await sandboxed("reference", () => runPythonTests(sb, refProgram, { signal }));
      const lo = Math.min(...ref.samples) * (1 - MIN_SPEEDUP);
      const hi = Math.max(...ref.samples) * (1 + MIN_SPEEDUP);
      const stale =
        probe !== undefined && !(probe.status === "passed" && probe.cpuMs! >= lo && probe.cpuMs! <= hi);
      // A cached reference in range: the candidate alone may still need more runs to be conclusive.
      while (!owner && !stale && !candFailure && candTimes.length < maxRepeats) {
        const v = compareTimings(candTimes, ref.samples);
        if (v.significant || v.ratio >= 1 - MIN_SPEEDUP) break;
        await runCandidate();
      }
      let source = owner ? "" : " (cached)";
      if (!owner && !candFailure && (stale || compareTimings(candTimes, ref.samples).significant)) {
        source = stale
          ? probe!.status === "passed"
            ? ` (re-measured: a fresh reference run took ${ms(probe!.cpuMs!)} ms, outside the cached ${ms(lo / (1 - MIN_SPEEDUP))}–${ms(hi / (1 + MIN_SPEEDUP))} ms)`
            : ` (re-measured: a fresh reference run ended ${probe!.status})`
          : ` (re-measured before crediting a speed-up: the cached median was ${ms(median(ref.samples))} ms)`;
        measureRef = true;
        candTimes.length = 0;
        await measure();
        if (refFailure && refTransient)
          return one(0, `could not re-measure the reference (${refFailure}): no speed-up credited`);
        if (refFailure)
          return one(0, `reference fails its own tests: ${refFailure}`, ComponentStatus.NOT_APPLICABLE);
        if (!candFailure) {
          ref = { ok: true, samples: refTimes };
          if (cache.get(key) === refEntry) remember(key, Promise.resolve(ref));
        }
      }
      if (candFailure) {
        if (candFailure.taskError)
          return one(
            0,
            `task error, not the candidate's: ${candFailure.summary}`,
            ComponentStatus.NOT_APPLICABLE,
          );
        const status =
          candFailure.status === "assertion_failed"
            ? ComponentStatus.OK
            : candFailure.status === "timeout"
              ? ComponentStatus.TIMEOUT
              : ComponentStatus.ERROR;
        return one(0, `not every test passes: ${candFailure.summary}`, status);
      }
      const tGen = median(candTimes);
      const tRef = median(ref.samples);
      if (efficiencyScore(tGen, tRef) === undefined)
        return one(
          0,
          `CPU times not measurable (t_gen ${tGen} ms, t_ref ${tRef} ms)`,
          ComponentStatus.NOT_APPLICABLE,
        );
      const v = compareTimings(candTimes, ref.samples);
      const times = `t_gen ${ms(tGen)} ms ${spread(candTimes)}, t_ref ${ms(tRef)} ms ${spread(ref.samples)}${source} — CPU time, median of ${candTimes.length} and ${ref.samples.length} runs; speed-up ×${(1 / v.ratio).toFixed(2)}`;
      if (!v.significant && v.ratio < 1)
        return one(
          0,
          `${times}; inside the measurement noise (one-sided p = ${v.p.toFixed(3)} for a speed-up beyond ${100 * MIN_SPEEDUP} %, needs ≤ ${SIGNIFICANCE})`,
        );
      return one(v.value, times);
    },
  });
}
