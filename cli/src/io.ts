/**
 * Small I/O helpers for commands: UTF-8 lines, ordered bounded-concurrency mapping, usage errors
 * (options are parsed in `args.ts`).
 * @module
 */
import type { Readable } from "node:stream";

/** One input line: its text, or why it has none. */
export type InputLine =
  | { readonly n: number; readonly text: string; readonly error?: undefined }
  | { readonly n: number; readonly text?: undefined; readonly error: string };

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The offset of the first byte of `b` that does not start a well-formed UTF-8 sequence (for messages). */
function firstInvalidUtf8(b: Uint8Array): number {
  for (let i = 0; i < b.length; ) {
    const c = b[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    const need = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
    if (need === 0) return i;
    let cp = c & (0x3f >> need);
    for (let k = 1; k <= need; k++) {
      const d = b[i + k];
      if (d === undefined || (d & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (need === 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return i;
    if (need === 3 && (cp < 0x10000 || cp > 0x10ffff)) return i;
    i += need + 1;
  }
  return b.length;
}

function decodeLine(bytes: Uint8Array, n: number): InputLine {
  const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
  const body = bytes.subarray(0, end);
  try {
    return { n, text: strictUtf8.decode(body) };
  } catch {
    // The bus refuses such a payload too (a proto string must be UTF-8): say so, never substitute U+FFFD.
    return { n, error: `not valid UTF-8 (byte ${firstInvalidUtf8(body) + 1} of the line)` };
  }
}

/**
 * The lines of `input` (split on `\n`, a trailing `\r` dropped), numbered from 1. Each line is decoded
 * as strict UTF-8: a line that is not valid UTF-8 comes back as an error naming it instead of being
 * silently repaired, and the lines after it are still read.
 */
export async function* utf8Lines(input: Readable): AsyncGenerator<InputLine> {
  let pending: Buffer[] = [];
  let n = 0;
  for await (const chunk of input) {
    let buf = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : (chunk as Buffer);
    for (let nl = buf.indexOf(0x0a); nl >= 0; nl = buf.indexOf(0x0a)) {
      pending.push(buf.subarray(0, nl));
      yield decodeLine(Buffer.concat(pending), ++n);
      pending = [];
      buf = buf.subarray(nl + 1);
    }
    if (buf.length > 0) pending.push(buf);
  }
  if (pending.length > 0) yield decodeLine(Buffer.concat(pending), ++n);
}
/**
 * Maps `items` through `fn` with at most `window` in flight, delivering results to `emit` in input
 * order (so output line N answers input line N).
 */
export async function orderedMap<T, R>(
  items: AsyncIterable<T>,
  window: number,
  fn: (item: T, index: number) => Promise<R>,
  emit: (result: R, index: number) => void,
): Promise<void> {
  const queue: Array<{ p: Promise<R>; i: number }> = [];
  let i = 0;
  for await (const item of items) {
    const p = fn(item, i);
    p.catch(() => {});
    queue.push({ p, i: i++ });
    while (queue.length >= window) {
      const head = queue.shift()!;
      emit(await head.p, head.i);
    }
  }
  for (const head of queue) emit(await head.p, head.i);
}

/** A usage error: printed as one line, exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
