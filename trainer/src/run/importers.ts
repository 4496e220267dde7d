/**
 * Importers: records of public datasets → task-file lines (`task-file.ts`), one `rewardmesh.v1.Task`
 * in proto JSON per record, with the prompt a text policy sees and what the services score.
 *
 * * `humaneval` `{task_id, prompt, canonical_solution, test, entry_point}` → `code` task; id
 *   `HumanEval-0` (`/` and other odd characters become `-`).
 * * `mbpp` `{task_id, text, code, test_list, test_setup_code}` (or the sanitized split's `prompt`,
 *   `test_imports`) → `code` task whose `test` wraps the asserts in `check(candidate)`; id `mbpp-<n>`.
 * * `leetcodedataset` `{task_id, problem_description, starter_code, prompt, test, entry_point,
 *   completion}` → `code` task (entry point `Solution().method`).
 * * `rlla` ToolRL `{instruction, input, output}` (or its verl row `{prompt, reward_model, extra_info}`)
 *   → `toolCall` task, `format: "rlla"`, chat messages; id `rlla-<position>`.
 * * `bfcl` BFCL v3 `{id, question, function}` with the possible answers `{id, ground_truth}` →
 *   `toolCall` task, `format: "json"`; the functions are listed in a system message.
 * * `math` Hendrycks MATH `{problem, solution, level, type}` (reference: the last `\boxed{…}` of the
 *   solution) or MATH-500-style `{problem, answer, unique_id}` → `math` task asking for a boxed answer;
 *   id from `unique_id` / `id`, else `math-<position>`.
 * * `gsm8k` `{question, answer}` (reference: the number after the answer's `####`, separators dropped)
 *   → `math` task with `answer_format: "gsm8k"` asking for a `#### n` line (verl's strict GSM8K
 *   reward); id `gsm8k-<position>`.
 *
 * An import is all-or-nothing: every bad record is reported (`line 3: 'entry_point' must be a non-empty
 * string, got 42`) in one {@link TaskImportError} and nothing is written; the output file is replaced
 * atomically. Input files are JSONL (blank lines skipped) or one JSON array. Gold arguments and possible
 * answers keep their numbers as written (`4.0`, integers beyond 2^53), since the services compare with
 * Python semantics.
 * @module
 */
import { randomBytes } from "node:crypto";
import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { create, type JsonObject, type MessageInitShape, toJson } from "@bufbuild/protobuf";
import { TaskSchema } from "@reward-mesh/proto";
import { CHAT_ROLES, checkTask, describeValue, fieldProblem, type TaskProblem } from "./task-file.js";

type TaskInit = MessageInitShape<typeof TaskSchema>;
type Obj = Record<string, unknown>;

/** The dataset formats {@link importTasks} reads. */
export const IMPORT_FORMATS = [
  "humaneval",
  "mbpp",
  "leetcodedataset",
  "rlla",
  "bfcl",
  "math",
  "gsm8k",
] as const;
/** One of {@link IMPORT_FORMATS}. */
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/**
 * One input record, where it came from (`line 3`, `record 3` of a JSON array) and, when known, its
 * JSON text (so numbers reach the task exactly as written: `4.0`, integers beyond 2^53).
 */
export interface SourceRecord {
  readonly location: string;
  readonly value: unknown;
  readonly text?: string;
}

/** A bad input record: where, the field at fault (null for the whole record) and the message. */
export interface ImportIssue extends TaskProblem {
  readonly location: string;
}

/** How many issues a {@link TaskImportError} message lists. */
export const MAX_REPORTED_ISSUES = 20;

/** Bad input: every issue found (the message lists the first {@link MAX_REPORTED_ISSUES}). */
export class TaskImportError extends Error {
  override readonly name = "TaskImportError";
  readonly retryable = false;
  readonly issues: readonly ImportIssue[];
  constructor(issues: readonly ImportIssue[]) {
    const lines = issues.slice(0, MAX_REPORTED_ISSUES).map((i) => `${i.location}: ${i.message}`);
    const more = issues.length - lines.length;
    super(
      issues.length === 1
        ? lines[0]!
        : [
            `${issues.length} bad records:`,
            ...lines.map((l) => `  ${l}`),
            ...(more > 0 ? [`  ... and ${more} more`] : []),
          ].join("\n"),
    );
    this.issues = issues;
  }
}

/** Options of {@link importTasks}. */
export interface ImportOptions {
  /** `bfcl`: the possible-answer records `{id, ground_truth}`. */
  readonly answers?: readonly SourceRecord[];
  /** Import only the first `limit` records. */
  readonly limit?: number;
}

/** Per-record context of a converter. */
interface ConvertContext {
  /** Position of the record in its input (0-based). */
  readonly index: number;
  /** The record's JSON text, when known. */
  readonly text: string | undefined;
  /** `bfcl`: possible answers (JSON text of `ground_truth`) by id. */
  readonly answers: ReadonlyMap<string, string>;
}

type Converter = (record: Obj, context: ConvertContext) => TaskInit;

/** A problem with one field of a record, thrown by the converters and collected as an issue. */
class RecordProblem extends Error {
  readonly problem: TaskProblem;
  constructor(field: string | null, problem: string) {
    const p = field === null ? { field, message: problem } : fieldProblem(field, problem);
    super(p.message);
    this.problem = p;
  }

  /** The problem `checkTask` found with a converted task. */
  static of(p: TaskProblem): RecordProblem {
    const e = new RecordProblem(null, p.message);
    return Object.assign(e, { problem: p });
  }
}

/**
 * Converts dataset records into tasks (proto JSON objects, one task-file line each). Throws
 * {@link TaskImportError} listing every bad record, or when there is none.
 */
export function importTasks(
  format: ImportFormat,
  records: readonly SourceRecord[],
  options: ImportOptions = {},
): JsonObject[] {
  const convert = CONVERTERS[format];
  if (!convert) throw new RangeError(`unknown import format '${format}' (${IMPORT_FORMATS.join(", ")})`);
  const issues: ImportIssue[] = [];
  const answers = answerIndex(options.answers ?? [], issues);
  const taken = records.slice(0, options.limit ?? records.length);
  const locationOfId = new Map<string, string>();
  const out: JsonObject[] = [];
  for (const [index, r] of taken.entries()) {
    try {
      const task = create(TaskSchema, convert(asObject(r.value, null), { index, text: r.text, answers }));
      const bad = checkTask(task);
      if (bad) throw RecordProblem.of(bad);
      const seen = locationOfId.get(task.id);
      if (seen !== undefined) throw new RecordProblem("id", `gives the id of ${seen} again: "${task.id}"`);
      locationOfId.set(task.id, r.location);
      out.push(toJson(TaskSchema, task) as JsonObject);
    } catch (err) {
      if (!(err instanceof RecordProblem)) throw err;
      issues.push({ location: r.location, ...err.problem });
    }
  }
  if (issues.length > 0) throw new TaskImportError(issues);
  if (out.length === 0)
    throw new TaskImportError([{ location: "input", field: null, message: "has no records" }]);
  return out;
}

/** Options of {@link parseRecords} and {@link readRecordFile}. */
export interface ParseRecordsOptions {
  /** Stop after this many records. */
  readonly limit?: number;
  /** Name of the file in locations (`in.jsonl:3`, `in.json record 3`); without it `line 3`, `record 3`. */
  readonly source?: string;
}

/**
 * Parses a dataset file's text: JSONL (one record per non-blank line) or, when it starts with `[`,
 * one JSON array. Throws {@link TaskImportError} for lines that are not JSON.
 */
export function parseRecords(text: string, options: ParseRecordsOptions = {}): SourceRecord[] {
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const src = options.source;
  const lineAt = (n: number) => (src === undefined ? `line ${n}` : `${src}:${n}`);
  const recordAt = (n: number) => (src === undefined ? `record ${n}` : `${src} record ${n}`);
  if (body.trimStart().startsWith("[")) {
    let values: unknown;
    try {
      values = JSON.parse(body);
    } catch (err) {
      throw new TaskImportError([
        { location: src ?? "file", field: null, message: `not valid JSON (${(err as Error).message})` },
      ]);
    }
    if (!Array.isArray(values))
      throw new TaskImportError([{ location: src ?? "file", field: null, message: "is not a JSON array" }]);
    const texts = rawElements(body);
    return values.slice(0, limit).map((value, i) => ({
      location: recordAt(i + 1),
      value,
      ...(texts[i] === undefined ? {} : { text: texts[i] }),
    }));
  }
  const records: SourceRecord[] = [];
  const issues: ImportIssue[] = [];
  const lines = body.split("\n");
  for (let i = 0; i < lines.length && records.length < limit; i++) {
    const line = lines[i]!.trim();
    if (line === "") continue;
    try {
      records.push({ location: lineAt(i + 1), value: JSON.parse(line) as unknown, text: line });
    } catch (err) {
      issues.push({
        location: lineAt(i + 1),
        field: null,
        message: `not valid JSON (${(err as Error).message})`,
      });
    }
  }
  if (issues.length > 0) throw new TaskImportError(issues);
  return records;
}

/**
 * Reads a dataset file with {@link parseRecords} (locations name the file unless `source` says
 * otherwise); an unreadable file is a {@link TaskImportError}.
 */
export function readRecordFile(path: string, options: ParseRecordsOptions = {}): SourceRecord[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new TaskImportError([{ location: path, field: null, message: `cannot be read (${code})` }]);
  }
  return parseRecords(text, { source: path, ...options });
}

/**
 * Writes tasks as a task file, atomically (a temporary file in the same folder, then a rename): the
 * file is either the old one or the complete new one. A leading `#` line records `header`. A failure
 * is an `Error` naming `path`, with the file-system `code` (`ENOENT`, `EACCES`…).
 */
export function writeTaskFile(path: string, tasks: readonly JsonObject[], header?: string): void {
  const body = `${header ? `# ${header.replace(/\n/g, " ")}\n` : ""}${tasks.map((t) => JSON.stringify(t)).join("\n")}\n`;
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  try {
    writeFileSync(tmp, body, { flag: "wx" });
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    const code = (err as NodeJS.ErrnoException).code;
    const failure = new Error(`${path}: cannot be written (${code ?? (err as Error).message})`, {
      cause: err,
    });
    throw code === undefined ? failure : Object.assign(failure, { code });
  }
}

/** Options of {@link importTaskFile}. */
export interface ImportTaskFileOptions {
  /** `bfcl`: the possible-answer file. */
  readonly answersPath?: string;
  /** Import only the first `limit` records. */
  readonly limit?: number;
}

/**
 * Imports a dataset file into a task file: reads `inPath`, converts every record, and only then
 * writes `outPath` (atomically). Throws {@link TaskImportError} without writing anything.
 */
export function importTaskFile(
  format: ImportFormat,
  inPath: string,
  outPath: string,
  options: ImportTaskFileOptions = {},
): { count: number } {
  if (resolve(inPath) === resolve(outPath))
    throw new TaskImportError([{ location: outPath, field: null, message: "is the input file" }]);
  const records = readRecordFile(inPath, options.limit === undefined ? {} : { limit: options.limit });
  let answers: SourceRecord[] | undefined;
  if (options.answersPath !== undefined) {
    answers = readRecordFile(options.answersPath);
  }
  const tasks = importTasks(format, records, answers === undefined ? {} : { answers });
  writeTaskFile(
    outPath,
    tasks,
    `reward-mesh tasks import --format ${format}: ${tasks.length} tasks from ${basename(inPath)}`,
  );
  return { count: tasks.length };
}

// ── converters ─────────────────────────────────────────────────────────────────────────────

const CONVERTERS: Readonly<Record<ImportFormat, Converter>> = {
  humaneval: fromHumanEval,
  mbpp: fromMbpp,
  leetcodedataset: fromLeetCodeDataset,
  rlla: fromRlla,
  bfcl: fromBfcl,
  math: fromMath,
  gsm8k: fromGsm8k,
};

/** The content of the last `\boxed{…}` / `\fbox{…}` of `s` (nested braces), or undefined. */
function lastBoxed(s: string): string | undefined {
  const at = Math.max(s.lastIndexOf("\\boxed"), s.lastIndexOf("\\fbox"));
  if (at === -1) return undefined;
  const open = s.indexOf("{", at);
  if (open === -1) return undefined;
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === "\\") i++;
    else if (s[i] === "{") depth++;
    else if (s[i] === "}" && --depth === 0) return s.slice(open + 1, i);
  }
  return undefined;
}

/** The instruction MATH-style prompts end with (open-r1 / verl): where the final answer goes. */
const BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}.";

/** MATH (Hendrycks et al.): reference from `answer`, else the solution's last box. */
function fromMath(r: Obj, ctx: ConvertContext): TaskInit {
  const problem = text(r["problem"], "problem");
  let answer: string;
  if (r["answer"] !== undefined && r["answer"] !== null) {
    answer = typeof r["answer"] === "number" ? String(r["answer"]) : text(r["answer"], "answer");
  } else {
    const solution = text(r["solution"], "solution");
    const boxed = lastBoxed(solution);
    if (boxed === undefined || boxed.trim() === "")
      throw new RecordProblem("solution", "has no \\boxed{…} answer (and the record has no 'answer')");
    answer = boxed;
  }
  const rawId = r["unique_id"] ?? r["id"];
  const id =
    rawId === undefined
      ? `math-${ctx.index}`
      : taskIdOf(String(rawId), r["unique_id"] !== undefined ? "unique_id" : "id");
  return {
    id,
    prompt: `${problem.trim()}\n\n${BOXED_INSTRUCTION}`,
    kind: { case: "math", value: { problem, answers: [answer.trim()] } },
  };
}

/** GSM8K (Cobbe et al.): the reference is the number after `####` in `answer`. */
function fromGsm8k(r: Obj, ctx: ConvertContext): TaskInit {
  const question = text(r["question"], "question");
  const solution = text(r["answer"], "answer");
  const m = /####\s*([-+]?[\d,]*\.?\d+)\s*$/.exec(solution.trim());
  if (!m)
    throw new RecordProblem(
      "answer",
      `must end with '#### <number>', got ${describeValue(solution.slice(-60))}`,
    );
  return {
    id: `gsm8k-${ctx.index}`,
    prompt: `${question.trim()}\n\nLet's think step by step and output the final answer after "####".`,
    kind: {
      case: "math",
      value: {
        problem: question,
        answers: [m[1]!.replace(/,/g, "")],
        answerType: "number",
        answerFormat: "gsm8k",
      },
    },
  };
}

const FENCE = "```";

/** HumanEval: the prompt is the function's signature and docstring; `test` defines `check`. */
function fromHumanEval(r: Obj): TaskInit {
  const taskId = taskIdOf(r["task_id"], "task_id");
  const prompt = text(r["prompt"], "prompt");
  const test = checkTest(r["test"], "test");
  const entryPoint = identifier(r["entry_point"], "entry_point");
  const canonical = text(r["canonical_solution"], "canonical_solution", { optional: true });
  return {
    id: taskId,
    prompt:
      "Complete the following Python function. Reply with the complete function, signature included, " +
      `in a ${FENCE}python code block.\n\n${FENCE}python\n${endLine(prompt)}${FENCE}\n`,
    kind: {
      case: "code",
      value: {
        language: "python",
        prompt,
        test,
        entryPoint,
        referenceSolution: canonical === "" ? "" : prompt + canonical,
      },
    },
  };
}

/**
 * MBPP: the asserts call the function by name, so `test` binds that name to the candidate inside
 * `check(candidate)`; the entry point is the first function of the reference `code` the asserts
 * call. The prompt is the MBPP paper's plus a line asking for a fenced answer (code-exec's `format`).
 * `challenge_test_list` is not used (as in the paper's evaluation).
 */
function fromMbpp(r: Obj): TaskInit {
  const rawId = r["task_id"];
  if (!(typeof rawId === "number" && Number.isInteger(rawId)) && !(typeof rawId === "string" && rawId.trim()))
    throw new RecordProblem(
      "task_id",
      `must be an integer or a non-empty string, got ${describeValue(rawId)}`,
    );
  const description = "text" in r || !("prompt" in r) ? text(r["text"], "text") : text(r["prompt"], "prompt");
  const code = lf(text(r["code"], "code"));
  const asserts = stringList(r["test_list"], "test_list").map((a, i) => {
    const line = lf(a).trim();
    if (!line.startsWith("assert"))
      throw new RecordProblem(`test_list[${i}]`, `must be an assert statement, got ${describeValue(a)}`);
    return line;
  });
  const setup = [
    lf(text(r["test_setup_code"], "test_setup_code", { optional: true, empty: true })),
    ...("test_imports" in r ? stringList(r["test_imports"], "test_imports", { empty: true }) : []),
  ].filter((s) => s.trim() !== "");
  const entryPoint = mbppEntryPoint(code, asserts);
  const body = asserts.map((a) => a.replace(/^/gm, "    ")).join("\n");
  const test = `${setup.map((s) => `${endLine(s)}\n`).join("")}def check(candidate):\n    ${entryPoint} = candidate\n${body}\n`;
  return {
    id: taskIdOf(`mbpp-${String(rawId).trim()}`, "task_id"),
    prompt:
      `You are an expert Python programmer, and here is your task: ${description.trim()} ` +
      `Your code should pass these tests:\n\n${asserts.join("\n")}\n\n` +
      `Answer with the code in a ${FENCE}python code block.\n`,
    kind: { case: "code", value: { language: "python", test, entryPoint, referenceSolution: code } },
  };
}

/** The function of `code` the asserts call: the first one called in the first assert calling any. */
function mbppEntryPoint(code: string, asserts: readonly string[]): string {
  const defs = [...code.matchAll(/^def\s+([A-Za-z_]\w*)\s*\(/gm)].map((m) => m[1]!);
  if (defs.length === 0) throw new RecordProblem("code", "defines no top-level function");
  for (const a of asserts) {
    let best: { name: string; at: number } | null = null;
    for (const name of defs) {
      const at = a.search(new RegExp(`(?<![\\w.])${name}\\s*\\(`));
      if (at >= 0 && (best === null || at < best.at)) best = { name, at };
    }
    if (best) return best.name;
  }
  throw new RecordProblem("test_list", `calls none of the functions 'code' defines (${defs.join(", ")})`);
}

/**
 * LeetCodeDataset: `prompt` (the imports preamble) goes before the solution, `test` defines
 * `check`, the entry point is a method (`Solution().twoSum`). The policy's prompt is the problem
 * description and the starter code (`query` when there is no `problem_description`).
 */
function fromLeetCodeDataset(r: Obj): TaskInit {
  const taskId = taskIdOf(r["task_id"], "task_id");
  const test = checkTest(r["test"], "test");
  const entryPoint = text(r["entry_point"], "entry_point");
  if (!/^[A-Za-z_]\w*(\(\))?(\.[A-Za-z_]\w*)*$/.test(entryPoint))
    throw new RecordProblem(
      "entry_point",
      `must be a Python name like Solution().twoSum, got ${describeValue(entryPoint)}`,
    );
  const preamble = text(r["prompt"], "prompt", { optional: true, empty: true });
  const completion = text(r["completion"], "completion", { optional: true, empty: true });
  const description = text(r["problem_description"], "problem_description", { optional: true });
  let prompt: string;
  if (description !== "") {
    const starter = text(r["starter_code"], "starter_code", { optional: true, empty: true }).trim();
    prompt = `Solve the following problem in Python.\n\n${description.trim()}\n\n${
      starter === ""
        ? `Answer with the complete solution in a ${FENCE}python code block.\n`
        : `Complete this starter code and answer with the complete solution in a ${FENCE}python code block:\n\n${FENCE}python\n${starter}\n${FENCE}\n`
    }`;
  } else if (typeof r["query"] === "string" && r["query"].trim() !== "") {
    prompt = r["query"];
  } else {
    throw new RecordProblem("problem_description", "must be a non-empty string (or give 'query')");
  }
  return {
    id: taskId,
    prompt,
    kind: {
      case: "code",
      value: { language: "python", prompt: preamble, test, entryPoint, referenceSolution: completion },
    },
  };
}

/**
 * ToolRL / RLLA: the system message (`instruction`) lists the tools, the user message (`input`) is
 * the request and the dialogue so far, `output` the gold turn: `<tool_call>` lines
 * `{"name", "parameters"}` (the ground truth) and/or a `<response>` block. A verl row (`prompt` as
 * chat messages, `reward_model.ground_truth`, `extra_info.index`) is read too.
 */
function fromRlla(r: Obj, context: ConvertContext): TaskInit {
  const verl = Array.isArray(r["prompt"]);
  let messages: Array<{ role: string; content: string }>;
  let outputField: string;
  let output: string;
  let index: unknown = context.index;
  if (verl) {
    messages = chatMessages(r["prompt"] as unknown[], "prompt");
    outputField = "reward_model.ground_truth";
    output = text(asObject(r["reward_model"], "reward_model")["ground_truth"], outputField);
    const extra = r["extra_info"];
    if (extra && typeof extra === "object" && "index" in extra) index = (extra as Obj)["index"];
  } else {
    const key = "instruction" in r ? "instruction" : "system";
    const instruction = text(r[key], key, { optional: true, empty: true });
    const input = text(r["input"], "input");
    messages = [
      ...(instruction.trim() ? [{ role: "system", content: instruction }] : []),
      { role: "user", content: input },
    ];
    outputField = "output";
    output = text(r["output"], outputField);
  }
  const gold = rllaGold(output, outputField);
  const ownId = r["id"];
  const id =
    typeof ownId === "string" || typeof ownId === "number"
      ? taskIdOf(String(ownId), "id")
      : taskIdOf(
          `rlla-${typeof index === "number" || typeof index === "string" ? index : context.index}`,
          "id",
        );
  return {
    id,
    messages,
    kind: {
      case: "toolCall",
      value: {
        format: "rlla",
        toolsJson: JSON.stringify(rllaTools(messages.find((m) => m.role === "system")?.content ?? "")),
        groundTruth: gold.calls,
        expectedResponse: gold.response,
      },
    },
  };
}

/** The gold calls and response text of an RLLA `output`. */
function rllaGold(
  output: string,
  field: string,
): { calls: Array<{ name: string; argumentsJson: string }>; response: string } {
  const calls: Array<{ name: string; argumentsJson: string }> = [];
  const block = tagged(output, "tool_call", field);
  if (block !== null) {
    const lines = block.trim().split("\n");
    if (lines.length === 1 && lines[0]!.trim() === "")
      throw new RecordProblem(field, "has an empty <tool_call> block");
    for (const [i, line] of lines.entries()) {
      let call: unknown;
      try {
        call = JSON.parse(line);
      } catch (err) {
        throw new RecordProblem(field, `<tool_call> line ${i + 1} is not JSON (${(err as Error).message})`);
      }
      const c = call as Obj;
      if (
        !call ||
        typeof call !== "object" ||
        Array.isArray(call) ||
        typeof c["name"] !== "string" ||
        !c["name"]
      )
        throw new RecordProblem(
          field,
          `<tool_call> line ${i + 1} must be {"name", "parameters"}, got ${describeValue(call)}`,
        );
      const params = c["parameters"] ?? {};
      if (typeof params !== "object" || params === null || Array.isArray(params))
        throw new RecordProblem(
          field,
          `<tool_call> line ${i + 1}: "parameters" must be an object, got ${describeValue(params)}`,
        );
      const raw = c["parameters"] == null ? undefined : rawMembers(line).get("parameters");
      calls.push({ name: c["name"], argumentsJson: raw === undefined ? "{}" : compactJson(raw) });
    }
  }
  const inner = tagged(output, "response", field);
  const response = inner === null ? "" : inner.trim() || inner;
  if (inner === "")
    throw new RecordProblem(field, "has an empty <response> block (a ToolCallTask cannot express one)");
  return { calls, response };
}

/** The text between `<tag>` and the next `</tag>`, or null without `<tag>`. */
function tagged(s: string, tag: string, field: string): string | null {
  const open = s.indexOf(`<${tag}>`);
  if (open < 0) return null;
  const close = s.indexOf(`</${tag}>`, open);
  if (close < 0) throw new RecordProblem(field, `has <${tag}> without </${tag}>`);
  return s.slice(open + tag.length + 2, close);
}

/**
 * The tools an RLLA system prompt lists (`1. Name: f` / `Description: …` / `Parameters: {…}` lines),
 * as `{name, description, parameters}`; parameters that are not JSON are kept as text.
 */
function rllaTools(system: string): Array<Record<string, unknown>> {
  const tools: Array<Record<string, unknown>> = [];
  const lines = system.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const name = /^\s*(?:\d+\.\s*)?(?:\*\*)?Name:\s*(.+?)(?:\*\*)?\s*$/.exec(lines[i]!);
    if (!name) continue;
    const tool: Record<string, unknown> = { name: name[1]! };
    for (; i + 1 < lines.length; i++) {
      const field = /^\s*(Description|Parameters):\s*(.*?)\s*$/.exec(lines[i + 1]!);
      if (!field) break;
      if (field[1] === "Description") tool["description"] = field[2]!;
      else tool["parameters"] = jsonOrText(field[2]!);
    }
    tools.push(tool);
  }
  return tools;
}

/**
 * BFCL v3 (single-turn categories): the first turn of `question` is the chat, `function` the
 * schemas; a system message listing them asks for a JSON list of calls. The possible answer (its
 * `ground_truth`) comes from the answers file; irrelevance records without one expect no call (`[]`).
 */
function fromBfcl(r: Obj, context: ConvertContext): TaskInit {
  const id = text(r["id"], "id");
  const taskId = taskIdOf(id, "id");
  const question = list(r["question"], "question");
  if (question.length !== 1)
    throw new RecordProblem(
      "question",
      `has ${question.length} turns; only single-turn BFCL categories can be imported`,
    );
  const messages = chatMessages(list(question[0], "question[0]"), "question[0]");
  const functions = list(r["function"], "function").map((f, i) => {
    const fn = asObject(f, `function[${i}]`);
    text(fn["name"], `function[${i}].name`);
    return fn;
  });
  const toolsJson = rawJson(context.text, "function", functions);
  const answer = context.answers.get(id) ?? (/(^|_)irrelevance_/.test(id) ? "[]" : undefined);
  if (answer === undefined)
    throw new RecordProblem(
      "id",
      `has no possible answer (give the BFCL possible_answer file with --answers): "${id}"`,
    );
  // The policy sees the functions as BFCL's function-calling models do (`underscore_to_dot`, the tool-call
  // service's default): a dotted name is shown with underscores, the name that service then expects.
  const shown = functions.some((f) => String(f["name"]).includes("."))
    ? JSON.stringify(functions.map((f) => ({ ...f, name: String(f["name"]).replaceAll(".", "_") })))
    : toolsJson;
  const instructions =
    `You can call the functions below. Answer the request with a JSON list of the calls to make, ` +
    `[{"name": "<function>", "arguments": {"<parameter>": <value>}}], and nothing else; ` +
    `answer [] if no function fits.\n\nFunctions:\n${shown}`;
  const [first, ...rest] = messages;
  const chat =
    first?.role === "system"
      ? [{ role: "system", content: `${instructions}\n\n${first.content}` }, ...rest]
      : [{ role: "system", content: instructions }, ...messages];
  return {
    id: taskId,
    messages: chat,
    kind: {
      case: "toolCall",
      value: {
        format: "json",
        toolsJson,
        possibleAnswersJson: answer,
      },
    },
  };
}

/** The BFCL possible answers by id; bad answer records become issues. */
function answerIndex(answers: readonly SourceRecord[], issues: ImportIssue[]): Map<string, string> {
  const byId = new Map<string, string>();
  const where = new Map<string, string>();
  for (const a of answers) {
    try {
      const o = asObject(a.value, null);
      const id = text(o["id"], "id");
      const gt = list(o["ground_truth"], "ground_truth");
      for (const [i, g] of gt.entries()) asObject(g, `ground_truth[${i}]`);
      if (where.has(id)) throw new RecordProblem("id", `repeats the answer of ${where.get(id)}: "${id}"`);
      where.set(id, a.location);
      byId.set(id, rawJson(a.text, "ground_truth", gt));
    } catch (err) {
      if (!(err instanceof RecordProblem)) throw err;
      issues.push({ location: a.location, ...err.problem });
    }
  }
  return byId;
}

// ── field helpers ──────────────────────────────────────────────────────────────────────────

function asObject(v: unknown, field: string | null): Obj {
  if (v === null || typeof v !== "object" || Array.isArray(v))
    throw field === null
      ? new RecordProblem(null, `not a JSON object: ${describeValue(v)}`)
      : new RecordProblem(field, `must be a JSON object, got ${describeValue(v)}`);
  return v as Obj;
}

/** A string field: required and non-blank unless `optional` (absent → "") or `empty` (blank allowed). */
function text(v: unknown, field: string, opts: { optional?: boolean; empty?: boolean } = {}): string {
  if ((v === undefined || v === null) && opts.optional) return "";
  if (typeof v !== "string" || (!opts.empty && v.trim() === ""))
    throw new RecordProblem(field, `must be a non-empty string, got ${describeValue(v)}`);
  return v;
}

function list(v: unknown, field: string): unknown[] {
  if (!Array.isArray(v)) throw new RecordProblem(field, `must be a list, got ${describeValue(v)}`);
  return v;
}

function stringList(v: unknown, field: string, opts: { empty?: boolean } = {}): string[] {
  const items = list(v, field);
  if (items.length === 0 && !opts.empty) throw new RecordProblem(field, "must not be empty");
  return items.map((s, i) => text(s, `${field}[${i}]`, opts));
}

/** A task id from a record's id: blanks and characters other than `A-Za-z0-9._:-` become `-`. */
function taskIdOf(v: unknown, field: string): string {
  const id = text(v, field)
    .trim()
    .replace(/[^A-Za-z0-9._:-]+/g, "-");
  if (/^-*$/.test(id))
    throw new RecordProblem(field, `has no usable characters for a task id: ${describeValue(v)}`);
  return id;
}

function identifier(v: unknown, field: string): string {
  const s = text(v, field);
  if (!/^[A-Za-z_]\w*$/.test(s))
    throw new RecordProblem(field, `must be a Python identifier, got ${describeValue(s)}`);
  return s;
}

/** Test code that defines `check(candidate)`. */
function checkTest(v: unknown, field: string): string {
  const s = lf(text(v, field));
  if (!/^def check\s*\(/m.test(s)) throw new RecordProblem(field, "must define check(candidate)");
  return s;
}

function chatMessages(v: unknown[], field: string): Array<{ role: string; content: string }> {
  if (v.length === 0) throw new RecordProblem(field, "must not be empty");
  return v.map((m, i) => {
    const o = asObject(m, `${field}[${i}]`);
    const role = text(o["role"], `${field}[${i}].role`);
    if (!CHAT_ROLES.includes(role))
      throw new RecordProblem(
        `${field}[${i}].role`,
        `must be one of ${CHAT_ROLES.join(", ")}, got ${describeValue(role)}`,
      );
    return { role, content: text(o["content"], `${field}[${i}].content`, { empty: true }) };
  });
}

function jsonOrText(s: string): unknown {
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return s;
  }
}

/** `\r\n` → `\n` (MBPP's code and tests have Windows line ends). */
function lf(s: string): string {
  return s.replace(/\r\n?/g, "\n");
}

function endLine(s: string): string {
  return s.endsWith("\n") ? s : `${s}\n`;
}

// ── raw JSON text (numbers kept as written) ────────────────────────────────────────────────

/** The compact JSON text of member `key` of the object `text`, else `value` serialised. */
function rawJson(text: string | undefined, key: string, value: unknown): string {
  const raw = text === undefined ? undefined : rawMembers(text).get(key);
  return raw === undefined ? JSON.stringify(value) : compactJson(raw);
}

/** The members of a JSON object as raw text (`text` is valid JSON; anything else gives none). */
function rawMembers(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let i = skipSpace(text, 0);
  if (text[i] !== "{") return out;
  i = skipSpace(text, i + 1);
  while (i < text.length && text[i] === '"') {
    const keyEnd = valueEnd(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    const start = skipSpace(text, skipSpace(text, keyEnd) + 1);
    const end = valueEnd(text, start);
    out.set(key, text.slice(start, end));
    i = skipSpace(text, end);
    if (text[i] === ",") i = skipSpace(text, i + 1);
  }
  return out;
}

/** The elements of a JSON array as raw text (`text` is valid JSON; anything else gives none). */
function rawElements(text: string): string[] {
  const out: string[] = [];
  let i = skipSpace(text, 0);
  if (text[i] !== "[") return out;
  i = skipSpace(text, i + 1);
  while (i < text.length && text[i] !== "]") {
    const end = valueEnd(text, i);
    out.push(text.slice(i, end));
    i = skipSpace(text, end);
    if (text[i] === ",") i = skipSpace(text, i + 1);
  }
  return out;
}

/** Index just past the JSON value starting at `i`. */
function valueEnd(s: string, i: number): number {
  const c = s[i];
  if (c === '"') {
    for (let j = i + 1; j < s.length; j++) {
      if (s[j] === "\\") j++;
      else if (s[j] === '"') return j + 1;
    }
    return s.length;
  }
  if (c === "{" || c === "[") {
    let depth = 0;
    for (let j = i; j < s.length; j++) {
      const d = s[j];
      if (d === '"') j = valueEnd(s, j) - 1;
      else if (d === "{" || d === "[") depth++;
      else if ((d === "}" || d === "]") && --depth === 0) return j + 1;
    }
    return s.length;
  }
  let j = i;
  while (j < s.length && !/[\s,\]}]/.test(s[j]!)) j++;
  return j;
}

function skipSpace(s: string, i: number): number {
  while (i < s.length && /\s/.test(s[i]!)) i++;
  return i;
}

/** Valid JSON text without the whitespace between tokens. */
function compactJson(raw: string): string {
  let out = "";
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (inString) {
      out += c;
      if (c === "\\") out += raw[++i] ?? "";
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (!/\s/.test(c)) out += c;
  }
  return out;
}
