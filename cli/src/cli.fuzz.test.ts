/**
 * Fuzzing of the command line's input: options (`parseOptions`, under every command's table) and the proto-JSON rollout lines of
 * `reward-mesh score` (each line a result or `line N: <what is wrong>`). Fixed seed, bounded runs.
 */
import assert from "node:assert/strict";
import { Readable, Writable } from "node:stream";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  fuzzCall,
  fuzzCallAsync,
  fuzzParameters,
  mutatedText,
  mutatedValue,
  nastyString,
  PROTOTYPE_KEYS,
  toJsonText,
} from "@reward-mesh/sdk/testing";
import { runScore } from "./commands/score.js";
import { parseOptions } from "./args.js";

const SPEC = {
  addr: { type: "string" },
  concurrency: { type: "string", default: "16" },
  verbose: { type: "boolean" },
} as const;

const arg = fc.oneof(
  fc.constantFrom(
    "--addr",
    "--addr=127.0.0.1:1",
    "--concurrency",
    "--verbose",
    "--verbose=1",
    "--",
    "--=",
    "--help",
    "-h",
    "-hx",
    "--adr",
    "-",
  ),
  fc.constantFrom(...PROTOTYPE_KEYS).map((k) => `--${k}`),
  fc.constantFrom(...PROTOTYPE_KEYS).map((k) => `--${k}=x`),
  nastyString(12),
  nastyString(12).map((s) => `--${s}`),
);

describe("fuzz: parseOptions", () => {
  it("returns only the declared options (defaults applied), or a UsageError naming the option", () => {
    fc.assert(
      fc.property(fc.array(arg, { maxLength: 6 }), (args) => {
        const r = fuzzCall("parseOptions", () => parseOptions(args, SPEC), ["UsageError"]);
        if (!r.ok) {
          assert.match(r.error.message, /^(unknown )?option '-.*'( \S|$)/s);
          assert.ok(!r.error.message.includes("\n") || args.some((a) => a.includes("\n")), "one line");
          return;
        }
        assert.equal(Object.getPrototypeOf(r.value.values), Object.prototype);
        assert.equal(typeof r.value.help, "boolean");
        assert.equal(typeof r.value.values["concurrency"], "string", "the default applies");
        for (const [k, v] of Object.entries(r.value.values)) {
          assert.ok(Object.hasOwn(SPEC, k), `undeclared option '${k}' accepted`);
          assert.equal(typeof v, SPEC[k as keyof typeof SPEC].type);
        }
        for (const p of r.value.positionals) assert.equal(typeof p, "string");
      }),
      fuzzParameters(400),
    );
  });
});

const ROLLOUT = {
  id: "r1",
  runId: "run-1",
  groupId: "g1",
  groupSize: 2,
  index: 1,
  response: '<think>call it</think>\n<tool_call>\n{"name": "f", "parameters": {"a": 1}}\n</tool_call>',
  task: { id: "t1", toolCall: { format: "rlla", groundTruth: [{ name: "f", argumentsJson: '{"a": 1}' }] } },
};

const line = fc.oneof(
  { arbitrary: mutatedValue([ROLLOUT]).map(toJsonText), weight: 3 },
  { arbitrary: mutatedText([JSON.stringify(ROLLOUT)]), weight: 1 },
);

function sink(): { stream: Writable; text: () => string } {
  let text = "";
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

describe("fuzz: reward-mesh score lines", () => {
  it("every non-blank line gets a result on stdout or 'line N: <problem>' on stderr, in order", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 4 }), async (lines) => {
        const input = lines.map((l) => l.replace(/[\r\n\u2028\u2029]/g, " ")).join("\n");
        const out = sink();
        const err = sink();
        const r = await fuzzCallAsync("runScore", () =>
          runScore(["tool-call", "--concurrency", "2"], Readable.from([input]), out.stream, err.stream),
        );
        assert.ok(r.ok);
        const expected = input.split("\n").filter((l) => l.trim() !== "").length;
        const results = out.text().split("\n").filter(Boolean);
        const problems = err.text().split("\n").filter(Boolean);
        assert.equal(results.length + problems.length, expected);
        assert.equal(r.value, problems.length > 0 ? 2 : 0);
        for (const p of problems) assert.match(p, /^line \d+: \S/);
        for (const res of results) assert.equal(typeof JSON.parse(res), "object");
      }),
      fuzzParameters(100),
    );
  });
});
