/**
 * The {@link Sandbox} contract shared by every backend.
 * @module
 */

/** Names of the real backends. */
export const SandboxBackends = ["docker", "bwrap"] as const;
/** A real backend. */
export type SandboxBackend = (typeof SandboxBackends)[number];

/** Limits of one execution; every backend enforces all of them. */
export interface SandboxLimits {
  /** Wall-clock limit; the whole sandbox is killed when it passes. */
  readonly wallTimeMs: number;
  /** CPU-time limit per process (RLIMIT_CPU, rounded up to whole seconds). */
  readonly cpuTimeMs: number;
  /** Memory of the whole sandbox (cgroup), including its tmpfs. */
  readonly memoryBytes: number;
  /** Processes and threads alive at once in the sandbox (pids cgroup). */
  readonly maxProcesses: number;
  /** Bytes kept per output stream; a program that writes more is killed and flagged. */
  readonly maxOutputBytes: number;
}

/** One execution request. */
export interface SandboxRunRequest {
  /**
   * Program and arguments. `argv[0]` is looked up on the sandbox's `PATH`
   * (`/usr/local/bin:/usr/bin:/bin`), so `python3` is the sandbox's Python, never the host's shim.
   */
  readonly argv: readonly string[];
  /** Bytes on the program's stdin (then EOF). @default empty */
  readonly stdin?: string | Uint8Array;
  /**
   * Input files placed in the work directory (`/tmp`, also the current directory) before the program
   * starts; keys are plain relative names (`[A-Za-z0-9._-]+`, at most 64 files, 8 MiB in all).
   */
  readonly files?: Readonly<Record<string, string | Uint8Array>>;
  /** Per-run limits; missing ones come from the sandbox's configuration. */
  readonly limits?: Partial<SandboxLimits>;
  /** Aborting kills the program and rejects with `signal.reason`. */
  readonly signal?: AbortSignal;
}

/** What happened to one execution. A crash, timeout or OOM of the program is data here, never an exception. */
export interface SandboxRunResult {
  readonly backend: SandboxBackend;
  /** Exit status of the program, or null when it was killed by a signal. */
  readonly exitCode: number | null;
  /** Name of the signal that ended it (e.g. `SIGKILL`), when known. */
  readonly signal: string | null;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
  /** The program wrote more than `maxOutputBytes` on a stream and was killed. */
  readonly outputLimitExceeded: boolean;
  /** The wall-time limit passed and the program was killed. */
  readonly timedOut: boolean;
  /** The kernel's OOM killer ran in the sandbox's memory cgroup. */
  readonly oomKilled: boolean;
  /** CPU time of everything that ran in the sandbox, when the backend can measure it (bwrap: cgroup). */
  readonly cpuTimeMs: number | undefined;
  /** Wall time from start to exit, as seen by the service. */
  readonly wallTimeMs: number;
  /** Peak memory of the sandbox's cgroup, when measurable. */
  readonly peakMemoryBytes: number | undefined;
}

/** Runs untrusted programs in isolation. Create one with `createSandbox`, close it on shutdown. */
export interface Sandbox {
  readonly backend: SandboxBackend;
  /** One line for logs: backend, image or binary, cgroup version. */
  readonly description: string;
  /** Default limits (from the configuration). */
  readonly limits: SandboxLimits;
  /** Executions running now / waiting for a slot (bounded by the configured concurrency). */
  readonly active: number;
  readonly waiting: number;
  /**
   * Runs one program. Rejects only for infrastructure faults (`UnavailableError`, retryable) or when
   * `signal` aborts; the program's own failures are in the result.
   */
  run(request: SandboxRunRequest): Promise<SandboxRunResult>;
  /** Counters of the warm pool of harness sandboxes, where the backend keeps one (bwrap). */
  readonly warmStats?: () => import("./warm.js").WarmPoolStats;
  /** Stops prepared sandboxes, removes cgroups/containers this instance created. Idempotent. */
  close(): Promise<void>;
}
