/**
 * Every README's (and docs/*.md guide's) examples run: a ```sh block followed by a ```json block must print that JSON (one
 * object per line; `durationMs` ignored), and every ```ts block must run to completion.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const root = fileURLToPath(new URL("..", import.meta.url));
const run = promisify(execFile);

function readmes(): string[] {
  const out = [join(root, "README.md")];
  for (const dir of [
    "proto",
    "trainer",
    "cli",
    "bench",
    "sandbox-images",
    "images",
    "helm",
    "helm/reward-mesh",
  ])
    out.push(join(root, dir, "README.md"));
  for (const s of readdirSync(join(root, "services"))) out.push(join(root, "services", s, "README.md"));
  // The guides and the examples (docs/*.md walkthroughs also run in test/docs-walkthrough.test.ts).
  if (existsSync(join(root, "docs")))
    for (const f of readdirSync(join(root, "docs"))) if (f.endsWith(".md")) out.push(join(root, "docs", f));
  if (existsSync(join(root, "examples")))
    for (const e of readdirSync(join(root, "examples"))) out.push(join(root, "examples", e, "README.md"));
  return out.filter((f) => existsSync(f));
}

interface Block {
  readonly lang: string;
  readonly body: string;
  readonly line: number;
}

function blocks(md: string): Block[] {
  const out: Block[] = [];
  const re = /^```(\w*)\n([\s\S]*?)^```\s*$/gm;
  for (const m of md.matchAll(re))
    out.push({ lang: m[1]!, body: m[2]!, line: md.slice(0, m.index).split("\n").length });
  return out;
}

/** Blocks separated only by blank lines are a command and its output. */
function pairs(md: string): Array<{ cmd: Block; expected: Block }> {
  const bs = blocks(md);
  const out: Array<{ cmd: Block; expected: Block }> = [];
  for (let i = 0; i + 1 < bs.length; i++) {
    const a = bs[i]!;
    const b = bs[i + 1]!;
    if (a.lang !== "sh" || b.lang !== "json") continue;
    const between = md.split("\n").slice(a.line + a.body.split("\n").length, b.line - 1);
    if (between.every((l) => l.trim() === "")) out.push({ cmd: a, expected: b });
  }
  return out;
}

function normalise(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(normalise);
  if (v && typeof v === "object") {
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k]) => k !== "durationMs")
        .map(([k, x]) => [k, normalise(x)]),
    );
  }
  return v;
}

const env = { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH ?? ""}` };

for (const file of readmes()) {
  const md = readFileSync(file, "utf8");
  const rel = relative(root, file);
  const examples = pairs(md);
  const tsBlocks = blocks(md).filter((b) => b.lang === "ts");
  if (examples.length === 0 && tsBlocks.length === 0) continue;
  describe(rel, () => {
    for (const { cmd, expected } of examples) {
      it(`line ${cmd.line}: ${cmd.body.trim().slice(0, 70)}…`, async () => {
        const { stdout } = await run("bash", ["-euo", "pipefail", "-c", cmd.body], {
          cwd: root,
          env,
          timeout: 60_000,
        });
        const got = stdout
          .trim()
          .split("\n")
          .map((l) => normalise(JSON.parse(l)));
        // The expected block is one pretty-printed object, or one object per line.
        const body = expected.body.trim();
        const want = (
          body.startsWith("{") && !body.includes("}\n{")
            ? [JSON.parse(body)]
            : body.split("\n").map((l) => JSON.parse(l))
        ).map(normalise);
        assert.deepEqual(got, want);
      });
    }
    tsBlocks.forEach((b) => {
      it(`line ${b.line}: the TypeScript example runs`, async () => {
        const tmp = join(root, `.readme-example-${process.pid}-${b.line}.ts`);
        writeFileSync(tmp, b.body);
        try {
          await run(process.execPath, ["--import", "tsx", tmp], { cwd: root, env, timeout: 60_000 });
        } finally {
          rmSync(tmp, { force: true });
        }
      });
    });
  });
}
