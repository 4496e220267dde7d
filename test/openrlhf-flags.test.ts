/**
 * What the repository tells OpenRLHF users to type matches OpenRLHF's current release (0.11.0): its
 * `train_ppo_ray` flags are dotted (`--reward.remote_url`, `--data.label_key`, `--algo.dynamic_filtering_*`)
 * since 0.10.2, and the snake_case names they replaced are unknown to it (argparse stops at them). OpenRLHF is
 * not installed here, so the flags cited are checked against this list, taken from
 * `openrlhf/cli/train_ppo_ray.py` of 0.11.0 (only those the repository cites).
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));

/** Flags of OpenRLHF 0.11.0's `openrlhf.cli.train_ppo_ray` that the repository cites. */
const CURRENT = new Set([
  "--reward.remote_url",
  "--data.label_key",
  "--data.input_key",
  "--data.prompt_dataset",
  "--algo.dynamic_filtering_enable",
  "--algo.dynamic_filtering_range",
]);

/** The names those flags had before 0.10.2: OpenRLHF's current release rejects them. */
const REMOVED = [
  "--remote_rm_url",
  "--label_key",
  "--input_key",
  "--prompt_data",
  "--dynamic_filtering_reward_range",
  "--dynamic_filtering",
];

/** The files a user reads or runs: READMEs, docs, the CLI and gateway, the Python client and its tests. */
function files(): string[] {
  const out: string[] = [join(root, "README.md")];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir)) {
      if (e === "node_modules" || e.startsWith(".") || e === "__pycache__") continue;
      const p = join(dir, e);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.(md|ts|py|ya?ml)$/.test(e) && p !== fileURLToPath(import.meta.url)) out.push(p);
    }
  };
  for (const d of ["docs", "cli", "clients", "examples", "trainer/README.md", "helm"]) {
    const p = join(root, d);
    try {
      if (statSync(p).isDirectory()) walk(p);
      else out.push(p);
    } catch {
      // not in this checkout
    }
  }
  return out;
}

describe("OpenRLHF flags in docs and code", () => {
  it("no file cites a flag OpenRLHF's current release renamed", () => {
    const stale: string[] = [];
    for (const f of files()) {
      readFileSync(f, "utf8")
        .split("\n")
        .forEach((line, i) => {
          for (const old of REMOVED)
            if (new RegExp(`${old}(?![\\w.])`).test(line))
              stale.push(`${relative(root, f)}:${i + 1}: ${old}`);
        });
    }
    assert.deepEqual(stale, []);
  });

  it("every dotted OpenRLHF flag cited, and every flag of a train_ppo_ray command line, is a current one", () => {
    const unknown: string[] = [];
    let commandLines = 0;
    for (const f of files()) {
      readFileSync(f, "utf8")
        .split("\n")
        .forEach((line, i) => {
          const where = `${relative(root, f)}:${i + 1}`;
          for (const m of line.matchAll(/--(?:reward|data|algo)\.[a-z_]+/g))
            if (!CURRENT.has(m[0])) unknown.push(`${where}: ${m[0]}`);
          if (!line.includes("openrlhf.cli.train_ppo_ray")) return;
          if (/^\s*(\$ )?python3? -m openrlhf\.cli\.train_ppo_ray/.test(line)) commandLines++;
          for (const m of line.matchAll(/(?<=\s)--[\w.]+/g))
            if (!CURRENT.has(m[0])) unknown.push(`${where}: ${m[0]}`);
        });
    }
    assert.deepEqual(unknown, []);
    assert.ok(
      commandLines >= 2,
      "docs/frameworks/openrlhf.md shows both forms as train_ppo_ray command lines",
    );
  });
});
