/**
 * Test helpers shared by the advantage tests: the spec's tolerance, a seeded PRNG, and the
 * reference vectors. Not exported from the package.
 * @module
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

/** The spec's tolerance: `|got − want| ≤ 1e-9 · max(1, |want|)`. */
export function isClose(got: number, want: number, rel = 1e-9): boolean {
  return Math.abs(got - want) <= rel * Math.max(1, Math.abs(want));
}

/** Asserts two arrays (or matrices) agree element-wise within {@link isClose}. */
export function assertClose(got: unknown, want: unknown, label: string, rel = 1e-9): void {
  if (typeof want === "number") {
    assert.equal(typeof got, "number", `${label}: expected a number, got ${typeof got}`);
    assert.ok(isClose(got as number, want, rel), `${label}: got ${got}, want ${want}`);
    return;
  }
  assert.ok(Array.isArray(want), `${label}: expected value must be a number or array`);
  const g = ArrayBuffer.isView(got) ? Array.from(got as Float64Array) : got;
  assert.ok(Array.isArray(g), `${label}: got ${typeof got}, want an array`);
  assert.equal(g.length, want.length, `${label}: length ${g.length} ≠ ${want.length}`);
  want.forEach((w, i) => {
    assertClose(g[i], w, `${label}[${i}]`, rel);
  });
}

/** mulberry32: a tiny seeded PRNG returning floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Uniform integer in `[lo, hi]`. */
export function randInt(rand: () => number, lo: number, hi: number): number {
  return lo + Math.floor(rand() * (hi - lo + 1));
}

/**
 * A random `G×K` reward matrix mixing column kinds found in practice: binary, continuous in
 * [0, 1], large-scale (0–100), exactly constant (including the 0.1 float trap), and few-valued.
 */
export function randomRewards(rand: () => number, G: number, K: number): number[][] {
  const kinds = Array.from({ length: K }, () => randInt(rand, 0, 4));
  const constants = Array.from({ length: K }, () => [0.1, 1, 0, 0.3][randInt(rand, 0, 3)]!);
  return Array.from({ length: G }, () =>
    kinds.map((kind, k) => {
      switch (kind) {
        case 0:
          return rand() < 0.5 ? 1 : 0;
        case 1:
          return Math.round(rand() * 1e6) / 1e6;
        case 2:
          return Math.round(rand() * 100);
        case 3:
          return constants[k]!;
        default:
          return [0.2, 0.5, 0.9][randInt(rand, 0, 2)]!;
      }
    }),
  );
}

/** Random non-zero weights, some negative. */
export function randomWeights(rand: () => number, K: number): number[] {
  return Array.from({ length: K }, () => {
    const w = 0.05 + rand() * 2;
    return rand() < 0.15 ? -w : w;
  });
}

/** The parsed vectors file, keyed by vector id. */
// biome-ignore lint/suspicious/noExplicitAny: the vectors file is untyped JSON, read only by tests.
export type Vectors = Record<string, any>;

/** The spec's reference vectors (`trainer/test/fixtures/advantage-vectors.json`, a copy of the specification's vectors). */
export function loadVectors(): Vectors {
  const url = new URL("../../test/fixtures/advantage-vectors.json", import.meta.url);
  return JSON.parse(readFileSync(url, "utf8")) as Vectors;
}
