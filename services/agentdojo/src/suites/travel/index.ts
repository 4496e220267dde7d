/**
 * The AgentDojo travel suite (benchmark v1.2.1: 28 tools, 20 user tasks, 7 injection tasks), built at
 * run time from the benchmark data ({@link SuiteData}): the environment document, the injection
 * vectors, the user-task prompts and the injection goals are the benchmark's and are read from the
 * data; tools, ground truths and checks are implemented here.
 * @module
 */
import { BenchmarkDataError, type SuiteData } from "../../benchmark-data.js";
import { defineSuite, type InjectionTask, type Suite, type UserTask } from "../../suite.js";
import { AGENTDOJO_SYSTEM_PROMPT } from "../banking/index.js";
import { type TravelEnvironment, travelEnvironmentLoader } from "./environment.js";
import { TRAVEL_INJECTION_TASKS } from "./injection-tasks.js";
import { TRAVEL_TOOLS } from "./tools.js";
import { USER_TASKS_0_TO_10 } from "./user-tasks.js";
import { USER_TASKS_11_TO_19 } from "./user-tasks-2.js";

export type {
  CalendarEvent,
  CarRentalCompany,
  Email,
  Flight,
  Hotel,
  Reservation,
  Restaurant,
  TravelEnvironment,
  User,
} from "./environment.js";
export { travelEnvironmentFrom } from "./environment.js";
export { checkNewEmail, checkNewEvent, checkNewReservation } from "./diff.js";
export { TRAVEL_INJECTION_TASKS } from "./injection-tasks.js";
export { TRAVEL_TOOLS } from "./tools.js";

/** Every user task definition, `user_task_0` … `user_task_19`. */
export const TRAVEL_USER_TASKS = [...USER_TASKS_0_TO_10, ...USER_TASKS_11_TO_19];

/** The travel suite from the benchmark data; a task the data does not describe is an error. */
export function buildTravelSuite(data: SuiteData): Suite<TravelEnvironment> {
  const where = `suite ${JSON.stringify(data.suite)} of the benchmark data (${data.benchmarkVersion})`;
  const userTasks: UserTask<TravelEnvironment>[] = TRAVEL_USER_TASKS.map((t) => {
    const text = data.userTasks.get(t.id);
    if (!text) throw new BenchmarkDataError(`${where} has no prompt for ${t.id}`);
    return { ...t, prompt: text.prompt };
  });
  const injectionTasks: InjectionTask<TravelEnvironment>[] = TRAVEL_INJECTION_TASKS.map((t) => {
    const text = data.injectionTasks.get(t.id);
    if (!text) throw new BenchmarkDataError(`${where} has no goal for ${t.id}`);
    return { ...t, goal: text.goal };
  });
  return defineSuite<TravelEnvironment>({
    name: "travel",
    benchmarkVersion: data.benchmarkVersion,
    userName: "Emma Johnson",
    systemPrompt: AGENTDOJO_SYSTEM_PROMPT,
    injectionVectors: data.injectionVectors,
    loadEnvironment: travelEnvironmentLoader(data),
    tools: TRAVEL_TOOLS,
    userTasks,
    injectionTasks,
  });
}
