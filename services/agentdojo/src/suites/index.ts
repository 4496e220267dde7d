/**
 * The suite registry. Adding a suite (slack, travel, workspace) is a new folder next to `banking/`
 * and one line here; the scoring code, the attacks and the AgentEnvironment service only use the
 * {@link Suite} interface.
 * @module
 */
import type { AnySuite } from "../suite.js";
import { bankingSuite } from "./banking/index.js";

/** Every available suite, by name. */
export const SUITES: ReadonlyMap<string, AnySuite> = new Map<string, AnySuite>([
  [bankingSuite.name, bankingSuite],
]);
