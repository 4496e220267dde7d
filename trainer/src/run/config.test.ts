import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { COMPONENT_PRESETS, loadRunConfig, resolveRunConfig, withEpisodeEnvironment } from "./config.js";
import { loadTaskFile } from "./task-file.js";

const base = { components: "corrgrpo-code" };

describe("run config", () => {
  it("fills defaults and expands presets", () => {
    const c = resolveRunConfig({ ...base, run: { id: "r1" } });
    assert.equal(c.runId, "r1");
    assert.equal(c.groupSize, 8);
    assert.equal(c.estimator.name, "grpo_covariance_coefficient");
    assert.equal(c.loss.type, "dapo");
    assert.equal(c.loss.epsHigh, 0.28, "DAPO clip-higher default");
    assert.deepEqual(c.components, COMPONENT_PRESETS["corrgrpo-code"]);
    assert.deepEqual(
      c.components.map((x) => x.weight),
      [0.6, 0.3, 0.25, 0.2, 0.05, 0.05, 0.05],
    );
  });

  it("episodes: off by default; with an environment, its defaults", () => {
    assert.equal(resolveRunConfig(base).episodes, null);
    assert.equal(resolveRunConfig({ ...base, episodes: null }).episodes, null);
    assert.deepEqual(
      resolveRunConfig({ ...base, episodes: { environment: "127.0.0.1:50066", maxTurns: 3 } }).episodes,
      {
        environment: "127.0.0.1:50066",
        maxTurns: 3,
        maxTokens: 2048,
        concurrency: 16,
        callTimeoutMs: 30_000,
        tools: "full",
      },
    );
  });

  it("episodes without an environment: left for the CLI to fill in (withEpisodeEnvironment)", () => {
    const c = resolveRunConfig({ ...base, episodes: { maxTurns: 4 } });
    assert.equal(c.episodes?.environment, undefined);
    assert.equal(c.episodes?.maxTurns, 4);
    const filled = withEpisodeEnvironment(c, "127.0.0.1:7001");
    assert.equal(filled.episodes?.environment, "127.0.0.1:7001");
    assert.equal(filled.episodes?.maxTurns, 4);
    // An explicit environment is kept; a run without episodes is left alone.
    const own = resolveRunConfig({ ...base, episodes: { environment: "10.0.0.2:50066" } });
    assert.equal(withEpisodeEnvironment(own, "127.0.0.1:7001").episodes?.environment, "10.0.0.2:50066");
    assert.equal(withEpisodeEnvironment(resolveRunConfig(base), "127.0.0.1:7001").episodes, null);
  });

  it("accepts a mix of presets and explicit components, and estimator aliases", () => {
    const c = resolveRunConfig({
      components: ["rlla-tool", { service: "length", component: "overlong", weight: 0.5 }],
      estimator: "corr_grpo",
    });
    assert.equal(c.components.length, 5);
    assert.equal(c.estimator.name, "grpo_covariance_coefficient");
  });

  it("names the key of every bad value", () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /'components' is required/],
      [{ ...base, groupSize: 1 }, /'groupSize' must be an integer in \[2, 1024\], got 1/],
      [
        { ...base, loss: { type: "ppo" } },
        /'loss\.type' must be one of grpo, dr_grpo, dapo, cispo, bnpo, got "ppo"/,
      ],
      [{ ...base, loss: { epsLow: "x" } }, /'loss\.epsLow' must be a number in \[0, 1\], got "x"/],
      [{ ...base, estimator: "ppo" }, /'estimator\.name' .*ppo/],
      [{ ...base, estimator: { name: "grpo", options: { stdMode: "weird" } } }, /'estimator'.*stdMode/],
      [{ ...base, sgrpo: { p: 0.5 } }, /'sgrpo\.p' must be a number in \[0, 0\.4999999\]/],
      [{ ...base, sgrpo: {} }, /'sgrpo\.p' is required/],
      [{ ...base, learner: "http://x" }, /'learner' must be 'embedded', 'torch', 'grpc:\/\/host:port'/],
      [{ ...base, groups: { missing: "retry" } }, /'groups\.missing' must be one of drop, impute/],
      [{ ...base, run: { id: "a.b" } }, /'run\.id' must match/],
      [{ ...base, colour: "red" }, /'colour' is not a known key/],
      [{ ...base, episodes: { environment: "localhost" } }, /'episodes\.environment' must match/],
      [
        { ...base, episodes: { environment: "127.0.0.1:1", maxTurns: 0 } },
        /'episodes\.maxTurns' must be an integer in \[1, 64\], got 0/,
      ],
      [
        { ...base, episodes: { environment: "127.0.0.1:1", concurrency: 2000 } },
        /'episodes\.concurrency' must be an integer in \[1, 1024\], got 2000/,
      ],
      [
        { ...base, episodes: { environment: "127.0.0.1:1", turns: 3 } },
        /'episodes\.turns' is not a known key/,
      ],
      [
        { components: [{ service: "nope", component: "x" }] },
        /'components\[0\]\.service' unknown service 'nope': this build's services are agentdojo, ast, [a-z, -]*\blength\b.*'reward-mesh serve --remote'/,
      ],
      [{ components: ["rlla-tool", "rlla-tool"] }, /'components' lists tool-call\/format twice/],
      [{ components: "no-such-preset" }, /'components\[0\]' unknown preset "no-such-preset"/],
      [
        { ...base, tasks: { sets: ["code", "poetry"] } },
        /'tasks\.sets\[1\]' unknown task set 'poetry' \(known: custom, code, tool_call, agent, math\)/,
      ],
      [{ ...base, tasks: { source: "tasks.jsonl" } }, /'tasks\.source' must be one of builtin/],
      [
        { ...base, rewardNoise: { p: 0.1, components: ["tool-call/format"] } },
        /'rewardNoise\.components\[0\]' 'tool-call\/format' is not one of the configured components/,
      ],
    ];
    for (const [doc, re] of cases) assert.throws(() => resolveRunConfig(doc), re, JSON.stringify(doc));
  });
});

it("the example configuration in trainer/examples is valid", async () => {
  const { loadRunConfig } = await import("./config.js");
  const c = loadRunConfig(new URL("../../examples/tool-agent.yaml", import.meta.url).pathname);
  assert.equal(c.runId, "tool-agent-example");
  assert.deepEqual(c.tasks.sets, ["tool_call", "agent"]);
  assert.equal(c.components.length, 6);
  assert.deepEqual(c.validation, { describeTimeoutMs: 10_000, logIntervalMs: 10_000 });
});

it("validation keys have defaults and are checked, naming the key", () => {
  const base = { components: "overlong" };
  assert.deepEqual(resolveRunConfig(base).validation, { describeTimeoutMs: 10_000, logIntervalMs: 10_000 });
  assert.equal(
    resolveRunConfig({ ...base, validation: { describeTimeoutMs: 500 } }).validation.describeTimeoutMs,
    500,
  );
  assert.throws(
    () => resolveRunConfig({ ...base, validation: { describeTimeoutMs: 50 } }),
    /'validation\.describeTimeoutMs' must be a number in \[100, 600000\], got 50/,
  );
  assert.throws(
    () => resolveRunConfig({ ...base, validation: { logIntervalMs: -1 } }),
    /'validation\.logIntervalMs' must be a number >= 0, got -1/,
  );
  assert.throws(
    () => resolveRunConfig({ ...base, validation: { enabled: false } }),
    /'validation\.enabled' is not a known key \(known: describeTimeoutMs, logIntervalMs\)/,
  );
});

it("the text-policy example config and its task file are valid", () => {
  const c = loadRunConfig(new URL("../../examples/text-tool-call.yaml", import.meta.url).pathname);
  assert.equal(c.learner.kind, "torch");
  assert.equal(c.tasks.source, "jsonl");
  const tasks = loadTaskFile(new URL("../../examples/tool-call-tasks.jsonl", import.meta.url).pathname);
  assert.deepEqual(
    tasks.map((t) => t.id),
    ["weather-paris", "time-tokyo"],
  );
});

it("learner, task-file and generation keys are validated, naming the key", () => {
  const base = { components: "rlla-tool" };
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ ...base, tasks: { source: "jsonl" } }, /'tasks\.path' is required with source 'jsonl'/],
    [
      { ...base, tasks: { source: "builtin", path: "x.jsonl" } },
      /'tasks\.path' is only read with source 'jsonl'/,
    ],
    [{ ...base, learner: { kind: "torch", device: "gpu" } }, /'learner\.device' must match/],
    [{ ...base, learner: { kind: "torch", dtype: "int8" } }, /'learner\.dtype' must be one of auto, float32/],
    [{ ...base, learner: { kind: "torch", warmup: { steps: 3 } } }, /'learner\.warmup\.file' is required/],
    [{ ...base, learner: { kind: "torch", lora: 4 } }, /'learner\.lora' is not a known key/],
    [{ ...base, learner: { kind: "grpc" } }, /'learner\.address' is required/],
    [{ ...base, generation: { topP: 1.5 } }, /'generation\.topP' must be a number in/],
    [{ ...base, generation: { stop: [""] } }, /'generation\.stop' must be a list of non-empty strings/],
  ];
  for (const [doc, re] of cases) assert.throws(() => resolveRunConfig(doc), re, JSON.stringify(doc));
  const t = resolveRunConfig({ ...base, learner: "torch" }).learner;
  assert.deepEqual(t, {
    kind: "torch",
    model: "builtin:tiny",
    device: "auto",
    dtype: "auto",
    microBatchSize: 0,
    gradientCheckpointing: false,
    loraRank: 0,
    threads: 0,
    warmup: null,
  });
  assert.deepEqual(resolveRunConfig({ ...base, learner: "grpc://gpu-1:50070" }).learner, {
    kind: "grpc",
    address: "gpu-1:50070",
  });
});

describe("run config: fuzz findings", () => {
  it("names that are Object members are unknown presets, task sets and services, not crashes", () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ components: "__proto__" }, /^'components\[0\]' unknown preset "__proto__"/],
      [{ components: [{ preset: "toString" }] }, /^'components\[0\]\.preset' unknown preset "toString"/],
      [{ ...base, tasks: { sets: ["constructor"] } }, /^'tasks\.sets\[0\]' unknown task set 'constructor'/],
      [
        { components: [{ service: "constructor", component: "x" }] },
        /^'components\[0\]\.service' unknown service 'constructor'/,
      ],
      [
        { components: [{ service: "0", component: "x" }], services: JSON.parse('{"__proto__": ["code"]}') },
        /^'services\.__proto__' is not a valid service name/,
      ],
    ];
    for (const [doc, re] of cases)
      assert.throws(
        () => resolveRunConfig(doc),
        { name: "RunConfigError", message: re },
        JSON.stringify(doc),
      );
  });

  it("a bad value too deep or cyclic to print still gives a message naming the key", () => {
    let deep: unknown = 1;
    for (let d = 0; d < 50_000; d++) deep = [deep];
    assert.throws(() => resolveRunConfig({ ...base, steps: deep }), {
      name: "RunConfigError",
      message: "'steps' must be an integer in [1, 1000000], got a list too deep or cyclic to print",
    });
    assert.throws(() => resolveRunConfig({ ...base, estimator: { options: { epsilon: deep } } }), {
      name: "RunConfigError",
      message:
        /^'estimator' 'options\.epsilon' must be a finite number ≥ 0, got a list too deep or cyclic to print/,
    });
    const cyclic: unknown[] = [];
    cyclic.push(cyclic);
    assert.throws(() => resolveRunConfig({ components: [cyclic] }), {
      message: /^'components\[0\]' must be a preset name .* got a list too deep or cyclic to print$/,
    });
    assert.throws(() => resolveRunConfig({ ...base, steps: Number.NaN }), {
      message: /^'steps' must be an integer .*, got NaN$/,
    });
  });

  it("YAML nested too deeply to parse, too big to parse quickly, or with a cyclic alias, is a RunConfigError", () => {
    const dir = mkdtempSync(join(tmpdir(), "run-config-"));
    try {
      const path = join(dir, "run.yaml");
      writeFileSync(path, `components: ${"[".repeat(5000)}${"]".repeat(5000)}\n`);
      assert.throws(() => loadRunConfig(path), {
        name: "RunConfigError",
        message: /^'--config' is not valid YAML: nested too deeply to parse/,
      });
      writeFileSync(
        path,
        `components:\n  - {service: length, component: overlong${", : x".repeat(40_000)}}\n`,
      );
      assert.throws(() => loadRunConfig(path), {
        name: "RunConfigError",
        message: "'--config' is 200055 bytes; a run configuration may have at most 65536",
      });
      writeFileSync(path, "components: &c [*c]\n");
      assert.throws(() => loadRunConfig(path), {
        name: "RunConfigError",
        message: /^'components\[0\]' must be a preset name .* got a list too deep or cyclic to print$/,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
