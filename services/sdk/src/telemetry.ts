/**
 * Tracing and metrics through `@opentelemetry/api` only. The SDK is installed by entrypoints
 * (`main.ts`); without it every call here is a cheap no-op.
 *
 * W3C trace context travels in NATS headers and gRPC metadata (`traceparent`, `tracestate`), so one
 * trace follows a rollout from the publisher through every service to its advantage.
 * @module
 */
import {
  type Context,
  context,
  metrics,
  propagation,
  type Span,
  type SpanContext,
  SpanStatusCode,
  type TextMapGetter,
  type TextMapSetter,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";
import type { MsgHdrs } from "@nats-io/transport-node";
import type { grpc } from "@reward-mesh/proto";

/** Instrumentation scope of every span and metric the mesh emits. */
export const INSTRUMENTATION_SCOPE = "reward-mesh";

// The tracer of the global provider, looked up again only when that provider changes (an SDK installed or
// disabled): the SDK's `getTracer` builds a key string and searches a map, on every span otherwise.
let cachedTracer: { readonly provider: TracerProvider; readonly tracer: Tracer } | undefined;

/** The mesh tracer. */
export function meshTracer(): Tracer {
  const provider = trace.getTracerProvider();
  if (cachedTracer?.provider !== provider)
    cachedTracer = { provider, tracer: provider.getTracer(INSTRUMENTATION_SCOPE) };
  return cachedTracer.tracer;
}

/** Span attributes, or a function building them: called only when the span is recorded (sampled). */
export type SpanAttributesSource =
  | Record<string, string | number | boolean>
  | (() => Record<string, string | number | boolean>);

/** The mesh meter. */
export function meshMeter() {
  return metrics.getMeter(INSTRUMENTATION_SCOPE);
}

const natsGetter: TextMapGetter<MsgHdrs | undefined> = {
  keys: (h) => (h ? [...h.keys()] : []),
  get: (h, key) => {
    if (!h) return undefined;
    const v = h.get(key);
    return v === "" ? undefined : v;
  },
};

const natsSetter: TextMapSetter<MsgHdrs> = {
  set: (h, key, value) => h.set(key, value),
};

const metadataGetter: TextMapGetter<grpc.Metadata> = {
  keys: (m) => Object.keys(m.getMap()),
  get: (m, key) => {
    const v = m.get(key);
    if (v.length === 0) return undefined;
    return v.map((x) => x.toString());
  },
};

const metadataSetter: TextMapSetter<grpc.Metadata> = {
  set: (m, key, value) => m.set(key, value),
};

/** Writes the trace context of `ctx` into NATS headers. */
export function injectIntoHeaders(headers: MsgHdrs, ctx: Context = context.active()): void {
  propagation.inject(ctx, headers, natsSetter);
}

/** Reads a trace context from NATS headers (root context when absent). */
export function extractFromHeaders(headers: MsgHdrs | undefined): Context {
  return propagation.extract(context.active(), headers, natsGetter);
}

/** Writes the trace context of `ctx` into gRPC metadata. */
export function injectIntoMetadata(md: grpc.Metadata, ctx: Context = context.active()): void {
  propagation.inject(ctx, md, metadataSetter);
}

/** Reads a trace context from gRPC metadata. */
export function extractFromMetadata(md: grpc.Metadata): Context {
  return propagation.extract(context.active(), md, metadataGetter);
}

/**
 * Runs `fn` inside a new span (child of `parent`), recording exceptions and ending the span.
 * Span names follow `reward/<service>/<operation>`. The attributes are set only on a recorded span (a
 * sampled-out one costs no attribute building); so a sampler decides on the name and parent alone.
 */
export async function inSpan<T>(
  name: string,
  parent: Context,
  attributes: SpanAttributesSource,
  fn: (span: Span, ctx: Context) => Promise<T>,
): Promise<T> {
  const span = meshTracer().startSpan(name, undefined, parent);
  if (span.isRecording()) span.setAttributes(typeof attributes === "function" ? attributes() : attributes);
  const ctx = trace.setSpan(parent, span);
  try {
    return await context.with(ctx, () => fn(span, ctx));
  } catch (err) {
    span.recordException(err instanceof Error ? err : new Error(String(err)));
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}

/** The span context `ctx` carries (for span links), or undefined when it has no valid one. */
export function spanContextOf(ctx: Context): SpanContext | undefined {
  const sc = trace.getSpanContext(ctx);
  return sc && trace.isSpanContextValid(sc) ? sc : undefined;
}

/** What identifies a rollout in span attributes. */
export interface RolloutSpanFields {
  readonly runId: string;
  readonly step: number;
  readonly groupId: string;
  readonly id: string;
  readonly index?: number;
}

/**
 * The mesh's span attributes of one rollout (`reward.run_id`, `reward.step`, `reward.group_id`,
 * `reward.rollout_id`, `reward.index`): the same keys in every process, so a trace backend can search them.
 */
export function rolloutSpanAttributes(r: RolloutSpanFields): Record<string, string | number> {
  return {
    "reward.run_id": r.runId,
    "reward.step": r.step,
    "reward.group_id": r.groupId,
    "reward.rollout_id": r.id,
    ...(r.index !== undefined ? { "reward.index": r.index } : {}),
  };
}

/** The active trace context (the current span's), for a child span from code that has no context handle. */
export function activeContext(): Context {
  return context.active();
}

/** Histogram buckets of the mesh's durations in seconds (1 ms to 2 min: a length score to a slow sandbox or a train step). */
export const SECONDS_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
];
