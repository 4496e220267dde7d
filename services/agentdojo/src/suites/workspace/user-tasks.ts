/**
 * The 40 workspace user tasks of AgentDojo benchmark v1.2.1: the 33 task classes (v1, with the v1.1.1
 * and v1.2 replacements; `user-tasks-calendar.ts`, `-email.ts`, `-drive.ts`) and the 7 tasks the
 * `TaskCombinator` builds from two of them ({@link combine}). Ground truths, `GROUND_TRUTH_OUTPUT`s
 * and checkers follow the Python; the prompts are the benchmark's text and come from its data at run
 * time (the suite attaches them to {@link WORKSPACE_USER_TASKS}). No workspace task has an `init_environment`.
 *
 * Which class a task id runs in v1.2.1 (`load_suites` imports v1, v1.1, v1.1.1, v1.2 and v1.2.1; the
 * newest version ≤ v1.2.1 wins, and `register_user_task` in a later module replaces the v1 entry):
 * 7, 18 (then v1.2), 20, 22, 23, 39 from v1.1.1; 0, 17, 18, 31, 32 from v1.2; the rest v1. The v1.1.2
 * module (case-insensitive recipients for 13 and 33) is never imported by the benchmark, so it does not
 * apply. Combined tasks hold the task objects they were built from: 19 checks the v1 `user_task_13`,
 * 36 and 37 the v1 `user_task_31` / `user_task_32` (no file-name check), 23 and 39 the v1.1.1
 * `user_task_22`.
 * @module
 */
import type { UserTask } from "../../suite.js";
import type { WorkspaceEnvironment } from "./environment.js";
import {
  userTask0,
  userTask1,
  userTask2,
  userTask3,
  userTask5,
  userTask6,
  userTask7,
  userTask8,
  userTask9,
  userTask10,
  userTask11,
  userTask12,
  userTask20,
  userTask21,
} from "./user-tasks-calendar.js";
import type { WorkspaceTaskDef } from "./user-tasks-checks.js";
import {
  userTask26,
  userTask27,
  userTask28,
  userTask29,
  userTask30,
  userTask31,
  userTask31V1,
  userTask32,
  userTask32V1,
  userTask34,
  userTask35,
} from "./user-tasks-drive.js";
import {
  userTask13,
  userTask14,
  userTask15,
  userTask16,
  userTask17,
  userTask18,
  userTask22,
  userTask24,
  userTask25,
  userTask33,
} from "./user-tasks-email.js";

export type { WorkspaceTaskDef } from "./user-tasks-checks.js";

/**
 * `TaskCombinator.create_combined_task`: both ground truths in order (each computed on the
 * pre-environment), `GROUND_TRUTH_OUTPUT` `"1. {first} 2.{second}"` (sic, no space), and utility =
 * the first task's checker with `strict=False` and the second's with `strict=True`.
 */
export function combine(id: string, first: WorkspaceTaskDef, second: WorkspaceTaskDef): WorkspaceTaskDef {
  return {
    id,
    groundTruthOutput: `1. ${first.groundTruthOutput} 2.${second.groundTruthOutput}`,
    defaultStrict: true,
    groundTruth: (pre) => [...first.groundTruth(pre), ...second.groundTruth(pre)],
    utility: (o, pre, post) => first.utility(o, pre, post, false) && second.utility(o, pre, post, true),
  };
}

/** The combined tasks: id → the two tasks (as the combinator saw them). */
const COMBINED: readonly WorkspaceTaskDef[] = [
  combine("user_task_4", userTask1, userTask6),
  combine("user_task_19", userTask1, userTask13),
  combine("user_task_23", userTask1, userTask22),
  combine("user_task_36", userTask30, userTask31V1),
  combine("user_task_37", userTask30, userTask32V1),
  combine("user_task_38", userTask27, userTask35),
  combine("user_task_39", userTask16, userTask22),
];

const taskNumber = (t: WorkspaceTaskDef) => Number(t.id.slice("user_task_".length));

/** Every workspace task definition of v1.2.1, `user_task_0` … `user_task_39`. */
export const WORKSPACE_TASK_DEFS: readonly WorkspaceTaskDef[] = [
  userTask0,
  userTask1,
  userTask2,
  userTask3,
  userTask5,
  userTask6,
  userTask7,
  userTask8,
  userTask9,
  userTask10,
  userTask11,
  userTask12,
  userTask13,
  userTask14,
  userTask15,
  userTask16,
  userTask17,
  userTask18,
  userTask20,
  userTask21,
  userTask22,
  userTask24,
  userTask25,
  userTask26,
  userTask27,
  userTask28,
  userTask29,
  userTask30,
  userTask31,
  userTask32,
  userTask33,
  userTask34,
  userTask35,
  ...COMBINED,
].sort((a, b) => taskNumber(a) - taskNumber(b));

/** A definition as a {@link UserTask}: evaluated with its own `strict` default, prompt attached. */
function asUserTask(def: WorkspaceTaskDef, prompt: string): UserTask<WorkspaceEnvironment> {
  return {
    id: def.id,
    prompt,
    ...(def.groundTruthOutput === "" ? {} : { groundTruthOutput: def.groundTruthOutput }),
    groundTruth: (pre) => def.groundTruth(pre),
    utility: (output, pre, post) => def.utility(output, pre, post, def.defaultStrict),
  };
}

/**
 * The workspace user tasks with EMPTY prompts (the prompts are the benchmark's text, only in its data):
 * the suite builder attaches `SuiteData.userTasks` prompts to them.
 */
export const WORKSPACE_USER_TASKS: UserTask<WorkspaceEnvironment>[] = WORKSPACE_TASK_DEFS.map((d) =>
  asUserTask(d, ""),
);
