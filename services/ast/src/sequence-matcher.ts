/**
 * Python's `difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()`, ported line by line
 * (`find_longest_match` with its tie-breaking, the queue order of `get_matching_blocks`), so a
 * similarity computed here equals the one CorrGRPO's Python computes for the same sequences.
 * @module
 */

/** Length of every matching block (Python's `get_matching_blocks`, without the sentinel), summed. */
export function matchingCharacters(a: readonly number[], b: readonly number[]): number {
  // b2j: element -> increasing positions in b (no junk, no popularity pruning: autojunk=False).
  const b2j = new Map<number, number[]>();
  b.forEach((x, j) => {
    const l = b2j.get(x);
    if (l) l.push(j);
    else b2j.set(x, [j]);
  });
  const findLongestMatch = (alo: number, ahi: number, blo: number, bhi: number): [number, number, number] => {
    let besti = alo;
    let bestj = blo;
    let bestsize = 0;
    let j2len = new Map<number, number>();
    for (let i = alo; i < ahi; i++) {
      const newj2len = new Map<number, number>();
      const js = b2j.get(a[i]!);
      if (js) {
        for (const j of js) {
          if (j < blo) continue;
          if (j >= bhi) break;
          const k = (j2len.get(j - 1) ?? 0) + 1;
          newj2len.set(j, k);
          if (k > bestsize) {
            besti = i - k + 1;
            bestj = j - k + 1;
            bestsize = k;
          }
        }
      }
      j2len = newj2len;
    }
    // Python's extension loops; with no junk they only matter for popular elements, which
    // autojunk=False never drops, but they are kept for fidelity.
    while (besti > alo && bestj > blo && a[besti - 1] === b[bestj - 1]) {
      besti--;
      bestj--;
      bestsize++;
    }
    while (besti + bestsize < ahi && bestj + bestsize < bhi && a[besti + bestsize] === b[bestj + bestsize])
      bestsize++;
    return [besti, bestj, bestsize];
  };
  let total = 0;
  const queue: Array<[number, number, number, number]> = [[0, a.length, 0, b.length]];
  while (queue.length > 0) {
    const [alo, ahi, blo, bhi] = queue.pop()!;
    const [i, j, k] = findLongestMatch(alo, ahi, blo, bhi);
    if (k > 0) {
      total += k;
      if (alo < i && blo < j) queue.push([alo, i, blo, j]);
      if (i + k < ahi && j + k < bhi) queue.push([i + k, ahi, j + k, bhi]);
    }
  }
  return total;
}

/** `SequenceMatcher(None, a, b, autojunk=False).ratio()` for sequences of strings: 2·M / (|a| + |b|), 1 when both are empty. */
export function sequenceRatio(a: readonly string[], b: readonly string[]): number {
  if (a.length + b.length === 0) return 1;
  const ids = new Map<string, number>();
  const id = (s: string) => {
    let v = ids.get(s);
    if (v === undefined) {
      v = ids.size;
      ids.set(s, v);
    }
    return v;
  };
  const m = matchingCharacters(a.map(id), b.map(id));
  return (2 * m) / (a.length + b.length);
}

/**
 * Most pairs of equal tokens ({@link equalPairs}) the service compares. The matcher's work grows with
 * that count (every position of `a` visits every equal position of `b`): ten thousand alternating
 * tokens (a 10 KB `[[[…]]]`) took 20 s; real solutions stay far below (~1 M pairs for 900 lines).
 */
export const MAX_MATCH_PAIRS = 4_000_000;

/** Σ over token kinds of (count in `a`) × (count in `b`): the cost of one matching pass. */
export function equalPairs(a: readonly string[], b: readonly string[]): number {
  const counts = new Map<string, number>();
  for (const x of b) counts.set(x, (counts.get(x) ?? 0) + 1);
  let pairs = 0;
  for (const x of a) pairs += counts.get(x) ?? 0;
  return pairs;
}
