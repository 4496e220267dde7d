/**
 * A pool of long-lived CPython parser processes (`python/ast_helper.py`): the ast service's only way
 * to look at untrusted code. Each helper parses with CPython's `ast` (never compiles to bytecode,
 * never executes), builds CorrGRPO's node-type sequences and computes `difflib`'s ratio itself, so
 * the value is the released reward's exactly. Each helper runs under an address-space limit; one
 * request at a time per helper; a request that runs past the timeout kills its helper.
 *
 * A helper that dies (killed, out of memory, timed out, broke the protocol) is replaced and the
 * request is retried once on a fresh helper; a second death resolves as a {@link ParseFailure} with
 * the named reason, which the service scores as an infrastructure error — never as the candidate's.
 * @module
 */
import { type ChildProcessByStdio, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";

/** The helper script (shipped with the package). */
export const AST_HELPER_PATH = fileURLToPath(new URL("../python/ast_helper.py", import.meta.url));

/** CPython's verdict on one piece of code. */
export interface ParsedSide {
  readonly ok: boolean;
  /** Length of the node-type sequence (0 when it does not parse). */
  readonly tokens: number;
  /** `SyntaxError at line L, column C: …`, `RecursionError: …`; undefined when it parses. */
  readonly error: string | undefined;
}

/** What the helper answered for one (candidate, reference) pair. */
export interface ParseAnswer {
  readonly ok: true;
  readonly candidate: ParsedSide | undefined;
  readonly reference: ParsedSide | undefined;
  /** `SequenceMatcher(None, cand, ref, autojunk=False).ratio()`, clipped; undefined when not compared. */
  readonly ratio: number | undefined;
  /** Matched tokens (sum of the matching blocks). */
  readonly matched: number | undefined;
  /** Pairs of equal tokens (the matcher's work bound). */
  readonly pairs: number | undefined;
  /** True when a side exceeded `maxTokens` or the pair exceeded `maxPairs`. */
  readonly tooLarge: boolean;
}

/** The helper died twice on this request. */
export interface ParseFailure {
  readonly ok: false;
  /** e.g. `the parser helper was killed by SIGKILL (twice)`. */
  readonly reason: string;
}

/** Options of {@link ParserPool}. */
export interface ParserPoolOptions {
  /** Python interpreter. @default "python3" */
  readonly python: string;
  /** Helper processes. @default 2 */
  readonly size: number;
  /** Address-space limit of each helper, MiB. @default 512 */
  readonly memoryMb: number;
  /** Wall time one request may take before its helper is killed. @default 10000 */
  readonly timeoutMs: number;
  /** Wall time a helper may take to start (greet) before it is killed. @default 10000 */
  readonly startupTimeoutMs?: number;
}

/** Default of {@link ParserPoolOptions.startupTimeoutMs}: an interpreter on a busy machine is slow to start. */
export const DEFAULT_STARTUP_TIMEOUT_MS = 10_000;

interface Job {
  readonly line: string;
  readonly resolve: (v: ParseAnswer | ParseFailure) => void;
  attempts: number;
  lastReason: string;
}

type Proc = ChildProcessByStdio<Writable, Readable, Readable>;

class Helper {
  readonly proc: Proc;
  readonly ready: Promise<void>;
  current: Job | undefined;
  dead = false;
  private timer: NodeJS.Timeout | undefined;
  private stderrTail = "";

  constructor(
    private readonly opts: ParserPoolOptions,
    private readonly onAnswer: (h: Helper, job: Job, answer: unknown) => void,
    private readonly onDeath: (h: Helper, job: Job | undefined, reason: string) => void,
  ) {
    this.proc = spawn(opts.python, ["-I", "-S", AST_HELPER_PATH, String(opts.memoryMb)], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.hold(true); // until it greets: a starting helper keeps the process alive
    this.proc.stdin.on("error", () => {}); // a dead helper's broken pipe is reported by 'exit'
    this.proc.stderr.setEncoding("utf8");
    this.proc.stderr.on("data", (d: string) => {
      this.stderrTail = (this.stderrTail + d).slice(-400);
    });
    const lines = createInterface({ input: this.proc.stdout });
    let readyResolve!: () => void;
    let readyReject!: (e: Error) => void;
    this.ready = new Promise((res, rej) => {
      readyResolve = res;
      readyReject = rej;
    });
    this.ready.catch(() => {});
    // A helper that never greets (a hung interpreter) would hold its request forever: the same timeout.
    this.timer = setTimeout(() => this.kill("startup"), this.startupMs);
    let greeted = false;
    lines.on("line", (line) => {
      if (!greeted) {
        greeted = true;
        this.clearTimer();
        if (!this.current) this.hold(false);
        readyResolve();
        return;
      }
      const job = this.current;
      if (!job) return;
      this.clearTimer();
      this.current = undefined;
      this.hold(false);
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        this.kill("the parser helper wrote a line that is not JSON");
        this.onDeath(this, job, "the parser helper broke its protocol");
        return;
      }
      this.onAnswer(this, job, parsed);
    });
    const died = (reason: string) => {
      if (this.dead) return;
      this.dead = true;
      this.clearTimer();
      readyReject(new Error(reason));
      const job = this.current;
      this.current = undefined;
      this.onDeath(this, job, reason);
    };
    this.proc.on("error", (err) => died(`the parser helper could not start: ${err.message}`));
    this.proc.on("exit", (code, signal) => {
      const tail = this.stderrTail.trim().split("\n").slice(-1)[0] ?? "";
      died(
        signal
          ? `the parser helper was killed by ${signal}`
          : `the parser helper exited with status ${code}${tail ? ` (${tail})` : ""}`,
      );
    });
  }

  get startupMs(): number {
    return this.opts.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS;
  }

  send(job: Job): void {
    this.current = job;
    this.hold(true);
    this.timer = setTimeout(() => {
      this.kill(`timeout`);
    }, this.opts.timeoutMs);
    this.proc.stdin.write(`${job.line}\n`);
  }

  private killReason: string | undefined;

  kill(reason: string): void {
    this.killReason ??= reason;
    this.proc.kill("SIGKILL");
  }

  /** Why the helper was killed by us, when it was. */
  get killedFor(): string | undefined {
    return this.killReason;
  }

  /**
   * An idle helper must not keep Node's event loop alive (the CLI's in-process `score` would never
   * exit); a helper at work must (nothing else may be pending while it answers).
   */
  private hold(on: boolean): void {
    const method = on ? "ref" : "unref";
    this.proc[method]();
    for (const s of [this.proc.stdin, this.proc.stdout, this.proc.stderr])
      (s as unknown as Partial<Record<"ref" | "unref", () => void>>)[method]?.();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

function side(v: unknown): ParsedSide | undefined {
  if (v === null || typeof v !== "object") return undefined;
  const o = v as { ok?: unknown; tokens?: unknown; error?: unknown };
  return {
    ok: o.ok === true,
    tokens: typeof o.tokens === "number" ? o.tokens : 0,
    error: typeof o.error === "string" ? o.error : undefined,
  };
}

/** Long-lived CPython parser helpers, one request at a time each, replaced when they die. */
export class ParserPool {
  private readonly helpers = new Set<Helper>();
  private readonly idle: Helper[] = [];
  private readonly queue: Job[] = [];
  private closed = false;
  private nextId = 1;

  constructor(private readonly opts: ParserPoolOptions) {}

  /** Parses both sides and compares them (either may be undefined: parse only the other). */
  compare(
    candidate: string | undefined,
    reference: string | undefined,
    limits: { maxTokens: number; maxPairs: number },
  ): Promise<ParseAnswer | ParseFailure> {
    if (this.closed) return Promise.resolve({ ok: false, reason: "the parser pool is closed" });
    const line = JSON.stringify({
      id: this.nextId++,
      candidate: candidate ?? null,
      reference: reference ?? null,
      maxTokens: limits.maxTokens,
      maxPairs: limits.maxPairs,
    });
    return new Promise((resolve) => {
      this.queue.push({ line, resolve, attempts: 0, lastReason: "" });
      this.pump();
    });
  }

  /** Helpers alive now (for tests and metrics). */
  get alive(): number {
    return this.helpers.size;
  }

  /** Kills every helper; pending requests resolve as failures. */
  close(): void {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.resolve({ ok: false, reason: "the parser pool is closed" });
    for (const h of this.helpers) h.kill("closed");
    this.helpers.clear();
    this.idle.length = 0;
  }

  private pump(): void {
    while (this.queue.length > 0) {
      let h = this.idle.pop();
      if (!h && this.helpers.size < this.opts.size) h = this.spawn();
      if (!h) return;
      const job = this.queue.shift()!;
      job.attempts++;
      const helper = h;
      helper.ready.then(
        () => {
          if (helper.dead) return; // onDeath re-queued or failed the job
          helper.send(job);
        },
        () => {},
      );
      helper.current = job; // reserved until ready; a death before ready re-queues it
    }
  }

  private spawn(): Helper {
    const h = new Helper(
      this.opts,
      (helper, job, answer) => {
        this.idle.push(helper);
        const a = answer as {
          error?: unknown;
          candidate?: unknown;
          reference?: unknown;
          ratio?: unknown;
          matched?: unknown;
          pairs?: unknown;
          tooLarge?: unknown;
        };
        if (typeof a?.error === "string") job.resolve({ ok: false, reason: `the parser helper: ${a.error}` });
        else
          job.resolve({
            ok: true,
            candidate: side(a?.candidate),
            reference: side(a?.reference),
            ratio: typeof a?.ratio === "number" ? a.ratio : undefined,
            matched: typeof a?.matched === "number" ? a.matched : undefined,
            pairs: typeof a?.pairs === "number" ? a.pairs : undefined,
            tooLarge: a?.tooLarge === true,
          });
        this.pump();
      },
      (helper, job, reason) => {
        this.helpers.delete(helper);
        const i = this.idle.indexOf(helper);
        if (i >= 0) this.idle.splice(i, 1);
        if (job) {
          const why =
            helper.killedFor === "timeout"
              ? `the parser helper ran past ${this.opts.timeoutMs} ms and was killed`
              : helper.killedFor === "startup"
                ? `the parser helper did not start within ${helper.startupMs} ms and was killed`
                : helper.killedFor && helper.killedFor !== "closed"
                  ? helper.killedFor
                  : reason;
          if (job.attempts >= 2 || this.closed)
            job.resolve({
              ok: false,
              reason: job.lastReason ? `${why}; the first helper: ${job.lastReason}` : why,
            });
          else {
            job.lastReason = why;
            this.queue.unshift(job);
          }
        }
        if (!this.closed) this.pump();
      },
    );
    this.helpers.add(h);
    return h;
  }
}
