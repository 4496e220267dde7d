/**
 * Run by `pid1-reaping.test.ts` as PID 1 of a fresh pid namespace (`unshare --pid --fork --mount-proc`),
 * the way a service runs as a container's entrypoint without an init: every orphan of the namespace is
 * re-parented to this process, which (being Node) reaps only the children it spawned itself.
 *
 * It drives the bubblewrap sandbox through every way a run ends — normal exit, a background process
 * left behind, the wall-clock limit, the output cap, an abort, the Python harness, prepared sandboxes
 * discarded by `close()` — then polls `/proc` until no zombie is left or a deadline passes, and prints
 * one JSON line: `{ pid, runs, zombies: [{ pid, ppid, comm }] }`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync } from "node:fs";
import { join } from "node:path";
import { createSandbox, loadSandboxConfig, runPythonTests, type Sandbox } from "../src/index.js";

const RUNS = Number(process.argv[2] ?? 4);
/** A uid of the test's own, so its checks cannot see sandboxes of test files running in parallel. */
const UID = Number(process.argv[3] ?? 61_000);

/** Zombie processes visible in this pid namespace. */
function zombies(): Array<{ pid: number; ppid: number; comm: string }> {
  const out: Array<{ pid: number; ppid: number; comm: string }> = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${e}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    const close = stat.lastIndexOf(")");
    const [state, ppid] = stat.slice(close + 2).split(" ");
    if (state === "Z")
      out.push({ pid: Number(e), ppid: Number(ppid), comm: stat.slice(stat.indexOf("(") + 1, close) });
  }
  return out;
}

async function exercise(sandbox: Sandbox): Promise<number> {
  let runs = 0;
  const expect = (ok: boolean, what: string) => {
    if (!ok) throw new Error(`unexpected sandbox result: ${what}`);
    runs++;
  };
  for (let i = 0; i < RUNS; i++) {
    const [a, b] = await Promise.all([
      sandbox.run({ argv: ["python3", "-c", `print(${i})`] }),
      // A process the program leaves behind: orphaned inside the sandbox's own pid namespace.
      sandbox.run({ argv: ["/bin/sh", "-c", "sleep 30 & echo left"] }),
    ]);
    expect(a.stdout.toString().trim() === String(i), `print ${i}: ${a.stderr.toString()}`);
    expect(b.stdout.toString().trim() === "left", `background: ${b.stderr.toString()}`);
  }
  const slow = await sandbox.run({ argv: ["sleep", "30"], limits: { wallTimeMs: 300 } });
  expect(slow.timedOut && slow.signal === "SIGKILL", `wall limit: ${JSON.stringify(slow.signal)}`);
  const flood = await sandbox.run({ argv: ["yes"], limits: { maxOutputBytes: 4096 } });
  expect(flood.outputLimitExceeded && flood.signal === "SIGKILL", "output cap");
  const ac = new AbortController();
  const aborted = sandbox.run({ argv: ["sleep", "30"], signal: ac.signal });
  setTimeout(() => ac.abort(new Error("caller gave up")), 200);
  expect(
    await aborted.then(
      () => false,
      (err: Error) => /caller gave up/.test(err.message),
    ),
    "abort",
  );
  const report = await runPythonTests(sandbox, {
    prompt: "",
    solution: "def add(a, b):\n    return a + b\n",
    test: "def check(candidate):\n    assert candidate(1, 2) == 3\n",
    entryPoint: "add",
    ioTests: [],
    timeLimitMs: 5_000,
    memoryLimitMb: 256,
  });
  expect(report.status === "passed", `harness: ${report.summary}`);
  return runs;
}

// A cgroup parent of its own: as PID 1 of a namespace, every other service's pid looks dead to the
// sandbox's clean-up of stale cgroups, which must not touch those of tests running beside this one.
// (The test gives it a private TMPDIR for the same reason.)
const cgroupParent = `reward-mesh-pid1-test-${UID}`;
const v2 = existsSync("/sys/fs/cgroup/cgroup.controllers");
// Not root: the rootless mode (SANDBOX_BWRAP_MODE=auto), which has no cgroups.
const rootless = process.getuid?.() !== 0;
if (v2 && !rootless) mkdirSync(join("/sys/fs/cgroup", cgroupParent), { recursive: true });
const sandbox = await createSandbox({
  ...loadSandboxConfig({}),
  backend: "bwrap",
  concurrency: 2,
  bwrapPrepared: 2,
  bwrapUid: UID,
  cgroupParent,
});
let runs = 0;
try {
  runs = await exercise(sandbox);
} finally {
  await sandbox.close();
  const roots = v2 ? ["/sys/fs/cgroup"] : ["memory", "pids", "cpuacct"].map((c) => join("/sys/fs/cgroup", c));
  for (const root of rootless ? [] : roots)
    if (existsSync(join(root, cgroupParent))) rmdirSync(join(root, cgroupParent));
}
// Our own children are reaped as their exit is noticed; an orphan's zombie stays for good.
const deadline = Date.now() + 3_000;
let left = zombies();
while (left.length > 0 && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 20));
  left = zombies();
}
process.stdout.write(`${JSON.stringify({ pid: process.pid, runs, zombies: left })}\n`);
