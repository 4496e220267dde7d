/**
 * Structured logging: an injected {@link Logger} interface, backed by pino, writing JSON lines to stderr
 * (stdout stays free for command output such as `reward-mesh score`). Active trace ids are added to
 * every line.
 * @module
 */
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
}

function traceMixin(): LogFields {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const sc = span.spanContext();
  return { traceId: sc.traceId, spanId: sc.spanId };
}

/** Creates a pino-backed {@link Logger}. */
export function createLogger(options: LoggerOptions): Logger {
  const p = pino(
    { level: options.level ?? "info", base: { service: options.service }, mixin: traceMixin },
    pino.destination({ fd: options.fd ?? 2, sync: false }),
  );
  return wrap(p);
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
