/**
 * ToolRL / RLLA-4K scoring as CorrGRPO's `verl/utils/reward_score/rlla.py` computes it
 * (`specs/rewards.md` §1.4, §6.1):
 *
 * * the response is cut out of the chat template (after the last `<|im_start|>assistant`, before
 *   `<|im_end|>`) and stripped;
 * * `format` ∈ {0, 1}: the `<think>…</think>` then `<tool_call>` and/or `<response>` layout the gold
 *   asks for, each block tag exactly once (checked without regular expressions: linear time);
 * * `function_name` ∈ [−0.5, 0.5], `parameter_name` ∈ [−1, 1], `parameter_value` ∈ [−1.5, 1.5]: the
 *   multiset-Jaccard of names and the greedy per-gold-call matching, each mapped linearly
 *   (`(hi − lo)·s/M + lo`, maximum when M = 0); exact equality of the parsed call lists gives all
 *   maxima; a missing tag or a line that is not JSON (or a call of the wrong shape) gives all minima.
 * @module
 */
import {
  isDict,
  type PyDict,
  type PyValue,
  pyEquals,
  pyJsonLoads,
  pyRepr,
  pyType,
  tryPyJsonLoads,
} from "./py-json.js";

/** Range of each correctness component (CorrGRPO's `*_REWARD_{MIN,MAX}_POSSIBLE`). */
export const RllaRanges = {
  functionName: { min: -0.5, max: 0.5 },
  parameterName: { min: -1, max: 1 },
  parameterValue: { min: -1.5, max: 1.5 },
} as const;

/** How blocks may be separated: CorrGRPO's `\s*` (default) or ToolRL's exact `\n`. */
export type RllaFormatStyle = "corrgrpo" | "toolrl";

/** The RLLA format styles. */
export const RLLA_FORMAT_STYLES: readonly RllaFormatStyle[] = ["corrgrpo", "toolrl"];

/** One gold call. */
export interface GoldCall {
  readonly name: string;
  readonly parameters: PyDict;
}

const QWEN_ASSISTANT = "<|im_start|>assistant";
const QWEN_END = "<|im_end|>";
const LLAMA_ASSISTANT = "<|start_header_id|>assistant<|end_header_id|>";
const LLAMA_END = "<|eot_id|>";

/** What Python's `str.isspace` (and so `\s` and `strip()`) treats as whitespace. */
const PY_SPACE = new Set(
  [0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680]
    .concat(Array.from({ length: 11 }, (_, k) => 0x2000 + k))
    .concat([0x2028, 0x2029, 0x202f, 0x205f, 0x3000])
    .map((c) => String.fromCharCode(c)),
);

function isSpace(ch: string): boolean {
  return PY_SPACE.has(ch);
}

/** Python's `str.strip()`. */
export function pyStrip(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isSpace(s[a]!)) a++;
  while (b > a && isSpace(s[b - 1]!)) b--;
  return s.slice(a, b);
}

function lastSegment(s: string, start: string, end: string): string {
  const i = s.lastIndexOf(start);
  const after = i === -1 ? s : s.slice(i + start.length);
  const j = after.indexOf(end);
  return j === -1 ? after : after.slice(0, j);
}

/**
 * The assistant's text: what follows the last assistant header and precedes the end-of-turn token
 * (Qwen `<|im_start|>assistant … <|im_end|>`, or Llama 3 headers when present), stripped.
 */
export function extractAssistantText(response: string): string {
  if (response.includes(LLAMA_ASSISTANT)) return pyStrip(lastSegment(response, LLAMA_ASSISTANT, LLAMA_END));
  return pyStrip(lastSegment(response, QWEN_ASSISTANT, QWEN_END));
}

function count(s: string, sub: string): number {
  let n = 0;
  let i = s.indexOf(sub);
  while (i !== -1) {
    n++;
    i = s.indexOf(sub, i + sub.length);
  }
  return n;
}

function allSpace(s: string): boolean {
  for (const ch of s) if (!isSpace(ch)) return false;
  return true;
}

/** Options of {@link checkRllaFormat}. */
export interface RllaFormatOptions {
  readonly style: RllaFormatStyle;
  /** Accept a response whose opening `<think>` is missing (CorrGRPO does for "think" models). */
  readonly allowMissingOpeningThink: boolean;
}

/** Which blocks the gold asks for. */
export interface RllaShape {
  readonly toolCall: boolean;
  readonly response: boolean;
}

/** Result of a format check: `reason` says what is wrong (or what matched). */
export interface CheckResult {
  readonly ok: boolean;
  readonly reason: string;
}

/**
 * The format reward of `customize_format_reward_func`, as a linear scan equivalent to its regexes:
 * `^<think>.*?</think>SEP<tool_call>\n.*?\n</tool_call>SEP<response>.*?</response>$` (blocks as the gold
 * asks), SEP = `\s*` (corrgrpo) or `\n` (toolrl), `<tool_call>`/`</tool_call>`/`<response>`/`</response>`
 * each exactly once when required. `s` must already be stripped ({@link extractAssistantText}).
 */
export function checkRllaFormat(s: string, shape: RllaShape, o: RllaFormatOptions): CheckResult {
  const sepOk = (sep: string) => (o.style === "toolrl" ? sep === "\n" : allSpace(sep));
  const sepName = o.style === "toolrl" ? "a single newline" : "only whitespace";
  // `^<think>.*?</think>SEP` before a block that starts at `blockStart`.
  const thinkBefore = (blockStart: number, block: string): CheckResult => {
    const prefix = s.slice(0, blockStart);
    let head: string;
    if (o.style === "toolrl") {
      if (!prefix.endsWith("</think>\n"))
        return { ok: false, reason: `${block} must follow </think> and a single newline` };
      head = prefix.slice(0, -1);
    } else {
      let end = prefix.length;
      while (end > 0 && isSpace(prefix[end - 1]!)) end--;
      head = prefix.slice(0, end);
      if (!head.endsWith("</think>"))
        return { ok: false, reason: `${block} must follow </think> (whitespace between allowed)` };
    }
    if (!o.allowMissingOpeningThink && !(head.startsWith("<think>") && head.length >= 15))
      return { ok: false, reason: "the response must start with <think>" };
    return { ok: true, reason: "" };
  };
  const toolBlock = (): CheckResult & { end: number } => {
    const q = s.indexOf("<tool_call>");
    const e = s.indexOf("</tool_call>");
    if (s[q + 11] !== "\n") return { ok: false, reason: "<tool_call> must be followed by a newline", end: 0 };
    if (e < q || s[e - 1] !== "\n" || e - 1 < q + 12)
      return { ok: false, reason: "</tool_call> must follow the calls on its own line", end: 0 };
    return { ok: true, reason: "", end: e + 12 };
  };
  const responseBlockAtEnd = (): CheckResult & { start: number } => {
    const r = s.indexOf("<response>");
    const re = s.indexOf("</response>");
    if (re !== s.length - 11 || re < r + 10)
      return { ok: false, reason: "the response must end with <response>…</response>", start: r };
    return { ok: true, reason: "", start: r };
  };
  const once = (...tags: string[]): CheckResult => {
    for (const t of tags) {
      const c = count(s, t);
      if (c !== 1) return { ok: false, reason: `${t} must appear exactly once (found ${c})` };
    }
    return { ok: true, reason: "" };
  };

  if (shape.toolCall) {
    const tags = shape.response
      ? ["<tool_call>", "</tool_call>", "<response>", "</response>"]
      : ["<tool_call>", "</tool_call>"];
    const o1 = once(...tags);
    if (!o1.ok) return o1;
    const t = thinkBefore(s.indexOf("<tool_call>"), "<tool_call>");
    if (!t.ok) return t;
    const tb = toolBlock();
    if (!tb.ok) return tb;
    if (!shape.response) {
      return tb.end === s.length
        ? { ok: true, reason: "think + tool_call" }
        : { ok: false, reason: "nothing may follow </tool_call>" };
    }
    const rb = responseBlockAtEnd();
    if (!rb.ok) return rb;
    if (rb.start < tb.end || !sepOk(s.slice(tb.end, rb.start)))
      return { ok: false, reason: `<response> must follow </tool_call> with ${sepName} between` };
    return { ok: true, reason: "think + tool_call + response" };
  }
  if (shape.response) {
    const o1 = once("<response>", "</response>");
    if (!o1.ok) return o1;
    const rb = responseBlockAtEnd();
    if (!rb.ok) return rb;
    const t = thinkBefore(rb.start, "<response>");
    if (!t.ok) return t;
    return { ok: true, reason: "think + response" };
  }
  // Gold with neither block: `^<think>.*?</think>$` (no tag counts, as upstream).
  if (!s.endsWith("</think>")) return { ok: false, reason: "the response must end with </think>" };
  if (!o.allowMissingOpeningThink && !(s.startsWith("<think>") && s.length >= 15))
    return { ok: false, reason: "the response must start with <think>" };
  return { ok: true, reason: "think only" };
}

/** Predicted calls: the JSON lines of the first `<tool_call>` block, or why there are none. */
export type ExtractedCalls = { readonly ok: true; readonly calls: PyValue[] } | (CheckResult & { ok: false });

/**
 * `response.split("<tool_call>")[1].split("</tool_call>")[0].strip().split("\n")`, each line
 * `json.loads`-ed; fails when either tag is missing or a line is not JSON. At most `maxCalls` lines.
 */
export function extractRllaCalls(s: string, maxCalls: number): ExtractedCalls {
  if (!s.includes("<tool_call>") || !s.includes("</tool_call>"))
    return { ok: false, reason: "missing <tool_call> or </tool_call>" };
  const i = s.indexOf("<tool_call>") + 11;
  const next = s.indexOf("<tool_call>", i);
  let seg = next === -1 ? s.slice(i) : s.slice(i, next);
  const k = seg.indexOf("</tool_call>");
  if (k !== -1) seg = seg.slice(0, k);
  const lines = pyStrip(seg).split("\n");
  if (lines.length > maxCalls)
    return { ok: false, reason: `more than ${maxCalls} lines in the <tool_call> block` };
  const calls: PyValue[] = [];
  for (let n = 0; n < lines.length; n++) {
    const r = tryPyJsonLoads(lines[n]!);
    if ("error" in r) return { ok: false, reason: `tool_call line ${n + 1} is not JSON (${r.error})` };
    calls.push(r.value);
  }
  return { ok: true, calls };
}

/** CorrGRPO's `match_score`: multiset Jaccard, 1 when the lists are equal, 0 when one is empty. */
export function matchScore(a: readonly PyValue[], b: readonly PyValue[]): number {
  if (a.length === b.length && a.every((x, k) => pyEquals(x, b[k]!))) return 1;
  if (a.length === 0 || b.length === 0) return 0;
  const ca = countStrings(a);
  const cb = countStrings(b);
  let inter = 0;
  for (const [k, v] of ca) inter += Math.min(v, cb.get(k) ?? 0);
  const maxPossible = a.length + b.length - inter;
  return maxPossible > 0 ? inter / maxPossible : 0;
}

/** Counts of string items; non-strings never equal a (string) gold name or key. */
function countStrings(xs: readonly PyValue[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const x of xs) if (typeof x === "string") m.set(x, (m.get(x) ?? 0) + 1);
  return m;
}

/** Raw and mapped correctness scores of one prediction. */
export interface RllaCorrectness {
  readonly functionName: number;
  readonly parameterName: number;
  readonly parameterValue: number;
  /** All three at their maxima (RLLA "all-exact"). */
  readonly exact: boolean;
  /** ToolRL's single mapping of the summed raw score to [−3, 3] (CorrGRPO `old_total_reward`). */
  readonly toolRlTotal: number;
  /** The prediction could not be scored (wrong shape): all minima. */
  readonly malformed: boolean;
  readonly details: string;
}

/** `_scale_tool_call_score`. */
export function scaleScore(score: number, localMax: number, hi: number, lo: number): number {
  if (localMax === 0) return hi;
  return ((hi - lo) * score) / localMax + lo;
}

/** All minima, with the reason. */
export function minimumCorrectness(reason: string): RllaCorrectness {
  return {
    functionName: RllaRanges.functionName.min,
    parameterName: RllaRanges.parameterName.min,
    parameterValue: RllaRanges.parameterValue.min,
    exact: false,
    toolRlTotal: -3,
    malformed: true,
    details: reason,
  };
}

class MalformedCall extends Error {
  override readonly name = "MalformedCall";
}

function field(call: PyValue, key: string, index: number): PyValue {
  if (!isDict(call)) throw new MalformedCall(`call ${index + 1} is a ${pyType(call)}, not an object`);
  if (!call.has(key)) throw new MalformedCall(`call ${index + 1} has no "${key}"`);
  return call.get(key)!;
}

/**
 * `compute_tool_call_reward(gold, predicted)`: exact equality → all maxima; otherwise name Jaccard,
 * then for each gold call (in order) the unused predicted call with the same name maximising
 * `J(gold keys, predicted keys) + #{k : predicted[k] == gold[k]}` (first wins ties; a total of 0 is
 * never picked). A predicted call that is not an object with "name" (and, when its name matches,
 * "parameters" as an object) gives all minima, as the Python raises there.
 */
export function scoreRllaCalls(gold: readonly GoldCall[], predicted: readonly PyValue[]): RllaCorrectness {
  const goldPy: PyValue[] = gold.map(
    (g) =>
      new Map<string, PyValue>([
        ["name", g.name],
        ["parameters", g.parameters],
      ]),
  );
  if (pyEquals(goldPy, predicted as PyValue[])) {
    return {
      functionName: RllaRanges.functionName.max,
      parameterName: RllaRanges.parameterName.max,
      parameterValue: RllaRanges.parameterValue.max,
      exact: true,
      toolRlTotal: 3,
      malformed: false,
      details: "exact match of all calls",
    };
  }
  try {
    const predNames = predicted.map((p, k) => field(p, "name", k));
    const goldNames = gold.map((g) => g.name);
    if (!(goldNames.length === predNames.length && goldNames.every((x, k) => pyEquals(x, predNames[k]!)))) {
      // Counter() on an unhashable name raises in Python.
      const bad = predNames.findIndex((x) => Array.isArray(x) || x instanceof Map);
      if (bad !== -1) throw new MalformedCall(`call ${bad + 1} has a ${pyType(predNames[bad]!)} as its name`);
    }
    const nameScore = matchScore(goldNames, predNames);
    let score = nameScore;
    let paramScore = 0;
    let valuesScore = 0;
    let localMax = 1;
    let paramMax = 0;
    let valuesMax = 0;
    const used = new Set<number>();
    for (const g of gold) {
      localMax += 1 + g.parameters.size;
      paramMax += 1;
      valuesMax += g.parameters.size;
      let best = -1;
      let bestTotal = 0;
      let bestParam = 0;
      let bestValues = 0;
      for (let k = 0; k < predicted.length; k++) {
        if (used.has(k) || !pyEquals(predNames[k]!, g.name)) continue;
        const params = field(predicted[k]!, "parameters", k);
        if (!isDict(params))
          throw new MalformedCall(`call ${k + 1} has "parameters" of type ${pyType(params)}, not an object`);
        const ps = matchScore([...g.parameters.keys()], [...params.keys()]);
        let correct = 0;
        for (const [key, v] of g.parameters) if (params.has(key) && pyEquals(params.get(key)!, v)) correct++;
        const total = ps + correct;
        if (total > bestTotal) {
          best = k;
          bestTotal = total;
          bestParam = ps;
          bestValues = correct;
        }
      }
      if (best !== -1) {
        used.add(best);
        score += bestTotal;
        paramScore += bestParam;
        valuesScore += bestValues;
      }
    }
    const R = RllaRanges;
    const functionName = scaleScore(nameScore, 1, R.functionName.max, R.functionName.min);
    const parameterName = scaleScore(paramScore, paramMax, R.parameterName.max, R.parameterName.min);
    const parameterValue = scaleScore(valuesScore, valuesMax, R.parameterValue.max, R.parameterValue.min);
    const toolRlTotal = scaleScore(score, localMax, 3, -3);
    const exact = nameScore === 1 && paramScore === paramMax && valuesScore === valuesMax;
    return {
      functionName,
      parameterName,
      parameterValue,
      exact,
      toolRlTotal,
      malformed: false,
      details:
        `names J=${round(nameScore)}; parameter names ${round(paramScore)}/${paramMax}; ` +
        `values ${valuesScore}/${valuesMax}; ToolRL R_correct=${round(toolRlTotal)}`,
    };
  } catch (err) {
    if (err instanceof MalformedCall) return minimumCorrectness(err.message);
    throw err;
  }
}

function round(x: number): string {
  return String(Math.round(x * 1e6) / 1e6);
}

/** Parses one gold call's arguments (`""` = `{}`); throws a message for a bad one. */
export function parseGoldArguments(argumentsJson: string): PyDict {
  if (pyStrip(argumentsJson) === "") return new Map();
  const v = pyJsonLoads(argumentsJson);
  if (!isDict(v)) throw new Error(`must be a JSON object, got ${pyType(v)} ${pyRepr(v, 60)}`);
  return v;
}
