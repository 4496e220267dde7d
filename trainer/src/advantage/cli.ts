/**
 * `reward-mesh advantages`: JSON groups on stdin → advantages (and diagnostics) on stdout.
 *
 * Pure: takes argv and the stdin text, returns what to print and the exit code; the binary wires
 * it to the process. Errors are exactly one line on stderr with exit code 2.
 * @module
 */

import { didYouMean } from "@reward-mesh/sdk/suggest";
import { compileUntypedAdvantageConfig, computeAdvantages } from "./engine.js";
import { AdvantageCliUsageError, isAdvantageError } from "./errors.js";
import { supportedEstimatorNames } from "./estimators.js";
import type { AdvantageBatchInput, GroupDiagnostics, SgrpoOptions, UntypedAdvantageConfig } from "./types.js";

/** What {@link runAdvantagesCli} wants printed. */
export interface AdvantagesCliResult {
  readonly stdout: string;
  readonly stderr: string;
  /** 0 on success, 2 on any error. */
  readonly exitCode: number;
}

/** Usage text of `reward-mesh advantages` (printed by `--help`). */
export const ADVANTAGES_USAGE = `usage: reward-mesh advantages --estimator <name> [options] < input.json
       reward-mesh advantages serve [--port N] [--http-port N]   the same engine as the
         rewardmesh.v1.Trainer/ComputeAdvantages RPC (gRPC, HTTP/JSON); see 'advantages serve --help'

Reads {"groups":[{"rewards":[[...],...]}],"weights":[...]} on stdin and prints
{"groups":[{"advantages":[...],"diagnostics":{...}}]}.

estimators: ${supportedEstimatorNames().join(", ")}

  --estimator <name>              required unless the JSON has "estimator"
  --weights a,b,...               component weights (default all 1)
  --components a,b,...            component names (for messages and diagnostics)
  --diagnostics                   add per-group diagnostics
  estimator options (override the JSON "options"):
  --epsilon <x>                   grpo, grpo_covariance_coefficient, gdpo, gdpo_covariance_coefficient, mo_grpo
  --std-mode sample|population    grpo, gdpo, gdpo_covariance_coefficient, mo_grpo
  --scale group|batch|none        grpo
  --singleton zero|verl           grpo
  --epsilon-placement inside|outside    grpo_covariance_coefficient, gdpo_covariance_coefficient
  --coefficient-sum-floor <x>     grpo_covariance_coefficient, gdpo_covariance_coefficient
  --coefficient-sum-fallback-below <x>  grpo_covariance_coefficient, gdpo_covariance_coefficient
                                  (default 0.01; 0 = the paper's form, no degenerate-group guard)
  --norm-by-std true|false        grpo_covariance_coefficient
  --batch-norm sequence|token|none      gdpo
  --batch-epsilon <x>             gdpo
  steps:
  --p <x>                         S-GRPO on top, label-flip probability in [0, 0.5)
  --sgrpo-variant code|dr_grpo    (default code)
  --sgrpo-component <name|index>  binarise this component instead of the weighted total
  --sgrpo-threshold <x>           success iff value > x (default 0)
  --dynamic-sampling              DAPO: drop groups whose weighted total is constant
  --dynamic-sampling-component <name|index>   … or whose named component is constant
  -h, --help                      print this help and exit

example:
  echo '{"groups":[{"rewards":[[1,1],[0,1],[1,0],[0,0]]}],"weights":[1,0.5]}' | reward-mesh advantages --estimator corr_grpo
`;

type FlagKind = "string" | "number" | "boolean-value" | "switch" | "list" | "names" | "ref";

interface FlagSpec {
  readonly kind: FlagKind;
  /** Where the value goes: `options.<key>`, `sgrpo.<key>`, or a top-level key. */
  readonly target: string;
}

/** Every flag, by its name with `--` (the usage above lists each: a test checks it). */
export const ADVANTAGES_FLAGS: Readonly<Record<string, FlagSpec>> = {
  "--estimator": { kind: "string", target: "estimator" },
  "--weights": { kind: "list", target: "weights" },
  "--components": { kind: "names", target: "components" },
  "--diagnostics": { kind: "switch", target: "diagnostics" },
  "--epsilon": { kind: "number", target: "options.epsilon" },
  "--std-mode": { kind: "string", target: "options.stdMode" },
  "--scale": { kind: "string", target: "options.scale" },
  "--singleton": { kind: "string", target: "options.singleton" },
  "--epsilon-placement": { kind: "string", target: "options.epsilonPlacement" },
  "--coefficient-sum-floor": { kind: "number", target: "options.coefficientSumFloor" },
  "--coefficient-sum-fallback-below": { kind: "number", target: "options.coefficientSumFallbackBelow" },
  "--norm-by-std": { kind: "boolean-value", target: "options.normByStd" },
  "--batch-norm": { kind: "string", target: "options.batchNorm" },
  "--batch-epsilon": { kind: "number", target: "options.batchEpsilon" },
  "--p": { kind: "number", target: "sgrpo.p" },
  "--sgrpo-variant": { kind: "string", target: "sgrpo.variant" },
  "--sgrpo-component": { kind: "ref", target: "sgrpo.component" },
  "--sgrpo-threshold": { kind: "number", target: "sgrpo.successThreshold" },
  "--dynamic-sampling": { kind: "switch", target: "dynamicSampling" },
  "--dynamic-sampling-component": { kind: "ref", target: "dynamicSampling.component" },
};

interface ParsedFlags {
  help: boolean;
  top: Record<string, unknown>;
  options: Record<string, unknown>;
  sgrpo: Record<string, unknown>;
  dynamicSampling: Record<string, unknown> | null;
}

function parseNumber(flag: string, raw: string): number {
  const v = raw.trim() === "" ? Number.NaN : Number(raw);
  if (!Number.isFinite(v)) throw new AdvantageCliUsageError(`${flag} expects a finite number, got '${raw}'`);
  return v;
}

function parseRef(raw: string): string | number {
  return /^\d+$/.test(raw) ? Number(raw) : raw;
}

function parseArgv(argv: readonly string[]): ParsedFlags {
  const parsed: ParsedFlags = { help: false, top: {}, options: {}, sgrpo: {}, dynamicSampling: null };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") {
      parsed.help = true;
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    const spec = Object.hasOwn(ADVANTAGES_FLAGS, name) ? ADVANTAGES_FLAGS[name] : undefined; // not `__proto__` via the prototype
    if (spec === undefined) {
      throw new AdvantageCliUsageError(
        arg.startsWith("-")
          ? `unknown flag '${name}'${didYouMean(name, [...Object.keys(ADVANTAGES_FLAGS), "--help"]) || " (see --help)"}`
          : `unexpected argument '${arg}' (see --help)`,
      );
    }
    let raw: string | undefined;
    if (spec.kind !== "switch") {
      if (eq > 0 && arg.startsWith("--")) raw = arg.slice(eq + 1);
      else {
        raw = argv[i + 1];
        i++;
      }
      if (raw === undefined) throw new AdvantageCliUsageError(`${name} needs a value`);
    } else if (eq > 0) {
      throw new AdvantageCliUsageError(`${name} takes no value`);
    }
    let value: unknown;
    switch (spec.kind) {
      case "switch":
        value = true;
        break;
      case "number":
        value = parseNumber(name, raw!);
        break;
      case "list":
        value = raw!.split(",").map((s) => parseNumber(name, s));
        break;
      case "boolean-value":
        if (raw !== "true" && raw !== "false")
          throw new AdvantageCliUsageError(`${name} expects true or false, got '${raw}'`);
        value = raw === "true";
        break;
      case "names":
        value = raw!.split(",");
        break;
      case "ref":
        value = parseRef(raw!);
        break;
      default:
        value = raw;
    }
    const [scope, key] = spec.target.includes(".") ? spec.target.split(".") : ["", spec.target];
    if (scope === "options") parsed.options[key!] = value;
    else if (scope === "sgrpo") parsed.sgrpo[key!] = value;
    else if (scope === "dynamicSampling")
      parsed.dynamicSampling = { ...(parsed.dynamicSampling ?? {}), [key!]: value };
    else if (key === "dynamicSampling") parsed.dynamicSampling = parsed.dynamicSampling ?? {};
    else parsed.top[key!] = value;
  }
  return parsed;
}

const INPUT_KEYS = [
  "estimator",
  "options",
  "weights",
  "components",
  "p",
  "sgrpo",
  "dynamicSampling",
  "groups",
];
const GROUP_KEYS = ["rewards", "notApplicable", "lengths"];

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function parseInput(stdinText: string): Record<string, unknown> {
  if (stdinText.trim() === "") {
    throw new AdvantageCliUsageError('no input on stdin: expected {"groups":[{"rewards":[[...]]}]}');
  }
  let input: unknown;
  try {
    input = JSON.parse(stdinText);
  } catch (err) {
    throw new AdvantageCliUsageError(`stdin is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (!isRecord(input))
    throw new AdvantageCliUsageError("stdin JSON must be an object with a 'groups' array");
  for (const key of Object.keys(input)) {
    if (!INPUT_KEYS.includes(key)) {
      throw new AdvantageCliUsageError(`unknown input key '${key}'; accepted: ${INPUT_KEYS.join(", ")}`);
    }
  }
  if (!Array.isArray(input["groups"])) throw new AdvantageCliUsageError("input 'groups' must be an array");
  input["groups"].forEach((group, g) => {
    if (!isRecord(group)) throw new AdvantageCliUsageError(`groups[${g}] must be an object with 'rewards'`);
    for (const key of Object.keys(group)) {
      if (!GROUP_KEYS.includes(key)) {
        throw new AdvantageCliUsageError(
          `unknown key 'groups[${g}].${key}'; accepted: ${GROUP_KEYS.join(", ")}`,
        );
      }
    }
  });
  for (const key of ["options", "sgrpo"]) {
    if (input[key] !== undefined && !isRecord(input[key])) {
      throw new AdvantageCliUsageError(`input '${key}' must be an object`);
    }
  }
  return input;
}

function buildConfig(flags: ParsedFlags, input: Record<string, unknown>): UntypedAdvantageConfig {
  const estimator = flags.top["estimator"] ?? input["estimator"];
  if (estimator === undefined) {
    throw new AdvantageCliUsageError(
      `--estimator is required (or "estimator" in the JSON); supported: ${supportedEstimatorNames().join(", ")}`,
    );
  }
  if (typeof estimator !== "string") throw new AdvantageCliUsageError("input 'estimator' must be a string");
  const options = { ...((input["options"] as Record<string, unknown> | undefined) ?? {}), ...flags.options };
  const jsonSgrpo = (input["sgrpo"] as Record<string, unknown> | undefined) ?? {};
  const sgrpoMerged: Record<string, unknown> = {
    ...jsonSgrpo,
    ...(input["p"] === undefined ? {} : { p: input["p"] }),
    ...flags.sgrpo,
  };
  const hasSgrpo =
    input["sgrpo"] !== undefined || input["p"] !== undefined || Object.keys(flags.sgrpo).length > 0;
  if (hasSgrpo && sgrpoMerged["p"] === undefined) {
    throw new AdvantageCliUsageError('S-GRPO options need --p (or "p" in the JSON)');
  }
  const jsonDs = input["dynamicSampling"];
  let dynamicSampling: UntypedAdvantageConfig["dynamicSampling"];
  if (flags.dynamicSampling !== null) {
    dynamicSampling = { ...(isRecord(jsonDs) ? jsonDs : {}), ...flags.dynamicSampling };
  } else {
    dynamicSampling = jsonDs as UntypedAdvantageConfig["dynamicSampling"];
  }
  return {
    estimator,
    options,
    ...(hasSgrpo ? { sgrpo: sgrpoMerged as unknown as SgrpoOptions } : {}),
    ...(dynamicSampling === undefined ? {} : { dynamicSampling }),
  };
}

function diagnosticsForJson(d: GroupDiagnostics): Omit<GroupDiagnostics, "advantages"> {
  const { advantages: _omit, ...rest } = d;
  return rest;
}

function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, " ").trim();
}

/**
 * Runs `reward-mesh advantages` on `argv` (the arguments after `advantages`) and the whole stdin
 * text. Flags override the JSON's `estimator`, `options`, `weights`, `components`, `p` / `sgrpo`
 * and `dynamicSampling`. Output: `{"estimator":…,"groups":[{"advantages":[…]}]}` plus a newline;
 * each group also carries `"degenerate": true` for a one-rollout group, `"kept"` when dynamic
 * sampling is on, and `"diagnostics"` with `--diagnostics`.
 */
export async function runAdvantagesCli(argv: string[], stdinText: string): Promise<AdvantagesCliResult> {
  try {
    const flags = parseArgv(argv);
    if (flags.help) return { stdout: ADVANTAGES_USAGE, stderr: "", exitCode: 0 };
    const input = parseInput(stdinText);
    const config = compileUntypedAdvantageConfig(buildConfig(flags, input));
    const weights = flags.top["weights"] ?? input["weights"];
    const components = flags.top["components"] ?? input["components"];
    const batch: AdvantageBatchInput = {
      groups: input["groups"] as AdvantageBatchInput["groups"],
      ...(weights === undefined ? {} : { weights: weights as number[] }),
      ...(components === undefined ? {} : { components: components as string[] }),
    };
    const wantDiagnostics = flags.top["diagnostics"] === true;
    const result = computeAdvantages(batch, config, { diagnostics: wantDiagnostics });
    const groups = result.groups.map((g) => ({
      advantages: g.advantages,
      ...(g.degenerate ? { degenerate: true } : {}),
      ...(config.dynamicSampling !== null ? { kept: g.kept } : {}),
      ...(g.diagnostics !== undefined ? { diagnostics: diagnosticsForJson(g.diagnostics) } : {}),
    }));
    return {
      stdout: `${JSON.stringify({ estimator: result.estimator, groups })}\n`,
      stderr: "",
      exitCode: 0,
    };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const known = isAdvantageError(err) || (err instanceof Error && err.name === "OverlongOptionsError");
    const prefix = known ? "" : "internal error: ";
    return { stdout: "", stderr: `reward-mesh advantages: ${prefix}${oneLine(message)}\n`, exitCode: 2 };
  }
}
