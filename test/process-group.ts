/**
 * Runs a command as the leader of its own process group and, whatever happens, ends the whole group:
 * a timed-out or finished command leaves nothing behind (what it started in the background — a
 * nats-server, the services of `train --with-mesh` — included). `execFile`'s `timeout` would kill only
 * the command itself and orphan its children.
 */
import { spawn } from "node:child_process";

/** What the command printed, and how it ended. */
export interface GroupResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
}

/** Options of {@link runInGroup}. */
export interface GroupOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** After this long the group gets SIGTERM, then SIGKILL `graceMs` later. */
  readonly timeoutMs: number;
  /** @default 5000 */
  readonly graceMs?: number;
  /** Output kept per stream (its end). @default 64 MiB */
  readonly maxBuffer?: number;
}

/** Sends `signal` to process group `pgid`; false when no process of it is left. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw err;
  }
}

/**
 * Runs `command args` detached (a new process group) until it exits or, past `timeoutMs`, until the
 * group was terminated; then kills whatever of its group is still running and resolves with its output.
 */
export async function runInGroup(
  command: string,
  args: readonly string[],
  o: GroupOptions,
): Promise<GroupResult> {
  const max = o.maxBuffer ?? 64 * 1024 * 1024;
  const child = spawn(command, args, {
    cwd: o.cwd,
    env: o.env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const pgid = child.pid!;
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout = (stdout + d.toString()).slice(-max);
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-max);
  });
  let timedOut = false;
  let kill: NodeJS.Timeout | undefined;
  const timer = setTimeout(() => {
    timedOut = true;
    signalGroup(pgid, "SIGTERM");
    kill = setTimeout(() => signalGroup(pgid, "SIGKILL"), o.graceMs ?? 5000);
  }, o.timeoutMs);
  // Its output pipes close once every process holding them has ended, so this waits for the command to
  // exit, not for 'close': what it left in the background holds them open (until the timeout).
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  let late: NodeJS.Timeout | undefined;
  try {
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (c, s) => resolve([c, s]));
    });
    // Whatever the command left running in its group (a background server, a child it orphaned).
    signalGroup(pgid, "SIGKILL");
    // Then its output to the end; a process that left the group (setsid) may hold the pipes: not past graceMs.
    await Promise.race([closed, new Promise<void>((r) => (late = setTimeout(r, o.graceMs ?? 5000)))]);
    return { code, signal, stdout, stderr, timedOut };
  } finally {
    clearTimeout(timer);
    clearTimeout(kill);
    clearTimeout(late);
    if (child.pid !== undefined) signalGroup(pgid, "SIGKILL");
    child.stdout.destroy();
    child.stderr.destroy();
  }
}
