/**
 * A counting semaphore bounding concurrent scoring (verl `limited.py` style).
 * @module
 */

/** Bounds how many tasks run at once. */
export interface Limiter {
  /** Runs `fn` once a slot is free; rejects with `signal.reason` if aborted while waiting. */
  run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Tasks running now. */
  readonly active: number;
  /** Tasks waiting for a slot. */
  readonly waiting: number;
  readonly capacity: number;
}

/** Creates a {@link Limiter} with `capacity` slots. */
export function createLimiter(capacity: number): Limiter {
  if (!Number.isInteger(capacity) || capacity < 1)
    throw new RangeError(`capacity must be an integer >= 1, got ${capacity}`);
  let active = 0;
  const queue: Array<() => void> = [];
  const release = () => {
    active--;
    const next = queue.shift();
    if (next) next();
  };
  const acquire = (signal?: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      if (active < capacity) {
        active++;
        return resolve();
      }
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        active++;
        resolve();
      };
      const onAbort = () => {
        const i = queue.indexOf(grant);
        if (i >= 0) queue.splice(i, 1);
        reject(signal?.reason);
      };
      queue.push(grant);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  return {
    async run(fn, signal) {
      await acquire(signal);
      try {
        return await fn();
      } finally {
        release();
      }
    },
    get active() {
      return active;
    },
    get waiting() {
      return queue.length;
    },
    capacity,
  };
}
