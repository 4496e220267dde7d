/**
 * Fuzzing of the ast service end to end, in process: a `CodeTask` as a proto-JSON line or gRPC request
 * can carry it (decoded by protobuf-es, then the shared contract check) and any response (extraction,
 * CPython parse in the helper pool, node-sequence walk, difflib). A result has every component in [0, 1]; a bad task is an
 * `InvalidArgumentError` naming the field. Fixed seed, bounded runs (`@reward-mesh/sdk/testing`).
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { create, fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import { CodeTaskSchema } from "@reward-mesh/proto";
import fc from "fast-check";
import {
  deeplyNested,
  fuzzCall,
  fuzzCallAsync,
  fuzzParameters,
  makeRollout,
  mutatedText,
  mutatedValue,
} from "@reward-mesh/sdk/testing";
import { loadConfig } from "./config.js";
import { ParserPool } from "./parser-pool.js";
import { createAstService } from "./service.js";

const REFERENCE = "def add(a, b):\n    total = a + b\n    return total\n";
const TASK = toJson(
  CodeTaskSchema,
  create(CodeTaskSchema, {
    language: "python",
    prompt: "def add(a, b):\n",
    test: "def check(candidate):\n    assert candidate(1, 2) == 3\n",
    entryPoint: "add",
    referenceSolution: `\`\`\`python\n${REFERENCE}\`\`\``,
    ioTests: [{ stdin: "1 2\n", expectedStdout: "3\n" }],
    timeLimitMs: 1000,
    memoryLimitMb: 256,
  }),
);

const RESPONSES = [
  `<think>sum</think>\n\`\`\`python\n${REFERENCE}\`\`\`\n`,
  "def add(a, b):\n\treturn (a +\n\t\tb)\n",
  'class Solution:\n    def add(self, a, b):\n        return f"{a}{b!r:>{b}}"\n',
  `def add(a, b):\n    return ${deeplyNested(3000, "array", "a")}\n`,
  `def add(a, b):\n    return ${"(".repeat(3000)}a${")".repeat(3000)}\n`,
  "def add(a, b):\n    if a:\n" + "        if a:\n".repeat(200) + "            return b\n",
];

describe("fuzz: ast service", () => {
  const config = loadConfig({});
  const pool = new ParserPool(config.parser);
  after(() => pool.close());
  const svc = createAstService(config, { parserPool: pool });
  const range = new Map(svc.components.map((c) => [c.name, c]));

  it("scores any response to any decodable code task within [0, 1], or names the bad field", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof({ arbitrary: fc.constant(TASK), weight: 3 }, { arbitrary: mutatedValue([TASK]), weight: 2 }),
        mutatedText(RESPONSES),
        async (taskJson, response) => {
          const task = fuzzCall("fromJson(CodeTask)", () => fromJson(CodeTaskSchema, taskJson as JsonValue), [
            "Error",
          ]);
          if (!task.ok) return;
          const rollout = makeRollout({
            response,
            task: { id: "t", kind: { case: "code", value: task.value } },
          });
          const r = await fuzzCallAsync("scoreRollout", () => svc.scoreRollout(rollout), [
            "InvalidArgumentError",
          ]);
          if (!r.ok) {
            assert.match(r.error.message, /^'rollout\.task\.code\.[a-z_]+' \S/);
            return;
          }
          for (const c of r.value.components) {
            const d = range.get(c.name)!;
            assert.ok(c.value >= d.min && c.value <= d.max, `${c.name} = ${c.value}`);
            assert.doesNotMatch(c.details, /Maximum call stack|undefined|\[object /, c.details);
          }
        },
      ),
      fuzzParameters(100),
    );
  });
});
