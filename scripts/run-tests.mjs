#!/usr/bin/env node
// Runs every *.test.ts of the workspaces with Node's test runner (through tsx), one file per process.
// Docker/GPU tests (*.docker.test.ts, *.gpu.test.ts) are included: they skip with a printed reason
// only when their resource cannot exist on this machine. The Docker tests run after all the others.
import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const roots = ["proto", "services", "trainer", "cli", "bench", "scripts", "test", "images", "helm"];
const files = [];
function walk(dir) {
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
  for (const e of entries) {
    if (e === "node_modules" || e.startsWith(".")) continue;
    const p = join(dir, e);
    if (statSync(p).isDirectory()) walk(p);
    else if (e.endsWith(".test.ts")) files.push(relative(root, p));
  }
}
for (const r of roots) walk(join(root, r));
// Docker tests last: `npm test` (scripts/test.sh) builds their images in the background meanwhile.
const docker = (f) => f.endsWith(".docker.test.ts");
files.sort((a, b) => Number(docker(a)) - Number(docker(b)) || (a < b ? -1 : a > b ? 1 : 0));
const only = process.argv.slice(2);
const selected = only.length ? files.filter((f) => only.some((o) => f.includes(o))) : files;
if (selected.length === 0) {
  console.error("run-tests: no test files matched");
  process.exit(1);
}
const child = spawn(process.execPath, ["--import", "tsx", "--test", "--test-reporter=spec", ...selected], {
  cwd: root,
  stdio: ["ignore", "pipe", "inherit"],
});
// Forward the runner's output and repeat its totals as one plain closing line.
const totals = { pass: 0, fail: 0, skipped: 0 };
let pending = "";
child.stdout.on("data", (d) => {
  process.stdout.write(d);
  pending += d.toString();
  const lines = pending.split("\n");
  pending = lines.pop() ?? "";
  for (const line of lines) {
    const m = line.match(/^\S*\s*(pass|fail|skipped) (\d+)\s*$/u);
    if (m) totals[m[1]] = Number(m[2]);
  }
});
child.on("exit", (code, signal) => {
  console.log(`tests: ${totals.pass} passed, ${totals.fail} failed, ${totals.skipped} skipped`);
  process.exit(code ?? (signal ? 1 : 0));
});
