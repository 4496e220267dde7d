/**
 * Test helpers for reward-service authors (`@reward-mesh/sdk/testing`): a real `nats-server -js` per
 * suite, rollouts, and reading what landed in the mesh streams. Real servers only — no imitations.
 * @module
 */
import { create, fromBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Rollout, RolloutSchema } from "@reward-mesh/proto";
import type { BusOptions, ServiceRuntimeOptions } from "../config.js";
import type { GrpcClientSecurity } from "../grpc-security.js";
import { waitServing } from "../health-client.js";
import { type LocalNats, startNatsServer } from "../local-nats.js";
import { type MeshAuth, type ServiceIdentity, writeMeshAuth } from "../nats-accounts.js";
import { waitForLogRecord } from "../process-log.js";
import { defineRewardService, type RewardServiceDefinition, type RewardServiceSpec } from "../service.js";

export type { LocalNats };
export type { StoredMessage } from "../stream-reader.js";
export { readStream } from "../stream-reader.js";
export type { TestPki } from "./pki.js";
export { createTestPki } from "./pki.js";
export type { FuzzOutcome } from "./fuzz.js";
export {
  deeplyNested,
  deepValue,
  EDGE_NUMBERS,
  FUZZ_CALL_DEADLINE_MS,
  FUZZ_PROPERTY_TIME_LIMIT_MS,
  FUZZ_RUN_SCALE,
  FUZZ_SEED,
  FuzzFailure,
  fuzzCall,
  fuzzCallAsync,
  fuzzParameters,
  mutatedText,
  mutatedValue,
  NASTY_FRAGMENTS,
  NASTY_STRINGS,
  nastyString,
  nastyValue,
  ownObject,
  PROTOTYPE_KEYS,
  toJsonText,
} from "./fuzz.js";

/** Starts a private JetStream server on a free port (call `stop()` in `after`). */
export function startTestNats(): Promise<LocalNats> {
  return startNatsServer({ port: -1 });
}

/** A test server with the mesh's generated users (anonymous clients refused). */
export interface SecuredTestNats extends LocalNats {
  /** The generated users' credentials (`admin`, `trainer`, `services[name]`). */
  readonly auth: MeshAuth;
}

/**
 * Starts a private JetStream server on a free port with the users `reward-mesh up` generates (admin,
 * trainer, one per service in `services`) in a temporary directory removed on `stop()`.
 */
export async function startSecuredTestNats(services: readonly ServiceIdentity[]): Promise<SecuredTestNats> {
  const dir = await mkdtemp(join(tmpdir(), "reward-mesh-auth-"));
  try {
    const auth = await writeMeshAuth(dir, services);
    const nats = await startNatsServer({ port: -1, configFile: auth.configFile, auth: auth.admin });
    return {
      url: nats.url,
      started: nats.started,
      kill: nats.kill,
      auth,
      async stop() {
        await nats.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

let counter = 0;

/** A valid rollout with sensible defaults; override any field. */
/**
 * A reward service that answers Describe and consumes its domains but never finishes scoring: every
 * scoring waits until it is aborted. For tests of deadlines, stops and missing results.
 */
export function neverScoringService(spec: Omit<RewardServiceSpec, "score">): RewardServiceDefinition {
  return defineRewardService({
    ...spec,
    score: (_r, { signal }) =>
      new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
  });
}

export function makeRollout(init: Omit<MessageInitShape<typeof RolloutSchema>, "$typeName"> = {}): Rollout {
  counter++;
  return create(RolloutSchema, {
    id: `r${counter}`,
    runId: "test-run",
    step: 1,
    groupId: "g1",
    index: 0,
    groupSize: 1,
    response: "hello",
    task: { id: "t1", kind: { case: "custom", value: {} } },
    ...(init as object),
  } as MessageInitShape<typeof RolloutSchema>);
}

/** Decodes a rollout (for DLQ payload checks). */
export function decodeRollout(data: Uint8Array): Rollout {
  return fromBinary(RolloutSchema, data);
}

/** Bus options for tests: one replica, an hour of retention, JetStream's default duplicate window. */
export function testBusOptions(natsUrl: string): BusOptions {
  return {
    natsUrl,
    streamMaxAgeSeconds: 3600,
    streamMaxBytes: -1,
    duplicateWindowMs: 120_000,
    streamReplicas: 1,
  };
}

/**
 * Runtime options for a service started in a test's own process (`startRewardService`): loopback on a
 * free port, its JetStream worker on, short ack wait and back-off, silent logs.
 */
export function testRuntimeOptions(natsUrl: string): ServiceRuntimeOptions {
  return {
    grpcHost: "127.0.0.1",
    grpcPort: 0,
    concurrency: 8,
    workerEnabled: true,
    ackWaitMs: 5_000,
    maxDeliver: 5,
    nakBackoffMs: 50,
    nakBackoffMaxMs: 500,
    logLevel: "silent",
    bus: testBusOptions(natsUrl),
  };
}

/** A service process started from its entrypoint for a test. */
export interface ServiceProcess {
  readonly child: ChildProcess;
  /** `127.0.0.1:<port>` of its gRPC server (the port it bound itself: it starts on port 0). */
  readonly address: string;
  /** `host:port` of its plaintext health-only port, when `<PREFIX>_HEALTH_PORT` is set (`0` works). */
  readonly healthAddress?: string;
  /** URL of its HTTP/JSON server, when `<PREFIX>_HTTP_PORT` is set (`0` works). */
  readonly httpUrl?: string;
  /** What it wrote to stderr so far (its logs). */
  stderr(): string;
  /** SIGTERM, then the exit code (a clean drain gives 0). */
  stop(): Promise<number | null>;
}

/** Options of {@link startServiceProcess}. */
export interface ServiceProcessOptions {
  /** Environment prefix of the service (`LENGTH`, `CODE_EXEC`, ...). */
  readonly envPrefix: string;
  readonly natsUrl: string;
  /**
   * More environment (its options). Telemetry exporters are off and LOG_LEVEL is info unless set here
   * (info or lower: the helper reads the service's address from its `<name> ready` info line).
   * `<PREFIX>_GRPC_PORT` is always 0.
   */
  readonly env?: Readonly<Record<string, string>>;
  /** Extra Node.js options before the entrypoint (`--cpu-prof` and friends, which NODE_OPTIONS refuses). */
  readonly execArgv?: readonly string[];
  /** How to dial it for the readiness check (when `env` gives it TLS or mutual TLS). @default plaintext */
  readonly security?: GrpcClientSecurity;
  /** How long it may take to log its address and then report SERVING. @default 30000 */
  readonly timeoutMs?: number;
}

/** Log levels at which a service still writes its info-level `<name> ready` line. */
const READY_LINE_LEVELS = new Set(["info", "debug", "trace"]);

/**
 * Starts a service's `main.ts` as its own process, as `reward-mesh up` does, with `<PREFIX>_GRPC_PORT=0`:
 * the service binds a free port itself (no other process can take it between a pick and the bind, as
 * with {@link freePort}) and the helper reads the address from its structured `<name> ready` log line
 * (`serveRewardService`'s, with `address`, and `healthAddress`/`httpUrl` when those ports are on), then
 * resolves once it reports SERVING. Rejects with the child's stderr tail if it exits first or does not
 * get there within `timeoutMs`.
 */
export async function startServiceProcess(
  mainPath: string,
  o: ServiceProcessOptions,
): Promise<ServiceProcess> {
  const level = o.env?.["LOG_LEVEL"] ?? "info";
  if (!READY_LINE_LEVELS.has(level)) {
    throw new TypeError(
      `startServiceProcess: env LOG_LEVEL=${JSON.stringify(level)} hides the service's info-level "ready" line, which is how the helper learns the port it bound; use info, debug or trace`,
    );
  }
  const timeoutMs = o.timeoutMs ?? 30_000;
  const started = Date.now();
  const child = spawn(process.execPath, [...(o.execArgv ?? []), "--import", "tsx", mainPath], {
    env: {
      PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
      OTEL_TRACES_EXPORTER: "none",
      OTEL_METRICS_EXPORTER: "none",
      OTEL_LOGS_EXPORTER: "none",
      ...o.env,
      LOG_LEVEL: level,
      NATS_URL: o.natsUrl,
      [`${o.envPrefix}_GRPC_PORT`]: "0",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-20_000);
  });
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    return exited;
  };
  try {
    const ready = await waitForLogRecord(
      child,
      (r) => typeof r["msg"] === "string" && r["msg"].endsWith(" ready") && typeof r["address"] === "string",
      {
        what: `the service's "<name> ready" line with its address (${mainPath})`,
        timeoutMs,
        describe: () => stderr,
      },
    );
    const address = ready["address"] as string;
    await waitServing(address, {
      child,
      describe: () => stderr,
      timeoutMs: Math.max(1_000, timeoutMs - (Date.now() - started)),
      ...(o.security ? { security: o.security } : {}),
    });
    const healthAddress = ready["healthAddress"];
    const httpUrl = ready["httpUrl"];
    return {
      child,
      address,
      ...(typeof healthAddress === "string" ? { healthAddress } : {}),
      ...(typeof httpUrl === "string" ? { httpUrl } : {}),
      stderr: () => stderr,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
