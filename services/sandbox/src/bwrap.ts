/**
 * The bubblewrap backend. Each execution gets:
 *
 * * its own user, pid, network, ipc, uts and cgroup namespaces (`--unshare-all`), no further user
 *   namespaces inside (`--disable-userns`), a new session, no capabilities, a real non-root uid on
 *   the host (`setpriv` before bwrap, so even files the host's root owns stay closed);
 * * a read-only `/usr` (and the `/bin`, `/lib*` links) and nothing else of the host: no `/etc`,
 *   `/home`, `/root`, `/run` (no Docker socket), no repository, no host `/tmp`; a fresh `/proc`
 *   and `/dev`; a size-limited tmpfs `/tmp` as work directory; the harness read-only at
 *   `/opt/reward-mesh`; an environment of a few fixed variables (none of the service's);
 * * memory and pids limits from its own cgroup under the service's cgroup (v1 or v2), CPU time
 *   from RLIMIT_CPU, a wall-clock limit enforced from here, output caps.
 *
 * Joining a cgroup v1 takes an RCU grace period (several ms per hierarchy), so sandboxes are
 * *prepared* ahead: a root shell joins the run's fresh cgroups, drops to the sandbox uid and execs
 * bwrap, whose inner shell then waits for its script on fd 3. A request only writes the limits,
 * the files (fd 4), the script (`ulimit`, `exec argv`) and stdin. A prepared sandbox is used once.
 * Harness runs go one step further: *warm* sandboxes have already started the judge interpreter,
 * which waits on fd 4 for the run's rlimits (see warm.ts); also used once.
 *
 * Reaping. bwrap's own pid-namespace init outlives the bwrap we start (bwrap exits as soon as that
 * init reports the command's status) and is then orphaned; so is anything of a sandbox whose bwrap is
 * killed. An orphan goes to the nearest reaper, the host's PID 1 — and when the service *is* PID 1 (a
 * container without an init), Node reaps only the children it spawned: `[bwrap] <defunct>` piles up.
 * So each sandbox starts one level down, as the init of a pid namespace of its own
 * (`unshare --pid --fork`): every orphan of the sandbox is re-parented inside it, and when that init
 * (the outer bwrap) exits the kernel kills and reaps all that is left; `unshare`, our child, waits for
 * it and is the only process we reap. Hence a sandbox is killed by killing what runs *below* that
 * init (bwrap then exits 128 + 9), never our child first — that would orphan the init itself.
 *
 * That pid namespace gets its own /proc (`--mount --mount-proc`, in a mount namespace of its own): bwrap
 * reads `/proc/<pid>` of its child by the pid it sees, which names another process (or none, in a
 * container: "open /proc/2/ns/ns failed") when /proc is still the service's.
 *
 * Rootless mode (`SANDBOX_BWRAP_MODE=rootless`, the default when the service is not root): no cgroups
 * and no `setpriv`. `unshare --user --map-current-user --pid --fork` (an unprivileged user namespace
 * makes the pid namespace possible without CAP_SYS_ADMIN; the service's uid maps to itself) keeps the
 * reaping design above; bwrap, unprivileged, then creates the sandbox's own user namespace (mapping
 * the service's uid to `SANDBOX_BWRAP_UID` *inside* only) and drops every capability. Limits are
 * rlimits the inner shell sets before it execs the program: RLIMIT_AS (memory, virtual),
 * RLIMIT_NPROC (processes; counted per user namespace since Linux 5.14, so per sandbox), RLIMIT_CPU
 * as in root mode. The sandbox's processes are found as the descendants of our `unshare` in /proc.
 * No OOM, peak-memory or CPU-time report: there is no cgroup to read them from.
 * @module
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
} from "node:fs";
import { release, tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { type Logger, silentLogger } from "@reward-mesh/sdk";
import type { CgroupManager, CgroupRun } from "./cgroup.js";
import { detectCgroups } from "./cgroup.js";
import type { SandboxConfig } from "./config.js";
import { backendUnusable, sandboxUnavailable } from "./errors.js";
import { HARNESS_PATH, HARNESS_SANDBOX_DIR } from "./harness-file.js";
import { BoundedOutput } from "./output.js";
import { SANDBOX_ENV, type SandboxEngine, shellQuote } from "./engine.js";
import type { SandboxLimits, SandboxRunRequest, SandboxRunResult } from "./types.js";
import {
  isWarmHarnessRequest,
  stageWarmHarness,
  type WarmPoolStats,
  warmHandOverLine,
  warmStartScript,
} from "./warm.js";

const HOST_PATH = "/usr/sbin:/usr/bin:/sbin:/bin";

/** Outer shell: join the cgroups (as root), drop to the sandbox uid, exec bwrap. */
const JOIN_SCRIPT =
  'uid=$1; shift; for f in "$@"; do case $f in --) break;; esac; echo 0 > "$f" || exit 97; shift; done; shift; ' +
  'exec setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$@"';

/**
 * Inner shell: wait for the one-line script on fd 3 (a socket, so it cannot be opened as a file),
 * then run it. The script unpacks the files from fd 4, sets the environment and rlimits, and execs.
 */
const INNER_SCRIPT =
  's=; while IFS= read -r l <&3; do s="$s$l\n"; done; exec 3<&-; [ -n "$s" ] || exit 0; eval "$s"';

/** What an execution is limited and measured by: its cgroups (root mode) or nothing but rlimits (rootless). */
type RunControl = Omit<CgroupRun, "procsFiles">;

/** The two ways the engine confines a program (`auto` is resolved at start). */
export type BwrapMode = "root" | "rootless";

interface Prepared {
  /** `unshare`, waiting for the sandbox's pid namespace to end. */
  readonly child: ChildProcess;
  readonly cgroup: RunControl;
  readonly name: string;
  exited: boolean;
  /** Resolves once `child` has exited (and with it every process of the sandbox). */
  readonly gone: Promise<void>;
  /** A warm harness sandbox (see warm.ts): its judge has started; `ready` once it waits for a rollout. */
  warm?: { ready: boolean };
}

/** How long a killed sandbox may take to end before its `unshare` is killed outright. */
const KILL_GRACE_MS = 5_000;
/** Kills are repeated this often until the sandbox has ended (processes may still be starting). */
const KILL_REPEAT_MS = 50;

/** The parent of `pid` (undefined once it is gone). */
function parentPid(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/** Every descendant of `root` (not `root` itself), from the parent links in /proc. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const pid = Number(e);
    const parent = parentPid(pid);
    if (parent === undefined) continue;
    const list = children.get(parent);
    if (list) list.push(pid);
    else children.set(parent, [pid]);
  }
  const out = new Set<number>();
  const todo = [root];
  while (todo.length > 0) {
    for (const c of children.get(todo.pop()!) ?? []) {
      if (out.has(c)) continue;
      out.add(c);
      todo.push(c);
    }
  }
  return [...out];
}

/**
 * A rootless run: no cgroup; its processes are the descendants of its `unshare` (`pidOf` is undefined
 * once that has exited, so a reused pid is never taken for it).
 */
function rootlessRun(pidOf: () => number | undefined): RunControl {
  return {
    setLimits() {
      // rlimits, set by the script (see `limitLines`)
    },
    pids() {
      const root = pidOf();
      return root === undefined ? [] : descendants(root);
    },
    stats() {
      // No cgroup: the kernel's OOM killer is not what ends a rootless run (RLIMIT_AS makes allocations
      // fail), and nothing here measures the sandbox's CPU time or peak memory.
      return { oomKills: 0, peakMemoryBytes: undefined, cpuTimeMs: undefined };
    },
    async remove() {},
  };
}

/**
 * Shell lines that set the run's rlimits. Root mode: CPU time only (memory and processes are cgroup
 * limits). Rootless: also RLIMIT_AS = the memory limit (KiB; virtual memory, not RSS) and RLIMIT_NPROC =
 * the process limit (`ulimit -u` in bash, `-p` in dash). Soft and hard alike, so the program cannot raise them.
 * Rootless also makes the program the OOM killer's first choice (`oom_score_adj` 1000).
 */
export function limitLines(mode: BwrapMode, limits: SandboxLimits): string[] {
  const cpuSeconds = Math.max(1, Math.ceil(limits.cpuTimeMs / 1000));
  const lines = [`ulimit -c 0; ulimit -S -t ${cpuSeconds} && ulimit -H -t ${cpuSeconds + 1} || exit 125`];
  if (mode === "rootless") {
    const kib = Math.ceil(limits.memoryBytes / 1024);
    const n = limits.maxProcesses;
    lines.push(
      // No memory cgroup of its own: when the pod's memory runs out, the kernel should pick a sandbox,
      // not the service. Best effort: a program may lower it again, but never below the service's value.
      "{ echo 1000 > /proc/self/oom_score_adj; } 2>/dev/null || :",
      `ulimit -v ${kib} || exit 125`,
      `{ ulimit -u ${n} || ulimit -p ${n}; } 2>/dev/null || exit 125`,
    );
  }
  return lines;
}

/** Resolves `SANDBOX_BWRAP_MODE=auto`: root mode when the service is root, else rootless. */
export function resolveBwrapMode(choice: SandboxConfig["bwrapMode"]): BwrapMode {
  if (choice !== "auto") return choice;
  return process.getuid?.() === 0 ? "root" : "rootless";
}

/** Whether RLIMIT_NPROC is counted per user namespace (Linux >= 5.14), i.e. per rootless sandbox. */
function nprocPerNamespace(): boolean {
  const m = release().match(/^(\d+)\.(\d+)/);
  if (!m) return false;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major > 5 || (major === 5 && minor >= 14);
}

/** Removes harness copies left in the temp dir by processes that are gone. */
function removeStaleStaging(): void {
  try {
    for (const e of readdirSync(tmpdir())) {
      const m = e.match(/^reward-mesh-sandbox-(\d+)-[0-9a-f]+$/);
      if (!m || Number(m[1]) === process.pid) continue;
      try {
        process.kill(Number(m[1]), 0);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ESRCH")
          rmSync(join(tmpdir(), e), { recursive: true, force: true });
      }
    }
  } catch {
    // best effort
  }
}

/** Resolves `bwrap` on the host PATH (or takes an absolute path). */
function resolveBinary(name: string): string | undefined {
  if (name.includes("/")) return name;
  for (const dir of HOST_PATH.split(":")) {
    const p = join(dir, name);
    try {
      lstatSync(p);
      return p;
    } catch {
      // next
    }
  }
  return undefined;
}

/**
 * Compiles the harness with the interpreter the sandbox runs (the host's `python3` on the sandbox's
 * PATH: bwrap binds the host's `/usr`), so every rollout starts from bytecode. Throws
 * `backendUnusable` naming what failed.
 */
function compileHarness(source: string, target: string): void {
  const r = spawnSync(
    "python3",
    [
      "-I",
      "-c",
      "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)",
      source,
      target,
    ],
    { env: { PATH: HOST_PATH }, encoding: "utf8", timeout: 30_000 },
  );
  if (r.status !== 0)
    throw backendUnusable(
      "SANDBOX_BACKEND",
      `bwrap: python3 could not compile the harness: ${(r.error?.message ?? r.stderr ?? "").trim().slice(-300)}`,
    );
  chmodSync(target, 0o444);
}

/** `--ro-bind`/`--symlink` arguments that expose `/usr` and the merged-/usr links, nothing else. */
function rootFsArgs(): string[] {
  const args = ["--ro-bind", "/usr", "/usr"];
  for (const d of ["bin", "sbin", "lib", "lib32", "lib64", "libx32"]) {
    const p = `/${d}`;
    try {
      const st = lstatSync(p);
      if (st.isSymbolicLink()) args.push("--symlink", readlinkSync(p), p);
      else if (st.isDirectory()) args.push("--ro-bind", p, p);
    } catch {
      // absent on this host
    }
  }
  args.push("--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache");
  return args;
}

/** Creates the bwrap engine after checking that bwrap, setpriv and cgroups work here. */
export async function createBwrapEngine(
  config: SandboxConfig,
  logger: Logger = silentLogger,
): Promise<SandboxEngine> {
  const bwrap = resolveBinary(config.bwrapPath);
  const version = bwrap ? spawnSync(bwrap, ["--version"], { encoding: "utf8" }) : undefined;
  if (!bwrap || !version || version.status !== 0) {
    throw backendUnusable(
      "SANDBOX_BWRAP_PATH",
      `bubblewrap not found or not runnable ('${config.bwrapPath}'); install it: apt-get install -y bubblewrap`,
    );
  }
  const mode = resolveBwrapMode(config.bwrapMode);
  if (mode === "root" && !resolveBinary("setpriv"))
    throw backendUnusable("SANDBOX_BACKEND", "bwrap needs setpriv (util-linux)");
  const unshare = resolveBinary("unshare");
  if (!unshare) throw backendUnusable("SANDBOX_BACKEND", "bwrap needs unshare (util-linux)");
  let cgroups: CgroupManager | undefined;
  if (mode === "root") {
    if (process.getuid?.() !== 0) {
      throw backendUnusable(
        "SANDBOX_BWRAP_MODE",
        "the bwrap backend's root mode runs as root: it creates per-run cgroups and starts sandboxes as a non-root uid (SANDBOX_BWRAP_MODE=rootless needs neither)",
      );
    }
    const detected = await detectCgroups(config.cgroupParent);
    if (!detected.ok)
      throw backendUnusable(
        "SANDBOX_CGROUP_PARENT",
        `bwrap needs memory and pids cgroups: ${detected.reason}`,
      );
    cgroups = detected.manager;
  } else if (process.getuid?.() === 0) {
    // Its sandboxes would run as the host's uid 0 (mapped into their namespaces), keeping root's files.
    throw backendUnusable(
      "SANDBOX_BWRAP_MODE",
      "rootless mode runs sandboxes as the service's own uid, and this service is root: use SANDBOX_BWRAP_MODE=root (or auto)",
    );
  } else if (!nprocPerNamespace()) {
    logger.warn(
      { kernel: release() },
      "sandbox: rootless bwrap on a kernel before 5.14: RLIMIT_NPROC counts every process of the service's uid, not one sandbox's",
    );
  }

  // A private copy of the harness the sandbox uid can read (the repository may not be searchable by it).
  removeStaleStaging();
  const staging = join(tmpdir(), `reward-mesh-sandbox-${process.pid}-${randomBytes(4).toString("hex")}`);
  const harnessDir = join(staging, "harness");
  mkdirSync(harnessDir, { recursive: true, mode: 0o711 });
  chmodSync(staging, 0o711);
  chmodSync(harnessDir, 0o755);
  copyFileSync(HARNESS_PATH, join(harnessDir, "harness.py"));
  chmodSync(join(harnessDir, "harness.py"), 0o444);
  compileHarness(join(harnessDir, "harness.py"), join(harnessDir, "harness.pyc"));
  stageWarmHarness(harnessDir);

  const fixedArgs = [
    "--unshare-all",
    "--unshare-user",
    "--disable-userns",
    "--die-with-parent",
    "--new-session",
    ...(mode === "rootless" ? ["--cap-drop", "ALL"] : []),
    "--uid",
    String(config.bwrapUid),
    "--gid",
    String(config.bwrapUid),
    "--hostname",
    "sandbox",
    ...rootFsArgs(),
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--size",
    String(config.tmpfsMb * 1024 * 1024),
    "--tmpfs",
    "/tmp",
    "--ro-bind",
    harnessDir,
    HARNESS_SANDBOX_DIR,
    "--remount-ro",
    "/",
    "--chdir",
    "/tmp",
    "--clearenv",
    "--",
    "/bin/sh",
    "-c",
    INNER_SCRIPT,
  ];

  let counter = 0;
  let closed = false;
  const pool: Prepared[] = [];
  /** Warm harness sandboxes (see warm.ts), each used for one rollout. */
  const warmPool: Prepared[] = [];
  let handedOver = 0;
  let coldHarnessRuns = 0;
  const removals = new Set<Promise<void>>();
  const live = new Set<Prepared>();

  const track = (p: Promise<void>) => {
    removals.add(p);
    void p.finally(() => removals.delete(p));
  };

  const unrefAll = (child: ChildProcess, ref: boolean) => {
    for (const s of child.stdio) {
      const h = s as unknown as { ref?: () => void; unref?: () => void } | null;
      if (h) (ref ? h.ref : h.unref)?.call(h);
    }
    if (ref) child.ref();
    else child.unref();
  };

  /** Starts `unshare` → bwrap for one run, and what limits and measures it. */
  const startRoot = (name: string): { child: ChildProcess; cgroup: RunControl } => {
    const cgroup = cgroups!.create(name);
    // Limits first: nothing runs unbounded even before the request sets its own.
    cgroup.setLimits(config.memoryLimitMb * 1024 * 1024, config.maxProcesses);
    // `unshare` stays outside the run's cgroups: the candidate's process budget is unchanged.
    const child = spawn(
      unshare,
      [
        "--pid",
        "--fork",
        "--mount",
        "--mount-proc",
        "--",
        "/bin/sh",
        "-c",
        JOIN_SCRIPT,
        "sh",
        String(config.bwrapUid),
        ...cgroup.procsFiles,
        "--",
        bwrap,
        ...fixedArgs,
      ],
      { stdio: ["pipe", "pipe", "pipe", "pipe", "pipe"], env: { PATH: HOST_PATH } },
    );
    return { child, cgroup };
  };
  const startRootless = (): { child: ChildProcess; cgroup: RunControl } => {
    // Without root a pid namespace needs a user namespace of its own; the uid maps to itself, so
    // bwrap runs unprivileged in it (no capabilities after exec) and nests the sandbox's namespace.
    const child = spawn(
      unshare,
      [
        "--user",
        "--map-current-user",
        "--pid",
        "--fork",
        "--mount",
        "--mount-proc",
        "--",
        bwrap,
        ...fixedArgs,
      ],
      { stdio: ["pipe", "pipe", "pipe", "pipe", "pipe"], env: { PATH: HOST_PATH } },
    );
    const running = () => (child.exitCode === null && child.signalCode === null ? child.pid : undefined);
    return { child, cgroup: rootlessRun(running) };
  };

  const prepare = (): Prepared => {
    const name = `run-${++counter}-${randomBytes(3).toString("hex")}`;
    const { child, cgroup } = mode === "root" ? startRoot(name) : startRootless();
    let ended = () => {};
    const gone = new Promise<void>((r) => (ended = r));
    const p: Prepared = { child, cgroup, name, exited: false, gone };
    live.add(p);
    child.once("exit", () => {
      p.exited = true;
      ended();
    });
    child.on("error", () => {
      p.exited = true;
      ended();
    });
    for (const s of child.stdio) (s as Readable | Writable | null)?.on("error", () => {});
    unrefAll(child, false);
    return p;
  };

  /** A prepared sandbox that starts the harness's judge right away and waits for its hand-over. */
  const prepareWarm = (): Prepared => {
    const p = prepare();
    const warm = { ready: false };
    p.warm = warm;
    (p.child.stdio[3] as Writable).end(warmStartScript());
    (p.child.stdio[4] as Readable).once("data", () => {
      warm.ready = true;
    });
    return p;
  };

  const refill = () => {
    try {
      while (!closed && warmPool.length < config.bwrapWarm) warmPool.push(prepareWarm());
      while (!closed && pool.length < config.bwrapPrepared) pool.push(prepare());
    } catch (err) {
      logger.warn({ error: (err as Error).message }, "sandbox: could not prepare a bwrap sandbox");
    }
  };

  /** SIGKILLs the sandbox's processes below the init of its pid namespace (see the module comment). */
  const killBelowInit = (p: Prepared) => {
    for (const pid of p.cgroup.pids()) {
      if (!(pid > 0)) continue; // never a process group
      const parent = parentPid(pid);
      if (parent === undefined || parent === p.child.pid) continue; // gone, or the init itself
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
  };

  /**
   * Ends a sandbox: kills below its init until `unshare` exits; if that does not happen within
   * KILL_GRACE_MS (never seen), kills `unshare` too rather than hang.
   */
  const terminate = (p: Prepared) => {
    if (p.exited) return;
    killBelowInit(p);
    const repeat = setInterval(() => killBelowInit(p), KILL_REPEAT_MS);
    const last = setTimeout(() => {
      logger.warn({ sandbox: p.name }, "sandbox: still running after SIGKILL; killing its unshare");
      p.child.kill("SIGKILL");
    }, KILL_GRACE_MS);
    repeat.unref();
    last.unref();
    void p.gone.then(() => {
      clearInterval(repeat);
      clearTimeout(last);
    });
  };

  const dispose = (p: Prepared) => {
    live.delete(p);
    if (!p.exited) {
      // A prepared sandbox that never got its script ends on its own once fd 3 closes.
      for (const s of p.child.stdio) (s as Writable | null)?.destroy?.();
      p.child.ref(); // close() waits for it
      terminate(p);
    }
    track(p.gone.then(() => p.cgroup.remove()));
  };

  const take = (warmRequest: boolean): Prepared => {
    while (warmRequest && warmPool.length > 0) {
      const p = warmPool.shift()!;
      if (!p.exited) {
        handedOver++;
        return p;
      }
      logger.warn({ sandbox: p.name }, "sandbox: a warm harness sandbox ended before its rollout");
      dispose(p);
    }
    if (warmRequest) coldHarnessRuns++;
    while (pool.length > 0) {
      const p = pool.shift()!;
      if (!p.exited) return p;
      dispose(p);
    }
    return prepare();
  };

  const execute = async (
    request: SandboxRunRequest,
    limits: SandboxLimits,
    files: ReadonlyArray<readonly [string, Buffer]>,
  ): Promise<SandboxRunResult> => {
    if (closed) throw sandboxUnavailable("the sandbox is closed");
    let p: Prepared;
    const warmRequest = isWarmHarnessRequest(request.argv, files);
    try {
      p = take(warmRequest);
      p.cgroup.setLimits(limits.memoryBytes, limits.maxProcesses);
    } catch (err) {
      throw sandboxUnavailable("cannot create the run's cgroups", err);
    }
    queueMicrotask(refill);
    const { child } = p;
    unrefAll(child, true);
    const started = performance.now();
    let timedOut = false;
    let outputLimitExceeded = false;
    const kill = () => terminate(p);
    const stdout = new BoundedOutput(limits.maxOutputBytes, () => {
      outputLimitExceeded = true;
      kill();
    });
    const stderr = new BoundedOutput(limits.maxOutputBytes, () => {
      outputLimitExceeded = true;
      kill();
    });
    child.stdout!.on("data", (d: Buffer) => stdout.push(d));
    child.stderr!.on("data", (d: Buffer) => stderr.push(d));
    const closedStreams = Promise.all([
      new Promise((r) => child.stdout!.once("close", r)),
      new Promise((r) => child.stderr!.once("close", r)),
    ]);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      if (p.exited) resolve({ code: child.exitCode, signal: child.signalCode });
      else child.once("exit", (code, signal) => resolve({ code, signal }));
    });
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, limits.wallTimeMs);
    const onAbort = () => kill();
    request.signal?.addEventListener("abort", onAbort, { once: true });

    if (p.warm) {
      // Its judge is running already, waiting on fd 4 (see warm.ts): hand over the run's rlimits.
      (child.stdio[4] as Writable).end(warmHandOverLine(mode, limits));
    } else {
      const script = [
        ...files.map(([name, data]) => `head -c ${data.length} <&4 > ${shellQuote(name)} || exit 125`),
        "exec 4<&-",
        ...Object.entries(SANDBOX_ENV).map(([k, v]) => `export ${k}=${shellQuote(v)}`),
        ...limitLines(mode, limits),
        `exec ${request.argv.map(shellQuote).join(" ")}`,
        "",
      ].join("\n");
      const fdFiles = child.stdio[4] as Writable;
      const fdScript = child.stdio[3] as Writable;
      for (const [, data] of files) fdFiles.write(data);
      fdFiles.end();
      fdScript.end(script);
    }
    const stdin = request.stdin;
    child.stdin!.end(
      stdin === undefined ? undefined : typeof stdin === "string" ? Buffer.from(stdin) : stdin,
    );

    try {
      const { code, signal } = await exited;
      await closedStreams;
      const wallTimeMs = performance.now() - started;
      const stats = p.cgroup.stats();
      if (request.signal?.aborted) throw request.signal.reason;
      if (code === 97 || (code === 1 && /^(bwrap|unshare|setpriv):/.test(stderr.bytes.toString()))) {
        throw sandboxUnavailable(`bwrap failed to start: ${stderr.bytes.toString().trim().slice(0, 300)}`);
      }
      return {
        backend: "bwrap",
        exitCode: signal !== null || (code !== null && code > 128 && code < 160) ? null : code,
        signal: signal ?? (code !== null && code > 128 && code < 160 ? signalName(code - 128) : null),
        stdout: stdout.bytes,
        stderr: stderr.bytes,
        stdoutTruncated: stdout.truncated,
        stderrTruncated: stderr.truncated,
        outputLimitExceeded,
        timedOut,
        oomKilled: stats.oomKills > 0,
        cpuTimeMs: stats.cpuTimeMs,
        wallTimeMs,
        peakMemoryBytes: stats.peakMemoryBytes,
      };
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener("abort", onAbort);
      dispose(p);
    }
  };

  // A real run through the whole chain, so a broken host fails at start, not at the first rollout.
  const probe = await execute(
    { argv: ["python3", "-c", "print('ok')"] },
    {
      wallTimeMs: 20_000,
      cpuTimeMs: 10_000,
      memoryBytes: 256 * 1024 * 1024,
      maxProcesses: 16,
      maxOutputBytes: 4096,
    },
    [],
  ).catch((err: unknown) => err as Error);
  if (probe instanceof Error || probe.stdout.toString().trim() !== "ok") {
    const why =
      probe instanceof Error
        ? probe.message
        : `exit ${probe.exitCode}: ${probe.stderr.toString().trim().slice(0, 300)}`;
    closed = true;
    await cgroups?.close().catch(() => {});
    rmSync(staging, { recursive: true, force: true });
    throw backendUnusable("SANDBOX_BACKEND", `bwrap cannot run python3 here: ${why}`);
  }
  // If the process exits without close() (e.g. `reward-mesh score` in-process): prepared sandboxes
  // end on their own (their script pipe closes), the staging copy goes now, cgroups at the next start.
  const onExit = () => {
    for (const p of live) {
      if (p.exited) continue;
      killBelowInit(p);
      p.child.kill("SIGKILL");
    }
    rmSync(staging, { recursive: true, force: true });
  };
  process.once("exit", onExit);
  refill();
  const limitsBy =
    mode === "root"
      ? `uid ${config.bwrapUid}, ${cgroups!.description}`
      : `rootless: host uid ${process.getuid?.()}, uid ${config.bwrapUid} inside, rlimits`;
  logger.debug({ bwrap: version.stdout.trim(), mode, limits: limitsBy }, "sandbox: bwrap ready");

  return {
    backend: "bwrap",
    description: `bwrap (${version.stdout.trim()}, ${limitsBy})`,
    execute,
    warmStats(): WarmPoolStats {
      const alive = warmPool.filter((p) => !p.exited);
      const ready = alive.filter((p) => p.warm?.ready).length;
      return { ready, starting: alive.length - ready, handedOver, cold: coldHarnessRuns };
    },
    async close() {
      if (closed) return;
      closed = true;
      process.removeListener("exit", onExit);
      for (const p of [...live]) dispose(p);
      pool.length = 0;
      warmPool.length = 0;
      await Promise.all([...removals]);
      await cgroups?.close().catch(() => {});
      rmSync(staging, { recursive: true, force: true });
    },
  };
}

const SIGNALS: Record<number, string> = {
  1: "SIGHUP",
  2: "SIGINT",
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
