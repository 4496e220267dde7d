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
import type { InjectionVector } from "./suite.js";

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
 * Place injections into an environment document: every `{vector}` in a string becomes the injection's
 * text (missing vectors get their default), as upstream's `str.format` over the document does. An
 * unknown vector in `injections` is an error (upstream's `validate_injections`).
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
  const fill = (s: string): string =>
    s.replace(/\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (m, name?: string) => {
      if (m === "{{") return "{";
      if (m === "}}") return "}";
      const t = text(name!);
      if (t === undefined) throw new BenchmarkDataError(`environment refers to unknown placeholder ${m}`);
      return t;
    });
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return fill(v);
    if (Array.isArray(v)) return v.map(walk);
    if (isRecord(v)) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[fill(k)] = walk(x);
      return out;
    }
    return v;
  };
  return walk(document) as T;
}
