/**
 * A scratch copy of this checkout as a fresh clone sees it (its tracked and untracked files; node_modules
 * entries linked to this checkout's, the @reward-mesh workspace links pointing into the copy, as
 * `npm install` makes them; a fresh git index). Used by the walkthrough tests.
 */
import { execFileSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));

/** A scratch copy of this checkout, linked like an installed one. */
export function scratchCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), "rm-walkthrough-"));
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: root,
    encoding: "utf8",
  })
    .split("\0")
    .filter(Boolean);
  for (const f of files) {
    if (!existsSync(join(root, f))) continue; // deleted in the work tree
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    copyFileSync(join(root, f), join(dir, f));
  }
  const nm = join(dir, "node_modules");
  mkdirSync(join(nm, "@reward-mesh"), { recursive: true });
  mkdirSync(join(nm, ".bin"));
  for (const e of readdirSync(join(root, "node_modules"))) {
    if (e === "@reward-mesh" || e === ".bin") continue;
    symlinkSync(join(root, "node_modules", e), join(nm, e));
  }
  // Workspace links into the copy (relative, as npm writes them); .bin links keep their relative targets.
  for (const e of readdirSync(join(root, "node_modules", "@reward-mesh"))) {
    const target = readlinkSync(join(root, "node_modules", "@reward-mesh", e));
    symlinkSync(target, join(nm, "@reward-mesh", e));
  }
  for (const e of readdirSync(join(root, "node_modules", ".bin"))) {
    const p = join(root, "node_modules", ".bin", e);
    if (lstatSync(p).isSymbolicLink()) symlinkSync(readlinkSync(p), join(nm, ".bin", e));
  }
  // A workspace's own node_modules (packages npm could not hoist, e.g. another version), linked too.
  for (const ws of [
    "proto",
    "trainer",
    "cli",
    ...readdirSync(join(root, "services")).map((s) => `services/${s}`),
  ])
    if (existsSync(join(root, ws, "node_modules")) && existsSync(join(dir, ws)))
      symlinkSync(join(root, ws, "node_modules"), join(dir, ws, "node_modules"));
  // A checkout is a git work tree (check-boundaries lists files with git).
  execFileSync("git", ["init", "-q"], { cwd: dir });
  execFileSync("git", ["add", "-A"], { cwd: dir });
  return dir;
}
