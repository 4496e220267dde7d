/**
 * The length service: `length` (response length in tokens when the rollout carries a token count,
 * else in Unicode code points) and `overlong`, DAPO's soft overlong penalty
 * (`specs/advantages.md` §8.1): 0 up to `L_max − L_cache`, then linear down to `−factor` at `L_max`,
 * `−factor` beyond.
 *
 * Per-rollout overrides: metadata `overlong.max_length` and `overlong.cache_length` (positive integers).
 * @module
 */
import type { Rollout } from "@reward-mesh/proto";
import { defineRewardService, type RewardServiceDefinition } from "@reward-mesh/sdk";
import { checkOverlongOptions, dapoOverlongPenalty } from "@reward-mesh/sdk/rewards";
import type { LengthOptions } from "./config.js";
import { invalidMetadata } from "./errors.js";

/** Version of the scoring logic. */
export const LENGTH_SERVICE_VERSION = "1.0.0";

/** Metadata keys a rollout may use to override the service's limits. */
export const LengthMetadata = {
  maxLength: "overlong.max_length",
  cacheLength: "overlong.cache_length",
} as const;

function metadataInt(rollout: Rollout, key: string, def: number): number {
  const v = rollout.metadata[key];
  if (v === undefined || v.trim() === "") return def;
  if (!/^\d+$/.test(v.trim()))
    throw invalidMetadata(key, `must be a positive integer, got ${JSON.stringify(v)}`);
  const n = Number(v);
  if (n < 1) throw invalidMetadata(key, `must be >= 1, got ${n}`);
  // Not past 2^53 (a 400-digit value became Infinity and failed later as an internal error).
  if (!Number.isSafeInteger(n))
    throw invalidMetadata(key, `must be at most ${Number.MAX_SAFE_INTEGER}, got ${v.trim().slice(0, 30)}…`);
  return n;
}

/** The response length and its unit. */
export function responseLength(rollout: Rollout): { length: number; unit: "tokens" | "characters" } {
  if (rollout.responseTokens > 0) return { length: rollout.responseTokens, unit: "tokens" };
  let n = 0;
  for (const _ of rollout.response) n++; // code points, not UTF-16 units
  return { length: n, unit: "characters" };
}

function limits(rollout: Rollout, o: LengthOptions) {
  const maxLength = metadataInt(rollout, LengthMetadata.maxLength, o.maxLength);
  const cacheLength = metadataInt(rollout, LengthMetadata.cacheLength, o.cacheLength);
  if (cacheLength > maxLength) {
    throw invalidMetadata(
      LengthMetadata.cacheLength,
      `must be <= max length (${maxLength}), got ${cacheLength}`,
    );
  }
  return { maxLength, cacheLength, factor: o.penaltyFactor };
}

/** Creates the length service with the given limits. */
export function createLengthService(options: LengthOptions): RewardServiceDefinition {
  checkOverlongOptions({
    maxLength: options.maxLength,
    cacheLength: options.cacheLength,
    factor: options.penaltyFactor,
  });
  return defineRewardService({
    name: "length",
    version: LENGTH_SERVICE_VERSION,
    domains: ["code", "tool_call", "agent", "custom"],
    components: [
      {
        name: "length",
        description: "response length (tokens if known, else characters)",
        min: 0,
        max: Number.POSITIVE_INFINITY,
      },
      {
        name: "overlong",
        description:
          "DAPO soft overlong penalty: 0 .. -factor over the last cache_length units before max_length",
        min: -options.penaltyFactor,
        max: 0,
      },
    ],
    validate: (rollout) => {
      limits(rollout, options);
    },
    score: async (rollout) => {
      const { length, unit } = responseLength(rollout);
      const o = limits(rollout, options);
      const penalty = dapoOverlongPenalty(length, o);
      return [
        { name: "length", value: length, details: unit },
        {
          name: "overlong",
          value: penalty === 0 ? 0 : penalty, // no -0 on the wire
          details: `length ${length} ${unit}; soft zone (${o.maxLength - o.cacheLength}, ${o.maxLength}]`,
        },
      ];
    },
  });
}
