/**
 * Agent trajectories as the agentdojo service reads them from `rollout.response`. Two layouts:
 *
 * * **JSON**: `{"calls":[{"function": name, "args": {...}}], "final_answer": "..."}` (`name` /
 *   `arguments` / `parameters` are accepted as aliases, `args` may be a JSON string); any other keys
 *   (claimed tool outputs included) are ignored.
 * * **Text** (Hermes / Qwen chat layout, what a verl agent loop decodes): assistant turns with
 *   `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks (a block may also hold one JSON
 *   object per line, the RLLA layout); `<tool_response>…</tool_response>` blocks and non-assistant
 *   turns are dropped (the agent's claimed outputs are never used). Turns are split on
 *   `<|im_start|>`; text without chat markers is one turn. As in CorrGRPO, one turn whose
 *   `<tool_call>` / `</tool_call>` counts differ, or whose block does not parse, invalidates the
 *   trajectory. The final answer is the last assistant turn (for unmarked text: what follows the last
 *   tool call) without tool-call blocks and without reasoning (`…</think>`).
 * @module
 */
import type { FunctionCall } from "./suite.js";

/** A parsed trajectory, or why it could not be parsed. */
export type ParsedTrajectory =
  | {
      readonly ok: true;
      readonly layout: "json" | "text";
      readonly calls: FunctionCall[];
      readonly finalAnswer: string;
    }
  | { readonly ok: false; readonly reason: string };

const fail = (reason: string): ParsedTrajectory => ({ ok: false, reason });

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * Deepest nesting of a call's arguments (no banking tool takes more than a flat object): deeper ones
 * would overflow the stack of the runtime's recursive printing, so they make the trajectory invalid.
 */
export const MAX_ARGUMENT_DEPTH = 64;

/** True when `v` nests arrays / objects deeper than `max` levels (iterative: any depth is safe). */
export function nestsDeeperThan(v: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[v, 0]];
  while (stack.length > 0) {
    const [x, d] = stack.pop()!;
    if (typeof x !== "object" || x === null) continue;
    if (d + 1 > max) return true;
    for (const y of Object.values(x)) stack.push([y, d + 1]);
  }
  return false;
}

/** Arguments as given: an object, a JSON string of one, or (left for the runtime to reject) anything else. */
function argsOf(c: Record<string, unknown>): unknown {
  const raw = c["args"] ?? c["arguments"] ?? c["parameters"] ?? {};
  if (typeof raw !== "string") return raw;
  if (raw.trim() === "") return {};
  const p = parseJson(raw);
  return p.ok ? p.value : raw;
}

/** One call object (`{"function"|"name", "args"|"arguments"|"parameters"}`), or an error. */
function callOf(c: unknown, where: string): FunctionCall | string {
  if (!isObject(c)) return `${where} is not an object`;
  const fn = c["function"] ?? c["name"];
  if (typeof fn !== "string" || fn === "") return `${where} has no function name`;
  const args = argsOf(c);
  if (nestsDeeperThan(args, MAX_ARGUMENT_DEPTH))
    return `${where} has arguments nested deeper than ${MAX_ARGUMENT_DEPTH} levels`;
  return { function: fn, args: args as Record<string, unknown> };
}

function parseJsonLayout(text: string, maxCalls: number): ParsedTrajectory {
  const p = parseJson(text);
  if (!p.ok) return fail(`trajectory is not valid JSON (${p.error})`);
  if (!isObject(p.value)) return fail("a JSON trajectory must be an object");
  if (!("calls" in p.value) && !("final_answer" in p.value))
    return fail('a JSON trajectory needs "calls" and/or "final_answer"');
  const calls = p.value["calls"] ?? [];
  if (!Array.isArray(calls)) return fail('"calls" must be a list');
  if (calls.length > maxCalls) return fail(`more than ${maxCalls} calls`);
  const out: FunctionCall[] = [];
  for (let k = 0; k < calls.length; k++) {
    const c = callOf(calls[k], `calls[${k}]`);
    if (typeof c === "string") return fail(c);
    out.push(c);
  }
  const answer = p.value["final_answer"] ?? "";
  if (typeof answer !== "string") return fail('"final_answer" must be a string');
  return { ok: true, layout: "json", calls: out, finalAnswer: answer };
}

/** Removes every `open … close` block (an unclosed one runs to the end). Linear time. */
function removeBlocks(s: string, open: string, close: string): string {
  let out = "";
  let i = 0;
  while (true) {
    const a = s.indexOf(open, i);
    if (a === -1) return out + s.slice(i);
    out += s.slice(i, a);
    const b = s.indexOf(close, a + open.length);
    if (b === -1) return out;
    i = b + close.length;
  }
}

function count(s: string, sub: string): number {
  let n = 0;
  for (let i = s.indexOf(sub); i !== -1; i = s.indexOf(sub, i + sub.length)) n++;
  return n;
}

/** The visible answer of a turn: no tool-call blocks, no reasoning. */
function answerOf(turn: string): string {
  let t = removeBlocks(turn, "<tool_call>", "</tool_call>");
  const endThink = t.lastIndexOf("</think>");
  if (endThink !== -1) t = t.slice(endThink + 8);
  else if (t.includes("<think>")) t = t.slice(0, t.indexOf("<think>"));
  return t.trim();
}

/** The calls of one assistant turn, or an error. */
function callsOfTurn(turn: string, turnNo: number): FunctionCall[] | string {
  const opens = count(turn, "<tool_call>");
  const closes = count(turn, "</tool_call>");
  if (opens !== closes) return `turn ${turnNo}: ${opens} <tool_call> but ${closes} </tool_call>`;
  const calls: FunctionCall[] = [];
  let i = 0;
  for (let b = 1; b <= opens; b++) {
    const a = turn.indexOf("<tool_call>", i);
    const e = turn.indexOf("</tool_call>", a + 11);
    if (e === -1 || turn.lastIndexOf("</tool_call>", a) >= i)
      return `turn ${turnNo}: unbalanced <tool_call> tags`;
    const body = turn.slice(a + 11, e).trim();
    i = e + 12;
    const where = `turn ${turnNo}, tool call ${b}`;
    const whole = parseJson(body);
    if (whole.ok) {
      const c = callOf(whole.value, where);
      if (typeof c === "string") return c;
      calls.push(c);
      continue;
    }
    // RLLA layout: one JSON object per line.
    const lines = body.split("\n").filter((l) => l.trim() !== "");
    if (lines.length < 2) return `${where} is not JSON (${whole.error})`;
    for (const line of lines) {
      const p = parseJson(line);
      if (!p.ok) return `${where} is not JSON (${p.error})`;
      const c = callOf(p.value, where);
      if (typeof c === "string") return c;
      calls.push(c);
    }
  }
  return calls;
}

function parseTextLayout(text: string, maxCalls: number): ParsedTrajectory {
  const clean = removeBlocks(text, "<tool_response>", "</tool_response>");
  let turns: string[];
  let lastAnswer: string;
  if (clean.includes("<|im_start|>")) {
    const segments = clean.split("<|im_start|>");
    turns = [];
    // The response starts inside the first assistant turn (the header is part of the prompt).
    const first = segments[0]!.split("<|im_end|>")[0]!;
    if (first.trim() !== "") turns.push(first);
    for (const seg of segments.slice(1)) {
      const nl = seg.indexOf("\n");
      const role = (nl === -1 ? seg : seg.slice(0, nl)).trim();
      if (role !== "assistant") continue;
      turns.push((nl === -1 ? "" : seg.slice(nl + 1)).split("<|im_end|>")[0]!);
    }
    lastAnswer = turns.length > 0 ? answerOf(turns[turns.length - 1]!) : "";
  } else {
    turns = [clean];
    const lastCall = clean.lastIndexOf("</tool_call>");
    lastAnswer = answerOf(lastCall === -1 ? clean : clean.slice(lastCall + 12));
  }
  const calls: FunctionCall[] = [];
  for (let k = 0; k < turns.length; k++) {
    const c = callsOfTurn(turns[k]!, k + 1);
    if (typeof c === "string") return fail(c);
    calls.push(...c);
    if (calls.length > maxCalls) return fail(`more than ${maxCalls} calls`);
  }
  return { ok: true, layout: "text", calls, finalAnswer: lastAnswer };
}

/** Parses a response: JSON when it starts with `{`, else the `<tool_call>` text layout. */
export function parseTrajectory(response: string, maxCalls: number): ParsedTrajectory {
  const trimmed = response.trim();
  if (trimmed.startsWith("{")) return parseJsonLayout(trimmed, maxCalls);
  return parseTextLayout(response, maxCalls);
}

/** The JSON layout of a trajectory (what `AgentEnvironment.Close` returns). */
export function trajectoryJson(calls: readonly FunctionCall[], finalAnswer: string): string {
  return JSON.stringify({
    calls: calls.map((c) => ({ function: c.function, args: c.args })),
    final_answer: finalAnswer,
  });
}
