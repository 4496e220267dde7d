/**
 * The run configuration (`reward-mesh train --config run.yaml`): parsed from YAML, validated once at
 * start with messages that name the key (`'loss.epsHigh' must be a number >= 0, got "x"`), presets
 * expanded, defaults filled. The result is a plain, fully resolved object (what `resolved-config.json`
 * in the run directory records).
 * @module
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { compileUntypedAdvantageConfig } from "../advantage/engine.js";
import type { CompiledAdvantageConfig } from "../advantage/engine.js";
import { showValue } from "../advantage/errors.js";
import { resolveEstimatorName } from "../advantage/estimators.js";
import { type LossType, LossTypes } from "../learner/types.js";
import { BUILTIN_TASK_SETS, builtinTasks } from "./builtin-tasks.js";
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

/** Which rollout domains each known service scores (a component of a service that does not score a domain is NOT_APPLICABLE there). */
export const DEFAULT_SERVICE_DOMAINS: Readonly<Record<string, readonly string[]>> = {
  length: ["code", "tool_call", "agent", "custom"],
  "code-exec": ["code"],
  ast: ["code"],
  efficiency: ["code"],
  "tool-call": ["tool_call"],
  agentdojo: ["agent"],
};

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
  /** `builtin:tiny`, `builtin:small`, or a Hugging Face model directory (never downloaded). */
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
    /** Built-in sets to use (`source: builtin`): `code`, `tool_call`, `agent`, `custom`. */
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

function checkKeys(o: Obj, path: string, allowed: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) {
      const where = path === "" ? k : `${path}.${k}`;
      throw new RunConfigError(where, `is not a known key (known: ${allowed.join(", ")})`);
    }
  }
}

const keyOf = (path: string, k: string) => (path === "" ? k : `${path}.${k}`);

function num(
  o: Obj,
  path: string,
  k: string,
  def: number,
  min: number,
  max = Number.POSITIVE_INFINITY,
  integer = false,
): number {
  const v = o[k];
  if (v === undefined || v === null) return def;
  if (
    typeof v !== "number" ||
    !Number.isFinite(v) ||
    v < min ||
    v > max ||
    (integer && !Number.isInteger(v))
  ) {
    const what = integer ? "an integer" : "a number";
    const range = max === Number.POSITIVE_INFINITY ? `>= ${min}` : `in [${min}, ${max}]`;
    throw new RunConfigError(keyOf(path, k), `must be ${what} ${range}, got ${showValue(v)}`);
  }
  return v;
}

function str(o: Obj, path: string, k: string, def: string, pattern?: RegExp): string {
  const v = o[k];
  if (v === undefined || v === null) return def;
  if (typeof v !== "string" || v === "")
    throw new RunConfigError(keyOf(path, k), `must be a non-empty string, got ${showValue(v)}`);
  if (pattern && !pattern.test(v))
    throw new RunConfigError(keyOf(path, k), `must match ${pattern}, got ${showValue(v)}`);
  return v;
}

function oneOf<T extends string>(o: Obj, path: string, k: string, choices: readonly T[], def: T): T {
  const v = str(o, path, k, def);
  if (!(choices as readonly string[]).includes(v)) {
    throw new RunConfigError(keyOf(path, k), `must be one of ${choices.join(", ")}, got ${showValue(v)}`);
  }
  return v as T;
}

function obj(o: Obj, path: string, k: string): Obj {
  const v = o[k];
  if (v === undefined || v === null) return {};
  if (!isObj(v)) throw new RunConfigError(keyOf(path, k), `must be a mapping, got ${showValue(v)}`);
  return v;
}

const TOKEN = /^[A-Za-z0-9_-]+$/;

function components(o: Obj): ComponentConfig[] {
  const v = o["components"];
  if (v === undefined)
    throw new RunConfigError(
      "components",
      "is required (a preset name, or a list of {service, component, weight})",
    );
  const presetList = (name: string, key: string) => {
    const p = Object.hasOwn(COMPONENT_PRESETS, name) ? COMPONENT_PRESETS[name] : undefined;
    if (!p)
      throw new RunConfigError(
        key,
        `unknown preset ${showValue(name)} (known: ${Object.keys(COMPONENT_PRESETS).join(", ")})`,
      );
    return p;
  };
  const items: unknown[] = typeof v === "string" ? [v] : Array.isArray(v) ? v : [];
  if (items.length === 0) throw new RunConfigError("components", "must be a preset name or a non-empty list");
  const out: ComponentConfig[] = [];
  items.forEach((item, i) => {
    const key = `components[${i}]`;
    if (typeof item === "string") out.push(...presetList(item, key));
    else if (isObj(item) && typeof item["preset"] === "string") {
      checkKeys(item, key, ["preset"]);
      out.push(...presetList(item["preset"], `${key}.preset`));
    } else if (isObj(item)) {
      checkKeys(item, key, ["service", "component", "weight"]);
      out.push({
        service: str(item, key, "service", "", TOKEN),
        component: str(item, key, "component", "", TOKEN),
        weight: num(item, key, "weight", 1, Number.NEGATIVE_INFINITY),
      });
      if (!item["service"]) throw new RunConfigError(`${key}.service`, "is required");
      if (!item["component"]) throw new RunConfigError(`${key}.component`, "is required");
    } else {
      throw new RunConfigError(
        key,
        `must be a preset name or {service, component, weight}, got ${showValue(item)}`,
      );
    }
  });
  const seen = new Set<string>();
  for (const c of out) {
    const id = `${c.service}/${c.component}`;
    if (seen.has(id)) throw new RunConfigError("components", `lists ${id} twice`);
    seen.add(id);
  }
  return out;
}

/** Validates a parsed YAML/JSON document into a {@link RunConfig}. */
export function resolveRunConfig(doc: unknown, now: Date = new Date()): RunConfig {
  if (!isObj(doc)) throw new RunConfigError("(root)", "must be a mapping");
  checkKeys(doc, "", [
    "run",
    "tasks",
    "groupSize",
    "promptsPerStep",
    "steps",
    "components",
    "services",
    "estimator",
    "sgrpo",
    "dynamicSampling",
    "loss",
    "optim",
    "learner",
    "groups",
    "rewardNoise",
    "checkpointEvery",
    "generation",
    "validation",
  ]);
  const run = obj(doc, "", "run");
  checkKeys(run, "run", ["id", "seed", "outputDir"]);
  const tasks = obj(doc, "", "tasks");
  checkKeys(tasks, "tasks", ["source", "sets", "path"]);
  const source = oneOf(tasks, "tasks", "source", ["builtin", "jsonl"] as const, "builtin");
  const taskPath = tasks["path"] === undefined ? undefined : str(tasks, "tasks", "path", "");
  if (source === "jsonl" && taskPath === undefined)
    throw new RunConfigError(
      "tasks.path",
      "is required with source 'jsonl' (a file of rewardmesh.v1.Task lines)",
    );
  if (source === "builtin" && taskPath !== undefined)
    throw new RunConfigError("tasks.path", "is only read with source 'jsonl'");
  const sets = tasks["sets"] ?? ["code", "tool_call", "agent"];
  if (
    !Array.isArray(sets) ||
    sets.length === 0 ||
    !sets.every((s) => typeof s === "string" && TOKEN.test(s))
  ) {
    throw new RunConfigError("tasks.sets", `must be a non-empty list of set names, got ${showValue(sets)}`);
  }
  (sets as string[]).forEach((name, i) => {
    if (!Object.hasOwn(BUILTIN_TASK_SETS, name)) {
      throw new RunConfigError(
        `tasks.sets[${i}]`,
        `unknown task set '${name}' (known: ${Object.keys(BUILTIN_TASK_SETS).join(", ")})`,
      );
    }
  });

  const est = doc["estimator"];
  let estimator: RunConfig["estimator"];
  if (typeof est === "string" || est === undefined)
    estimator = { name: est ?? "grpo_covariance_coefficient", options: {} };
  else if (isObj(est)) {
    checkKeys(est, "estimator", ["name", "options"]);
    estimator = {
      name: str(est, "estimator", "name", "grpo_covariance_coefficient"),
      options: obj(est, "estimator", "options"),
    };
  } else throw new RunConfigError("estimator", `must be a name or {name, options}, got ${showValue(est)}`);
  try {
    estimator = { ...estimator, name: resolveEstimatorName(estimator.name) };
  } catch (err) {
    throw new RunConfigError("estimator.name", err instanceof Error ? err.message : String(err), {
      cause: err,
    });
  }

  let sgrpo: RunConfig["sgrpo"] = null;
  if (doc["sgrpo"] !== undefined && doc["sgrpo"] !== null && doc["sgrpo"] !== false) {
    const s = obj(doc, "", "sgrpo");
    checkKeys(s, "sgrpo", ["p", "component", "successThreshold", "variant"]);
    sgrpo = {
      p: num(s, "sgrpo", "p", Number.NaN, 0, 0.4999999),
      ...(s["component"] !== undefined ? { component: str(s, "sgrpo", "component", "") } : {}),
      ...(s["successThreshold"] !== undefined
        ? { successThreshold: num(s, "sgrpo", "successThreshold", 0, Number.NEGATIVE_INFINITY) }
        : {}),
      ...(s["variant"] !== undefined
        ? { variant: oneOf(s, "sgrpo", "variant", ["code", "dr_grpo"], "code") }
        : {}),
    };
    if (Number.isNaN(sgrpo.p))
      throw new RunConfigError("sgrpo.p", "is required (label-flip probability in [0, 0.5))");
  }
  let dynamicSampling: RunConfig["dynamicSampling"] = null;
  const ds = doc["dynamicSampling"];
  if (ds === true) dynamicSampling = {};
  else if (isObj(ds)) {
    checkKeys(ds, "dynamicSampling", ["component"]);
    dynamicSampling =
      ds["component"] === undefined ? {} : { component: str(ds, "dynamicSampling", "component", "") };
  } else if (ds !== undefined && ds !== false && ds !== null) {
    throw new RunConfigError("dynamicSampling", `must be true, false or {component}, got ${showValue(ds)}`);
  }

  const loss = obj(doc, "", "loss");
  checkKeys(loss, "loss", ["type", "epsLow", "epsHigh", "dualClipC", "klBeta", "maxCompletionLength"]);
  const lossType = oneOf(loss, "loss", "type", LossTypes, "dapo");
  const optim = obj(doc, "", "optim");
  checkKeys(optim, "optim", ["lr", "epochs", "maxGradNorm"]);
  const groups = obj(doc, "", "groups");
  checkKeys(groups, "groups", ["deadlineMs", "missing"]);
  const noise = obj(doc, "", "rewardNoise");
  checkKeys(noise, "rewardNoise", ["p", "components"]);
  const noiseComponents = noise["components"] ?? [];
  if (!Array.isArray(noiseComponents) || !noiseComponents.every((c) => typeof c === "string")) {
    throw new RunConfigError(
      "rewardNoise.components",
      "must be a list of component names (service/component)",
    );
  }

  const validation = obj(doc, "", "validation");
  checkKeys(validation, "validation", ["describeTimeoutMs", "logIntervalMs"]);

  const serviceDomains: Record<string, readonly string[]> = { ...DEFAULT_SERVICE_DOMAINS };
  const svc = obj(doc, "", "services");
  for (const [name, domains] of Object.entries(svc)) {
    // `__proto__` would replace the mapping's prototype instead of naming a service.
    if (!TOKEN.test(name) || name === "__proto__")
      throw new RunConfigError(`services.${name}`, "is not a valid service name");
    if (!Array.isArray(domains) || !domains.every((d) => typeof d === "string" && TOKEN.test(d))) {
      throw new RunConfigError(`services.${name}`, "must be a list of domains");
    }
    serviceDomains[name] = domains as string[];
  }
  const comps = components(doc);
  for (const [i, c] of comps.entries()) {
    if (!Object.hasOwn(serviceDomains, c.service)) {
      throw new RunConfigError(
        `components[${i}].service`,
        `unknown service '${c.service}': add it under 'services' with the domains it scores`,
      );
    }
  }
  for (const [i, n] of (noiseComponents as string[]).entries()) {
    if (!comps.some((c) => `${c.service}/${c.component}` === n)) {
      throw new RunConfigError(
        `rewardNoise.components[${i}]`,
        `'${n}' is not one of the configured components`,
      );
    }
  }

  const learner = learnerConfig(doc["learner"]);
  const gen = obj(doc, "", "generation");
  checkKeys(gen, "generation", ["temperature", "topP", "maxNewTokens", "stop"]);
  const stop = gen["stop"] ?? [];
  if (!Array.isArray(stop) || !stop.every((x) => typeof x === "string" && x !== ""))
    throw new RunConfigError(
      "generation.stop",
      `must be a list of non-empty strings, got ${showValue(stop)}`,
    );
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\..*/, "").replace("T", "-");
  const resolved: RunConfig = {
    runId: str(run, "run", "id", `run-${stamp}`, TOKEN),
    seed: num(run, "run", "seed", 1, 0, 2 ** 31 - 1, true),
    outputDir: str(run, "run", "outputDir", "runs"),
    tasks: { source, sets: sets as string[], ...(taskPath !== undefined ? { path: taskPath } : {}) },
    generation: {
      temperature: num(gen, "generation", "temperature", 1, 1e-6),
      topP: num(gen, "generation", "topP", 1, 1e-6, 1),
      maxNewTokens: num(gen, "generation", "maxNewTokens", 64, 1, 4096, true),
      stop: stop as string[],
    },
    groupSize: num(doc, "", "groupSize", 8, 2, 1024, true),
    promptsPerStep: num(doc, "", "promptsPerStep", 4, 1, 4096, true),
    steps: num(doc, "", "steps", 20, 1, 1_000_000, true),
    components: comps,
    serviceDomains,
    estimator,
    sgrpo,
    dynamicSampling,
    loss: {
      type: lossType,
      epsLow: num(loss, "loss", "epsLow", 0.2, 0, 1),
      epsHigh: num(loss, "loss", "epsHigh", lossType === "dapo" ? 0.28 : lossType === "cispo" ? 5 : 0.2, 0),
      dualClipC: num(loss, "loss", "dualClipC", 0, 0),
      klBeta: num(loss, "loss", "klBeta", 0, 0),
      maxCompletionLength: num(loss, "loss", "maxCompletionLength", 16, 1, 1_000_000, true),
    },
    optim: {
      lr: num(optim, "optim", "lr", 0.5, 0),
      epochs: num(optim, "optim", "epochs", 1, 1, 100, true),
      maxGradNorm: num(optim, "optim", "maxGradNorm", 10, 0),
    },
    learner,
    groups: {
      deadlineMs: num(groups, "groups", "deadlineMs", 60_000, 100),
      missing: oneOf(groups, "groups", "missing", ["drop", "impute"], "drop"),
    },
    rewardNoise: {
      p: num(noise, "rewardNoise", "p", 0, 0, 0.4999999),
      components: noiseComponents as string[],
    },
    checkpointEvery: num(doc, "", "checkpointEvery", 1, 1, 1_000_000, true),
    validation: {
      describeTimeoutMs: num(validation, "validation", "describeTimeoutMs", 10_000, 100, 600_000),
      logIntervalMs: num(validation, "validation", "logIntervalMs", 10_000, 0),
    },
  };
  compileAdvantage(resolved); // options are validated now, not at the first step
  return resolved;
}

const GRPC_ADDRESS = /^grpc:\/\/([^/\s]+:\d+)$/;

/** `learner`: `embedded`, `torch`, `grpc://host:port`, or a mapping with `kind`. */
function learnerConfig(v: unknown): LearnerConfig {
  if (v === undefined || v === null || v === "embedded") return { kind: "embedded" };
  if (typeof v === "string") {
    const m = GRPC_ADDRESS.exec(v);
    if (m) return { kind: "grpc", address: m[1]! };
    if (v === "torch") return torchLearner({});
    throw new RunConfigError(
      "learner",
      `must be 'embedded', 'torch', 'grpc://host:port' or {kind, ...}, got ${showValue(v)}`,
    );
  }
  if (!isObj(v)) throw new RunConfigError("learner", `must be a name or a mapping, got ${showValue(v)}`);
  const kind = oneOf(v, "learner", "kind", ["embedded", "grpc", "torch"] as const, "embedded");
  if (kind === "embedded") {
    checkKeys(v, "learner", ["kind"]);
    return { kind };
  }
  if (kind === "grpc") {
    checkKeys(v, "learner", ["kind", "address"]);
    const address = str(v, "learner", "address", "", /^[^/\s]+:\d+$/);
    if (!address) throw new RunConfigError("learner.address", "is required (host:port)");
    return { kind, address };
  }
  return torchLearner(v);
}

function torchLearner(v: Obj): TorchLearnerConfig {
  checkKeys(v, "learner", [
    "kind",
    "model",
    "device",
    "dtype",
    "microBatchSize",
    "gradientCheckpointing",
    "loraRank",
    "threads",
    "warmup",
  ]);
  const g = v["gradientCheckpointing"];
  if (g !== undefined && typeof g !== "boolean")
    throw new RunConfigError("learner.gradientCheckpointing", `must be true or false, got ${showValue(g)}`);
  let warmup: TorchLearnerConfig["warmup"] = null;
  if (v["warmup"] !== undefined && v["warmup"] !== null) {
    const w = obj(v, "learner", "warmup");
    checkKeys(w, "learner.warmup", ["file", "steps", "lr"]);
    const file = str(w, "learner.warmup", "file", "");
    if (!file) throw new RunConfigError("learner.warmup.file", "is required (JSONL of {prompt, response})");
    warmup = {
      file,
      steps: num(w, "learner.warmup", "steps", 200, 1, 1_000_000, true),
      lr: num(w, "learner.warmup", "lr", 3e-3, 0),
    };
  }
  return {
    kind: "torch",
    model: str(v, "learner", "model", "builtin:tiny"),
    device: str(v, "learner", "device", "auto", /^(auto|cpu|cuda(:\d+)?)$/),
    dtype: oneOf(v, "learner", "dtype", ["auto", "float32", "float64", "bfloat16"] as const, "auto"),
    microBatchSize: num(v, "learner", "microBatchSize", 0, 0, 1_000_000, true),
    gradientCheckpointing: g === true,
    loraRank: num(v, "learner", "loraRank", 0, 0, 4096, true),
    threads: num(v, "learner", "threads", 0, 0, 1024, true),
    warmup,
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
 * current directory), each of whose tasks gets `generation.maxNewTokens` as its cap.
 */
export function loadRunTasks(c: RunConfig): TaskDefinition[] {
  if (c.tasks.source === "jsonl")
    return loadTaskFile(c.tasks.path!, { maxTokens: c.generation.maxNewTokens });
  return builtinTasks(c.tasks.sets);
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
