/**
 * Task files: JSONL with one `rewardmesh.v1.Task` per line in proto JSON (camelCase or snake_case field
 * names, as protobuf-es `fromJson` accepts), for training a text policy on real prompts. Blank lines and
 * lines starting with `#` are skipped.
 *
 * Every task needs an `id` unique in the file, a prompt (non-empty `prompt` text or non-empty
 * `messages`, each with a role among `system`, `user`, `assistant`, `tool`) and a kind (`code`,
 * `toolCall`, `agent`, `custom` or `math`, the last with at least one reference answer) so that a
 * reward service can score it. `domain` is kept as given.
 * A bad line is a {@link TaskFileError} naming the file, the line and the field:
 * `tasks.jsonl:3: 'messages[1].role' must be one of system, user, assistant, tool, got "bot"`.
 *
 * `reward-mesh tasks import` writes such files from public datasets (`importers.ts`).
 * @module
 */
import { readFileSync } from "node:fs";
import { fromJson, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { type Task, TaskSchema } from "@reward-mesh/proto";

/** The `set` of every task loaded from a task file. */
export const TASK_FILE_SET = "jsonl";

/** Generation cap of a loaded task when the caller gives none. */
export const DEFAULT_TASK_FILE_MAX_TOKENS = 1024;

/** Chat roles a task's `messages` may use. */
export const CHAT_ROLES: readonly string[] = ["system", "user", "assistant", "tool"];

/**
 * One task of a task file: what the trainer sends to a text policy (`task.messages`, else
 * `task.prompt`) and what the reward services score (`task`). No vocabulary: the policy's completion
 * text is the rollout's response.
 */
export interface TextTaskDefinition {
  /** The task's `id` (unique in its file). */
  readonly id: string;
  /** Always {@link TASK_FILE_SET}. */
  readonly set: string;
  /** The task as the reward services see it (`Rollout.task`). */
  readonly task: MessageInitShape<typeof TaskSchema>;
  /** Generation cap in tokens. */
  readonly maxTokens: number;
  /** Rollout metadata for the services (none from the file: tasks have no metadata field). */
  readonly metadata?: Readonly<Record<string, string>>;
}

/** Options of {@link loadTaskFile}. */
export interface LoadTaskFileOptions {
  /** Generation cap of every task (default {@link DEFAULT_TASK_FILE_MAX_TOKENS}). */
  readonly maxTokens?: number;
}

/**
 * A task file that cannot be used. `line` is 1-based (0 for the file as a whole); `field` is the
 * task field at fault (`messages[1].role`), or null when the line is not a task at all (bad JSON).
 */
export class TaskFileError extends Error {
  override readonly name = "TaskFileError";
  readonly retryable = false;
  readonly path: string;
  readonly line: number;
  readonly field: string | null;
  constructor(
    path: string,
    line: number,
    field: string | null,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(
      `${line > 0 ? `${path}:${line}` : path}: ${message}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.path = path;
    this.line = line;
    this.field = field;
  }
}

/**
 * What is wrong with a task: the field at fault (null for the whole value) and the message, which
 * names the field itself (`'id' must be a non-empty string`).
 */
export interface TaskProblem {
  readonly field: string | null;
  readonly message: string;
}

/** A {@link TaskProblem} of one field: `'<field>' <problem>`. */
export function fieldProblem(field: string, problem: string): TaskProblem {
  return { field, message: `'${field}' ${problem}` };
}

/** Reads and validates a task file; throws {@link TaskFileError} for the first bad line. */
export function loadTaskFile(path: string, options: LoadTaskFileOptions = {}): TextTaskDefinition[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new TaskFileError(path, 0, null, `cannot be read (${code ?? (err as Error).message})`, {
      cause: err,
    });
  }
  return parseTaskFile(text, path, options);
}

/** Parses the text of a task file; `path` only names the file in errors. */
export function parseTaskFile(
  text: string,
  path: string,
  options: LoadTaskFileOptions = {},
): TextTaskDefinition[] {
  const maxTokens = options.maxTokens ?? DEFAULT_TASK_FILE_MAX_TOKENS;
  if (!Number.isInteger(maxTokens) || maxTokens < 1)
    throw new RangeError(`maxTokens must be a positive integer, got ${maxTokens}`);
  const out: TextTaskDefinition[] = [];
  const lineOfId = new Map<string, number>();
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    const fail = (p: TaskProblem) => new TaskFileError(path, i + 1, p.field, p.message);
    const task = parseTaskLine(line);
    if ("message" in task) throw fail(task);
    const seen = lineOfId.get(task.id);
    if (seen !== undefined)
      throw fail(fieldProblem("id", `duplicates the task on line ${seen}: ${JSON.stringify(task.id)}`));
    lineOfId.set(task.id, i + 1);
    out.push({ id: task.id, set: TASK_FILE_SET, task, maxTokens });
  }
  if (out.length === 0)
    throw new TaskFileError(path, 0, null, "has no tasks (only blank or '#' comment lines)");
  return out;
}

/** Parses one line of a task file into a valid `Task`, or says what is wrong with it. */
export function parseTaskLine(line: string): Task | TaskProblem {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (err) {
    return { field: null, message: `not valid JSON (${(err as Error).message})` };
  }
  if (json === null || typeof json !== "object" || Array.isArray(json))
    return { field: null, message: `not a JSON object (one rewardmesh.v1.Task): ${describeValue(json)}` };
  const shape = checkMessageShapes(json as Record<string, unknown>);
  if (shape) return shape;
  let task: Task;
  try {
    task = fromJson(TaskSchema, json as JsonValue);
  } catch (err) {
    const message = (err as Error).message;
    return { field: protobufField(message), message };
  }
  return checkTask(task) ?? task;
}

/** What keeps `task` from being trained on (see the module doc), or null when it is usable. */
export function checkTask(task: Task): TaskProblem | null {
  if (task.id.trim() === "") return fieldProblem("id", "must be a non-empty string");
  if (task.kind.case === undefined)
    return fieldProblem(
      "kind",
      "is missing: set one of code, toolCall, agent, custom, math so that a service can score the task",
    );
  if (task.kind.case === "math") {
    if (task.kind.value.answers.length === 0 || task.kind.value.answers.some((a) => a.trim() === ""))
      return fieldProblem("math.answers", "must hold at least one non-blank reference answer");
  }
  if (task.messages.length === 0) {
    if (task.prompt.trim() === "")
      return fieldProblem("prompt", "must be non-empty text when the task has no 'messages'");
    return null;
  }
  for (const [i, m] of task.messages.entries()) {
    if (!CHAT_ROLES.includes(m.role))
      return fieldProblem(
        `messages[${i}].role`,
        `must be one of ${CHAT_ROLES.join(", ")}, got ${JSON.stringify(m.role)}`,
      );
  }
  if (task.messages.every((m) => m.content.trim() === ""))
    return fieldProblem("messages", "must have at least one message with non-empty content");
  return null;
}

/** The domain a task's rollouts are routed to: `domain`, else the kind's name. */
export function taskFileDomain(task: MessageInitShape<typeof TaskSchema>): string {
  if (task.domain) return task.domain;
  const k = task.kind?.case;
  return k === "toolCall" ? "tool_call" : (k ?? "custom");
}

/** Checks the JSON shape of `messages` first, so that errors name the index (`messages[1].content`). */
function checkMessageShapes(json: Record<string, unknown>): TaskProblem | null {
  const messages = json["messages"];
  if (messages === undefined || messages === null) return null;
  if (!Array.isArray(messages))
    return fieldProblem("messages", `must be a list of {role, content}, got ${describeValue(messages)}`);
  for (const [i, m] of messages.entries()) {
    if (m === null || typeof m !== "object" || Array.isArray(m))
      return fieldProblem(`messages[${i}]`, `must be an object {role, content}, got ${describeValue(m)}`);
    for (const key of ["role", "content"]) {
      const v = (m as Record<string, unknown>)[key];
      if (typeof v !== "string")
        return fieldProblem(`messages[${i}].${key}`, `must be a string, got ${describeValue(v)}`);
    }
  }
  return null;
}

/** The field a protobuf-es JSON error names (`key "foo" is unknown` → `foo`), best effort. */
function protobufField(message: string): string | null {
  const unknownKey = /key "([^"]+)" is unknown/.exec(message);
  if (unknownKey) return unknownKey[1]!;
  const field = /cannot decode (?:field|oneof) rewardmesh\.v1\.([\w.]+) from JSON/.exec(message);
  if (!field) return null;
  return field[1]!.startsWith("Task.") ? field[1]!.slice("Task.".length) : field[1]!;
}

/** A short description of a JSON value for error messages (`"bot"`, `42`, `a list`). */
export function describeValue(v: unknown): string {
  if (v === undefined) return "nothing";
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "an object";
  const s = JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
