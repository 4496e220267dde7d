import { testBusOptions } from "../src/testing/index.js";
/**
 * A worker process for the crash test: `node --import tsx worker-process.fixture.ts <natsUrl> <instance> <delayMs>`.
 * Prints `scored <rolloutId>` per scored rollout (synchronously, so a SIGKILL loses no printed line)
 * and `ready` once consuming.
 */
import { writeSync } from "node:fs";
import { createLimiter, openBus, silentLogger, startWorker } from "../src/index.js";
import { createEchoService } from "./fixtures.js";

const [natsUrl, instance, delay] = process.argv.slice(2);
const bus = await openBus(testBusOptions(natsUrl!), instance!);
const worker = await startWorker(
  createEchoService({ delayMs: Number(delay), onScore: (id) => writeSync(1, `scored ${id}\n`) }),
  { bus, limiter: createLimiter(4), logger: silentLogger, instance: instance!, ackWaitMs: 1_000 },
);
writeSync(1, "ready\n");
process.once("SIGTERM", () => {
  worker
    .stop(5_000)
    .then(() => bus.close())
    .then(() => process.exit(0));
});
