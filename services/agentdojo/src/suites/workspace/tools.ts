/**
 * The 24 workspace tools in AgentDojo's order (`default_suites/v1/workspace/task_suite.py`): email,
 * calendar, then cloud drive.
 * @module
 */
import type { Tool } from "../../suite.js";
import type { WorkspaceEnvironment } from "./environment.js";
import { CALENDAR_TOOLS } from "../../clients/calendar-tools.js";
import { EMAIL_TOOLS } from "../../clients/email-tools.js";
import { DRIVE_TOOLS } from "./tools-drive.js";

/** Every workspace tool. */
export const WORKSPACE_TOOLS: readonly Tool<WorkspaceEnvironment>[] = [
  ...EMAIL_TOOLS,
  ...CALENDAR_TOOLS,
  ...DRIVE_TOOLS,
];
