/**
 * DAPO soft overlong punishment (Yu et al., arXiv 2503.14476, §3.4; verl `docs/algo/dapo.md`).
 *
 * With `L_exp = maxLength − cacheLength`:
 * `0` when `length ≤ L_exp`, `(L_exp − length) / cacheLength · factor` when
 * `L_exp < length ≤ maxLength`, and `−factor` beyond `maxLength`.
 * The recipe uses `maxLength = 20480` (16384 + 4096), `cacheLength = 4096`, `factor = 1`.
 */
export interface OverlongOptions {
  /** Maximum response length `L_max` (tokens or characters, same unit as `length`). */
  readonly maxLength: number;
  /** Soft punishment interval `L_cache`; `0 < cacheLength ≤ maxLength`. */
  readonly cacheLength: number;
  /**
   * Penalty scale (verl `penalty_factor`).
   * @default 1
   */
  readonly factor?: number;
}

/** Thrown when overlong options or a length are not usable. */
export class OverlongOptionsError extends Error {
  override readonly name = "OverlongOptionsError";
}

/** Validates overlong options; throws {@link OverlongOptionsError} naming the key. */
export function checkOverlongOptions(o: OverlongOptions): void {
  if (!Number.isFinite(o.maxLength) || o.maxLength <= 0) {
    throw new OverlongOptionsError(`'maxLength' must be a positive number, got ${o.maxLength}`);
  }
  if (!Number.isFinite(o.cacheLength) || o.cacheLength <= 0 || o.cacheLength > o.maxLength) {
    throw new OverlongOptionsError(
      `'cacheLength' must be in (0, maxLength=${o.maxLength}], got ${o.cacheLength}`,
    );
  }
  const factor = o.factor ?? 1;
  if (!Number.isFinite(factor) || factor < 0) {
    throw new OverlongOptionsError(`'factor' must be a non-negative number, got ${factor}`);
  }
}

/** DAPO's soft overlong penalty for one response length; always in `[−factor, 0]`. */
export function dapoOverlongPenalty(length: number, o: OverlongOptions): number {
  checkOverlongOptions(o);
  if (!Number.isFinite(length) || length < 0) {
    throw new OverlongOptionsError(`'length' must be a non-negative number, got ${length}`);
  }
  const factor = o.factor ?? 1;
  const expected = o.maxLength - o.cacheLength;
  if (length <= expected) return 0;
  if (length > o.maxLength) return -factor;
  return ((expected - length) / o.cacheLength) * factor;
}
