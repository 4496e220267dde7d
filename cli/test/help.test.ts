/** `--help` everywhere, and the nearest command or option suggested for a typo, as a user runs them. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { ADVANTAGES_FLAGS, ADVANTAGES_USAGE } from "@reward-mesh/trainer";
import { type CommandSpec, formatHelp, usageLine } from "../src/args.js";
import { COMMANDS, HELP } from "../src/commands.js";

const bin = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));

// At most 4 CLI processes at a time: dozens at once on a 2-core machine each take tens of seconds to start.
let running = 0;
const queued: Array<() => void> = [];

async function runBin(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  // A finished process hands its slot to the next one queued.
  if (running >= 4) await new Promise<void>((r) => queued.push(r));
  else running++;
  try {
    return await new Promise((resolve) => {
      const child = execFile(process.execPath, [bin, ...args], { timeout: 120_000 }, (err, stdout, stderr) =>
        resolve({
          code: err ? (typeof err.code === "number" ? err.code : 1) : 0,
          stdout,
          stderr: err?.killed ? `${stderr}\n(killed after 120 s)` : stderr,
        }),
      );
      child.stdin!.end();
    });
  } finally {
    const next = queued.shift();
    if (next) next();
    else running--;
  }
}

/** Every command and sub-command with its table. */
const allSpecs = (specs: readonly CommandSpec[]): CommandSpec[] =>
  specs.flatMap((s) => [s, ...allSpecs(s.subcommands ?? [])]);

describe("reward-mesh --help", () => {
  it("every command (and sub-command) answers --help and -h: usage, options, an example; exit 0, stdout only", async () => {
    const specs = allSpecs(COMMANDS);
    assert.ok(specs.length >= 12, specs.map((s) => s.name).join(", "));
    // One process per command: the CLI's start-up dominates, so run them side by side.
    const results = await Promise.all(
      specs.map(async (s) => ({
        spec: s,
        long: await runBin([...s.name.split(" "), "--help"]),
        short: await runBin([...s.name.split(" "), "-h"]),
      })),
    );
    for (const { spec, long, short } of results) {
      const what = `reward-mesh ${spec.name} --help`;
      assert.equal(long.code, 0, `${what}: ${long.stderr}`);
      assert.equal(long.stderr, "", what);
      assert.match(long.stdout, new RegExp(`^usage: reward-mesh ${spec.name}\\b`), what);
      assert.match(long.stdout, /\nexamples?:\n {2}\S/, `${what} has an example`);
      assert.deepEqual(short, long, `-h is --help for ${spec.name}`);
      if (spec.name !== "advantages") assert.equal(long.stdout, formatHelp(spec), what);
    }
  });

  it("'reward-mesh help <command>' is '<command> --help'; 'help' and '--help' list every command, exit 0", async () => {
    const [help, dashed, train, advantages, noArgs, tasksImport] = await Promise.all([
      runBin(["help"]),
      runBin(["--help"]),
      runBin(["help", "train"]),
      runBin(["help", "advantages"]),
      runBin([]),
      runBin(["help", "tasks", "import"]),
    ]);
    const importSpec = COMMANDS.find((c) => c.name === "tasks")!.subcommands![0]!;
    assert.deepEqual(tasksImport, { code: 0, stdout: formatHelp(importSpec), stderr: "" });
    assert.deepEqual([help.code, dashed.code, help.stdout], [0, 0, HELP]);
    assert.equal(dashed.stdout, HELP);
    for (const c of COMMANDS) assert.match(HELP, new RegExp(`^ {2}${c.name} +\\S`, "m"), c.name);
    assert.match(HELP, /reward-mesh <command> --help/);
    assert.deepEqual(train, {
      code: 0,
      stdout: formatHelp(COMMANDS.find((c) => c.name === "train")!),
      stderr: "",
    });
    // An option whose value may be left out reads `--ui [PORT]`, not `--ui <[PORT]>`.
    assert.match(train.stdout, /\[--ui \[PORT\]\]$/m);
    assert.match(train.stdout, /^ {2}--ui \[PORT\] +serve/m);
    assert.deepEqual(advantages, { code: 0, stdout: ADVANTAGES_USAGE, stderr: "" });
    assert.equal(noArgs.code, 2, "no command is a usage error");
    assert.equal(noArgs.stdout, HELP);
  });

  it("--help wins over a misspelt option next to it, and over missing arguments", async () => {
    const [typo, missing] = await Promise.all([
      runBin(["experiment", "--seeed", "3", "--help"]),
      runBin(["score", "--help"]),
    ]);
    assert.equal(typo.code, 0, typo.stderr);
    assert.match(typo.stdout, /^usage: reward-mesh experiment/);
    assert.equal(missing.code, 0, missing.stderr);
    assert.match(missing.stdout, /^usage: reward-mesh score <service>/);
  });

  it("no drift: every option of a command's table is in its usage line and its help, with its default", () => {
    for (const spec of allSpecs(COMMANDS)) {
      const help = formatHelp(spec);
      for (const [name, o] of Object.entries(spec.options)) {
        assert.ok(
          usageLine(spec).includes(`--${name}`),
          `${spec.name}: --${name} missing from the usage line`,
        );
        const row = help.split("\n").find((l) => l.trimStart().startsWith(`--${name}`));
        assert.ok(row, `${spec.name}: --${name} missing from the help`);
        const text = help.slice(help.indexOf(row!)).split("\n").slice(0, 2).join(" ");
        assert.ok(text.includes(o.description), `${spec.name} --${name}: description`);
        const shown = o.default ?? o.defaultText;
        if (shown !== undefined)
          assert.ok(text.includes(`(default: ${shown})`), `${spec.name} --${name}: default`);
      }
    }
    for (const flag of Object.keys(ADVANTAGES_FLAGS))
      assert.match(
        ADVANTAGES_USAGE,
        new RegExp(`^ {2}${flag}\\b`, "m"),
        `advantages ${flag} missing from its help`,
      );
  });
});

describe("reward-mesh --version", () => {
  it("--version and -V print the CLI package's version (exit 0, stdout only)", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    const [long, short] = await Promise.all([runBin(["--version"]), runBin(["-V"])]);
    assert.deepEqual(long, { code: 0, stdout: `reward-mesh ${version}\n`, stderr: "" });
    assert.deepEqual(short, long);
    assert.match(HELP, /reward-mesh --version \(-V\)/);
  });
});

describe("reward-mesh typos", () => {
  it("a misspelt command suggests the nearest one (one line, exit 2); an unrelated word points at help", async () => {
    const [scroe, trian, helpTypo, nothing] = await Promise.all([
      runBin(["scroe", "length"]),
      runBin(["trian", "--config", "x.yaml"]),
      runBin(["help", "experimnet"]),
      runBin(["frobnicate"]),
    ]);
    assert.deepEqual(scroe, {
      code: 2,
      stdout: "",
      stderr: "reward-mesh: unknown command 'scroe' (did you mean 'score'?)\n",
    });
    assert.equal(trian.stderr, "reward-mesh: unknown command 'trian' (did you mean 'train'?)\n");
    assert.equal(helpTypo.code, 2);
    assert.equal(helpTypo.stderr, "reward-mesh: unknown command 'experimnet' (did you mean 'experiment'?)\n");
    assert.equal(nothing.stderr, "reward-mesh: unknown command 'frobnicate' (try 'reward-mesh help')\n");
  });

  it("a misspelt option suggests the nearest one of that command (one line, exit 2)", async () => {
    const cases: Array<[string[], string]> = [
      [
        ["experiment", "--estimators", "grpo", "--seeed", "3"],
        "unknown option '--seeed' (did you mean '--seeds'?)",
      ],
      [["train", "--confg", "run.yaml"], "unknown option '--confg' (did you mean '--config'?)"],
      [["demo", "--step", "5"], "unknown option '--step' (did you mean '--steps'?)"],
      [["up", "--service", "length"], "unknown option '--service' (did you mean '--services'?)"],
      [
        ["score", "length", "--concurency", "2"],
        "unknown option '--concurency' (did you mean '--concurrency'?)",
      ],
      [["report", "--hepl"], "unknown option '--hepl' (did you mean '--help'?)"],
      [["tasks", "imprt"], "unknown tasks command 'imprt' (did you mean 'import'?)"],
      [
        ["tasks", "import", "--formt", "bfcl", "a", "b"],
        "unknown option '--formt' (did you mean '--format'?)",
      ],
      [["advantages", "--epsilonn", "1"], "unknown flag '--epsilonn' (did you mean '--epsilon'?)"],
      // A misspelt word of a command (a transposition, a dropped letter) and a misspelt service name.
      [["serve", "lenght"], "unknown service 'lenght' (did you mean 'length'?); available: agentdojo, ast,"],
      [["score", "lenght"], "unknown service 'lenght' (did you mean 'length'?); available:"],
      [["new", "servce", "word-count"], "unknown argument 'servce' (did you mean 'service'?)"],
      [["new", "sevrice", "word-count"], "unknown argument 'sevrice' (did you mean 'service'?)"],
      [["eval", "agentdjoo"], "unknown argument 'agentdjoo' (did you mean 'agentdojo'?)"],
    ];
    const results = await Promise.all(cases.map(([args]) => runBin(args)));
    cases.forEach(([args, message], i) => {
      const r = results[i]!;
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.ok(r.stderr.includes(message), `${args.join(" ")}:\n${r.stderr}expected: ${message}`);
      assert.equal(r.stdout, "");
    });
  });
});
