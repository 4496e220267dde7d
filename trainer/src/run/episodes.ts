/**
 * Multi-turn agent episodes with a language-model policy, against a `rewardmesh.v1.AgentEnvironment`
 * (the agentdojo service): Reset → Generate → parse the turn's `<tool_call>{"name", "arguments"}</tool_call>`
 * blocks (the Hermes / Qwen layout the agentdojo reward service reads) → Call each → append the
 * `<tool_response>…</tool_response>` turn → Generate … until a turn calls no tool (its text is the final
 * answer), the turn budget, the token budget, the learner's context, the session's call limit, or a
 * session that is gone (that episode only) → Close. Close's trajectory (`{"calls", "final_answer"}`) is
 * the rollout's response — unless a turn is one the reward service's text parser reads as invalid (a
 * broken `<tool_call>` block): then the episode's transcript is, so the service scores it invalid.
 *
 * An episode is ONE learner sample: its token sequence is every token after the first prompt — the
 * policy's turns and the environment-inserted text between them — with a loss mask that is 1 on the
 * policy's tokens and 0 on the inserted ones (tool outputs and chat markers). The runner speaks only
 * the learner contract, for either kind of policy ({@link LearnerInfo.tokenizer}):
 *
 * - **text policies** (the PyTorch learner): each turn's prompt is the whole conversation rendered as
 *   ChatML text (`<|im_start|>role … <|im_end|>`, the Qwen / Hermes tool layout); the inserted tokens are
 *   what the new prompt's token ids add after the previous prompt and completion. Tokenization must be
 *   prefix-stable there (the previous prompt + completion tokens must start the new prompt's tokens); if
 *   it is not, the episode ends (`stopReason: "retokenized"`) rather than train on tokens that differ
 *   from the ones sampled.
 * - **fragment policies** (the embedded learner): the turn is sampled from the task's fragments (tool
 *   calls, answers) plus a stop fragment, continuing the episode's sequence (`prefixTokenIds`); the
 *   environment's reply to turn t is one inserted fragment `⟨tool responses t⟩` (the tabular policy
 *   cannot read it, but it marks the turn, so the policy can act differently per turn).
 *
 * Episodes run concurrently up to a bound; every session is closed — also when a turn fails or the run
 * is stopped — and a session the trainer never closes (a crash) is reaped by the server's idle timeout.
 * @module
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AgentEnvironment, AgentTaskSchema, Client } from "@reward-mesh/proto";
import {
  type ChatMessage,
  type Completion,
  FRAGMENT_TOKENIZER,
  type GenerateRequest,
  type Learner,
  type LearnerInfo,
  type Sample,
} from "../learner/index.js";
import { MAX_PREFIX_TOKENS } from "../learner/validate.js";
import { mixSeed, type TaskDefinition } from "./tasks.js";

/** The AgentEnvironment calls an episode makes (a `createGrpcClient(AgentEnvironment, …)` client). */
export type AgentEnvironmentSessions = Pick<Client<typeof AgentEnvironment>, "reset" | "call" | "close">;

/** One agent task to play. The list of tasks is an input (task files, built-in sets, `ListTasks`). */
export interface EpisodeTask {
  /** Stable id; the fragment policy's context key is `<id>#episode/<maxTurns>`. */
  readonly id: string;
  /** What `Reset` gets (suite, user task, injection task, attack). */
  readonly agent: MessageInitShape<typeof AgentTaskSchema>;
  /**
   * Fragment policies: the turn's action space — fragments whose concatenation is the assistant's
   * turn text (e.g. `<tool_call>{…}</tool_call>` blocks and answer sentences).
   */
  readonly fragments?: readonly string[];
  /** Fragment policies: most fragments per turn (besides the stop fragment). @default fragments.length */
  readonly fragmentsPerTurn?: number;
}

/** Budgets and bounds of the episode runner (run config `episodes`). */
export interface EpisodeSettings {
  /** Most assistant turns (Generate calls) per episode. */
  readonly maxTurns: number;
  /** Most tokens in an episode's sequence after the first prompt: the policy's and the inserted ones. */
  readonly maxTokens: number;
  /** Episodes in flight at once. */
  readonly concurrency: number;
}

/** Sampling settings of text policies (run config `generation`). */
export interface EpisodeSampling {
  readonly temperature?: number;
  readonly topP?: number;
  /** Most new tokens per turn (the token budget's remainder caps it too). */
  readonly maxNewTokens: number;
  readonly stop?: readonly string[];
}

/** Why an episode ended. */
export type EpisodeStopReason =
  /** A turn called no tool: its text is the final answer. */
  | "answer"
  /** The turn budget ran out while the policy was still calling tools. */
  | "turns"
  /** The token budget ran out. */
  | "tokens"
  /** The session's `max_calls` was reached. */
  | "calls"
  /** A text policy's tokenizer did not reproduce the sampled tokens when the conversation was re-rendered. */
  | "retokenized"
  /** The next prompt might not fit the learner's context (`LearnerInfo.maxContext`). */
  | "context"
  /**
   * A tool call's session was gone (`NOT_FOUND`: expired or evicted) or the call ran past its deadline
   * (`DEADLINE_EXCEEDED`): the episode ends there; the other episodes go on.
   */
  | "environment";

/** One played episode. */
export interface EpisodeResult {
  readonly taskId: string;
  /** Position in the request's episode list. */
  readonly index: number;
  /**
   * Close's trajectory JSON (the calls the environment accepted); `""` when Close could not be
   * delivered (stop reason `environment` with the session gone).
   */
  readonly trajectoryJson: string;
  /**
   * The rollout response the agentdojo service scores: Close's trajectory, unless the episode is
   * {@link invalid} or Close could not be delivered — then the {@link transcript}, which the service
   * reads in its Hermes text layout (an invalid turn makes it score the rollout invalid, as CorrGRPO
   * scores such a transcript; a transcript's calls are replayed on a fresh environment).
   */
  readonly response: string;
  /** Why the policy's transcript is invalid for the agentdojo service (a broken tool-call block); absent when valid. */
  readonly invalid?: string;
  /**
   * The episode after the first prompt in the chat layout: each assistant turn as the policy wrote it
   * (stop strings it ended on included), `<|im_end|>`, the `<tool_response>` user turns between them,
   * up to the end of the last assistant turn's content (the layout the agentdojo service reads).
   */
  readonly transcript: string;
  readonly finalAnswer: string;
  readonly stopReason: EpisodeStopReason;
  readonly turns: number;
  /** Tool calls sent to the environment. */
  readonly calls: number;
  /** The conversation: system, user, then assistant and tool messages. */
  readonly messages: readonly ChatMessage[];
  /** The learner sample's identity and sequence. */
  readonly contextKey: string;
  /** Fragment policies: the episode vocabulary's size (0 for text policies). */
  readonly vocabularySize: number;
  /** Text policies: the first prompt's token ids. */
  readonly promptTokenIds: readonly number[];
  readonly tokenIds: readonly number[];
  /** Behaviour logprobs of the policy's tokens; 0 at inserted tokens (masked). */
  readonly logprobs: readonly number[];
  /** 1 on the policy's tokens, 0 on the environment-inserted ones. */
  readonly lossMask: readonly number[];
  /** How the sequence is made: the policy's turns and the inserted environment replies, in order. */
  readonly spans: readonly EpisodeSpan[];
  /** Oldest policy version that generated a turn. */
  readonly policyVersion: number;
  /** The last turn hit its token cap before ending. */
  readonly truncated: boolean;
}

/** A stretch `[start, end)` of an episode's sequence: a policy turn or an inserted environment reply. */
export interface EpisodeSpan {
  readonly kind: "policy" | "environment";
  readonly start: number;
  readonly end: number;
}

/** Thrown for settings or tasks an episode cannot be run with. */
export class EpisodeConfigError extends Error {
  override readonly name = "EpisodeConfigError";
}

/** Thrown when an episode fails (the environment or the learner); names the task and the turn. */
export class EpisodeError extends Error {
  override readonly name = "EpisodeError";
}

/** The stop fragment of a fragment policy's episode vocabulary (index 0; ends a turn). */
export const EPISODE_STOP_FRAGMENT = "";

/** The fragment that stands for the environment's reply to turn `t` (1-based), inserted by the runner. */
export const toolResponsesFragment = (t: number) => `⟨tool responses ${t}⟩`;

/** Checks the settings; a clear error names the bad one. */
export function checkEpisodeSettings(s: EpisodeSettings): void {
  const int = (k: keyof EpisodeSettings, min: number, max: number) => {
    const v = s[k];
    if (!Number.isSafeInteger(v) || v < min || v > max)
      throw new EpisodeConfigError(
        `episodes.${k} is ${String(v)}; it must be an integer in [${min}, ${max}]`,
      );
  };
  int("maxTurns", 1, 64);
  // A fragment policy's turn continues the whole episode (`prefixTokenIds`, at most MAX_PREFIX_TOKENS).
  int("maxTokens", 1, MAX_PREFIX_TOKENS);
  int("concurrency", 1, 1024);
}

/** The fragment policy's context of an episode of `task` (its vocabulary depends on the turn budget). */
export const episodeContextKey = (task: EpisodeTask, maxTurns: number) => `${task.id}#episode/${maxTurns}`;

/** The fragment policy's episode vocabulary: stop, the task's fragments, one reply marker per turn. */
export function episodeVocabulary(task: EpisodeTask, maxTurns: number): string[] {
  if (!task.fragments || task.fragments.length === 0) {
    throw new EpisodeConfigError(
      `episode task '${task.id}' has no fragments: a fragment policy (the embedded learner) needs the turn's action space; use a text policy such as learner: {kind: torch} for tasks without one`,
    );
  }
  return [
    EPISODE_STOP_FRAGMENT,
    ...task.fragments,
    ...Array.from({ length: maxTurns }, (_, k) => toolResponsesFragment(k + 1)),
  ];
}

/** True for a task that is played as an episode when episodes are on (an AgentDojo task). */
export const isEpisodeTask = (t: TaskDefinition) => t.task.kind?.case === "agent";

/**
 * The episode task of an agent task definition (built-in sets, task files; later the environment's
 * own task list). A fragment task's steps (`{"function", "args"}` fragments) become `<tool_call>`
 * fragments and its rendered final answer an answer fragment; a text task has no fragments (text
 * policies only).
 */
export function episodeTaskOf(t: TaskDefinition): EpisodeTask {
  const kind = t.task.kind;
  if (kind?.case !== "agent" || !kind.value)
    throw new EpisodeConfigError(
      `task '${t.id}' is not an agent task: only agent tasks are played as episodes`,
    );
  const agent = kind.value as MessageInitShape<typeof AgentTaskSchema>;
  if (!t.vocabulary || !t.render) return { id: t.id, agent };
  const fragments: string[] = [];
  t.vocabulary.forEach((f, i) => {
    if (i === t.stopToken) return;
    let step: unknown;
    try {
      step = JSON.parse(f);
    } catch {
      step = undefined;
    }
    const o = typeof step === "object" && step !== null ? (step as Record<string, unknown>) : undefined;
    const name = o?.["function"] ?? o?.["name"];
    fragments.push(
      typeof name === "string"
        ? `<tool_call>${JSON.stringify({ name, arguments: o?.["args"] ?? o?.["arguments"] ?? {} })}</tool_call>`
        : f,
    );
  });
  let answer: unknown;
  try {
    answer = (JSON.parse(t.render([])) as { final_answer?: unknown }).final_answer;
  } catch {
    answer = undefined;
  }
  if (typeof answer === "string" && answer !== "" && !fragments.includes(answer)) fragments.push(answer);
  return { id: t.id, agent, fragments, fragmentsPerTurn: Math.max(1, t.maxTokens - 1) };
}

// ── the Hermes / Qwen layout ────────────────────────────────────────────────────────────────

/** One tool call parsed from a turn, or why a block could not be read (shown to the policy). */
export type ParsedCall =
  | { readonly ok: true; readonly name: string; readonly argumentsJson: string }
  | { readonly ok: false; readonly error: string };

/** Arguments as the agentdojo service reads them: `args`, then `arguments`, then `parameters`. */
function argumentsJsonOf(o: Record<string, unknown>): string {
  const args = o["args"] ?? o["arguments"] ?? o["parameters"] ?? {};
  if (typeof args !== "string") return JSON.stringify(args);
  return args.trim() === "" ? "{}" : args;
}

function callFromJson(text: string): ParsedCall {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `ToolCallError: not valid JSON (${(err as Error).message}): ${text}` };
  }
  if (typeof v !== "object" || v === null || Array.isArray(v))
    return { ok: false, error: `ToolCallError: a tool call must be a JSON object: ${text}` };
  const o = v as Record<string, unknown>;
  // The key precedence of the agentdojo service's trajectory parser: `function` before `name`.
  const name = o["function"] ?? o["name"];
  if (typeof name !== "string" || name === "")
    return { ok: false, error: `ToolCallError: the tool call has no "name": ${text}` };
  return { ok: true, name, argumentsJson: argumentsJsonOf(o) };
}

/**
 * The tool calls of one assistant turn: each `<tool_call>…</tool_call>` block holds one JSON object
 * (`{"name", "arguments"}`; `function` / `args` / `parameters` accepted, with the agentdojo service's
 * precedence) or one per line; a block that does not parse, or an unclosed `<tool_call>`, is an error
 * the policy is shown as that call's response.
 */
export function parseToolCalls(turn: string): ParsedCall[] {
  const out: ParsedCall[] = [];
  const re = /<tool_call>([\s\S]*?)(<\/tool_call>|$)/g;
  for (let m = re.exec(turn); m; m = re.exec(turn)) {
    if (m[0].length === 0) break;
    const body = m[1]!.trim();
    if (m[2] !== "</tool_call>") {
      out.push({ ok: false, error: `ToolCallError: <tool_call> is not closed: ${body}` });
      break;
    }
    const whole = callFromJson(body);
    if (whole.ok || !body.includes("\n")) {
      out.push(whole);
      continue;
    }
    for (const line of body.split("\n")) if (line.trim()) out.push(callFromJson(line.trim()));
  }
  return out;
}

const countOf = (s: string, sub: string) => s.split(sub).length - 1;

/**
 * Why the agentdojo service's text-layout parser would reject this assistant turn (CorrGRPO: such a
 * transcript is invalid, every reward component 0), or `undefined`: `<tool_call>` / `</tool_call>`
 * counts that differ, a block whose JSON (whole, or one object per line) does not parse, or a call
 * object without a function name. At least as strict as the service (a stricter verdict only makes the
 * runner send the transcript, which the service then scores as it reads it).
 */
export function toolCallProblem(turn: string): string | undefined {
  const opens = countOf(turn, "<tool_call>");
  const closes = countOf(turn, "</tool_call>");
  if (opens !== closes) return `${opens} <tool_call> but ${closes} </tool_call>`;
  let i = 0;
  for (let b = 1; b <= opens; b++) {
    const a = turn.indexOf("<tool_call>", i);
    const e = turn.indexOf("</tool_call>", a + 11);
    if (e === -1 || turn.lastIndexOf("</tool_call>", a) >= i) return "unbalanced <tool_call> tags";
    const body = turn.slice(a + 11, e).trim();
    i = e + 12;
    const whole = callFromJson(body);
    if (whole.ok) continue;
    const lines = body.split("\n").filter((l) => l.trim() !== "");
    if (lines.length < 2) return `tool call ${b}: ${whole.error}`;
    for (const line of lines) {
      const c = callFromJson(line.trim());
      if (!c.ok) return `tool call ${b}: ${c.error}`;
    }
  }
  return undefined;
}

/**
 * A turn's text without its tool-call blocks and reasoning: the final answer it gives (as the agentdojo
 * service reads it: what follows the last `</think>`, or, with an unclosed `<think>`, what precedes it).
 */
export function answerOf(turn: string): string {
  const t = turn.replace(/<tool_call>[\s\S]*?(<\/tool_call>|$)/g, "");
  const endThink = t.lastIndexOf("</think>");
  if (endThink !== -1) return t.slice(endThink + 8).trim();
  const think = t.indexOf("<think>");
  return (think === -1 ? t : t.slice(0, think)).trim();
}

/** The system message with the tool signatures, as Qwen 2.5's chat template writes it. */
export function systemWithTools(system: string, toolsJson: string): string {
  const tools = JSON.parse(toolsJson) as unknown[];
  return (
    `${system}\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n` +
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
    tools.map((t) => JSON.stringify(t)).join("\n") +
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within " +
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
  );
}

const IM_START = "<|im_start|>";
const IM_END = "<|im_end|>";
const chatTurn = (role: string, content: string) => `${IM_START}${role}\n${content}${IM_END}\n`;
const toolResponses = (outputs: readonly string[]) =>
  outputs.map((o) => `<tool_response>\n${o}\n</tool_response>`).join("\n");

// ── one episode ─────────────────────────────────────────────────────────────────────────────

/** What one episode needs. */
export interface EpisodeContext {
  readonly env: AgentEnvironmentSessions;
  readonly learner: Learner;
  /** `fragments` or text (from {@link LearnerInfo.tokenizer}). */
  readonly policy: "fragments" | "text";
  readonly settings: EpisodeSettings;
  readonly sampling: EpisodeSampling;
  /** Seeds the episode's Generate calls (mixed with the episode index and the turn). */
  readonly seed: number;
  /** Deadline of each environment call in milliseconds. @default 30000 */
  readonly callTimeoutMs?: number;
  readonly signal?: AbortSignal;
  /** Text policies: the learner's longest prompt + completion in tokens (0 = unbounded). @default 0 */
  readonly maxContext?: number;
}

/** The growing sequence of one episode. */
interface Sequence {
  promptTokenIds: number[];
  tokenIds: number[];
  logprobs: number[];
  lossMask: number[];
  spans: EpisodeSpan[];
  policyVersion: number;
  truncated: boolean;
}

function appendTurn(seq: Sequence, c: Completion): void {
  seq.spans.push({
    kind: "policy",
    start: seq.tokenIds.length,
    end: seq.tokenIds.length + c.tokenIds.length,
  });
  seq.tokenIds.push(...c.tokenIds);
  seq.logprobs.push(...c.logprobs);
  for (let i = 0; i < c.tokenIds.length; i++) seq.lossMask.push(1);
  seq.policyVersion = Math.min(seq.policyVersion, c.policyVersion);
  seq.truncated = c.truncated;
}

function appendInserted(seq: Sequence, ids: readonly number[]): void {
  if (ids.length > 0)
    seq.spans.push({
      kind: "environment",
      start: seq.tokenIds.length,
      end: seq.tokenIds.length + ids.length,
    });
  seq.tokenIds.push(...ids);
  for (let i = 0; i < ids.length; i++) {
    seq.logprobs.push(0);
    seq.lossMask.push(0);
  }
}

const isStartsWith = (a: readonly number[], prefix: readonly number[]) =>
  prefix.length <= a.length && prefix.every((x, i) => a[i] === x);

/** Where an episode stands when its next turn is asked for. */
interface TurnState {
  readonly index: number;
  readonly turn: number;
  readonly contextKey: string;
  readonly vocabulary: readonly string[];
  readonly seq: Sequence;
  /** The conversation so far as ChatML text (text policies). */
  readonly text: string;
  /** Tokens left in the episode's budget. */
  readonly remaining: number;
}

/** The Generate request of one turn: the episode so far continued (fragments) or the conversation (text). */
function turnRequest(ctx: EpisodeContext, task: EpisodeTask, s: TurnState): GenerateRequest {
  const promptId = `${task.id}/${s.index}/${s.turn}`;
  const seed = mixSeed(ctx.seed, s.index, s.turn);
  if (ctx.policy === "fragments") {
    const perTurn = (task.fragmentsPerTurn ?? task.fragments!.length) + 1;
    return {
      prompts: [
        {
          promptId,
          contextKey: s.contextKey,
          vocabulary: s.vocabulary,
          maxTokens: Math.min(perTurn, s.remaining),
          stopToken: 0,
          prefixTokenIds: s.seq.tokenIds,
        },
      ],
      n: 1,
      seed,
    };
  }
  return {
    prompts: [
      {
        promptId,
        contextKey: s.contextKey,
        text: s.text,
        maxTokens: Math.min(ctx.sampling.maxNewTokens, s.remaining),
      },
    ],
    n: 1,
    seed,
    ...(ctx.sampling.temperature !== undefined ? { temperature: ctx.sampling.temperature } : {}),
    ...(ctx.sampling.topP !== undefined ? { topP: ctx.sampling.topP } : {}),
    stop: turnStops(ctx.sampling),
  };
}

/**
 * The stop strings of a text policy's turn: the run's, and `<|im_end|>` — which only a tokenizer that
 * decodes it as text matches (the built-in byte-level one). A Hugging Face tokenizer decodes with
 * `skip_special_tokens`, so a special `<|im_end|>` never shows up in the text: there the turn ends at
 * the model's end-of-sequence token id (Qwen's `eos_token` is `<|im_end|>`).
 */
const turnStops = (s: EpisodeSampling) => [...new Set([...(s.stop ?? []), IM_END])];

/**
 * What a text policy's turn said, as its tokens say it: the completion's text, and the stop string it
 * ended on ({@link Completion.matchedStop}: a learner cuts it out of `text` but keeps its tokens).
 * `<|im_end|>` (or an end-of-sequence token) is not part of the turn's content: the runner closes every
 * turn with `<|im_end|>`. The stop string comes from the learner and its text is parsed for tool calls
 * that are executed, so it must be one the turn asked for (`stops`) — or `""` —, and non-empty only on
 * a completion that ended at a stop; anything else is refused (an {@link EpisodeError} naming it).
 */
function turnContent(c: Completion, turn: number, stops: readonly string[]): string {
  const m: unknown = c.matchedStop;
  const bad = (why: string) =>
    new EpisodeError(
      `the learner's completion of turn ${turn} has LearnerCompletion.matched_stop ${m === undefined ? "unset" : JSON.stringify(m)}: ${why}`,
    );
  if (typeof m !== "string")
    throw bad(`expected "" or one of the turn's stop strings ${JSON.stringify(stops)}`);
  if (m === "") return c.text;
  if (!stops.includes(m)) throw bad(`not "" nor one of the turn's stop strings ${JSON.stringify(stops)}`);
  if (c.finishReason !== "stop")
    throw bad(`finish_reason is "${c.finishReason}": only a completion that ended at a stop names one`);
  return m === IM_END ? c.text : c.text + m;
}

/** UTF-8 bytes of `s`: an upper bound on its tokens (every token of a byte-level or byte-fallback tokenizer covers at least one byte). */
const utf8Length = (s: string) => Buffer.byteLength(s, "utf8");

/** The environment's output for one parsed call (an error is the response the policy sees). */
async function callTool(
  ctx: EpisodeContext,
  sessionId: string,
  c: ParsedCall,
): Promise<{ text: string; sent: boolean; ended?: string }> {
  if (!c.ok) return { text: c.error, sent: false };
  const timeoutMs = ctx.callTimeoutMs ?? 30_000;
  try {
    const r = await ctx.env.call(
      { sessionId, function: c.name, argumentsJson: c.argumentsJson },
      { timeoutMs },
    );
    return { text: r.error !== "" ? r.error : r.output, sent: true };
  } catch (err) {
    // INVALID_ARGUMENT (arguments that are not a JSON object, …) is the policy's mistake: show it.
    const e = err as { code?: number; details?: string; message?: string };
    if (e.code === 3) return { text: `ValueError: ${e.details ?? e.message ?? String(err)}`, sent: false };
    // NOT_FOUND (the session expired or was evicted), DEADLINE_EXCEEDED: this episode ends, not the run.
    if (e.code === 5 || e.code === 4)
      return { text: "", sent: false, ended: e.details ?? e.message ?? String(err) };
    throw err;
  }
}

/** What the turns of an episode left behind, for Close and the result. */
interface Played {
  stopReason: EpisodeStopReason;
  calls: number;
  turns: number;
  lastTurn: string;
  /** The first turn the agentdojo service would read as invalid, and why. */
  invalid?: string;
  /** The session's trouble when it ended the episode (stop reason `environment`). */
  environmentError?: string;
  /** The chat-layout text after the first prompt, up to the end of the last assistant turn's content. */
  transcript: string;
}

/**
 * Text policies: the episode's sequence continues with the tokens the new prompt adds (the environment's
 * reply) — or the episode stops: `retokenized` when the new prompt's tokens do not start with the
 * sampled ones, `tokens` when the turn would end past the budget. `undefined`: go on.
 */
function appendReply(
  seq: Sequence,
  c: Completion,
  t: number,
  maxTokens: number,
): EpisodeStopReason | undefined {
  const before = t === 1 ? [] : [...seq.promptTokenIds, ...seq.tokenIds];
  if (t === 1) {
    seq.promptTokenIds = [...c.promptTokenIds];
    return undefined;
  }
  if (!isStartsWith(c.promptTokenIds, before)) return "retokenized";
  // The environment's reply is known in tokens only now: a turn that would end past the budget is
  // dropped (the policy never saw the reply's effect on the sample).
  const inserted = c.promptTokenIds.slice(before.length);
  if (seq.tokenIds.length + inserted.length + c.tokenIds.length > maxTokens) return "tokens";
  appendInserted(seq, inserted);
  return undefined;
}

/**
 * Plays one episode of `task` (the `index`-th of its batch); the session is closed whatever happens.
 * `ctx.policy` is the learner's kind of policy; text policies also take `ctx.maxContext` from
 * {@link runEpisodes}.
 */
export async function runEpisode(
  ctx: EpisodeContext,
  task: EpisodeTask,
  index: number,
): Promise<EpisodeResult> {
  const { env, settings } = ctx;
  const timeoutMs = ctx.callTimeoutMs ?? 30_000;
  const vocabulary = ctx.policy === "fragments" ? episodeVocabulary(task, settings.maxTurns) : [];
  const contextKey = ctx.policy === "fragments" ? episodeContextKey(task, settings.maxTurns) : task.id;
  const reset = await env.reset({ task: task.agent }, { timeoutMs });
  let closed = false;
  try {
    const system = systemWithTools(reset.systemPrompt, reset.toolsJson);
    const messages: ChatMessage[] = [
      { role: "system", content: system },
      { role: "user", content: reset.userPrompt },
    ];
    const seq: Sequence = {
      promptTokenIds: [],
      tokenIds: [],
      logprobs: [],
      lossMask: [],
      spans: [],
      policyVersion: Number.MAX_SAFE_INTEGER,
      truncated: false,
    };
    const played = await playTurns(ctx, task, index, { reset, messages, seq, vocabulary, contextKey });
    // Close: the environment's trajectory; a session that is gone (stop reason `environment`) leaves
    // the transcript as the rollout's response.
    const finalAnswer = answerOf(played.lastTurn);
    closed = true;
    let trajectoryJson = "";
    try {
      trajectoryJson = (await env.close({ sessionId: reset.sessionId, finalAnswer }, { timeoutMs }))
        .trajectoryJson;
    } catch (err) {
      if (played.stopReason !== "environment") throw err;
    }
    const useTranscript = played.invalid !== undefined || trajectoryJson === "";
    return {
      taskId: task.id,
      index,
      trajectoryJson,
      response: useTranscript ? played.transcript : trajectoryJson,
      ...(played.invalid !== undefined ? { invalid: played.invalid } : {}),
      transcript: played.transcript,
      finalAnswer,
      stopReason: played.stopReason,
      turns: played.turns,
      calls: played.calls,
      messages,
      contextKey,
      vocabularySize: vocabulary.length,
      promptTokenIds: seq.promptTokenIds,
      tokenIds: seq.tokenIds,
      logprobs: seq.logprobs,
      lossMask: seq.lossMask,
      spans: seq.spans,
      policyVersion: seq.policyVersion === Number.MAX_SAFE_INTEGER ? 0 : seq.policyVersion,
      truncated: seq.truncated,
    };
  } finally {
    // A failed or stopped episode still ends its session (best effort: the server's idle timeout reaps
    // a session whose Close cannot be delivered).
    if (!closed)
      await env.close({ sessionId: reset.sessionId, finalAnswer: "" }, { timeoutMs }).catch(() => {});
  }
}

/** The turns of one episode: generate → tool calls → the environment's reply, until a stop. */
async function playTurns(
  ctx: EpisodeContext,
  task: EpisodeTask,
  index: number,
  e: {
    readonly reset: { sessionId: string; userPrompt: string; maxCalls: number };
    readonly messages: ChatMessage[];
    readonly seq: Sequence;
    readonly vocabulary: readonly string[];
    readonly contextKey: string;
  },
): Promise<Played> {
  const { settings } = ctx;
  const { reset, messages, seq, vocabulary, contextKey } = e;
  let text =
    chatTurn("system", messages[0]!.content) + chatTurn("user", reset.userPrompt) + `${IM_START}assistant\n`;
  const promptEnd = text.length;
  const p: Played = { stopReason: "turns", calls: 0, turns: 0, lastTurn: "", transcript: "" };
  /** Where in `text` the tokens sampled so far end (the end of the last turn's content). */
  let sampledTo = 0;
  /** Tool calls the policy wrote (sent or not). */
  let written = 0;
  for (let t = 1; t <= settings.maxTurns; t++) {
    if (ctx.signal?.aborted) throw ctx.signal.reason ?? new Error("aborted");
    const remaining = settings.maxTokens - seq.tokenIds.length;
    if (remaining <= 0) {
      p.stopReason = "tokens";
      break;
    }
    // A text prompt that might not fit the learner's context is not sent (its reply's tokens are known
    // only from the learner; their UTF-8 bytes bound them). The first prompt is always sent: one that
    // does not fit is the learner's clear error about the task.
    const maxContext = ctx.maxContext ?? 0;
    if (ctx.policy === "text" && t > 1 && maxContext > 0) {
      const bound = seq.promptTokenIds.length + seq.tokenIds.length + utf8Length(text.slice(sampledTo));
      if (bound >= maxContext) {
        p.stopReason = "context";
        break;
      }
    }
    // 1. The policy's turn.
    const [c] = await ctx.learner.generate(
      turnRequest(ctx, task, { index, turn: t, contextKey, vocabulary, seq, text, remaining }),
    );
    if (!c) throw new EpisodeError(`the learner returned no completion for turn ${t}`);
    // What the policy said, as its tokens say it (a stop string it ended on included, once checked).
    const said = ctx.policy === "text" ? turnContent(c, t, turnStops(ctx.sampling)) : c.text;
    if (ctx.policy === "text") {
      const stop = appendReply(seq, c, t, settings.maxTokens);
      if (stop) {
        p.stopReason = stop;
        break;
      }
    }
    appendTurn(seq, c);
    p.turns = t;
    p.lastTurn = said;
    messages.push({ role: "assistant", content: said });
    text += said;
    sampledTo = text.length;
    p.transcript = text.slice(promptEnd);
    text += `${IM_END}\n`;
    const problem = toolCallProblem(said);
    if (problem !== undefined && p.invalid === undefined) p.invalid = `turn ${t}: ${problem}`;

    // 2. Its tool calls; none: the turn is the final answer.
    const parsed = parseToolCalls(said);
    // The service reads a transcript with more calls than the session allows as invalid too.
    written += parsed.filter((c) => c.ok).length;
    if (written > reset.maxCalls && p.invalid === undefined)
      p.invalid = `turn ${t}: more than ${reset.maxCalls} calls`;
    if (parsed.length === 0) {
      p.stopReason = "answer";
      break;
    }
    const outputs: string[] = [];
    let stop: EpisodeStopReason | undefined;
    for (const call of parsed) {
      if (call.ok && p.calls >= reset.maxCalls) {
        stop = "calls";
        break;
      }
      const r = await callTool(ctx, reset.sessionId, call);
      if (r.ended !== undefined) {
        p.environmentError = r.ended;
        stop = "environment";
        break;
      }
      if (r.sent) p.calls++;
      outputs.push(r.text);
      messages.push({ role: "tool", content: r.text });
    }
    if (stop) {
      p.stopReason = stop;
      break;
    }
    // 3. The environment's reply, inserted into the sequence (masked out of the loss).
    if (t === settings.maxTurns) break;
    if (ctx.policy === "fragments" && seq.tokenIds.length + 1 >= settings.maxTokens) {
      p.stopReason = "tokens";
      break;
    }
    text += chatTurn("user", toolResponses(outputs)) + `${IM_START}assistant\n`;
    if (ctx.policy === "fragments") appendInserted(seq, [vocabulary.indexOf(toolResponsesFragment(t))]);
  }
  return p;
}

// ── many episodes ───────────────────────────────────────────────────────────────────────────

/** Options of {@link runEpisodes}. */
export interface RunEpisodesOptions extends Omit<EpisodeContext, "policy"> {
  /** The learner's info (for the kind of policy); read from the learner when absent. */
  readonly info?: LearnerInfo;
}

/**
 * Plays one episode per entry of `tasks` (a task listed G times gives a group of G), at most
 * `settings.concurrency` at once, results in input order. The first failure stops new episodes, waits
 * for those in flight (each closes its session) and is thrown as an {@link EpisodeError} naming the task.
 */
export async function runEpisodes(
  tasks: readonly EpisodeTask[],
  o: RunEpisodesOptions,
): Promise<EpisodeResult[]> {
  checkEpisodeSettings(o.settings);
  const info = o.info ?? (await o.learner.info());
  const policy = info.tokenizer === FRAGMENT_TOKENIZER ? "fragments" : "text";
  if (policy === "fragments") for (const t of tasks) episodeVocabulary(t, o.settings.maxTurns);
  const ctx: EpisodeContext = {
    ...o,
    policy,
    ...(policy === "text" ? { maxContext: info.maxContext } : {}),
  };
  const results: EpisodeResult[] = new Array(tasks.length);
  let next = 0;
  let failure: unknown;
  const worker = async () => {
    // A stopped run starts no episode (its Reset would open a session only to close it).
    while (failure === undefined && !o.signal?.aborted && next < tasks.length) {
      const i = next++;
      try {
        results[i] = await runEpisode(ctx, tasks[i]!, i);
      } catch (err) {
        if (failure === undefined) {
          failure = o.signal?.aborted
            ? err
            : new EpisodeError(
                `episode ${i} of task '${tasks[i]!.id}' failed: ${(err as Error).message ?? err}`,
                {
                  cause: err,
                },
              );
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.settings.concurrency, tasks.length) }, worker));
  if (failure !== undefined) throw failure;
  if (o.signal?.aborted && next < tasks.length) throw o.signal.reason ?? new Error("aborted");
  return results;
}

/** The learner sample of one episode (the tool outputs masked out of the loss). */
export function episodeSample(
  r: EpisodeResult,
  s: { readonly sampleId: string; readonly groupId: string; readonly advantage: number },
): Sample {
  return {
    sampleId: s.sampleId,
    groupId: s.groupId,
    contextKey: r.contextKey,
    vocabularySize: r.vocabularySize,
    ...(r.promptTokenIds.length > 0 ? { promptTokenIds: r.promptTokenIds } : {}),
    tokenIds: r.tokenIds,
    rolloutLogprobs: r.logprobs,
    lossMask: r.lossMask,
    advantage: s.advantage,
    policyVersion: r.policyVersion,
    truncated: r.truncated,
  };
}
