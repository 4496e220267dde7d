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
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Writable } from "node:stream";
import { create, toJsonString } from "@bufbuild/protobuf";
import { TaskSchema } from "@reward-mesh/proto";
import {
  IMPORT_FORMATS,
  type ImportFormat,
  importTaskFile,
  loadTaskFile,
  TaskFileError,
  taskFileDomain,
  TaskImportError,
  agentCellTask,
  agentTaskMatrix,
  listEnvironmentTasks,
} from "@reward-mesh/trainer";
import { didYouMean } from "@reward-mesh/sdk";
import { type CommandSpec, commaList, formatHelp, parseCommand, usageLine, wantsHelp } from "../args.js";
import { type CliConfig, loadCliConfig } from "../config.js";
import { UsageError } from "../io.js";
import { localAgentDojoListing } from "./eval.js";

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

/** `reward-mesh tasks export`. */
export const TASKS_EXPORT_COMMAND: CommandSpec = {
  name: "tasks export",
  summary: "write an environment's tasks as a task file (AgentDojo: the user × injection matrix)",
  description:
    "Write the tasks an environment service lists (AgentEnvironment.ListTasks) as a task file: every user\n" +
    "task clean and every injectable one × every injection task × every attack, as agent tasks.",
  positionals: [
    { name: "agentdojo", description: "the environment (agentdojo)" },
    { name: "<out.jsonl>", description: "the task file to write" },
  ],
  options: {
    suites: {
      type: "string",
      value: "a,b",
      description: "suites to export",
      defaultText: "every suite served",
    },
    attacks: {
      type: "string",
      value: "x,y",
      description: "attacks of the injected tasks",
      defaultText: "the service's default attack",
    },
    "no-clean": { type: "boolean", description: "leave out the clean tasks", defaultText: "off" },
    addr: {
      type: "string",
      value: "host:port",
      description: "a running agentdojo service (REWARD_MESH_GRPC_* for TLS/token)",
      defaultText: "in this process (AGENTDOJO_DATA_DIR for the suites beyond banking)",
    },
  },
  examples: ["reward-mesh tasks export agentdojo tasks/agentdojo-banking.jsonl --suites banking"],
};

/** `reward-mesh tasks`: its sub-commands. */
export const TASKS_COMMAND: CommandSpec = {
  name: "tasks",
  summary:
    "task files: import public datasets (HumanEval, MBPP, LeetCodeDataset, ToolRL/RLLA, BFCL, MATH, GSM8K), check one",
  options: {},
  subcommands: [TASKS_IMPORT_COMMAND, TASKS_CHECK_COMMAND, TASKS_EXPORT_COMMAND],
  examples: [
    ...TASKS_IMPORT_COMMAND.examples,
    ...TASKS_CHECK_COMMAND.examples,
    ...TASKS_EXPORT_COMMAND.examples,
  ],
};

/** Usage of the tasks command. */
export const TASKS_USAGE = `${usageLine(TASKS_IMPORT_COMMAND)}
${usageLine(TASKS_CHECK_COMMAND).replace("usage:", "      ")}
${usageLine(TASKS_EXPORT_COMMAND).replace("usage:", "      ")}`;

/** File-system errors that mean bad input (a missing or unwritable path), not a bug. */
const BAD_PATH_CODES = new Set(["ENOENT", "EACCES", "EISDIR", "ENOTDIR", "EPERM", "EROFS"]);

/** Runs the command; returns the exit code (0 ok, 2 bad input with the message on stderr). */
export async function runTasks(
  args: readonly string[],
  stdout: Writable,
  stderr: Writable,
  cli: CliConfig = loadCliConfig(),
): Promise<number> {
  const [sub, ...rest] = args;
  try {
    switch (sub) {
      case "export": {
        if (wantsHelp(TASKS_EXPORT_COMMAND, rest)) {
          stdout.write(formatHelp(TASKS_EXPORT_COMMAND));
          return 0;
        }
        return await exportCommand(rest, stdout, cli);
      }
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
          `unknown tasks command '${sub}'${didYouMean(sub, ["import", "check", "export"])}\n${TASKS_USAGE}`,
        );
    }
  } catch (err) {
    if (!isBadInput(err)) throw err;
    stderr.write(
      `reward-mesh tasks${sub === "import" || sub === "check" || sub === "export" ? ` ${sub}` : ""}: ${err.message}\n`,
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

async function exportCommand(args: readonly string[], stdout: Writable, cli: CliConfig): Promise<number> {
  const { values: flags, positionals } = parseCommand(TASKS_EXPORT_COMMAND, args);
  if (positionals.length !== 2) throw new UsageError(`expected agentdojo and <out.jsonl>\n${TASKS_USAGE}`);
  const [env, outPath] = positionals as [string, string];
  if (env !== "agentdojo") throw new UsageError(`unknown environment '${env}' (this build has: agentdojo)`);
  const suites = commaList(flags["suites"]) ?? [];
  const listing =
    typeof flags["addr"] === "string"
      ? await listEnvironmentTasks({ address: flags["addr"], security: cli.grpc }, { suites })
      : localAgentDojoListing(cli, suites);
  const attacks = commaList(flags["attacks"]);
  const cells = agentTaskMatrix(listing, {
    ...(attacks ? { attacks } : {}),
    clean: flags["no-clean"] !== true,
  });
  const lines = cells.map((c) => toJsonString(TaskSchema, create(TaskSchema, agentCellTask(c))));
  mkdirSync(dirname(outPath), { recursive: true });
  const tmp = `${outPath}.tmp-${process.pid}`;
  writeFileSync(tmp, `${lines.join("\n")}\n`);
  renameSync(tmp, outPath);
  const suitesOut = [...new Set(cells.map((c) => c.suite))];
  stdout.write(`exported ${cells.length} agent tasks (${suitesOut.join(", ")}) to ${outPath}\n`);
  return 0;
}

function isBadInput(err: unknown): err is Error {
  if (err instanceof UsageError || err instanceof TaskFileError || err instanceof TaskImportError)
    return true;
  const name = (err as { name?: string } | null)?.name;
  if (
    err instanceof Error &&
    (name === "EnvironmentTasksError" || name === "BenchmarkDataError" || name === "InvalidArgumentError")
  )
    return true;
  const code = (err as { code?: unknown } | null)?.code;
  return err instanceof Error && typeof code === "string" && BAD_PATH_CODES.has(code);
}
