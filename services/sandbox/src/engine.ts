/**
 * What a backend implements (an engine), and the parts every backend shares: the sandbox's fixed
 * environment, request validation, limit defaults, shell quoting.
 * @module
 */
import type { SandboxConfig } from "./config.js";
import type { SandboxBackend, SandboxLimits, SandboxRunRequest, SandboxRunResult } from "./types.js";
import type { WarmPoolStats } from "./warm.js";

/** A backend without the shared concurrency bound and validation (see `createSandbox`). */
export interface SandboxEngine {
  readonly backend: SandboxBackend;
  readonly description: string;
  execute(
    request: SandboxRunRequest,
    limits: SandboxLimits,
    files: ReadonlyArray<readonly [string, Buffer]>,
  ): Promise<SandboxRunResult>;
  close(): Promise<void>;
  /** The warm pool's counters, for a backend that keeps one (bwrap). */
  readonly warmStats?: () => WarmPoolStats;
}

/** The only environment variables a sandboxed program sees (the service's own never cross). */
export const SANDBOX_ENV: Readonly<Record<string, string>> = {
  PATH: "/usr/local/bin:/usr/bin:/bin",
  HOME: "/tmp",
  TMPDIR: "/tmp",
  LANG: "C.UTF-8",
  LC_ALL: "C.UTF-8",
  PYTHONHASHSEED: "0",
  PYTHONDONTWRITEBYTECODE: "1",
  PYTHONIOENCODING: "utf-8",
  OMP_NUM_THREADS: "1",
};

/** Quotes one word for `/bin/sh`. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Most input files per request. */
export const MAX_FILES = 64;
/** Most input bytes (all files together) per request. */
export const MAX_FILE_BYTES = 8 * 1024 * 1024;
const FILE_NAME = /^[A-Za-z0-9._-]{1,128}$/;

/** Default limits from the configuration. */
export function defaultLimits(config: SandboxConfig): SandboxLimits {
  return {
    wallTimeMs: config.timeLimitMs,
    cpuTimeMs: config.timeLimitMs,
    memoryBytes: config.memoryLimitMb * 1024 * 1024,
    maxProcesses: config.maxProcesses,
    maxOutputBytes: config.maxOutputBytes,
  };
}

/** Validates a request (a programming error throws `RangeError`) and resolves limits and files. */
export function resolveRequest(
  request: SandboxRunRequest,
  defaults: SandboxLimits,
): { limits: SandboxLimits; files: Array<readonly [string, Buffer]> } {
  if (request.argv.length === 0 || request.argv[0] === "")
    throw new RangeError("sandbox: 'argv' must name a program");
  for (const a of request.argv) {
    if (a.includes("\0")) throw new RangeError("sandbox: 'argv' must not contain NUL bytes");
  }
  const limits = { ...defaults };
  for (const [k, v] of Object.entries(request.limits ?? {})) {
    if (v === undefined) continue;
    if (!Number.isFinite(v) || v <= 0)
      throw new RangeError(`sandbox: limit '${k}' must be a positive number, got ${v}`);
    (limits as Record<string, number>)[k] = Math.ceil(v);
  }
  const files: Array<readonly [string, Buffer]> = [];
  let total = 0;
  for (const [name, content] of Object.entries(request.files ?? {})) {
    if (!FILE_NAME.test(name) || name === "." || name === "..")
      throw new RangeError(`sandbox: file name '${name}' must match [A-Za-z0-9._-]+`);
    const data = typeof content === "string" ? Buffer.from(content) : Buffer.from(content);
    total += data.length;
    files.push([name, data]);
  }
  if (files.length > MAX_FILES)
    throw new RangeError(`sandbox: at most ${MAX_FILES} files, got ${files.length}`);
  if (total > MAX_FILE_BYTES) throw new RangeError(`sandbox: files exceed ${MAX_FILE_BYTES} bytes`);
  return { limits, files };
}
