/** Test-only reward services and OpenTelemetry set-up for the SDK's integration tests. */
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { type Client, ComponentStatus, type grpc, type reflectionV1 } from "@reward-mesh/proto";
import { defineRewardService, InvalidArgumentError, type RewardServiceDefinition } from "../src/index.js";

/** Options of the echo fixture. */
export interface EchoOptions {
  /** Sleep per rollout (ms), honouring the abort signal. */
  readonly delayMs?: number;
  /** Called for every scored rollout id (with its attempt number for that id). */
  readonly onScore?: (id: string) => void;
  /** Throw a retryable infrastructure error for the first N attempts of ids in this map. */
  readonly failFirst?: Map<string, number>;
  /** Record aborts. */
  readonly onAbort?: (reason: unknown) => void;
  /** Called when scoring of a rollout starts (before the delay). */
  readonly onStart?: (id: string) => void;
}

/**
 * `echo`: components `chars` (response length) and `has_x` (1 when the response contains "x").
 * Metadata `reject=1` makes it throw INVALID_ARGUMENT naming `rollout.metadata["reject"]`.
 */
export function createEchoService(o: EchoOptions = {}): RewardServiceDefinition {
  const attempts = new Map<string, number>();
  return defineRewardService({
    name: "echo",
    version: "0.0.1",
    domains: ["custom"],
    components: [
      { name: "chars", description: "response length", min: 0, max: Number.POSITIVE_INFINITY },
      { name: "has_x", description: "1 if the response contains x", min: 0, max: 1 },
    ],
    validate: (r) => {
      if (r.metadata["reject"] === "1")
        throw new InvalidArgumentError('rollout.metadata["reject"]', "asks to be rejected");
    },
    score: async (r, ctx) => {
      const n = (attempts.get(r.id) ?? 0) + 1;
      attempts.set(r.id, n);
      o.onStart?.(r.id);
      if (o.delayMs) {
        await new Promise<void>((resolve, reject) => {
          const onAbort = () => {
            clearTimeout(t);
            o.onAbort?.(ctx.signal.reason);
            reject(ctx.signal.reason);
          };
          const t = setTimeout(() => {
            ctx.signal.removeEventListener("abort", onAbort);
            resolve();
          }, o.delayMs);
          ctx.signal.addEventListener("abort", onAbort, { once: true });
        });
      }
      const fail = o.failFirst?.get(r.id) ?? 0;
      if (n <= fail) throw new Error(`simulated infrastructure failure ${n}/${fail}`);
      o.onScore?.(r.id);
      return [
        { name: "chars", value: r.response.length },
        { name: "has_x", value: r.response.includes("x") ? 1 : 0, status: ComponentStatus.OK },
      ];
    },
  });
}

/** Installs an in-memory tracer, the W3C propagator and an async context manager (once per process). */
export function installTestTracing(): { exporter: InMemorySpanExporter; provider: BasicTracerProvider } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  return { exporter, provider };
}

/** The gRPC status code of `p`'s rejection (or "ok"). */
export async function outcome(p: Promise<unknown>): Promise<grpc.status | "ok"> {
  try {
    await p;
    return "ok";
  } catch (err) {
    return (err as grpc.ServiceError).code;
  }
}

/** Asks a reflection client to list services and reads the stream to its end (for refusal checks). */
export async function listServicesByReflection(
  client: Client<typeof reflectionV1.ServerReflection>,
): Promise<void> {
  async function* list() {
    yield { messageRequest: { case: "listServices" as const, value: "" } };
  }
  for await (const _ of client.serverReflectionInfo(list(), { timeoutMs: 5_000 })) {
    // nothing is expected: the callers check the status the stream ends with
  }
}
