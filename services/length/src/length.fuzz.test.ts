/**
 * Fuzzing of what the length service reads: the response (any unicode, lone surrogates included), the
 * token count and the metadata overrides (`overlong.max_length`, `overlong.cache_length`). A result
 * has finite values within the declared ranges; a bad override is an `InvalidArgumentError` naming the
 * metadata key. Fixed seed, bounded runs (`@reward-mesh/sdk/testing`).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { fuzzCallAsync, fuzzParameters, makeRollout, nastyString } from "@reward-mesh/sdk/testing";

import { createLengthService, LengthMetadata } from "./service.js";

const count = fc.oneof(
  fc.constantFrom("", " ", "1", "16", "4096", "0", "-1", "1e3", "0x10", " 12 ", "007"),
  fc.constantFrom("9".repeat(16), "9".repeat(30), "9".repeat(400), String(2 ** 53 + 1)),
  fc.nat().map(String),
  nastyString(10),
);

describe("fuzz: length service", () => {
  const svc = createLengthService({ maxLength: 20_480, cacheLength: 4_096, penaltyFactor: 1 });
  const range = new Map(svc.components.map((c) => [c.name, c]));

  it("scores any response and overrides within the declared ranges, or names the metadata key", async () => {
    await fc.assert(
      fc.asyncProperty(
        nastyString(200),
        fc.nat({ max: 100_000 }),
        fc.option(count, { nil: undefined }),
        fc.option(count, { nil: undefined }),
        async (response, responseTokens, maxLength, cacheLength) => {
          const metadata: Record<string, string> = {};
          if (maxLength !== undefined) metadata[LengthMetadata.maxLength] = maxLength;
          if (cacheLength !== undefined) metadata[LengthMetadata.cacheLength] = cacheLength;
          const rollout = makeRollout({ response, responseTokens, metadata });
          const r = await fuzzCallAsync("scoreRollout", () => svc.scoreRollout(rollout), [
            "InvalidArgumentError",
          ]);
          if (!r.ok) {
            assert.match(r.error.message, /^'rollout\.metadata\["overlong\.[a-z_]+"\]' \S/);
            return;
          }
          for (const c of r.value.components) {
            const d = range.get(c.name)!;
            assert.ok(
              Number.isFinite(c.value) && c.value >= d.min && c.value <= d.max,
              `${c.name} = ${c.value}`,
            );
          }
        },
      ),
      fuzzParameters(400),
    );
  });
});
