/**
 * One declarative table per command, from which both its argument parsing and its `--help` are made,
 * so the two cannot drift apart.
 *
 * Adding an option to a command is one entry in its table's `options`, e.g.
 *
 *     "log-format": { type: "string", value: "human|json", default: "human", description: "how logs are written" },
 *
 * then read it as `values["log-format"]` from {@link parseCommand}. `default` is applied by the parser
 * (and shown in the help); `defaultText` only documents a default the command computes itself.
 *
 * Tokenising is `node:util` `parseArgs`; strictness (unknown options, a value where none belongs, a
 * missing value) is checked here so that each mistake gets one line in our own words, with the nearest
 * option suggested for a typo.
 * @module
 */
import { parseArgs } from "node:util";
import { closestName, didYouMean } from "@reward-mesh/sdk";
import { UsageError } from "./io.js";

/** One `--option` of a command. */
export interface OptionSpec {
  /** `string` takes a value (`--steps 3`, `--steps=3`); `boolean` is a switch (`--quiet`). */
  readonly type: "string" | "boolean";
  /** What the value looks like in the usage line, e.g. `N`, `host:port`, `a,b,...`. @default "value" */
  readonly value?: string;
  /** What the option does (one line). */
  readonly description: string;
  /** A value the parser applies when the option is absent (and the help shows). */
  readonly default?: string;
  /** A default the command computes itself, in words (shown in the help; not applied by the parser). */
  readonly defaultText?: string;
  /** The command refuses to run without it (the usage line shows it outside brackets). */
  readonly required?: boolean;
}

/** A command (or a sub-command such as `tasks import`) described once for parsing and help. */
export interface CommandSpec {
  /** The words after `reward-mesh`, e.g. `score` or `tasks import`. */
  readonly name: string;
  /** One short line for the list of commands. */
  readonly summary: string;
  /** What the command does, printed under its usage (defaults to the summary). */
  readonly description?: string;
  /**
   * Positional arguments: `<service>` and what it is. A name written as a bare word (`service` in
   * `new service <name>`) is a word typed as it is: a misspelling of it is a usage error suggesting it.
   */
  readonly positionals?: ReadonlyArray<{ readonly name: string; readonly description: string }>;
  /** Text after the usage line, e.g. `< rollouts.jsonl`. */
  readonly usageTail?: string;
  /** Options by name, without the leading `--`. */
  readonly options: Readonly<Record<string, OptionSpec>>;
  /** Paragraphs printed after the options (environment variables, behaviour). */
  readonly notes?: readonly string[];
  /** At least one command line a person can copy. */
  readonly examples: readonly string[];
  /** Sub-commands (`tasks import`, `tasks check`): the help lists them. */
  readonly subcommands?: readonly CommandSpec[];
}

/** What {@link parseCommand} found. */
export interface ParsedCommand {
  /** Options given (or defaulted): strings for `string` options, `true` for switches. */
  readonly values: Record<string, string | boolean>;
  readonly positionals: string[];
  /** `--help` or `-h` was given. */
  readonly help: boolean;
}

const HELP_OPTION = { help: { type: "boolean", short: "h" } } as const;

/**
 * Parses `args` against `options`: `--name value`, `--name=value`, switches, positionals anywhere, and
 * everything after `--` positional. Errors (one line, {@link UsageError}): `unknown option '--x'` (with
 * the nearest option suggested), `option '--x' takes no value`, `option '--x' needs a value`.
 * `--help`/`-h` set `help` unless the table has an option of that name.
 */
export function parseOptions(
  args: readonly string[],
  options: Readonly<Record<string, Pick<OptionSpec, "type" | "default">>>,
): ParsedCommand {
  const withHelp: Readonly<Record<string, { readonly type: "string" | "boolean"; readonly short?: string }>> =
    Object.hasOwn(options, "help") ? options : { ...options, ...HELP_OPTION };
  const { tokens } = parseArgs({
    args: [...args],
    options: Object.fromEntries(
      Object.entries(withHelp).map(([n, o]) => [n, { type: o.type, ...(o.short ? { short: o.short } : {}) }]),
    ),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  let help = false;
  for (const t of tokens) {
    if (t.kind === "positional") positionals.push(t.value);
    if (t.kind !== "option") continue;
    // An unknown short option is named as typed (`-xyz`, not parseArgs's `-x`, `-y`, `-z`).
    const raw = t.rawName.startsWith("--") ? t.rawName : (args[t.index] ?? t.rawName);
    const kind = Object.hasOwn(withHelp, t.name) ? withHelp[t.name]!.type : undefined; // not '--constructor'
    if (kind === undefined || (t.rawName !== `--${t.name}` && t.rawName !== "-h")) {
      const names = Object.keys(options).map((n) => `--${n}`);
      throw new UsageError(`unknown option '${raw}'${didYouMean(raw, [...names, "--help"])}`);
    }
    if (t.name === "help" && !Object.hasOwn(options, "help")) {
      if (t.value !== undefined) throw new UsageError(`option '${t.rawName}' takes no value`);
      help = true;
      continue;
    }
    if (kind === "boolean") {
      if (t.value !== undefined) throw new UsageError(`option '--${t.name}' takes no value`);
      values[t.name] = true;
    } else {
      if (t.value === undefined || t.value === "") throw new UsageError(`option '--${t.name}' needs a value`);
      values[t.name] = t.value;
    }
  }
  for (const [name, o] of Object.entries(options))
    if (o.default !== undefined && !Object.hasOwn(values, name)) values[name] = o.default;
  return { values, positionals, help };
}

/** Parses `args` (the words after the command's name) against the command's table. */
export function parseCommand(spec: CommandSpec, args: readonly string[]): ParsedCommand {
  const parsed = parseOptions(args, spec.options);
  checkWords(spec, parsed.positionals);
  return parsed;
}

/** A positional written as a bare word in a table (`service`, `agentdojo`), not `<name>` or `[name]`. */
const isWord = (name: string) => /^[a-z][a-z0-9-]*$/.test(name);

/**
 * A positional given where the table has a bare word (`reward-mesh new servce`) that is a likely typo
 * of it is a usage error suggesting the word; anything else is left to the command's own message.
 */
function checkWords(spec: CommandSpec, given: readonly string[]): void {
  (spec.positionals ?? []).forEach((p, i) => {
    const typed = given[i];
    if (typed === undefined || typed === p.name || !isWord(p.name)) return;
    if (closestName(typed, [p.name]) === p.name)
      throw new UsageError(`unknown argument '${typed}' (did you mean '${p.name}'?)`);
  });
}

/** Whether `args` ask for help (`--help`/`-h` as an option, not as another option's value). */
export function wantsHelp(spec: CommandSpec, args: readonly string[]): boolean {
  // Unknown options must not hide a `--help` given next to them: tokenise without checking them.
  const { tokens } = parseArgs({
    args: [...args],
    options: {
      ...Object.fromEntries(Object.entries(spec.options).map(([n, o]) => [n, { type: o.type }])),
      ...HELP_OPTION,
    },
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  return tokens.some((t) => t.kind === "option" && t.name === "help");
}

/** ` <value>`; a value written optional (`[PORT]`) is shown as it is, not as `<[PORT]>`. */
const placeholder = (o: OptionSpec) => {
  if (o.type !== "string") return "";
  const v = o.value ?? "value";
  return v.startsWith("[") ? ` ${v}` : ` <${v}>`;
};

/** The one-line usage: `usage: reward-mesh <name> <positionals> --required <v> [--optional <v>] ...`. */
export function usageLine(spec: CommandSpec): string {
  const parts = [`usage: reward-mesh ${spec.name}`];
  if (spec.subcommands?.length) parts.push(`<${spec.subcommands.map((s) => lastWord(s.name)).join("|")}>`);
  for (const p of spec.positionals ?? []) parts.push(p.name);
  for (const [name, o] of Object.entries(spec.options)) {
    const text = `--${name}${placeholder(o)}`;
    parts.push(o.required ? text : `[${text}]`);
  }
  if (spec.usageTail) parts.push(spec.usageTail);
  return parts.join(" ");
}

const lastWord = (s: string) => s.slice(s.lastIndexOf(" ") + 1);

function columns(rows: ReadonlyArray<readonly [string, string]>): string {
  const width = Math.min(32, Math.max(...rows.map(([l]) => l.length)) + 2);
  return rows
    .map(([l, r]) =>
      l.length + 2 > width ? `  ${l}\n  ${" ".repeat(width)}${r}` : `  ${l.padEnd(width)}${r}`,
    )
    .join("\n");
}

/** What a default looks like in the help. */
function defaultOf(o: OptionSpec): string {
  if (o.default !== undefined) return ` (default: ${o.default})`;
  if (o.defaultText !== undefined) return ` (default: ${o.defaultText})`;
  return o.required ? " (required)" : "";
}

/** The full help of a command: usage, what it does, arguments, options with defaults, examples. */
export function formatHelp(spec: CommandSpec): string {
  const out = [usageLine(spec), "", spec.description ?? spec.summary];
  if (spec.subcommands?.length) {
    out.push("", "commands:", columns(spec.subcommands.map((s) => [lastWord(s.name), s.summary])));
    out.push("", `'reward-mesh ${spec.name} <command> --help' prints the options of each.`);
  }
  if (spec.positionals?.length) {
    out.push("", "arguments:", columns(spec.positionals.map((p) => [p.name, p.description])));
  }
  const rows: Array<[string, string]> = Object.entries(spec.options).map(([name, o]) => [
    `--${name}${placeholder(o)}`,
    `${o.description}${defaultOf(o)}`,
  ]);
  rows.push(["-h, --help", "print this help and exit"]);
  out.push("", "options:", columns(rows));
  for (const n of spec.notes ?? []) out.push("", n);
  out.push("", spec.examples.length === 1 ? "example:" : "examples:");
  for (const e of spec.examples) out.push(`  ${e}`);
  return `${out.join("\n")}\n`;
}

/** A comma-separated option value as its trimmed, non-empty items; `undefined` when the option is absent. */
export function commaList(v: unknown): string[] | undefined {
  return typeof v === "string"
    ? v
        .split(",")
        .map((x) => x.trim())
        .filter((x) => x !== "")
    : undefined;
}
