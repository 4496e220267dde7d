// Loaded into the service under test by `bench/soak.bench.ts` (NODE_OPTIONS=--import <this file>):
// appends one JSON line of `process.memoryUsage()` and the V8 heap spaces to SOAK_PROBE_FILE every
// SOAK_PROBE_MS. Plain JavaScript so it loads before tsx; it touches nothing of the service.
// With SOAK_PROBE_GC=1 (and --expose-gc) it runs a full GC before each sample: the live heap, to tell
// garbage waiting for the next major GC from memory that is really retained.
import { appendFileSync } from "node:fs";
import { getHeapSpaceStatistics } from "node:v8";

const file = process.env.SOAK_PROBE_FILE;
const every = Number(process.env.SOAK_PROBE_MS ?? 1000);
const MB = 1024 * 1024;
if (file) {
  const forceGc = process.env.SOAK_PROBE_GC === "1" && typeof globalThis.gc === "function";
  const sample = () => {
    if (forceGc) globalThis.gc();
    const m = process.memoryUsage();
    const spaces = {};
    for (const s of getHeapSpaceStatistics()) spaces[s.space_name] = +(s.space_size / MB).toFixed(2);
    appendFileSync(
      file,
      `${JSON.stringify({
        t: Date.now(),
        rss: m.rss,
        heapTotal: m.heapTotal,
        heapUsed: m.heapUsed,
        external: m.external,
        arrayBuffers: m.arrayBuffers,
        afterGc: forceGc,
        spacesMb: spaces,
      })}\n`,
    );
  };
  sample();
  setInterval(sample, every).unref();
}
