/**
 * The Docker backend (dockerode, any Docker-API engine). One fresh container per execution, from
 * the image built by `sandbox-images/python/build.sh`:
 *
 * * no network (`NetworkMode: none`), read-only root, a size-limited `noexec` tmpfs `/tmp` as work
 *   directory, non-root user 65534, every capability dropped, `no-new-privileges`, Docker's
 *   default seccomp profile, private IPC;
 * * memory (no swap), pids and CPU (`NanoCpus`) limits, RLIMIT_CPU, no log driver (output only
 *   through the attach stream, capped here), a wall-clock limit enforced from here;
 * * removed after use. Leftovers of a dead service (by label) are removed at start.
 *
 * Files reach the read-only container through stdin: a tar that `head -c N | tar -x` unpacks into
 * `/tmp` before the program is exec'd with the rest of stdin.
 * @module
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import Docker from "dockerode";
import { type Logger, silentLogger } from "@reward-mesh/sdk";
import type { SandboxConfig } from "./config.js";
import { type SandboxEngine, SANDBOX_ENV } from "./engine.js";
import { backendUnusable, sandboxUnavailable } from "./errors.js";
import { HARNESS_SHA256 } from "./harness-file.js";
import { BoundedOutput } from "./output.js";
import type { SandboxLimits, SandboxRunRequest, SandboxRunResult } from "./types.js";

/** Label on every container this backend creates. */
export const SANDBOX_LABEL = "io.reward-mesh.sandbox";
/** Label naming the service instance (`<host>:<pid>`) that owns a container. */
export const OWNER_LABEL = "io.reward-mesh.owner";
/** Label of the image: sha256 of the harness baked into it. */
export const HARNESS_LABEL = "io.reward-mesh.harness.sha256";

const UNPACK = 'head -c "$0" | tar -x -C /tmp -f - || exit 125; exec "$@"';

/** dockerode connection options for a `DOCKER_HOST`-style address (TLS when `certPath` is set). */
export function dockerOptions(host: string, certPath = ""): Docker.DockerOptions {
  const u = new URL(host);
  if (u.protocol === "unix:") return { socketPath: u.pathname };
  const tls = certPath !== "" || u.protocol === "https:";
  return {
    host: u.hostname,
    port: Number(u.port || (tls ? 2376 : 2375)),
    protocol: tls ? "https" : "http",
    ...(certPath
      ? {
          ca: readFileSync(join(certPath, "ca.pem")),
          cert: readFileSync(join(certPath, "cert.pem")),
          key: readFileSync(join(certPath, "key.pem")),
        }
      : {}),
  };
}

/** Pings the daemon; false when it does not answer within `timeoutMs`. */
export async function dockerAnswers(host: string, timeoutMs: number, certPath = ""): Promise<boolean> {
  let docker: Docker;
  try {
    docker = new Docker(dockerOptions(host, certPath));
  } catch {
    return false; // unreadable certificates
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      docker.ping().then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(false), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A minimal ustar archive of regular files (names ≤ 100 bytes, already validated). */
export function tarFiles(files: ReadonlyArray<readonly [string, Buffer]>): Buffer {
  const blocks: Buffer[] = [];
  for (const [name, data] of files) {
    const h = Buffer.alloc(512);
    h.write(name, 0, 100, "utf8");
    h.write("0000644\0", 100);
    h.write("0177776\0", 108); // uid 65534
    h.write("0177776\0", 116); // gid 65534
    h.write(`${data.length.toString(8).padStart(11, "0")}\0`, 124);
    h.write("00000000000\0", 136);
    h.write("        ", 148); // checksum placeholder
    h.write("0", 156);
    h.write("ustar\0", 257);
    h.write("00", 263);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
    blocks.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Creates the Docker engine after checking the daemon and the image. */
export async function createDockerEngine(
  config: SandboxConfig,
  logger: Logger = silentLogger,
): Promise<SandboxEngine> {
  const docker = new Docker(dockerOptions(config.dockerHost, config.dockerCertPath));
  if (!(await dockerAnswers(config.dockerHost, config.dockerPingTimeoutMs, config.dockerCertPath))) {
    throw backendUnusable("SANDBOX_DOCKER_HOST", `no Docker daemon answers at ${config.dockerHost}`);
  }
  let version = "";
  try {
    const v = await docker.version();
    version = `${v.Version} (API ${v.ApiVersion})`;
    const image = await docker.getImage(config.dockerImage).inspect();
    const label = image.Config?.Labels?.[HARNESS_LABEL];
    if (label !== HARNESS_SHA256) {
      throw backendUnusable(
        "SANDBOX_DOCKER_IMAGE",
        `image ${config.dockerImage} carries harness ${label ?? "(none)"}, this service needs ${HARNESS_SHA256.slice(0, 12)}; rebuild it with sandbox-images/python/build.sh`,
      );
    }
  } catch (err) {
    if ((err as Error).name === "ConfigError") throw err;
    const status = (err as { statusCode?: number }).statusCode;
    throw backendUnusable(
      "SANDBOX_DOCKER_IMAGE",
      status === 404
        ? `image ${config.dockerImage} not found; build it with sandbox-images/python/build.sh`
        : `cannot inspect image ${config.dockerImage}: ${(err as Error).message}`,
      err,
    );
  }

  const host = hostname();
  const owner = `${host}:${process.pid}`;
  // Containers of a service instance that died on this host.
  try {
    const stale = await docker.listContainers({ all: true, filters: { label: [SANDBOX_LABEL] } });
    for (const c of stale) {
      const [h, pid] = (c.Labels[OWNER_LABEL] ?? "").split(":");
      if (h === host && pid && Number(pid) !== process.pid && !pidAlive(Number(pid))) {
        await docker
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => {});
      }
    }
  } catch (err) {
    logger.warn({ error: (err as Error).message }, "sandbox: could not list stale containers");
  }

  let closed = false;
  const live = new Set<string>();
  const removals = new Set<Promise<unknown>>();
  const removeLater = (id: string) => {
    const p = docker
      .getContainer(id)
      .remove({ force: true, v: true })
      .catch(() => {})
      .finally(() => {
        live.delete(id);
        removals.delete(p);
      });
    removals.add(p);
  };

  const execute = async (
    request: SandboxRunRequest,
    limits: SandboxLimits,
    files: ReadonlyArray<readonly [string, Buffer]>,
  ): Promise<SandboxRunResult> => {
    if (closed) throw sandboxUnavailable("the sandbox is closed");
    // Removal happens after the result is returned; keep the daemon's backlog bounded.
    while (removals.size >= config.concurrency) await Promise.race(removals);
    const tar = files.length > 0 ? tarFiles(files) : undefined;
    const cmd = tar ? ["/bin/sh", "-c", UNPACK, String(tar.length), ...request.argv] : [...request.argv];
    const cpuSeconds = Math.max(1, Math.ceil(limits.cpuTimeMs / 1000));
    let container: Docker.Container;
    try {
      container = await docker.createContainer({
        Image: config.dockerImage,
        Cmd: cmd,
        User: "65534:65534",
        WorkingDir: "/tmp",
        Env: Object.entries(SANDBOX_ENV).map(([k, v]) => `${k}=${v}`),
        Labels: { [SANDBOX_LABEL]: "1", [OWNER_LABEL]: owner },
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        OpenStdin: true,
        StdinOnce: true,
        Tty: false,
        NetworkDisabled: true,
        HostConfig: {
          NetworkMode: "none",
          ReadonlyRootfs: true,
          CapDrop: ["ALL"],
          SecurityOpt: ["no-new-privileges"],
          IpcMode: "private",
          Memory: limits.memoryBytes,
          MemorySwap: limits.memoryBytes,
          PidsLimit: limits.maxProcesses,
          NanoCpus: Math.round(config.dockerCpus * 1e9),
          Tmpfs: { "/tmp": `rw,nosuid,nodev,noexec,size=${config.tmpfsMb}m,mode=1777` },
          Ulimits: [
            { Name: "cpu", Soft: cpuSeconds, Hard: cpuSeconds + 1 },
            { Name: "core", Soft: 0, Hard: 0 },
            { Name: "nofile", Soft: 1024, Hard: 1024 },
          ],
          LogConfig: { Type: "none", Config: {} },
          // No init process: the program is PID 1. An init (tini) would hold the container's stdout
          // while being dumpable, i.e. reachable by the candidate through /proc/1/fd/1; the harness,
          // as PID 1, is non-dumpable and reaps orphans itself. (PID 1 ignores SIGXCPU, so a plain
          // program over its CPU limit dies by SIGKILL at the hard limit, one second later.)
          Init: false,
          AutoRemove: false,
          Privileged: false,
        },
      });
    } catch (err) {
      throw sandboxUnavailable("cannot create a container", err);
    }
    live.add(container.id);
    const started = performance.now();
    let timedOut = false;
    let outputLimitExceeded = false;
    let killing: Promise<unknown> | undefined;
    const kill = () => {
      killing ??= container.kill().catch(() => {});
    };
    const stdout = new BoundedOutput(limits.maxOutputBytes, () => {
      outputLimitExceeded = true;
      kill();
    });
    const stderr = new BoundedOutput(limits.maxOutputBytes, () => {
      outputLimitExceeded = true;
      kill();
    });
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => kill();
    try {
      const stream = (await container.attach({
        stream: true,
        stdin: true,
        stdout: true,
        stderr: true,
        hijack: true,
      })) as NodeJS.ReadWriteStream;
      const out = new PassThrough();
      const err = new PassThrough();
      out.on("data", (d: Buffer) => stdout.push(d));
      err.on("data", (d: Buffer) => stderr.push(d));
      docker.modem.demuxStream(stream, out, err);
      const ended = new Promise<void>((resolve) => {
        stream.once("end", () => resolve());
        stream.once("close", () => resolve());
        stream.once("error", () => resolve());
      });
      // "next-exit": the default ("not-running") would return at once for a created container.
      const waited = container.wait({ condition: "next-exit" });
      await container.start();
      timer = setTimeout(() => {
        timedOut = true;
        kill();
      }, limits.wallTimeMs);
      request.signal?.addEventListener("abort", onAbort, { once: true });
      const input = request.stdin === undefined ? Buffer.alloc(0) : Buffer.from(request.stdin);
      stream.on("error", () => {});
      stream.write(tar ? Buffer.concat([tar, input]) : input);
      stream.end();
      const status = (await waited) as { StatusCode: number };
      await Promise.race([ended, new Promise((r) => setTimeout(r, 2_000).unref())]);
      const wallTimeMs = performance.now() - started;
      await killing;
      if (request.signal?.aborted) throw request.signal.reason;
      const info = await container.inspect();
      const code = status.StatusCode;
      if (code === 125 && !timedOut && !outputLimitExceeded && stderr.bytes.length === 0 && tar) {
        throw sandboxUnavailable("could not unpack the input files in the container");
      }
      return {
        backend: "docker",
        exitCode: code > 128 && code < 160 ? null : code,
        signal: code > 128 && code < 160 ? signalName(code - 128) : null,
        stdout: stdout.bytes,
        stderr: stderr.bytes,
        stdoutTruncated: stdout.truncated,
        stderrTruncated: stderr.truncated,
        outputLimitExceeded,
        timedOut,
        oomKilled: info.State?.OOMKilled === true,
        cpuTimeMs: undefined,
        wallTimeMs,
        peakMemoryBytes: undefined,
      };
    } catch (err) {
      if (request.signal?.aborted && err === request.signal.reason) throw err;
      if ((err as Error).name === "UnavailableError") throw err;
      throw sandboxUnavailable("the Docker daemon failed during a run", err);
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener("abort", onAbort);
      removeLater(container.id);
    }
  };

  logger.debug({ version, image: config.dockerImage }, "sandbox: docker ready");
  return {
    backend: "docker",
    description: `docker (${version} at ${config.dockerHost}, image ${config.dockerImage})`,
    execute,
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([...removals]);
      await Promise.all(
        [...live].map((id) =>
          docker
            .getContainer(id)
            .remove({ force: true })
            .catch(() => {}),
        ),
      );
    },
  };
}

const SIGNALS: Record<number, string> = {
  6: "SIGABRT",
  9: "SIGKILL",
  11: "SIGSEGV",
  15: "SIGTERM",
  24: "SIGXCPU",
  25: "SIGXFSZ",
};

function signalName(n: number): string {
  return SIGNALS[n] ?? `SIG${n}`;
}
