/**
 * The mesh's NATS JetStream plumbing shared by services, the trainer, tests and benchmarks:
 * connection, stream provisioning, and publishing with `Nats-Msg-Id` de-duplication and trace context.
 * Uses the maintained v3 clients (`@nats-io/transport-node`, `@nats-io/jetstream`).
 * @module
 */
import { create, toBinary } from "@bufbuild/protobuf";
import {
  type JetStreamClient,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  type PubAck,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "@nats-io/jetstream";
import {
  connect,
  headers as natsHeaders,
  type MsgHdrs,
  type NatsConnection,
  nanos,
} from "@nats-io/transport-node";
import type { Context } from "@opentelemetry/api";
import { context } from "@opentelemetry/api";
import {
  type DeadLetter,
  DeadLetterSchema,
  type RewardResult,
  RewardResultSchema,
  type Rollout,
  RolloutSchema,
} from "@reward-mesh/proto";
import type { BusOptions } from "./config.js";
import { InvalidArgumentError, UnavailableError } from "./errors.js";
import {
  dlqSubject,
  rewardMsgId,
  rewardSubject,
  rolloutSubject,
  StreamSubjects,
  Streams,
  type StreamName,
} from "./subjects.js";
import { injectIntoHeaders } from "./telemetry.js";
import { MAX_MESSAGE_BYTES, NATS_HEADER_ROOM, NATS_MAX_PAYLOAD, taskDomain } from "./validate.js";

/** Header naming the process instance that published a reward (replica accounting, debugging). */
export const INSTANCE_HEADER = "Mesh-Instance";

/** Connects to NATS; reconnects forever once connected. Throws {@link UnavailableError} if unreachable. */
export async function connectBus(natsUrl: string, name: string): Promise<NatsConnection> {
  try {
    return await connect({
      servers: natsUrl.split(",").map((s) => s.trim()),
      name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      // No async stack capture per request: nats.js otherwise allocates Error objects for every
      // JetStream publish (several % of a reward service's CPU in the mesh benchmark's profile).
      noAsyncTraces: true,
    });
  } catch (err) {
    throw new UnavailableError(
      `NATS at ${natsUrl} is not reachable: ${err instanceof Error ? err.message : String(err)}`,
      {
        cause: err,
      },
    );
  }
}

function streamConfig(name: StreamName, o: BusOptions): Partial<StreamConfig> & { name: string } {
  return {
    name,
    subjects: [StreamSubjects[name]],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    max_age: nanos(o.streamMaxAgeSeconds * 1000),
    max_bytes: o.streamMaxBytes,
    duplicate_window: nanos(o.duplicateWindowMs),
    num_replicas: o.streamReplicas,
  };
}

/**
 * Creates the four mesh streams (file storage, limits retention) if missing, and updates their
 * retention settings if they differ. Idempotent; safe to call from every process at start.
 */
export async function ensureStreams(jsm: JetStreamManager, o: BusOptions): Promise<void> {
  for (const name of Object.values(Streams)) {
    const want = streamConfig(name, o);
    try {
      const info = await jsm.streams.info(name);
      const c = info.config;
      if (
        c.max_age !== want.max_age ||
        c.max_bytes !== want.max_bytes ||
        c.duplicate_window !== want.duplicate_window
      ) {
        await jsm.streams.update(name, {
          ...c,
          max_age: want.max_age,
          max_bytes: want.max_bytes,
          duplicate_window: want.duplicate_window,
        });
      }
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) {
        try {
          await jsm.streams.add(want);
        } catch (addErr) {
          // 10058: the name is taken with another config (another process won the race): keep theirs.
          if (!(addErr instanceof JetStreamApiError && addErr.code === 10058)) throw addErr;
        }
      } else {
        throw err;
      }
    }
  }
}

/** A connected bus: the NATS connection plus JetStream clients, streams provisioned. */
export interface MeshBus {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** Drains and closes the connection. */
  close(): Promise<void>;
}

/** Connects and provisions the mesh streams. */
export async function openBus(o: BusOptions, name: string): Promise<MeshBus> {
  const nc = await connectBus(o.natsUrl, name);
  try {
    const jsm = await jetstreamManager(nc);
    await ensureStreams(jsm, o);
    return {
      nc,
      js: jetstream(nc),
      jsm,
      close: async () => {
        if (!nc.isClosed()) await nc.drain();
      },
    };
  } catch (err) {
    await nc.close();
    throw err;
  }
}

function tracedHeaders(ctx: Context | undefined): MsgHdrs {
  const h = natsHeaders();
  injectIntoHeaders(h, ctx ?? context.active());
  return h;
}

/**
 * The largest message `js` can publish: the mesh's {@link MAX_MESSAGE_BYTES}, or less when the connected
 * server's `max_payload` leaves less room (a NATS server not configured by the mesh; 1 MB by default).
 */
export function busMessageLimit(js: JetStreamClient): { readonly bytes: number; readonly what: string } {
  // The JetStream client's connection (not in its public interface; absent in doubles).
  const server = (js as unknown as { nc?: NatsConnection }).nc?.info?.max_payload;
  if (server !== undefined && server - NATS_HEADER_ROOM < MAX_MESSAGE_BYTES) {
    return {
      bytes: Math.max(0, server - NATS_HEADER_ROOM),
      what: `the NATS server's max_payload (${server} bytes, less ${NATS_HEADER_ROOM} for headers; the mesh needs ${NATS_MAX_PAYLOAD})`,
    };
  }
  return { bytes: MAX_MESSAGE_BYTES, what: "the mesh's message limit (MAX_MESSAGE_BYTES)" };
}

/** Throws {@link InvalidArgumentError} naming `field` and the limit when `data` is too big for the bus. */
function checkMessageSize(js: JetStreamClient, field: string, id: string, data: Uint8Array): Uint8Array {
  const limit = busMessageLimit(js);
  if (data.byteLength > limit.bytes) {
    throw new InvalidArgumentError(
      field,
      `is ${data.byteLength} bytes encoded (id '${id}'), over ${limit.what} of ${limit.bytes} bytes`,
    );
  }
  return data;
}

/**
 * Publishes a rollout on `mesh.rollouts.<domain>.<run>` with `Nats-Msg-Id = rollout.id` and the trace
 * context of `ctx` (default: active context). A rollout bigger than the bus carries is refused first
 * ({@link InvalidArgumentError} naming the limit).
 */
export function publishRollout(js: JetStreamClient, rollout: Rollout, ctx?: Context): Promise<PubAck> {
  const subject = rolloutSubject(taskDomain(rollout.task), rollout.runId);
  let data: Uint8Array;
  try {
    data = checkMessageSize(js, "rollout", rollout.id, toBinary(RolloutSchema, rollout));
  } catch (err) {
    return Promise.reject(err);
  }
  return js.publish(subject, data, {
    msgID: rollout.id,
    headers: tracedHeaders(ctx),
  });
}

/** Publishes a reward result on `mesh.rewards.<run>.<service>` with `Nats-Msg-Id = <rollout>:<service>`. */
export function publishReward(
  js: JetStreamClient,
  result: RewardResult,
  instance: string,
  ctx?: Context,
): Promise<PubAck> {
  const h = tracedHeaders(ctx);
  h.set(INSTANCE_HEADER, instance);
  return js.publish(rewardSubject(result.runId, result.service), toBinary(RewardResultSchema, result), {
    msgID: rewardMsgId(result.rolloutId, result.service),
    headers: h,
  });
}

/**
 * Publishes a dead letter on `mesh.dlq.<service>`. A payload that would make the letter bigger than the
 * bus carries (a rollout right at the limit) is cut, and the reason says so: the letter is never refused.
 */
export function publishDeadLetter(
  js: JetStreamClient,
  letter: Omit<DeadLetter, "$typeName" | "$unknown">,
  ctx?: Context,
): Promise<PubAck> {
  let data = toBinary(DeadLetterSchema, create(DeadLetterSchema, letter));
  const limit = busMessageLimit(js).bytes;
  if (data.byteLength > limit) {
    const keep = Math.max(0, letter.payload.byteLength - (data.byteLength - limit) - 256);
    data = toBinary(
      DeadLetterSchema,
      create(DeadLetterSchema, {
        ...letter,
        reason: `${letter.reason} (payload cut to its first ${keep} of ${letter.payload.byteLength} bytes)`,
        payload: letter.payload.subarray(0, keep),
      }),
    );
  }
  return js.publish(dlqSubject(letter.service), data, {
    // One dead letter per original message and service, even if the rejection is retried.
    msgID: `dlq:${letter.service}:${letter.streamSequence}`,
    headers: tracedHeaders(ctx),
  });
}
