/**
 * Result validation: every `RewardResult` the trainer reads is checked against the contract its service
 * declared in `Describe` (asked once at run start, over the bus: `mesh.describe.<service>`) before the
 * assembler may use it.
 *
 * Run start ({@link describeRunServices}): every service a component names must answer `Describe`, emit
 * that component, and consume every domain the run routes to it — otherwise the run fails before step 1
 * with a message naming the service, the component or the domain (instead of training at 0 or dropping
 * every group at the deadline).
 *
 * Per result ({@link checkResult}), for services of the run: the subject's run and service are the
 * result's own (`mesh.rewards.<run>.<service>.<rollout>`; with NATS permissions the subject is what proves
 * who published — in a run the assembler's provenance check stops a mismatch first, as `mismatched`), the
 * version is the described one, the components are exactly the declared set (each once),
 * every value is a finite number within the declared `[min, max]`, the status is a known one, and an
 * `ERROR` / `TIMEOUT` component carries the minimum (`reward.proto`). Results of services the run does
 * not use are left to the assembler (counted as unexpected, never used).
 *
 * A rejected result ({@link createResultValidator}) is counted per service and reason, logged with its
 * reason (the first of each service/reason at once, then at most once per interval with the number
 * suppressed), and never reaches the assembler: its slot stays empty, exactly like a result that never
 * came, so the group is dropped or imputed at the deadline per `groups.missing` (a reward subject holds
 * one result, so no genuine one can follow on the same subject).
 * @module
 */
import { ComponentStatus, type DescribeResponse, type RewardResult } from "@reward-mesh/proto";
import { type Logger, type MeshBus, parseRewardSubject, requestDescribe } from "@reward-mesh/sdk";
import type { RunConfig } from "./config.js";

/** Why a result was rejected (the keys of `rejectedResults` in `metrics.jsonl`). */
export const RejectReasons = [
  "run-mismatch",
  "service-mismatch",
  "wrong-version",
  "unknown-component",
  "duplicate-component",
  "missing-component",
  "bad-status",
  "non-finite",
  "out-of-range",
  "error-not-minimum",
] as const;
/** One of {@link RejectReasons}. */
export type RejectReason = (typeof RejectReasons)[number];

/** What the trainer holds of a service's `Describe`. */
export interface ServiceContract {
  readonly name: string;
  readonly version: string;
  readonly domains: readonly string[];
  /** Declared components by name. */
  readonly components: ReadonlyMap<string, { readonly min: number; readonly max: number }>;
}

/** The contract of a `DescribeResponse`. */
export function contractOf(d: DescribeResponse): ServiceContract {
  return {
    name: d.name,
    version: d.version,
    domains: [...d.domains],
    components: new Map(d.components.map((c) => [c.name, { min: c.min, max: c.max }])),
  };
}

/** The run cannot start: its configuration and the running services disagree. */
export class RunContractError extends Error {
  override readonly name = "RunContractError";
  readonly retryable = false;
}

/** Services a run's components name, in first-use order. */
export function runServices(config: RunConfig): string[] {
  return [...new Set(config.components.map((c) => c.service))];
}

/**
 * Checks the run configuration against the services' contracts (pure). `domains` are the routing
 * domains of the run's tasks.
 */
export function checkRunAgainstContracts(
  config: RunConfig,
  domains: readonly string[],
  contracts: ReadonlyMap<string, ServiceContract>,
): void {
  config.components.forEach((c, i) => {
    const contract = contracts.get(c.service);
    if (!contract) throw new RunContractError(`'components[${i}]': service '${c.service}' has no contract`);
    if (!contract.components.has(c.component)) {
      throw new RunContractError(
        `'components[${i}]' names '${c.service}/${c.component}', but service '${c.service}' ${contract.version} does not emit '${c.component}' (it emits: ${[...contract.components.keys()].join(", ")})`,
      );
    }
  });
  for (const domain of new Set(domains)) {
    for (const service of runServices(config)) {
      if (!(config.serviceDomains[service] ?? []).includes(domain)) continue;
      const contract = contracts.get(service)!;
      if (!contract.domains.includes(domain)) {
        throw new RunContractError(
          `service '${service}' does not consume domain '${domain}' (it consumes: ${contract.domains.join(", ")}), but the run expects its results there ('services.${service}'): every such group would be dropped`,
        );
      }
    }
  }
}

/**
 * Every routing domain of the run's tasks is scored by at least one service of the run (pure): a domain
 * whose rollouts no component's service scores would train silently at reward 0 (every component
 * NOT_APPLICABLE). `domains` are the routing domains of the run's tasks.
 */
export function checkDomainsScored(config: RunConfig, domains: readonly string[]): void {
  const services = runServices(config);
  for (const domain of new Set(domains)) {
    if (services.some((s) => (config.serviceDomains[s] ?? []).includes(domain))) continue;
    const offered = services.map((s) => `${s} [${(config.serviceDomains[s] ?? []).join(", ")}]`).join("; ");
    throw new RunContractError(
      `the run has tasks of domain '${domain}', but no service of its components scores '${domain}' (they score: ${offered}): those groups would train at reward 0. Add a component of a service that scores '${domain}', or drop those tasks`,
    );
  }
}

/** Options of {@link describeRunServices}. */
export interface DescribeRunOptions {
  readonly timeoutMs: number;
  readonly logger?: Logger;
}

/**
 * Asks every service of the run for its `Describe` (in parallel, each within `timeoutMs`) and checks the
 * run against the answers. Throws {@link RunContractError} naming the first service that did not answer,
 * or what the configuration asks that a service does not offer.
 */
export async function describeRunServices(
  bus: MeshBus,
  config: RunConfig,
  domains: readonly string[],
  o: DescribeRunOptions,
): Promise<Map<string, ServiceContract>> {
  const names = runServices(config);
  const answers = await Promise.allSettled(
    names.map((n) => requestDescribe(bus.nc, n, { timeoutMs: o.timeoutMs })),
  );
  const contracts = new Map<string, ServiceContract>();
  answers.forEach((a, i) => {
    if (a.status === "rejected") {
      const why = a.reason instanceof Error ? a.reason.message : String(a.reason);
      throw new RunContractError(`the run cannot start: ${why}`, { cause: a.reason });
    }
    contracts.set(names[i]!, contractOf(a.value));
  });
  checkRunAgainstContracts(config, domains, contracts);
  for (const c of contracts.values())
    o.logger?.info({ service: c.name, version: c.version, components: [...c.components.keys()] }, "contract");
  return contracts;
}

/** Verdict on one result. */
export type Verdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: RejectReason; readonly detail: string };

const OK: Verdict = { ok: true };
const reject = (reason: RejectReason, detail: string): Verdict => ({ ok: false, reason, detail });
const MINIMUM_STATUSES = new Set<ComponentStatus>([ComponentStatus.ERROR, ComponentStatus.TIMEOUT]);
const KNOWN_STATUSES = new Set<ComponentStatus>([
  ComponentStatus.OK,
  ComponentStatus.NOT_APPLICABLE,
  ComponentStatus.ERROR,
  ComponentStatus.TIMEOUT,
]);

/** Checks the components of a result against its service's contract (pure). */
function checkComponents(r: RewardResult, contract: ServiceContract): Verdict {
  const seen = new Set<string>();
  for (const c of r.components) {
    const decl = contract.components.get(c.name);
    if (!decl) return reject("unknown-component", `'${c.name}' is not a component of '${contract.name}'`);
    if (seen.has(c.name)) return reject("duplicate-component", `'${c.name}' appears twice`);
    seen.add(c.name);
    if (!KNOWN_STATUSES.has(c.status)) return reject("bad-status", `'${c.name}' has status ${c.status}`);
    if (!Number.isFinite(c.value)) return reject("non-finite", `'${c.name}' = ${c.value}`);
    if (c.value < decl.min || c.value > decl.max) {
      return reject("out-of-range", `'${c.name}' = ${c.value}, outside [${decl.min}, ${decl.max}]`);
    }
    if (MINIMUM_STATUSES.has(c.status) && c.value !== decl.min) {
      return reject(
        "error-not-minimum",
        `'${c.name}' = ${c.value} with status ${ComponentStatus[c.status]}; the minimum is ${decl.min}`,
      );
    }
  }
  for (const name of contract.components.keys())
    if (!seen.has(name)) return reject("missing-component", `'${name}' is missing`);
  return OK;
}

/**
 * The rules (pure). `subject` is the subject the result was read from; results of services without a
 * contract here pass (the assembler ignores them).
 */
export function checkResult(
  r: RewardResult,
  subject: string,
  runId: string,
  contracts: ReadonlyMap<string, ServiceContract>,
): Verdict {
  const from = parseRewardSubject(subject);
  if (!from || from.runId !== runId || r.runId !== runId) {
    return reject("run-mismatch", `run '${r.runId}' read on ${subject}, expected run '${runId}'`);
  }
  if (r.service !== from.service) {
    return reject("service-mismatch", `result of '${r.service}' published on ${subject}`);
  }
  const contract = contracts.get(r.service);
  if (!contract) return OK;
  if (r.serviceVersion !== contract.version) {
    return reject(
      "wrong-version",
      `version '${r.serviceVersion}', the service described '${contract.version}' at run start`,
    );
  }
  return checkComponents(r, contract);
}

/** Rejected results per service (the subject's service token) and reason. */
export type RejectCounts = Record<string, Partial<Record<RejectReason, number>>>;

/** Options of {@link createResultValidator}. */
export interface ResultValidatorOptions {
  readonly runId: string;
  readonly contracts: ReadonlyMap<string, ServiceContract>;
  readonly logger: Logger;
  /** At most one log line per service and reason in this interval (the first is logged at once). */
  readonly logIntervalMs: number;
  /** @default Date.now */
  readonly now?: () => number;
}

/** Applies {@link checkResult}, counting and logging the rejections. */
export interface ResultValidator {
  /** True when `r` (read on `subject`) may be used. */
  admit(r: RewardResult, subject: string): boolean;
  /** Rejections since the previous call (one step's worth). */
  takeStepCounts(): RejectCounts;
  /** Rejections since the start of this process. */
  totals(): RejectCounts;
}

/** Creates the validator of one run. */
export function createResultValidator(o: ResultValidatorOptions): ResultValidator {
  const now = o.now ?? Date.now;
  let step: RejectCounts = {};
  const total: RejectCounts = {};
  const lastLog = new Map<string, { at: number; suppressed: number }>();
  const bump = (counts: RejectCounts, service: string, reason: RejectReason) => {
    const s = counts[service] ?? {};
    s[reason] = (s[reason] ?? 0) + 1;
    counts[service] = s;
  };
  const log = (service: string, reason: RejectReason, detail: string, r: RewardResult) => {
    const key = `${service}\u0000${reason}`;
    const t = now();
    const last = lastLog.get(key);
    if (last && t - last.at < o.logIntervalMs) {
      last.suppressed++;
      return;
    }
    o.logger.warn(
      {
        service,
        reason,
        detail,
        rolloutId: r.rolloutId,
        step: r.step,
        ...(last ? { suppressedSinceLastLog: last.suppressed } : {}),
      },
      "reward result rejected: not used for training",
    );
    lastLog.set(key, { at: t, suppressed: 0 });
  };
  return {
    admit(r, subject) {
      const v = checkResult(r, subject, o.runId, o.contracts);
      if (v.ok) return true;
      const service = parseRewardSubject(subject)?.service ?? (r.service || "(none)");
      bump(step, service, v.reason);
      bump(total, service, v.reason);
      log(service, v.reason, v.detail, r);
      return false;
    },
    takeStepCounts() {
      const out = step;
      step = {};
      return out;
    },
    totals: () => JSON.parse(JSON.stringify(total)) as RejectCounts,
  };
}
