/**
 * The trainer's side of "one trace per rollout": a `trainer/step` span per step parents one
 * `trainer/rollout` span per rollout, whose context travels in the rollout's NATS headers so every
 * service's consume → score → publish continues it. Group-level work (assembling a group, its
 * advantages, the learner's train step) runs in child spans of the step that link to the spans of the
 * rollouts (and results) they gather: the step's trace shows the fan-out and the fan-in.
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

/** The spans of one training step. */
export interface StepTrace {
  /** Context of the step span (parent of everything the step does). */
  readonly context: Context;
  /** The step's trace id (32 hex digits; zeros when tracing is off). */
  readonly traceId: string;
  /** Whether spans are recorded (an SDK is installed and sampled this step). */
  readonly recording: boolean;
  /** Runs `fn` (the rollout's publish) in a `trainer/rollout` span; its context goes into the headers. */
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
  /** Ends the step span. Idempotent. */
  end(error?: unknown): void;
}

/** Starts the step span of `step` of `runId` (a new root: one trace per step, one subtree per rollout). */
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
  let ended = false;
  const linksTo = (scs: readonly SpanContext[]): Link[] => scs.map((sc) => ({ context: sc }));
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
      const span = tracer.startSpan("trainer/rollout", undefined, stepCtx);
      // Built only for a recorded span: a sampled-out step's rollouts build no attribute objects.
      if (span.isRecording()) span.setAttributes({ ...rolloutSpanAttributes(r), "reward.domain": r.domain });
      const ctx = trace.setSpan(stepCtx, span);
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
      const span = tracer.startSpan(name, { attributes, links: linksTo(links) }, stepCtx);
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
        const span = tracer.startSpan(
          "trainer/assemble",
          {
            startTime: startedAt,
            attributes: {
              ...groupAttributes(g),
              "reward.group.complete": g.complete,
              "reward.group.missing": g.missing.length,
            },
            links: linksTo([...self.rolloutSpans(g.group.rolloutIds), ...g.resultSpans]),
          },
          stepCtx,
        );
        span.end();
      }
    },
    advantages(groups) {
      for (const { source, result } of groups) {
        const d = result.diagnostics;
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
            },
            links: linksTo(self.rolloutSpans(source.group.rolloutIds)),
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
    end(error) {
      if (ended) return;
      ended = true;
      if (error !== undefined) stepSpan.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
      stepSpan.end();
    },
  };
  return self;
}
