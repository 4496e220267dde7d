/**
 * The user's copy of the AgentDojo benchmark data, read at run time. The benchmark's environments,
 * injection vectors, user-task prompts and injection goals are not ours to copy, so every suite except
 * the embedded banking one is built from a directory in this layout:
 *
 * ```
 * <dir>/tasks.json                          {"benchmark_version": "v1.2.1", "suites": {<suite>: {
 *                                              "user_tasks": {<id>: {"prompt", "difficulty"?}},
 *                                              "injection_tasks": {<id>: {"goal"}}}}}
 * <dir>/<suite>/environment.yaml            the suite's initial state (`!include <file>` allowed)
 * <dir>/<suite>/injection_vectors.yaml      {<vector>: {"description", "default"}}
 * ```
 *
 * The YAML files are the benchmark's own (`src/agentdojo/data/suites/<suite>/`); `tasks.json` holds the
 * prompts and goals of the benchmark's task classes. Everything here fails with a {@link BenchmarkDataError}
 * naming the file and what is wrong; nothing is cached across directories.
 * @module
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseDocument, type ScalarTag } from "yaml";
import { emitDoubleQuoted, isSimpleKey } from "./pyyaml.js";
import type { InjectionVector } from "./suite.js";
import { formatScalar, type ScalarPlace, YamlInjectionError } from "./yaml-injection.js";

/** Benchmark versions whose data this code understands (their tasks and tools are what we implement). */
export const SUPPORTED_BENCHMARK_VERSIONS: readonly string[] = ["v1.2.1"];

/** The data directory is missing, unreadable, malformed or of another benchmark version. */
export class BenchmarkDataError extends Error {
  override readonly name = "BenchmarkDataError";
}

/** A user task's text as the benchmark states it. */
export interface UserTaskText {
  readonly prompt: string;
  readonly difficulty?: string;
}

/** An injection task's text. */
export interface InjectionTaskText {
  readonly goal: string;
}

/** One suite's data: the environment document (includes resolved, placeholders still in it) and texts. */
export interface SuiteData {
  readonly suite: string;
  readonly benchmarkVersion: string;
  /** Parsed `environment.yaml` (YAML 1.2 core schema: timestamps stay strings, `!include` resolved). */
  readonly environment: unknown;
  readonly injectionVectors: Readonly<Record<string, InjectionVector>>;
  readonly userTasks: ReadonlyMap<string, UserTaskText>;
  readonly injectionTasks: ReadonlyMap<string, InjectionTaskText>;
}

/** Suite names `tasks.json` describes, and a reader for each suite's data. */
export interface BenchmarkData {
  readonly dir: string;
  readonly benchmarkVersion: string;
  readonly suites: readonly string[];
  suite(name: string): SuiteData;
}

function fail(path: string, what: string): never {
  throw new BenchmarkDataError(`AgentDojo benchmark data: ${path}: ${what}`);
}

function readText(path: string): string {
  if (!existsSync(path)) fail(path, "not found");
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    return fail(path, `cannot be read (${(e as Error).message})`);
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `!include <relative path>`: the benchmark's ImportLoader (paths relative to the including file). */
function includeTag(base: string, depth: number): ScalarTag {
  return {
    tag: "!include",
    resolve(value: string, onError: (message: string) => void): unknown {
      const target = resolve(base, value.trim());
      if (depth > 8) {
        onError(`!include nested too deep at ${target}`);
        return null;
      }
      return parseYamlFile(target, depth + 1);
    },
  } as ScalarTag;
}

function parseYamlFile(path: string, depth = 0): unknown {
  const text = readText(path);
  const doc = parseDocument(text, {
    customTags: [includeTag(dirname(path), depth)],
    uniqueKeys: true,
    prettyErrors: false,
  });
  if (doc.errors.length > 0) fail(path, `invalid YAML: ${doc.errors[0]!.message}`);
  return doc.toJS({ maxAliasCount: 1000 });
}

function parseVectors(path: string, raw: unknown): Record<string, InjectionVector> {
  if (!isRecord(raw)) fail(path, "must map vector names to {description, default}");
  const out: Record<string, InjectionVector> = {};
  for (const [name, v] of Object.entries(raw)) {
    if (
      !isRecord(v) ||
      typeof v.description !== "string" ||
      typeof (v as { default?: unknown }).default !== "string"
    )
      fail(path, `vector ${JSON.stringify(name)} must have string 'description' and 'default'`);
    out[name] = { description: v.description, default: (v as { default: string }).default };
  }
  return out;
}

function textMap<T>(path: string, where: string, raw: unknown, field: "prompt" | "goal"): Map<string, T> {
  if (!isRecord(raw)) fail(path, `${where} must be an object of task id → {${field}}`);
  const out = new Map<string, T>();
  for (const [id, v] of Object.entries(raw)) {
    if (!isRecord(v) || typeof v[field] !== "string") fail(path, `${where}.${id}.${field} must be a string`);
    out.set(id, v as T);
  }
  return out;
}

/**
 * Open a benchmark data directory: checks `tasks.json` and its version now; each suite's YAML is read
 * when {@link BenchmarkData.suite} asks for it.
 */
export function openBenchmarkData(dir: string): BenchmarkData {
  const root = resolve(dir);
  if (!existsSync(root) || !statSync(root).isDirectory()) fail(root, "is not a directory");
  const tasksPath = join(root, "tasks.json");
  let tasks: unknown;
  try {
    tasks = JSON.parse(readText(tasksPath));
  } catch (e) {
    if (e instanceof BenchmarkDataError) throw e;
    fail(tasksPath, `invalid JSON: ${(e as Error).message}`);
  }
  if (!isRecord(tasks)) fail(tasksPath, "must be a JSON object");
  const version = tasks.benchmark_version;
  if (typeof version !== "string") fail(tasksPath, "has no string 'benchmark_version'");
  if (!SUPPORTED_BENCHMARK_VERSIONS.includes(version))
    fail(
      tasksPath,
      `is benchmark version ${version}; this build implements ${SUPPORTED_BENCHMARK_VERSIONS.join(", ")}`,
    );
  const suites = tasks.suites;
  if (!isRecord(suites)) fail(tasksPath, "has no 'suites' object");
  return {
    dir: root,
    benchmarkVersion: version,
    suites: Object.keys(suites),
    suite(name: string): SuiteData {
      const entry = suites[name];
      if (!isRecord(entry))
        fail(tasksPath, `has no suite ${JSON.stringify(name)} (has ${Object.keys(suites).join(", ")})`);
      const suiteDir = join(root, name);
      const vectorsPath = join(suiteDir, "injection_vectors.yaml");
      return {
        suite: name,
        benchmarkVersion: version,
        environment: parseYamlFile(join(suiteDir, "environment.yaml")),
        injectionVectors: parseVectors(vectorsPath, parseYamlFile(vectorsPath)),
        userTasks: textMap<UserTaskText>(tasksPath, `suites.${name}.user_tasks`, entry.user_tasks, "prompt"),
        injectionTasks: textMap<InjectionTaskText>(
          tasksPath,
          `suites.${name}.injection_tasks`,
          entry.injection_tasks,
          "goal",
        ),
      };
    },
  };
}

/**
 * Place injections into an environment document as upstream does: `{vector}` placeholders (missing
 * vectors get their default) are formatted into the document's PyYAML dump and read back, so an
 * injected text's line breaks fold, backslash escapes are interpreted, etc. exactly as in AgentDojo
 * (see {@link formatScalar}); `{{`/`}}` become `{`/`}`. Throws a {@link BenchmarkDataError} naming the
 * vector and the field where upstream's `yaml.safe_load` would fail or the document's structure would
 * change, and for an unknown vector in `injections` (upstream's `validate_injections`). Mapping keys are
 * taken to be strings, as the benchmark's are.
 */
export function injectEnvironment<T>(
  document: T,
  vectors: Readonly<Record<string, InjectionVector>>,
  injections: Readonly<Record<string, string>>,
): T {
  for (const k of Object.keys(injections))
    if (!Object.hasOwn(vectors, k))
      throw new BenchmarkDataError(`unknown injection vector ${JSON.stringify(k)}`);
  const text = (k: string): string | undefined =>
    Object.hasOwn(injections, k)
      ? injections[k]
      : Object.hasOwn(vectors, k)
        ? vectors[k]!.default
        : undefined;
  const place = (template: string, at: ScalarPlace, field: string): string => {
    try {
      return formatScalar(template, at, text).value;
    } catch (e) {
      if (!(e instanceof YamlInjectionError)) throw e;
      const names = [...template.matchAll(/\{([^{}]*)\}/g)]
        .map((m) => m[1]!)
        .filter((n) => Object.hasOwn(vectors, n));
      const who =
        names.length > 0
          ? `injection vector ${names.map((n) => JSON.stringify(n)).join(", ")}`
          : "placeholder";
      throw new BenchmarkDataError(`${who} in field ${field || "(root)"}: ${e.message}`);
    }
  };
  return placeInNode(document, { quoteColumn: 0, indent: 2, simpleKey: false }, -1, "root", "", place) as T;
}

type Placer = (template: string, at: ScalarPlace, field: string) => string;

/**
 * Walk the document as PyYAML's block emitter lays it out (`default_flow_style=False`, indent 2):
 * a mapping's keys at its indent, a sequence's `-` at its indent (a sequence that is a simple key's value
 * is not indented further), a scalar's opening quote two columns after its `:`/`-` and its continuation
 * lines at the enclosing collection's indent + 2. `indicator` is the column of the `:`/`-` before this node,
 * `parent` the enclosing collection's indent (-1 at the root).
 */
function placeInNode(
  node: unknown,
  scalarAt: ScalarPlace,
  parent: number,
  context: "root" | "sequence" | "simple-value" | "complex-value",
  field: string,
  place: Placer,
): unknown {
  if (typeof node === "string") return place(node, scalarAt, field);
  const nested = parent < 0 ? 0 : parent + 2;
  if (Array.isArray(node)) {
    const s = context === "simple-value" ? parent : nested;
    return node.map((item, i) =>
      placeInNode(
        item,
        { quoteColumn: s + 2, indent: s + 2, simpleKey: false },
        s,
        "sequence",
        `${field}[${i}]`,
        place,
      ),
    );
  }
  if (isRecord(node)) {
    const entries = Object.entries(node);
    if (entries.length === 0)
      throw new BenchmarkDataError(
        `field ${field || "(root)"}: an empty mapping is dumped as '{}', which upstream's str.format rejects`,
      );
    const m = nested;
    const out: Record<string, unknown> = {};
    for (const [k, v] of entries) {
      const path = field === "" ? k : `${field}.${k}`;
      const simple = isSimpleKey(k);
      const keyAt: ScalarPlace = simple
        ? { quoteColumn: m, indent: m + 2, simpleKey: true }
        : { quoteColumn: m + 2, indent: m + 2, simpleKey: false };
      const key = place(k, keyAt, `key of ${path}`);
      if (Object.hasOwn(out, key))
        throw new BenchmarkDataError(
          `field ${path}: after injection its key equals another key of the mapping`,
        );
      const colon = simple ? m + emitDoubleQuoted(k, m, m + 2, false).length : m;
      out[key] = placeInNode(
        v,
        { quoteColumn: colon + 2, indent: m + 2, simpleKey: false },
        m,
        simple ? "simple-value" : "complex-value",
        path,
        place,
      );
    }
    return out;
  }
  return node;
}
