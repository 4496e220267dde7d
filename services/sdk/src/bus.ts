/**
 * The mesh's NATS JetStream plumbing shared by services, the trainer, tests and benchmarks:
 * connection (credentials and TLS from {@link NatsAuthOptions}), stream provisioning, and publishing with
 * de-duplication and trace context. Uses the maintained v3 clients (`@nats-io/transport-node`,
 * `@nats-io/jetstream`).
 *
 * De-duplication: rollouts carry `Nats-Msg-Id = rollout.id` (only the trainer may publish them); a reward
 * is stored once per subject `mesh.rewards.<run>.<service>.<rollout>` (`Nats-Expected-Last-Subject-Sequence:
 * 0`), a subject only that service may publish to, so no other publisher can make the real result the
 * duplicate.
 * @module
 */
import { create, toBinary } from "@bufbuild/protobuf";
import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  JetStreamError,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  type PubAck,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "@nats-io/jetstream";
import {
  ConnectionError,
  connect,
  type MsgHdrs,
  type NatsConnection,
  NoRespondersError,
  nanos,
  headers as natsHeaders,
  TimeoutError,
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
import type { BusOptions, NatsAuthOptions } from "./config.js";
import { ConfigError, InvalidArgumentError, MeshError, UnavailableError } from "./errors.js";
import { NatsAuthRefusedError } from "./local-nats.js";
import { isAuthorizationError, isPermissionViolation, natsConnectionOptions } from "./nats-auth.js";
import { retryUntil } from "./retry.js";
import {
  checkSubjectToken,
  dlqSubject,
  rewardSubject,
  rolloutSubject,
  type StreamName,
  StreamSubjects,
  Streams,
} from "./subjects.js";
import { injectIntoHeaders } from "./telemetry.js";
import { MAX_MESSAGE_BYTES, NATS_HEADER_ROOM, NATS_MAX_PAYLOAD, taskDomain } from "./validate.js";

/** Header naming the process instance that published a reward (replica accounting, debugging). */
export const INSTANCE_HEADER = "Mesh-Instance";

/**
 * Connects to NATS with `auth` (none: anonymous); reconnects forever once connected. Throws
 * {@link UnavailableError} if unreachable or if the server refuses the credentials, and `ConfigError`
 * naming the variable if a key file is bad.
 */
export async function connectBus(
  natsUrl: string,
  name: string,
  auth?: NatsAuthOptions,
  timeoutMs?: number,
): Promise<NatsConnection> {
  const credentials = natsConnectionOptions(auth);
  try {
    return await connect({
      ...credentials,
      servers: natsUrl.split(",").map((s) => s.trim()),
      name,
      ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      // No async stack capture per request: nats.js otherwise allocates Error objects for every
      // JetStream publish (several % of a reward service's CPU in the mesh benchmark's profile).
      noAsyncTraces: true,
    });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (isAuthorizationError(err)) {
      throw new UnavailableError(
        `NATS at ${natsUrl} refused the connection (${why}): ${credentials.authenticator ? "check the credentials in NATS_USER/NATS_PASSWORD, NATS_TOKEN, NATS_NKEY_SEED_FILE or NATS_CREDS_FILE" : "it requires credentials; set NATS_NKEY_SEED_FILE, NATS_CREDS_FILE, NATS_USER/NATS_PASSWORD or NATS_TOKEN"}`,
        { cause: err },
      );
    }
    throw new UnavailableError(`NATS at ${natsUrl} is not reachable: ${why}`, { cause: err });
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
 *
 * Under least privilege only the provisioning user (`reward-mesh up`'s admin) may create or update
 * streams: for any other user a missing stream is an error saying so, and settings that differ from
 * the provisioned ones are left as the provisioner set them.
 */
export async function ensureStreams(jsm: JetStreamManager, o: BusOptions): Promise<void> {
  for (const name of Object.values(Streams)) {
    const want = streamConfig(name, o);
    let info: Awaited<ReturnType<typeof jsm.streams.info>> | undefined;
    try {
      info = await jsm.streams.info(name);
    } catch (err) {
      if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) {
        if (isPermissionViolation(err))
          throw new UnavailableError(`this NATS user may not read stream ${name}'s info: ${String(err)}`, {
            cause: err,
          });
        throw err;
      }
    }
    if (!info) {
      try {
        await jsm.streams.add(want);
      } catch (addErr) {
        if (isPermissionViolation(addErr)) {
          throw new StreamsNotProvisionedError(
            `stream ${name} does not exist and this NATS user may not create it: start the mesh with \`reward-mesh up\` (which provisions the streams) or create them as the mesh's admin user (\`reward-mesh provision\`)`,
            { cause: addErr },
          );
        }
        // 10058: the name is taken with another config (another process won the race): keep theirs.
        if (!(addErr instanceof JetStreamApiError && addErr.code === 10058)) throw addErr;
      }
      continue;
    }
    const c = info.config;
    if (
      c.max_age !== want.max_age ||
      c.max_bytes !== want.max_bytes ||
      c.duplicate_window !== want.duplicate_window
    ) {
      try {
        await jsm.streams.update(name, {
          ...c,
          max_age: want.max_age,
          max_bytes: want.max_bytes,
          duplicate_window: want.duplicate_window,
        });
      } catch (err) {
        // Not the provisioner: the provisioned settings stand.
        if (!isPermissionViolation(err)) throw err;
      }
    }
  }
}

/** A mesh stream is missing and this NATS user may not create it (the admin has not provisioned yet). */
export class StreamsNotProvisionedError extends UnavailableError {
  /** Always set: tells this case apart from other unavailability (the name stays `UnavailableError`). */
  readonly streamsNotProvisioned = true;
}

/**
 * True for an error that a NATS or JetStream still starting up gives and that goes away by itself: the
 * server not listening yet (refused, unresolvable, reset, timed out), JetStream not enabled yet or not
 * answering (no responders, 503 during a cluster's leader election), and a stream the admin has not
 * provisioned yet ({@link StreamsNotProvisionedError}). Never a refusal of the credentials or a
 * permission violation, a bad key file, or a TLS failure: those need a person.
 */
export function isStartupTransient(err: unknown): boolean {
  if (err instanceof StreamsNotProvisionedError) return true;
  const chain: unknown[] = [];
  for (let e: unknown = err; e !== undefined && chain.length < 8; e = (e as { cause?: unknown })?.cause)
    chain.push(e);
  for (const e of chain) {
    if (
      e instanceof NatsAuthRefusedError ||
      e instanceof ConfigError ||
      isAuthorizationError(e) ||
      isPermissionViolation(e) ||
      (e instanceof Error && /certificate|\btls\b|ssl|self[- ]signed|unable to verify/i.test(e.message))
    )
      return false;
  }
  return chain.some(
    (e) =>
      e instanceof ConnectionError ||
      e instanceof NoRespondersError ||
      e instanceof TimeoutError ||
      (e instanceof JetStreamApiError &&
        (e.status === 503 || e.code === JetStreamApiCodes.JetStreamNotEnabledForAccount)) ||
      (e instanceof JetStreamError && /not enabled|unavailable|503/i.test(e.message)) ||
      (e instanceof Error &&
        /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|connection refused|timeout|no responders|not enabled|temporarily unavailable|503/i.test(
          e.message + String((e as { code?: unknown }).code ?? ""),
        )),
  );
}

/** Start-up hooks of {@link openBus} (tests). */
export interface OpenBusHooks {
  /** Called after each failed attempt that will be retried, with its error and the delay before the next. */
  readonly onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

/** The mesh's message of an attempt that gave up at the deadline. */
function gaveUp(o: BusOptions, err: unknown): UnavailableError {
  const why = err instanceof Error ? err.message : String(err);
  const waited = `waited ${o.streamsWaitSeconds} s (MESH_STREAMS_WAIT_SECONDS)`;
  if (err instanceof StreamsNotProvisionedError)
    return new StreamsNotProvisionedError(`${why} — waited ${o.streamsWaitSeconds} s`, { cause: err });
  return new UnavailableError(
    `NATS JetStream at ${o.natsUrl} did not become available: ${waited}; last error: ${why}`,
    { cause: err },
  );
}

/** The NATS user may not create or update the mesh streams: it is not the mesh's admin. */
export class NotStreamAdminError extends MeshError {
  override readonly name = "NotStreamAdminError";
  readonly retryable = false;
}

/** One stream as {@link provisionStreams} left it (from `jsm.streams.info`/`add`/`update`). */
export interface ProvisionedStream {
  readonly name: string;
  /** Whether it was created now or already existed and was updated to the settings. */
  readonly action: "created" | "updated";
  readonly subjects: readonly string[];
  readonly replicas: number;
  readonly storage: string;
  readonly maxAgeSeconds: number;
  readonly maxBytes: number;
  readonly duplicateWindowMs: number;
  readonly messages: number;
}

function provisioned(
  info: Awaited<ReturnType<JetStreamManager["streams"]["info"]>>,
  action: ProvisionedStream["action"],
): ProvisionedStream {
  const c = info.config;
  return {
    name: c.name,
    action,
    subjects: c.subjects ?? [],
    replicas: c.num_replicas,
    storage: String(c.storage),
    maxAgeSeconds: Math.round(c.max_age / 1e9),
    maxBytes: c.max_bytes,
    duplicateWindowMs: Math.round((c.duplicate_window ?? 0) / 1e6),
    messages: info.state.messages,
  };
}

/**
 * Creates each mesh stream that is missing and updates each existing one to `o`'s settings (subjects,
 * max age, max bytes, duplicate window, replicas), unconditionally — unlike {@link ensureStreams}, which
 * every process calls and which leaves provisioned settings alone when its user may not change them.
 * This is what `reward-mesh provision` (the Helm chart's provisioning Job) and `reward-mesh up` rely on: a user that may
 * not create or update streams gets a {@link NotStreamAdminError} saying it must be the mesh's admin.
 */
export async function provisionStreams(jsm: JetStreamManager, o: BusOptions): Promise<ProvisionedStream[]> {
  const out: ProvisionedStream[] = [];
  const notAdmin = (name: string, err: unknown) =>
    new NotStreamAdminError(
      `this NATS user may not create or update stream ${name} (${err instanceof Error ? err.message : String(err)}): provisioning the streams needs the mesh's admin user — set the NATS_* credential variables to the admin's (e.g. NATS_NKEY_SEED_FILE=<auth dir>/admin.nk)`,
      { cause: err },
    );
  for (const name of Object.values(Streams)) {
    const want = streamConfig(name, o);
    let current: Awaited<ReturnType<typeof jsm.streams.info>> | undefined;
    try {
      current = await jsm.streams.info(name);
    } catch (err) {
      if (isPermissionViolation(err)) throw notAdmin(name, err);
      if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
    }
    try {
      if (!current) {
        try {
          out.push(provisioned(await jsm.streams.add(want), "created"));
          continue;
        } catch (err) {
          // 10058: the name is taken with another config (another provisioner won the race): update it.
          if (!(err instanceof JetStreamApiError && err.code === 10058)) throw err;
          current = await jsm.streams.info(name);
        }
      }
      const { name: _, storage: __, ...settings } = want;
      out.push(provisioned(await jsm.streams.update(name, { ...current.config, ...settings }), "updated"));
    } catch (err) {
      if (isPermissionViolation(err)) throw notAdmin(name, err);
      throw err;
    }
  }
  return out;
}

/**
 * Connects to `o.natsUrl` with `o.auth`, runs {@link provisionStreams} and closes: one attempt of
 * `reward-mesh provision` (which retries it while NATS is not ready).
 */
export async function provisionMeshStreams(o: BusOptions, name: string): Promise<ProvisionedStream[]> {
  const nc = await connectBus(o.natsUrl, name, o.auth);
  try {
    return await provisionStreams(await jetstreamManager(nc), o);
  } finally {
    await nc.close();
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

/**
 * Connects (with `o.auth`) and provisions or checks the mesh streams.
 *
 * With `o.streamsWaitSeconds` > 0 it keeps trying until that deadline, polling 250 ms doubling to 2 s,
 * while the failure is one of start-up ({@link isStartupTransient}: NATS not reachable yet, JetStream not
 * enabled or answering 503 yet, streams not provisioned yet), then fails naming the URL, the wait and the
 * last error. A refusal of the credentials or a permission violation fails at once, as with no wait.
 */
export async function openBus(o: BusOptions, name: string, hooks: OpenBusHooks = {}): Promise<MeshBus> {
  const waitMs = (o.streamsWaitSeconds ?? 0) * 1000;
  if (waitMs === 0) return openBusOnce(o, name);
  const deadline = Date.now() + waitMs;
  let nc: NatsConnection | undefined;
  try {
    return await retryUntil(
      async () => {
        // Connected once: nats.js reconnects by itself from then on, so keep the connection.
        nc ??= await connectBus(
          o.natsUrl,
          name,
          o.auth,
          Math.max(1000, Math.min(20_000, deadline - Date.now())),
        );
        const jsm = await jetstreamManager(nc);
        await ensureStreams(jsm, o);
        return meshBus(nc, jsm);
      },
      { deadline, retryable: isStartupTransient, gaveUp: (err) => gaveUp(o, err), onRetry: hooks.onRetry },
    );
  } catch (err) {
    await (nc as NatsConnection | undefined)?.close();
    throw err;
  }
}

async function openBusOnce(o: BusOptions, name: string): Promise<MeshBus> {
  const nc = await connectBus(o.natsUrl, name, o.auth);
  try {
    const jsm = await jetstreamManager(nc);
    await ensureStreams(jsm, o);
    return meshBus(nc, jsm);
  } catch (err) {
    await nc.close();
    throw err;
  }
}

function meshBus(nc: NatsConnection, jsm: JetStreamManager): MeshBus {
  return {
    nc,
    js: jetstream(nc),
    jsm,
    close: async () => {
      if (!nc.isClosed()) await nc.drain();
    },
  };
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
    // Its result is published on a subject that ends with the rollout id.
    checkSubjectToken("rollout.id", rollout.id);
    data = checkMessageSize(js, "rollout", rollout.id, toBinary(RolloutSchema, rollout));
  } catch (err) {
    return Promise.reject(err);
  }
  return js.publish(subject, data, {
    msgID: rollout.id,
    headers: tracedHeaders(ctx),
  });
}

/** JetStream's "wrong last sequence" error: the per-subject expectation failed. */
const WRONG_LAST_SEQUENCE = 10071;

/**
 * Publishes a reward result on `mesh.rewards.<run>.<service>.<rollout>`, stored only if that subject is
 * still empty (`Nats-Expected-Last-Subject-Sequence: 0`). A result already stored there (a redelivered
 * rollout scored again, a retried publish) resolves with `duplicate: true` and the stored sequence
 * unknown (0). Throws `InvalidArgumentError` when the run, service or rollout id is not a subject token.
 */
export async function publishReward(
  js: JetStreamClient,
  result: RewardResult,
  instance: string,
  ctx?: Context,
): Promise<PubAck> {
  const subject = rewardSubject(result.runId, result.service, result.rolloutId);
  const h = tracedHeaders(ctx);
  h.set(INSTANCE_HEADER, instance);
  try {
    return await js.publish(subject, toBinary(RewardResultSchema, result), {
      expect: { lastSubjectSequence: 0 },
      headers: h,
    });
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === WRONG_LAST_SEQUENCE)
      return { stream: Streams.rewards, seq: 0, duplicate: true };
    throw err;
  }
}

/**
 * Publishes a dead letter on `mesh.dlq.<service>`. No `Nats-Msg-Id`: de-duplication is stream-wide, so
 * another service could claim the id first and drop this letter. A letter whose publish is retried may
 * therefore be stored twice; `(service, stream_sequence)` identifies it.
 * A payload that would make the letter bigger than the bus carries (a rollout right at the limit) is
 * cut, and the reason says so: the letter is never refused.
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
  return js.publish(dlqSubject(letter.service), data, { headers: tracedHeaders(ctx) });
}
