/**
 * scripts/python-env.sh, the project's Python environment (.venv/ from python/requirements.lock): the
 * checkout's .venv holds exactly the lock's versions and nothing else, and a second run is a no-op; then,
 * in a scratch copy of the script with a one-pin lock (offline: the pin is the pip a fresh venv already
 * has), the stamp logic: created (what the lock does not name uninstalled) → up to date → a changed lock
 * runs again → a broken venv is recreated → an interrupted install (no stamp) is redone.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const venvPython = join(root, ".venv", "bin", "python");
const stamp = join(root, ".venv", ".reward-mesh-stamp");
const elsewhere = process.env["REWARD_MESH_PYTHON"] && process.env["REWARD_MESH_PYTHON"] !== venvPython;
// `npm test` builds .venv (scripts/bootstrap.sh --with-torch): a missing one is a failure, not a skip,
// unless REWARD_MESH_PYTHON names another interpreter (then bootstrap leaves .venv alone).
const skip = !existsSync(stamp) && elsewhere && `REWARD_MESH_PYTHON is set: bootstrap builds no .venv`;

/** The installed distributions of `python` as {normalised name: version}. */
function installed(python: string): Record<string, string> {
  const r = spawnSync(
    python,
    [
      "-c",
      "import json, re; from importlib.metadata import distributions as d\n" +
        "print(json.dumps({re.sub(r'[-_.]+', '-', x.metadata['Name']).lower(): x.version for x in d()}))",
    ],
    { encoding: "utf8" },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Record<string, string>;
}

function run(script: string, env: NodeJS.ProcessEnv = process.env) {
  const t0 = performance.now();
  const r = spawnSync("bash", [script], { encoding: "utf8", env, timeout: 300_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}`, seconds: (performance.now() - t0) / 1000 };
}

describe("the checkout's .venv (scripts/python-env.sh)", { skip }, () => {
  it("a second run is a no-op that says so", () => {
    assert.ok(existsSync(stamp), `no ${stamp}: run \`bash scripts/bootstrap.sh --with-torch\``);
    const r = run(join(root, "scripts", "python-env.sh"));
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /\.venv is up to date/, r.out);
    assert.ok(r.seconds < 5, `took ${r.seconds.toFixed(1)} s`);
  });

  it("holds exactly python/requirements.lock's versions, and nothing else", () => {
    const lock = Object.fromEntries(
      readFileSync(join(root, "python", "requirements.lock"), "utf8")
        .split("\n")
        .filter((l) => /^[A-Za-z0-9]/.test(l))
        .map((l) => l.trim().split("=="))
        .map(([n, v]) => [n!.replace(/[-_.]+/g, "-").toLowerCase(), v!]),
    );
    assert.ok(lock["torch"] && lock["transformers"], "the lock pins torch and transformers");
    const have = installed(venvPython);
    const wrong = Object.entries(lock)
      .filter(([n, v]) => have[n] !== v)
      .map(([n, v]) => `${n}: lock ${v}, installed ${have[n] ?? "none"}`);
    assert.deepEqual(wrong, [], "versions differ from the lock");
    const nodeps = join(root, "python", "requirements-nodeps.txt");
    const extra = Object.keys(have).filter((n) => !(n in lock) && n !== "pip");
    if (!existsSync(nodeps)) assert.deepEqual(extra, [], "installed but not in the lock");
  });
});

describe("scripts/python-env.sh's stamp (a scratch copy, a one-pin lock, offline)", { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), "rm-python-env-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const script = join(dir, "scripts", "python-env.sh");
  const lock = join(dir, "python", "requirements.lock");
  const venv = join(dir, ".venv");
  // An empty wheel cache: nothing may be fetched (the pin is already in a fresh venv).
  const env = { ...process.env, REWARD_MESH_WHEEL_CACHE: join(dir, "wheels") };

  it("creates, then is up to date, reruns on a changed lock, recreates a broken venv, redoes an interrupted install", () => {
    mkdirSync(join(dir, "scripts"));
    mkdirSync(join(dir, "python"));
    copyFileSync(join(root, "scripts", "python-env.sh"), script);
    // The base interpreter that made the checkout's .venv makes this one: its bundled pip is the pin.
    const pip = installed(venvPython)["pip"];
    writeFileSync(lock, `# one pin\npip==${pip}\n`);

    let r = run(script, env);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /creating .*\.venv/, r.out);
    assert.match(r.out, /\.venv is ready/, r.out);
    assert.deepEqual(Object.keys(installed(join(venv, "bin", "python"))), ["pip"], "only the lock's pip stays");

    r = run(script, env);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /\.venv is up to date/, r.out);
    assert.doesNotMatch(r.out, /ready|creating/, r.out);

    appendFileSync(lock, "# changed\n");
    r = run(script, env);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /\.venv is ready/, r.out);
    assert.doesNotMatch(r.out, /creating/, "a changed lock reinstalls in place");

    rmSync(join(venv, "bin", "python"));
    r = run(script, env);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /is broken .*recreating it/, r.out);
    assert.match(r.out, /\.venv is ready/, r.out);

    rmSync(join(venv, ".reward-mesh-stamp"));
    r = run(script, env);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /\.venv is ready/, r.out);
    assert.doesNotMatch(r.out, /creating/, r.out);
  });
});
