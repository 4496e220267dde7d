/**
 * The AgentDojo workspace suite (benchmark v1.2.1): an inbox, a calendar and a cloud drive, 24 tools,
 * 40 user tasks and 14 injection tasks. Built at run time from the user's copy of the benchmark data
 * ({@link buildWorkspaceSuite}): the environment, the injection vectors, the user-task prompts and the
 * injection goals come from there; tools, ground truths and checks are ours.
 * @module
 */
import { BenchmarkDataError, type SuiteData } from "../../benchmark-data.js";
import { defineSuite, type Suite, type UserTask } from "../../suite.js";
import { AGENTDOJO_SYSTEM_PROMPT } from "../banking/index.js";
import { type WorkspaceEnvironment, workspaceEnvironmentFrom } from "./environment.js";
import { workspaceInjectionTasks } from "./injection-tasks.js";
import { WORKSPACE_TOOLS } from "./tools.js";
import { WORKSPACE_USER_TASKS } from "./user-tasks.js";

export type {
  Calendar,
  CalendarEvent,
  CloudDrive,
  CloudDriveFile,
  Email,
  EmailContact,
  Inbox,
  WorkspaceEnvironment,
} from "./environment.js";
export { ATTACKER_EMAIL } from "./injection-tasks.js";
export { WORKSPACE_TOOLS } from "./tools.js";

/** The user-task prompt from the data (a task's own `prompt` is only a fallback for data without it). */
function withPrompt(data: SuiteData, t: UserTask<WorkspaceEnvironment>): UserTask<WorkspaceEnvironment> {
  const text = data.userTasks.get(t.id);
  if (text === undefined)
    throw new BenchmarkDataError(`AgentDojo benchmark data: tasks.json: suites.${data.suite} has no ${t.id}`);
  return {
    id: t.id,
    prompt: text.prompt,
    ...(t.groundTruthOutput === undefined ? {} : { groundTruthOutput: t.groundTruthOutput }),
    groundTruth: (pre) => t.groundTruth(pre),
    utility: (output, pre, post) => t.utility(output, pre, post),
    ...(t.initEnvironment === undefined ? {} : { initEnvironment: (env) => t.initEnvironment!(env) }),
  };
}

/** The workspace suite built from its benchmark data (`openBenchmarkData(dir).suite("workspace")`). */
export function buildWorkspaceSuite(data: SuiteData): Suite<WorkspaceEnvironment> {
  // Fail now, not at the first episode, when the environment document is malformed.
  workspaceEnvironmentFrom(data, {});
  return defineSuite<WorkspaceEnvironment>({
    name: "workspace",
    benchmarkVersion: data.benchmarkVersion,
    userName: "Emma Johnson",
    systemPrompt: AGENTDOJO_SYSTEM_PROMPT,
    injectionVectors: data.injectionVectors,
    loadEnvironment: (injections) => workspaceEnvironmentFrom(data, injections),
    tools: WORKSPACE_TOOLS,
    userTasks: WORKSPACE_USER_TASKS.map((t) => withPrompt(data, t)),
    injectionTasks: workspaceInjectionTasks(data),
  });
}
