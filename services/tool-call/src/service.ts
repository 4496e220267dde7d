/**
 * The tool-call service: components `format`, `function_name`, `parameter_name`, `parameter_value`,
 * `exact_match` for `ToolCallTask` rollouts (`specs/rewards.md` §1.4, §6).
 *
 * * `format = "rlla"` (or empty): ToolRL / RLLA-4K as CorrGRPO scores it ({@link checkRllaFormat},
 *   {@link scoreRllaCalls}); the gold calls come from `ground_truth[{name, arguments_json}]`, the gold
 *   `<response>` block is required iff `expected_response` is non-empty.
 * * `format = "json"`: the response is a JSON list of calls checked BFCL-style against
 *   `possible_answers_json` (or, when empty, against the ground truth as the only allowed values);
 *   `exact_match` = 1 iff valid.
 *
 * A malformed or oversized response is never an error: minimum scores (status ERROR) with the reason.
 * @module
 */
import { ComponentStatus, type Rollout, type ToolCallTask } from "@reward-mesh/proto";
import { type ComponentValue, defineRewardService, type RewardServiceDefinition } from "@reward-mesh/sdk";
import {
  type FunctionSchema,
  decodeJsonCalls,
  type PossibleAnswer,
  parsePossibleAnswers,
  parseToolSchemas,
  possibleAnswersFromGroundTruth,
  scoreBfcl,
} from "./bfcl.js";
import { DEFAULT_TOOL_CALL_OPTIONS, type ToolCallOptions } from "./config.js";
import { invalidMetadata, invalidTask } from "./errors.js";
import {
  checkRllaFormat,
  extractAssistantText,
  extractRllaCalls,
  type GoldCall,
  minimumCorrectness,
  parseGoldArguments,
  RllaRanges,
  scoreRllaCalls,
} from "./rlla.js";

/** Version of the scoring logic. */
export const TOOL_CALL_SERVICE_VERSION = "1.1.0";

/** Component names (part of the service contract). */
export const ToolCallComponents = {
  format: "format",
  functionName: "function_name",
  parameterName: "parameter_name",
  parameterValue: "parameter_value",
  exactMatch: "exact_match",
} as const;

/** Metadata keys a rollout may use to override the service's options. */
export const ToolCallMetadata = {
  allowMissingOpeningThink: "tool_call.allow_missing_opening_think",
  /** `"true"`/`"false"`: BFCL's `underscore_to_dot` for this rollout's model (json tasks). */
  bfclUnderscoreToDot: "tool_call.bfcl_underscore_to_dot",
} as const;

/** The task formats the service scores. */
export const TOOL_CALL_FORMATS = ["rlla", "json"] as const;

/** A parsed, validated tool-call task. */
export interface ParsedToolCallTask {
  readonly format: (typeof TOOL_CALL_FORMATS)[number];
  readonly gold: readonly GoldCall[];
  readonly expectsResponse: boolean;
  /** For `json`: the entries to match (empty = irrelevance: no call expected). */
  readonly answers: readonly PossibleAnswer[];
  readonly schemas: ReadonlyMap<string, FunctionSchema>;
}

function taskOf(rollout: Rollout): ToolCallTask {
  // validateRollout (taskKinds: ["toolCall"]) guarantees the kind.
  return rollout.task!.kind.value as ToolCallTask;
}

/** Parses and validates the task; throws `InvalidArgumentError` naming the field. */
export function parseToolCallTask(task: ToolCallTask): ParsedToolCallTask {
  const format = task.format === "" ? "rlla" : task.format;
  if (format !== "rlla" && format !== "json")
    throw invalidTask("format", `must be "rlla" or "json", got ${JSON.stringify(task.format)}`);
  const gold = task.groundTruth.map((g, k): GoldCall => {
    if (g.name === "") throw invalidTask(`ground_truth[${k}].name`, "is required");
    try {
      return { name: g.name, parameters: parseGoldArguments(g.argumentsJson) };
    } catch (err) {
      throw invalidTask(`ground_truth[${k}].arguments_json`, errorText(err), err);
    }
  });
  let answers: PossibleAnswer[] = [];
  let schemas: ReadonlyMap<string, FunctionSchema> = new Map();
  if (format === "json") {
    try {
      answers =
        task.possibleAnswersJson.trim() === ""
          ? possibleAnswersFromGroundTruth(gold)
          : parsePossibleAnswers(task.possibleAnswersJson);
    } catch (err) {
      throw invalidTask("possible_answers_json", errorText(err), err);
    }
    try {
      schemas = parseToolSchemas(task.toolsJson);
    } catch (err) {
      throw invalidTask("tools_json", errorText(err), err);
    }
  }
  return { format, gold, expectsResponse: task.expectedResponse !== "", answers, schemas };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function metadataBool(rollout: Rollout, key: string, def: boolean): boolean {
  const v = rollout.metadata[key];
  if (v === undefined || v.trim() === "") return def;
  const l = v.trim().toLowerCase();
  if (l === "true" || l === "1") return true;
  if (l === "false" || l === "0") return false;
  throw invalidMetadata(key, `must be true or false, got ${JSON.stringify(v)}`);
}

const C = ToolCallComponents;
const R = RllaRanges;

function correctness(
  values: { functionName: number; parameterName: number; parameterValue: number; exact: boolean },
  details: string,
  status: ComponentStatus = ComponentStatus.OK,
): ComponentValue[] {
  return [
    { name: C.functionName, value: values.functionName, status, details },
    { name: C.parameterName, value: values.parameterName, status, details },
    { name: C.parameterValue, value: values.parameterValue, status, details },
    { name: C.exactMatch, value: values.exact ? 1 : 0, status, details },
  ];
}

function notApplicable(details: string, exact?: ComponentValue): ComponentValue[] {
  const status = ComponentStatus.NOT_APPLICABLE;
  return [
    { name: C.functionName, value: 0, status, details },
    { name: C.parameterName, value: 0, status, details },
    { name: C.parameterValue, value: 0, status, details },
    exact ?? { name: C.exactMatch, value: 0, status, details },
  ];
}

/** Every component at its minimum, status ERROR, with the reason. */
export function minimumScores(reason: string): ComponentValue[] {
  const m = minimumCorrectness(reason);
  return [
    { name: C.format, value: 0, status: ComponentStatus.ERROR, details: reason },
    ...correctness(m, reason, ComponentStatus.ERROR),
  ];
}

function scoreRlla(text: string, task: ParsedToolCallTask, o: ToolCallOptions, allowNoThink: boolean) {
  const fmt = checkRllaFormat(
    text,
    { toolCall: task.gold.length > 0, response: task.expectsResponse },
    { style: o.formatStyle, allowMissingOpeningThink: allowNoThink },
  );
  const format: ComponentValue = { name: C.format, value: fmt.ok ? 1 : 0, details: fmt.reason };
  if (task.gold.length === 0)
    return [format, ...notApplicable("the gold has no tool call: no correctness signal (CorrGRPO scores 0)")];
  const extracted = extractRllaCalls(text, o.maxCalls);
  if (!extracted.ok)
    return [
      format,
      ...correctness(minimumCorrectness(extracted.reason), extracted.reason, ComponentStatus.ERROR),
    ];
  const c = scoreRllaCalls(task.gold, extracted.calls);
  return [format, ...correctness(c, c.details, c.malformed ? ComponentStatus.ERROR : ComponentStatus.OK)];
}

/** The answer after any reasoning block (reasoning models put `<think>…</think>` before the JSON). */
function afterReasoning(text: string): string {
  const i = text.lastIndexOf("</think>");
  return i === -1 ? text : text.slice(i + 8);
}

function scoreJson(
  text: string,
  task: ParsedToolCallTask,
  o: ToolCallOptions,
  underscoreToDot: boolean,
): ComponentValue[] {
  const decoded = decodeJsonCalls(afterReasoning(text), o.maxCalls);
  if (task.answers.length === 0) {
    // BFCL irrelevance: correct iff no call can be decoded (decode error or an empty list).
    const none = !decoded.ok || decoded.calls.length === 0;
    const why = decoded.ok
      ? `${decoded.calls.length} call(s) decoded`
      : `no call decoded (${decoded.reason})`;
    // exact_match is meaningful here (BFCL's irrelevance accuracy); the per-call components are not.
    return [
      { name: C.format, value: 1, details: "no call expected: any answer form is accepted" },
      ...notApplicable("no call expected (irrelevance)", {
        name: C.exactMatch,
        value: none ? 1 : 0,
        details: `no call expected (irrelevance); ${why}`,
      }),
    ];
  }
  if (!decoded.ok) {
    return [
      { name: C.format, value: 0, details: decoded.reason },
      ...correctness(minimumCorrectness(decoded.reason), decoded.reason, ComponentStatus.ERROR),
    ];
  }
  const s = scoreBfcl(task.schemas, decoded.calls, task.answers, { underscoreToDot });
  return [
    { name: C.format, value: 1, details: `${decoded.calls.length} call(s) decoded` },
    ...correctness(s, s.details),
  ];
}

/** Creates the tool-call service. */
export function createToolCallService(
  options: ToolCallOptions = DEFAULT_TOOL_CALL_OPTIONS,
): RewardServiceDefinition {
  return defineRewardService({
    name: "tool-call",
    version: TOOL_CALL_SERVICE_VERSION,
    domains: ["tool_call"],
    taskKinds: ["toolCall"],
    components: [
      {
        name: C.format,
        description: "1 iff the response has the layout the task's format asks for",
        min: 0,
        max: 1,
      },
      {
        name: C.functionName,
        description: "multiset Jaccard of gold vs predicted function names, mapped to [-0.5, 0.5]",
        min: R.functionName.min,
        max: R.functionName.max,
      },
      {
        name: C.parameterName,
        description: "mean parameter-name Jaccard of the matched calls, mapped to [-1, 1]",
        min: R.parameterName.min,
        max: R.parameterName.max,
      },
      {
        name: C.parameterValue,
        description: "share of gold parameters reproduced exactly, mapped to [-1.5, 1.5]",
        min: R.parameterValue.min,
        max: R.parameterValue.max,
      },
      {
        name: C.exactMatch,
        description: "1 iff every call matches exactly (RLLA all-exact / BFCL valid)",
        min: 0,
        max: 1,
      },
    ],
    validate: (rollout) => {
      parseToolCallTask(taskOf(rollout));
      metadataBool(rollout, ToolCallMetadata.allowMissingOpeningThink, options.allowMissingOpeningThink);
      metadataBool(rollout, ToolCallMetadata.bfclUnderscoreToDot, options.bfclUnderscoreToDot);
    },
    score: async (rollout) => {
      const task = parseToolCallTask(taskOf(rollout));
      const allowNoThink = metadataBool(
        rollout,
        ToolCallMetadata.allowMissingOpeningThink,
        options.allowMissingOpeningThink,
      );
      const bytes = Buffer.byteLength(rollout.response, "utf8");
      if (bytes > options.maxResponseBytes)
        return minimumScores(
          `response is ${bytes} bytes, more than the ${options.maxResponseBytes}-byte limit`,
        );
      const text = extractAssistantText(rollout.response);
      return task.format === "rlla"
        ? scoreRlla(text, task, options, allowNoThink)
        : scoreJson(
            text,
            task,
            options,
            metadataBool(rollout, ToolCallMetadata.bfclUnderscoreToDot, options.bfclUnderscoreToDot),
          );
    },
  });
}
