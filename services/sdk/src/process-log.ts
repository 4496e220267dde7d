/**
 * Reading a child process's structured (JSON) log lines as they arrive: how a parent learns the port a
 * child bound itself (it is started on port 0 and logs the address: a service's `<name> ready` line, the
 * PyTorch learner's `listening` line) instead of picking a "free" port first and racing every other
 * process on the machine for it.
 * @module
 */
import type { ChildProcess } from "node:child_process";
import { StringDecoder } from "node:string_decoder";

/** One JSON log record (pino: `level`, `time`, `msg`, and the line's fields). */
export type LogRecord = Readonly<Record<string, unknown>>;

/** Options of {@link waitForLogRecord}. */
export interface WaitForLogRecordOptions {
  /** What is awaited, for the error (`the "length ready" line`). */
  readonly what: string;
  /** @default 30000 */
  readonly timeoutMs?: number;
  /** The child's output so far (its stderr tail), added to the error. */
  readonly describe?: () => string;
  /** Which of the child's pipes carries the lines. @default "stderr" */
  readonly stream?: "stderr" | "stdout";
}

const TAIL_CHARS = 4_000;

function tail(text: string): string {
  const t = text.length > TAIL_CHARS ? `…${text.slice(-TAIL_CHARS)}` : text;
  return t.trim() === "" ? "\n(its stderr is empty)" : `\n--- its stderr (tail) ---\n${t.trimEnd()}`;
}

/**
 * Resolves with the first JSON line on `child`'s stderr (or `o.stream`) for which `match` is true.
 * Rejects with an error naming `what`, the process's pid and the tail of `describe()` when the process
 * exits (or that pipe closes) first, or after `timeoutMs`. Lines that are not JSON objects are skipped.
 * That pipe of `child` must be `"pipe"` in its `stdio`; this adds listeners of its own, leaves others
 * alone, and removes its own once settled.
 */
export function waitForLogRecord(
  child: ChildProcess,
  match: (record: LogRecord) => boolean,
  o: WaitForLogRecordOptions,
): Promise<LogRecord> {
  const name = o.stream ?? "stderr";
  const stream = name === "stdout" ? child.stdout : child.stderr;
  if (!stream) {
    return Promise.reject(
      new TypeError(
        `waitForLogRecord(${o.what}): the child's ${name} is not a pipe (spawn it with "pipe" there)`,
      ),
    );
  }
  const timeoutMs = o.timeoutMs ?? 30_000;
  const describe = () => tail(o.describe?.() ?? "");
  return new Promise<LogRecord>((resolve, reject) => {
    let partial = "";
    const decoder = new StringDecoder("utf8"); // a character split across chunks stays whole
    let settled = false;
    let exitTimer: NodeJS.Timeout | undefined;
    const finish = (err: Error | undefined, record?: LogRecord) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(exitTimer);
      stream.off("data", onData);
      stream.off("close", onClose);
      child.off("exit", onExit);
      child.off("error", onError);
      if (err) reject(err);
      else resolve(record!);
    };
    const onData = (d: Buffer | string) => {
      const lines = (partial + (typeof d === "string" ? d : decoder.write(d))).split("\n");
      partial = lines.pop() ?? "";
      if (partial.length > 1_000_000) partial = ""; // not a log line: never one JSON record
      for (const line of lines) {
        const s = line.trim();
        if (!s.startsWith("{")) continue;
        let rec: unknown;
        try {
          rec = JSON.parse(s);
        } catch {
          continue;
        }
        if (rec !== null && typeof rec === "object" && !Array.isArray(rec) && match(rec as LogRecord)) {
          finish(undefined, rec as LogRecord);
          return;
        }
      }
    };
    const status = () =>
      child.exitCode !== null
        ? `exit code ${child.exitCode}`
        : child.signalCode !== null
          ? `signal ${child.signalCode}`
          : "still running";
    const gone = () =>
      finish(
        new Error(
          `process ${child.pid ?? "?"} ${status() === "still running" ? `closed its ${name}` : `ended (${status()})`} before logging ${o.what}${describe()}`,
        ),
      );
    // After "exit", give the pipe a moment to deliver the last lines (for the tail), then give up.
    const onExit = () => {
      exitTimer ??= setTimeout(gone, 500);
    };
    const onClose = () => {
      onData("\n");
      if (!settled) (child.exitCode !== null || child.signalCode !== null ? gone : onExit)();
    };
    const onError = (err: Error) =>
      finish(new Error(`process for ${o.what} failed to start: ${err.message}${describe()}`));
    const timer = setTimeout(
      () =>
        finish(
          new Error(
            `process ${child.pid ?? "?"} did not log ${o.what} within ${timeoutMs} ms (${status()})${describe()}`,
          ),
        ),
      timeoutMs,
    );
    stream.on("data", onData);
    stream.once("close", onClose);
    child.once("exit", onExit);
    child.once("error", onError);
    if (child.exitCode !== null || child.signalCode !== null) onExit();
  });
}
