/** The report validation of runPythonTests, against a fake sandbox that returns hostile reports. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { normalizeOutput, type PythonProgram, runPythonTests } from "./harness.js";
import type { Sandbox, SandboxRunRequest, SandboxRunResult } from "./types.js";

const program: PythonProgram = {
  prompt: "",
  solution: "def f():\n    return 1\n",
  test: "def check(c):\n    assert c() == 1\n",
  entryPoint: "f",
  ioTests: [{ stdin: "", expectedStdout: "1 2\n3" }],
  timeLimitMs: 1000,
  memoryLimitMb: 64,
};

/** A sandbox whose "harness" answers with `report(nonce)` (what a compromised sandbox could print). */
function fakeSandbox(report: (nonce: string) => string, extra: Partial<SandboxRunResult> = {}): Sandbox {
  return {
    backend: "bwrap",
    description: "fake",
    limits: { wallTimeMs: 1, cpuTimeMs: 1, memoryBytes: 1, maxProcesses: 1, maxOutputBytes: 1 << 20 },
    active: 0,
    waiting: 0,
    async run(request: SandboxRunRequest) {
      const nonce = Buffer.from(request.stdin as Uint8Array)
        .toString()
        .trim()
        .slice(-32); // the job is followed by the nonce
      return {
        backend: "bwrap",
        exitCode: 0,
        signal: null,
        stdout: Buffer.from(report(nonce)),
        stderr: Buffer.alloc(0),
        stdoutTruncated: false,
        stderrTruncated: false,
        outputLimitExceeded: false,
        timedOut: false,
        oomKilled: false,
        cpuTimeMs: undefined,
        wallTimeMs: 1,
        peakMemoryBytes: undefined,
        ...extra,
      };
    },
    async close() {},
  };
}

const compileStage = `${JSON.stringify({
  v: 2,
  stage: "compile",
  syntax: { ok: true, error: null },
  compile: { ok: true, error: null },
  layout: { solution: [1, 2], test: [4, 5] },
  harnessError: null,
})}\n`;

const goodReport = (nonce: string, stdout = "1  2\n3\n") =>
  compileStage +
  JSON.stringify({
    v: 2,
    stage: "report",
    nonce,
    check: {
      status: "passed",
      completed: true,
      tests: [{ line: 5, source: "assert c() == 1", outcome: "pass", runs: 1, cpuMs: 0.1, error: null }],
      running: null,
      error: null,
      cpuMs: 1.5,
    },
    io: [
      { outcome: "ran", stdout, stdoutBytes: 7, stderr: "", error: null, cpuMs: 2, wallMs: 3, exitCode: 0 },
    ],
    harnessError: null,
  }) +
  "\n";

describe("runPythonTests: the report is untrusted", () => {
  it("accepts a well-formed report with the right nonce, and compares io output itself", async () => {
    const r = await runPythonTests(
      fakeSandbox((n) => goodReport(n)),
      program,
    );
    assert.equal(r.status, "passed");
    assert.equal(r.passed, 2);
    assert.equal(r.cpuMs, 3.5);
    assert.equal(r.tests[0]!.name, "test line 2");
    const wrong = await runPythonTests(
      fakeSandbox((n) => goodReport(n, "1 2\n4")),
      program,
    );
    assert.equal(wrong.status, "assertion_failed");
    assert.match(wrong.summary, /io test 1: expected "1 2\\n3", got "1 2\\n4"/);
  });

  it("a report rejected after the compile stage keeps syntax and compile; before it, worker_error; killed → timeout / OOM", async () => {
    const cases: Array<[string, (n: string) => string]> = [
      ["nonce mismatch", () => goodReport("f".repeat(32))],
      ["expected two lines", (n) => goodReport(n) + goodReport(n)],
      ["the report line is not JSON", () => `${compileStage}passed\n`],
      ["expected two lines on stdout, got 1", () => compileStage],
      [
        "io results do not match",
        (n) => goodReport(n).replace(/"io":\[.*\],"harnessError"/, '"io":[],"harnessError"'),
      ],
      ["check.status", (n) => goodReport(n).replace('"status":"passed"', '"status":"great"')],
      ["not a finite number", (n) => goodReport(n).replace('"cpuMs":1.5', '"cpuMs":-1')],
      [
        "harness failed",
        (n) => `${compileStage}${JSON.stringify({ v: 2, stage: "report", nonce: n, harnessError: "boom" })}`,
      ],
    ];
    // After a valid compile stage the candidate's code ran: syntax and compile stand, the tests fail.
    for (const [why, report] of cases) {
      const r = await runPythonTests(fakeSandbox(report), program);
      assert.equal(r.status, "runtime_error", why);
      assert.equal(r.syntax.ok, true, why);
      assert.equal(r.compile.ok, true, why);
      assert.equal(r.passed, 0);
      assert.equal(r.error?.type, "HarnessReportRejected", why);
      assert.ok(r.summary.includes(why), `${why}: ${r.summary}`);
    }
    const killed = await runPythonTests(
      fakeSandbox(() => compileStage, { exitCode: null, signal: "SIGKILL" }),
      program,
    );
    assert.equal(killed.error?.type, "HarnessKilled");
    assert.equal(killed.compile.ok, true);
    // Without one, nothing of the candidate ran: the harness failed, every component at its minimum.
    const before: Array<[string, (n: string) => string]> = [
      ["the compile stage line is not JSON", () => "passed\n"],
      ["the first line is not the compile stage", (n) => goodReport(n).split("\n").slice(1).join("\n")],
      ["unknown version", (n) => goodReport(n).replace('"v":2', '"v":1')],
      [
        "harness failed",
        () => `${JSON.stringify({ v: 2, stage: "compile", harnessError: "bad protocol header" })}\n`,
      ],
    ];
    for (const [why, report] of before) {
      const r = await runPythonTests(fakeSandbox(report), program);
      assert.equal(r.status, "worker_error", why);
      assert.equal(r.syntax.ok, false, why);
      assert.equal(r.passed, 0);
      assert.ok(r.summary.includes(why), `${why}: ${r.summary}`);
    }
    const timedOut = await runPythonTests(
      fakeSandbox(() => "", { timedOut: true, exitCode: null, signal: "SIGKILL" }),
      program,
    );
    assert.equal(timedOut.status, "timeout");
    const oom = await runPythonTests(
      fakeSandbox(() => "", { oomKilled: true, exitCode: null, signal: "SIGKILL" }),
      program,
    );
    assert.equal(oom.status, "memory_error");
  });

  it("normalises whitespace of stdin → stdout tests", () => {
    assert.equal(normalizeOutput("\n  1   2 \r\n3\t4\n\n"), "1 2\n3 4");
    assert.notEqual(normalizeOutput("1\n2"), normalizeOutput("1 2"));
  });
});
