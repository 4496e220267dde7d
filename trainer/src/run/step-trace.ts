/**
 * The trainer's side of "one trace per rollout". Each rollout's `trainer/rollout` span is the root of
 * its own trace (a new trace id per rollout) and links to the step's `trainer/step` span; its context
 * travels in the rollout's NATS headers so every service's consume → score (→ sandbox) → publish
 * continues that trace. The step's trace holds the step-level work: assembling a group, its advantages,
 * the learner's train step, each a child of the step span linking to the rollout spans (and result
 * spans) it gathers — the fan-out and the fan-in, without putting thousands of rollouts' spans in one
 * trace (a 1,024-rollout step is ~14k spans: past Tempo's default per-trace size, heavy in Jaeger).
 *
 * A span keeps at most {@link MAX_SPAN_LINKS} links (the SDK's default `linkCountLimit`, beyond which
 * it drops the rest silently): a span that gathers more links the first ones and records the full
 * count in `reward_mesh.links.total`.
 *
 * Sampling: each rollout root span is sampled by the configured sampler on its own (a ratio sampler
 * keeps about that share of rollouts, whatever the step's decision); {@link StepTrace.rolloutTraceId}
 * gives a rollout's trace id only when its span is recorded.
 *
 * Everything goes through `@opentelemetry/api`: without an installed SDK these are no-op spans and the
 * trace id is all zeros (and not recorded).
 * @module
 */
import {
  type Context,
  context,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { meshTracer, rolloutSpanAttributes, spanContextOf } from "@reward-mesh/sdk";
import type { AdvantageGroupResult } from "../advantage/types.js";
import type { AssembledGroup } from "./assembler.js";

/** The most links one span carries: the SDK's default `spanLimits.linkCountLimit`. */
export const MAX_SPAN_LINKS = 128;

/** Attribute holding how many links a span would have carried before the {@link MAX_SPAN_LINKS} cap. */
export const LINKS_TOTAL_ATTRIBUTE = "reward_mesh.links.total";

/** The spans of one training step. */
export interface StepTrace {
  /** Context of the step span (parent of everything the step does). */
  readonly context: Context;
  /** The step's trace id (32 hex digits; zeros when tracing is off). */
  readonly traceId: string;
  /** Whether spans are recorded (an SDK is installed and sampled this step). */
  readonly recording: boolean;
  /**
   * Runs `fn` (the rollout's publish) in a `trainer/rollout` span, the root of the rollout's own trace,
   * linked to the step span; its context goes into the headers.
   */
  rollout<T>(
    r: { runId: string; step: number; groupId: string; id: string; index: number; domain: string },
    fn: (ctx: Context) => Promise<T>,
  ): Promise<T>;
  /** Runs `fn` in a child span of the step named `name`, linked to `links`. */
  child<T>(
    name: string,
    attributes: Record<string, string | number | boolean>,
    links: readonly SpanContext[],
    fn: (span: Span) => Promise<T> | T,
  ): Promise<T>;
  /** A `trainer/assemble` span per group, from `startedAt` (epoch ms) to now, linked to its rollouts and results. */
  assembled(groups: readonly AssembledGroup[], startedAt: number): void;
  /** A `trainer/advantage` span per group with its advantages and flags, linked to its rollouts. */
  advantages(
    groups: ReadonlyArray<{ readonly source: AssembledGroup; readonly result: AdvantageGroupResult }>,
  ): void;
  /** The `trainer/rollout` span contexts of `rolloutIds` (for links). */
  rolloutSpans(rolloutIds: readonly string[]): SpanContext[];
  /** The trace id of rollout `rolloutId`'s own trace, only when its span was recorded (sampled). */
  rolloutTraceId(rolloutId: string): string | undefined;
  /** Ends the step span. Idempotent. */
  end(error?: unknown): void;
}

/** Links to `scs`, at most {@link MAX_SPAN_LINKS}, and the attribute counting them all when more. */
export function cappedLinks(scs: readonly SpanContext[]): {
  links: Link[];
  attributes: Record<string, number>;
} {
  return {
    links: scs.slice(0, MAX_SPAN_LINKS).map((sc) => ({ context: sc })),
    attributes: { [LINKS_TOTAL_ATTRIBUTE]: scs.length },
  };
}

/** Starts the step span of `step` of `runId` (a new root; each rollout then gets a trace of its own). */
export function startStepTrace(
  runId: string,
  step: number,
  attributes: Record<string, string | number>,
): StepTrace {
  const tracer = meshTracer();
  const stepSpan = tracer.startSpan(
    "trainer/step",
    { root: true, attributes: { "reward.run_id": runId, "reward.step": step, ...attributes } },
    ROOT_CONTEXT,
  );
  const stepCtx = trace.setSpan(ROOT_CONTEXT, stepSpan);
  const rolloutSpan = new Map<string, SpanContext>();
  const recordedTrace = new Map<string, string>(); // rolloutId -> its trace id, recorded spans only
  let ended = false;
  const groupAttributes = (g: AssembledGroup) => ({
    "reward.run_id": runId,
    "reward.step": step,
    "reward.group_id": g.group.groupId,
    "reward.group_size": g.group.rolloutIds.length,
  });

  const self: StepTrace = {
    context: stepCtx,
    traceId: stepSpan.spanContext().traceId,
    recording: stepSpan.isRecording(),
    async rollout(r, fn) {
      const attributes = rolloutSpanAttributes(r);
      // A root of its own (new trace id), linked to the step: the link carries the step's coordinates.
      const span = tracer.startSpan(
        "trainer/rollout",
        { root: true, links: [{ context: stepSpan.spanContext(), attributes }] },
        ROOT_CONTEXT,
      );
      if (span.isRecording()) {
        span.setAttributes({ ...attributes, "reward.domain": r.domain });
        recordedTrace.set(r.id, span.spanContext().traceId);
      }
      const ctx = trace.setSpan(ROOT_CONTEXT, span);
      const sc = spanContextOf(ctx);
      if (sc) rolloutSpan.set(r.id, sc);
      try {
        return await context.with(ctx, () => fn(ctx));
      } catch (err) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: String(err) });
        throw err;
      } finally {
        span.end();
      }
    },
    async child(name, attributes, links, fn) {
      const capped = cappedLinks(links);
      const span = tracer.startSpan(
        name,
        { attributes: { ...attributes, ...capped.attributes }, links: capped.links },
        stepCtx,
      );
      try {
        return await context.with(trace.setSpan(stepCtx, span), () => fn(span));
      } catch (err) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: String(err) });
        throw err;
      } finally {
        span.end();
      }
    },
    assembled(groups, startedAt) {
      for (const g of groups) {
        const capped = cappedLinks([...self.rolloutSpans(g.group.rolloutIds), ...g.resultSpans]);
        const span = tracer.startSpan(
          "trainer/assemble",
          {
            startTime: startedAt,
            attributes: {
              ...groupAttributes(g),
              "reward.group.complete": g.complete,
              "reward.group.missing": g.missing.length,
              ...capped.attributes,
            },
            links: capped.links,
          },
          stepCtx,
        );
        span.end();
      }
    },
    advantages(groups) {
      for (const { source, result } of groups) {
        const d = result.diagnostics;
        const capped = cappedLinks(self.rolloutSpans(source.group.rolloutIds));
        const span = tracer.startSpan(
          "trainer/advantage",
          {
            attributes: {
              ...groupAttributes(source),
              "reward.advantages": result.advantages,
              "reward.group.kept": result.kept,
              "reward.group.degenerate": result.degenerate,
              ...(d?.denominator != null ? { "reward.denominator": d.denominator } : {}),
              ...(d?.sgrpo
                ? { "reward.sgrpo.weight": d.sgrpo.weight, "reward.sgrpo.gated": d.sgrpo.gated }
                : {}),
              ...capped.attributes,
            },
            links: capped.links,
          },
          stepCtx,
        );
        span.end();
      }
    },
    rolloutSpans(ids) {
      const out: SpanContext[] = [];
      for (const id of ids) {
        const sc = rolloutSpan.get(id);
        if (sc) out.push(sc);
      }
      return out;
    },
    rolloutTraceId: (id) => recordedTrace.get(id),
    end(error) {
      if (ended) return;
      ended = true;
      if (error !== undefined) stepSpan.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
      stepSpan.end();
    },
  };
  return self;
}
