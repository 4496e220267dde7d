/**
 * Dynamic batching: concurrent requests are collected into one model call of at most `maxBatch` items,
 * waiting at most `maxWaitMs` for a batch to fill: a batch runs when it is full or when its oldest request
 * has waited `maxWaitMs` (Triton's rule). One batch runs at a time (the model call itself uses ONNX
 * Runtime's intra-op threads); requests that arrive meanwhile form the next batch. A call that fails on a
 * batch of several items is made again for each item alone, so only the items that fail alone fail.
 * @module
 */

/** Options of {@link createBatcher}. */
export interface BatcherOptions<I, O> {
  /** Most items per call. */
  readonly maxBatch: number;
  /** Longest an item waits for a fuller batch. */
  readonly maxWaitMs: number;
  /** Runs one batch; returns one output per item, in order. */
  readonly run: (items: readonly I[]) => Promise<ArrayLike<O>>;
}

/** Sizes of the batches run so far (for statistics and tests). */
export interface BatcherStats {
  readonly batches: number;
  readonly items: number;
  readonly largestBatch: number;
}

/** A running batcher. */
export interface Batcher<I, O> {
  /** Queues `item`; resolves with its output. A queued item whose `signal` aborts is dropped and rejects. */
  submit(item: I, signal?: AbortSignal): Promise<O>;
  stats(): BatcherStats;
}

interface Pending<I, O> {
  readonly item: I;
  readonly resolve: (o: O) => void;
  readonly reject: (e: unknown) => void;
  readonly signal: AbortSignal | undefined;
  /** `performance.now()` when queued. */
  readonly at: number;
  readonly onAbort: () => void;
}

/** Creates a dynamic batcher around `options.run`. */
export function createBatcher<I, O>(options: BatcherOptions<I, O>): Batcher<I, O> {
  const queue: Pending<I, O>[] = [];
  let running = false;
  let timer: NodeJS.Timeout | undefined;
  let batches = 0;
  let items = 0;
  let largestBatch = 0;

  const settle = (batch: readonly Pending<I, O>[], outputs: ArrayLike<O>) => {
    if (outputs.length !== batch.length) {
      const err = new Error(`batch of ${batch.length} returned ${outputs.length} outputs`);
      for (const p of batch) p.reject(err);
      return;
    }
    for (const [i, p] of batch.entries()) p.resolve(outputs[i]!);
  };

  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (running || queue.length === 0) return;
    const batch = queue.splice(0, options.maxBatch);
    for (const p of batch) p.signal?.removeEventListener("abort", p.onAbort);
    running = true;
    batches++;
    items += batch.length;
    largestBatch = Math.max(largestBatch, batch.length);
    // `run` may throw synchronously: starting it inside a promise keeps `running` from sticking.
    const call = (part: readonly Pending<I, O>[]) =>
      Promise.resolve().then(() => options.run(part.map((p) => p.item)));
    call(batch)
      .then(
        (outputs) => settle(batch, outputs),
        async (err: unknown) => {
          if (batch.length === 1) {
            batch[0]!.reject(err);
            return;
          }
          // One bad item must not fail the others: each alone, one call at a time.
          for (const p of batch) {
            batches++;
            await call([p]).then(
              (outputs) => settle([p], outputs),
              (e: unknown) => p.reject(e),
            );
          }
        },
      )
      .finally(() => {
        running = false;
        schedule();
      });
  };

  /** Runs now when a batch is full or its oldest item is due, else when that item will be. */
  const schedule = () => {
    if (running || queue.length === 0) return;
    const due = queue[0]!.at + options.maxWaitMs - performance.now();
    if (queue.length >= options.maxBatch || due <= 0) flush();
    else timer ??= setTimeout(flush, due);
  };

  return {
    submit(item, signal) {
      return new Promise<O>((resolve, reject) => {
        if (signal?.aborted) {
          reject(signal.reason);
          return;
        }
        const pending: Pending<I, O> = {
          item,
          resolve,
          reject,
          signal,
          at: performance.now(),
          onAbort: () => {
            const i = queue.indexOf(pending);
            if (i >= 0) queue.splice(i, 1);
            reject(signal?.reason);
          },
        };
        signal?.addEventListener("abort", pending.onAbort, { once: true });
        queue.push(pending);
        schedule();
      });
    },
    stats: () => ({ batches, items, largestBatch }),
  };
}
