/**
 * `grpc.health.v1.Health`: Check, Watch and List over a status map that the runtime updates
 * (SERVING once started, NOT_SERVING while draining).
 * @module
 */
import { create } from "@bufbuild/protobuf";
import { type ServiceImpl, health } from "@reward-mesh/proto";
import { InvalidArgumentError, NotFoundError } from "./errors.js";

const ServingStatus = health.HealthCheckResponse_ServingStatus;

/** Serving status values (re-exported from the generated health contract). */
export const HealthStatus = ServingStatus;

/** Mutable health state plus its gRPC handlers. */
export interface HealthState {
  /** Sets the status of `service` ("" = the server as a whole) and notifies watchers. */
  set(service: string, status: health.HealthCheckResponse_ServingStatus): void;
  /** Sets every known service (and "") to `status`. */
  setAll(status: health.HealthCheckResponse_ServingStatus): void;
  get(service: string): health.HealthCheckResponse_ServingStatus | undefined;
  readonly impl: ServiceImpl<typeof health.Health>;
}

/** Creates health state with `services` (and "") initially NOT_SERVING. */
export function createHealthState(services: readonly string[]): HealthState {
  const statuses = new Map<string, health.HealthCheckResponse_ServingStatus>();
  const watchers = new Set<(service: string) => void>();
  for (const s of ["", ...services]) statuses.set(s, ServingStatus.NOT_SERVING);
  const set = (service: string, status: health.HealthCheckResponse_ServingStatus) => {
    statuses.set(service, status);
    for (const w of watchers) w(service);
  };
  const impl: ServiceImpl<typeof health.Health> = {
    async check(req) {
      const s = statuses.get(req.service);
      if (s === undefined) throw new NotFoundError(`unknown service '${req.service}'`);
      return { status: s };
    },
    async *watch(req, ctx) {
      if (req.service.length > 1024) throw new InvalidArgumentError("service", "is too long");
      let pending = true;
      let wake: (() => void) | undefined;
      const onChange = (service: string) => {
        if (service === req.service) {
          pending = true;
          wake?.();
        }
      };
      watchers.add(onChange);
      const onAbort = () => wake?.();
      ctx.signal.addEventListener("abort", onAbort);
      try {
        let last: health.HealthCheckResponse_ServingStatus | undefined;
        while (!ctx.signal.aborted) {
          if (pending) {
            pending = false;
            const s = statuses.get(req.service) ?? ServingStatus.SERVICE_UNKNOWN;
            if (s !== last) {
              last = s;
              yield create(health.HealthCheckResponseSchema, { status: s });
            }
            continue;
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
        }
      } finally {
        watchers.delete(onChange);
        ctx.signal.removeEventListener("abort", onAbort);
      }
    },
    async list() {
      const out: Record<string, { status: health.HealthCheckResponse_ServingStatus }> = {};
      for (const [k, v] of statuses) out[k] = { status: v };
      return { statuses: out };
    },
  };
  return {
    set,
    setAll: (status) => {
      for (const k of [...statuses.keys()]) set(k, status);
    },
    get: (s) => statuses.get(s),
    impl,
  };
}
