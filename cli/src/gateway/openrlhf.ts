/**
 * The OpenRLHF-compatible remote reward endpoint behind `reward-mesh gateway`.
 *
 * OpenRLHF (`--reward.remote_url http://host:port/get_reward`) POSTs `{"query": [...], "prompts": [...],
 * "labels": [...]}` — `query[i]` is the decoded prompt + response, `prompts[i]` the prompt, `labels[i]` the
 * dataset's label — and reads `rewards` (advantages), `scores` (dynamic filtering) and `extra_logs` (logged
 * per key) from the JSON answer, one entry per query. Older releases send `query` alone.
 *
 * Each request becomes one rollout per query (response: see {@link responseOf}), fanned out to every
 * configured service with one `ScoreBatch` call per service (one `ScoreStream` for a service that does not
 * implement ScoreBatch); the answer is the weighted total per query
 * (`rewards`; a component that does not apply counts 0 there, as in the trainer), the score component's value
 * (`scores`, see {@link OpenRlhfGatewayOptions.scoreComponent}) and each component's value under
 * `extra_logs["<service>/<component>"]` with `extra_logs["<service>/<component>/applicable"]` beside it: 1, or 0
 * (and the value 0) where the component does not apply (its service does not score the task's domain, or it
 * reported NOT_APPLICABLE). Every number is finite and written with a decimal point, so that OpenRLHF — which
 * reads the answer with Python's `json`, makes `torch.tensor([value])` of each `extra_logs` entry per sample,
 * concatenates them across the batch by key and logs their `.float().mean()` — gets a float tensor for every
 * request with the same keys, never `None` (a `torch.tensor` error) or NaN (a NaN logged mean).
 *
 * Shutdown drains: {@link RunningGateway.close} stops accepting connections, answers requests that arrive on
 * kept-alive connections 503 (`Connection: close`), lets the requests being scored finish for up to a grace
 * period ({@link OpenRlhfGatewayOptions.shutdownGraceMs}), then cancels what is left (503) and closes.
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { create, fromJson, type JsonValue } from "@bufbuild/protobuf";
import {
  type Client,
  ComponentStatus,
  grpc,
  type RewardResult,
  type RewardService,
  type Rollout,
  RolloutSchema,
  type Task,
  TaskSchema,
} from "@reward-mesh/proto";
import { scoreBatch } from "@reward-mesh/sdk";

/** One weighted component of the reward. */
export interface GatewayComponent {
  readonly service: string;
  readonly component: string;
  readonly weight: number;
}

/** What the gateway needs of one service: a client and the domains it scores (from Describe). */
export interface GatewayService {
  readonly name: string;
  readonly client: Client<typeof RewardService>;
  readonly domains: readonly string[];
}

/** Options of {@link startOpenRlhfGateway}. */
export interface OpenRlhfGatewayOptions {
  readonly components: readonly GatewayComponent[];
  readonly services: readonly GatewayService[];
  /** Domain of a task built from a string label: `math` (the label is the reference answer) or any other domain (a `custom` task `{label, prompt}`). */
  readonly domain: string;
  readonly host: string;
  /** 0 = any free port. */
  readonly port: number;
  /** Deadline of each service's call (ScoreBatch, or ScoreStream for a service without it). */
  readonly timeoutMs: number;
  /** Largest request body in bytes (past it: 413). @default 8 MiB */
  readonly maxBodyBytes?: number;
  /** Requests scored at once; more are answered 429 (OpenRLHF's client retries). @default 16 */
  readonly maxConcurrent?: number;
  /** Run id put on the rollouts. @default "openrlhf" */
  readonly runId?: string;
  /**
   * What `scores` holds (OpenRLHF's dynamic filtering, `--algo.dynamic_filtering_enable`, keeps groups whose
   * mean score lies in `--algo.dynamic_filtering_range`, default (0, 1)): `"<service>/<component>"` (its raw
   * value, 0 where it does not apply) or `"total"` (the weighted total, as `rewards`). @default the first component
   */
  readonly scoreComponent?: string;
  /** Pad tokens stripped from the ends of a query before the response is cut. @default DEFAULT_PAD_TOKENS */
  readonly padTokens?: readonly string[];
  /**
   * How long {@link RunningGateway.close} lets the requests being scored finish before it cancels them (their
   * services' calls are cancelled, the clients get 503; OpenRLHF's client retries). @default 30000
   */
  readonly shutdownGraceMs?: number;
}

/** {@link OpenRlhfGatewayOptions.shutdownGraceMs}'s default: Kubernetes' default termination grace period. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 30_000;

/**
 * Pad tokens of common tokenizers (Qwen `<|endoftext|>`, Llama 3 `<|end_of_text|>` and
 * `<|finetune_right_pad_id|>`, T5/Gemma-style `<pad>`, BERT-style `[PAD]`, Llama 2/Mistral `</s>`). Older
 * OpenRLHF decodes the padded batch with the special tokens kept, so a query can start (left padding) or end
 * (right padding) with runs of them. `<|im_end|>` and `<|eot_id|>` are not here: they end turns inside the
 * text, never pad it.
 */
export const DEFAULT_PAD_TOKENS: readonly string[] = [
  "<|endoftext|>",
  "<|end_of_text|>",
  "<|finetune_right_pad_id|>",
  "<pad>",
  "[PAD]",
  "</s>",
];

function stripLeading(text: string, tokens: readonly string[]): string {
  let t = text;
  for (let again = true; again; ) {
    again = false;
    for (const tok of tokens)
      if (tok && t.startsWith(tok)) {
        t = t.slice(tok.length);
        again = true;
      }
  }
  return t;
}

function stripTrailing(text: string, tokens: readonly string[]): string {
  let t = text;
  for (let again = true; again; ) {
    again = false;
    for (const tok of tokens)
      if (tok && t.endsWith(tok)) {
        t = t.slice(0, t.length - tok.length);
        again = true;
      }
  }
  return t;
}

/**
 * The response in an OpenRLHF query, as leniently as OpenRLHF's own `examples/python/math_reward_func.py`
 * (`query[len(prompt):]` when the prompt is in the query, else the whole query), never an error:
 *
 * 1. runs of `padTokens` are stripped from both ends of the query and from the start of the prompt;
 * 2. if the prompt occurs in the query, the response is what follows its first occurrence (the example cuts
 *    `len(prompt)` characters, which is the same when the query starts with the prompt, and keeps the
 *    prompt's tail when something — a BOS token, a pad token not listed — precedes it; the first occurrence
 *    is the prompt itself, since a response quoting its question comes after it);
 * 3. otherwise (a prompt changed by `decode(encode(prompt))`, e.g. `clean_up_tokenization_spaces`, or
 *    truncated, or no prompt sent) the whole stripped query is the response.
 */
export function responseOf(query: string, prompt: string, padTokens: readonly string[]): string {
  const q = stripTrailing(stripLeading(query, padTokens), padTokens);
  const p = stripLeading(prompt, padTokens);
  if (p === "") return q;
  const at = q.indexOf(p);
  return at < 0 ? q : q.slice(at + p.length);
}

/** A running gateway. */
export interface RunningGateway {
  /** `http://host:port` — OpenRLHF's `--reward.remote_url` is `<url>/get_reward`. */
  readonly url: string;
  readonly port: number;
  /** Requests being scored now. */
  inFlight(): number;
  /**
   * Drains and stops: no new connection is accepted, a request on a kept-alive connection gets 503, the
   * requests being scored get up to `graceMs` to finish, then are cancelled (503) and every connection is
   * closed. Resolves once the server is closed. Calling it again while draining may shorten the grace (a
   * second Ctrl-C: `close(0)`), never lengthen it.
   * @param graceMs @default the gateway's `shutdownGraceMs`
   */
  close(graceMs?: number): Promise<void>;
}

/** A request the gateway refuses (HTTP 400), naming the offending key. */
export class GatewayRequestError extends Error {
  override readonly name = "GatewayRequestError";
}

/** A service's answer the gateway cannot pass on (HTTP 502), e.g. a non-finite value from a non-SDK service. */
export class GatewayUpstreamError extends Error {
  override readonly name = "GatewayUpstreamError";
}

/** OpenRLHF's request: the fields the gateway reads. */
interface OpenRlhfRequest {
  readonly query: readonly string[];
  readonly prompts: readonly string[] | undefined;
  readonly labels: readonly unknown[] | undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Checks the request body (keys other than query / prompts / labels are ignored, as OpenRLHF's own servers do). */
export function parseOpenRlhfRequest(body: unknown): OpenRlhfRequest {
  if (!isRecord(body))
    throw new GatewayRequestError(
      'the body must be a JSON object {"query": [...], "prompts": [...], "labels": [...]}',
    );
  const query = body["query"];
  if (!Array.isArray(query))
    throw new GatewayRequestError("'query' is required: a list of strings (prompt + response)");
  query.forEach((q, i) => {
    if (typeof q !== "string")
      throw new GatewayRequestError(`'query[${i}]' must be a string, got ${typeof q}`);
  });
  const prompts = body["prompts"];
  if (prompts !== undefined && prompts !== null) {
    if (!Array.isArray(prompts) || prompts.length !== query.length)
      throw new GatewayRequestError(`'prompts' must be a list of ${query.length} strings (one per query)`);
    prompts.forEach((p, i) => {
      if (typeof p !== "string")
        throw new GatewayRequestError(`'prompts[${i}]' must be a string, got ${typeof p}`);
    });
  }
  const labels = body["labels"];
  if (labels !== undefined && labels !== null && (!Array.isArray(labels) || labels.length !== query.length))
    throw new GatewayRequestError(`'labels' must be a list of ${query.length} entries (one per query)`);
  return {
    query: query as string[],
    prompts: (prompts ?? undefined) as string[] | undefined,
    labels: (labels ?? undefined) as unknown[] | undefined,
  };
}

/** The task of query `i`: a label object is a proto-JSON Task; a string label is read per `domain`. */
function taskOf(label: unknown, prompt: string, domain: string, i: number, queryOnly: boolean): Task {
  if (queryOnly && domain === "math")
    throw new GatewayRequestError(
      "'labels' is required with --domain math (each query's reference answer): a query-only request " +
        '({"query": [...]}, older OpenRLHF) can be scored only with a --domain whose services need no label ' +
        "(e.g. --domain custom for length)",
    );
  if (isRecord(label)) {
    try {
      return fromJson(TaskSchema, label as JsonValue);
    } catch (err) {
      throw new GatewayRequestError(
        `'labels[${i}]' is an object but not a rewardmesh.v1.Task in proto JSON: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }
  if (label !== undefined && label !== null && typeof label !== "string" && typeof label !== "number")
    throw new GatewayRequestError(
      `'labels[${i}]' must be a string, a number or a Task object, got ${typeof label}`,
    );
  const text = label === undefined || label === null ? "" : String(label);
  if (domain === "math") {
    if (text === "")
      throw new GatewayRequestError(`'labels[${i}]' is required for math: the reference answer`);
    return create(TaskSchema, {
      id: `label-${i}`,
      prompt,
      kind: { case: "math", value: { problem: prompt, answers: [text] } },
    });
  }
  return create(TaskSchema, {
    id: `label-${i}`,
    prompt,
    domain,
    kind: { case: "custom", value: { fields: { label: { kind: { case: "stringValue", value: text } } } } },
  });
}

let requestCounter = 0;

/** One rollout per query. */
function rolloutsOf(req: OpenRlhfRequest, o: OpenRlhfGatewayOptions): Rollout[] {
  const batch = `b${++requestCounter}`;
  return req.query.map((q, i) => {
    const sent = req.prompts?.[i] ?? "";
    const pads = o.padTokens ?? DEFAULT_PAD_TOKENS;
    const prompt = stripLeading(sent, pads);
    const id = `${batch}-${i}`;
    return create(RolloutSchema, {
      id,
      runId: o.runId ?? "openrlhf",
      groupId: id,
      index: 0,
      groupSize: 1,
      task: taskOf(req.labels?.[i], prompt, o.domain, i, req.labels === undefined),
      response: responseOf(q, sent, pads),
    });
  });
}

/** `math: math; length: code, custom` — what each service scores, for error messages. */
export function servicesDomains(services: readonly GatewayService[]): string {
  return services.map((s) => `${s.name}: ${s.domains.join(", ") || "none"}`).join("; ");
}

/** The domain a rollout is routed by (its task's, else its kind's name). */
function domainOf(r: Rollout): string {
  if (r.task?.domain) return r.task.domain;
  const kind = r.task?.kind.case;
  return kind === "toolCall" ? "tool_call" : (kind ?? "custom");
}

/**
 * Scores `rollouts` with one service: one `ScoreBatch` call (split at `MAX_SCORE_BATCH`), or one
 * `ScoreStream` for a service that answers ScoreBatch `UNIMPLEMENTED` (the SDK's `scoreBatch` helper; the
 * client remembers it). Results in input order. A rollout the service refuses fails the request as it
 * would fail a ScoreStream: with the first refused rollout's code and `'requests[<j>]…'` message.
 */
async function scoreService(
  s: GatewayService,
  rollouts: readonly Rollout[],
  timeoutMs: number,
  signal: AbortSignal,
): Promise<RewardResult[]> {
  const out = await scoreBatch(s.client, rollouts, { timeoutMs, signal });
  const refused = out.errors[0];
  if (refused)
    throw Object.assign(new Error(refused.message), { code: refused.code, details: refused.message });
  if (out.results.length !== rollouts.length)
    throw new Error(
      `service '${s.name}' answered ${out.results.length} results for ${rollouts.length} rollouts`,
    );
  return out.results;
}

/**
 * OpenRLHF's answer: weighted totals and the per-component values. Every number is finite; `extra_logs` has
 * `"<service>/<component>"` (0 where it does not apply) and `"<service>/<component>/applicable"` (1 or 0) for
 * every configured component, in every answer.
 */
export interface OpenRlhfResponse {
  readonly rewards: number[];
  readonly scores: number[];
  readonly extra_logs: Record<string, number[]>;
}

/** The `extra_logs` key saying whether `key`'s component applied to each query (1) or not (0). */
export const applicableKey = (key: string) => `${key}/applicable`;

/**
 * The `scores` source: `total` or a configured `<service>/<component>` (default: the first component).
 * @throws {GatewayRequestError} never; a component not configured is a `TypeError` (the CLI checks it first).
 */
export function scoreComponentOf(o: Pick<OpenRlhfGatewayOptions, "components" | "scoreComponent">): string {
  const first = o.components[0];
  const key = o.scoreComponent ?? (first ? `${first.service}/${first.component}` : "total");
  if (key !== "total" && !o.components.some((c) => `${c.service}/${c.component}` === key))
    throw new TypeError(
      `score component '${key}' is not one of the components (${o.components.map((c) => `${c.service}/${c.component}`).join(", ")}) or 'total'`,
    );
  return key;
}

/** Scores one OpenRLHF request with the configured services. */
export async function scoreOpenRlhfRequest(
  body: unknown,
  o: OpenRlhfGatewayOptions,
  signal?: AbortSignal,
): Promise<OpenRlhfResponse> {
  // One service failing (or the client going away) cancels the other services' calls.
  const cancel = new AbortController();
  const onAbort = () => cancel.abort(signal?.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    return await scoreWith(body, o, cancel);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    cancel.abort();
  }
}

async function scoreWith(
  body: unknown,
  o: OpenRlhfGatewayOptions,
  cancel: AbortController,
): Promise<OpenRlhfResponse> {
  const req = parseOpenRlhfRequest(body);
  const rollouts = rolloutsOf(req, o);
  rollouts.forEach((r, i) => {
    const domain = domainOf(r);
    if (!o.services.some((s) => s.domains.includes(domain)))
      throw new GatewayRequestError(
        `'labels[${i}]': the task's domain '${domain}' is scored by none of the services (${servicesDomains(o.services)}); its reward would be a silent 0`,
      );
  });
  const byService = new Map<string, RewardResult[]>();
  await Promise.all(
    o.services.map(async (s) => {
      const picked = rollouts.map((r, i) => ({ r, i })).filter(({ r }) => s.domains.includes(domainOf(r)));
      let results: RewardResult[] = [];
      try {
        if (picked.length)
          results = await scoreService(
            s,
            picked.map((p) => p.r),
            o.timeoutMs,
            cancel.signal,
          );
      } catch (err) {
        cancel.abort();
        // The service names its j-th request; the caller knows it as query[i].
        const e = err as Partial<grpc.ServiceError>;
        if (e.code === grpc.status.INVALID_ARGUMENT && typeof e.details === "string") {
          const at = (j: string) => `query[${picked[Number(j)]?.i ?? j}]`;
          const details = e.details
            .replace(/^'requests\[(\d+)\]\.([^']*)'/, (_, j: string, field: string) => `${at(j)}: '${field}'`)
            .replace(/requests\[(\d+)\]\./, (_, j: string) => `${at(j)}: `);
          throw Object.assign(new Error(details), { code: e.code, details: `${s.name}: ${details}` });
        }
        throw err;
      }
      const full: RewardResult[] = new Array(rollouts.length);
      picked.forEach((p, j) => {
        full[p.i] = results[j]!;
      });
      byService.set(s.name, full);
    }),
  );
  const rewards = rollouts.map(() => 0);
  const extra: Record<string, number[]> = {};
  for (const c of o.components) {
    const key = `${c.service}/${c.component}`;
    const results = byService.get(c.service)!;
    const applies = rollouts.map(() => 0);
    extra[key] = rollouts.map((_, i) => {
      const comp = results[i]?.components.find((x) => x.name === c.component);
      if (!comp || comp.status === ComponentStatus.NOT_APPLICABLE) return 0;
      // JSON has no NaN or Infinity (JSON.stringify writes null, which torch.tensor cannot take).
      if (!Number.isFinite(comp.value))
        throw new GatewayUpstreamError(
          `service '${c.service}' answered ${comp.value} for '${c.component}' of query[${i}]: not a finite number`,
        );
      applies[i] = 1;
      rewards[i] = rewards[i]! + c.weight * comp.value;
      return comp.value;
    });
    extra[applicableKey(key)] = applies;
  }
  rewards.forEach((r, i) => {
    if (!Number.isFinite(r))
      throw new GatewayUpstreamError(
        `the weighted total of query[${i}] is ${r}: the components' values times their weights overflow`,
      );
  });
  const scoreKey = scoreComponentOf(o);
  const scores = scoreKey === "total" ? [...rewards] : [...extra[scoreKey]!];
  return { rewards, scores, extra_logs: extra };
}

/**
 * JSON in which every integral number keeps a decimal point (`1.0`, not `1`), so that Python's `json` reads
 * floats and `torch.tensor` makes float tensors of them, as of every other value. Written by hand (not
 * a `JSON.stringify` replacer with markers), so no string value can be mistaken for a number.
 */
export function stringifyFloats(body: unknown): string {
  if (typeof body === "number") {
    if (!Number.isFinite(body)) return "null";
    // Integers below 1e21 print without exponent or point; from 1e21 up JavaScript writes `1e+21`, a float.
    return Number.isInteger(body) && Math.abs(body) < 1e21
      ? `${body === 0 ? 0 : body}.0`
      : JSON.stringify(body);
  }
  if (Array.isArray(body))
    return `[${body.map((v) => (v === undefined ? "null" : stringifyFloats(v))).join(",")}]`;
  if (body !== null && typeof body === "object") {
    const parts: string[] = [];
    for (const [k, v] of Object.entries(body)) {
      if (v === undefined || typeof v === "function") continue;
      parts.push(`${JSON.stringify(k)}:${stringifyFloats(v)}`);
    }
    return `{${parts.join(",")}}`;
  }
  return JSON.stringify(body) ?? "null";
}

function send(res: ServerResponse, status: number, body: unknown, close = false): void {
  const text = `${stringifyFloats(body)}\n`;
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...(close ? { connection: "close" } : {}),
  });
  res.end(text);
}

async function readBody(req: IncomingMessage, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max)
      throw Object.assign(
        new GatewayRequestError(`the body is larger than ${max} bytes (--max-body-bytes)`),
        {
          status: 413,
        },
      );
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The HTTP status and error body of a failure while scoring. */
function failure(err: unknown): { status: number; body: { error: string } } {
  if (err instanceof GatewayRequestError)
    return { status: (err as { status?: number }).status ?? 400, body: { error: err.message } };
  if (err instanceof GatewayUpstreamError)
    return { status: 502, body: { error: `reward service: ${err.message}` } };
  const e = err as Partial<grpc.ServiceError>;
  if (typeof e.code === "number") {
    const status =
      e.code === grpc.status.INVALID_ARGUMENT
        ? 400
        : e.code === grpc.status.UNAVAILABLE
          ? 503
          : e.code === grpc.status.DEADLINE_EXCEEDED
            ? 504
            : 502;
    return { status, body: { error: `reward service: ${grpc.status[e.code]}: ${e.details ?? e.message}` } };
  }
  return {
    status: 500,
    body: { error: `internal error: ${err instanceof Error ? err.message : String(err)}` },
  };
}

/** Node's longest timer delay (2^31 - 1 ms); a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Serves the OpenRLHF remote reward protocol: `POST /get_reward` (and `POST /`) as described above;
 * `GET /healthz` answers 200.
 */
export async function startOpenRlhfGateway(o: OpenRlhfGatewayOptions): Promise<RunningGateway> {
  scoreComponentOf(o);
  const max = o.maxBodyBytes ?? 8 * 1024 * 1024;
  const maxConcurrent = o.maxConcurrent ?? 16;
  const defaultGraceMs = o.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;
  if (!(defaultGraceMs >= 0 && defaultGraceMs <= MAX_TIMER_MS))
    throw new RangeError(
      `shutdownGraceMs must be from 0 to ${MAX_TIMER_MS} (Node's longest timer), got ${defaultGraceMs}`,
    );
  /** The requests being scored: each one's cancel, for the end of the grace period. */
  const scoring = new Set<AbortController>();
  let draining = false;
  let closed: Promise<void> | undefined;
  let deadline = Number.POSITIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  const server: Server = createServer(async (req, res) => {
    // While draining, every answer closes its connection (no request may follow on it).
    if (draining) {
      req.resume();
      res.setHeader("retry-after", "1");
      return send(res, 503, { error: "the gateway is shutting down; retry on another replica" }, true);
    }
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && path === "/healthz") return send(res, 200, { status: "SERVING" });
    if (path !== "/get_reward" && path !== "/")
      return send(res, 404, { error: `no route ${path}: POST /get_reward (OpenRLHF --reward.remote_url)` });
    if (req.method !== "POST") return send(res, 405, { error: `${req.method} ${path}: use POST` });
    if (scoring.size >= maxConcurrent) {
      res.setHeader("retry-after", "1");
      req.resume();
      return send(res, 429, {
        error: `${scoring.size} requests are being scored, the limit (--max-concurrent ${maxConcurrent}); retry`,
      });
    }
    // The client going away, or the end of the shutdown grace, cancels the services' calls of its request.
    const gone = new AbortController();
    scoring.add(gone);
    // Cancelled by the end of the shutdown grace: answered 503 rather than dropped.
    const cut = () => gone.signal.reason instanceof ShutdownError;
    res.once("close", () => {
      scoring.delete(gone);
      if (!res.writableFinished) gone.abort(new Error("the client closed the connection"));
      drained();
    });
    try {
      const text = await readBody(req, max);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch (err) {
        throw new GatewayRequestError(`the body is not valid JSON: ${(err as Error).message}`);
      }
      const answer = await scoreOpenRlhfRequest(body, o, gone.signal);
      if (!gone.signal.aborted) send(res, 200, answer, draining);
      else if (cut()) send(res, 503, { error: (gone.signal.reason as Error).message }, true);
    } catch (err) {
      if (cut() && !res.headersSent) {
        res.setHeader("retry-after", "1");
        return send(res, 503, { error: (gone.signal.reason as Error).message }, true);
      }
      if (gone.signal.aborted) return;
      const f = failure(err);
      send(res, f.status, f.body, draining);
    }
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => {
      server.off("error", reject);
      const a = server.address();
      resolve(typeof a === "object" && a ? a.port : o.port);
    });
  });
  const host = o.host === "0.0.0.0" || o.host === "::" ? "127.0.0.1" : o.host;

  /** Cancels what is still being scored (503) and closes every connection. */
  const cutOff = () => {
    for (const c of scoring)
      c.abort(
        new ShutdownError(
          "the gateway is shutting down and its shutdown grace ended before this request was scored; retry on another replica",
        ),
      );
    // Let the 503s be written, then close whatever is left.
    setImmediate(() => server.closeAllConnections());
  };
  /** Once nothing is being scored while draining: close the idle connections (the server then closes). */
  function drained() {
    if (draining && scoring.size === 0) {
      if (timer) clearTimeout(timer);
      server.closeIdleConnections();
    }
  }
  const close = (graceMs = defaultGraceMs): Promise<void> => {
    if (!(graceMs >= 0 && graceMs <= MAX_TIMER_MS))
      throw new RangeError(`the shutdown grace must be from 0 to ${MAX_TIMER_MS} ms, got ${graceMs}`);
    const at = Date.now() + graceMs;
    if (at < deadline) {
      deadline = at;
      if (timer) clearTimeout(timer);
      timer = setTimeout(cutOff, graceMs);
      timer.unref();
    }
    if (!closed) {
      draining = true;
      closed = new Promise<void>((resolve) => server.close(() => resolve())).finally(() =>
        clearTimeout(timer),
      );
      // Kept-alive connections with no request in progress are closed now; busy ones after their answer.
      server.closeIdleConnections();
      drained();
    }
    return closed;
  };
  return { url: `http://${host}:${port}`, port, inFlight: () => scoring.size, close };
}

/** The reason the end of the shutdown grace gives the requests it cancels. */
class ShutdownError extends Error {
  override readonly name = "ShutdownError";
}
