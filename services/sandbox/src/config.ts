/**
 * Configuration of the sandbox (prefix `SANDBOX_`, shared by every service that runs code). The only
 * module of the sandbox that reads the environment.
 * @module
 */
import { availableParallelism } from "node:os";
import { ConfigError, defineEnv, type Env, loadEnv, processEnv } from "@reward-mesh/sdk";
import { HARNESS_SHA256 } from "./harness-file.js";

/** `SANDBOX_BACKEND` values: a real backend, or `auto` (Docker when its daemon answers, else bwrap). */
export const SandboxBackendChoices = ["auto", "docker", "bwrap"] as const;
/** A backend choice. */
export type SandboxBackendChoice = (typeof SandboxBackendChoices)[number];

/**
 * `SANDBOX_BWRAP_MODE` values: `root` (per-run cgroups, programs switched to `SANDBOX_BWRAP_UID`; the
 * service must be root), `rootless` (no cgroups, no uid switch: an unprivileged user namespace and
 * rlimits), or `auto` (`root` when the process runs as root, else `rootless`).
 */
export const SandboxBwrapModeChoices = ["auto", "root", "rootless"] as const;
/** A bwrap mode choice. */
export type SandboxBwrapModeChoice = (typeof SandboxBwrapModeChoices)[number];

/** The image tag the build script gives the image of the current harness. */
export const DEFAULT_DOCKER_IMAGE = `reward-mesh/sandbox-python:h-${HARNESS_SHA256.slice(0, 12)}`;

/** Everything the sandbox needs. */
export interface SandboxConfig {
  /**
   * Which backend runs programs.
   * @default "auto" — Docker when the daemon answers a ping, else bubblewrap; the choice is logged at start.
   */
  readonly backend: SandboxBackendChoice;
  /**
   * Executions at once per service process (a semaphore; more requests wait).
   * @default the number of CPUs — code execution is CPU-bound, more only adds noise to timings.
   */
  readonly concurrency: number;
  /**
   * Wall-time limit of one execution when the task sets none.
   * @default 5000 — CorrGRPO's launcher (`timeout 5.0`).
   */
  readonly timeLimitMs: number;
  /**
   * Memory limit of one execution when the task sets none, in MiB.
   * @default 1024 — CorrGRPO's launcher.
   */
  readonly memoryLimitMb: number;
  /**
   * Processes and threads at once in one sandbox.
   * @default 64 — enough for multiprocessing in a test, small enough to stop a fork bomb at once.
   */
  readonly maxProcesses: number;
  /**
   * Bytes kept per output stream (stdout, stderr); a program writing more is killed and flagged.
   * @default 1048576 (1 MiB)
   */
  readonly maxOutputBytes: number;
  /**
   * Size of the sandbox's `/tmp` (its work directory), in MiB; it also counts towards the memory limit.
   * @default 64
   */
  readonly tmpfsMb: number;
  /**
   * Docker daemon address (`unix:///path`, `tcp://host:port`).
   * @default `DOCKER_HOST`, else `unix:///var/run/docker.sock` — where `scripts/bootstrap.sh` starts dockerd.
   */
  readonly dockerHost: string;
  /**
   * Directory with `ca.pem`, `cert.pem`, `key.pem` for a TLS (`https://`/`tcp://` + TLS) daemon.
   * @default `DOCKER_CERT_PATH`, else none (plain unix socket or TCP)
   */
  readonly dockerCertPath: string;
  /**
   * Image with Python and the harness (built by `sandbox-images/python/build.sh`).
   * @default `reward-mesh/sandbox-python:h-<first 12 hex of the harness's sha256>` — the tag pins the
   * harness version, so a stale image is never used.
   */
  readonly dockerImage: string;
  /**
   * CPUs one container may use (`NanoCpus`).
   * @default 1 — a candidate cannot speed itself up with threads, and timings stay comparable.
   */
  readonly dockerCpus: number;
  /**
   * How long `auto` waits for the Docker daemon's ping before choosing bwrap.
   * @default 1500
   */
  readonly dockerPingTimeoutMs: number;
  /**
   * The bubblewrap binary.
   * @default "bwrap" (looked up on PATH; Debian's `bubblewrap` package)
   */
  readonly bwrapPath: string;
  /**
   * How the bwrap backend confines programs: `root` (cgroups + `setpriv`, needs root), `rootless`
   * (an unprivileged user namespace + rlimits, for a pod without root or capabilities).
   * @default "auto" — `root` when the service runs as root, else `rootless`
   */
  readonly bwrapMode: SandboxBwrapModeChoice;
  /**
   * Uid and gid the bwrap sandbox runs as (a real non-root id on the host, never root).
   * @default 65534 (nobody)
   */
  readonly bwrapUid: number;
  /**
   * Sandboxes prepared ahead (cgroups joined, bwrap waiting for its arguments) per service process.
   * Joining a cgroup v1 costs an RCU grace period (~5 ms per hierarchy); preparing hides it. 0 = off.
   * @default the concurrency
   */
  readonly bwrapPrepared: number;
  /**
   * Warm harness sandboxes kept ready per service process: prepared sandboxes whose judge interpreter
   * has already started and loaded the harness, each handed exactly one `runPythonTests` rollout.
   * 0 = off (every harness run starts its interpreter on the critical path).
   * @default the concurrency
   */
  readonly bwrapWarm: number;
  /**
   * Parent cgroup for the bwrap backend's per-run cgroups, as a path relative to each hierarchy's
   * mount point. The default puts them under the service's own cgroup.
   * @default "" (the service's own cgroup, read from /proc/self/cgroup)
   */
  readonly cgroupParent: string;
}

/** The sandbox's variables (`SANDBOX_*`, `DOCKER_HOST`, `DOCKER_CERT_PATH`), read by every service that runs code. */
export const SANDBOX_CONFIG_ENV = defineEnv({
  SANDBOX_CONCURRENCY: {
    type: "integer",
    minimum: 1,
    maximum: 1024,
    description: "Executions at once (default: the CPUs available).",
  },
  SANDBOX_DOCKER_HOST: {
    type: "string",
    description:
      "Docker endpoint, unix:///path or tcp://host:port (default: DOCKER_HOST, else unix:///var/run/docker.sock).",
  },
  DOCKER_HOST: { type: "string", description: "Docker endpoint when SANDBOX_DOCKER_HOST is unset." },
  SANDBOX_DOCKER_CPUS: { type: "number", default: 1, description: "CPUs per execution, in (0, 64]." },
  SANDBOX_BACKEND: {
    type: "string",
    enum: SandboxBackendChoices,
    default: "auto",
    description: "How candidate code runs: docker, bwrap, or auto (docker when reachable, else bwrap).",
  },
  SANDBOX_TIME_LIMIT_MS: {
    type: "integer",
    minimum: 100,
    maximum: 600000,
    default: 5000,
    description: "Wall-time limit per execution.",
  },
  SANDBOX_MEMORY_LIMIT_MB: {
    type: "integer",
    minimum: 32,
    maximum: 65536,
    default: 1024,
    description: "Memory limit per execution.",
  },
  SANDBOX_MAX_PROCESSES: {
    type: "integer",
    minimum: 4,
    maximum: 4096,
    default: 64,
    description: "Process limit per execution.",
  },
  SANDBOX_MAX_OUTPUT_BYTES: {
    type: "integer",
    minimum: 1024,
    maximum: 1073741824,
    default: 1048576,
    description: "Output kept per stream per execution.",
  },
  SANDBOX_TMPFS_MB: {
    type: "integer",
    minimum: 1,
    maximum: 65536,
    default: 64,
    description: "Size of the execution's /tmp.",
  },
  SANDBOX_DOCKER_CERT_PATH: {
    type: "string",
    description: "Docker TLS client certificates (default: DOCKER_CERT_PATH).",
  },
  DOCKER_CERT_PATH: {
    type: "string",
    description: "Docker TLS client certificates when SANDBOX_DOCKER_CERT_PATH is unset.",
  },
  SANDBOX_DOCKER_IMAGE: {
    type: "string",
    description: "Sandbox image (default: the image built from sandbox-images for this harness).",
  },
  SANDBOX_DOCKER_PING_TIMEOUT_MS: {
    type: "integer",
    minimum: 50,
    maximum: 60000,
    default: 1500,
    description: "How long auto waits for Docker before choosing bwrap.",
  },
  SANDBOX_BWRAP_PATH: { type: "string", default: "bwrap", description: "The bubblewrap binary." },
  SANDBOX_BWRAP_MODE: {
    type: "string",
    enum: SandboxBwrapModeChoices,
    default: "auto",
    description:
      "bwrap confinement: root (per-run cgroups + setpriv, needs root), rootless (user namespace + rlimits); auto: root when run as root.",
  },
  SANDBOX_BWRAP_UID: {
    type: "integer",
    minimum: 1,
    maximum: 4294967294,
    default: 65534,
    description: "UID candidate code runs as under bwrap.",
  },
  SANDBOX_BWRAP_PREPARED: {
    type: "integer",
    minimum: 0,
    maximum: 1024,
    description: "bwrap sandboxes kept prepared (default: SANDBOX_CONCURRENCY).",
  },
  SANDBOX_BWRAP_WARM: {
    type: "integer",
    minimum: 0,
    maximum: 1024,
    description:
      "bwrap harness sandboxes kept warm (judge interpreter started, one rollout each; default: SANDBOX_CONCURRENCY; 0 = off).",
  },
  SANDBOX_CGROUP_PARENT: {
    type: "string",
    default: "",
    description: "Parent cgroup of bwrap's per-run cgroups (default: the service's own cgroup).",
  },
});

/**
 * Reads every `SANDBOX_*` option (and `DOCKER_HOST`, `DOCKER_CERT_PATH`): {@link SANDBOX_CONFIG_ENV}. Bad values
 * fail start-up naming the key.
 */
export function loadSandboxConfig(env: Env = processEnv()): SandboxConfig {
  const v = loadEnv(SANDBOX_CONFIG_ENV, env);
  const concurrency = v.SANDBOX_CONCURRENCY ?? Math.max(1, availableParallelism());
  const dockerHost = v.SANDBOX_DOCKER_HOST ?? v.DOCKER_HOST ?? "unix:///var/run/docker.sock";
  if (!/^(unix|tcp|http|https):\/\//.test(dockerHost))
    throw new ConfigError(
      "SANDBOX_DOCKER_HOST",
      `must be unix:///path or tcp://host:port, got '${dockerHost}'`,
    );
  const dockerCpus = v.SANDBOX_DOCKER_CPUS;
  if (dockerCpus <= 0 || dockerCpus > 64)
    throw new ConfigError("SANDBOX_DOCKER_CPUS", `must be a number in (0, 64], got '${dockerCpus}'`);
  return {
    backend: v.SANDBOX_BACKEND,
    concurrency,
    timeLimitMs: v.SANDBOX_TIME_LIMIT_MS,
    memoryLimitMb: v.SANDBOX_MEMORY_LIMIT_MB,
    maxProcesses: v.SANDBOX_MAX_PROCESSES,
    maxOutputBytes: v.SANDBOX_MAX_OUTPUT_BYTES,
    tmpfsMb: v.SANDBOX_TMPFS_MB,
    dockerHost,
    dockerCertPath: v.SANDBOX_DOCKER_CERT_PATH ?? v.DOCKER_CERT_PATH ?? "",
    dockerImage: v.SANDBOX_DOCKER_IMAGE ?? DEFAULT_DOCKER_IMAGE,
    dockerCpus,
    dockerPingTimeoutMs: v.SANDBOX_DOCKER_PING_TIMEOUT_MS,
    bwrapPath: v.SANDBOX_BWRAP_PATH,
    bwrapMode: v.SANDBOX_BWRAP_MODE,
    bwrapUid: v.SANDBOX_BWRAP_UID,
    bwrapPrepared: v.SANDBOX_BWRAP_PREPARED ?? concurrency,
    bwrapWarm: v.SANDBOX_BWRAP_WARM ?? concurrency,
    cgroupParent: v.SANDBOX_CGROUP_PARENT.replace(/^\/+|\/+$/g, ""),
  };
}
