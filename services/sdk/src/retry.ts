/**
 * Retrying a start-up step until a deadline: the one back-off the mesh's waits share (the bus waiting
 * for NATS and its streams, the trainer waiting for its learner and consumers).
 * @module
 */

/** Options of {@link retryUntil}. */
export interface RetryUntilOptions {
  /** Epoch ms after which no attempt starts: the last error goes to {@link gaveUp}. */
  readonly deadline: number;
  /** Whether a failure may be retried; any other error is thrown as it is, at once. */
  readonly retryable: (err: unknown) => boolean;
  /** The error thrown when a retryable failure meets the deadline. */
  readonly gaveUp: (err: unknown) => Error;
  /** Called before each sleep, with the failure, its attempt number (from 1) and the delay to come. */
  readonly onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  /** Stops retrying: the last error is thrown. */
  readonly signal?: AbortSignal;
  /** @default 250 — doubling up to {@link maxDelayMs} */
  readonly firstDelayMs?: number;
  /** @default 2000 */
  readonly maxDelayMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `attempt` until it succeeds, polling with a doubling delay while its failures are retryable. */
export async function retryUntil<T>(attempt: (n: number) => Promise<T>, o: RetryUntilOptions): Promise<T> {
  const max = o.maxDelayMs ?? 2000;
  for (let n = 1, delay = o.firstDelayMs ?? 250; ; n++, delay = Math.min(2 * delay, max)) {
    try {
      return await attempt(n);
    } catch (err) {
      if (!o.retryable(err)) throw err;
      if (Date.now() + delay > o.deadline) throw o.gaveUp(err);
      if (o.signal?.aborted) throw err;
      o.onRetry?.(err, n, delay);
      await sleep(delay);
    }
  }
}
