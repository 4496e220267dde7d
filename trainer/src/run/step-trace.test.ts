import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type SpanContext, TraceFlags } from "@opentelemetry/api";
import { cappedLinks, LINKS_TOTAL_ATTRIBUTE, MAX_SPAN_LINKS } from "./step-trace.js";

const spanContexts = (n: number): SpanContext[] =>
  Array.from({ length: n }, (_, i) => ({
    traceId: (i + 1).toString(16).padStart(32, "0"),
    spanId: (i + 1).toString(16).padStart(16, "0"),
    traceFlags: TraceFlags.SAMPLED,
  }));

describe("cappedLinks", () => {
  it("keeps every link up to the SDK's default limit and counts them", () => {
    const scs = spanContexts(3);
    const c = cappedLinks(scs);
    assert.deepEqual(
      c.links.map((l) => l.context),
      scs,
    );
    assert.deepEqual(c.attributes, { [LINKS_TOTAL_ATTRIBUTE]: 3 });
  });

  it("keeps the first 128 of more and records the full count, so none is dropped silently", () => {
    const scs = spanContexts(1_024);
    const c = cappedLinks(scs);
    assert.equal(MAX_SPAN_LINKS, 128);
    assert.equal(c.links.length, 128);
    assert.deepEqual(c.links[127]!.context, scs[127]);
    assert.equal(c.attributes[LINKS_TOTAL_ATTRIBUTE], 1_024);
  });
});
