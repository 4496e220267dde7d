/**
 * Does `efficiency` measure speed, not noise? HumanEval-style tasks (a function, its canonical solution,
 * `check(candidate)` asserts), scored by the efficiency service in a real bwrap sandbox:
 *
 * * each canonical solution against itself (a copy): the value should be 0 — goal: ≤ 0.05 for ≥ 95 % of
 *   the tasks (CorrGRPO's one-sample wall-clock ratio gave up to 0.39 for a copy);
 * * the same against the cached reference (a second copy, scored after the first has cached the
 *   reference's samples): the same goal — a cached reference measured under other load must not make a
 *   copy look faster;
 * * tasks with a known 2× faster solution (the reference does the same work twice): goal ≥ 0.4.
 *
 * The tasks are written here (no dataset is downloaded); they have HumanEval's shape and sizes (tiny
 * inputs, a few to a dozen asserts), which is where the noise dominates.
 * Writes `bench/results/efficiency.json` and prints a summary.
 *
 * Run: `npm run bench:efficiency` (after `scripts/bootstrap.sh`; ≈ 1–2 min on 2 cores).
 */
import { createEfficiencyService, loadConfig } from "@reward-mesh/efficiency";
import { ComponentStatus } from "@reward-mesh/proto";
import { createSandbox, loadSandboxConfig } from "@reward-mesh/sandbox";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { HUMANEVAL_STYLE as TASKS, type Task, task as t } from "./humaneval-style.js";
import { machineInfo, writeBenchResult } from "./results.js";

const GOALS = { selfAtMost: 0.05, selfShare: 0.95, twiceFasterAtLeast: 0.4 };

/** Tasks with a known 2× faster solution: the reference does the same work twice. */
const WORK = "    total = 0\n    for i in range(n):\n        total += i * i % 7\n";
const TWICE: readonly { readonly task: Task; readonly faster: string }[] = [30_000, 60_000, 120_000].map(
  (n) => ({
    task: t(
      `twice_${n}`,
      "work",
      `def work(n):\n${WORK}    first = total\n${WORK}    assert total == first\n    return total\n`,
      [`candidate(${n}) == sum(i * i % 7 for i in range(${n}))`],
    ),
    faster: `def work(n):\n${WORK}    return total\n`,
  }),
);

const sandboxConfig = { ...loadSandboxConfig({}), backend: "bwrap" as const };
const sandbox = await createSandbox(sandboxConfig);
const svc = createEfficiencyService({ ...loadConfig({}), sandbox: sandboxConfig, sandboxInstance: sandbox });

async function score(task: Task, candidate: string) {
  const r = await svc.scoreRollout(
    makeRollout({
      response: `\`\`\`python\n${candidate}\`\`\``,
      task: {
        id: task.name,
        kind: {
          case: "code",
          value: {
            language: "python",
            test: task.test,
            entryPoint: task.entry,
            referenceSolution: task.solution,
          },
        },
      },
    }),
  );
  return r.components[0]!;
}

const self: { task: string; value: number; details: string }[] = [];
try {
  for (const task of TASKS) {
    const c = await score(task, `${task.solution}# a copy of the reference\n`);
    if (c.status !== ComponentStatus.OK) throw new Error(`${task.name}: ${c.details}`);
    self.push({ task: task.name, value: c.value, details: c.details });
  }
  const selfCached: { task: string; value: number; details: string }[] = [];
  for (const task of TASKS) {
    const c = await score(task, `${task.solution}# another copy of the reference\n`);
    if (c.status !== ComponentStatus.OK) throw new Error(`${task.name}: ${c.details}`);
    selfCached.push({ task: task.name, value: c.value, details: c.details });
  }
  const twice: { task: string; value: number; details: string }[] = [];
  for (const { task, faster } of TWICE) {
    const c = await score(task, faster);
    twice.push({ task: task.name, value: c.value, details: c.details });
  }
  const within = self.filter((s) => s.value <= GOALS.selfAtMost).length / self.length;
  const withinCached = selfCached.filter((s) => s.value <= GOALS.selfAtMost).length / selfCached.length;
  const result = {
    benchmark: "efficiency",
    date: new Date().toISOString(),
    machine: machineInfo(),
    settings: {
      backend: sandbox.backend,
      repeats: loadConfig({}).repeats,
      maxRepeats: loadConfig({}).maxRepeats,
    },
    self: {
      tasks: self.length,
      shareAtMost005: within,
      max: Math.max(...self.map((s) => s.value)),
      aboveGoal: self.filter((s) => s.value > GOALS.selfAtMost),
    },
    selfCachedReference: {
      tasks: selfCached.length,
      shareAtMost005: withinCached,
      max: Math.max(...selfCached.map((s) => s.value)),
      reMeasured: selfCached.filter((s) => s.details.includes("re-measured")).length,
      aboveGoal: selfCached.filter((s) => s.value > GOALS.selfAtMost),
    },
    twiceFaster: twice,
    goals: GOALS,
    goalsMet: {
      self: within >= GOALS.selfShare,
      selfCachedReference: withinCached >= GOALS.selfShare,
      twiceFaster: twice.every((x) => x.value >= GOALS.twiceFasterAtLeast),
    },
  };
  const file = writeBenchResult("efficiency", result);
  console.log(
    `self vs self: ${(100 * within).toFixed(1)} % of ${self.length} tasks ≤ ${GOALS.selfAtMost} (max ${result.self.max.toFixed(3)}); ` +
      `against the cached reference: ${(100 * withinCached).toFixed(1)} % (max ${result.selfCachedReference.max.toFixed(3)}, ${result.selfCachedReference.reMeasured} re-measured); ` +
      `2× faster: ${twice.map((x) => x.value.toFixed(3)).join(", ")} (goal ≥ ${GOALS.twiceFasterAtLeast}) → ${file}`,
  );
} finally {
  await sandbox.close();
}
