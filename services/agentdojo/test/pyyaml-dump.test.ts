/**
 * `safeDump` (and the `render.ts` helpers every suite prints tool results with) against real PyYAML:
 * `yaml.safe_dump(value).strip()`, what AgentDojo's `tool_result_to_str` shows, for hand-picked
 * tool-result-like values (long texts folded at 80 columns, multi-line texts, quotes, colons, `#`,
 * leading dashes, non-ASCII, empty strings, floats, ints, booleans, None, datetimes, long and odd keys)
 * and for a few hundred seeded random documents (`test/pyyaml-dump-oracle.py`); and every suite's YAML
 * tool outputs along the ground truths are PyYAML's own dump of what they hold.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { buildInjections } from "../src/attacks.js";
import { type EpisodeSpec, replayEpisode, startEpisode } from "../src/episode.js";
import { type Dumpable, PyFloat, PyTemporal, safeDump } from "../src/pyyaml.js";
import { pyYamlDump, yamlRecords, yamlString } from "../src/render.js";
import { loadSuites } from "../src/suites/index.js";
import { BENCHMARK_DATA_DIR } from "./benchmark-data-dir.js";

const PYTHON = "/usr/bin/python3";
const ORACLE = join(dirname(fileURLToPath(import.meta.url)), "pyyaml-dump-oracle.py");

function pythonSkip(): string | false {
  const r = spawnSync(PYTHON, ["-c", "import yaml; assert yaml.__version__.startswith('6.')"], {
    encoding: "utf8",
  });
  if (r.error) return `${PYTHON} is not available: the PyYAML oracle cannot run`;
  if (r.status !== 0) return `${PYTHON} has no PyYAML 6: the oracle cannot run`;
  return false;
}
const PY_SKIP = pythonSkip();

/** The value as the oracle's JSON: floats, datetimes and dates tagged. */
function encode(v: Dumpable): unknown {
  if (v instanceof PyFloat) return { $float: Object.is(v.value, -0) ? "-0.0" : String(v.value) };
  if (v instanceof PyTemporal) return v.text.includes(":") ? { $datetime: v.text } : { $date: v.text };
  if (Array.isArray(v)) return v.map(encode);
  if (v !== null && typeof v === "object")
    return Object.fromEntries(
      Object.entries(v)
        .filter(([, x]) => x !== undefined)
        .map(([k, x]) => [k, encode(x as Dumpable)]),
    );
  return v;
}

function pyDump(values: readonly Dumpable[]): string[] {
  const r = spawnSync(PYTHON, [ORACLE], {
    input: JSON.stringify(values.map(encode)),
    encoding: "utf8",
    maxBuffer: 1 << 28,
  });
  assert.equal(r.status, 0, `oracle failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as string[];
}

const LONG =
  "Please make sure to review the attached quarterly report before our meeting on Thursday, it has the numbers.";
const TEXTS: readonly string[] = [
  "",
  " ",
  "plain",
  LONG,
  `${LONG} ${LONG}`,
  "x".repeat(120),
  `${"word ".repeat(30)}`,
  "line one\nline two\n\nline four",
  "trailing newline\n",
  "\nleading newline",
  `${LONG}\n${LONG}\n\n${LONG}`,
  "multi  spaces\n  indented line",
  "it's",
  'He said "hi"',
  `'${LONG}'`,
  "key: value",
  "key:value",
  "ends with colon:",
  "# not a comment",
  "a # b",
  "a#b",
  "- leading dash",
  "-dash",
  "--- separator",
  "...",
  "? question",
  "!tag",
  "&anchor *alias",
  "{braces}",
  "[brackets]",
  "comma, here",
  "%percent",
  "@at",
  "`backtick",
  "| pipe",
  "> gt",
  "tab\there",
  "ünïcödé text",
  "emoji 😀 and 日本語",
  `${"é".repeat(50)} ${"ü".repeat(50)}`,
  `non-ASCII in a long line: ${LONG} — ${LONG}`,
  "line\u2028separator",
  "nbsp\u00a0here",
  "\u0007bell",
  "yes",
  "No",
  "true",
  "null",
  "~",
  "123",
  "1.5",
  "1e3",
  "0x1F",
  "0o17",
  "1_000",
  "12:30",
  "2024-05-15",
  "2024-05-15 10:00:00",
  ".inf",
  ".nan",
  "<<",
  "=",
  "trailing space ",
  "www.example.com/path?query=1&x=y",
  "US133000000121212121212",
  "C:\\Users\\emma",
];

const SCALARS: readonly Dumpable[] = [
  ...TEXTS,
  0,
  -7,
  1234567,
  new PyFloat(0),
  new PyFloat(-0),
  new PyFloat(5),
  new PyFloat(0.1),
  new PyFloat(1810.25),
  new PyFloat(1e16),
  new PyFloat(1.5e-7),
  new PyFloat(Number.POSITIVE_INFINITY),
  new PyFloat(Number.NEGATIVE_INFINITY),
  new PyFloat(Number.NaN),
  true,
  false,
  null,
  new PyTemporal("2024-05-15 10:00:00"),
  new PyTemporal("2024-05-15 10:00:00.123456"),
  new PyTemporal("2024-05-15"),
  [],
  {},
];

/** Hand-picked tool-result-like documents: every scalar as a value, key, list item, at several depths. */
function handPicked(): Dumpable[] {
  const docs: Dumpable[] = [...SCALARS];
  docs.push(SCALARS as Dumpable[]);
  docs.push(Object.fromEntries(SCALARS.map((s, i) => [`field_${String(i).padStart(3, "0")}`, s])));
  docs.push(Object.fromEntries(TEXTS.map((t, i) => [t, i])));
  docs.push({
    [`${"k".repeat(126)}`]: LONG,
    [`${"k".repeat(127)}`]: LONG,
    [`${"k".repeat(130)}`]: [LONG, { a: 1 }],
  });
  docs.push({ "multi\nline key": "v", [LONG]: { nested: LONG } });
  docs.push([
    {
      id_: "13",
      sender: "emma.johnson@bluesparrowtech.com",
      recipients: ["david.smith@bluesparrowtech.com", "lily.white@gmail.com"],
      cc: [],
      subject: "Re: Project update: Q2 — next steps",
      body: `Hi David,\n\n${LONG} ${LONG}\n\nBest,\nEmma`,
      status: "sent",
      read: true,
      timestamp: new PyTemporal("2024-05-15 10:00:00"),
      attachments: [{ type: "file", file_id: "3" }],
    },
  ]);
  docs.push([
    { id: 1, amount: new PyFloat(100), subject: "Pizza party", date: "2022-01-01", recurring: false },
    {
      id: 2,
      amount: new PyFloat(200.29),
      subject: `${LONG} IBAN: US122000000121212121212`,
      date: "2022-02-12",
      recurring: true,
    },
  ]);
  docs.push({ level1: { level2: { level3: [[LONG, ["deep", { k: LONG }]], []], empty: {} } } });
  docs.push([[["nested"]], [{ a: [1, 2] }, { b: {} }]]);
  return docs;
}

/** A seeded generator (mulberry32): the same documents on every run. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  "a",
  "word",
  " ",
  " ",
  " ",
  "  ",
  "\n",
  "\n\n",
  ":",
  "#",
  "-",
  "'",
  '"',
  ",",
  "?",
  "\t",
  "é",
  "日",
  "😀",
  "{",
  "}",
  "\\",
  "x".repeat(30),
  "1",
  ".",
  "!",
  "&",
];

function randomDoc(next: () => number, depth: number): Dumpable {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const str = (): string => {
    const n = Math.floor(next() * (next() < 0.3 ? 80 : 12));
    let s = "";
    for (let i = 0; i < n; i++) s += pick(PIECES);
    return s;
  };
  const r = next();
  if (depth > 0 && r < 0.25) {
    const n = Math.floor(next() * 5);
    return Array.from({ length: n }, () => randomDoc(next, depth - 1));
  }
  if (depth > 0 && r < 0.5) {
    const n = Math.floor(next() * 5);
    return Object.fromEntries(
      Array.from({ length: n }, () => [
        next() < 0.8 ? str().slice(0, 20) || "k" : str(),
        randomDoc(next, depth - 1),
      ]),
    );
  }
  if (r < 0.8) return str();
  return pick(SCALARS);
}

describe("safeDump prints what PyYAML's yaml.safe_dump(...).strip() prints", { skip: PY_SKIP }, () => {
  it("on hand-picked tool-result-like values", () => {
    const docs = handPicked();
    const py = pyDump(docs);
    const diffs = docs
      .map((d, i) => ({ i, ours: safeDump(d), theirs: py[i]! }))
      .filter((x) => x.ours !== x.theirs);
    assert.deepEqual(diffs.slice(0, 3), []);
    // Each style folds a long one-line value at 80 columns (the approximation this replaced did not).
    const styles = { plain: `${LONG} ${LONG}`, single: `'${LONG}'`, double: `é ${LONG}` };
    const folded = pyDump(Object.values(styles).map((v) => ({ k: v })));
    for (const [i, [style, v]] of Object.entries(styles).entries()) {
      assert.ok(folded[i]!.split("\n").length > 1, `${style}: PyYAML folds it`);
      assert.equal(safeDump({ k: v }), folded[i], style);
    }
  });

  it("on 400 seeded random documents", () => {
    const next = rng(20261202);
    const docs = Array.from({ length: 400 }, () => randomDoc(next, 4));
    const py = pyDump(docs);
    const diffs = docs
      .map((d, i) => ({ doc: JSON.stringify(encode(d)).slice(0, 300), ours: safeDump(d), theirs: py[i]! }))
      .filter((x) => x.ours !== x.theirs);
    assert.deepEqual(diffs.slice(0, 3), []);
  });

  it("through render.ts's helpers (pyYamlDump, yamlRecords, yamlString)", () => {
    const records = [
      {
        id: 3,
        amount: 50,
        recipient: "SE3550000000054910000003",
        subject: `${LONG}\nsecond line`,
        date: "2022-03-04",
        recurring: false,
      },
      {
        id: 4,
        amount: 1100.5,
        recipient: "US122000000121212121212",
        subject: "it's: here # and - there",
        date: "2022-03-07",
        recurring: true,
      },
    ];
    const floats = new Set(["amount"]);
    const [asRecords, asDump, ...strings] = pyDump([
      records.map((r) => ({ ...r, amount: new PyFloat(r.amount) })),
      [LONG, { nested: [`${LONG}\n${LONG}`] }],
      ...TEXTS,
    ]);
    assert.equal(yamlRecords(records, floats), asRecords);
    assert.equal(yamlRecords([], floats), "[]");
    assert.equal(pyYamlDump([LONG, { nested: [`${LONG}\n${LONG}`] }]), asDump);
    // yamlString is the whole-document dump without the `...` that ends a plain one.
    assert.deepEqual(
      TEXTS.map(yamlString),
      strings.map((s) => s.replace(/\n\.\.\.$/, "")),
    );
  });
});

/**
 * The tool outputs of every user task's ground truth, clean and under the first injection task's
 * `important_instructions` attack, with the injection task's ground truth too: banking always, the other
 * suites when `AGENTDOJO_DATA_DIR` has the benchmark data.
 */
function groundTruthOutputs(): string[] {
  const outputs: string[] = [];
  for (const suite of loadSuites(BENCHMARK_DATA_DIR).values()) {
    for (const userTask of suite.userTasks) {
      const injectionTask = suite.injectionTasks[0]!;
      const injections = buildInjections(
        suite,
        userTask,
        injectionTask,
        "important_instructions",
        "AI model",
      );
      const specs: EpisodeSpec[] = [
        { suite, userTask, injectionTask: undefined, attack: undefined, injections: {} },
        { suite, userTask, injectionTask, attack: "important_instructions", injections },
      ];
      for (const spec of specs)
        for (const task of spec.injectionTask ? [userTask, spec.injectionTask] : [userTask]) {
          const v = replayEpisode(spec, task.groundTruth(startEpisode(spec).pre), "");
          for (const r of v.records) if (r.error === "") outputs.push(r.output);
        }
    }
  }
  return outputs;
}

describe("every suite's YAML tool outputs are PyYAML's own dump", { skip: PY_SKIP }, () => {
  it("yaml.safe_dump(yaml.safe_load(output)).strip() gives each output back", (t) => {
    // Python's str() of a dict or list starts with `{`/`[`; a block-style dump never does (plain-text
    // outputs that merely look like YAML load as something else, or not at all, and are left out).
    const candidates = groundTruthOutputs().filter((o) => /^(?:- |\? |[^\s{['"][^\n]*:(?: |\n|$))/.test(o));
    const script = `import json, sys, yaml
def redump(o):
    try:
        v = yaml.safe_load(o)
    except yaml.YAMLError:
        return None
    return yaml.safe_dump(v).strip() if isinstance(v, (list, dict)) else None
print(json.dumps([redump(o) for o in json.load(sys.stdin)]))`;
    const r = spawnSync(PYTHON, ["-c", script], {
      input: JSON.stringify(candidates),
      encoding: "utf8",
      maxBuffer: 1 << 28,
    });
    assert.equal(r.status, 0, r.stderr);
    const redumped = JSON.parse(r.stdout) as (string | null)[];
    const compared = candidates.flatMap((ours, i) =>
      redumped[i] == null ? [] : [{ ours, theirs: redumped[i] }],
    );
    t.diagnostic(
      `${compared.length} YAML tool outputs compared (suites: ${[...loadSuites(BENCHMARK_DATA_DIR).keys()].join(", ")})`,
    );
    assert.ok(compared.length > 20, "the ground truths print YAML");
    assert.ok(
      compared.some((c) => /\n {4}\S/.test(c.ours)),
      "some output has a folded scalar",
    );
    assert.deepEqual(compared.filter((c) => c.ours !== c.theirs).slice(0, 3), []);
  });
});
