/**
 * The 40 workspace user tasks (filled in by the user-tasks work; empty until then).
 * @module
 */
import type { UserTask } from "../../suite.js";
import type { WorkspaceEnvironment } from "./environment.js";

/** The workspace user tasks of benchmark v1.2.1. */
export const WORKSPACE_USER_TASKS: UserTask<WorkspaceEnvironment>[] = [];
