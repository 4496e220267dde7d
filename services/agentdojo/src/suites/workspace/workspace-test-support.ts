/**
 * Shared by the workspace tests: the suite built once from the benchmark data (`AGENTDOJO_DATA_DIR`),
 * fresh environments and direct tool calls. Test support only.
 * @module
 */
import { BENCHMARK_DATA_DIR, BENCHMARK_DATA_SKIP } from "../../../test/benchmark-data-dir.js";
import { openBenchmarkData, type SuiteData } from "../../benchmark-data.js";
import { runFunction } from "../../runtime.js";
import type { FunctionCall, Suite } from "../../suite.js";
import type { WorkspaceEnvironment } from "./environment.js";
import { buildWorkspaceSuite } from "./index.js";

export type Env = WorkspaceEnvironment;
/** `false`, or why the data-dependent tests skip. */
export const skip = BENCHMARK_DATA_SKIP;
export const EMMA = "emma.johnson@bluesparrowtech.com";

let cached: { data: SuiteData; suite: Suite<Env> } | undefined;
/** The benchmark data and the suite built from it (once per process). */
export function load(): { data: SuiteData; suite: Suite<Env> } {
  if (cached === undefined) {
    const data = openBenchmarkData(BENCHMARK_DATA_DIR!).suite("workspace");
    cached = { data, suite: buildWorkspaceSuite(data) };
  }
  return cached;
}
export const suite = () => load().suite;
export const fresh = (injections: Record<string, string> = {}) => suite().loadEnvironment(injections);
export const run = (env: Env, fn: string, args: Record<string, unknown> = {}) =>
  runFunction(suite(), env, fn, args);
export const c = (fn: string, args: Record<string, unknown> = {}): FunctionCall => ({ function: fn, args });
export const unread = (env: Env) => [...env.inbox.emails.values()].filter((e) => !e.read);
export const ofStatus = (env: Env, s: string) => [...env.inbox.emails.values()].filter((e) => e.status === s);
