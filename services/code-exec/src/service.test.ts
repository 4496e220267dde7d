/** code-exec against the real harness in a real bwrap sandbox: the correctness cases, statuses, validation. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ComponentStatus } from "@reward-mesh/proto";
import { createSandbox, loadSandboxConfig, type Sandbox } from "@reward-mesh/sandbox";
import type { ConfigError } from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { cases, twoSum } from "../test/cases.js";
import { loadConfig } from "./config.js";
import { createCodeExecService } from "./service.js";

const sandboxConfig = { ...loadSandboxConfig({}), backend: "bwrap" as const };

describe("code-exec service (bwrap sandbox)", () => {
  let sandbox: Sandbox;
  let svc: ReturnType<typeof createCodeExecService>;
  before(async () => {
    sandbox = await createSandbox(sandboxConfig);
    svc = createCodeExecService({ sandbox: sandboxConfig, sandboxInstance: sandbox });
  });
  after(() => sandbox.close());

  for (const c of cases) {
    it(c.name, async () => {
      const r = await svc.scoreRollout(
        makeRollout({ response: c.response, task: { id: "t", kind: { case: "code", value: c.task } } }),
      );
      const got = r.components.map((x) => x.value);
      assert.deepEqual(
        r.components.map((x) => x.name),
        ["format", "syntax", "compile", "runtime", "pass", "pass_rate"],
      );
      const byName = Object.fromEntries(r.components.map((x) => [x.name, x]));
      const msg = JSON.stringify(
        r.components.map((x) => [x.name, x.value, ComponentStatus[x.status], x.details]),
        null,
        1,
      );
      got.forEach((v, i) => {
        assert.ok(Math.abs(v - c.expected[i]!) < 1e-12, `${r.components[i]!.name}: ${msg}`);
      });
      if (c.runtimeStatus) {
        assert.equal(ComponentStatus[byName.runtime!.status], c.runtimeStatus, msg);
        if (c.runtimeStatus !== "OK") assert.equal(byName.pass!.status, byName.runtime!.status, msg);
      }
      if (c.details) assert.match(byName.pass!.details, c.details, msg);
      assert.equal(byName.format!.status, ComponentStatus.OK);
    });
  }

  const score = async (s: ReturnType<typeof createCodeExecService>, response: string, task: object) => {
    const r = await s.scoreRollout(
      makeRollout({ response, task: { id: "t", kind: { case: "code", value: { ...twoSum, ...task } } } }),
    );
    return Object.fromEntries(r.components.map((x) => [x.name, x]));
  };
  const addTask = {
    prompt: "def add(a, b):\n    pass\n",
    test: "def check(candidate):\n    assert candidate(1, 1) == 2\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n    assert candidate(3, 3) == 6\n",
    entryPoint: "add",
  };

  it("a prompt that cannot run (a module it imports is missing) is NOT_APPLICABLE with the reason, not the candidate's 0", async () => {
    const c = await score(svc, "```python\ndef add(a, b):\n    return a + b\n```", {
      ...addTask,
      prompt: "import no_such_module_rm\n\ndef add(a, b):\n    pass\n",
    });
    for (const name of ["runtime", "pass", "pass_rate"]) {
      assert.equal(c[name]!.status, ComponentStatus.NOT_APPLICABLE, name);
      assert.match(
        c[name]!.details,
        /^task error, not the candidate's: PromptError: .*No module named 'no_such_module_rm'/,
      );
    }
    assert.equal(c.syntax!.value, 1);
    assert.equal(c.compile!.value, 1);
  });

  it("an assert the complete run never reached stops nothing: runtime 1 in both semantics, pass 1 as CorrGRPO", async () => {
    const task = {
      ...addTask,
      test: "def check(candidate):\n    assert candidate(1, 2) == 3\n    for x in []:\n        assert candidate(x, x) == -1\n",
    };
    const response = "```python\ndef add(a, b):\n    return a + b\n```";
    const perAssert = await score(svc, response, task);
    assert.equal(perAssert.runtime!.value, 1, perAssert.runtime!.details);
    const cg = createCodeExecService({
      sandbox: sandboxConfig,
      sandboxInstance: sandbox,
      semantics: "corrgrpo",
    });
    const c = await score(cg, response, task);
    assert.equal(c.runtime!.value, 1, c.runtime!.details);
    assert.equal(c.pass!.value, 1, c.pass!.details);
    assert.equal(c.pass!.status, ComponentStatus.OK);
    assert.equal(c.pass_rate!.value, 1, "no test that ran failed");
  });

  it("runtime follows CorrGRPO: an assert that fails before a crash is a run that ran; semantics=corrgrpo stops there", async () => {
    // candidate(1, 1) right, candidate(1, 2) wrong, candidate(2, 2) raises, candidate(3, 3) right.
    const response =
      "```python\ndef add(a, b):\n    if a == 2:\n        raise TypeError('boom')\n    return 0 if a != b else a + b\n```";
    const perAssert = await score(svc, response, addTask);
    assert.equal(perAssert.runtime!.value, 1, perAssert.runtime!.details);
    assert.equal(perAssert.pass!.value, 0);
    assert.match(perAssert.pass!.details, /^runtime error: TypeError: boom/);
    const cg = createCodeExecService({
      sandbox: sandboxConfig,
      sandboxInstance: sandbox,
      semantics: "corrgrpo",
    });
    const stop = await score(cg, response, addTask);
    assert.equal(stop.runtime!.value, 1);
    assert.equal(stop.pass!.value, 0);
    assert.equal(stop.pass!.status, ComponentStatus.OK, "a failing assert is a wrong answer, not a crash");
    assert.equal(stop.pass_rate!.value, 1 / 4, "only the asserts before the first failure count");
    // Per rollout (e.g. per task) through metadata; a bad value names the key.
    const viaMetadata = await svc.scoreRollout(
      makeRollout({
        response,
        metadata: { "code_exec.semantics": "corrgrpo" },
        task: { id: "t", kind: { case: "code", value: { ...twoSum, ...addTask } } },
      }),
    );
    assert.equal(viaMetadata.components.find((c) => c.name === "pass_rate")!.value, 1 / 4);
    await assert.rejects(
      svc.scoreRollout(
        makeRollout({
          response,
          metadata: { "code_exec.semantics": "strict" },
          task: { id: "t", kind: { case: "code", value: { ...twoSum, ...addTask } } },
        }),
      ),
      /'rollout\.metadata\["code_exec\.semantics"\]' must be per_assert or corrgrpo, got "strict"/,
    );
    // A crash before any failing assert: runtime 0 in both.
    const crash = await score(cg, "```python\ndef add(a, b):\n    return None + a\n```", addTask);
    assert.equal(crash.runtime!.value, 0);
    assert.equal(crash.runtime!.status, ComponentStatus.ERROR);
  });

  it("scores a group concurrently (the sandbox bounds the parallelism)", async () => {
    const responses = cases.slice(0, 6).filter((c) => c.task === twoSum && !c.name.startsWith("timeout"));
    const results = await Promise.all(
      responses.map((c) =>
        svc.scoreRollout(
          makeRollout({ response: c.response, task: { id: "t", kind: { case: "code", value: c.task } } }),
        ),
      ),
    );
    results.forEach((r, i) => {
      assert.deepEqual(
        r.components.map((x) => x.value),
        [...responses[i]!.expected],
      );
    });
  });

  it("rejects contract violations naming the field", async () => {
    const bad = async (task: object, pattern: RegExp) =>
      assert.rejects(
        svc.scoreRollout(
          makeRollout({ response: "x", task: { id: "t", kind: { case: "code", value: task } } }),
        ),
        pattern,
      );
    await bad({ ...twoSum, language: "java" }, /'rollout\.task\.code\.language' must be "python"/);
    await bad({ language: "python" }, /'rollout\.task\.code\.test' is required \(or io_tests\)/);
    await bad(
      { ...twoSum, entryPoint: "" },
      /'rollout\.task\.code\.entry_point' is required when test defines check/,
    );
    await bad({ ...twoSum, memoryLimitMb: 4 }, /'rollout\.task\.code\.memory_limit_mb' must be 0/);
    await assert.rejects(
      svc.scoreRollout(makeRollout({ response: "x" })),
      /'rollout\.task\.kind' must be one of code/,
    );
  });

  it("a candidate that reports its own passes and exits scores the minimum, status ERROR", async () => {
    // Forged per-test events on the inherited event pipe, then an exit before the tests run.
    const forger = [
      "import os",
      "class Solution:",
      "    def twoSum(self, nums, target):",
      "        return []",
      "for fd in range(3, 256):",
      "    try:",
      '        os.write(fd, b\'\'.join(b\'{"e": "ok", "i": %d, "cpuMs": 0}\\n\' % i for i in range(3)))',
      "    except OSError:",
      "        pass",
      "os._exit(1)",
      "",
    ].join("\n");
    const r = await svc.scoreRollout(
      makeRollout({
        response: `\`\`\`python\n${forger}\`\`\`\n`,
        task: { id: "t", kind: { case: "code", value: twoSum } },
      }),
    );
    const byName = Object.fromEntries(r.components.map((x) => [x.name, x]));
    const msg = JSON.stringify(
      r.components.map((x) => [x.name, x.value, ComponentStatus[x.status], x.details]),
    );
    for (const name of ["runtime", "pass", "pass_rate"]) {
      assert.equal(byName[name]!.value, 0, `${name}: ${msg}`);
      assert.notEqual(byName[name]!.status, ComponentStatus.OK, `${name}: ${msg}`);
    }
  });

  it("an aborted request stops its execution and rejects", async () => {
    const ac = new AbortController();
    const slow = cases.find((c) => c.name.startsWith("timeout"))!;
    const p = svc.scoreRollout(
      makeRollout({
        response: slow.response,
        task: { id: "t", kind: { case: "code", value: { ...twoSum, timeLimitMs: 30_000 } } },
      }),
      { signal: ac.signal },
    );
    setTimeout(() => ac.abort(new Error("deadline")), 300);
    await assert.rejects(p, /deadline/);
  });
});

describe("code-exec configuration", () => {
  it("reads CODE_EXEC_* and SANDBOX_*", () => {
    const c = loadConfig({
      CODE_EXEC_GRPC_PORT: "0",
      SANDBOX_BACKEND: "bwrap",
      SANDBOX_TIME_LIMIT_MS: "3000",
    });
    assert.equal(c.runtime.grpcPort, 0);
    assert.equal(c.sandbox.backend, "bwrap");
    assert.equal(c.sandbox.timeLimitMs, 3000);
    assert.equal(loadConfig({}).runtime.grpcPort, 50062);
    assert.throws(
      () => loadConfig({ SANDBOX_CONCURRENCY: "0" }),
      (e: ConfigError) =>
        e.name === "ConfigError" && /'SANDBOX_CONCURRENCY' must be in \[1, 1024\]/.test(e.message),
    );
  });
});
