/**
 * A reward service implemented elsewhere (any language), served on the mesh through this process:
 * {@link connectRemoteService} asks the remote `rewardmesh.v1.RewardService` for `Describe` (name,
 * version, domains, components) and returns a {@link RewardServiceDefinition} whose scoring goes over
 * `ScoreStream`. The JetStream worker, the `mesh.describe.<service>` responder and the gRPC front then
 * run it exactly as they run a TypeScript service: the same durable consumer per service×domain, the
 * same explicit ack, redelivery back-off, `DeadLetter`, `Nats-Msg-Id` dedupe and trace context; and
 * every remote result is checked against the remote's own declaration before it is published.
 *
 * Scoring: rollouts are multiplexed on one `ScoreStream` at a time (the contract answers in request
 * order, one result per request). A stream is half-closed after {@link RemoteServiceOptions.rotateAfter}
 * requests or `rotateMs`, so that no stream outlives its deadline; its remaining results still arrive.
 * A stream ending with INVALID_ARGUMENT fails the request it names (dead-lettered, not retried) — the
 * first whose result did not come; any other failure fails every request still waiting on that
 * stream with {@link UnavailableError} (retried with back-off by the worker).
 * @module
 */
import type { RewardResult, Rollout } from "@reward-mesh/proto";
import { grpc } from "@reward-mesh/proto";
import { InvalidArgumentError, ServiceContractError, UnavailableError } from "./errors.js";
import type { GrpcClientSecurity } from "./grpc-security.js";
import { createRewardServiceClient } from "./reward-client.js";
import { retryUntil } from "./retry.js";
import { type ComponentValue, defineRewardService, type RewardServiceDefinition } from "./service.js";

/** Options of {@link connectRemoteService}. */
export interface RemoteServiceOptions {
  /** TLS / token for the remote (`loadGrpcClientSecurity`); default plaintext to loopback only. */
  readonly security?: GrpcClientSecurity;
  /** How long to wait for the remote's first `Describe` answer. @default 30000 */
  readonly waitMs?: number;
  /** Requests per `ScoreStream` before a new stream is opened. @default 1000 */
  readonly rotateAfter?: number;
  /** Age of a stream after which new requests go to a new one. @default 30000 */
  readonly rotateMs?: number;
  /** Deadline of one rollout's scoring on the remote, added to a stream's age for its deadline. @default 60000 */
  readonly scoreTimeoutMs?: number;
  /** Called before each retry of the first `Describe`. */
  readonly onWait?: (err: unknown) => void;
}

/** A connected remote service. */
export interface RemoteService {
  readonly definition: RewardServiceDefinition;
  readonly address: string;
  /** Ends the current stream (its results still arrive) and closes the channel. */
  close(): void;
}

interface Waiter {
  readonly rollout: Rollout;
  resolve(r: RewardResult): void;
  reject(e: unknown): void;
}

/** One ScoreStream: requests pushed in, results matched to them in order. */
class ScoreStreamSession {
  readonly openedAt = Date.now();
  sent = 0;
  done = false;
  private readonly waiting: Waiter[] = [];
  private readonly queued: Rollout[] = [];
  private wake: (() => void) | undefined;
  private ended = false;

  constructor(
    client: ReturnType<typeof createRewardServiceClient>,
    timeoutMs: number,
    private readonly service: string,
  ) {
    const self = this;
    const requests = (async function* () {
      for (;;) {
        while (self.queued.length) yield { rollout: self.queued.shift()! };
        if (self.ended) return;
        await new Promise<void>((r) => {
          self.wake = r;
        });
      }
    })();
    this.read(client.scoreStream(requests, { timeoutMs })).catch(() => {});
  }

  private async read(results: AsyncIterable<RewardResult>): Promise<void> {
    try {
      for await (const r of results) {
        const w = this.waiting.shift();
        if (!w) throw new UnavailableError(`service '${this.service}' sent a result nobody asked for`);
        w.resolve(r);
      }
      this.fail(new UnavailableError(`service '${this.service}' ended ScoreStream before answering`));
    } catch (err) {
      this.fail(err);
    }
  }

  private fail(err: unknown): void {
    this.done = true;
    const e = err as Partial<grpc.ServiceError>;
    const first = this.waiting.shift();
    if (first) {
      if (e.code === grpc.status.INVALID_ARGUMENT) {
        first.reject(
          new InvalidArgumentError(
            `rollout (${first.rollout.id})`,
            `rejected by '${this.service}': ${e.details ?? e.message}`,
          ),
        );
      } else first.reject(unavailable(this.service, err));
    }
    for (const w of this.waiting.splice(0)) w.reject(unavailable(this.service, err));
  }

  score(rollout: Rollout): Promise<RewardResult> {
    this.sent++;
    return new Promise((resolve, reject) => {
      this.waiting.push({ rollout, resolve, reject });
      this.queued.push(rollout);
      this.wake?.();
    });
  }

  /** Half-closes: no more requests; waiting ones still get their results. */
  end(): void {
    this.ended = true;
    this.wake?.();
  }
}

function unavailable(service: string, err: unknown): UnavailableError {
  const e = err as Partial<grpc.ServiceError>;
  const why = e.details ?? (err instanceof Error ? err.message : String(err));
  return new UnavailableError(`service '${service}' ScoreStream failed: ${why}`, { cause: err });
}

const isUnreachable = (err: unknown) => {
  const code = (err as Partial<grpc.ServiceError>).code;
  return code === grpc.status.UNAVAILABLE || code === grpc.status.DEADLINE_EXCEEDED;
};

/**
 * Connects to the reward service at `address` (`host:port`), waiting up to `waitMs` for it to answer
 * `Describe`, and returns its definition (see the module comment).
 */
export async function connectRemoteService(
  address: string,
  o: RemoteServiceOptions = {},
): Promise<RemoteService> {
  const scoreTimeoutMs = o.scoreTimeoutMs ?? 60_000;
  const rotateMs = o.rotateMs ?? 30_000;
  const rotateAfter = o.rotateAfter ?? 1000;
  const client = createRewardServiceClient(address, {
    timeoutMs: scoreTimeoutMs,
    ...(o.security ? { security: o.security } : {}),
  });
  const waitMs = o.waitMs ?? 30_000;
  let d: Awaited<ReturnType<typeof client.describe>>;
  try {
    d = await retryUntil(() => client.describe({}, { timeoutMs: 5000 }), {
      deadline: Date.now() + waitMs,
      retryable: isUnreachable,
      gaveUp: (err) =>
        new UnavailableError(`no reward service answered Describe at ${address} within ${waitMs} ms`, {
          cause: err,
        }),
      ...(o.onWait ? { onRetry: o.onWait } : {}),
    });
  } catch (err) {
    client.close();
    throw err;
  }
  let session: ScoreStreamSession | undefined;
  const current = () => {
    if (
      !session ||
      session.done ||
      session.sent >= rotateAfter ||
      Date.now() - session.openedAt >= rotateMs
    ) {
      session?.end();
      session = new ScoreStreamSession(client, rotateMs + scoreTimeoutMs, d.name);
    }
    return session;
  };
  const definition = defineRewardService({
    name: d.name,
    version: d.version,
    domains: d.domains,
    components: d.components.map((c) => ({
      name: c.name,
      description: c.description,
      min: c.min,
      max: c.max,
    })),
    score: async (rollout, ctx): Promise<ComponentValue[]> => {
      const pending = current().score(rollout);
      const aborted = new Promise<never>((_, reject) => {
        if (ctx.signal.aborted) reject(ctx.signal.reason);
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
      });
      // An aborted request keeps its place in the stream; its result is discarded when it comes.
      pending.catch(() => {});
      const r = await Promise.race([pending, aborted]);
      if (r.rolloutId !== "" && r.rolloutId !== rollout.id)
        throw new ServiceContractError(
          `service '${d.name}' answered rollout '${r.rolloutId}' for '${rollout.id}' (ScoreStream answers in request order)`,
        );
      return r.components.map((c) => ({
        name: c.name,
        value: c.value,
        status: c.status,
        details: c.details,
      }));
    },
  });
  return {
    definition,
    address,
    close() {
      session?.end();
      client.close();
    },
  };
}
