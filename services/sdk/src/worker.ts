/**
 * The JetStream side of a reward service: one durable pull consumer per (service, domain) on
 * `MESH_ROLLOUTS`, shared by all replicas (work is spread, each message acked once).
 *
 * Per message: decode → validate → score (bounded by the service's limiter) → publish the
 * `RewardResult` on its own subject `mesh.rewards.<run>.<service>.<rollout>` → ack. The ack comes only
 * after the publish is stored, so a crash at any point loses nothing, and a redelivered rollout's
 * re-published result is refused by the server (the subject already holds one) and counted as a duplicate. Bad input (undecodable, invalid) goes to `mesh.dlq.<service>` with the reason and is
 * terminated; infrastructure errors are nak'ed with exponential back-off until `maxDeliver`, then
 * dead-lettered too. Nothing is retried forever and nothing is dropped silently.
 * @module
 */
import { setMaxListeners } from "node:events";
import { fromBinary } from "@bufbuild/protobuf";
import {
  AckPolicy,
  type ConsumerConfig,
  type ConsumerMessages,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JsMsg,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import { type Rollout, RolloutSchema } from "@reward-mesh/proto";
import type { MeshBus } from "./bus.js";
import { publishDeadLetter, publishReward } from "./bus.js";
import { isInvalidArgumentError } from "./errors.js";
import type { Limiter } from "./limiter.js";
import type { Logger } from "./logger.js";
import type { RewardServiceDefinition } from "./service.js";
import { consumerName, Streams } from "./subjects.js";
import { extractFromHeaders, inSpan, meshMeter, rolloutSpanAttributes } from "./telemetry.js";

/** Whether a NATS server `version` ("2.9.10") is at least `want`; unknown versions count as older. */
export function serverAtLeast(version: string | undefined, want: readonly [number, number, number]): boolean {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version ?? "");
  if (!m) return false;
  const have = [Number(m[1]), Number(m[2]), Number(m[3])];
  for (let i = 0; i < 3; i++) if (have[i]! !== want[i]) return have[i]! > want[i]!;
  return true;
}

/** Options of {@link startWorker}. */
export interface WorkerOptions {
  readonly bus: MeshBus;
  readonly limiter: Limiter;
  readonly logger: Logger;
  /** Identifies this replica in the `Mesh-Instance` header of published rewards. */
  readonly instance: string;
  /** @default 30000 */
  readonly ackWaitMs?: number;
  /** Deliveries after which a failing message is dead-lettered. @default 10 */
  readonly maxDeliver?: number;
  /** Back-off of a failed delivery: this × 2^(deliveries−1), capped, times a jitter in [0.5, 1] ({@link nakDelay}). @default 500 */
  readonly nakBackoffMs?: number;
  /** @default 30000 */
  readonly nakBackoffMaxMs?: number;
}

/** Counters of one worker. */
export interface WorkerStats {
  /** Rewards published and acked. */
  readonly scored: number;
  /** Publishes JetStream reported as duplicates (a redelivered rollout scored again). */
  readonly duplicates: number;
  readonly deadLettered: number;
  readonly naked: number;
}

/** A running worker. */
export interface RunningWorker {
  readonly stats: () => WorkerStats;
  /**
   * Graceful drain: stop pulling, hand back buffered messages, let in-flight scoring finish for up to
   * `graceMs` (then abort it; those messages are nak'ed and redelivered elsewhere).
   */
  stop(graceMs?: number): Promise<void>;
}

/** Creates or updates the durable consumer of `service` for `domain`. */
export async function ensureConsumer(
  bus: MeshBus,
  service: string,
  domain: string,
  ackWaitMs: number,
): Promise<string> {
  const durable = consumerName(service, domain);
  const want: Partial<ConsumerConfig> = {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: `mesh.rollouts.${domain}.>`,
    ack_wait: nanos(ackWaitMs),
    // Give-up is ours (to dead-letter with a reason), not the server's silent drop.
    max_deliver: -1,
    max_ack_pending: 10_000,
  };
  try {
    const info = await bus.jsm.consumers.info(Streams.rollouts, durable);
    if (info.config.ack_wait !== want.ack_wait)
      await bus.jsm.consumers.update(Streams.rollouts, durable, { ack_wait: want.ack_wait });
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound)) throw err;
    await bus.jsm.consumers.add(Streams.rollouts, want);
  }
  return durable;
}

/**
 * The nak delay of a message's `deliveryCount`-th failed delivery: exponential back-off from `baseMs`,
 * capped at `maxMs`, times a random factor in [0.5, 1] ("equal jitter"). Without the jitter, rollouts
 * that failed together (one remote stream, one outage) would be redelivered together and fail together
 * again, delivery after delivery. `random` is `Math.random` unless a test passes its own.
 */
export function nakDelay(
  deliveryCount: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, deliveryCount - 1));
  const factor = 0.5 + 0.5 * Math.min(1, Math.max(0, random()));
  return Math.round(ceiling * factor);
}

/** Starts consuming every domain of `def`. */
export async function startWorker(
  def: RewardServiceDefinition,
  options: WorkerOptions,
): Promise<RunningWorker> {
  const { bus, limiter, instance } = options;
  const logger = options.logger.child({ component: "worker", instance });
  const ackWaitMs = options.ackWaitMs ?? 30_000;
  const maxDeliver = options.maxDeliver ?? 10;
  const backoffBase = options.nakBackoffMs ?? 500;
  const backoffMax = options.nakBackoffMaxMs ?? 30_000;
  const maxInFlight = limiter.capacity * 2;
  const abort = new AbortController();
  // Every in-flight message listens on the one shutdown signal (limiter wait + score function).
  setMaxListeners(maxInFlight * 2 + 10, abort.signal);
  let stopping = false;
  let inFlight = 0;
  // One consume loop per domain; all of them may be waiting for a free slot at once.
  const loopWaiters = new Set<() => void>();
  const wakeLoops = () => {
    for (const w of [...loopWaiters]) w();
    loopWaiters.clear();
  };
  let wakeIdle: (() => void) | undefined;
  const stats = { scored: 0, duplicates: 0, deadLettered: 0, naked: 0 };
  const meter = meshMeter();
  // Outcome of each delivery: scored (published), duplicate, dead_lettered, retried (nak'ed); observed
  // from `stats` at collection time (a synchronous counter hashes its attributes on every add).
  const outcomes = meter.createObservableCounter("reward_mesh_rollouts", {
    description: "Rollouts taken from JetStream, per service and outcome",
  });
  const observeOutcomes = (r: { observe(v: number, a: Record<string, string>): void }) => {
    const observed: [string, number][] = [
      ["scored", stats.scored - stats.duplicates],
      ["duplicate", stats.duplicates],
      ["dead_lettered", stats.deadLettered],
      ["retried", stats.naked],
    ];
    for (const [outcome, n] of observed) if (n > 0) r.observe(n, { service: def.name, outcome });
  };
  outcomes.addCallback(observeOutcomes);
  const dlqCounter = meter.createCounter("reward_mesh_dead_letters", {
    description: "Rollouts dead-lettered to mesh.dlq.<service>",
  });
  // Consumer lag: messages not yet delivered to this durable, read from the server at scrape time.
  const pending = meter.createObservableGauge("reward_mesh_consumer_pending", {
    description: "Messages of MESH_ROLLOUTS not yet delivered to the durable (consumer lag)",
  });
  const durables: string[] = [];
  const observePending = async (r: { observe(v: number, a: Record<string, string>): void }) => {
    for (const durable of durables) {
      try {
        const info = await bus.jsm.consumers.info(Streams.rollouts, durable);
        r.observe(info.num_pending, { service: def.name, durable });
        r.observe(info.num_ack_pending, { service: def.name, durable, state: "ack_pending" });
      } catch {
        // The server is away (reconnecting): no sample this scrape.
      }
    }
  };
  pending.addCallback(observePending);

  // The version of the server this client connected to: in a cluster mid-upgrade another server (the
  // consumer's leader) may be older; then a TERM with a reason is redelivered once more, no worse than 2.9.
  const termTakesReason = serverAtLeast(bus.nc.info?.version, [2, 10, 4]);
  const deadLetter = async (m: JsMsg, reason: string): Promise<boolean> => {
    try {
      await publishDeadLetter(bus.js, {
        service: def.name,
        subject: m.subject,
        reason,
        payload: m.data,
        streamSequence: BigInt(m.info.streamSequence),
        deliveries: m.info.deliveryCount,
      });
      // A reason on the TERM ack needs NATS >= 2.10.4; an older server (Debian's 2.9) does not take
      // "+TERM <reason>" for a TERM, so the message came back every ack_wait and was dead-lettered
      // again each time. The dead letter holds the reason either way.
      if (termTakesReason) m.term(reason.slice(0, 200));
      else m.term();
      stats.deadLettered++;
      dlqCounter.add(1, { service: def.name });
      logger.warn({ subject: m.subject, seq: m.info.streamSequence, reason }, "dead-lettered");
      return true;
    } catch (err) {
      // The DLQ is unreachable: keep the message for a later delivery rather than drop it.
      logger.error({ err, seq: m.info.streamSequence }, "dead-letter publish failed; nak");
      m.nak(backoffBase);
      stats.naked++;
      return false;
    }
  };

  const consumeSpan = `reward/${def.name}/consume`;
  const publishSpan = `reward/${def.name}/publish`;
  const handle = async (m: JsMsg) => {
    const parent = extractFromHeaders(m.headers);
    await inSpan(
      consumeSpan,
      parent,
      () => ({
        "messaging.system": "nats",
        "messaging.destination.name": m.subject,
        "messaging.message.delivery_count": m.info.deliveryCount,
      }),
      async (span, ctx) => {
        let rollout: Rollout;
        try {
          rollout = fromBinary(RolloutSchema, m.data);
        } catch (err) {
          await deadLetter(
            m,
            `payload is not a rewardmesh.v1.Rollout: ${err instanceof Error ? err.message : String(err)}`,
          );
          return;
        }
        const rolloutAttributes = () => ({ "reward.service": def.name, ...rolloutSpanAttributes(rollout) });
        if (span.isRecording()) span.setAttributes(rolloutAttributes());
        // Long scores (sandboxes) keep the message: tell JetStream we are working before ack_wait ends.
        const keepAlive = setInterval(() => m.working(), Math.max(50, Math.floor(ackWaitMs / 2)));
        try {
          const result = await limiter.run(
            () =>
              def.scoreRollout(rollout, {
                signal: abort.signal,
                logger,
                parentContext: ctx,
                transport: "jetstream",
              }),
            abort.signal,
          );
          const ack = await inSpan(publishSpan, ctx, rolloutAttributes, (_s, pctx) =>
            publishReward(bus.js, result, instance, pctx),
          );
          if (ack.duplicate) stats.duplicates++;
          m.ack();
          stats.scored++;
        } catch (err) {
          if (isInvalidArgumentError(err)) {
            await deadLetter(m, err.message);
            return;
          }
          const msg = err instanceof Error ? err.message : String(err);
          if (m.info.deliveryCount >= maxDeliver) {
            await deadLetter(m, `gave up after ${m.info.deliveryCount} deliveries: ${msg}`);
            return;
          }
          const delay = nakDelay(m.info.deliveryCount, backoffBase, backoffMax);
          logger.warn({ err: msg, seq: m.info.streamSequence, delay }, "scoring failed; nak with back-off");
          m.nak(delay);
          stats.naked++;
        } finally {
          clearInterval(keepAlive);
        }
      },
    );
  };

  const loops: Promise<void>[] = [];
  const subscriptions: ConsumerMessages[] = [];
  for (const domain of def.domains) {
    const durable = await ensureConsumer(bus, def.name, domain, ackWaitMs);
    durables.push(durable);
    const consumer = await bus.js.consumers.get(Streams.rollouts, durable);
    const msgs = await consumer.consume({ max_messages: maxInFlight });
    subscriptions.push(msgs);
    logger.info({ durable, domain }, "consuming");
    loops.push(
      (async () => {
        for await (const m of msgs) {
          while (inFlight >= maxInFlight && !stopping) await new Promise<void>((r) => loopWaiters.add(r));
          if (stopping) {
            m.nak(); // hand it back at once so another replica takes it
            continue;
          }
          inFlight++;
          handle(m)
            .catch((err: unknown) => logger.error({ err }, "unexpected worker failure"))
            .finally(() => {
              inFlight--;
              wakeLoops();
              if (inFlight === 0) wakeIdle?.();
            });
        }
      })(),
    );
  }

  return {
    stats: () => ({ ...stats }),
    async stop(graceMs = 10_000) {
      if (stopping) return;
      stopping = true;
      pending.removeCallback(observePending);
      for (const s of subscriptions) s.stop();
      wakeLoops();
      if (inFlight > 0) {
        const timer = setTimeout(() => abort.abort(new Error("worker stopping")), graceMs);
        timer.unref();
        while (inFlight > 0) await new Promise<void>((r) => (wakeIdle = r));
        clearTimeout(timer);
      }
      await Promise.allSettled(loops);
    },
  };
}
