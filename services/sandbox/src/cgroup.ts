/**
 * Per-execution cgroups for the bubblewrap backend: memory and pids limits (plus CPU accounting),
 * created under the service's own cgroup. Works on cgroup v1 (separate hierarchies, e.g. this
 * project's hybrid machines) and v2 (unified), detected at run time from /proc/self/mountinfo and
 * /proc/self/cgroup.
 *
 * Layout: `<own cgroup>/reward-mesh-sandbox-<pid>/<run>` in every hierarchy used. Directories of a
 * service that died are removed by the next one on the same host.
 * @module
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Prefix of the per-service directory. */
const SERVICE_DIR_PREFIX = "reward-mesh-sandbox-";

/** cgroup files of one execution and what it used. */
export interface CgroupRun {
  /** `cgroup.procs` files a process writes `0` to in order to join this run's cgroups. */
  readonly procsFiles: readonly string[];
  /** Sets the limits (cheap writes; may be called after processes joined). */
  setLimits(memoryBytes: number, maxProcesses: number): void;
  /** Processes in the run's cgroup now (their pids in this process's pid namespace). */
  pids(): number[];
  /** OOM kills, peak memory and CPU time so far. */
  stats(): { oomKills: number; peakMemoryBytes: number | undefined; cpuTimeMs: number | undefined };
  /** SIGKILLs whatever is left and removes the directories (retries while the kernel lets go). */
  remove(): Promise<void>;
}

/** Creates per-execution cgroups under one parent. */
export interface CgroupManager {
  readonly version: 1 | 2;
  /** For logs: version and parent paths. */
  readonly description: string;
  create(name: string): CgroupRun;
  /** Removes the service's parent directories (after every run was removed). */
  close(): Promise<void>;
}

interface Mount {
  readonly root: string;
  readonly mountPoint: string;
  readonly fsType: string;
  readonly superOptions: readonly string[];
}

function readMounts(): Mount[] {
  const out: Mount[] = [];
  for (const line of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
    if (!line) continue;
    const [left, right] = line.split(" - ");
    if (!left || !right) continue;
    const l = left.split(" ");
    const r = right.split(" ");
    const unoctal = (s: string) =>
      s.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
    out.push({
      root: unoctal(l[3] ?? "/"),
      mountPoint: unoctal(l[4] ?? ""),
      fsType: r[0] ?? "",
      superOptions: (r[2] ?? "").split(","),
    });
  }
  return out;
}

function ownCgroups(): { v1: Map<string, string>; v2: string | undefined } {
  const v1 = new Map<string, string>();
  let v2: string | undefined;
  for (const line of readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const m = line.match(/^(\d+):([^:]*):(.*)$/);
    if (!m) continue;
    if (m[1] === "0" && m[2] === "") v2 = m[3];
    else for (const c of m[2]!.split(",")) v1.set(c, m[3]!);
  }
  return { v1, v2 };
}

/** Host path of cgroup `path` (as in /proc/self/cgroup) inside a mount of its hierarchy. */
function hostPath(mount: Mount, path: string): string {
  const root = mount.root === "/" ? "" : mount.root;
  const rel = root && path.startsWith(root) ? path.slice(root.length) : path;
  return join(mount.mountPoint, rel);
}

function readNumber(file: string): number | undefined {
  try {
    const n = Number(readFileSync(file, "utf8").trim());
    return Number.isFinite(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

function readKey(file: string, key: string): number | undefined {
  try {
    const m = readFileSync(file, "utf8").match(new RegExp(`^${key} (\\d+)$`, "m"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

function tryWrite(file: string, value: string): boolean {
  try {
    writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

function pidsIn(dir: string): number[] {
  try {
    return readFileSync(join(dir, "cgroup.procs"), "utf8")
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map(Number);
  } catch {
    return [];
  }
}

function killAll(dir: string): void {
  for (const pid of pidsIn(dir)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** Removes `dir` (a cgroup directory): children first, killing what is left; retries for a while. */
async function removeTree(dir: string, deadlineMs = 5_000): Promise<boolean> {
  if (!existsSync(dir)) return true;
  let ok = true;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) ok = (await removeTree(join(dir, e.name), deadlineMs)) && ok;
  }
  const deadline = Date.now() + deadlineMs;
  let delay = 2;
  while (true) {
    killAll(dir);
    try {
      rmdirSync(dir);
      return ok;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return ok;
      if (Date.now() > deadline) return false;
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 100);
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Removes parent directories left by services (on this host) that are no longer running. */
async function removeStale(parentDirs: readonly string[]): Promise<void> {
  for (const parent of parentDirs) {
    let entries: string[] = [];
    try {
      entries = readdirSync(parent);
    } catch {
      continue;
    }
    for (const e of entries) {
      const m = e.match(/^reward-mesh-sandbox-(\d+)$/);
      if (m && Number(m[1]) !== process.pid && !pidAlive(Number(m[1])))
        await removeTree(join(parent, e), 1_000);
    }
  }
}

/** Why cgroups cannot be used here, or the manager. */
export type CgroupDetection =
  | { readonly ok: true; readonly manager: CgroupManager }
  | { readonly ok: false; readonly reason: string };

/**
 * Finds usable memory + pids controllers (v2 unified if it has both, else v1) and creates this
 * service's parent directory. `parentOverride` (relative to each hierarchy's root) replaces the
 * service's own cgroup as the parent.
 */
export async function detectCgroups(parentOverride = ""): Promise<CgroupDetection> {
  let mounts: Mount[];
  let own: ReturnType<typeof ownCgroups>;
  try {
    mounts = readMounts();
    own = ownCgroups();
  } catch (err) {
    return { ok: false, reason: `cannot read /proc/self/{mountinfo,cgroup}: ${(err as Error).message}` };
  }
  const serviceDirName = `${SERVICE_DIR_PREFIX}${process.pid}`;

  // ---- cgroup v2 (unified) with memory + pids delegated to us
  const unified = mounts.find((m) => m.fsType === "cgroup2");
  if (unified && own.v2 !== undefined) {
    const parent = hostPath(unified, parentOverride ? `/${parentOverride}` : own.v2);
    let controllers: string[] = [];
    try {
      controllers = readFileSync(join(parent, "cgroup.controllers"), "utf8").trim().split(/\s+/);
    } catch {
      // not readable: fall through to v1
    }
    if (controllers.includes("memory") && controllers.includes("pids")) {
      const enable = (dir: string) => tryWrite(join(dir, "cgroup.subtree_control"), "+memory +pids");
      if (!enable(parent)) {
        // "No internal processes": a non-root cgroup with processes cannot delegate controllers.
        // Move this process into a leaf of its own and try again (what container runtimes do).
        if (parentOverride) {
          return {
            ok: false,
            reason: `cgroup v2: cannot enable memory+pids in ${parent}/cgroup.subtree_control`,
          };
        }
        const leaf = join(parent, `reward-mesh-service-${process.pid}`);
        try {
          mkdirSync(leaf, { recursive: true });
          writeFileSync(join(leaf, "cgroup.procs"), String(process.pid));
        } catch (err) {
          return {
            ok: false,
            reason: `cgroup v2: cannot move the service into ${leaf}: ${(err as Error).message}`,
          };
        }
        if (!enable(parent)) {
          return {
            ok: false,
            reason: `cgroup v2: ${parent} has other processes, so memory+pids cannot be delegated; run the service in a cgroup of its own (e.g. systemd-run --scope -p Delegate=yes) or set SANDBOX_CGROUP_PARENT`,
          };
        }
      }
      await removeStale([parent]);
      const service = join(parent, serviceDirName);
      try {
        mkdirSync(service, { recursive: true });
      } catch (err) {
        return { ok: false, reason: `cgroup v2: cannot create ${service}: ${(err as Error).message}` };
      }
      if (!enable(service))
        return { ok: false, reason: `cgroup v2: cannot enable memory+pids in ${service}` };
      return { ok: true, manager: createV2Manager(service) };
    }
  }

  // ---- cgroup v1: one hierarchy per controller
  const v1Mount = (controller: string) =>
    mounts.find((m) => m.fsType === "cgroup" && m.superOptions.includes(controller));
  const dirs = new Map<string, string>();
  for (const controller of ["memory", "pids", "cpuacct"]) {
    const mount = v1Mount(controller);
    const path = parentOverride ? `/${parentOverride}` : own.v1.get(controller);
    if (!mount || path === undefined) {
      if (controller === "cpuacct") continue;
      return { ok: false, reason: `no cgroup ${controller} controller is mounted (v1) or delegated (v2)` };
    }
    dirs.set(controller, hostPath(mount, path));
  }
  await removeStale([...dirs.values()]);
  const services = new Map<string, string>();
  for (const [controller, parent] of dirs) {
    const dir = join(parent, serviceDirName);
    try {
      mkdirSync(dir, { recursive: true });
      services.set(controller, dir);
    } catch (err) {
      if (controller === "cpuacct") continue; // accounting only: optional
      return { ok: false, reason: `cgroup v1: cannot create ${dir}: ${(err as Error).message}` };
    }
  }
  return { ok: true, manager: createV1Manager(services) };
}

function createV1Manager(services: Map<string, string>): CgroupManager {
  const memory = services.get("memory")!;
  const pids = services.get("pids")!;
  const cpuacct = services.get("cpuacct");
  return {
    version: 1,
    description: `cgroup v1 (memory ${memory}, pids ${pids}${cpuacct ? `, cpuacct ${cpuacct}` : ""})`,
    create(name) {
      const mem = join(memory, name);
      const pid = join(pids, name);
      const cpu = cpuacct ? join(cpuacct, name) : undefined;
      for (const d of [mem, pid, cpu]) if (d) mkdirSync(d);
      const swapFile = join(mem, "memory.memsw.limit_in_bytes");
      const hasSwapFile = existsSync(swapFile);
      return {
        procsFiles: [mem, pid, cpu]
          .filter((d): d is string => d !== undefined)
          .map((d) => join(d, "cgroup.procs")),
        setLimits(memoryBytes, maxProcesses) {
          // memory.limit_in_bytes may never exceed memory.memsw.limit_in_bytes: order the writes.
          const limit = join(mem, "memory.limit_in_bytes");
          const raising = (readNumber(limit) ?? 0) < memoryBytes;
          if (raising && hasSwapFile) writeFileSync(swapFile, String(memoryBytes));
          writeFileSync(limit, String(memoryBytes));
          if (!raising && hasSwapFile) writeFileSync(swapFile, String(memoryBytes));
          writeFileSync(join(pid, "pids.max"), String(maxProcesses));
        },
        pids: () => pidsIn(pid),
        stats() {
          const usage = cpu ? readNumber(join(cpu, "cpuacct.usage")) : undefined;
          return {
            oomKills: readKey(join(mem, "memory.oom_control"), "oom_kill") ?? 0,
            peakMemoryBytes: readNumber(join(mem, "memory.max_usage_in_bytes")),
            cpuTimeMs: usage === undefined ? undefined : usage / 1e6,
          };
        },
        async remove() {
          await Promise.all(
            [mem, pid, cpu].filter((d): d is string => d !== undefined).map((d) => removeTree(d)),
          );
        },
      };
    },
    async close() {
      await Promise.all(
        [memory, pids, cpuacct].filter((d): d is string => d !== undefined).map((d) => removeTree(d)),
      );
    },
  };
}

function createV2Manager(service: string): CgroupManager {
  return {
    version: 2,
    description: `cgroup v2 (${service})`,
    create(name) {
      const dir = join(service, name);
      mkdirSync(dir);
      return {
        procsFiles: [join(dir, "cgroup.procs")],
        setLimits(memoryBytes, maxProcesses) {
          writeFileSync(join(dir, "memory.max"), String(memoryBytes));
          tryWrite(join(dir, "memory.swap.max"), "0");
          writeFileSync(join(dir, "pids.max"), String(maxProcesses));
        },
        pids: () => pidsIn(dir),
        stats() {
          const usec = readKey(join(dir, "cpu.stat"), "usage_usec");
          return {
            oomKills: readKey(join(dir, "memory.events"), "oom_kill") ?? 0,
            peakMemoryBytes: readNumber(join(dir, "memory.peak")),
            cpuTimeMs: usec === undefined ? undefined : usec / 1e3,
          };
        },
        async remove() {
          tryWrite(join(dir, "cgroup.kill"), "1");
          await removeTree(dir);
        },
      };
    },
    async close() {
      await removeTree(service);
    },
  };
}
