/**
 * The Python package (clients/python: the client, the TRL / verl / OpenRLHF adapters) against a real
 * mesh: the length, math and tool-call reward services and the trainer's ComputeAdvantages, on gRPC servers on free
 * ports, and `reward-mesh gateway` (the OpenRLHF endpoint, the real CLI process) in front of them; the Python unittest files (clients/python/tests) run with the repository's .venv/bin/python (or REWARD_MESH_PYTHON) as the
 * frameworks would call the adapters, and so does every ```python block of docs/frameworks/*.md and of
 * clients/python/README.md (each page must have one; ```py blocks need the framework and are not run).
 * Then the frameworks themselves, with the interpreter that has them (REWARD_MESH_PYTHON, else the
 * project's .venv): TRL's GRPOTrainer trained on CPU for two steps on a tiny local model with the mesh's
 * reward functions (and with MeshGRPOTrainer's CorrGRPO advantages), verl's reward managers and
 * compute_advantage with the registered estimators, OpenRLHF's remote-reward client against the gateway
 * (clients/python/tests/framework_*.py); each skips, naming the missing package, where it is not installed.
 * Also checks that the Python copy of the trainer's component presets matches the trainer's.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createLengthService, loadConfig as loadLengthConfig } from "@reward-mesh/length";
import { createMathService, loadConfig as loadMathConfig, type MathService } from "@reward-mesh/math";
import { createLimiter, type RunningGrpcServer, silentLogger, startGrpcServer } from "@reward-mesh/sdk";
import { createToolCallService, loadConfig as loadToolCallConfig } from "@reward-mesh/tool-call";
import {
  COMPONENT_PRESETS,
  DEFAULT_PYTHON,
  type RunningTrainerServer,
  serveTrainer,
} from "@reward-mesh/trainer";

/** REWARD_MESH_PYTHON, else the repository's .venv (bash scripts/bootstrap.sh --with-torch creates it). */
const PYTHON = process.env["REWARD_MESH_PYTHON"] || DEFAULT_PYTHON;
const root = fileURLToPath(new URL("..", import.meta.url));
/** The interpreter with TRL, verl (and OpenRLHF): the same, the project's .venv (or REWARD_MESH_PYTHON). */
const FRAMEWORK_PYTHON = PYTHON;
/** Which of the frameworks FRAMEWORK_PYTHON has (found, not imported: importing TRL takes seconds). */
const frameworks = (() => {
  const names = ["trl", "verl", "openrlhf"];
  const code = `import importlib.util as u; print(*[int(u.find_spec(m) is not None) for m in ${JSON.stringify(names)}])`;
  const r = spawnSync(FRAMEWORK_PYTHON, ["-c", code], { encoding: "utf8" });
  const found = (r.stdout ?? "").trim().split(" ");
  return Object.fromEntries(names.map((n, i) => [n, found[i] === "1"])) as Record<string, boolean>;
})();
const docs = join(root, "docs", "frameworks");
const pkg = join(root, "clients", "python");
const noGrpc = spawnSync(PYTHON, ["-c", "import grpc, google.protobuf"]).status !== 0;
// Only the verl estimators (and their snippet) need torch; the rest runs without it.
const noTorch = spawnSync(PYTHON, ["-c", "import torch, numpy"]).status !== 0;
/** Python lines that make `import torch` / `numpy` / `yaml` fail, as where they are not installed. */
const REFUSE_TORCH = [
  "import sys",
  "class Refuse:",
  "    def find_spec(self, name, path=None, target=None):",
  "        if name.split('.')[0] in ('torch', 'numpy', 'yaml'): raise ImportError('refused: ' + name)",
  "sys.meta_path.insert(0, Refuse())",
];

/** Runs `interpreter` (PYTHON) with `args` in clients/python; its exit code and output. */
export function python(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 240_000,
  interpreter = PYTHON,
) {
  return new Promise<{ code: number | null; out: string }>((resolve) => {
    const c = spawn(interpreter, args, {
      cwd: pkg,
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", PYTHONDONTWRITEBYTECODE: "1", ...env },
    });
    let out = "";
    c.stdout.on("data", (d: Buffer) => (out += d.toString()));
    c.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => c.kill("SIGKILL"), timeoutMs);
    c.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

const cli = join(root, "cli", "bin", "reward-mesh.mjs");

/** Starts `reward-mesh gateway` on a free port; resolves with its URL once it prints it. */
function startGateway(args: string[]): Promise<{ url: string; child: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, "gateway", ...args, "--port", "0"], {
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", REWARD_MESH_TELEMETRY: "off" },
    });
    let out = "";
    const timer = setTimeout(() => {
      child.kill("SIGTERM");
      reject(new Error(`reward-mesh gateway printed no address within 60 s:\n${out}`));
    }, 60_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /OpenRLHF reward endpoint on (\S+\/get_reward)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1]!, child });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`reward-mesh gateway exited ${code}:\n${out}`));
    });
  });
}

describe("the Python package against a running mesh", {
  skip: noGrpc && `${PYTHON} lacks grpcio or protobuf (bash scripts/bootstrap.sh --with-torch)`,
}, () => {
  let length: RunningGrpcServer;
  let math: RunningGrpcServer;
  let toolCall: RunningGrpcServer;
  let mathDef: MathService;
  let trainer: RunningTrainerServer;
  let gateway: { url: string; child: ChildProcess } | undefined;
  let runs: string;
  let env: Record<string, string>;

  before(async () => {
    const lengthConfig = loadLengthConfig({ LENGTH_MAX_LENGTH: "64", LENGTH_CACHE_LENGTH: "32" });
    length = await startGrpcServer(createLengthService(lengthConfig), {
      port: 0,
      limiter: createLimiter(8),
      logger: silentLogger,
    });
    mathDef = createMathService(loadMathConfig({}));
    math = await startGrpcServer(mathDef, { port: 0, limiter: createLimiter(8), logger: silentLogger });
    toolCall = await startGrpcServer(createToolCallService(loadToolCallConfig({})), {
      port: 0,
      limiter: createLimiter(8),
      logger: silentLogger,
    });
    runs = mkdtempSync(join(tmpdir(), "py-client-"));
    trainer = await serveTrainer({ outputDir: runs });
    const services = `length=${length.address},math=${math.address}`;
    gateway = await startGateway([
      "--components",
      "math/correct=1,length/length=0.01",
      "--services",
      services,
    ]);
    env = {
      REWARD_MESH_TEST_SERVICES: services,
      REWARD_MESH_TEST_TRAINER: trainer.address,
      REWARD_MESH_TEST_TOOL_CALL: toolCall.address,
      REWARD_MESH_TEST_GATEWAY: gateway.url,
    };
  });

  after(async () => {
    if (gateway && gateway.child.exitCode === null) {
      const exited = new Promise((r) => gateway!.child.once("exit", r));
      gateway.child.kill("SIGTERM");
      await exited;
    }
    await Promise.all([length?.close(), math?.close(), toolCall?.close(), trainer?.close()]);
    await mathDef?.pool.close();
    if (runs) rmSync(runs, { recursive: true, force: true });
  });

  it("passes the package's unittest suite (client, TRL, verl, OpenRLHF)", async () => {
    const r = await python(["-m", "unittest", "discover", "-s", "tests", "-t", ".", "-v"], env);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /^OK/m, r.out);
    // The ScoreBatch path and its fallback to ScoreStream (a real Python service without ScoreBatch) ran.
    for (const t of [
      "test_a_bad_rollout_gets_its_own_error_and_the_others_are_scored",
      "test_an_oversized_batch_is_refused_naming_the_limit_and_the_client_splits",
      "test_falls_back_to_score_stream_on_a_service_without_score_batch",
    ])
      assert.match(
        r.out,
        // (log lines may come between the name and "ok": `import verl` calls logging.basicConfig, so
        // grpcio's log of the UNIMPLEMENTED ScoreBatch of the service without it is printed)
        new RegExp(`^${t} \\(tests\\.test_client\\.ScoreBatchTest.*\\) \\.\\.\\. (.*\\n)*?ok$`, "m"),
        r.out,
      );
  });

  it("passes the suite without torch, numpy and PyYAML too (only the verl estimators' tests skip)", async () => {
    const code = [
      ...REFUSE_TORCH,
      "import unittest",
      "unittest.main(module=None, argv=['tests', 'discover', '-s', 'tests', '-t', '.'])",
    ].join("\n");
    const r = await python(["-c", code], env);
    assert.equal(r.code, 0, r.out);
    const skipped = /^OK \(skipped=(\d+)\)/m.exec(r.out);
    assert.ok(skipped, r.out);
    const ran = Number(/^Ran (\d+) tests/m.exec(r.out)?.[1]);
    assert.ok(
      ran - Number(skipped[1]) >= 30,
      `only ${ran - Number(skipped[1])} tests ran without torch:\n${r.out}`,
    );
  });

  const pages = [
    ...readdirSync(docs)
      .filter((f) => f.endsWith(".md"))
      .map((f) => join("docs", "frameworks", f)),
    join("clients", "python", "README.md"),
  ];
  for (const page of pages) {
    const needsTorch = page.endsWith("verl.md");
    it(`runs the Python snippet of ${page}`, {
      skip: needsTorch && noTorch && "torch is not installed",
    }, async () => {
      const md = readFileSync(join(root, page), "utf8");
      const snippets = [...md.matchAll(/^```python\n([\s\S]*?)^```\s*$/gm)].map((m) => m[1]!);
      assert.ok(snippets.length > 0, `${page} has no \`\`\`python block`);
      for (const [i, code] of snippets.entries()) {
        const file = join(runs, `${page.replaceAll("/", "_")}.${i}.py`);
        writeFileSync(file, code);
        const r = await python([file], {
          PYTHONPATH: pkg,
          REWARD_MESH_SERVICES: env["REWARD_MESH_TEST_SERVICES"]!,
          REWARD_MESH_TRAINER: env["REWARD_MESH_TEST_TRAINER"]!,
          REWARD_MESH_GATEWAY: env["REWARD_MESH_TEST_GATEWAY"]!,
        });
        assert.equal(r.code, 0, `${page} block ${i + 1}:\n${r.out}`);
      }
    });
  }

  /** Runs clients/python/tests/<file>.py with FRAMEWORK_PYTHON; asserts every test ran and passed. */
  async function frameworkTests(file: string, tests: string[]) {
    const t0 = Date.now();
    const r = await python(["-m", "unittest", `tests.${file}`, "-v"], env, 400_000, FRAMEWORK_PYTHON);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /^OK$/m, `${file}: not OK, or some tests skipped:\n${r.out}`);
    // (its output, progress bars with \r included, may come between the name and "ok")
    for (const t of tests)
      assert.match(
        r.out,
        new RegExp(`^${t} \\(tests\\.${file}\\..*\\) \\.\\.\\. (ok|[\\s\\S]*?^ok)$`, "m"),
        r.out,
      );
    console.log(`# ${file}: ${((Date.now() - t0) / 1000).toFixed(1)} s with ${FRAMEWORK_PYTHON}`);
    return r.out;
  }
  // The project's .venv has every framework (scripts/bootstrap.sh --with-torch, which npm test runs): a
  // missing one there is a failure. Only another interpreter named by REWARD_MESH_PYTHON may lack one.
  const lacks = (pkg: string) => {
    if (frameworks[pkg]) return false;
    assert.notEqual(
      FRAMEWORK_PYTHON,
      DEFAULT_PYTHON,
      `the project's ${DEFAULT_PYTHON} lacks ${pkg}: run 'bash scripts/bootstrap.sh --with-torch'`,
    );
    return `${FRAMEWORK_PYTHON} (REWARD_MESH_PYTHON) lacks ${pkg}: ${pkg === "openrlhf" ? "pip install --no-deps openrlhf==0.11.2" : `install python/requirements.lock`} into it`;
  };

  it("trains TRL's GRPOTrainer on CPU with the mesh's reward functions, then with MeshGRPOTrainer's CorrGRPO", {
    skip: lacks("trl"),
  }, async () => {
    const out = await frameworkTests("framework_trl", [
      "test_grpo_trainer_logs_each_component",
      "test_mesh_grpo_trainer_uses_corrgrpo_advantages",
      "test_mesh_grpo_trainer_refusals",
    ]);
    // TRL's own log lines carry each mesh component, and MeshGRPOTrainer's the mesh's advantages.
    assert.match(out, /TRL log: \{.*'rewards\/length\/length\/mean': /, out);
    assert.match(out, /TRL log: \{.*'mesh\/advantages\/mean': /, out);
  });

  it("runs verl's reward managers and compute_advantage with the registered (and installed) estimators", {
    skip: lacks("verl"),
  }, async () => {
    await frameworkTests("framework_verl", [
      "test_estimators_are_in_verls_registry",
      "test_naive_reward_manager_then_compute_advantage_corr_grpo",
      "test_batch_reward_manager_then_compute_advantage_s_grpo",
      "test_reward_loop_manager_scores_and_a_driver_that_scored_nothing_is_refused",
      "test_installed_driver_reads_the_reward_loops_components",
      "test_installed_driver_refusals",
    ]);
  });

  it("answers OpenRLHF's own remote-reward client (SingleTurnAgentExecutor): the gateway and a reward_func file", {
    skip: lacks("openrlhf"),
  }, async () => {
    await frameworkTests("framework_openrlhf", [
      "test_single_turn_executor_against_the_gateway",
      "test_single_turn_executor_with_a_reward_func_file",
    ]);
  });

  it("imports with grpcio and protobuf alone (torch, numpy, PyYAML refused)", async () => {
    const code = [
      ...REFUSE_TORCH,
      "import reward_mesh, reward_mesh.trl, reward_mesh.verl, reward_mesh.openrlhf",
      "r = reward_mesh.rollout(reward_mesh.math_task(['1']), 'x')",
      "print('ok', r.task.math.answers[0])",
    ].join("\n");
    const r = await python(["-c", code], {});
    assert.equal(r.code, 0, r.out);
    assert.equal(r.out.trim(), "ok 1");
  });

  it("keeps the trainer's component presets", async () => {
    const r = await python(
      ["-c", "import json; from reward_mesh.config import COMPONENT_PRESETS as P; print(json.dumps(P))"],
      {},
    );
    assert.equal(r.code, 0, r.out);
    const py = JSON.parse(r.out) as Record<string, Array<[string, string, number]>>;
    const ts = Object.fromEntries(
      Object.entries(COMPONENT_PRESETS).map(([k, v]) => [
        k,
        v.map((c) => [c.service, c.component, c.weight]),
      ]),
    );
    assert.deepEqual(py, ts);
  });
});
