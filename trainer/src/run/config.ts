/**
 * The run configuration (`reward-mesh train --config run.yaml`): parsed from YAML, validated once at
 * start with messages that name the key (`'loss.epsHigh' must be a number >= 0, got "x"`), presets
 * expanded, defaults filled. The result is a plain, fully resolved object (what `resolved-config.json`
 * in the run directory records).
 * @module
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { didYouMean, discoverServices } from "@reward-mesh/sdk";
import { Ajv } from "ajv";
import { parse as parseYaml } from "yaml";
import type { CompiledAdvantageConfig } from "../advantage/engine.js";
import { compileUntypedAdvantageConfig } from "../advantage/engine.js";
import { showValue } from "../advantage/errors.js";
import { resolveEstimatorName } from "../advantage/estimators.js";
import type { LossType } from "../learner/types.js";
import {
  BUILTIN_SET_NAMES,
  builtinTasks,
  type EnvironmentSets,
  isBuiltinSet,
  loadBuiltinTasks,
} from "./builtin-tasks.js";
import type { EnvironmentEndpoint } from "./environment-tasks.js";
import { loadTaskFile } from "./task-file.js";
import type { TaskDefinition } from "./tasks.js";

/** Thrown for an invalid run configuration; `key` is the dotted path. */
export class RunConfigError extends Error {
  override readonly name = "RunConfigError";
  readonly retryable = false;
  readonly key: string;
  constructor(key: string, problem: string, options: { cause?: unknown } = {}) {
    super(`'${key}' ${problem}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.key = key;
  }
}

/** One weighted component: `component` of the results of `service`. */
export interface ComponentConfig {
  readonly service: string;
  readonly component: string;
  readonly weight: number;
}

/** Component presets reproducing the papers' launchers (`specs/advantages.md` §4.7). */
export const COMPONENT_PRESETS: Readonly<Record<string, readonly ComponentConfig[]>> = {
  /** CorrGRPO code launcher: pass 0.60, AST 0.30, runtime 0.25, efficiency 0.20, format/syntax/compile 0.05. */
  "corrgrpo-code": [
    { service: "code-exec", component: "pass", weight: 0.6 },
    { service: "ast", component: "similarity", weight: 0.3 },
    { service: "code-exec", component: "runtime", weight: 0.25 },
    { service: "efficiency", component: "efficiency", weight: 0.2 },
    { service: "code-exec", component: "format", weight: 0.05 },
    { service: "code-exec", component: "syntax", weight: 0.05 },
    { service: "code-exec", component: "compile", weight: 0.05 },
  ],
  /** RLLA / ToolRL: format + the three correctness components, weight 1 each. */
  "rlla-tool": [
    { service: "tool-call", component: "format", weight: 1 },
    { service: "tool-call", component: "function_name", weight: 1 },
    { service: "tool-call", component: "parameter_name", weight: 1 },
    { service: "tool-call", component: "parameter_value", weight: 1 },
  ],
  /** AgentDojo security launcher: utility 1, security 1. */
  agentdojo: [
    { service: "agentdojo", component: "utility", weight: 1 },
    { service: "agentdojo", component: "security", weight: 1 },
  ],
  /** DAPO soft overlong punishment alone. */
  overlong: [{ service: "length", component: "overlong", weight: 1 }],
};

/**
 * Which rollout domains each service of this build scores (a component of a service that does not
 * score a domain is NOT_APPLICABLE there): the configured domains of every service package
 * (`discoverServices`: its manifest's `domains`, or its `domainsEnv` variable's list, e.g.
 * `REWARD_MODEL_DOMAINS`), so a new service needs no entry here. A run's `services:` key adds or overrides.
 */
export const DEFAULT_SERVICE_DOMAINS: Readonly<Record<string, readonly string[]>> = Object.fromEntries(
  discoverServices().map((s) => [s.manifest.name, s.domains]),
);

/** Where the policy lives. */
export type LearnerConfig =
  /** The embedded tabular learner, in process (a fragment policy). */
  | { readonly kind: "embedded" }
  /** Any `rewardmesh.v1.Learner` server already running at `address` (`host:port`). */
  | { readonly kind: "grpc"; readonly address: string }
  /** The PyTorch learner (`trainer/learner-torch`), started as its own process for the run. */
  | TorchLearnerConfig;

/** The PyTorch learner's process options (`python3 -m reward_mesh_learner serve …`). */
export interface TorchLearnerConfig {
  readonly kind: "torch";
  /** `builtin:tiny`, `builtin:tiny4k`, `builtin:small`, or a Hugging Face model directory (never downloaded). */
  readonly model: string;
  /** `auto` (CUDA when available), `cpu`, `cuda`, `cuda:N`. */
  readonly device: string;
  /** `auto` (bf16 on CUDA, float32 on CPU), `float32`, `float64`, `bfloat16`. */
  readonly dtype: string;
  /** Samples per forward/backward pass (gradient accumulation); 0 = the whole mini-batch. */
  readonly microBatchSize: number;
  readonly gradientCheckpointing: boolean;
  /** LoRA rank (needs `peft`); 0 = full fine-tuning. */
  readonly loraRank: number;
  /** CPU threads for torch; 0 = torch's default. */
  readonly threads: number;
  /** Supervised warm start before the first step; null = none. */
  readonly warmup: { readonly file: string; readonly steps: number; readonly lr: number } | null;
}

/** The resolved run configuration. */
export interface RunConfig {
  /** Run id: a subject token; default `run-<time>`. Reusing an id resumes that run from its checkpoint. */
  readonly runId: string;
  readonly seed: number;
  /** Where `runs/<run-id>/` is created. @default "runs" */
  readonly outputDir: string;
  readonly tasks: {
    /** `builtin`: the task sets shipped with the trainer; `jsonl`: a task file (`path`). */
    readonly source: "builtin" | "jsonl";
    /** Built-in sets to use (`source: builtin`): `code`, `tool_call`, `agent`, `custom`, `math`. */
    readonly sets: readonly string[];
    /** The task file (`source: jsonl`): one `rewardmesh.v1.Task` in proto JSON per line. */
    readonly path?: string;
  };
  /** Sampling settings of text policies (fragment tasks keep their own length caps). */
  readonly generation: {
    readonly temperature: number;
    readonly topP: number;
    /** Most new tokens per completion. */
    readonly maxNewTokens: number;
    readonly stop: readonly string[];
  };
  /** Rollouts per prompt (G). */
  readonly groupSize: number;
  /** Prompts per step (B). */
  readonly promptsPerStep: number;
  readonly steps: number;
  readonly components: readonly ComponentConfig[];
  /** Service → domains it scores. */
  readonly serviceDomains: Readonly<Record<string, readonly string[]>>;
  readonly estimator: { readonly name: string; readonly options: Readonly<Record<string, unknown>> };
  /** S-GRPO on top of the estimator; null = off. */
  readonly sgrpo: {
    readonly p: number;
    readonly component?: string;
    readonly successThreshold?: number;
    readonly variant?: string;
  } | null;
  /** DAPO dynamic sampling; null = off. */
  readonly dynamicSampling: { readonly component?: string } | null;
  readonly loss: {
    readonly type: LossType;
    readonly epsLow: number;
    readonly epsHigh: number;
    readonly dualClipC: number;
    readonly klBeta: number;
    readonly maxCompletionLength: number;
  };
  readonly optim: { readonly lr: number; readonly epochs: number; readonly maxGradNorm: number };
  /** Where the policy lives. */
  readonly learner: LearnerConfig;
  readonly groups: {
    /** A group not complete this long after its rollouts were published is dropped or imputed. */
    readonly deadlineMs: number;
    readonly missing: "drop" | "impute";
  };
  /** Label noise applied by the trainer to binary components (experiments on S-GRPO); 0 = none. */
  readonly rewardNoise: { readonly p: number; readonly components: readonly string[] };
  /** Checkpoint every N steps (and at the end). */
  readonly checkpointEvery: number;
  /**
   * Multi-turn agent episodes against an AgentEnvironment server (`trainer/src/run/episodes.ts`); null =
   * off (agent tasks are answered in one completion).
   */
  readonly episodes: {
    /**
     * `host:port` of the AgentEnvironment gRPC server; absent: `reward-mesh train` / `demo` fill it in
     * ({@link withEpisodeEnvironment}) from the mesh's agentdojo service or `REWARD_MESH_AGENT_ENV_ADDR`,
     * and `runTraining` refuses a run that still has none.
     */
    readonly environment?: string;
    readonly maxTurns: number;
    readonly maxTokens: number;
    readonly concurrency: number;
    readonly callTimeoutMs: number;
    /**
     * The tool schemas the policy is shown: `full` (the environment's) or `compact` (name, the first
     * line of the description, `{"param": "type"}`; `trainer/src/run/episode-tools.ts`), for text
     * policies with a small context.
     */
    readonly tools: "full" | "compact";
  } | null;
  /** Checking results against the services' `Describe` (always on). */
  readonly validation: {
    /** How long each service has to answer `Describe` at run start before the run fails. */
    readonly describeTimeoutMs: number;
    /** Rejected results are logged at most once per service and reason in this interval. */
    readonly logIntervalMs: number;
  };
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The published schema (`trainer/schema/run-config.schema.json`): the source of every structural check. */
const SCHEMA = JSON.parse(
  readFileSync(fileURLToPath(new URL("../../schema/run-config.schema.json", import.meta.url)), "utf8"),
) as Obj;
const validateSchema = new Ajv({
  allErrors: true, // the message is picked below, in the order the keys are read
  verbose: true, // each error carries its schema node and value
  strict: true,
  strictRequired: false,
  allowUnionTypes: true,
}).compile(SCHEMA);

const keyOf = (path: string, k: string) => (path === "" ? k : `${path}.${k}`);

/** Mappings in which a known key set to null means "absent" (the default), with their known keys; null elsewhere is a value. */
const NULL_IS_ABSENT: Readonly<Record<string, readonly string[]>> = (() => {
  const props = (node: unknown) => Object.keys(((node as Obj)["properties"] as Obj | undefined) ?? {});
  const p = SCHEMA["properties"] as Record<string, Obj>;
  const alt = (k: string, i: number) => (p[k]!["anyOf"] as Obj[])[i];
  const torch = (SCHEMA["definitions"] as Record<string, Obj>)["torchLearner"]!;
  return {
    "": props(SCHEMA),
    ...Object.fromEntries(
      ["run", "tasks", "loss", "optim", "groups", "rewardNoise", "generation", "validation", "episodes"].map(
        (k) => [k, props(p[k])],
      ),
    ),
    estimator: props(alt("estimator", 1)),
    sgrpo: props(alt("sgrpo", 2)),
    dynamicSampling: props(alt("dynamicSampling", 1)),
    learner: props(torch).concat("address"),
    "learner.warmup": props((torch["properties"] as Obj)["warmup"]),
  };
})();
/** Keys whose null is checked as a value (an error), not read as absent. */
const NULL_IS_VALUE = new Set(["components", "estimator", "learner.gradientCheckpointing"]);

/** `doc` with the null-valued keys of its mappings removed (shallow copies; the input is not changed). */
function withoutNulls(doc: Obj): Obj {
  // Only known keys: an unknown key set to null is still reported as unknown.
  const strip = (o: Obj, path: string, known: readonly string[]): Obj =>
    Object.fromEntries(
      Object.entries(o).filter(
        ([k, v]) => v !== null || !known.includes(k) || NULL_IS_VALUE.has(keyOf(path, k)),
      ),
    );
  const out = strip(doc, "", NULL_IS_ABSENT[""]!);
  for (const [path, known] of Object.entries(NULL_IS_ABSENT)) {
    if (path === "") continue;
    const parts = path.split(".");
    let parent: unknown = out;
    for (const k of parts.slice(0, -1)) parent = isObj(parent) ? parent[k] : undefined;
    const last = parts[parts.length - 1]!;
    const v = isObj(parent) ? parent[last] : undefined;
    if (isObj(parent) && isObj(v)) parent[last] = strip(v, path, known);
  }
  const comps = out["components"];
  if (Array.isArray(comps))
    out["components"] = comps.map((c) =>
      isObj(c) && !Object.hasOwn(c, "preset") // {preset: null} is reported as it always was
        ? strip(c, "", ["service", "component", "weight"])
        : c,
    );
  return out;
}

interface SchemaError {
  readonly keyword: string;
  readonly instancePath: string;
  readonly schemaPath: string;
  readonly params: Record<string, unknown>;
  readonly parentSchema?: Obj;
  readonly data?: unknown;
  /** The key, for an error of `propertyNames`. */
  readonly propertyName?: string;
}

/** The dotted key of a JSON pointer into `doc` (`/components/0/service` → `components[0].service`). */
function dotted(doc: unknown, pointer: string): string {
  let key = "";
  let node: unknown = doc;
  for (const raw of pointer.split("/").slice(1)) {
    const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    key = Array.isArray(node) ? `${key}[${part}]` : keyOf(key, part);
    node = isObj(node) || Array.isArray(node) ? (node as Obj)[part] : undefined;
  }
  return key;
}

function valueAt(doc: unknown, pointer: string): unknown {
  let node: unknown = doc;
  for (const raw of pointer.split("/").slice(1))
    node =
      isObj(node) || Array.isArray(node)
        ? (node as Obj)[raw.replace(/~1/g, "/").replace(/~0/g, "~")]
        : undefined;
  return node;
}

const TOKEN = /^[A-Za-z0-9_-]+$/;
const LEARNER_KINDS = ["embedded", "grpc", "torch"] as const;

function unknownPreset(key: string, name: unknown): RunConfigError {
  return new RunConfigError(
    key,
    `unknown preset ${showValue(name)} (known: ${Object.keys(COMPONENT_PRESETS).join(", ")})`,
  );
}

function unknownEstimator(name: string): RunConfigError {
  try {
    resolveEstimatorName(name);
  } catch (err) {
    return new RunConfigError("estimator.name", err instanceof Error ? err.message : String(err), {
      cause: err,
    });
  }
  return new RunConfigError("estimator.name", `unknown advantage estimator ${showValue(name)}`);
}

/**
 * For each mapping of the schema that has alternatives (`anyOf`): the message when the value fits none
 * of them as a whole, or the schema paths of the alternative whose errors count (the one picked by the
 * value's shape, as the validator always read it; `>`: counts only for keys below this mapping).
 */
function alternative(pointer: string, v: unknown): RunConfigError | readonly string[] | undefined {
  if (pointer === "/components") {
    if (typeof v === "string") return unknownPreset("components[0]", v);
    if (Array.isArray(v) && v.length > 0) return ["#/properties/components/anyOf/1"];
    return new RunConfigError("components", "must be a preset name or a non-empty list");
  }
  const item = /^\/components\/(\d+)$/.exec(pointer);
  if (item) {
    const key = `components[${item[1]}]`;
    if (typeof v === "string") return unknownPreset(key, v);
    if (isObj(v) && typeof v["preset"] === "string")
      return ["#/anyOf/1", "#/definitions/componentItem/anyOf/1", ">#/definitions/preset"];
    // ("#/anyOf/…": ajv names the paths of a shared definition from that definition)
    if (isObj(v)) return ["#/anyOf/2", "#/definitions/componentItem/anyOf/2"];
    return new RunConfigError(
      key,
      `must be a preset name or {service, component, weight}, got ${showValue(v)}`,
    );
  }
  if (pointer === "/estimator") {
    if (typeof v === "string") return unknownEstimator(v);
    if (isObj(v)) return ["#/properties/estimator/anyOf/1", ">#/properties/estimator/definitions/name"];
    return new RunConfigError("estimator", `must be a name or {name, options}, got ${showValue(v)}`);
  }
  if (pointer === "/sgrpo") {
    if (isObj(v)) return ["#/properties/sgrpo/anyOf/2"];
    return new RunConfigError("sgrpo", `must be a mapping, got ${showValue(v)}`);
  }
  if (pointer === "/dynamicSampling") {
    if (isObj(v)) return ["#/properties/dynamicSampling/anyOf/1"];
    return new RunConfigError("dynamicSampling", `must be true, false or {component}, got ${showValue(v)}`);
  }
  if (pointer === "/learner") {
    if (typeof v === "string")
      return new RunConfigError(
        "learner",
        `must be 'embedded', 'torch', 'grpc://host:port' or {kind, ...}, got ${showValue(v)}`,
      );
    if (!isObj(v)) return new RunConfigError("learner", `must be a name or a mapping, got ${showValue(v)}`);
    const kind = v["kind"] ?? "embedded";
    if (typeof kind !== "string" || kind === "")
      return new RunConfigError("learner.kind", `must be a non-empty string, got ${showValue(kind)}`);
    if (kind === "embedded") return ["#/properties/learner/anyOf/3"];
    if (kind === "grpc") return ["#/properties/learner/anyOf/4"];
    if (kind === "torch") return ["#/definitions/torchLearner"];
    return new RunConfigError(
      "learner.kind",
      `must be one of ${LEARNER_KINDS.join(", ")}, got ${showValue(kind)}`,
    );
  }
  return undefined;
}

/** What each required key's message adds. */
const REQUIRED: Readonly<Record<string, string>> = {
  components: "is required (a preset name, or a list of {service, component, weight})",
  "sgrpo.p": "is required (label-flip probability in [0, 0.5))",
  "learner.address": "is required (host:port)",
  "learner.warmup.file": "is required (JSONL of {prompt, response})",
  "tasks.path": "is required with source 'jsonl' (a file of rewardmesh.v1.Task lines)",
};

/** The message of one schema error, in the words the trainer has always used for that key. */
function message(doc: Obj, e: SchemaError): RunConfigError {
  const key = dotted(doc, e.instancePath);
  const s = e.parentSchema ?? {};
  const v = e.data;
  const top = e.instancePath.split("/").slice(0, 3).join("/");
  if (e.keyword === "additionalProperties") {
    const known = Object.keys((s["properties"] as Obj | undefined) ?? {});
    return new RunConfigError(
      keyOf(key, String(e.params["additionalProperty"])),
      `is not a known key (known: ${known.join(", ")})`,
    );
  }
  if (e.keyword === "required") {
    const k = keyOf(key, String(e.params["missingProperty"]));
    return new RunConfigError(k, REQUIRED[k.replace(/\[\d+\]/g, "")] ?? "is required");
  }
  if (e.schemaPath === "#/properties/tasks/else/not")
    return new RunConfigError("tasks.path", "is only read with source 'jsonl'");
  if (e.schemaPath.startsWith("#/properties/services/propertyNames"))
    return new RunConfigError(
      `services.${e.propertyName ?? String(e.params["propertyName"])}`,
      "is not a valid service name",
    );
  if (e.instancePath.startsWith("/services/"))
    return new RunConfigError(dotted(doc, top.split("/").slice(0, 3).join("/")), "must be a list of domains");
  if (top === "/tasks/sets") {
    const sets = valueAt(doc, top);
    if (Array.isArray(sets) && sets.length > 0 && sets.every((x) => typeof x === "string" && TOKEN.test(x))) {
      const i = sets.findIndex((x) => !isBuiltinSet(x));
      return new RunConfigError(
        `tasks.sets[${i}]`,
        `unknown task set '${sets[i]}' (known: ${BUILTIN_SET_NAMES.join(", ")})`,
      );
    }
    return new RunConfigError("tasks.sets", `must be a non-empty list of set names, got ${showValue(sets)}`);
  }
  if (top === "/generation/stop")
    return new RunConfigError(
      "generation.stop",
      `must be a list of non-empty strings, got ${showValue(valueAt(doc, top))}`,
    );
  if (top === "/rewardNoise/components")
    return new RunConfigError(
      "rewardNoise.components",
      "must be a list of component names (service/component)",
    );
  if (e.schemaPath.startsWith("#/definitions/preset")) return unknownPreset(key, v);
  if (e.schemaPath.startsWith("#/properties/estimator/definitions/name") && typeof v === "string" && v !== "")
    return unknownEstimator(v);
  const type = Array.isArray(s["type"]) ? (s["type"] as string[])[0] : s["type"];
  if (type === "object")
    return new RunConfigError(
      key === "" ? "(root)" : key,
      key === "" ? "must be a mapping" : `must be a mapping, got ${showValue(v)}`,
    );
  if (type === "number" || type === "integer") {
    const min = (s["minimum"] as number | undefined) ?? Number.NEGATIVE_INFINITY;
    const max = s["maximum"] as number | undefined;
    const range = max === undefined ? `>= ${min}` : `in [${min}, ${max}]`;
    return new RunConfigError(
      key,
      `must be ${type === "integer" ? "an integer" : "a number"} ${range}, got ${showValue(v)}`,
    );
  }
  if (type === "boolean") return new RunConfigError(key, `must be true or false, got ${showValue(v)}`);
  if (type === "string") {
    if (typeof v !== "string" || v === "")
      return new RunConfigError(key, `must be a non-empty string, got ${showValue(v)}`);
    if (e.keyword === "enum")
      return new RunConfigError(
        key,
        `must be one of ${(s["enum"] as string[]).join(", ")}, got ${showValue(v)}`,
      );
    if (e.keyword === "pattern")
      return new RunConfigError(key, `must match /${String(s["pattern"])}/, got ${showValue(v)}`);
  }
  // Not reached for this schema; still a message that names the key.
  return new RunConfigError(key === "" ? "(root)" : key, `is not valid: ${e.keyword}`);
}

/**
 * The order in which the validator has always read the keys (so a document with several problems gets
 * the same first message): `?m` is the spelling of mapping `m`'s keys (and its being a mapping), any
 * other entry a key and everything below it. Relations between components, services and rewardNoise
 * are checked at `learner` (see {@link resolveRunConfig}).
 */
const READ_ORDER = [
  "?",
  "?run",
  "?tasks",
  "tasks.source",
  "tasks.path",
  "tasks.sets",
  "estimator",
  "sgrpo",
  "dynamicSampling",
  "?loss",
  "loss.type",
  "?optim",
  "?groups",
  "?rewardNoise",
  "rewardNoise.components",
  "?validation",
  "services",
  "components",
  "learner",
  "?generation",
  "generation.stop",
  "run.id",
  "run.seed",
  "run.outputDir",
  "generation.temperature",
  "generation.topP",
  "generation.maxNewTokens",
  "groupSize",
  "promptsPerStep",
  "steps",
  "loss.epsLow",
  "loss.epsHigh",
  "loss.dualClipC",
  "loss.klBeta",
  "loss.maxCompletionLength",
  "optim.lr",
  "optim.epochs",
  "optim.maxGradNorm",
  "groups.deadlineMs",
  "groups.missing",
  "rewardNoise.p",
  "checkpointEvery",
  "validation.describeTimeoutMs",
  "validation.logIntervalMs",
  "?episodes",
  "episodes.environment",
  "episodes.maxTurns",
  "episodes.maxTokens",
  "episodes.concurrency",
  "episodes.callTimeoutMs",
  "episodes.tools",
] as const;
const CROSS_KEY_RANK = READ_ORDER.indexOf("learner");

function readRank(e: SchemaError, err: RunConfigError): number {
  const mapping =
    e.keyword === "additionalProperties"
      ? e.instancePath
      : e.keyword === "type" && e.parentSchema?.["type"] === "object"
        ? e.instancePath
        : undefined;
  const entry = mapping === undefined ? undefined : `?${mapping.slice(1).replace(/\//g, ".")}`;
  const i = entry === undefined ? -1 : READ_ORDER.indexOf(entry as never);
  if (i >= 0) return i;
  const key = err.key.replace(/\[\d+\]/g, "");
  const j = READ_ORDER.findIndex((k) => key === k || key.startsWith(`${k}.`) || key.startsWith(`${k}[`));
  return j >= 0 ? j : READ_ORDER.length;
}

/**
 * Checks `doc` (nulls already read as absent) against the schema: the first problem, in the validator's
 * reading order, as the message the trainer has always given for that key, with its place in that order.
 */
function checkSchema(doc: Obj): { error: RunConfigError; rank: number } | null {
  if (validateSchema(doc)) return null;
  const errors = (validateSchema.errors ?? []) as SchemaError[];
  let best: { error: RunConfigError; rank: number; at: number; tier: number } | null = null;
  const services = Object.keys(isObj(doc["services"]) ? doc["services"] : {});
  const consider = (e: SchemaError, error: RunConfigError) => {
    // Within one key: the items of a list and the entries of services one after the other; within
    // each, its unknown keys (or bad name) first, then its values, then what is missing.
    const item = /^components\[(\d+)\]/.exec(error.key);
    const service = /^services\.(.*)$/s.exec(error.key);
    const at = item ? Number(item[1]) : service ? services.indexOf(service[1]!) : -1;
    const tier =
      e.keyword === "additionalProperties" || e.keyword === "propertyNames" || e.propertyName !== undefined
        ? 0
        : e.keyword === "required" ||
            e.schemaPath === "#/properties/tasks/else/not" ||
            (error.key === "estimator.name" && e.keyword === "enum")
          ? 2
          : 1;
    const rank = readRank(e, error);
    const before =
      !best ||
      rank < best.rank ||
      (rank === best.rank && (at < best.at || (at === best.at && tier < best.tier)));
    if (before) best = { error, rank, at, tier };
  };
  for (const e of errors) {
    if (e.keyword === "if") continue; // the condition of tasks.path, reported as then/else
    // The innermost mapping with alternatives that holds this error decides whether it counts.
    let counts = true;
    const parts = e.instancePath.split("/");
    for (let n = parts.length; n >= 1; n--) {
      const pointer = parts.slice(0, n).join("/");
      const alt = alternative(pointer, valueAt(doc, pointer));
      if (alt === undefined) continue;
      if (alt instanceof RunConfigError) {
        if (e.keyword === "anyOf" && e.instancePath === pointer) consider(e, alt);
        counts = false;
      } else
        counts =
          e.keyword !== "anyOf" &&
          alt.some((p) =>
            // ">": a definition the alternative shares with others counts only below this mapping
            p.startsWith(">")
              ? e.instancePath !== pointer && e.schemaPath.startsWith(p.slice(1))
              : e.schemaPath.startsWith(p),
          );
      break;
    }
    if (counts) consider(e, message(doc, e));
  }
  if (best) return best;
  const e = errors[0]!;
  return {
    error: new RunConfigError(dotted(doc, e.instancePath) || "(root)", `is not valid (${e.schemaPath})`),
    rank: 0,
  };
}

function expandComponents(v: unknown): ComponentConfig[] {
  const items = typeof v === "string" ? [v] : (v as unknown[]);
  const out: ComponentConfig[] = [];
  for (const item of items) {
    if (typeof item === "string") out.push(...COMPONENT_PRESETS[item]!);
    else if (typeof (item as Obj)["preset"] === "string")
      out.push(...COMPONENT_PRESETS[(item as { preset: string }).preset]!);
    else {
      const c = item as { service: string; component: string; weight?: number };
      out.push({ service: c.service, component: c.component, weight: c.weight ?? 1 });
    }
  }
  const seen = new Set<string>();
  for (const c of out) {
    const id = `${c.service}/${c.component}`;
    if (seen.has(id)) throw new RunConfigError("components", `lists ${id} twice`);
    seen.add(id);
  }
  return out;
}

/**
 * Validates a parsed YAML/JSON document into a {@link RunConfig}: the schema checks every key's type,
 * bounds and spelling; what follows checks what a schema cannot (relations between keys, the
 * estimator's options) and fills the defaults.
 */
export function resolveRunConfig(raw: unknown, now: Date = new Date()): RunConfig {
  if (!isObj(raw)) throw new RunConfigError("(root)", "must be a mapping");
  const doc = withoutNulls(raw);
  const problem = checkSchema(doc);
  // Relations between components, services and rewardNoise were always checked before the learner and
  // the scalar keys: a problem there still comes first (the keys they read are valid when it is reached).
  if (problem && problem.rank < CROSS_KEY_RANK) throw problem.error;
  const comps = expandComponents(doc["components"]);
  const serviceDomains: Record<string, readonly string[]> = {
    ...DEFAULT_SERVICE_DOMAINS,
    ...((doc["services"] ?? {}) as Record<string, string[]>),
  };
  const noiseComponents = (((doc["rewardNoise"] ?? {}) as Obj)["components"] ?? []) as string[];
  for (const [i, c] of comps.entries()) {
    if (!Object.hasOwn(serviceDomains, c.service)) {
      throw new RunConfigError(
        `components[${i}].service`,
        `unknown service '${c.service}'${didYouMean(c.service, Object.keys(serviceDomains))}: this build's services are ${Object.keys(serviceDomains).join(", ")}; a service from elsewhere (e.g. behind 'reward-mesh serve --remote') goes under 'services' with the domains it scores`,
      );
    }
  }
  for (const [i, n] of noiseComponents.entries()) {
    if (!comps.some((c) => `${c.service}/${c.component}` === n)) {
      throw new RunConfigError(
        `rewardNoise.components[${i}]`,
        `'${n}' is not one of the configured components`,
      );
    }
  }
  if (problem) throw problem.error;
  const sub = (k: string) => (doc[k] ?? {}) as Obj;
  const run = sub("run");
  const tasks = sub("tasks");
  const source = (tasks["source"] ?? "builtin") as "builtin" | "jsonl";
  const taskPath = tasks["path"] as string | undefined;
  const sets = (tasks["sets"] ?? ["code", "tool_call", "agent"]) as string[];

  const est = doc["estimator"] as string | { name?: string; options?: Obj } | undefined;
  let estimator: RunConfig["estimator"] =
    typeof est === "object"
      ? { name: est.name ?? "grpo_covariance_coefficient", options: est.options ?? {} }
      : { name: est ?? "grpo_covariance_coefficient", options: {} };
  estimator = { ...estimator, name: resolveEstimatorName(estimator.name) };

  const s = doc["sgrpo"];
  const sgrpo: RunConfig["sgrpo"] = isObj(s) ? (s as unknown as NonNullable<RunConfig["sgrpo"]>) : null;
  const ds = doc["dynamicSampling"];
  const dynamicSampling: RunConfig["dynamicSampling"] =
    ds === true ? {} : isObj(ds) ? (ds as { component?: string }) : null;

  const loss = sub("loss");
  const lossType = (loss["type"] ?? "dapo") as LossType;
  const optim = sub("optim");
  const groups = sub("groups");
  const noise = sub("rewardNoise");
  const validation = sub("validation");
  const ep = sub("episodes");

  const gen = sub("generation");
  const n = (o: Obj, k: string, def: number) => (o[k] ?? def) as number;
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");
  const resolved: RunConfig = {
    runId: (run["id"] ?? `run-${stamp}`) as string,
    seed: n(run, "seed", 1),
    outputDir: (run["outputDir"] ?? "runs") as string,
    tasks: { source, sets, ...(taskPath !== undefined ? { path: taskPath } : {}) },
    generation: {
      temperature: n(gen, "temperature", 1),
      topP: n(gen, "topP", 1),
      maxNewTokens: n(gen, "maxNewTokens", 64),
      stop: (gen["stop"] ?? []) as string[],
    },
    groupSize: n(doc, "groupSize", 8),
    promptsPerStep: n(doc, "promptsPerStep", 4),
    steps: n(doc, "steps", 20),
    components: comps,
    serviceDomains,
    estimator,
    sgrpo,
    dynamicSampling,
    loss: {
      type: lossType,
      epsLow: n(loss, "epsLow", 0.2),
      epsHigh: n(loss, "epsHigh", lossType === "dapo" ? 0.28 : lossType === "cispo" ? 5 : 0.2),
      dualClipC: n(loss, "dualClipC", 0),
      klBeta: n(loss, "klBeta", 0),
      maxCompletionLength: n(loss, "maxCompletionLength", 16),
    },
    optim: {
      lr: n(optim, "lr", 0.5),
      epochs: n(optim, "epochs", 1),
      maxGradNorm: n(optim, "maxGradNorm", 10),
    },
    learner: learnerConfig(doc["learner"]),
    groups: {
      deadlineMs: n(groups, "deadlineMs", 60_000),
      missing: (groups["missing"] ?? "drop") as "drop" | "impute",
    },
    rewardNoise: { p: n(noise, "p", 0), components: noiseComponents },
    checkpointEvery: n(doc, "checkpointEvery", 1),
    validation: {
      describeTimeoutMs: n(validation, "describeTimeoutMs", 10_000),
      logIntervalMs: n(validation, "logIntervalMs", 10_000),
    },
    episodes:
      doc["episodes"] === undefined
        ? null
        : {
            ...(ep["environment"] !== undefined ? { environment: ep["environment"] as string } : {}),
            maxTurns: n(ep, "maxTurns", 8),
            maxTokens: n(ep, "maxTokens", 2048),
            concurrency: n(ep, "concurrency", 16),
            callTimeoutMs: n(ep, "callTimeoutMs", 30_000),
            tools: (ep["tools"] ?? "full") as "full" | "compact",
          },
  };
  compileAdvantage(resolved); // options are validated now, not at the first step
  return resolved;
}

/**
 * `config` with `episodes.environment` set to `address` when the run plays episodes and its config
 * names no environment (an explicit one is kept): how `reward-mesh train` and `demo` point episodes at
 * the AgentEnvironment they already list the `agent` set from.
 */
export function withEpisodeEnvironment(config: RunConfig, address: string): RunConfig {
  if (!config.episodes || config.episodes.environment !== undefined) return config;
  return { ...config, episodes: { ...config.episodes, environment: address } };
}

const GRPC_ADDRESS = /^grpc:\/\/([^/\s]+:\d+)$/;

/** `learner` (already checked by the schema): `embedded`, `torch`, `grpc://host:port`, or a mapping with `kind`. */
function learnerConfig(v: unknown): LearnerConfig {
  if (v === undefined || v === null || v === "embedded") return { kind: "embedded" };
  if (v === "torch") return torchLearner({});
  if (typeof v === "string") return { kind: "grpc", address: GRPC_ADDRESS.exec(v)![1]! };
  const o = v as Obj;
  if (o["kind"] === "grpc") return { kind: "grpc", address: o["address"] as string };
  if (o["kind"] === "torch") return torchLearner(o);
  return { kind: "embedded" };
}

function torchLearner(v: Obj): TorchLearnerConfig {
  const w = v["warmup"] as { file: string; steps?: number; lr?: number } | undefined;
  return {
    kind: "torch",
    model: (v["model"] ?? "builtin:tiny") as string,
    device: (v["device"] ?? "auto") as string,
    dtype: (v["dtype"] ?? "auto") as string,
    microBatchSize: (v["microBatchSize"] ?? 0) as number,
    gradientCheckpointing: v["gradientCheckpointing"] === true,
    loraRank: (v["loraRank"] ?? 0) as number,
    threads: (v["threads"] ?? 0) as number,
    warmup: w ? { file: w.file, steps: w.steps ?? 200, lr: w.lr ?? 3e-3 } : null,
  };
}

/** The advantage-engine configuration of a run (validated). */
export function compileAdvantage(c: RunConfig): CompiledAdvantageConfig {
  try {
    return compileUntypedAdvantageConfig({
      estimator: c.estimator.name,
      options: c.estimator.options,
      ...(c.sgrpo ? { sgrpo: c.sgrpo } : {}),
      ...(c.dynamicSampling
        ? { dynamicSampling: c.dynamicSampling.component ? { component: c.dynamicSampling.component } : true }
        : {}),
    } as never);
  } catch (err) {
    throw new RunConfigError("estimator", err instanceof Error ? err.message : String(err), { cause: err });
  }
}

/**
 * The tasks a run trains on: the named built-in sets, or the task file (`tasks.path`, relative to the
 * current directory), each of whose tasks gets `generation.maxNewTokens` as its cap. The `agent` set
 * comes from the environment service: pass it in `provided`, or use {@link resolveRunTasks}.
 */
export function loadRunTasks(c: RunConfig, provided: EnvironmentSets = {}): TaskDefinition[] {
  if (c.tasks.source === "jsonl")
    return loadTaskFile(c.tasks.path!, { maxTokens: c.generation.maxNewTokens });
  return builtinTasks(c.tasks.sets, provided);
}

/** Whether a run's tasks include a set the environment service lists (it needs its address). */
export function runNeedsEnvironment(c: RunConfig): boolean {
  return c.tasks.source === "builtin" && c.tasks.sets.includes("agent");
}

/** {@link loadRunTasks}, asking the environment service at `environment` for the `agent` set. */
export async function resolveRunTasks(
  c: RunConfig,
  environment?: EnvironmentEndpoint,
): Promise<TaskDefinition[]> {
  if (c.tasks.source === "jsonl") return loadRunTasks(c);
  return loadBuiltinTasks(c.tasks.sets, environment);
}

/**
 * Largest run configuration file read (a real one is a few KiB): YAML parsing is super-linear in the
 * keys of one mapping, so a bigger file could stall the start for minutes instead of failing.
 */
export const MAX_RUN_CONFIG_BYTES = 64 * 1024;

/** Reads and validates a YAML run configuration file. */
export function loadRunConfig(path: string): RunConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new RunConfigError(
      "--config",
      `cannot be read: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_RUN_CONFIG_BYTES)
    throw new RunConfigError(
      "--config",
      `is ${bytes} bytes; a run configuration may have at most ${MAX_RUN_CONFIG_BYTES}`,
    );
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    const why = (err instanceof Error ? err.message : String(err)).replace(
      "Maximum call stack size exceeded",
      "nested too deeply to parse",
    );
    throw new RunConfigError("--config", `is not valid YAML: ${why}`, { cause: err });
  }
  return resolveRunConfig(doc);
}
