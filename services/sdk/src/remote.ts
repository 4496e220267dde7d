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
 * A stream that ends with requests unanswered never fails them together: when it ends with
 * INVALID_ARGUMENT naming (`requests[<i>]`, as the sdk's server reports it) exactly the first
 * unanswered request, that request is refused ({@link InvalidArgumentError}: dead-lettered, not
 * retried); every other unanswered request is scored again on its own with the unary `Score`, so each
 * rollout gets its own verdict (a refusal, an {@link UnavailableError} retried with back-off by the
 * worker, or its result).
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

/** The request index an INVALID_ARGUMENT names: the sdk's server reports `'requests[<i>].<field>' …`. */
export function namedRequestIndex(details: string | undefined): number | undefined {
  const m = /'?requests\[(\d+)\]/.exec(details ?? "");
  return m ? Number(m[1]) : undefined;
}

/** One ScoreStream: requests pushed in, results matched to them in order. */
class ScoreStreamSession {
  readonly openedAt = Date.now();
  sent = 0;
  done = false;
  /** Results received so far: the stream index of the first waiter. */
  private answered = 0;
  private readonly waiting: Waiter[] = [];
  private readonly queued: Rollout[] = [];
  private wake: (() => void) | undefined;
  private ended = false;

  constructor(
    client: ReturnType<typeof createRewardServiceClient>,
    timeoutMs: number,
    private readonly service: string,
    private readonly rescore: (rollout: Rollout) => Promise<RewardResult>,
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
        this.answered++;
        w.resolve(r);
      }
      this.fail(new UnavailableError(`service '${this.service}' ended ScoreStream before answering`));
    } catch (err) {
      this.fail(err);
    }
  }

  /**
   * The stream ended with requests unanswered. One bad rollout must not fail the others: only when the
   * remote's INVALID_ARGUMENT names exactly the first unanswered request is that one refused here; every
   * other waiting request is scored again on its own with the unary `Score`, so each gets its own verdict.
   */
  private fail(err: unknown): void {
    this.done = true;
    const e = err as Partial<grpc.ServiceError>;
    const waiting = this.waiting.splice(0);
    if (waiting.length && e.code === grpc.status.INVALID_ARGUMENT) {
      if (namedRequestIndex(e.details ?? e.message) === this.answered) {
        const first = waiting.shift()!;
        first.reject(refused(this.service, first.rollout, err));
      }
    }
    for (const w of waiting) this.rescore(w.rollout).then(w.resolve, w.reject);
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

function refused(service: string, rollout: Rollout, err: unknown): InvalidArgumentError {
  const e = err as Partial<grpc.ServiceError>;
  return new InvalidArgumentError(
    `rollout (${rollout.id})`,
    `rejected by '${service}': ${e.details ?? e.message}`,
    {
      cause: err,
    },
  );
}

function unavailable(service: string, err: unknown, call = "ScoreStream"): UnavailableError {
  const e = err as Partial<grpc.ServiceError>;
  const why = e.details ?? (err instanceof Error ? err.message : String(err));
  return new UnavailableError(`service '${service}' ${call} failed: ${why}`, { cause: err });
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
  /** One rollout on its own (unary `Score`), after the stream it was waiting on failed. */
  const rescore = async (rollout: Rollout): Promise<RewardResult> => {
    try {
      return await client.score({ rollout }, { timeoutMs: scoreTimeoutMs });
    } catch (err) {
      if ((err as Partial<grpc.ServiceError>).code === grpc.status.INVALID_ARGUMENT)
        throw refused(d.name, rollout, err);
      throw unavailable(d.name, err, "Score");
    }
  };
  let session: ScoreStreamSession | undefined;
  const current = () => {
    if (
      !session ||
      session.done ||
      session.sent >= rotateAfter ||
      Date.now() - session.openedAt >= rotateMs
    ) {
      session?.end();
      session = new ScoreStreamSession(client, rotateMs + scoreTimeoutMs, d.name, rescore);
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
      // An aborted request keeps its place in the stream; its result is discarded when it comes.
      pending.catch(() => {});
      // ctx.signal may live as long as the process (the worker's shutdown signal): the listener added
      // for this rollout is removed when it is done, or every rollout would leave one behind.
      let onAbort: (() => void) | undefined;
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => reject(ctx.signal.reason);
        if (ctx.signal.aborted) onAbort();
        else ctx.signal.addEventListener("abort", onAbort, { once: true });
      });
      aborted.catch(() => {});
      let r: RewardResult;
      try {
        r = await Promise.race([pending, aborted]);
      } finally {
        if (onAbort) ctx.signal.removeEventListener("abort", onAbort);
      }
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
