/**
 * The benchmark-data loader and the placeholder filling, on made-up fixture directories written to a temp
 * dir (no benchmark data needed; nothing here skips).
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { BenchmarkDataError, injectEnvironment, openBenchmarkData } from "./benchmark-data.js";

const roots: string[] = [];
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** A temp directory holding `files` (path → content; objects are written as JSON). */
function fixture(files: Readonly<Record<string, string | object>>): string {
  const root = mkdtempSync(join(tmpdir(), "agentdojo-data-"));
  roots.push(root);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), typeof content === "string" ? content : JSON.stringify(content));
  }
  return root;
}

const TASKS = {
  benchmark_version: "v1.2.1",
  suites: {
    demo: {
      user_tasks: { user_task_0: { prompt: "Do the thing.", difficulty: "EASY" } },
      injection_tasks: { injection_task_0: { goal: "Do the other thing." } },
    },
  },
};
const VECTORS =
  "inj_a:\n  description: first\n  default: A-default\ninj_b:\n  description: second\n  default: ''\n";

/** A complete one-suite directory, with `overrides` replacing or adding files. */
function dataDir(overrides: Readonly<Record<string, string | object>> = {}): string {
  return fixture({
    "tasks.json": TASKS,
    "demo/environment.yaml": "greeting: 'hello {inj_a}'\n",
    "demo/injection_vectors.yaml": VECTORS,
    ...overrides,
  });
}

/** Asserts `fn` throws a BenchmarkDataError whose message matches `re`. */
function throwsData(fn: () => unknown, re: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof BenchmarkDataError, `a BenchmarkDataError, got ${String(e)}`);
    assert.match((e as Error).message, re);
    return true;
  });
}

describe("openBenchmarkData", () => {
  it("reads tasks.json, the suite's environment, vectors, prompts and goals", () => {
    const d = openBenchmarkData(dataDir());
    assert.equal(d.benchmarkVersion, "v1.2.1");
    assert.deepEqual(d.suites, ["demo"]);
    const s = d.suite("demo");
    assert.equal(s.suite, "demo");
    assert.deepEqual(s.environment, { greeting: "hello {inj_a}" });
    assert.deepEqual(s.injectionVectors, {
      inj_a: { description: "first", default: "A-default" },
      inj_b: { description: "second", default: "" },
    });
    assert.equal(s.userTasks.get("user_task_0")?.prompt, "Do the thing.");
    assert.equal(s.userTasks.get("user_task_0")?.difficulty, "EASY");
    assert.equal(s.injectionTasks.get("injection_task_0")?.goal, "Do the other thing.");
  });

  it("a missing directory is an error naming it", () => {
    const missing = join(tmpdir(), `agentdojo-no-such-dir-${process.pid}`);
    throwsData(() => openBenchmarkData(missing), new RegExp(`${missing}: is not a directory`));
    const file = join(fixture({ "f.txt": "x" }), "f.txt");
    throwsData(() => openBenchmarkData(file), /f\.txt: is not a directory/);
  });

  it("a missing or malformed tasks.json is an error naming it", () => {
    const root = fixture({ "README.md": "no tasks here" });
    throwsData(() => openBenchmarkData(root), new RegExp(`${join(root, "tasks.json")}: not found`));
    throwsData(() => openBenchmarkData(dataDir({ "tasks.json": "{not json" })), /tasks\.json: invalid JSON/);
    throwsData(
      () => openBenchmarkData(dataDir({ "tasks.json": "[1]" })),
      /tasks\.json: must be a JSON object/,
    );
    throwsData(
      () => openBenchmarkData(dataDir({ "tasks.json": { suites: {} } })),
      /tasks\.json: has no string 'benchmark_version'/,
    );
    throwsData(
      () => openBenchmarkData(dataDir({ "tasks.json": { benchmark_version: "v1.2.1" } })),
      /tasks\.json: has no 'suites' object/,
    );
  });

  it("another benchmark version is refused, naming both versions", () => {
    throwsData(
      () => openBenchmarkData(dataDir({ "tasks.json": { ...TASKS, benchmark_version: "v1.1.2" } })),
      /tasks\.json: is benchmark version v1\.1\.2; this build implements v1\.2\.1/,
    );
  });

  it("a suite tasks.json does not describe is an error listing the ones it does", () => {
    throwsData(
      () => openBenchmarkData(dataDir()).suite("slack"),
      /tasks\.json: has no suite "slack" \(has demo\)/,
    );
  });

  it("a missing suite directory or file is an error naming the file", () => {
    const root = dataDir();
    rmSync(join(root, "demo"), { recursive: true });
    throwsData(
      () => openBenchmarkData(root).suite("demo"),
      new RegExp(`${join(root, "demo", "environment.yaml")}: not found`),
    );
    const noVectors = dataDir();
    rmSync(join(noVectors, "demo", "injection_vectors.yaml"));
    throwsData(() => openBenchmarkData(noVectors).suite("demo"), /injection_vectors\.yaml: not found/);
  });

  it("malformed YAML is an error naming the file", () => {
    throwsData(
      () => openBenchmarkData(dataDir({ "demo/environment.yaml": "a: [1, 2\nb: }" })).suite("demo"),
      /demo\/environment\.yaml: invalid YAML: /,
    );
    throwsData(
      () => openBenchmarkData(dataDir({ "demo/environment.yaml": "a: 1\na: 2\n" })).suite("demo"),
      /environment\.yaml: invalid YAML: .*unique/i,
    );
  });

  it("malformed vectors and task texts are errors naming what is wrong", () => {
    throwsData(
      () => openBenchmarkData(dataDir({ "demo/injection_vectors.yaml": "- a\n" })).suite("demo"),
      /injection_vectors\.yaml: must map vector names to \{description, default\}/,
    );
    throwsData(
      () =>
        openBenchmarkData(dataDir({ "demo/injection_vectors.yaml": "inj_a:\n  description: d\n" })).suite(
          "demo",
        ),
      /injection_vectors\.yaml: vector "inj_a" must have string 'description' and 'default'/,
    );
    const badPrompt = {
      ...TASKS,
      suites: { demo: { ...TASKS.suites.demo, user_tasks: { user_task_0: {} } } },
    };
    throwsData(
      () => openBenchmarkData(dataDir({ "tasks.json": badPrompt })).suite("demo"),
      /tasks\.json: suites\.demo\.user_tasks\.user_task_0\.prompt must be a string/,
    );
    const noGoals = { ...TASKS, suites: { demo: { user_tasks: {} } } };
    throwsData(
      () => openBenchmarkData(dataDir({ "tasks.json": noGoals })).suite("demo"),
      /suites\.demo\.injection_tasks must be an object of task id → \{goal\}/,
    );
  });

  it("resolves !include relative to the including file, nested, and reports a missing or cyclic one", () => {
    const root = dataDir({
      "demo/environment.yaml": "calendar: !include include/calendar.yaml\nname: top\n",
      "demo/include/calendar.yaml": "events:\n  - !include parts/event.yaml\n",
      "demo/include/parts/event.yaml": "title: 'Meeting {inj_b}'\nstart: 2024-05-15 10:00\n",
    });
    assert.deepEqual(openBenchmarkData(root).suite("demo").environment, {
      calendar: { events: [{ title: "Meeting {inj_b}", start: "2024-05-15 10:00" }] },
      name: "top",
    });
    throwsData(
      () =>
        openBenchmarkData(dataDir({ "demo/environment.yaml": "a: !include include/missing.yaml\n" })).suite(
          "demo",
        ),
      /demo\/include\/missing\.yaml: not found/,
    );
    throwsData(
      () =>
        openBenchmarkData(
          dataDir({
            "demo/environment.yaml": "a: !include include/loop.yaml\n",
            "demo/include/loop.yaml": "b: !include loop.yaml\n",
          }),
        ).suite("demo"),
      /nested too deep/,
    );
  });

  it("reads YAML 1.2 core: dates, times and yes/no stay strings", () => {
    const env = openBenchmarkData(
      dataDir({
        "demo/environment.yaml": "d: 2024-05-15\nt: 2024-05-15 10:00:00\ny: yes\nn: 12\nf: 1.50\nz: null\n",
      }),
    ).suite("demo").environment;
    assert.deepEqual(env, { d: "2024-05-15", t: "2024-05-15 10:00:00", y: "yes", n: 12, f: 1.5, z: null });
  });
});

describe("injectEnvironment", () => {
  const vectors = {
    inj_a: { description: "first", default: "A-default" },
    inj_b: { description: "second", default: "" },
  };

  it("fills every {vector} in strings (keys included) with the injection or the vector's default", () => {
    const doc = {
      text: "x {inj_a} y {inj_b} z",
      list: ["{inj_b}", 3, true, null],
      nested: { "key_{inj_a}": "{inj_a}{inj_a}" },
    };
    assert.deepEqual(injectEnvironment(doc, vectors, { inj_b: "B!" }), {
      text: "x A-default y B! z",
      list: ["B!", 3, true, null],
      nested: { "key_A-default": "A-defaultA-default" },
    });
    assert.deepEqual(injectEnvironment(doc, vectors, {}).list, ["", 3, true, null]);
    assert.equal(doc.text, "x {inj_a} y {inj_b} z", "the document itself is not changed");
  });

  it("does not re-format braces inside the injection, but folds and unescapes it as upstream's safe_load does", () => {
    // Figures from PyYAML 6: dump with AgentDojo's quoted presenter, str.format, safe_load.
    const inject = (text: string) => injectEnvironment({ t: "{inj_a}" }, vectors, { inj_a: text }).t;
    assert.equal(
      inject("{inj_b} and {{x}}\n"),
      "{inj_b} and {{x}} ",
      "braces kept, a trailing line break folds to a space",
    );
    assert.equal(inject("line1\nline2"), "line1 line2", "a single line break folds to a space");
    assert.equal(inject("a\n\nb"), "a\nb", "an empty line becomes one line break");
    assert.equal(inject("a\\nb"), "a\nb", "a backslash escape is interpreted");
    assert.equal(inject('say \\"hi\\"'), 'say "hi"', "an escaped quote stays inside the scalar");
  });

  it("reads {{ and }} as literal braces, as str.format does", () => {
    assert.deepEqual(injectEnvironment({ t: "{{inj_a}} {{ {inj_a} }}" }, vectors, { inj_a: "A" }), {
      t: "{inj_a} { A }",
    });
  });

  it("an injection for an unknown vector is an error", () => {
    throwsData(
      () => injectEnvironment({ t: "{inj_a}" }, vectors, { inj_c: "x" }),
      /unknown injection vector "inj_c"/,
    );
  });

  it("a placeholder no vector defines is an error", () => {
    throwsData(
      () => injectEnvironment({ t: "{other}" }, vectors, {}),
      /placeholder in field t: unknown placeholder \{other\}/,
    );
  });
});
