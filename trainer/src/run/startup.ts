/**
 * The trainer's start-up waits (`REWARD_MESH_START_WAIT_SECONDS`, {@link TrainingOptions.startWaitSeconds}):
 * in a cluster the trainer, the reward services and a GPU learner start together, so at start the
 * learner may not listen yet and a service may not have created its durable consumer yet. With a wait,
 * both are polled (250 ms doubling to 2 s) until the deadline; without one (0) they fail at once.
 * @module
 */

import { grpc } from "@reward-mesh/proto";
import {
  checkDomainsConsumed,
  isStartupTransient,
  type Logger,
  type MeshBus,
  retryUntil,
  UnavailableError,
  UnconsumedDomainError,
} from "@reward-mesh/sdk";
import { type Learner, type LearnerInfo, RemoteLearnerError } from "../learner/index.js";

/** Options of the start-up waits. */
export interface StartupWait {
  /** How long to wait in seconds; 0 = fail at once. */
  readonly seconds: number;
  readonly logger: Logger;
  /** Where the learner is (for the log line), e.g. `learner:50051`. */
  readonly learnerWhere?: string;
  /** Stops waiting (the last error is thrown). */
  readonly signal?: AbortSignal;
  /** Called before each sleep between attempts (tests). */
  readonly onRetry?: (kind: "learner" | "consumer", err: unknown) => void;
}

/** A learner that is not listening (yet): gRPC UNAVAILABLE. Never a configuration or input error. */
export function isLearnerNotListening(err: unknown): boolean {
  return err instanceof RemoteLearnerError && err.code === grpc.status.UNAVAILABLE;
}

/**
 * Polls `attempt` while it fails with an error `retryable` accepts and the wait lasts; `onWait` is
 * called before each retry. At the deadline, `gaveUp(lastError)`.
 */
async function poll<T>(
  w: StartupWait,
  kind: "learner" | "consumer",
  attempt: () => Promise<T>,
  retryable: (err: unknown) => boolean,
  onWait: (err: unknown) => void,
  gaveUp: (err: unknown) => Error,
): Promise<T> {
  return retryUntil(attempt, {
    deadline: Date.now() + w.seconds * 1000,
    retryable: (err) => w.seconds > 0 && retryable(err),
    gaveUp,
    onRetry: (err) => {
      onWait(err);
      w.onRetry?.(kind, err);
    },
    ...(w.signal ? { signal: w.signal } : {}),
  });
}

const after = (w: StartupWait) => `after waiting ${w.seconds} s`;

/** `learner.info()`, retried while the learner is not listening yet (within the wait). */
export async function learnerInfoWaiting(learner: Learner, w: StartupWait): Promise<LearnerInfo> {
  let logged = false;
  return poll(
    w,
    "learner",
    () => learner.info(),
    isLearnerNotListening,
    (err) => {
      if (logged) return;
      logged = true;
      w.logger.info(
        { learner: w.learnerWhere, waitSeconds: w.seconds, err: (err as Error).message },
        `waiting for the learner${w.learnerWhere ? ` at ${w.learnerWhere}` : ""}`,
      );
    },
    (err) => {
      const e = err as RemoteLearnerError;
      return new RemoteLearnerError(e.code, `${e.message} (${after(w)})`, e.retryable, { cause: e });
    },
  );
}

/**
 * `checkDomainsConsumed`, re-checked until every domain has a consumer (within the wait): a service
 * creates its durable consumer when it starts. NATS start-up errors are retried too; permission
 * violations are not.
 */
export async function waitForDomainsConsumed(
  bus: Pick<MeshBus, "jsm">,
  domains: ReadonlySet<string>,
  w: StartupWait,
): Promise<void> {
  const logged = new Set<string>();
  return poll(
    w,
    "consumer",
    () => checkDomainsConsumed(bus, domains),
    (err) => unconsumedDomain(err) !== undefined || isStartupTransient(err),
    (err) => {
      const d = unconsumedDomain(err);
      if (d === undefined || logged.has(d)) return;
      logged.add(d);
      w.logger.info({ domain: d, waitSeconds: w.seconds }, `waiting for a consumer of domain ${d}`);
    },
    (err) => {
      const why = err instanceof Error ? err.message : String(err);
      return new UnavailableError(`${why} (${after(w)})`, { cause: err });
    },
  );
}

/** The domain `checkDomainsConsumed`'s refusal names (none for any other error). */
function unconsumedDomain(err: unknown): string | undefined {
  return err instanceof UnconsumedDomainError ? err.domain : undefined;
}
