/** `reward-mesh tasks import|check`, run in-process: exit codes, messages, and no output on failure. */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { formatHelp } from "../src/args.js";
import { runTasks, TASKS_COMMAND, TASKS_USAGE } from "../src/commands/tasks.js";

const fixtures = fileURLToPath(new URL("../../trainer/test/fixtures/import/", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "cli-tasks-"));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A writable that keeps what is written. */
function sink(): Writable & { text: () => string } {
  const chunks: Buffer[] = [];
  const w = new Writable({
    write(chunk, _enc, done) {
      chunks.push(Buffer.from(chunk));
      done();
    },
  });
  return Object.assign(w, { text: () => Buffer.concat(chunks).toString("utf8") });
}

async function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = sink();
  const stderr = sink();
  const code = await runTasks(args, stdout, stderr);
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe("reward-mesh tasks import", () => {
  const imports: Array<[string, string, string[], number, string]> = [
    ["humaneval", "humaneval.jsonl", [], 2, "code 2"],
    ["mbpp", "mbpp.jsonl", [], 2, "code 2"],
    ["leetcodedataset", "leetcodedataset.jsonl", [], 2, "code 2"],
    ["rlla", "rlla.json", [], 3, "tool_call 3"],
    ["bfcl", "bfcl.json", ["--answers", join(fixtures, "bfcl-answers.json")], 3, "tool_call 3"],
    ["math", "math.jsonl", [], 3, "math 3"],
    ["gsm8k", "gsm8k.jsonl", [], 2, "math 2"],
  ];
  for (const [format, file, extra, count, domains] of imports) {
    it(`${format}: imports ${file}, then 'tasks check' accepts the result`, async () => {
      const out = join(dir, `${format}.jsonl`);
      const input = join(fixtures, file);
      const r = await run("import", "--format", format, input, out, ...extra);
      assert.deepEqual(r, {
        code: 0,
        stdout: `imported ${count} ${format} tasks from ${input} into ${out}\n`,
        stderr: "",
      });
      assert.deepEqual(await run("check", out), {
        code: 0,
        stdout: `${count} tasks OK (domains: ${domains})\n`,
        stderr: "",
      });
    });
  }

  it("--limit imports the first N records (--flag=value works too)", async () => {
    const out = join(dir, "limited.jsonl");
    const r = await run("import", "--format=rlla", "--limit=1", join(fixtures, "rlla.json"), out);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await run("check", out)).stdout, "1 task OK (domains: tool_call 1)\n");
  });

  it("reports every bad record and writes nothing (exit 2)", async () => {
    const input = join(dir, "bad.jsonl");
    const good = readFileSync(join(fixtures, "mbpp.jsonl"), "utf8");
    writeFileSync(
      input,
      `${good}{"task_id": 3, "text": "t", "code": "def f(x):\\n    return x", "test_list": ["assert g(1) == 1"]}\n{oops\n`,
    );
    const out = join(dir, "bad-out.jsonl");
    let r = await run("import", "--format", "mbpp", input, out);
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      `reward-mesh tasks import: ${input}:4: not valid JSON (${errorText("{oops")})\n` +
        `reward-mesh tasks import: nothing written to ${out}\n`,
    );
    writeFileSync(
      input,
      `${good}{"task_id": 3, "text": "t", "code": "def f(x):\\n    return x", "test_list": ["assert g(1) == 1"]}\n{"task_id": 4}\n`,
    );
    r = await run("import", "--format", "mbpp", input, out);
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      [
        "reward-mesh tasks import: 2 bad records:",
        `  ${input}:3: 'test_list' calls none of the functions 'code' defines (f)`,
        `  ${input}:4: 'text' must be a non-empty string, got nothing`,
        `reward-mesh tasks import: nothing written to ${out}`,
        "",
      ].join("\n"),
    );
    assert.equal(r.stdout, "");
    assert.ok(!existsSync(out));
  });

  it("bfcl without --answers names the records that have no possible answer", async () => {
    const input = join(fixtures, "bfcl.json");
    const r = await run("import", "--format", "bfcl", input, join(dir, "bfcl-no-answers.jsonl"));
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^reward-mesh tasks import: 2 bad records:\n/);
    assert.ok(
      r.stderr.includes(
        `${input}:1: 'id' has no possible answer (give the BFCL possible_answer file with --answers): "simple_900"`,
      ),
    );
  });

  it("rejects bad usage with exit 2 and a one-line reason", async () => {
    const input = join(fixtures, "humaneval.jsonl");
    const out = join(dir, "usage.jsonl");
    const cases: Array<[string[], string]> = [
      [
        ["import", input, out],
        "'--format' is required (humaneval, mbpp, leetcodedataset, rlla, bfcl, math, gsm8k)",
      ],
      [
        ["import", "--format", "apps", input, out],
        `'--format' must be one of humaneval, mbpp, leetcodedataset, rlla, bfcl, math, gsm8k, got "apps"`,
      ],
      [["import", "--format", "humaneval", input], "expected <in> and <out.jsonl>"],
      [
        ["import", "--format", "humaneval", "--answers", input, input, out],
        "'--answers' is only for --format bfcl",
      ],
      [
        ["import", "--format", "humaneval", "--limit", "0", input, out],
        `'--limit' must be a positive integer, got "0"`,
      ],
      [["import", "--format", "humaneval", "--verbose", input, out], "unknown option '--verbose'"],
      [
        ["import", "--format", "humaneval", join(dir, "missing.jsonl"), out],
        `${join(dir, "missing.jsonl")}: cannot be read (ENOENT)`,
      ],
      [
        ["import", "--format", "humaneval", input, join(dir, "no-such-dir", "out.jsonl")],
        `${join(dir, "no-such-dir", "out.jsonl")}: cannot be written (ENOENT)`,
      ],
      [["check"], "expected one task file"],
      [["check", join(dir, "missing.jsonl")], `${join(dir, "missing.jsonl")}: cannot be read (ENOENT)`],
      [["frobnicate"], "unknown tasks command 'frobnicate'"],
      [[], TASKS_USAGE.split("\n")[0]!],
    ];
    for (const [args, message] of cases) {
      const r = await run(...args);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.ok(r.stderr.includes(message), `${args.join(" ")}:\n${r.stderr}\n  expected: ${message}`);
      assert.match(r.stderr, /^reward-mesh tasks/);
    }
    assert.ok(!existsSync(out));
  });

  it("prints its help (sub-commands, options, examples) for --help, help and <sub-command> --help", async () => {
    const help = await run("--help");
    assert.deepEqual(help, { code: 0, stdout: formatHelp(TASKS_COMMAND), stderr: "" });
    assert.match(help.stdout, /^ {2}import +convert a public dataset/m);
    assert.deepEqual(await run("help"), help);
    assert.deepEqual(await run("help", "import"), await run("import", "--help"));
    const importHelp = await run("import", "--help");
    assert.equal(importHelp.code, 0);
    assert.ok(importHelp.stdout.startsWith(`${TASKS_USAGE.split("\n")[0]}\n`), importHelp.stdout);
    assert.match(importHelp.stdout, /--limit <N> +import at most the first N records \(default: all\)/);
  });
});

describe("reward-mesh tasks check", () => {
  it("names the file, line and field of a bad task (exit 2)", async () => {
    const path = join(dir, "bad-tasks.jsonl");
    writeFileSync(
      path,
      [
        '{"id": "a", "prompt": "p", "code": {"test": "def check(candidate): pass", "entryPoint": "f"}}',
        "# a comment",
        '{"id": "b", "messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "x"}], "agent": {"suite": "banking"}}',
      ].join("\n"),
    );
    assert.deepEqual(await run("check", path), {
      code: 2,
      stdout: "",
      stderr: `reward-mesh tasks check: ${path}:3: 'messages[1].role' must be one of system, user, assistant, tool, got "bot"\n`,
    });
  });
});

/** The message JSON.parse gives for `text` (it differs between Node versions). */
function errorText(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  return "";
}
