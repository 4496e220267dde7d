/**
 * `reward-mesh tasks import --format <format> <in> <out.jsonl> [--answers FILE] [--limit N]` converts a
 * public dataset (HumanEval, MBPP, LeetCodeDataset, ToolRL/RLLA, BFCL) into a task file, and
 * `reward-mesh tasks check <file.jsonl>` validates a task file the way a training run loads it.
 *
 * An import is all-or-nothing: every bad record is reported on stderr (`line 3: 'entry_point' must be
 * a non-empty string, got 42`, at most 20), nothing is written and the exit code is 2; the output
 * file is replaced atomically.
 * @module
 */
import type { Writable } from "node:stream";
import { parseArgs } from "node:util";
import {
  IMPORT_FORMATS,
  type ImportFormat,
  importTaskFile,
  loadTaskFile,
  TaskFileError,
  taskFileDomain,
  TaskImportError,
} from "@reward-mesh/trainer";
import { UsageError } from "../io.js";

/** Usage of the tasks command. */
export const TASKS_USAGE = `usage: reward-mesh tasks import --format <${IMPORT_FORMATS.join("|")}> <in.jsonl|in.json> <out.jsonl> [--answers FILE] [--limit N]
       reward-mesh tasks check <file.jsonl>`;

/** File-system errors that mean bad input (a missing or unwritable path), not a bug. */
const BAD_PATH_CODES = new Set(["ENOENT", "EACCES", "EISDIR", "ENOTDIR", "EPERM", "EROFS"]);

/** Runs the command; returns the exit code (0 ok, 2 bad input with the message on stderr). */
export async function runTasks(args: readonly string[], stdout: Writable, stderr: Writable): Promise<number> {
  const [sub, ...rest] = args;
  try {
    switch (sub) {
      case "import":
        return importCommand(rest, stdout, stderr);
      case "check":
        return checkCommand(rest, stdout);
      case "help":
      case "--help":
      case "-h":
        stdout.write(`${TASKS_USAGE}\n`);
        return 0;
      case undefined:
        throw new UsageError(TASKS_USAGE);
      default:
        throw new UsageError(`unknown tasks command '${sub}'\n${TASKS_USAGE}`);
    }
  } catch (err) {
    if (!isBadInput(err)) throw err;
    stderr.write(
      `reward-mesh tasks${sub === "import" || sub === "check" ? ` ${sub}` : ""}: ${err.message}\n`,
    );
    return 2;
  }
}

function importCommand(args: readonly string[], stdout: Writable, stderr: Writable): number {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: { format: { type: "string" }, answers: { type: "string" }, limit: { type: "string" } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 2) throw new UsageError(`expected <in> and <out.jsonl>\n${TASKS_USAGE}`);
  const [inPath, outPath] = positionals as [string, string];
  const format = values.format;
  if (format === undefined) throw new UsageError(`'--format' is required (${IMPORT_FORMATS.join(", ")})`);
  if (!(IMPORT_FORMATS as readonly string[]).includes(format))
    throw new UsageError(`'--format' must be one of ${IMPORT_FORMATS.join(", ")}, got "${format}"`);
  if (values.answers !== undefined && format !== "bfcl")
    throw new UsageError("'--answers' is only for --format bfcl");
  let limit: number | undefined;
  if (values.limit !== undefined) {
    limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1)
      throw new UsageError(`'--limit' must be a positive integer, got "${values.limit}"`);
  }
  try {
    const { count } = importTaskFile(format as ImportFormat, inPath, outPath, {
      ...(values.answers === undefined ? {} : { answersPath: values.answers }),
      ...(limit === undefined ? {} : { limit }),
    });
    stdout.write(
      `imported ${count} ${format} task${count === 1 ? "" : "s"} from ${inPath} into ${outPath}\n`,
    );
    return 0;
  } catch (err) {
    if (!(err instanceof TaskImportError)) throw err;
    stderr.write(
      `reward-mesh tasks import: ${err.message}\nreward-mesh tasks import: nothing written to ${outPath}\n`,
    );
    return 2;
  }
}

function checkCommand(args: readonly string[], stdout: Writable): number {
  const { positionals } = parseArgs({ args: [...args], options: {}, allowPositionals: true, strict: true });
  if (positionals.length !== 1) throw new UsageError(`expected one task file\n${TASKS_USAGE}`);
  const tasks = loadTaskFile(positionals[0]!);
  const domains = new Map<string, number>();
  for (const t of tasks) {
    const d = taskFileDomain(t.task);
    domains.set(d, (domains.get(d) ?? 0) + 1);
  }
  const summary = [...domains].map(([d, n]) => `${d} ${n}`).join(", ");
  stdout.write(`${tasks.length} task${tasks.length === 1 ? "" : "s"} OK (domains: ${summary})\n`);
  return 0;
}

function isBadInput(err: unknown): err is Error {
  if (err instanceof UsageError || err instanceof TaskFileError || err instanceof TaskImportError)
    return true;
  const code = (err as { code?: unknown } | null)?.code;
  return (
    err instanceof Error &&
    typeof code === "string" &&
    (code.startsWith("ERR_PARSE_ARGS_") || BAD_PATH_CODES.has(code))
  );
}
