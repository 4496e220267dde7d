/**
 * `rewardmesh.v1.AgentEnvironment`: interactive AgentDojo environments for rollout generation.
 * `Reset(task)` opens a session (fresh environment with the task's injections, system prompt, user
 * prompt, tool schemas), `Call` runs one tool and returns what the agent sees (the injection included),
 * `Close` returns the trajectory in the JSON layout the reward service scores. Sessions are bounded in
 * number (a `Reset` at the limit evicts the least recently used session if it has been idle for at
 * least `minEvictIdleMs`, else it is UNAVAILABLE: live episodes are never evicted) and idle time (then
 * NOT_FOUND); every session accepts at most `maxCalls` calls.
 *
 * It runs on its own grpc-js server (with gRPC health) because the sdk's server registers only
 * RewardService; `main.ts` starts both.
 * @module
 */
import { randomUUID } from "node:crypto";
import { AgentEnvironment, type AgentTask, type ServiceImpl } from "@reward-mesh/proto";
import { grpcService, type HostedService, type Logger } from "@reward-mesh/sdk";
import {
  type CallRecord,
  callInEpisode,
  type Episode,
  type EpisodeOptions,
  resolveEpisode,
  startEpisode,
  unknownSuite,
} from "./episode.js";
import { invalidRequest, sessionEvicted, sessionNotFound, tooManySessions } from "./errors.js";
import { toolSchemas } from "./runtime.js";
import { ATTACK_NAMES, injectionCandidates } from "./attacks.js";
import type { AnySuite, FunctionCall } from "./suite.js";
import { SUITES } from "./suites/index.js";
import { MAX_ARGUMENT_DEPTH, nestsDeeperThan, trajectoryJson } from "./trajectory.js";

/** Largest `arguments_json` a call may carry. */
export const MAX_ARGUMENTS_BYTES = 64 * 1024;
/** Largest `final_answer` `Close` accepts. */
export const MAX_FINAL_ANSWER_BYTES = 256 * 1024;

/** Options of {@link createSessionManager}. */
export interface SessionManagerOptions extends EpisodeOptions {
  /** Most open sessions (an integer ≥ 1). */
  readonly maxSessions: number;
  /** A session without a call for this long is dropped (> 0). */
  readonly idleTimeoutMs: number;
  /**
   * A `Reset` at `maxSessions` evicts the least recently used session only when it has had no call for
   * this long; otherwise the `Reset` is UNAVAILABLE (retryable), so a live episode is never cut short.
   * @default min(idleTimeoutMs, 30000)
   */
  readonly minEvictIdleMs?: number;
  readonly maxCalls: number;
  /** Clock (tests). @default Date.now */
  readonly now?: () => number;
}

interface Session {
  readonly id: string;
  readonly episode: Episode;
  readonly records: CallRecord[];
  lastUsed: number;
}

/** What `Reset` returns (the `ResetResponse` fields). */
export interface ResetResult {
  readonly sessionId: string;
  readonly systemPrompt: string;
  readonly userPrompt: string;
  readonly toolsJson: string;
  readonly maxCalls: number;
  readonly idleTimeoutMs: number;
}

/** What `Call` returns (the `CallResponse` fields). */
export interface CallResult {
  readonly output: string;
  readonly error: string;
  readonly callIndex: number;
}

/** What `Close` returns (the `CloseResponse` fields). */
export interface CloseResult {
  readonly trajectoryJson: string;
  readonly callCount: number;
}

/** What `ListTasks` returns (the `ListTasksResponse` fields). */
export type ListTasksResult = Awaited<ReturnType<ServiceImpl<typeof AgentEnvironment>["listTasks"]>>;

/** The sessions of one AgentEnvironment server. */
export interface SessionManager {
  /** The suites and tasks served (`ListTasks`); an unknown suite in `suites` is INVALID_ARGUMENT. */
  listTasks(suites: readonly string[], includeGroundTruth: boolean): ListTasksResult;
  reset(task: AgentTask | undefined): ResetResult;
  call(sessionId: string, fn: string, argumentsJson: string): CallResult;
  close(sessionId: string, finalAnswer: string): CloseResult;
  /** Drops idle sessions now (also done periodically and on every `reset`). */
  sweep(): void;
  readonly size: number;
  /** Stops the periodic sweep and drops every session. */
  stop(): void;
}

const callsJson = (calls: readonly FunctionCall[]) =>
  JSON.stringify(calls.map((c) => ({ function: c.function, args: c.args })));

/** One suite's listing: tasks in the suite's order; ground truths on its initial (clean) environment. */
function listSuite(suite: AnySuite, tools: string, withGroundTruth: boolean) {
  return {
    name: suite.name,
    benchmarkVersion: suite.benchmarkVersion,
    systemPrompt: suite.systemPrompt,
    toolsJson: tools,
    userTasks: suite.userTasks.map((t) => {
      const pre = withGroundTruth
        ? startEpisode({ suite, userTask: t, injectionTask: undefined, attack: undefined, injections: {} })
            .pre
        : undefined;
      return {
        id: t.id,
        prompt: t.prompt,
        injectable: injectionCandidates(suite, t).length > 0,
        ...(pre
          ? { groundTruthJson: callsJson(t.groundTruth(pre)), groundTruthOutput: t.groundTruthOutput ?? "" }
          : {}),
      };
    }),
    injectionTasks: suite.injectionTasks.map((t) => ({
      id: t.id,
      goal: t.goal,
      ...(withGroundTruth ? { groundTruthJson: callsJson(t.groundTruth(suite.loadEnvironment({}))) } : {}),
    })),
  };
}

/** The limits of {@link createSessionManager}, checked; returns the effective `minEvictIdleMs`. */
function checkLimits(o: SessionManagerOptions): number {
  if (!Number.isInteger(o.maxSessions) || o.maxSessions < 1)
    throw new RangeError(`maxSessions must be an integer of at least 1, got ${o.maxSessions}`);
  if (!(o.idleTimeoutMs > 0))
    throw new RangeError(`idleTimeoutMs must be more than 0, got ${o.idleTimeoutMs}`);
  const min = o.minEvictIdleMs ?? Math.min(o.idleTimeoutMs, 30_000);
  if (!(min >= 0)) throw new RangeError(`minEvictIdleMs must be 0 or more, got ${o.minEvictIdleMs}`);
  return min;
}

/** How many evicted session ids are remembered (to say "evicted" rather than "unknown"). */
const EVICTED_MEMORY = 4096;

/**
 * Creates a session manager (and its periodic idle sweep, unref'd). Sessions live in a `Map` kept in
 * least-recently-used order (a session is moved to the end on every use), so both evictions take the
 * oldest-idle first: the sweep drops expired sessions from the front and stops at the first live one,
 * and a `Reset` at the limit evicts the least recently used session if it has been idle for
 * `minEvictIdleMs` (its next call is NOT_FOUND saying so), else answers UNAVAILABLE. Memory is bounded:
 * at most `maxSessions` sessions of at most `maxCalls` calls each. Throws a `RangeError` for a
 * `maxSessions` that is not an integer ≥ 1, an `idleTimeoutMs` that is not > 0 or a negative
 * `minEvictIdleMs`.
 */
export function createSessionManager(o: SessionManagerOptions): SessionManager {
  const minEvictIdleMs = checkLimits(o);
  const now = o.now ?? Date.now;
  const sessions = new Map<string, Session>();
  const evicted = new Set<string>();
  const schemaCache = new WeakMap<AnySuite, string>();
  const schemasOf = (suite: AnySuite) => {
    let s = schemaCache.get(suite);
    if (s === undefined) {
      s = JSON.stringify(toolSchemas(suite));
      schemaCache.set(suite, s);
    }
    return s;
  };
  const sweep = () => {
    const t = now();
    for (const [id, s] of sessions) {
      if (t - s.lastUsed <= o.idleTimeoutMs) break; // LRU order: the rest were used later
      sessions.delete(id);
    }
  };
  /** Evicts the least recently used session if it has been idle long enough; false if none has. */
  const evictOldest = (): boolean => {
    const oldest = sessions.values().next();
    if (oldest.done || now() - oldest.value.lastUsed < minEvictIdleMs) return false;
    sessions.delete(oldest.value.id);
    evicted.add(oldest.value.id);
    if (evicted.size > EVICTED_MEMORY) evicted.delete(evicted.values().next().value!);
    return true;
  };
  const timer = setInterval(sweep, Math.min(o.idleTimeoutMs, 60_000));
  timer.unref();
  const get = (id: string): Session => {
    const s = sessions.get(id);
    if (!s) throw evicted.has(id) ? sessionEvicted(id, o.maxSessions) : sessionNotFound(id);
    sessions.delete(id);
    if (now() - s.lastUsed > o.idleTimeoutMs) throw sessionNotFound(id);
    s.lastUsed = now();
    sessions.set(id, s); // most recently used: to the end
    return s;
  };
  const suites = o.suites ?? SUITES;
  const listings = new Map<string, ReturnType<typeof listSuite>>();
  return {
    listTasks(names, includeGroundTruth) {
      for (const [i, n] of names.entries())
        if (!suites.has(n)) throw invalidRequest(`suites[${i}]`, unknownSuite(n, suites));
      const wanted = names.length === 0 ? [...suites.keys()] : [...new Set(names)];
      return {
        suites: wanted.map((n) => {
          const suite = suites.get(n)!;
          if (!includeGroundTruth) return listSuite(suite, schemasOf(suite), false);
          let l = listings.get(n); // ground truths are pure functions of the suite: computed once
          if (l === undefined) {
            l = listSuite(suite, schemasOf(suite), true);
            listings.set(n, l);
          }
          return l;
        }),
        attacks: [...ATTACK_NAMES],
        defaultAttack: o.defaultAttack,
      };
    },
    reset(task) {
      const spec = resolveEpisode(task, "task", o);
      sweep();
      while (sessions.size >= o.maxSessions)
        if (!evictOldest()) throw tooManySessions(o.maxSessions, minEvictIdleMs);
      const id = randomUUID();
      sessions.set(id, { id, episode: startEpisode(spec), records: [], lastUsed: now() });
      return {
        sessionId: id,
        systemPrompt: spec.suite.systemPrompt,
        userPrompt: spec.userTask.prompt,
        toolsJson: schemasOf(spec.suite),
        maxCalls: o.maxCalls,
        idleTimeoutMs: o.idleTimeoutMs,
      };
    },
    call(sessionId, fn, argumentsJson) {
      if (fn === "") throw invalidRequest("function", "is required");
      if (Buffer.byteLength(argumentsJson, "utf8") > MAX_ARGUMENTS_BYTES)
        throw invalidRequest("arguments_json", `must be at most ${MAX_ARGUMENTS_BYTES} bytes`);
      const s = get(sessionId);
      if (s.records.length >= o.maxCalls)
        throw invalidRequest("session_id", `has reached the call limit (${o.maxCalls} calls); close it`);
      let args: unknown = {};
      if (argumentsJson.trim() !== "") {
        try {
          args = JSON.parse(argumentsJson);
        } catch {
          args = argumentsJson; // recorded as given; the runtime reports a ValidationError, as replay will
        }
      }
      if (nestsDeeperThan(args, MAX_ARGUMENT_DEPTH))
        throw invalidRequest("arguments_json", `must not nest deeper than ${MAX_ARGUMENT_DEPTH} levels`);
      const r = callInEpisode(s.episode, { function: fn, args: args as Record<string, unknown> });
      s.records.push(r);
      return { output: r.output, error: r.error, callIndex: s.records.length - 1 };
    },
    close(sessionId, finalAnswer) {
      if (Buffer.byteLength(finalAnswer, "utf8") > MAX_FINAL_ANSWER_BYTES)
        throw invalidRequest("final_answer", `must be at most ${MAX_FINAL_ANSWER_BYTES} bytes`);
      const s = get(sessionId);
      sessions.delete(sessionId);
      return {
        trajectoryJson: trajectoryJson(
          s.records.map((r) => r.call),
          finalAnswer,
        ),
        callCount: s.records.length,
      };
    },
    sweep,
    get size() {
      return sessions.size;
    },
    stop() {
      clearInterval(timer);
      sessions.clear();
      evicted.clear();
    },
  };
}

/** The typed AgentEnvironment handlers over a session manager. */
export function createAgentEnvironmentImpl(manager: SessionManager): ServiceImpl<typeof AgentEnvironment> {
  return {
    async listTasks(req) {
      return manager.listTasks(req.suites, req.includeGroundTruth);
    },
    async reset(req) {
      return manager.reset(req.task);
    },
    async call(req) {
      return manager.call(req.sessionId, req.function, req.argumentsJson);
    },
    async close(req) {
      return manager.close(req.sessionId, req.finalAnswer);
    },
  };
}

/** The AgentEnvironment service with its handlers, to host beside the RewardService (one port). */
export function agentEnvironmentService(manager: SessionManager, logger?: Logger): HostedService {
  return grpcService(AgentEnvironment, createAgentEnvironmentImpl(manager), logger);
}
