/**
 * Structured logging: an injected {@link Logger} interface, backed by pino, writing JSON lines to stderr
 * (stdout stays free for command output such as `reward-mesh score`). Active trace ids are added to
 * every line. For commands that show progress to a person, `format: "human"` keeps only warnings and
 * errors on the console, one readable line each, and `file` keeps every record as JSON lines (pino's
 * multistream routes each record to both).
 * @module
 */
import { isatty } from "node:tty";
import { trace } from "@opentelemetry/api";
import { pino } from "pino";

/** Structured metadata attached to a log line. */
export type LogFields = Record<string, unknown>;

/** What library code logs through (Temporal-style injected logger). */
export interface Logger {
  debug(fields: LogFields, msg: string): void;
  info(fields: LogFields, msg: string): void;
  warn(fields: LogFields, msg: string): void;
  error(fields: LogFields, msg: string): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
}

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  /** Added as `service` to every line. */
  readonly service: string;
  /** @default "info" */
  readonly level?: string;
  /** File descriptor to write to. @default 2 (stderr) */
  readonly fd?: number;
  /**
   * How records look on `fd`: `json`, every record at `level` and above as one JSON line; `human`, only
   * warnings and errors, one line each (`warn  <msg> key=value …`; on a terminal the current line, such
   * as a progress bar, is cleared first).
   * @default "json"
   */
  readonly format?: LogFormat;
  /**
   * Also append every record at `level` and above as JSON lines to this file (its directory is created;
   * written synchronously, so the file is complete whenever the process ends).
   */
  readonly file?: string;
}

/** How log records are shown on the console (see {@link LoggerOptions.format}). */
export type LogFormat = "human" | "json";

/** The values of {@link LogFormat}. */
export const LOG_FORMATS: readonly LogFormat[] = ["human", "json"];

/** A {@link Logger} that holds open files: `close` flushes and closes them (the logger is then unusable). */
export interface ClosableLogger extends Logger {
  close(): void;
}

function traceMixin(): LogFields {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const sc = span.spanContext();
  return { traceId: sc.traceId, spanId: sc.spanId };
}

/** Fields of a pino record that a human line leaves out (shown otherwise, or the same on every line). */
const HUMAN_OMIT = new Set(["level", "time", "pid", "hostname", "msg", "service", "component", "runId"]);

function humanValue(v: unknown): string {
  if (typeof v === "string") return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  if (v !== null && typeof v === "object" && "message" in v) return JSON.stringify(String(v.message));
  return JSON.stringify(v) ?? String(v);
}

/** One pino JSON record as a line for people: `warn  <msg> key=value …`. */
export function formatHumanLogLine(json: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith("\n") ? json : `${json}\n`;
  }
  const level = typeof rec["level"] === "number" ? (pino.levels.labels[rec["level"]] ?? "log") : "log";
  const fields = Object.entries(rec)
    .filter(([k]) => !HUMAN_OMIT.has(k))
    .map(([k, v]) => ` ${k}=${humanValue(v)}`)
    .join("");
  // One line per record: a message that spans lines (an error's log tail, say) keeps them as `\n`.
  const msg = String(rec["msg"] ?? "").replace(/\r?\n/g, "\\n");
  return `${level.padEnd(5)} ${msg}${fields}\n`;
}

/** A pino stream that writes each record as a {@link formatHumanLogLine} line to `fd`. */
function humanStream(fd: number): pino.DestinationStream {
  const dest = pino.destination({ fd, sync: true });
  const clearLine = isatty(fd) ? "\r\x1b[K" : "";
  return { write: (line: string) => void dest.write(clearLine + formatHumanLogLine(line)) };
}

/** Creates a pino-backed {@link Logger}. */
export function createLogger(options: LoggerOptions): ClosableLogger {
  const level = (options.level ?? "info") as pino.Level; // pino refuses an unknown level
  const fd = options.fd ?? 2;
  const files: ReturnType<typeof pino.destination>[] = [];
  const streams: pino.StreamEntry[] = [
    options.format === "human"
      ? { level: (pino.levels.values[level] ?? 0) > 40 ? level : "warn", stream: humanStream(fd) }
      : { level, stream: pino.destination({ fd, sync: false }) },
  ];
  if (options.file !== undefined) {
    const file = pino.destination({ dest: options.file, mkdir: true, append: true, sync: true });
    files.push(file);
    streams.push({ level, stream: file });
  }
  const p = pino(
    { level, base: { service: options.service }, mixin: traceMixin },
    streams.length === 1 ? streams[0]!.stream : pino.multistream(streams),
  );
  return {
    ...wrap(p),
    close() {
      for (const f of files) f.end();
    },
  };
}

function wrap(p: pino.Logger): Logger {
  return {
    debug: (f, m) => p.debug(f, m),
    info: (f, m) => p.info(f, m),
    warn: (f, m) => p.warn(f, m),
    error: (f, m) => p.error(f, m),
    child: (f) => wrap(p.child(f)),
  };
}

/** A logger that drops everything (tests, in-process scoring). */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};
