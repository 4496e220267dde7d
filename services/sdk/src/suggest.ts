/**
 * "Did you mean …?" for names a person types: command-line commands and options, configuration keys.
 * @module
 */

/**
 * The optimal-string-alignment (restricted Damerau–Levenshtein) distance between `a` and `b`:
 * insertions, deletions, substitutions and transpositions of two adjacent characters each cost 1.
 */
export function editDistance(a: string, b: string): number {
  const m = a.length;
  const n = b.length;
  // d[i][j]: distance between a[0..i) and b[0..j); three rows suffice for the transposition step.
  let prev2 = new Array<number>(n + 1).fill(0);
  let prev = Array.from({ length: n + 1 }, (_, j) => j);
  for (let i = 1; i <= m; i++) {
    const cur = new Array<number>(n + 1).fill(0);
    cur[0] = i;
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, prev2[j - 2]! + 1);
      cur[j] = d;
    }
    prev2 = prev;
    prev = cur;
  }
  return prev[n]!;
}

/**
 * The candidate closest to `input`, or undefined when none is close enough to be a likely typo: a
 * candidate that `input` is the start of (`--conc` → `--concurrency`) when only one is, else the one
 * at the smallest edit distance (first in `candidates` order on a tie) if that distance is at most
 * 2, or a third of the longer name's length when that is more. Case-insensitive.
 */
export function closestName(input: string, candidates: readonly string[]): string | undefined {
  const typed = input.toLowerCase();
  if (typed === "") return undefined;
  const prefixed = candidates.filter((c) => c.toLowerCase().startsWith(typed));
  if (prefixed.length === 1) return prefixed[0];
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const d = editDistance(typed, c.toLowerCase());
    const limit = Math.max(2, Math.floor(Math.max(typed.length, c.length) / 3));
    if (d <= limit && d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** `" (did you mean 'x'?)"` for the closest candidate (see {@link closestName}), or `""`. */
export function didYouMean(input: string, candidates: readonly string[]): string {
  const c = closestName(input, candidates);
  return c === undefined ? "" : ` (did you mean '${c}'?)`;
}
