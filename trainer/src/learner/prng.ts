/**
 * A small seeded PRNG with a serialisable state (sfc32, seeded through splitmix32), and string
 * hashing for order-independent per-context seeds. Not cryptographic.
 * @module
 */

/** A seeded uniform generator whose state can be saved and restored exactly. */
export interface Prng {
  /** Uniform float in [0, 1) with 32 bits of randomness. */
  next(): number;
  /** The four uint32 words of the state. */
  state(): [number, number, number, number];
}

function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** A generator at `state` (four uint32 words, as returned by {@link Prng.state}). */
export function prngFromState(state: readonly number[]): Prng {
  let a = state[0]! >>> 0;
  let b = state[1]! >>> 0;
  let c = state[2]! >>> 0;
  let d = state[3]! >>> 0;
  return {
    next() {
      // sfc32 (Chris Doty-Humphrey's small fast chaotic generator).
      const t = (((a + b) >>> 0) + d) >>> 0;
      d = (d + 1) >>> 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) >>> 0;
      c = ((c << 21) | (c >>> 11)) >>> 0;
      c = (c + t) >>> 0;
      return t / 4294967296;
    },
    state: () => [a, b, c, d],
  };
}

/** A generator seeded from a uint32 (any number is reduced with `>>> 0`). */
export function createPrng(seed: number): Prng {
  const sm = splitmix32(seed);
  const rng = prngFromState([sm(), sm(), sm(), sm()]);
  for (let i = 0; i < 12; i++) rng.next(); // warm-up, as recommended for sfc32
  return rng;
}

/** FNV-1a 32-bit hash of a string (UTF-16 code units), mixed with `seed`. */
export function hashString(s: string, seed = 0): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** Reduces any safe integer seed to a uint32 without discarding its high bits. */
export function seedToUint32(seed: number): number {
  const hi = Math.floor(seed / 4294967296);
  return (Math.imul((seed >>> 0) ^ 0x5bd1e995, 0x27d4eb2d) ^ (hi >>> 0) ^ (hi < 0 ? 0xdeadbeef : 0)) >>> 0;
}

/** A standard normal draw (Box–Muller) from `rng`. */
export function normal(rng: Prng): number {
  let u = rng.next();
  while (u === 0) u = rng.next();
  const v = rng.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}
