/**
 * Subjects and streams of the mesh (the data flow in the top-level README). Every token that goes into a
 * subject is validated against `[A-Za-z0-9_-]+`, so a run id can never address another run's data.
 * @module
 */
import { InvalidArgumentError } from "./errors.js";

const TOKEN = /^[A-Za-z0-9_-]+$/;

/** True when `s` is a valid subject token. */
export function isSubjectToken(s: string): boolean {
  return TOKEN.test(s);
}

/** Throws {@link InvalidArgumentError} naming `field` unless `value` is a valid subject token. */
export function checkSubjectToken(field: string, value: string): string {
  if (value === "") throw new InvalidArgumentError(field, "is required");
  if (!TOKEN.test(value)) {
    throw new InvalidArgumentError(
      field,
      `must match [A-Za-z0-9_-]+ (a NATS subject token), got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** Stream names (one constant object, nats `ServiceVerb` style). */
export const Streams = {
  rollouts: "MESH_ROLLOUTS",
  rewards: "MESH_REWARDS",
  advantages: "MESH_ADVANTAGES",
  dlq: "MESH_DLQ",
} as const;
export type StreamName = (typeof Streams)[keyof typeof Streams];

/** Subject prefixes captured by each stream. */
export const StreamSubjects: Record<StreamName, string> = {
  MESH_ROLLOUTS: "mesh.rollouts.>",
  MESH_REWARDS: "mesh.rewards.>",
  MESH_ADVANTAGES: "mesh.advantages.>",
  MESH_DLQ: "mesh.dlq.>",
};

/** `mesh.rollouts.<domain>.<run>` */
export function rolloutSubject(domain: string, runId: string): string {
  return `mesh.rollouts.${checkSubjectToken("domain", domain)}.${checkSubjectToken("run_id", runId)}`;
}

/**
 * `mesh.rewards.<run>.<service>.<rollout>`: one subject per result, so "stored once" is the server's
 * per-subject check (`Nats-Expected-Last-Subject-Sequence: 0`) on a subject only `<service>` may publish
 * to — not a stream-wide `Nats-Msg-Id` that any publisher could claim first.
 */
export function rewardSubject(runId: string, service: string, rolloutId: string): string {
  return `mesh.rewards.${checkSubjectToken("run_id", runId)}.${checkSubjectToken("service", service)}.${checkSubjectToken("rollout_id", rolloutId)}`;
}

/** The run, service and rollout a reward subject names; undefined when `subject` is not one. */
export function parseRewardSubject(
  subject: string,
): { runId: string; service: string; rolloutId: string } | undefined {
  const t = subject.split(".");
  if (t.length !== 5 || t[0] !== "mesh" || t[1] !== "rewards") return undefined;
  return { runId: t[2]!, service: t[3]!, rolloutId: t[4]! };
}

/** `mesh.advantages.<run>` */
export function advantageSubject(runId: string): string {
  return `mesh.advantages.${checkSubjectToken("run_id", runId)}`;
}

/** `mesh.dlq.<service>` */
export function dlqSubject(service: string): string {
  return `mesh.dlq.${checkSubjectToken("service", service)}`;
}

/**
 * `mesh.describe.<service>`: core NATS request-reply (not a stream) answered with the service's
 * `DescribeResponse` by every replica (queue group), so the trainer learns a service's contract where it
 * already reaches it — the bus — without knowing its gRPC address.
 */
export function describeSubject(service: string): string {
  return `mesh.describe.${checkSubjectToken("service", service)}`;
}

/** Durable consumer name of `service` for `domain` (shared by all replicas). */
export function consumerName(service: string, domain: string): string {
  return `${checkSubjectToken("service", service)}--${checkSubjectToken("domain", domain)}`;
}

