/**
 * Where the tests find the user's AgentDojo benchmark data: `AGENTDOJO_DATA_DIR` (CI's `.ci/run` points
 * it at the copy beside the repository). Tests that need the data skip with {@link BENCHMARK_DATA_SKIP}
 * as their printed reason when it is absent.
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";

const dir = process.env.AGENTDOJO_DATA_DIR ?? "";

/** The data directory, or undefined when none is configured or it has no `tasks.json`. */
export const BENCHMARK_DATA_DIR: string | undefined =
  dir !== "" && existsSync(join(dir, "tasks.json")) ? dir : undefined;

/** `false` when the data is there, else the reason to skip (for `test(name, { skip }, fn)`). */
export const BENCHMARK_DATA_SKIP: string | false =
  BENCHMARK_DATA_DIR !== undefined
    ? false
    : dir === ""
      ? "AGENTDOJO_DATA_DIR is not set: the AgentDojo benchmark data (v1.2.1) is the user's, not in the repository"
      : `AGENTDOJO_DATA_DIR=${dir} has no tasks.json`;
