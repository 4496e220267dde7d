/**
 * `reward-mesh tasks import --format <format> <in> <out.jsonl> [--answers FILE] [--limit N]` converts a
 * public dataset (HumanEval, MBPP, LeetCodeDataset, ToolRL/RLLA, BFCL, MATH, GSM8K) into a task file, and
 * `reward-mesh tasks check <file.jsonl>` validates a task file the way a training run loads it.
 *
 * An import is all-or-nothing: every bad record is reported on stderr (`line 3: 'entry_point' must be
 * a non-empty string, got 42`, at most 20), nothing is written and the exit code is 2; the output
 * file is replaced atomically.
 * @module
 */
import type { Writable } from "node:stream";
import {
  IMPORT_FORMATS,
  type ImportFormat,
  importTaskFile,
  loadTaskFile,
  TaskFileError,
  taskFileDomain,
  TaskImportError,
} from "@reward-mesh/trainer";
import { didYouMean } from "@reward-mesh/sdk";
import { type CommandSpec, formatHelp, parseCommand, usageLine, wantsHelp } from "../args.js";
import { UsageError } from "../io.js";

/** `reward-mesh tasks import` (parsing and `--help` come from this table; add a flag here). */
export const TASKS_IMPORT_COMMAND: CommandSpec = {
  name: "tasks import",
  summary: "convert a public dataset into a task file",
  description:
    "Convert a public dataset's records into a task file (all or nothing: every bad record is reported,\n" +
    "nothing is written, exit 2; the output is replaced atomically).",
  positionals: [
    { name: "<in.jsonl|in.json>", description: "the dataset's records" },
    { name: "<out.jsonl>", description: "the task file to write" },
  ],
  options: {
    format: {
      type: "string",
      value: IMPORT_FORMATS.join("|"),
      required: true,
      description: "the dataset's format",
    },
    answers: {
      type: "string",
      value: "FILE",
      description: "BFCL's possible_answer file (with --format bfcl)",
      defaultText: "none",
    },
    limit: {
      type: "string",
      value: "N",
      description: "import at most the first N records",
      defaultText: "all",
    },
  },
  examples: ["reward-mesh tasks import --format humaneval HumanEval.jsonl tasks/humaneval.jsonl"],
};

/** `reward-mesh tasks check`. */
export const TASKS_CHECK_COMMAND: CommandSpec = {
  name: "tasks check",
  summary: "validate a task file the way a training run loads it (tasks per domain)",
  positionals: [{ name: "<file.jsonl>", description: "the task file" }],
  options: {},
  examples: ["reward-mesh tasks check trainer/examples/tool-call-tasks.jsonl"],
};

/** `reward-mesh tasks`: its sub-commands. */
export const TASKS_COMMAND: CommandSpec = {
  name: "tasks",
  summary:
    "task files: import public datasets (HumanEval, MBPP, LeetCodeDataset, ToolRL/RLLA, BFCL, MATH, GSM8K), check one",
  options: {},
  subcommands: [TASKS_IMPORT_COMMAND, TASKS_CHECK_COMMAND],
  examples: [...TASKS_IMPORT_COMMAND.examples, ...TASKS_CHECK_COMMAND.examples],
};

/** Usage of the tasks command. */
export const TASKS_USAGE = `${usageLine(TASKS_IMPORT_COMMAND)}
${usageLine(TASKS_CHECK_COMMAND).replace("usage:", "      ")}`;

/** File-system errors that mean bad input (a missing or unwritable path), not a bug. */
const BAD_PATH_CODES = new Set(["ENOENT", "EACCES", "EISDIR", "ENOTDIR", "EPERM", "EROFS"]);

/** Runs the command; returns the exit code (0 ok, 2 bad input with the message on stderr). */
export async function runTasks(args: readonly string[], stdout: Writable, stderr: Writable): Promise<number> {
  const [sub, ...rest] = args;
  try {
    switch (sub) {
      case "import":
      case "check": {
        const spec = sub === "import" ? TASKS_IMPORT_COMMAND : TASKS_CHECK_COMMAND;
        if (wantsHelp(spec, rest)) {
          stdout.write(formatHelp(spec));
          return 0;
        }
        return sub === "import" ? importCommand(rest, stdout, stderr) : checkCommand(rest, stdout);
      }
      case "help":
      case "--help":
      case "-h": {
        const topic = TASKS_COMMAND.subcommands!.find((c) => c.name === `tasks ${rest[0]}`);
        stdout.write(formatHelp(topic ?? TASKS_COMMAND));
        return 0;
      }
      case undefined:
        throw new UsageError(TASKS_USAGE);
      default:
        throw new UsageError(
          `unknown tasks command '${sub}'${didYouMean(sub, ["import", "check"])}\n${TASKS_USAGE}`,
        );
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
  const { values: flags, positionals } = parseCommand(TASKS_IMPORT_COMMAND, args);
  const values = flags as { format?: string; answers?: string; limit?: string };
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
  const { positionals } = parseCommand(TASKS_CHECK_COMMAND, args);
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
  return err instanceof Error && typeof code === "string" && BAD_PATH_CODES.has(code);
}
