/**
 * Who consumes what on the bus: the durable consumers of `MESH_ROLLOUTS` (one per service and domain),
 * the rollout domains nobody consumes, and the stored rollout subjects no consumer will ever read
 * (orphans). Used by the trainer before it publishes and by `reward-mesh check`.
 * @module
 */
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from "@nats-io/jetstream";
import { connectBus, type MeshBus } from "./bus.js";
import type { NatsAuthOptions } from "./config.js";
import { UnavailableError } from "./errors.js";
import { StreamSubjects, Streams } from "./subjects.js";

/** One durable consumer of `MESH_ROLLOUTS`. */
export interface RolloutConsumer {
  /** Durable name, `<service>--<domain>` for a mesh service. */
  readonly name: string;
  /** Its filter subjects (`mesh.rollouts.<domain>.>`); `mesh.rollouts.>` when it has none. */
  readonly filters: readonly string[];
  /** Stored messages it has not been delivered yet. */
  readonly pending: number;
  /** Delivered messages it has not acknowledged yet. */
  readonly ackPending: number;
}

/** A subject of `MESH_ROLLOUTS` with stored messages that no durable consumer's filter matches. */
export interface OrphanSubject {
  readonly subject: string;
  /** Its domain (`mesh.rollouts.<domain>.<run>`). */
  readonly domain: string;
  readonly messages: number;
}

/** True when NATS subject `subject` matches `filter` (with `*` and `>` wildcards). */
export function subjectMatches(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return s.length > i;
    if (i >= s.length || (f[i] !== "*" && f[i] !== s[i])) return false;
  }
  return f.length === s.length;
}

/**
 * The durable consumers of `MESH_ROLLOUTS` (the services' work queues). Ephemeral consumers (a reader of
 * the stream, a test) are not counted: nothing scores what they read.
 */
export async function listRolloutConsumers(bus: Pick<MeshBus, "jsm">): Promise<RolloutConsumer[]> {
  const out: RolloutConsumer[] = [];
  for await (const ci of bus.jsm.consumers.list(Streams.rollouts)) {
    if (!ci.config.durable_name) continue;
    const filters = ci.config.filter_subjects?.length
      ? ci.config.filter_subjects
      : [ci.config.filter_subject || StreamSubjects.MESH_ROLLOUTS];
    out.push({ name: ci.name, filters, pending: ci.num_pending, ackPending: ci.num_ack_pending });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** The consumers that read rollouts of `domain` (any run). */
export function consumersOf(consumers: readonly RolloutConsumer[], domain: string): RolloutConsumer[] {
  // A run id is one token: a consumer reading `mesh.rollouts.<domain>.<any run>` consumes the domain.
  const probe = `mesh.rollouts.${domain}.x`;
  return consumers.filter((c) => c.filters.some((f) => subjectMatches(f, probe)));
}

/** No durable consumer reads rollouts of {@link domain}: a rollout published there would never be scored. */
export class UnconsumedDomainError extends UnavailableError {
  constructor(
    message: string,
    readonly domain: string,
  ) {
    super(message);
  }
}

/**
 * Throws {@link UnconsumedDomainError} naming the first of `domains` that no durable consumer reads: a
 * rollout published there would sit in the stream, never scored.
 */
export async function checkDomainsConsumed(
  bus: Pick<MeshBus, "jsm">,
  domains: Iterable<string>,
): Promise<void> {
  const consumers = await listRolloutConsumers(bus);
  for (const domain of domains) {
    if (consumersOf(consumers, domain).length > 0) continue;
    const known = consumers.map((c) => c.name).join(", ") || "none";
    throw new UnconsumedDomainError(
      `no service consumes domain '${domain}': nothing reads mesh.rollouts.${domain}.<run> (durable consumers on ${Streams.rollouts}: ${known}); start a service whose domains include '${domain}' (e.g. reward-mesh up) first`,
      domain,
    );
  }
}

/** Stored rollout subjects that no durable consumer reads, with their message counts. */
export async function findOrphanSubjects(
  bus: Pick<MeshBus, "jsm">,
  consumers?: readonly RolloutConsumer[],
): Promise<OrphanSubject[]> {
  const cs = consumers ?? (await listRolloutConsumers(bus));
  const info = await bus.jsm.streams.info(Streams.rollouts, {
    subjects_filter: StreamSubjects.MESH_ROLLOUTS,
  });
  const out: OrphanSubject[] = [];
  for (const [subject, messages] of Object.entries(info.state.subjects ?? {})) {
    if (cs.some((c) => c.filters.some((f) => subjectMatches(f, subject)))) continue;
    out.push({ subject, domain: subject.split(".")[2] ?? "", messages });
  }
  return out.sort((a, b) => a.subject.localeCompare(b.subject));
}

/** What {@link inspectRollouts} found. */
export interface RolloutTopology {
  /** False when the bus has no `MESH_ROLLOUTS` stream yet (nothing has run on it). */
  readonly stream: boolean;
  readonly consumers: readonly RolloutConsumer[];
  readonly orphans: readonly OrphanSubject[];
}

/**
 * Connects to `natsUrl` (with `auth`: the trainer's generated user is enough) and reports the consumers
 * of `MESH_ROLLOUTS` and its orphan subjects, creating nothing (`reward-mesh check`). A durable consumer
 * counts as a consumer even when no replica of its service is running now (a store kept from an earlier
 * session): the trainer's Describe check at run start is what finds a service that does not answer.
 */
export async function inspectRollouts(natsUrl: string, auth?: NatsAuthOptions): Promise<RolloutTopology> {
  const nc = await connectBus(natsUrl, "reward-mesh-check", auth);
  try {
    const jsm = await jetstreamManager(nc);
    // STREAM.INFO of the one stream (the trainer's generated user may send it; STREAM.LIST is admin's).
    try {
      await jsm.streams.info(Streams.rollouts);
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)
        return { stream: false, consumers: [], orphans: [] };
      throw err;
    }
    const consumers = await listRolloutConsumers({ jsm });
    return { stream: true, consumers, orphans: await findOrphanSubjects({ jsm }, consumers) };
  } finally {
    await nc.close();
  }
}
