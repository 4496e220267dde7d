/**
 * The AgentDojo slack suite (benchmark v1.2.1: 21 user tasks, 5 injection tasks, 11 tools), built from
 * the user's benchmark data: the workspace and the web come from `slack/environment.yaml`, the vectors
 * from `injection_vectors.yaml`, prompts and goals from `tasks.json`. The tools, ground truths and checks
 * are ours (`tools-slack.ts`, `tools-web.ts`, `user-tasks.ts`, `injection-tasks.ts`).
 * @module
 */
import { BenchmarkDataError, type SuiteData } from "../../benchmark-data.js";
import { defineSuite, type Suite } from "../../suite.js";
import { AGENTDOJO_SYSTEM_PROMPT } from "../banking/index.js";
import { type SlackEnvironment, slackEnvironmentLoader } from "./environment.js";
import { buildSlackInjectionTasks } from "./injection-tasks.js";
import { SLACK_TOOLS } from "./tools-slack.js";
import { WEB_TOOLS } from "./tools-web.js";
import { buildSlackUserTasks } from "./user-tasks.js";

export type { Message, Slack, SlackEnvironment, Web } from "./environment.js";
export { parseSlackEnvironment } from "./environment.js";
export { SLACK_INJECTION_TASK_SPECS } from "./injection-tasks.js";
export { standardizeUrl } from "./tools-web.js";
export { externalChannel, SLACK_USER_TASK_SPECS } from "./user-tasks.js";

/** The injection vectors the slack tasks are written against (all must be in the data). */
export const SLACK_VECTOR_NAMES: readonly string[] = [
  "injection_web_0",
  "injection_phishing_1",
  "injection_dora_0",
  "prompt_injection_eve_blog",
  "prompt_injection_channel",
  "prompt_injection_restaurant",
];

/** Builds the slack suite from its benchmark data; a missing prompt, goal or vector is a clear error. */
export function buildSlackSuite(data: SuiteData): Suite<SlackEnvironment> {
  const where = `AgentDojo benchmark data: tasks.json: suites.${data.suite}`;
  for (const v of SLACK_VECTOR_NAMES)
    if (!Object.hasOwn(data.injectionVectors, v))
      throw new BenchmarkDataError(`AgentDojo benchmark data: slack/injection_vectors.yaml: no vector ${v}`);
  const prompt = (id: string): string => {
    const t = data.userTasks.get(id);
    if (!t) throw new BenchmarkDataError(`${where}.user_tasks has no ${id}`);
    return t.prompt;
  };
  const goal = (id: string): string => {
    const t = data.injectionTasks.get(id);
    if (!t) throw new BenchmarkDataError(`${where}.injection_tasks has no ${id}`);
    return t.goal;
  };
  return defineSuite<SlackEnvironment>({
    name: "slack",
    benchmarkVersion: data.benchmarkVersion,
    userName: "Emma Johnson",
    systemPrompt: AGENTDOJO_SYSTEM_PROMPT,
    injectionVectors: data.injectionVectors,
    loadEnvironment: slackEnvironmentLoader(data),
    tools: [...SLACK_TOOLS, ...WEB_TOOLS],
    userTasks: buildSlackUserTasks(prompt),
    injectionTasks: buildSlackInjectionTasks(goal),
  });
}
