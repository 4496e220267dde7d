/**
 * The guides' walkthroughs run: in each docs/*.md, every ```sh walkthrough block, in order, is one bash
 * script (set -euo pipefail) run in a scratch copy of this repository (its tracked and untracked files;
 * node_modules entries linked to this checkout's, the @reward-mesh workspace links pointing into the
 * copy, as `npm install` makes them; a fresh git index), with `reward-mesh` on PATH and a NATS of its own on a free port.
 * So a walkthrough that scaffolds a service, tests it and trains with it does so as a user would,
 * without touching this checkout. Each walkthrough's wall time is printed (the guide quotes it). A
 * script runs in a process group of its own that is killed as a whole when it ends or times out.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { freePort } from "@reward-mesh/sdk";
import { runInGroup } from "./process-group.js";
import { scratchCopy } from "./scratch-copy.js";

const root = fileURLToPath(new URL("..", import.meta.url));
// Test files the walkthrough runs must report to their own runner, not to this one.
const { NODE_TEST_CONTEXT: _, ...inherited } = process.env;

/** The ```sh walkthrough blocks of `md`, joined in order. */
export function walkthrough(md: string): string {
  return [...md.matchAll(/^```sh walkthrough\n([\s\S]*?)^```\s*$/gm)].map((m) => m[1]!).join("\n");
}

const docsDir = join(root, "docs");
for (const file of existsSync(docsDir) ? readdirSync(docsDir).filter((f) => f.endsWith(".md")) : []) {
  const script = walkthrough(readFileSync(join(docsDir, file), "utf8"));
  if (script.trim() === "") continue;
  it(`docs/${file}: the walkthrough runs in a fresh copy of the repository`, async (t) => {
    const dir = scratchCopy();
    const port = await freePort();
    const t0 = performance.now();
    try {
      // Its own process group, ended as a whole afterwards: nats-server and the services that
      // `train --with-mesh` starts cannot outlive the script, even when it times out.
      const r = await runInGroup("bash", ["-euo", "pipefail", "-c", script], {
        cwd: dir,
        timeoutMs: 480_000,
        env: {
          ...inherited,
          PATH: `${join(dir, "node_modules", ".bin")}:${process.env.PATH ?? ""}`,
          NATS_URL: `nats://127.0.0.1:${port}`,
          REWARD_MESH_NATS_STORE: join(dir, ".nats", "js"),
        },
      });
      if (r.code !== 0)
        assert.fail(
          `the walkthrough ${r.timedOut ? "timed out after 480 s" : `exited with ${r.code ?? r.signal}`}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-4000)}`,
        );
      const seconds = (performance.now() - t0) / 1000;
      t.diagnostic(`docs/${file}: walkthrough took ${seconds.toFixed(1)} s`);
      assert.ok(relative(root, dir).startsWith(".."), "ran outside this checkout");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
