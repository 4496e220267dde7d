/**
 * A production install (`npm ci --omit=dev`, what the mesh image runs) starts the CLI and serves.
 *
 * The repository's tracked files are copied to a temporary directory, installed there without dev
 * dependencies (the flags of images/mesh/Dockerfile), and `reward-mesh serve length` is run from that
 * copy only (no NODE_OPTIONS, no path into this checkout): it must report SERVING over grpc.health.v1,
 * score one rollout, and exit 0 on SIGTERM. It guards against a run-time import that only a root
 * devDependency satisfies (tsx, @opentelemetry/sdk-node, an undeclared workspace package).
 */
import assert from "node:assert/strict";
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createRewardServiceClient, waitForLogRecord, waitServing } from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";

const root = fileURLToPath(new URL("../..", import.meta.url));
const run = promisify(execFile);

/** The flags images/mesh/Dockerfile installs with (scripts off: no compiler in the image, none needed). */
export const PRODUCTION_NPM_CI = [
  "ci",
  "--omit=dev",
  "--prefer-offline",
  "--no-audit",
  "--no-fund",
  "--ignore-scripts",
];

function trackedFiles(): string[] | undefined {
  try {
    return execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8", maxBuffer: 64 << 20 })
      .split("\0")
      .filter(Boolean);
  } catch {
    return undefined;
  }
}

/** Copies `files` (relative to the checkout; missing ones are skipped) into `dest`, links as links. */
function copyTree(files: readonly string[], dest: string): void {
  for (const f of files) {
    const src = join(root, f);
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(src);
    } catch {
      continue; // deleted in the working tree
    }
    const to = join(dest, f);
    mkdirSync(dirname(to), { recursive: true });
    if (st.isSymbolicLink()) symlinkSync(readlinkSync(src), to);
    else if (st.isFile()) copyFileSync(src, to);
  }
}

/** An environment without anything that would let the child resolve modules from this checkout. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) {
    if (k === "NODE_OPTIONS" || k === "NODE_PATH" || k.startsWith("npm_") || k.startsWith("OTEL_"))
      delete env[k];
  }
  return { ...env, ...extra };
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
}

const files = trackedFiles();

describe("production install (npm ci --omit=dev)", { skip: files ? false : "not a git checkout" }, () => {
  let dir = "";
  const children: ChildProcess[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rm-prod-install-"));
    copyTree(files!, dir);
    await run("npm", PRODUCTION_NPM_CI, {
      cwd: dir,
      env: cleanEnv({}),
      timeout: 300_000,
      maxBuffer: 16 << 20,
    });
  });

  after(async () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill("SIGKILL");
        await exited(c);
      }
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("installs no devDependency that no workspace needs at run time", () => {
    const rootPkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
      devDependencies: Record<string, string>;
    };
    for (const dev of ["typescript", "@biomejs/biome", "@bufbuild/buf", "playwright-core"]) {
      assert.ok(dev in rootPkg.devDependencies, `${dev} is still a root devDependency`);
      assert.equal(existsSync(join(dir, "node_modules", dev)), false, `${dev} was installed`);
    }
    for (const prod of ["tsx", "@opentelemetry/sdk-node", "@grpc/grpc-js"]) {
      assert.ok(existsSync(join(dir, "node_modules", prod, "package.json")), `${prod} is missing`);
    }
  });

  it("`reward-mesh --help` and `train --help` run", async () => {
    const bin = join(dir, "cli/bin/reward-mesh.mjs");
    const help = await run(process.execPath, [bin, "--help"], { cwd: dir, env: cleanEnv({}) });
    assert.match(help.stdout, /^usage: reward-mesh <command>/m);
    const train = await run(process.execPath, [bin, "train", "--help"], { cwd: dir, env: cleanEnv({}) });
    assert.match(train.stdout, /^usage: reward-mesh train --config/m);
  });

  it("`reward-mesh serve length` reports SERVING, scores, and exits 0 on SIGTERM", async () => {
    let stderr = "";
    // Port 0: it binds a free one and names it in its "length ready" line (no port picked beforehand).
    const child = spawn(process.execPath, [join(dir, "cli/bin/reward-mesh.mjs"), "serve", "length"], {
      cwd: dir,
      env: cleanEnv({ LENGTH_WORKER: "0", LENGTH_GRPC_PORT: "0", LOG_LEVEL: "info" }),
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.push(child);
    child.stderr!.on("data", (b: Buffer) => {
      stderr += b.toString();
    });
    const ready = await waitForLogRecord(child, (r) => r["msg"] === "length ready", {
      what: 'the "length ready" line',
      timeoutMs: 60_000,
      describe: () => stderr,
    });
    const address = String(ready["address"]);
    assert.match(address, /^127\.0\.0\.1:[1-9]\d*$/);
    await waitServing(address, { child, timeoutMs: 60_000, describe: () => stderr });

    const client = createRewardServiceClient(address, { timeoutMs: 10_000 });
    const res = await client.score({ rollout: makeRollout({ response: "x".repeat(10) }) });
    assert.equal(res.service, "length");
    assert.deepEqual(
      res.components.map((c) => c.name),
      ["length", "overlong"],
    );

    const t0 = Date.now();
    child.kill("SIGTERM");
    const { code, signal } = await exited(child);
    assert.equal(signal, null, stderr);
    assert.equal(code, 0, stderr);
    assert.ok(Date.now() - t0 < 10_000, `took ${Date.now() - t0} ms to exit`);
  });
});
