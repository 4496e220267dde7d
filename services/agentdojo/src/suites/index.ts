/**
 * The suite registry. Banking is embedded (the demo works from a plain clone); every other suite is
 * built at run time from the user's copy of the benchmark data ({@link openBenchmarkData}). Adding a
 * suite is a new folder next to `banking/` exporting a builder, and one line in {@link SUITE_BUILDERS};
 * the scoring code, the attacks and the AgentEnvironment service only use the {@link Suite} interface.
 * @module
 */
import { openBenchmarkData, type SuiteData } from "../benchmark-data.js";
import type { AnySuite } from "../suite.js";
import { bankingSuite } from "./banking/index.js";
import { buildSlackSuite } from "./slack/index.js";
import { buildTravelSuite } from "./travel/index.js";
import { buildWorkspaceSuite } from "./workspace/index.js";

/** The embedded suites (no data directory needed). */
export const SUITES: ReadonlyMap<string, AnySuite> = new Map<string, AnySuite>([
  [bankingSuite.name, bankingSuite],
]);

/** The suites of the AgentDojo benchmark (v1.2.x), embedded or built from its data. */
export const BENCHMARK_SUITE_NAMES: readonly string[] = ["workspace", "travel", "banking", "slack"];

/** Builds a suite from its benchmark data (environment document, vectors, prompts and goals). */
export type SuiteBuilder = (data: SuiteData) => AnySuite;

/** Suites built from the benchmark data, by name. */
export const SUITE_BUILDERS: ReadonlyMap<string, SuiteBuilder> = new Map<string, SuiteBuilder>([
  ["workspace", buildWorkspaceSuite as SuiteBuilder],
  ["travel", buildTravelSuite],
  ["slack", buildSlackSuite],
]);

/**
 * The embedded suites plus, when `dataDir` is given, every suite of {@link SUITE_BUILDERS} built from
 * that benchmark data directory (a missing or malformed directory throws `BenchmarkDataError`).
 */
export function loadSuites(dataDir?: string): ReadonlyMap<string, AnySuite> {
  const out = new Map<string, AnySuite>(SUITES);
  if (dataDir === undefined || dataDir === "") return out;
  const data = openBenchmarkData(dataDir);
  for (const [name, build] of SUITE_BUILDERS) out.set(name, build(data.suite(name)));
  return out;
}
