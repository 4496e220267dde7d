/**
 * A client of a reward service (`rewardmesh.v1.RewardService`) with a default deadline, so that no
 * call — `Describe`, `Score`, `ScoreBatch` or a whole `ScoreStream` — can wait forever on a server that
 * never answers. `scoreBatch({ requests })` scores up to `MAX_SCORE_BATCH` (1024) rollouts in one unary call
 * (`{ results, errors }`: a refused rollout is its own entry of `errors`); a service written against the
 * contract before ScoreBatch answers it UNIMPLEMENTED — use `scoreStream` there.
 * @module
 */
import { type Client, RewardService } from "@reward-mesh/proto";
import { createSecureGrpcClient, type GrpcClientSecurity } from "./grpc-security.js";

/** Default deadline of a reward-service call without its own `timeoutMs`. */
export const DEFAULT_REWARD_CALL_TIMEOUT_MS = 60_000;

/** Options of {@link createRewardServiceClient}. */
export interface RewardServiceClientOptions {
  /**
   * Deadline of every call that sets no `timeoutMs` of its own (for `ScoreStream`: the whole stream).
   * @default 60000 — far above one scoring, short enough that a stuck call is noticed.
   */
  readonly timeoutMs?: number;
  /**
   * TLS, client certificate and bearer token (`loadGrpcClientSecurity`).
   * @default plaintext, to loopback addresses only
   */
  readonly security?: GrpcClientSecurity;
}

/** A typed RewardService client for `address` (`host:port`) whose calls all have a deadline. */
export function createRewardServiceClient(
  address: string,
  options: RewardServiceClientOptions = {},
): Client<typeof RewardService> {
  return createSecureGrpcClient(
    RewardService,
    address,
    options.security,
    {},
    {
      defaultTimeoutMs: options.timeoutMs ?? DEFAULT_REWARD_CALL_TIMEOUT_MS,
    },
  );
}
