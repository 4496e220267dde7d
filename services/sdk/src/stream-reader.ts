/**
 * Reading what is stored in a mesh stream (demo, `explain`, tests): an ephemeral, unacked consumer with
 * one filter subject (works on NATS 2.9, which has no multi-filter consumers).
 * @module
 */
import { AckPolicy, DeliverPolicy, type JsMsg } from "@nats-io/jetstream";
import type { MeshBus } from "./bus.js";
import type { Streams } from "./subjects.js";

/** One stored message, decoded. */
export interface StoredMessage<T> {
  readonly subject: string;
  readonly value: T;
  readonly headers: Record<string, string>;
  readonly seq: number;
}

/**
 * Reads every message stored in `stream` matching `filter` (an ephemeral ordered read from the start),
 * waiting until at least `atLeast` are there or `timeoutMs` passes (then returns what is there).
 */
export async function readStream<T>(
  bus: MeshBus,
  stream: (typeof Streams)[keyof typeof Streams],
  filter: string,
  decode: (data: Uint8Array) => T,
  atLeast: number,
  timeoutMs = 20_000,
): Promise<StoredMessage<T>[]> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const info = await bus.jsm.streams.info(stream, { subjects_filter: filter });
    const stored = Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
    if (stored >= atLeast || Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  // An ephemeral unacked consumer with one filter subject (works on NATS 2.9).
  const ci = await bus.jsm.consumers.add(stream, {
    ack_policy: AckPolicy.None,
    deliver_policy: DeliverPolicy.All,
    filter_subject: filter,
    inactive_threshold: 5_000_000_000,
  });
  const c = await bus.js.consumers.get(stream, ci.name);
  const out: StoredMessage<T>[] = [];
  const pending = ci.num_pending;
  while (out.length < pending) {
    const batch = await c.fetch({ max_messages: Math.min(500, pending - out.length), expires: 2000 });
    let got = 0;
    for await (const m of batch as AsyncIterable<JsMsg>) {
      got++;
      const headers: Record<string, string> = {};
      if (m.headers) for (const k of m.headers.keys()) headers[k] = m.headers.get(k);
      out.push({ subject: m.subject, value: decode(m.data), headers, seq: m.seq });
    }
    if (got === 0) break;
  }
  await bus.jsm.consumers.delete(stream, ci.name);
  return out;
}
