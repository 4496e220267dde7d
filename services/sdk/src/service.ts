/**
 * `defineRewardService`: from one `score(rollout, ctx)` function, a service definition that the gRPC
 * server, the JetStream worker and the in-process `reward-mesh score` all use the same way.
 * @module
 */
import { create } from "@bufbuild/protobuf";
import type { Context } from "@opentelemetry/api";
import { context as otelContext } from "@opentelemetry/api";
import {
  type ComponentReward,
  ComponentRewardSchema,
  ComponentSpecSchema,
  ComponentStatus,
  type DescribeResponse,
  DescribeResponseSchema,
  type RewardResult,
  RewardResultSchema,
  type Rollout,
  type Task,
} from "@reward-mesh/proto";
import { InvalidArgumentError, ServiceContractError } from "./errors.js";
import { type Logger, silentLogger } from "./logger.js";
import { checkSubjectToken } from "./subjects.js";
import { inSpan, meshMeter, rolloutSpanAttributes, SECONDS_BUCKETS } from "./telemetry.js";
import { validateRollout } from "./validate.js";

/** Declares one component a service emits (part of the service's contract). */
export interface ComponentDeclaration {
  readonly name: string;
  readonly description: string;
  /** Smallest value the component takes. */
  readonly min: number;
  /** Largest value the component takes. */
  readonly max: number;
}

/** What `score` returns per component; `status` defaults to OK. */
export interface ComponentValue {
  readonly name: string;
  readonly value: number;
  readonly status?: ComponentStatus;
  readonly details?: string;
}

/** What `score` receives besides the rollout. */
export interface ScoreContext {
  /** Aborted on the caller's deadline / cancellation or on shutdown: stop work and throw. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
}

/** Everything a reward-service author writes. */
export interface RewardServiceSpec {
  /** Service name: a subject token, used in subjects, consumer names and `RewardResult.service`. */
  readonly name: string;
  /** Semantic version of the scoring logic (reported in every result). */
  readonly version: string;
  /** Rollout domains consumed from `mesh.rollouts.<domain>.<run>`. */
  readonly domains: readonly string[];
  readonly components: readonly ComponentDeclaration[];
  /** Task kinds the service needs; a rollout without one is INVALID_ARGUMENT. Empty = any. */
  readonly taskKinds?: readonly NonNullable<Task["kind"]["case"]>[];
  /** Extra validation; throw {@link InvalidArgumentError} naming the field. */
  readonly validate?: (rollout: Rollout) => void;
  /**
   * Scores one (already validated) rollout. A candidate failure is a component status, not an
   * exception; throw only for bad input ({@link InvalidArgumentError}) or infrastructure faults.
   */
  readonly score: (rollout: Rollout, ctx: ScoreContext) => Promise<readonly ComponentValue[]>;
}

/** Per-service request statistics (nats services `STATS` style). */
export interface ServiceStats {
  readonly requests: number;
  readonly errors: number;
  readonly lastError: string;
  /** Sum of scoring latencies in ms (average = total / requests). */
  readonly totalLatencyMs: number;
}

/** Options of one scoring call. */
export interface ScoreCallOptions {
  readonly signal?: AbortSignal;
  readonly logger?: Logger;
  /** Trace context of the caller (from gRPC metadata or NATS headers). */
  readonly parentContext?: Context;
  /** Where the request came from, for span attributes (`grpc` | `jetstream` | `local`). */
  readonly transport?: string;
}

/** A defined reward service. */
export interface RewardServiceDefinition {
  readonly name: string;
  readonly version: string;
  readonly domains: readonly string[];
  readonly components: readonly ComponentDeclaration[];
  /** The `Describe` answer. */
  describe(): DescribeResponse;
  /** Validates the rollout (throws {@link InvalidArgumentError}). */
  validate(rollout: Rollout | undefined): Rollout;
  /** Validates, scores and assembles the {@link RewardResult}. */
  scoreRollout(rollout: Rollout | undefined, options?: ScoreCallOptions): Promise<RewardResult>;
  stats(): ServiceStats;
}

function checkSpec(spec: RewardServiceSpec): void {
  checkSubjectToken("name", spec.name);
  if (spec.version === "") throw new ServiceContractError("service 'version' is required");
  if (spec.domains.length === 0) throw new ServiceContractError(`service '${spec.name}' declares no domains`);
  for (const d of spec.domains) checkSubjectToken("domains", d);
  const seen = new Set<string>();
  for (const c of spec.components) {
    if (seen.has(c.name)) throw new ServiceContractError(`component '${c.name}' declared twice`);
    seen.add(c.name);
    if (!(c.min <= c.max)) throw new ServiceContractError(`component '${c.name}' has min > max`);
    // ERROR / TIMEOUT values are the minimum, and results carry finite numbers only.
    if (!Number.isFinite(c.min))
      throw new ServiceContractError(`component '${c.name}' needs a finite min, got ${c.min}`);
  }
  if (seen.size === 0) throw new ServiceContractError(`service '${spec.name}' declares no components`);
}

/** Statuses whose value is, by the contract in `reward.proto`, the component's minimum. */
const MINIMUM_STATUSES: ReadonlySet<ComponentStatus> = new Set([
  ComponentStatus.ERROR,
  ComponentStatus.TIMEOUT,
]);

/**
 * One returned component checked against its declaration — the one place every SDK service gets the
 * value contract: a finite number; ERROR / TIMEOUT carry the declared minimum (any other value is
 * replaced by it, and `details` says so: a candidate's failure can never score above the minimum);
 * OK / NOT_APPLICABLE values lie within `[min, max]`, else the service broke its contract
 * ({@link ServiceContractError}: an infrastructure fault, retried and then dead-lettered, never published).
 */
export function checkedComponent(
  service: string,
  decl: ComponentDeclaration,
  v: ComponentValue,
): { name: string; value: number; status: ComponentStatus; details: string } {
  const status = v.status ?? ComponentStatus.OK;
  if (!(status in ComponentStatus) || status === ComponentStatus.UNSPECIFIED) {
    throw new ServiceContractError(`service '${service}' returned '${v.name}' with status ${status}`);
  }
  if (!Number.isFinite(v.value)) {
    throw new ServiceContractError(`service '${service}' returned a non-finite '${v.name}' (${v.value})`);
  }
  const details = v.details ?? "";
  if (MINIMUM_STATUSES.has(status)) {
    if (v.value === decl.min) return { name: v.name, value: v.value, status, details };
    const note = `value ${v.value} replaced by the minimum ${decl.min}: status ${ComponentStatus[status]}`;
    return { name: v.name, value: decl.min, status, details: details ? `${details} (${note})` : note };
  }
  if (v.value < decl.min || v.value > decl.max) {
    throw new ServiceContractError(
      `service '${service}' returned '${v.name}' = ${v.value}, outside its declared [${decl.min}, ${decl.max}]`,
    );
  }
  return { name: v.name, value: v.value, status, details };
}

/** Defines a reward service from its spec (validated now, not at the first request). */
export function defineRewardService(spec: RewardServiceSpec): RewardServiceDefinition {
  checkSpec(spec);
  const declared = new Map(spec.components.map((c) => [c.name, c]));
  let requests = 0;
  let errors = 0;
  let lastError = "";
  let totalLatencyMs = 0;
  const scoreSpan = `reward/${spec.name}/score`;
  const meter = meshMeter();
  // Metric names are the same in every service; the service is a label (one dashboard reads them all).
  const labels = { service: spec.name };
  // Counters are observed at collection time from plain tallies: a synchronous counter hashes its
  // attributes on every add, several times per rollout on the hot path.
  const componentTally = new Map<string, { readonly attributes: Record<string, string>; n: number }>();
  const tallyComponent = (component: string, status: string) => {
    const key = `${component}\u0000${status}`;
    const t = componentTally.get(key);
    if (t) t.n++;
    else componentTally.set(key, { attributes: { ...labels, component, status }, n: 1 });
  };
  meter
    .createObservableCounter("reward_mesh_score_requests", {
      description: "Score calls (gRPC and JetStream)",
    })
    .addCallback((r) => r.observe(requests, labels));
  meter
    .createObservableCounter("reward_mesh_score_errors", {
      description: "Score calls that failed (invalid input or a service fault)",
    })
    .addCallback((r) => r.observe(errors, labels));
  const latency = meter.createHistogram("reward_mesh_score_duration_seconds", {
    unit: "s",
    description: "Time to score one rollout, per service",
    advice: { explicitBucketBoundaries: [...SECONDS_BUCKETS] },
  });
  meter
    .createObservableCounter("reward_mesh_component_results", {
      description: "Component values returned, per service, component and status",
    })
    .addCallback((r) => {
      for (const t of componentTally.values()) r.observe(t.n, t.attributes);
    });

  const describe = () =>
    create(DescribeResponseSchema, {
      name: spec.name,
      version: spec.version,
      domains: [...spec.domains],
      components: spec.components.map((c) => create(ComponentSpecSchema, c)),
    });

  const validate = (rollout: Rollout | undefined): Rollout => {
    const r = validateRollout(rollout, spec.taskKinds ?? []);
    spec.validate?.(r);
    return r;
  };

  const assemble = (values: readonly ComponentValue[]): ComponentReward[] => {
    const seen = new Set<string>();
    const out: ComponentReward[] = [];
    for (const v of values) {
      const decl = declared.get(v.name);
      if (!decl)
        throw new ServiceContractError(`service '${spec.name}' returned undeclared component '${v.name}'`);
      if (seen.has(v.name))
        throw new ServiceContractError(`service '${spec.name}' returned '${v.name}' twice`);
      seen.add(v.name);
      out.push(create(ComponentRewardSchema, checkedComponent(spec.name, decl, v)));
    }
    for (const name of declared.keys()) {
      if (!seen.has(name))
        throw new ServiceContractError(`service '${spec.name}' did not return component '${name}'`);
    }
    return out;
  };

  const scoreRollout = async (
    rollout: Rollout | undefined,
    options: ScoreCallOptions = {},
  ): Promise<RewardResult> => {
    const started = performance.now();
    requests++;
    const parent = options.parentContext ?? otelContext.active();
    try {
      const r = validate(rollout);
      return await inSpan(
        scoreSpan,
        parent,
        () => ({
          "reward.service": spec.name,
          ...rolloutSpanAttributes(r),
          "reward.transport": options.transport ?? "local",
        }),
        async (span) => {
          const values = await spec.score(r, {
            signal: options.signal ?? new AbortController().signal,
            logger: options.logger ?? silentLogger,
          });
          const durationMs = performance.now() - started;
          const components = assemble(values);
          const recording = span.isRecording();
          for (const c of components) {
            const status = ComponentStatus[c.status] ?? String(c.status);
            if (recording) {
              span.setAttribute(`reward.component.${c.name}.value`, c.value);
              span.setAttribute(`reward.component.${c.name}.status`, status);
            }
            tallyComponent(c.name, status);
          }
          return create(RewardResultSchema, {
            rolloutId: r.id,
            runId: r.runId,
            step: r.step,
            groupId: r.groupId,
            index: r.index,
            groupSize: r.groupSize,
            policyVersion: r.policyVersion,
            service: spec.name,
            serviceVersion: spec.version,
            components,
            durationMs,
          });
        },
      );
    } catch (err) {
      errors++;
      lastError = err instanceof Error ? err.message : String(err);
      throw err;
    } finally {
      const ms = performance.now() - started;
      totalLatencyMs += ms;
      latency.record(ms / 1000, labels);
    }
  };

  return {
    name: spec.name,
    version: spec.version,
    domains: spec.domains,
    components: spec.components,
    describe,
    validate,
    scoreRollout,
    stats: () => ({ requests, errors, lastError, totalLatencyMs }),
  };
}

export { InvalidArgumentError };
