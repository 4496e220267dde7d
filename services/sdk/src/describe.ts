/**
 * `Describe` over the bus: every SDK service with a JetStream worker answers requests on
 * `mesh.describe.<service>` with the same `DescribeResponse` its gRPC `Describe` returns (replicas share
 * a queue group, one answers). The trainer asks at run start ({@link requestDescribe}) to check its run
 * configuration and, afterwards, every result against the contract.
 * @module
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { type NatsConnection, RequestError, type Subscription } from "@nats-io/transport-node";
import { type DescribeResponse, DescribeResponseSchema } from "@reward-mesh/proto";
import { UnavailableError } from "./errors.js";
import type { Logger } from "./logger.js";
import type { RewardServiceDefinition } from "./service.js";
import { describeSubject } from "./subjects.js";

/** Queue group of the describe responders (one answer per request, whatever the replica count). */
export const DESCRIBE_QUEUE = "describe";

/** A running responder. */
export interface DescribeResponder {
  stop(): void;
}

/** Answers `mesh.describe.<def.name>`; resolves once the server has registered the subscription. */
export async function startDescribeResponder(
  nc: NatsConnection,
  def: RewardServiceDefinition,
  logger: Logger,
): Promise<DescribeResponder> {
  const answer = toBinary(DescribeResponseSchema, def.describe());
  const sub: Subscription = nc.subscribe(describeSubject(def.name), {
    queue: DESCRIBE_QUEUE,
    callback: (err, msg) => {
      if (err) {
        logger.warn({ err: String(err) }, "describe subscription error");
        return;
      }
      if (!msg.reply) return; // a publish, not a request: nothing to answer
      msg.respond(answer);
    },
  });
  await nc.flush();
  return { stop: () => sub.unsubscribe() };
}

/** Options of {@link requestDescribe}. */
export interface DescribeRequestOptions {
  /** Total time to wait for an answer, retrying while no replica is subscribed yet. @default 10000 */
  readonly timeoutMs?: number;
  /** Pause between tries when nobody answers yet. @default 200 */
  readonly retryMs?: number;
}

/**
 * Asks `service` for its `DescribeResponse` over the bus. Retries while nobody is subscribed (a service
 * still starting) until `timeoutMs`; then throws {@link UnavailableError} naming the service and what
 * happened (no responder, or no answer in time). An answer that is not a `DescribeResponse` for that
 * service is an error too.
 */
export async function requestDescribe(
  nc: NatsConnection,
  service: string,
  options: DescribeRequestOptions = {},
): Promise<DescribeResponse> {
  const subject = describeSubject(service);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const retryMs = options.retryMs ?? 200;
  const deadline = Date.now() + timeoutMs;
  let why = "no answer";
  while (true) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    try {
      const msg = await nc.request(subject, new Uint8Array(), { timeout: Math.max(50, left) });
      let d: DescribeResponse;
      try {
        d = fromBinary(DescribeResponseSchema, msg.data);
      } catch (err) {
        throw new UnavailableError(
          `service '${service}' answered Describe on ${subject} with something that is not a DescribeResponse: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      if (d.name !== service) {
        throw new UnavailableError(`service '${service}' answered Describe on ${subject} as '${d.name}'`);
      }
      return d;
    } catch (err) {
      if (err instanceof UnavailableError) throw err;
      if (err instanceof RequestError && err.isNoResponders()) {
        why = "no replica is subscribed (is the service running, with its JetStream worker on?)";
        await new Promise((r) => setTimeout(r, Math.min(retryMs, Math.max(0, deadline - Date.now()))));
        continue;
      }
      why = err instanceof Error ? err.message : String(err);
      break;
    }
  }
  throw new UnavailableError(
    `service '${service}' did not answer Describe on ${subject} within ${timeoutMs} ms: ${why}`,
  );
}
