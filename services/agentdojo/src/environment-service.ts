/**
 * `rewardmesh.v1.AgentEnvironment`: interactive AgentDojo environments for rollout generation.
 * `Reset(task)` opens a session (fresh environment with the task's injections, system prompt, user
 * prompt, tool schemas), `Call` runs one tool and returns what the agent sees (the injection included),
 * `Close` returns the trajectory in the JSON layout the reward service scores. Sessions are bounded in
 * number (`Reset` beyond the limit is UNAVAILABLE) and idle time (then NOT_FOUND); every session
 * accepts at most `maxCalls` calls.
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
} from "./episode.js";
import { invalidRequest, sessionNotFound, tooManySessions } from "./errors.js";
import { toolSchemas } from "./runtime.js";
import type { AnySuite } from "./suite.js";
import { MAX_ARGUMENT_DEPTH, nestsDeeperThan, trajectoryJson } from "./trajectory.js";

/** Largest `arguments_json` a call may carry. */
export const MAX_ARGUMENTS_BYTES = 64 * 1024;
/** Largest `final_answer` `Close` accepts. */
export const MAX_FINAL_ANSWER_BYTES = 256 * 1024;

/** Options of {@link createSessionManager}. */
export interface SessionManagerOptions extends EpisodeOptions {
  readonly maxSessions: number;
  readonly idleTimeoutMs: number;
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

/** The sessions of one AgentEnvironment server. */
export interface SessionManager {
  reset(task: AgentTask | undefined): ResetResult;
  call(sessionId: string, fn: string, argumentsJson: string): CallResult;
  close(sessionId: string, finalAnswer: string): CloseResult;
  /** Drops idle sessions now (also done periodically and on every `reset`). */
  sweep(): void;
  readonly size: number;
  /** Stops the periodic sweep and drops every session. */
  stop(): void;
}

/** Creates a session manager (and its periodic idle sweep, unref'd). */
export function createSessionManager(o: SessionManagerOptions): SessionManager {
  const now = o.now ?? Date.now;
  const sessions = new Map<string, Session>();
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
    for (const [id, s] of sessions) if (t - s.lastUsed > o.idleTimeoutMs) sessions.delete(id);
  };
  const timer = setInterval(sweep, Math.min(o.idleTimeoutMs, 60_000));
  timer.unref();
  const get = (id: string): Session => {
    const s = sessions.get(id);
    if (!s) throw sessionNotFound(id);
    if (now() - s.lastUsed > o.idleTimeoutMs) {
      sessions.delete(id);
      throw sessionNotFound(id);
    }
    s.lastUsed = now();
    return s;
  };
  return {
    reset(task) {
      const spec = resolveEpisode(task, "task", o);
      sweep();
      if (sessions.size >= o.maxSessions) throw tooManySessions(o.maxSessions);
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
    },
  };
}

/** The typed AgentEnvironment handlers over a session manager. */
export function createAgentEnvironmentImpl(manager: SessionManager): ServiceImpl<typeof AgentEnvironment> {
  return {
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
