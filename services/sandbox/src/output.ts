/**
 * A bounded collector for one output stream of a sandboxed program.
 * @module
 */

/** Collects up to `cap` bytes; calls `onOverflow` once when more arrive. */
export class BoundedOutput {
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  #total = 0;
  #overflowed = false;
  constructor(
    private readonly cap: number,
    private readonly onOverflow: () => void,
  ) {}

  /** Adds a chunk; bytes past the cap are dropped. */
  push(chunk: Buffer): void {
    this.#total += chunk.length;
    const room = this.cap - this.#kept;
    if (room > 0) {
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.#chunks.push(part);
      this.#kept += part.length;
    }
    if (this.#total > this.cap && !this.#overflowed) {
      this.#overflowed = true;
      this.onOverflow();
    }
  }

  /** Bytes kept. */
  get bytes(): Buffer {
    return Buffer.concat(this.#chunks, this.#kept);
  }

  /** True when more than the cap arrived. */
  get truncated(): boolean {
    return this.#total > this.cap;
  }
}
