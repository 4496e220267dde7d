/**
 * Python's `difflib.SequenceMatcher(None, a, b).ratio()` on two strings (code points), including the
 * "autojunk" heuristic (in a `b` of 200+ elements, elements occurring more than `len(b) // 100 + 1`
 * times are not indexed, though matches still extend over them). `injection_task_13` compares email
 * bodies with it.
 * @module
 */

interface Match {
  readonly i: number;
  readonly j: number;
  readonly k: number;
}

/** `SequenceMatcher(None, a, b).ratio()`. */
export function sequenceMatcherRatio(aText: string, bText: string): number {
  const a = Array.from(aText);
  const b = Array.from(bText);
  const total = a.length + b.length;
  if (total === 0) return 1;
  const b2j = indexB(b);
  const longest = (alo: number, ahi: number, blo: number, bhi: number): Match => {
    let besti = alo;
    let bestj = blo;
    let bestsize = 0;
    let j2len = new Map<number, number>();
    for (let i = alo; i < ahi; i++) {
      const next = new Map<number, number>();
      for (const j of b2j.get(a[i]!) ?? []) {
        if (j < blo) continue;
        if (j >= bhi) break;
        const k = (j2len.get(j - 1) ?? 0) + 1;
        next.set(j, k);
        if (k > bestsize) {
          besti = i - k + 1;
          bestj = j - k + 1;
          bestsize = k;
        }
      }
      j2len = next;
    }
    // No junk function: only the two extension loops over non-junk (here: all) elements apply.
    while (besti > alo && bestj > blo && a[besti - 1] === b[bestj - 1]) {
      besti--;
      bestj--;
      bestsize++;
    }
    while (besti + bestsize < ahi && bestj + bestsize < bhi && a[besti + bestsize] === b[bestj + bestsize])
      bestsize++;
    return { i: besti, j: bestj, k: bestsize };
  };
  let matched = 0;
  const queue: [number, number, number, number][] = [[0, a.length, 0, b.length]];
  while (queue.length > 0) {
    const [alo, ahi, blo, bhi] = queue.pop()!;
    const { i, j, k } = longest(alo, ahi, blo, bhi);
    if (k === 0) continue;
    matched += k;
    if (alo < i && blo < j) queue.push([alo, i, blo, j]);
    if (i + k < ahi && j + k < bhi) queue.push([i + k, ahi, j + k, bhi]);
  }
  return (2 * matched) / total;
}

/** `SequenceMatcher.__chain_b`: element → ascending indices in `b`, popular elements removed. */
function indexB(b: readonly string[]): Map<string, number[]> {
  const b2j = new Map<string, number[]>();
  b.forEach((x, j) => {
    const list = b2j.get(x);
    if (list) list.push(j);
    else b2j.set(x, [j]);
  });
  if (b.length >= 200) {
    const ntest = Math.floor(b.length / 100) + 1;
    for (const [x, idx] of [...b2j]) if (idx.length > ntest) b2j.delete(x);
  }
  return b2j;
}
