/**
 * A pool of worker threads that judge answers with a deadline. A judgement that runs past the time
 * limit (a pathological expression, a regex gone quadratic) gets its worker terminated and replaced,
 * and resolves as a timeout; the event loop never runs untrusted parsing. The deadline starts when
 * a ready worker takes the job, so a worker's start-up is never charged to an answer.
 * @module
 */
import { Worker } from "node:worker_threads";
import type { JudgeInput, Judgement } from "./judge.js";

/** Outcome of a pooled judgement. */
export type PoolOutcome =
  | { readonly kind: "ok"; readonly judgement: Judgement }
  | { readonly kind: "timeout"; readonly limitMs: number }
  /** The worker died on this judgement (out of memory, a bug): the judgement is ERROR with `reason`. */
  | { readonly kind: "failed"; readonly reason: string };

/** Options of {@link createJudgePool}. */
export interface JudgePoolOptions {
  /** Worker threads. */
  readonly workers: number;
  /** Time limit per judgement in milliseconds. */
  readonly timeLimitMs: number;
  /**
   * Heap limit of each worker (V8's old generation, MiB): a judgement that allocates past it kills
   * only its worker, which is replaced, and resolves as `failed`.
   * @default 512
   */
  readonly memoryLimitMb?: number;
}

/** A judging pool. */
export interface JudgePool {
  /** Judges `input` on a worker; rejects only when aborted or when the pool is closed. */
  judge(input: JudgeInput, signal?: AbortSignal): Promise<PoolOutcome>;
  /** Workers replaced after a timeout so far. */
  readonly timeouts: number;
  /** Terminates the workers; pending judgements reject. */
  close(): Promise<void>;
}

interface Job {
  readonly input: JudgeInput;
  readonly resolve: (o: PoolOutcome) => void;
  readonly reject: (e: Error) => void;
  readonly signal: AbortSignal | undefined;
}

interface Slot {
  worker: Worker;
  ready: boolean;
  job?: { id: number; job: Job; timer: NodeJS.Timeout };
}

const WORKER_URL = new URL("./judge-worker.mjs", import.meta.url);
const MAX_START_FAILURES = 3;

/** Starts `options.workers` judging threads (unref'd: they never keep a process alive). */
export function createJudgePool(options: JudgePoolOptions): JudgePool {
  const queue: Job[] = [];
  const slots: Slot[] = [];
  let nextId = 1;
  let closed = false;
  let timeouts = 0;
  // Workers that died before they were ready, in a row; past MAX_START_FAILURES the pool is broken
  // (a memory limit below start-up, a missing module) and answers `failed` instead of respawning forever.
  let startFailures = 0;
  let broken: string | undefined;

  const dispatch = () => {
    for (const slot of slots) {
      if (!slot.ready || slot.job) continue;
      let job = queue.shift();
      while (job?.signal?.aborted) {
        job.reject(new Error("aborted"));
        job = queue.shift();
      }
      if (!job) return;
      const id = nextId++;
      const timer = setTimeout(() => {
        timeouts++;
        slot.job = undefined;
        job.resolve({ kind: "timeout", limitMs: options.timeLimitMs });
        replace(slot);
      }, options.timeLimitMs);
      slot.job = { id, job, timer };
      slot.worker.postMessage({ id, input: job.input });
    }
  };

  const spawn = (slot: Slot) => {
    const worker = new Worker(WORKER_URL, {
      resourceLimits: { maxOldGenerationSizeMb: options.memoryLimitMb ?? 512 },
    });
    slot.worker = worker;
    slot.ready = false;
    worker.on("message", (msg: { ready?: true; id?: number; judgement?: Judgement; error?: string }) => {
      if (slot.worker !== worker) return;
      if (msg.ready) {
        slot.ready = true;
        startFailures = 0;
        dispatch();
        return;
      }
      const current = slot.job;
      if (!current || current.id !== msg.id) return;
      clearTimeout(current.timer);
      slot.job = undefined;
      if (msg.judgement) current.job.resolve({ kind: "ok", judgement: msg.judgement });
      else current.job.resolve({ kind: "failed", reason: `judging failed: ${msg.error}` });
      dispatch();
    });
    worker.on("error", (e) => {
      if (slot.worker !== worker) return;
      const current = slot.job;
      slot.job = undefined;
      if (current) {
        clearTimeout(current.timer);
        current.job.resolve({ kind: "failed", reason: `judging worker failed: ${e.message}` });
      }
      if (!slot.ready && ++startFailures >= MAX_START_FAILURES && !broken) {
        broken = `judging workers cannot start: ${e.message}`;
        for (const job of queue.splice(0)) job.resolve({ kind: "failed", reason: broken });
      }
      if (!closed && !broken) replace(slot);
    });
    // After the listeners (adding a 'message' listener refs the worker again): an idle pool never keeps
    // a process alive; while judgements are pending the workers are ref'd (see `hold`).
    if (pending === 0) worker.unref();
  };

  // Pending judgements (queued or running): while there are any, the workers keep the process alive.
  let pending = 0;
  const hold = (delta: 1 | -1) => {
    pending += delta;
    if (pending === 1 && delta === 1) for (const slot of slots) slot.worker.ref();
    if (pending === 0) for (const slot of slots) slot.worker.unref();
  };

  const replace = (slot: Slot) => {
    const old = slot.worker;
    if (!closed) spawn(slot);
    void old.terminate();
  };

  for (let k = 0; k < Math.max(1, options.workers); k++) {
    const slot = { ready: false } as Slot;
    spawn(slot);
    slots.push(slot);
  }

  return {
    judge(input, signal) {
      if (closed) return Promise.reject(new Error("the judging pool is closed"));
      if (broken) return Promise.resolve({ kind: "failed", reason: broken });
      hold(1);
      return new Promise<PoolOutcome>((resolve, reject) => {
        queue.push({ input, resolve, reject, signal });
        dispatch();
      }).finally(() => hold(-1));
    },
    get timeouts() {
      return timeouts;
    },
    async close() {
      closed = true;
      for (const job of queue.splice(0)) job.reject(new Error("the judging pool is closed"));
      await Promise.all(
        slots.map(async (slot) => {
          if (slot.job) {
            clearTimeout(slot.job.timer);
            slot.job.job.reject(new Error("the judging pool is closed"));
          }
          await slot.worker.terminate();
        }),
      );
    },
  };
}
