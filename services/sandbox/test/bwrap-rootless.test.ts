/**
 * The rootless bwrap engine for real, as a non-root user: `bwrap-rootless.fixture.ts` (the containment
 * and verdict suites plus rootless specifics) runs as uid 65534 when this test runs as root (CI), else
 * as the current user. Skipped, saying why, only where unprivileged user namespaces are off or bwrap is
 * missing.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { rootlessBwrapUnsupported } from "../src/testing.js";

const fixture = fileURLToPath(new URL("./bwrap-rootless.fixture.ts", import.meta.url));
const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));
const UID = 65534;

describe("bwrap sandbox, rootless mode, as a non-root user", () => {
  const why = rootlessBwrapUnsupported();
  if (why) console.log(`# skipping the rootless bwrap tests: ${why}`);
  it("passes the containment and verdict suites and the rootless specifics", { skip: why }, async () => {
    const asRoot = process.getuid?.() === 0;
    // A TMPDIR and HOME the non-root user owns (tsx's cache, the harness's staging copy, the test's NATS).
    const tmp = mkdtempSync(join(tmpdir(), "reward-mesh-rootless-"));
    if (asRoot) chownSync(tmp, UID, UID);
    try {
      const child = spawn(
        process.execPath,
        ["--import", "tsx", "--test", "--test-reporter=spec", "--test-concurrency=1", fixture],
        {
          cwd: repoRoot,
          stdio: ["ignore", "pipe", "pipe"],
          env: {
            PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin",
            HOME: tmp,
            TMPDIR: tmp,
          },
          ...(asRoot ? { uid: UID, gid: UID } : {}),
        },
      );
      let out = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr.on("data", (d: Buffer) => (out += d.toString()));
      const code = await new Promise<number | null>((r) => child.once("exit", r));
      assert.equal(code, 0, out);
      // The spec reporter's totals: "ℹ tests 40", "ℹ pass 40", "ℹ fail 0", …
      const total = (k: string) =>
        Number(out.match(new RegExp(`^\\S+ ${k} (\\d+)$`, "m"))?.[1] ?? Number.NaN);
      assert.equal(total("fail"), 0, out);
      assert.equal(total("skipped"), 0, out);
      assert.ok(total("pass") >= 40 && total("pass") === total("tests"), out);
      console.log(`rootless fixture as a non-root user: ${total("pass")}/${total("tests")} passed`);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
