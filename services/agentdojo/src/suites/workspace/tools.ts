/**
 * The 24 workspace tools in AgentDojo's order (`default_suites/v1/workspace/task_suite.py`): email,
 * calendar, then cloud drive.
 * @module
 */
import type { Tool } from "../../suite.js";
import type { WorkspaceEnvironment } from "./environment.js";
import { CALENDAR_TOOLS } from "./tools-calendar.js";
import { DRIVE_TOOLS } from "./tools-drive.js";
import { EMAIL_TOOLS } from "./tools-email.js";

/** Every workspace tool. */
export const WORKSPACE_TOOLS: readonly Tool<WorkspaceEnvironment>[] = [
  ...EMAIL_TOOLS,
  ...CALENDAR_TOOLS,
  ...DRIVE_TOOLS,
];
