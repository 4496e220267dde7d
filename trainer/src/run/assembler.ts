/**
 * GroupAssembler: collects the `RewardResult`s of a run from `mesh.rewards.<run>.>` (a durable JetStream
 * consumer shared by nothing else) into groups. A group is complete when every rollout has a result from
 * every service expected for its domain. Duplicates (redeliveries, re-published results, replays) are
 * ignored by `(rollout, service)`; results that arrive before their group is registered (out of order,
 * or after a restart) are held until it is; results of steps already applied are late and dropped.
 *
 * Provenance: a result counts only when its payload's run, service and rollout are the ones its subject
 * `mesh.rewards.<run>.<service>.<rollout>` names — the subject is what NATS lets only that service publish
 * to, so a service cannot pass off a result as another's (counted as `mismatched` and ignored).
 * Results are offered to the `admit` check first (the run's result validation, `validation.ts`): a
 * rejected result is never placed, so its slot stays empty as if it had never come.
 *
 * Restart safety: results are acked as soon as they are held in memory, and a restarted trainer replays
 * the stream from the start of the step in progress (`replaySince`), so a crash loses no complete group.
 * @module
 */
import { fromBinary } from "@bufbuild/protobuf";
import {
  AckPolicy,
  type ConsumerMessages,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JsMsg,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { SpanContext } from "@opentelemetry/api";
import { type RewardResult, RewardResultSchema } from "@reward-mesh/proto";
import {
  checkSubjectToken,
  extractFromHeaders,
  type Logger,
  type MeshBus,
  parseRewardSubject,
  silentLogger,
  spanContextOf,
  Streams,
} from "@reward-mesh/sdk";

/** A group the trainer published and waits for. */
export interface ExpectedGroup {
  readonly groupId: string;
  readonly step: number;
  /** Rollout ids by index (length G). */
  readonly rolloutIds: readonly string[];
  /** Services whose results complete the group. */
  readonly services: readonly string[];
}

/** A group with every result (or the deadline's verdict). */
export interface AssembledGroup {
  readonly group: ExpectedGroup;
  /** `results[index].get(service)`; undefined where missing at the deadline. */
  readonly results: ReadonlyArray<ReadonlyMap<string, RewardResult>>;
  /** True when every result arrived. */
  readonly complete: boolean;
  /** `index/service` pairs missing at the deadline. */
  readonly missing: readonly string[];
  /** Trace context of each result's publish (from its NATS headers), for span links; none when untraced. */
  readonly resultSpans: readonly SpanContext[];
}

/** Counters of the assembler. */
export interface AssemblerStats {
  readonly received: number;
  readonly duplicates: number;
  /** Results of steps already applied. */
  readonly late: number;
  /** Results from services no group expects (ignored). */
  readonly unexpected: number;
  /** Results held before their group was registered. */
  readonly outOfOrder: number;
  /** Results whose payload names another run, service or rollout than their subject (ignored). */
  readonly mismatched: number;
  /** Results refused by `admit` (never placed: their slot stays empty, as if they never came). */
  readonly rejected: number;
  /** Span contexts held for the step's links: only of results kept for a step not yet applied. */
  readonly heldSpans: number;
}

interface GroupState {
  readonly group: ExpectedGroup;
  readonly index: Map<string, number>;
  readonly results: Array<Map<string, RewardResult>>;
  remaining: number;
  waiters: Array<() => void>;
}

/** Options of {@link createGroupAssembler}. */
export interface AssemblerOptions {
  readonly bus: MeshBus;
  readonly runId: string;
  readonly logger?: Logger;
  /** @default 60000 */
  readonly ackWaitMs?: number;
  /**
   * Checks each decoded result (and the subject it was read on) before it is used, live or replayed;
   * false = rejected (the caller counts and logs why). @default admits everything
   */
  readonly admit?: (r: RewardResult, subject: string) => boolean;
}

/** The assembler. */
export interface GroupAssembler {
  /** Registers a group (before or after its results arrive). */
  expect(group: ExpectedGroup): void;
  /**
   * Waits until every group of `groupIds` is complete, `deadline` (epoch ms) passes or `signal` aborts;
   * returns them in order, complete or not, and forgets them.
   */
  collect(groupIds: readonly string[], deadline: number, signal?: AbortSignal): Promise<AssembledGroup[]>;
  /** Results of steps `<= step` are late from now on. */
  markApplied(step: number): void;
  /**
   * Re-reads the run's stored results published since `since` (epoch ms) — the restart path: results the
   * previous process had consumed for the step in progress are recovered from the stream.
   */
  replaySince(since: number): Promise<number>;
  stats(): AssemblerStats;
  /** Stops consuming (the durable consumer stays for the next process). */
  close(): Promise<void>;
}

/** Starts the durable consumer `trainer-<run>` and returns the assembler. */
export async function createGroupAssembler(options: AssemblerOptions): Promise<GroupAssembler> {
  const { bus } = options;
  const runId = checkSubjectToken("runId", options.runId);
  const logger = (options.logger ?? silentLogger).child({ component: "assembler", runId });
  const durable = `trainer-${runId}`;
  const ackWait = nanos(options.ackWaitMs ?? 60_000);
  const groups = new Map<string, GroupState>();
  const orphans = new Map<string, RewardResult[]>(); // by group id
  const seen = new Set<string>(); // rolloutId \0 service of results already placed
  const spanOf = new Map<string, { sc: SpanContext; step: number }>(); // rolloutId \0 service -> its publish span
  let appliedThrough = -1;
  const stats = {
    received: 0,
    duplicates: 0,
    late: 0,
    unexpected: 0,
    outOfOrder: 0,
    mismatched: 0,
    rejected: 0,
  };
  const admit = options.admit ?? (() => true);

  /** Places `r` in its group's slot: true when it was (not a stranger, not a duplicate). */
  const place = (st: GroupState, r: RewardResult): boolean => {
    const i = st.index.get(r.rolloutId);
    if (i === undefined || !st.group.services.includes(r.service)) {
      stats.unexpected++;
      return false;
    }
    const slot = st.results[i]!;
    if (slot.has(r.service)) {
      stats.duplicates++;
      return false;
    }
    slot.set(r.service, r);
    seen.add(`${r.rolloutId}\u0000${r.service}`);
    st.remaining--;
    if (st.remaining === 0) for (const w of st.waiters.splice(0)) w();
    return true;
  };

  /** Takes `r` into its group or holds it until the group is expected: true when it was kept. */
  const accept = (r: RewardResult): boolean => {
    stats.received++;
    if (r.step <= appliedThrough) {
      stats.late++;
      return false;
    }
    if (seen.has(`${r.rolloutId}\u0000${r.service}`)) {
      stats.duplicates++;
      return false;
    }
    const st = groups.get(r.groupId);
    if (st) return place(st, r);
    const held = orphans.get(r.groupId) ?? [];
    if (held.some((h) => h.rolloutId === r.rolloutId && h.service === r.service)) {
      stats.duplicates++;
      return false;
    }
    held.push(r);
    orphans.set(r.groupId, held);
    stats.outOfOrder++;
    return true;
  };

  /** The result in `data` if its subject vouches for it (see Provenance above). */
  const provenResult = (data: Uint8Array, subject: string): RewardResult | undefined => {
    const r = fromBinary(RewardResultSchema, data);
    const s = parseRewardSubject(subject);
    if (!s || s.runId !== r.runId || s.service !== r.service || s.rolloutId !== r.rolloutId) {
      stats.mismatched++;
      logger.warn(
        { subject, runId: r.runId, service: r.service, rolloutId: r.rolloutId },
        "reward result does not match its subject; ignored",
      );
      return undefined;
    }
    return r;
  };

  const take = (r: RewardResult, subject: string): boolean => {
    if (admit(r, subject)) return accept(r);
    stats.rejected++;
    return false;
  };

  /** The result in `data` when it was kept (placed or held), else undefined. */
  const decodeAndTake = (data: Uint8Array, subject: string, seq: number): RewardResult | undefined => {
    try {
      const r = provenResult(data, subject);
      return r && take(r, subject) ? r : undefined;
    } catch (err) {
      // A reward the mesh itself published cannot be undecodable unless something else writes there.
      logger.warn({ err: String(err), subject, seq }, "undecodable reward result ignored");
      return undefined;
    }
  };

  const handle = (m: JsMsg): void => {
    const r = decodeAndTake(m.data, m.subject, m.seq);
    const sc = r && m.headers ? spanContextOf(extractFromHeaders(m.headers)) : undefined;
    // Only kept results: a duplicate, late or refused one is never collected, so its span would stay.
    if (r && sc) spanOf.set(`${r.rolloutId}\u0000${r.service}`, { sc, step: r.step });
    m.ack();
  };

  try {
    await bus.jsm.consumers.info(Streams.rewards, durable);
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound)) throw err;
    await bus.jsm.consumers.add(Streams.rewards, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: `mesh.rewards.${runId}.>`,
      ack_wait: ackWait,
      max_ack_pending: 100_000,
    });
  }
  const consumer = await bus.js.consumers.get(Streams.rewards, durable);
  const msgs: ConsumerMessages = await consumer.consume({ max_messages: 1024 });
  const loop = (async () => {
    for await (const m of msgs) handle(m);
  })();

  return {
    expect(group) {
      if (groups.has(group.groupId)) throw new Error(`group '${group.groupId}' is already expected`);
      if (group.rolloutIds.length === 0) throw new Error(`group '${group.groupId}' has no rollouts`);
      const st: GroupState = {
        group,
        index: new Map(group.rolloutIds.map((id, i) => [id, i])),
        results: group.rolloutIds.map(() => new Map()),
        remaining: group.rolloutIds.length * group.services.length,
        waiters: [],
      };
      groups.set(group.groupId, st);
      for (const r of orphans.get(group.groupId) ?? []) place(st, r);
      orphans.delete(group.groupId);
    },
    async collect(groupIds, deadline, signal) {
      const states = groupIds.map((id) => {
        const st = groups.get(id);
        if (!st) throw new Error(`group '${id}' was never expected`);
        return st;
      });
      await Promise.all(
        states.map(
          (st) =>
            new Promise<void>((resolve) => {
              if (st.remaining === 0 || signal?.aborted) return resolve();
              const done = () => {
                clearTimeout(t);
                signal?.removeEventListener("abort", done);
                resolve();
              };
              const t = setTimeout(done, Math.max(0, deadline - Date.now()));
              signal?.addEventListener("abort", done, { once: true });
              st.waiters.push(done);
            }),
        ),
      );
      return states.map((st) => {
        groups.delete(st.group.groupId);
        const missing: string[] = [];
        const resultSpans: SpanContext[] = [];
        st.results.forEach((slot, i) => {
          for (const s of st.group.services) {
            if (!slot.has(s)) missing.push(`${i}/${s}`);
            const key = `${st.group.rolloutIds[i]}\u0000${s}`;
            const held = spanOf.get(key);
            if (held) resultSpans.push(held.sc);
            spanOf.delete(key);
          }
        });
        return { group: st.group, results: st.results, complete: missing.length === 0, missing, resultSpans };
      });
    },
    markApplied(step) {
      appliedThrough = Math.max(appliedThrough, step);
      for (const [key, held] of spanOf) if (held.step <= step) spanOf.delete(key);
      for (const [id, held] of orphans) {
        if (held.every((r) => r.step <= step)) {
          stats.late += held.length;
          orphans.delete(id);
        }
      }
    },
    async replaySince(since) {
      const ci = await bus.jsm.consumers.add(Streams.rewards, {
        ack_policy: AckPolicy.None,
        deliver_policy: DeliverPolicy.StartTime,
        opt_start_time: new Date(since).toISOString(),
        filter_subject: `mesh.rewards.${runId}.>`,
        inactive_threshold: nanos(30_000),
      });
      const c = await bus.js.consumers.get(Streams.rewards, ci.name);
      let n = 0;
      let pending = ci.num_pending;
      while (pending > 0) {
        const batch = await c.fetch({ max_messages: Math.min(1000, pending), expires: 2000 });
        let got = 0;
        for await (const m of batch) {
          got++;
          n++;
          decodeAndTake(m.data, m.subject, m.seq);
        }
        if (got === 0) break;
        pending -= got;
      }
      await bus.jsm.consumers.delete(Streams.rewards, ci.name).catch(() => {});
      logger.info({ replayed: n, since: new Date(since).toISOString() }, "replayed stored results");
      return n;
    },
    stats: () => ({ ...stats, heldSpans: spanOf.size }),
    async close() {
      msgs.stop();
      await loop.catch(() => {});
    },
  };
}
