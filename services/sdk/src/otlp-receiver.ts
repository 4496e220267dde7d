/**
 * A local OTLP/HTTP trace receiver: what `reward-mesh up --traces` starts so that a developer sees a
 * rollout's trace without Jaeger or Tempo, and what `reward-mesh explain` reads its waterfall from.
 *
 * It accepts `POST /v1/traces` in the OTLP/HTTP **JSON** encoding (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`,
 * what `@opentelemetry/exporter-trace-otlp-http` sends) and appends one flat {@link StoredSpan} per line
 * to a JSONL file. Protobuf bodies are answered 415 naming the protocol to use; metrics and logs posted
 * to it are accepted and dropped (a process exporting everything to one endpoint keeps working).
 *
 * Each span is checked before anything is stored: hex `traceId` (32 digits), `spanId` (16),
 * `parentSpanId` (16 or empty), link ids, and decimal `startTimeUnixNano`/`endTimeUnixNano`. One bad
 * span rejects the whole request with 400 naming the field (`resourceSpans[0].scopeSpans[1].spans[2].spanId`)
 * and nothing of it is stored: the OTLP exporters send a batch as a unit, so a partial store would hide
 * the problem. A body over the limit is answered 413 with `Connection: close`.
 * @module
 */
import { appendFileSync, closeSync, existsSync, openSync, readSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One span as the receiver stores it (one JSON object per line). */
export interface StoredSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** Empty for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** The exporting process's `service.name`. */
  readonly service: string;
  /** Unix epoch nanoseconds, as decimal strings (beyond 2^53). */
  readonly startTimeUnixNano: string;
  readonly endTimeUnixNano: string;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  /** Each link's target, and its attributes when it had any. */
  readonly links: ReadonlyArray<{
    readonly traceId: string;
    readonly spanId: string;
    readonly attributes?: Readonly<Record<string, string | number | boolean>>;
  }>;
  /** 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
}

/** Options of {@link startOtlpReceiver}. */
export interface OtlpReceiverOptions {
  /** JSONL file the spans are appended to (created on the first span). */
  readonly file: string;
  /** @default "127.0.0.1" */
  readonly host?: string;
  /** @default 0 (a free port) */
  readonly port?: number;
  /** Largest request body accepted. @default 16 MiB */
  readonly maxBodyBytes?: number;
}

/** A running receiver. */
export interface OtlpReceiver {
  /** `http://host:port`: the value of `OTEL_EXPORTER_OTLP_ENDPOINT` for processes that export to it. */
  readonly endpoint: string;
  readonly port: number;
  /** Spans stored so far. */
  readonly received: () => number;
  close(): Promise<void>;
}

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpKeyValue {
  key: string;
  value?: OtlpAnyValue;
}
interface OtlpSpan {
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  name?: string;
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
  attributes?: OtlpKeyValue[];
  links?: Array<{ traceId?: string; spanId?: string; attributes?: OtlpKeyValue[] }>;
  status?: { code?: number };
}
interface OtlpTraceRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpKeyValue[] };
    scopeSpans?: Array<{ spans?: OtlpSpan[] }>;
  }>;
}

function attributeValue(v: OtlpAnyValue | undefined): string | number | boolean | undefined {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  return undefined;
}

function attributes(kvs: OtlpKeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of kvs ?? []) {
    const v = attributeValue(kv.value);
    if (v !== undefined) out[kv.key] = v;
  }
  return out;
}

const HEX32 = /^[0-9a-fA-F]{32}$/;
const HEX16 = /^[0-9a-fA-F]{16}$/;
const DECIMAL = /^\d{1,20}$/;

/** `v` checked as `what` at `at`: a clear error otherwise. */
function checked(v: unknown, at: string, ok: (v: unknown) => boolean, what: string): void {
  if (!ok(v)) throw new Error(`${at}: ${JSON.stringify(v) ?? "undefined"} is not ${what}`);
}
const hex = (re: RegExp) => (v: unknown) => typeof v === "string" && re.test(v);
const isDecimal = (v: unknown) =>
  v === undefined ||
  (typeof v === "string" && DECIMAL.test(v)) ||
  (Number.isSafeInteger(v) && (v as number) >= 0);
const arrayAt = <T>(v: T[] | undefined, at: string): T[] => {
  if (v !== undefined && !Array.isArray(v)) throw new Error(`${at}: is not an array`);
  return v ?? [];
};

/**
 * Flattens an OTLP/JSON `ExportTraceServiceRequest` into stored spans; throws on a malformed one, naming
 * the field (ids must be hex, times decimal).
 */
export function flattenOtlpTraces(body: unknown): StoredSpan[] {
  if (typeof body !== "object" || body === null || !Array.isArray((body as OtlpTraceRequest).resourceSpans))
    throw new Error("body is not an OTLP ExportTraceServiceRequest (no resourceSpans array)");
  const out: StoredSpan[] = [];
  (body as OtlpTraceRequest).resourceSpans!.forEach((rs, ri) => {
    const service = String(attributes(rs?.resource?.attributes)["service.name"] ?? "unknown");
    arrayAt(rs?.scopeSpans, `resourceSpans[${ri}].scopeSpans`).forEach((ss, si) => {
      arrayAt(ss?.spans, `resourceSpans[${ri}].scopeSpans[${si}].spans`).forEach((s, i) => {
        const at = `resourceSpans[${ri}].scopeSpans[${si}].spans[${i}]`;
        checked(s.traceId, `${at}.traceId`, hex(HEX32), "32 hex digits (send OTLP/JSON with hex ids)");
        checked(s.spanId, `${at}.spanId`, hex(HEX16), "16 hex digits");
        checked(
          s.parentSpanId,
          `${at}.parentSpanId`,
          (v) => v === undefined || v === "" || hex(HEX16)(v),
          "16 hex digits or empty",
        );
        checked(s.startTimeUnixNano, `${at}.startTimeUnixNano`, isDecimal, "a decimal number of nanoseconds");
        checked(s.endTimeUnixNano, `${at}.endTimeUnixNano`, isDecimal, "a decimal number of nanoseconds");
        const links = arrayAt(s.links, `${at}.links`);
        links.forEach((l, li) => {
          checked(l?.traceId, `${at}.links[${li}].traceId`, hex(HEX32), "32 hex digits");
          checked(l?.spanId, `${at}.links[${li}].spanId`, hex(HEX16), "16 hex digits");
        });
        out.push({
          traceId: s.traceId!.toLowerCase(),
          spanId: s.spanId!.toLowerCase(),
          parentSpanId: (s.parentSpanId ?? "").toLowerCase(),
          name: typeof s.name === "string" ? s.name : "",
          service,
          startTimeUnixNano: String(s.startTimeUnixNano ?? "0"),
          endTimeUnixNano: String(s.endTimeUnixNano ?? "0"),
          attributes: attributes(arrayAt(s.attributes, `${at}.attributes`)),
          links: links.map((l, li) => {
            const a = attributes(arrayAt(l.attributes, `${at}.links[${li}].attributes`));
            return {
              traceId: l.traceId!.toLowerCase(),
              spanId: l.spanId!.toLowerCase(),
              ...(Object.keys(a).length ? { attributes: a } : {}),
            };
          }),
          statusCode: typeof s.status?.code === "number" ? s.status.code : 0,
        });
      });
    });
  });
  return out;
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of req) {
    n += (c as Buffer).byteLength;
    if (n > max) return undefined;
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Starts a receiver (resolves once it listens). */
export async function startOtlpReceiver(o: OtlpReceiverOptions): Promise<OtlpReceiver> {
  const max = o.maxBodyBytes ?? 16 * 1024 * 1024;
  let received = 0;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "").split("?")[0];
    if (req.method !== "POST" || !["/v1/traces", "/v1/metrics", "/v1/logs"].includes(path ?? "")) {
      reply(res, 404, { error: `not an OTLP/HTTP endpoint: ${req.method} ${path} (POST /v1/traces)` });
      return;
    }
    const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/json") {
      req.resume();
      reply(res, 415, {
        error: `content-type '${type || "none"}' is not decoded here: this receiver takes OTLP/HTTP JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json)`,
      });
      return;
    }
    const body = await readBody(req, max);
    if (!body) {
      // The rest of the body is not read: close the connection after the answer (not reused mid-body).
      res.setHeader("connection", "close");
      reply(res, 413, { error: `request body over ${max} bytes (the receiver's limit)` });
      req.resume();
      return;
    }
    if (path !== "/v1/traces") {
      reply(res, 200, {});
      return;
    }
    let spans: StoredSpan[];
    try {
      spans = flattenOtlpTraces(JSON.parse(body.toString("utf8")));
    } catch (err) {
      reply(res, 400, { error: `bad OTLP/JSON trace request: ${err instanceof Error ? err.message : err}` });
      return;
    }
    if (spans.length) appendFileSync(o.file, spans.map((s) => `${JSON.stringify(s)}\n`).join(""));
    received += spans.length;
    reply(res, 200, {});
  };
  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) reply(res, 500, { error: String(err) });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port ?? 0, o.host ?? "127.0.0.1", () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    endpoint: `http://${address}:${port}`,
    port,
    received: () => received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Options of {@link readStoredSpans}. */
export interface ReadStoredSpansOptions {
  /** Only the spans of this trace (other lines are not parsed). */
  readonly traceId?: string;
  /** Told about each line that is not a stored span (skipped), e.g. a torn last line. */
  readonly onBadLine?: (lineNo: number, problem: string) => void;
}

/**
 * The spans of a receiver's JSONL file (none when the file does not exist), read in 1 MiB chunks. A line
 * that is not a stored span (a receiver killed mid-append) is skipped and reported to `onBadLine`.
 */
export function readStoredSpans(file: string, o: ReadStoredSpansOptions = {}): StoredSpan[] {
  if (!existsSync(file)) return [];
  const out: StoredSpan[] = [];
  const needle = o.traceId === undefined ? undefined : `"traceId":${JSON.stringify(o.traceId)}`;
  let lineNo = 0;
  const line = (text: string) => {
    lineNo++;
    if (text.trim() === "" || (needle && !text.includes(needle))) return;
    let s: StoredSpan;
    try {
      s = JSON.parse(text) as StoredSpan;
    } catch (err) {
      o.onBadLine?.(lineNo, `not valid JSON (${(err as Error).message})`);
      return;
    }
    if (
      typeof s !== "object" ||
      s === null ||
      typeof s.traceId !== "string" ||
      typeof s.spanId !== "string"
    ) {
      o.onBadLine?.(lineNo, "not a stored span (traceId, spanId)");
      return;
    }
    if (o.traceId === undefined || s.traceId === o.traceId) out.push(s);
  };
  const fd = openSync(file, "r");
  try {
    const buf = Buffer.alloc(1 << 20);
    let rest: Buffer = Buffer.alloc(0);
    for (let n = readSync(fd, buf, 0, buf.length, null); n > 0; n = readSync(fd, buf, 0, buf.length, null)) {
      const chunk = rest.length ? Buffer.concat([rest, buf.subarray(0, n)]) : buf.subarray(0, n);
      let start = 0;
      for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, start)) {
        line(chunk.toString("utf8", start, i));
        start = i + 1;
      }
      rest = Buffer.from(chunk.subarray(start));
    }
    if (rest.length) line(rest.toString("utf8"));
  } finally {
    closeSync(fd);
  }
  return out;
}

const nanos = (s: string) => BigInt(s);

/**
 * The spans of one trace as an indented waterfall: per span, its offset from the trace's start, its
 * duration, the process that reported it and its name (children under their parent, by start time).
 */
export function renderWaterfall(spans: readonly StoredSpan[], traceId: string): string {
  const mine = spans.filter((s) => s.traceId === traceId);
  if (mine.length === 0) return `no span of trace ${traceId} was received\n`;
  let t0 = nanos(mine[0]!.startTimeUnixNano);
  for (const s of mine) if (nanos(s.startTimeUnixNano) < t0) t0 = nanos(s.startTimeUnixNano);
  const ids = new Set(mine.map((s) => s.spanId));
  const children = new Map<string, StoredSpan[]>();
  for (const s of mine) {
    const parent = ids.has(s.parentSpanId) ? s.parentSpanId : "";
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  const ms = (n: bigint) => (Number(n) / 1e6).toFixed(1).padStart(9);
  const lines: string[] = [`trace ${traceId} (${mine.length} spans)`, "  start ms   took ms  where / what"];
  const walk = (parent: string, depth: number) => {
    const kids = [...(children.get(parent) ?? [])].sort((a, b) =>
      nanos(a.startTimeUnixNano) < nanos(b.startTimeUnixNano) ? -1 : 1,
    );
    for (const s of kids) {
      const start = nanos(s.startTimeUnixNano) - t0;
      const took = nanos(s.endTimeUnixNano) - nanos(s.startTimeUnixNano);
      const err = s.statusCode === 2 ? " [error]" : "";
      lines.push(`${ms(start)} ${ms(took)}  ${"  ".repeat(depth)}${s.service}: ${s.name}${err}`);
      walk(s.spanId, depth + 1);
    }
  };
  walk("", 0);
  return `${lines.join("\n")}\n`;
}

/**
 * The spans of `traceId` about one rollout: those whose `reward.rollout_id` is `rolloutId`, its group's
 * spans (`reward.group_id` is `groupId`, no rollout attribute), their ancestors (the step span), and
 * every span below one of them that names no other rollout or group (a sandbox run under a score, the
 * step's generate and train step). Given the rollout's own trace, that is the whole rollout trace;
 * given the step's trace, the step's spans about the rollout's group.
 */
export function spansOfRollout(
  spans: readonly StoredSpan[],
  traceId: string,
  rolloutId: string,
  groupId: string,
): StoredSpan[] {
  const mine = spans.filter((s) => s.traceId === traceId);
  const byId = new Map(mine.map((s) => [s.spanId, s]));
  const keep = new Set<string>();
  for (const s of mine) {
    const r = s.attributes["reward.rollout_id"];
    if (r === rolloutId || (r === undefined && s.attributes["reward.group_id"] === groupId)) {
      for (let p: StoredSpan | undefined = s; p && !keep.has(p.spanId); p = byId.get(p.parentSpanId))
        keep.add(p.spanId);
    }
  }
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of mine)
      if (
        !keep.has(s.spanId) &&
        keep.has(s.parentSpanId) &&
        s.attributes["reward.rollout_id"] === undefined &&
        (s.attributes["reward.group_id"] ?? groupId) === groupId
      ) {
        keep.add(s.spanId);
        grew = true;
      }
  }
  return mine.filter((s) => keep.has(s.spanId));
}
