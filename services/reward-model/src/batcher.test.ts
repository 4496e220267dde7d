import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createBatcher } from "./batcher.js";

/** A batch function that records its batches; with `held`, each call waits until `releaseNext()`. */
function recorder(held = false) {
  const batches: number[][] = [];
  const waiting: (() => void)[] = [];
  return {
    batches,
    releaseNext: () => waiting.shift()?.(),
    run: async (items: readonly number[]) => {
      batches.push([...items]);
      if (held) await new Promise<void>((r) => waiting.push(r));
      return items.map((x) => x * 10);
    },
  };
}
const tick = () => new Promise((r) => setImmediate(r));

describe("dynamic batcher", () => {
  it("runs a full batch at once and the rest when the oldest request is due", async () => {
    const r = recorder();
    const b = createBatcher({ maxBatch: 3, maxWaitMs: 20, run: r.run });
    const out = await Promise.all([1, 2, 3, 4, 5].map((x) => b.submit(x)));
    assert.deepEqual(out, [10, 20, 30, 40, 50]);
    assert.deepEqual(r.batches, [
      [1, 2, 3],
      [4, 5],
    ]);
    assert.deepEqual(b.stats(), { batches: 2, items: 5, largestBatch: 3 });
  });

  it("with max batch 1, runs one request per call, in order", async () => {
    const r = recorder();
    const b = createBatcher({ maxBatch: 1, maxWaitMs: 5, run: r.run });
    assert.deepEqual(await Promise.all([1, 2, 3].map((x) => b.submit(x))), [10, 20, 30]);
    assert.deepEqual(r.batches, [[1], [2], [3]]);
  });

  it("collects requests that arrive while a batch runs into the next one", async () => {
    const r = recorder(true);
    const b = createBatcher({ maxBatch: 8, maxWaitMs: 0, run: r.run });
    const first = b.submit(1);
    await tick();
    const later = [2, 3, 4].map((x) => b.submit(x));
    await tick();
    assert.deepEqual(r.batches, [[1]], "one batch at a time");
    r.releaseNext();
    assert.equal(await first, 10);
    await tick();
    r.releaseNext();
    assert.deepEqual(await Promise.all(later), [20, 30, 40]);
    assert.deepEqual(r.batches, [[1], [2, 3, 4]]);
  });

  it("reruns a failing batch one item at a time: only the item that fails alone fails", async () => {
    const calls: number[][] = [];
    const b = createBatcher<number, number>({
      maxBatch: 4,
      maxWaitMs: 30,
      run: async (items) => {
        calls.push([...items]);
        if (items.includes(3)) throw new Error("item 3 does not fit");
        return items.map((x) => x * 10);
      },
    });
    const out = await Promise.allSettled([1, 2, 3, 4].map((x) => b.submit(x)));
    assert.deepEqual(
      out.map((o) => (o.status === "fulfilled" ? o.value : (o.reason as Error).message)),
      [10, 20, "item 3 does not fit", 40],
    );
    assert.deepEqual(calls, [[1, 2, 3, 4], [1], [2], [3], [4]]);
    assert.equal(b.stats().batches, 5);
  });

  it("a run that throws synchronously fails its items and the batcher keeps running", async () => {
    let first = true;
    const b = createBatcher<number, number>({
      maxBatch: 1,
      maxWaitMs: 0,
      run: (items) => {
        if (first) {
          first = false;
          throw new Error("sync failure");
        }
        return Promise.resolve(items.map((x) => x + 1));
      },
    });
    await assert.rejects(b.submit(1), /sync failure/);
    assert.equal(await b.submit(2), 3);
  });

  it("drops a queued request whose signal aborts, and fails the items whose call fails", async () => {
    const r = recorder();
    const b = createBatcher({ maxBatch: 4, maxWaitMs: 30, run: r.run });
    const ac = new AbortController();
    const gone = b.submit(1, ac.signal);
    const kept = b.submit(2);
    ac.abort(new Error("caller gave up"));
    await assert.rejects(gone, /caller gave up/);
    assert.equal(await kept, 20);
    assert.deepEqual(r.batches, [[2]]);
    const failing = createBatcher({
      maxBatch: 2,
      maxWaitMs: 0,
      run: async () => {
        throw new Error("model call failed");
      },
    });
    await assert.rejects(failing.submit(1), /model call failed/);
    const short = createBatcher<number, number>({ maxBatch: 2, maxWaitMs: 1, run: async () => [1] });
    const both = [short.submit(1), short.submit(2)];
    for (const p of both) await assert.rejects(p, /batch of 2 returned 1 outputs/);
  });
});
