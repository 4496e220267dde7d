/**
 * The efficiency service (`specs/rewards.md` §1.3 item 9, §4):
 * `efficiency = clip(1 − t_gen / t_ref, 0, 1)` when the candidate passes every test, else 0;
 * NOT_APPLICABLE when the task has no `reference_solution`, the reference fails its own tests, or
 * the times are not measurable.
 *
 * Times are CPU times (user + sys) of the program's execution, measured by the harness with `wait4`
 * on the worker that runs it — interpreter start-up and the task's prompt imports excluded — in the
 * same sandbox backend for both. The candidate runs `repeats` times; on a reference-cache miss the
 * reference runs as often, interleaved (cand, ref, ref, cand, …) so drifts hit both alike; each side
 * keeps its minimum (noise only adds time). Reference timings are cached by content hash.
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
import { type ComponentValue, defineRewardService, type RewardServiceDefinition } from "@reward-mesh/sdk";
import type { EfficiencyOptions } from "./config.js";
import { sandboxStartFailed } from "./errors.js";

/** Version of the scoring logic. */
export const EFFICIENCY_SERVICE_VERSION = "1.0.0";

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
  | { readonly ok: true; readonly cpuMs: number; readonly runs: number }
  | { readonly ok: false; readonly reason: string };

function cacheKey(backend: string, program: PythonProgram, repeats: number): string {
  return createHash("sha256")
    .update(
      JSON.stringify([
        backend,
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
      const key = cacheKey(sb.backend, refProgram, options.repeats);
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
      const runCandidate = async () => {
        if (candFailure) return;
        const r = await runPythonTests(sb, candProgram, { signal });
        if (r.status === "passed" && r.cpuMs !== undefined) candTimes.push(r.cpuMs);
        else candFailure = r;
      };
      const runReference = async () => {
        if (!owner || refFailure) return;
        const r = await runPythonTests(sb, refProgram, { signal });
        if (r.status === "passed" && r.cpuMs !== undefined) refTimes.push(r.cpuMs);
        else refFailure = r.summary;
      };
      try {
        for (let i = 0; i < options.repeats; i++) {
          if (i % 2 === 0) {
            await runCandidate();
            await runReference();
          } else {
            await runReference();
            await runCandidate();
          }
        }
      } catch (err) {
        if (owner) {
          cache.delete(key); // not a verdict: the next rollout measures again
          fail!(err);
        }
        throw err;
      }
      if (owner) {
        settle!(
          refFailure
            ? { ok: false, reason: refFailure }
            : { ok: true, cpuMs: Math.min(...refTimes), runs: refTimes.length },
        );
      }
      const ref = await refEntry;
      if (!ref.ok)
        return one(0, `reference fails its own tests: ${ref.reason}`, ComponentStatus.NOT_APPLICABLE);
      if (candFailure) {
        const status =
          candFailure.status === "assertion_failed"
            ? ComponentStatus.OK
            : candFailure.status === "timeout"
              ? ComponentStatus.TIMEOUT
              : ComponentStatus.ERROR;
        return one(0, `not every test passes: ${candFailure.summary}`, status);
      }
      const tGen = Math.min(...candTimes);
      const value = efficiencyScore(tGen, ref.cpuMs);
      if (value === undefined)
        return one(
          0,
          `CPU times not measurable (t_gen ${tGen} ms, t_ref ${ref.cpuMs} ms)`,
          ComponentStatus.NOT_APPLICABLE,
        );
      return one(
        value,
        `t_gen ${ms(tGen)} ms, t_ref ${ms(ref.cpuMs)} ms${owner ? "" : " (cached)"} — CPU time, min of ${candTimes.length} and ${ref.runs} runs; speed-up ×${(ref.cpuMs / tGen).toFixed(2)}`,
      );
    },
  });
}
