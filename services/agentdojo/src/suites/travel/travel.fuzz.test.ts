/**
 * Fuzzing of the travel tools with what a model may write (fixed seed, bounded runs): mutated versions
 * of every argument set the ground truths use, on a fresh environment, always give an output or an
 * AgentDojo error (`ValueError`, `ValidationError`, ...), never a crash, and the environment stays
 * one the checkers can evaluate. Skipped without the benchmark data.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  fuzzCall,
  fuzzParameters,
  mutatedValue,
  nastyString,
  PROTOTYPE_KEYS,
} from "@reward-mesh/sdk/testing";
import { BENCHMARK_DATA_DIR, BENCHMARK_DATA_SKIP } from "../../../test/benchmark-data-dir.js";
import { openBenchmarkData } from "../../benchmark-data.js";
import { runFunction } from "../../runtime.js";
import { buildTravelSuite, type TravelEnvironment } from "./index.js";

/** Nesting depth of a JSON-like value (the service refuses arguments nested deeper than 64 levels). */
function depth(v: unknown, limit = 70): number {
  if (limit === 0 || typeof v !== "object" || v === null) return 0;
  const kids = Array.isArray(v) ? v : Object.values(v);
  return 1 + kids.reduce<number>((m, k) => Math.max(m, depth(k, limit - 1)), 0);
}

const suite = BENCHMARK_DATA_DIR
  ? buildTravelSuite(openBenchmarkData(BENCHMARK_DATA_DIR).suite("travel"))
  : undefined;

describe("fuzz: travel tool calls", { skip: BENCHMARK_DATA_SKIP }, () => {
  it("any arguments give an output or an AgentDojo error; the checkers still run", () => {
    const s = suite!;
    const base = s.loadEnvironment({});
    const seeds = [
      ...s.userTasks.flatMap((t) => t.groundTruth(base)),
      ...s.injectionTasks.flatMap((t) => t.groundTruth(base)),
      { function: "cancel_calendar_event", args: { event_id: "0" } },
      { function: "search_calendar_events", args: { query: "lunch", date: "2024-05-15" } },
      { function: "get_day_calendar_events", args: { day: "2024-05-15" } },
      {
        function: "reserve_car_rental",
        args: { company: "x", start_time: "2024-05-15 09:00", end_time: null },
      },
      { function: "reserve_restaurant", args: { restaurant: "x", start_time: "2024-05-15 19:00" } },
      {
        function: "send_email",
        args: {
          recipients: ["a@b.com"],
          subject: "s",
          body: "b",
          cc: ["c@d.com"],
          attachments: [{ type: "event", event_details: { id_: "1", title: "t", description: "d" } }],
        },
      },
    ].map((c) => c.args);
    const names = s.tools.map((t) => t.name);
    fc.assert(
      fc.property(
        fc.oneof(fc.constantFrom(...names), fc.constantFrom(...PROTOTYPE_KEYS), nastyString(16)),
        mutatedValue(seeds),
        (fn, args) => {
          fc.pre(depth(args) <= 64);
          const env = structuredClone(base) as TravelEnvironment;
          const pre = structuredClone(env);
          const r = fuzzCall(fn, () => runFunction(s, env, fn, args));
          assert.ok(r.ok, "runFunction turns every failure into an error string");
          const { output, error } = r.value;
          assert.ok((output === "") !== (error === "") || (output === "" && error === ""));
          if (error !== "") assert.match(error, /^[A-Za-z]+Error: \S/);
          for (const t of s.userTasks) fuzzCall(`${t.id}.utility`, () => t.utility("", pre, env));
          for (const t of s.injectionTasks) fuzzCall(`${t.id}.security`, () => t.security("", pre, env));
        },
      ),
      fuzzParameters(400),
    );
  });
});
