/**
 * `reward-mesh gateway` (a real process) in front of real math and length services (gRPC on port 0, HTTP/JSON
 * on too): a request in OpenRLHF's exact shape (`query`, `prompts`, `labels`) gets `rewards`, `scores` and the
 * per-component `extra_logs`; bad requests get 400 naming the key; the services themselves answer HTTP/JSON.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createLengthService, loadConfig as loadLengthConfig } from "@reward-mesh/length";
import { createMathService, loadConfig as loadMathConfig, type MathService } from "@reward-mesh/math";
import { type RunningService, silentLogger, startRewardService } from "@reward-mesh/sdk";
import { DEFAULT_PYTHON } from "@reward-mesh/trainer";
import { DEFAULT_PAD_TOKENS, responseOf } from "../src/gateway/openrlhf.js";

const BIN = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));
/** OpenRLHF's remote-RM client code path (copied from OpenRLHF), run by the repository's .venv (torch). */
const OPENRLHF_CLIENT = fileURLToPath(new URL("./fixtures/openrlhf_remote_rm.py", import.meta.url));
const PYTHON = process.env["REWARD_MESH_PYTHON"] || DEFAULT_PYTHON;

/** Spawns `reward-mesh gateway ARGS --port 0`; resolves with its /get_reward URL once it listens. */
async function spawnGateway(
  args: readonly string[],
): Promise<{ url: string; child: ChildProcess; out: () => string }> {
  const child = spawn(process.execPath, [BIN, "gateway", ...args, "--port", "0"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let text = "";
  child.stdout!.on("data", (d: Buffer) => (text += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (text += d.toString()));
  const t0 = Date.now();
  for (;;) {
    const m = /(http:\/\/\S+\/get_reward)/.exec(text);
    if (m) return { url: m[1]!, child, out: () => text };
    if (child.exitCode !== null || Date.now() - t0 > 60_000) {
      child.kill("SIGTERM");
      throw new Error(`gateway did not start:\n${text}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function stopGateway(g: { child: ChildProcess; out: () => string }): Promise<void> {
  if (g.child.exitCode !== null) return;
  const exited = new Promise<number | null>((r) => g.child.once("exit", (code) => r(code)));
  g.child.kill("SIGTERM");
  assert.equal(await exited, 0, g.out());
}

async function post(url: string, body: unknown) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  // Strict JSON (no NaN token): JSON.parse reads every answer.
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe("reward-mesh gateway: OpenRLHF remote reward endpoint over a real mesh", () => {
  let math: RunningService;
  let mathDef: MathService;
  let length: RunningService;
  let gateway: ChildProcess;
  let out = "";
  let url: string;

  before(async () => {
    const mc = loadMathConfig({
      MATH_GRPC_PORT: "0",
      MATH_WORKER: "false",
      MATH_WORKERS: "1",
      MATH_HTTP_PORT: "0",
    });
    mathDef = createMathService(mc);
    math = await startRewardService(mathDef, mc.runtime, silentLogger);
    const lc = loadLengthConfig({
      LENGTH_GRPC_PORT: "0",
      LENGTH_WORKER: "false",
      LENGTH_MAX_LENGTH: "20",
      LENGTH_CACHE_LENGTH: "10",
    });
    length = await startRewardService(createLengthService(lc), lc.runtime, silentLogger);
    gateway = spawn(
      process.execPath,
      [
        BIN,
        "gateway",
        "--components",
        "math/correct=1,math/format=0.5,length/overlong=1",
        "--services",
        `math=${math.grpc.address},length=${length.grpc.address}`,
        "--port",
        "0",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    gateway.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    gateway.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const t0 = Date.now();
    for (;;) {
      const m = /OpenRLHF reward endpoint on (http:\/\/\S+)\/get_reward/.exec(out);
      if (m) {
        url = `${m[1]}/get_reward`;
        break;
      }
      if (gateway.exitCode !== null) throw new Error(`gateway exited ${gateway.exitCode}:\n${out}`);
      if (Date.now() - t0 > 60_000) throw new Error(`gateway did not start:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(async () => {
    if (gateway.exitCode === null) {
      const exited = new Promise((r) => gateway.once("exit", r));
      gateway.kill("SIGTERM");
      await exited;
    }
    await math.close(500);
    await mathDef.pool.close();
    await length.close(500);
  });

  it("answers OpenRLHF's request shape with rewards, scores and per-component extra_logs", async () => {
    const prompt = "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n";
    const body = {
      query: [
        `${prompt}6*7 = 42, so the answer is \\boxed{42}<|im_end|>`,
        `${prompt}The answer is \\boxed{41}<|im_end|>`,
        "Say fifteen letters: abcdefghijklmno",
      ],
      prompts: [prompt, prompt, "Say fifteen letters: "],
      labels: ["42", "42", { id: "letters", domain: "custom", custom: {} }],
    };
    const r = await post(url, body);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    // math: correct 1 + 0.5·format 1; wrong: 0.5·format; length (custom domain only): soft overlong
    // penalty of 15 characters with max 20, cache 10 = −(15 − 10)/10. `scores` is the first component
    // (math/correct; 0 where it does not apply), so OpenRLHF's dynamic filtering sees 0/1; a component that
    // does not apply is 0 in extra_logs, with its "/applicable" key 0 beside it (never NaN or null: OpenRLHF
    // makes a tensor of each value and logs the batch mean).
    assert.deepEqual(r.json, {
      rewards: [1.5, 0.5, -0.5],
      scores: [1, 0, 0],
      extra_logs: {
        "math/correct": [1, 0, 0],
        "math/correct/applicable": [1, 1, 0],
        "math/format": [1, 1, 0],
        "math/format/applicable": [1, 1, 0],
        "length/overlong": [0, 0, -0.5],
        "length/overlong/applicable": [0, 0, 1],
      },
    });
    // Integral values keep a decimal point, so Python's json reads floats (float tensors in OpenRLHF).
    const raw = await fetch(url, { method: "POST", body: JSON.stringify(body) }).then((x) => x.text());
    assert.match(raw, /"rewards":\[1\.5,0\.5,-0\.5\],"scores":\[1\.0,0\.0,0\.0\]/);
    assert.match(
      raw,
      /"length\/overlong":\[0\.0,0\.0,-0\.5\],"length\/overlong\/applicable":\[0\.0,0\.0,1\.0\]/,
    );
    // OpenRLHF's single-query calls (one per sample).
    const one = await post(url, { query: [body.query[0]], prompts: [prompt], labels: ["42"] });
    assert.deepEqual(one.json["rewards"], [1.5]);
  });

  it("OpenRLHF's own client path (Python json, torch.tensor per sample, batch merge, logged mean) takes every answer", async (t) => {
    // OpenRLHF's code (commit 3c3be62), copied into the fixture, run by PYTHON (with torch) against
    // this gateway: one request per sample, as OpenRLHF sends them, including queries where a component
    // does not apply (math on a custom task, length on math tasks).
    if (spawnSync(PYTHON, ["-c", "import torch"]).status !== 0)
      return t.skip(`${PYTHON} has no torch (bash scripts/bootstrap.sh --with-torch creates .venv)`);
    const prompt = "Q: 6*7? A: ";
    const samples = [
      [`${prompt}\\boxed{42}`, prompt, "42"],
      [`${prompt}\\boxed{41}`, prompt, "42"],
      ["Say fifteen letters: abcdefghijklmno", "Say fifteen letters: ", { custom: {} }],
    ];
    // Not spawnSync: the services answer from this process's event loop.
    const child = spawn(PYTHON, [OPENRLHF_CLIENT, url, JSON.stringify(samples)]);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const status = await new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const r = { status, stdout, stderr };
    const got = JSON.parse(r.stdout) as {
      keys: string[];
      dtypes: Record<string, string>;
      means: Record<string, number>;
    };
    const components = ["math/correct", "math/format", "length/overlong"];
    assert.deepEqual(
      got.keys,
      ["reward", "score", ...components, ...components.map((c) => `${c}/applicable`)].sort(),
    );
    for (const [k, d] of Object.entries(got.dtypes)) assert.equal(d, "torch.float32", k);
    const close = (k: string, v: number) =>
      assert.ok(Math.abs(got.means[k]! - v) < 1e-6, `${k}: ${got.means[k]} vs ${v}`);
    close("reward", (1.5 + 0.5 - 0.5) / 3);
    close("math/correct", 1 / 3);
    close("math/correct/applicable", 2 / 3);
    close("length/overlong", -0.5 / 3);
    close("length/overlong/applicable", 1 / 3);
  });

  it("cuts the response as leniently as OpenRLHF's math_reward_func.py: pads, re-decoded or truncated prompts are no 400", async () => {
    const prompt = "<|im_start|>user\nWhat is 6 * 7 ?<|im_end|>\n<|im_start|>assistant\n";
    const body = {
      query: [
        // Older OpenRLHF: the left-padded batch decoded with its special tokens, right padding too.
        `<|endoftext|><|endoftext|>${prompt}\\boxed{42}<|im_end|><|endoftext|>`,
        // decode(encode(prompt)) with clean_up_tokenization_spaces: "7 ?" became "7?".
        `${prompt.replace("7 ?", "7?")}\\boxed{42}`,
        // A BOS token the dataset's prompt does not have.
        `<s>${prompt}The answer: \\boxed{41}`,
        // A prompt truncated to the prompt budget.
        `${prompt.slice(0, 12)}\\boxed{42}`,
      ],
      prompts: [prompt, prompt, prompt, prompt],
      labels: ["42", "42", "42", "42"],
    };
    const r = await post(url, body);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.deepEqual((r.json["extra_logs"] as Record<string, number[]>)["math/correct"], [1, 1, 0, 1]);
  });

  it("responseOf: pads stripped, the text after the prompt's first occurrence, else the whole query", () => {
    const pads = DEFAULT_PAD_TOKENS;
    assert.equal(responseOf("<pad><pad>Q: 1+1? A: 2</s>", "Q: 1+1? ", pads), "A: 2");
    assert.equal(responseOf("<s>Q? Q? again", "Q? ", pads), "Q? again");
    assert.equal(responseOf("Q ? A", "Q? ", pads), "Q ? A");
    assert.equal(responseOf("<|endoftext|>A", "", pads), "A");
    assert.equal(responseOf("<pad>Q A", "<pad>Q ", pads), "A");
    assert.equal(responseOf("<pad>Q A", "Q ", []), "A");
    assert.equal(responseOf("<pad>A<pad>", "", []), "<pad>A<pad>");
  });

  it("the query-only request of older OpenRLHF: 400 naming the need for labels with math, scored with --domain custom", async () => {
    const queryOnly = { query: ["Say fifteen letters: abcdefghijklmno"] };
    const r = await post(url, queryOnly);
    assert.equal(r.status, 400);
    assert.match(String(r.json["error"]), /^'labels' is required with --domain math .* --domain custom/);
    const g = await spawnGateway([
      "--components",
      "length/overlong=1",
      "--domain",
      "custom",
      "--services",
      `length=${length.grpc.address}`,
    ]);
    try {
      const ok = await post(g.url, queryOnly);
      assert.equal(ok.status, 200, JSON.stringify(ok.json));
      // The whole query is the response: 35 characters, max 20 → the full penalty −1.
      assert.deepEqual(ok.json, {
        rewards: [-1],
        scores: [-1],
        extra_logs: { "length/overlong": [-1], "length/overlong/applicable": [1] },
      });
      // --score-component total: scores = rewards; an unknown one is refused at start.
      const total = await spawnGateway([
        "--components",
        "length/overlong=2",
        "--domain",
        "custom",
        "--score-component",
        "total",
        "--services",
        `length=${length.grpc.address}`,
      ]);
      try {
        assert.deepEqual((await post(total.url, queryOnly)).json["scores"], [-2]);
      } finally {
        await stopGateway(total);
      }
    } finally {
      await stopGateway(g);
    }
  });

  it("a domain no service scores is an error, not a silent 0: at start for --domain, 400 for a query", async () => {
    const r = await post(url, {
      query: ["Q A"],
      prompts: ["Q "],
      labels: [{ id: "t", domain: "biology", custom: {} }],
    });
    assert.equal(r.status, 400);
    assert.match(
      String(r.json["error"]),
      /^'labels\[0\]': the task's domain 'biology' is scored by none of the services \(math: math; length: code, tool_call, agent, custom\)/,
    );
    const bad = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
      const c = spawn(
        process.execPath,
        [
          BIN,
          "gateway",
          "--components",
          "math/correct=1",
          "--domain",
          "code",
          "--services",
          `math=${math.grpc.address}`,
          "--port",
          "0",
        ],
        { stdio: ["ignore", "ignore", "pipe"] },
      );
      let stderr = "";
      c.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
      c.once("exit", (status) => resolve({ status, stderr }));
    });
    assert.equal(bad.status, 2, bad.stderr);
    assert.match(bad.stderr, /'--domain code' is scored by none of the services \(math: math\)/);
  });

  it("refuses a malformed request with 400 naming the key", async () => {
    const cases: [unknown, RegExp][] = [
      [{ prompts: [] }, /'query' is required/],
      [{ query: ["a", 3] }, /'query\[1\]' must be a string/],
      [{ query: ["ab"], prompts: ["a", "b"], labels: ["1"] }, /'prompts' must be a list of 1 strings/],
      [{ query: ["ab"], prompts: ["a"], labels: [null] }, /'labels\[0\]' is required for math/],
      [
        { query: ["ab"], prompts: ["a"], labels: [{ bogus: 1 }] },
        /'labels\[0\]' is an object but not a rewardmesh\.v1\.Task/,
      ],
      // The math service's own INVALID_ARGUMENT, placed on the query it came from.
      [
        { query: ["ab", "cd"], prompts: ["a", "c"], labels: ["1", { id: "t", math: {} }] },
        /^reward service: INVALID_ARGUMENT: math: query\[1\]: 'rollout\.task\.math\.answers' must hold/,
      ],
      ["[1,2]", /must be a JSON object/],
      ["{nope", /not valid JSON/],
    ];
    for (const [body, re] of cases) {
      const r = await post(url, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match(String(r.json["error"]), re);
    }
    const health = await fetch(url.replace("/get_reward", "/healthz"));
    assert.equal(health.status, 200);
  });

  it("takes the components and weights from a run config; refuses a component no service offers", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gateway-"));
    const config = join(dir, "run.yaml");
    writeFileSync(
      config,
      "components:\n  - {service: math, component: correct, weight: 1}\n  - {service: math, component: format, weight: 0.25}\n",
    );
    const g = spawn(
      process.execPath,
      [BIN, "gateway", "--config", config, "--services", `math=${math.grpc.address}`, "--port", "0"],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let text = "";
    g.stdout!.on("data", (d: Buffer) => (text += d.toString()));
    g.stderr!.on("data", (d: Buffer) => (text += d.toString()));
    const exited = new Promise<number | null>((r) => g.once("exit", (code) => r(code)));
    try {
      const t0 = Date.now();
      while (!/get_reward/.test(text)) {
        if (g.exitCode !== null || Date.now() - t0 > 60_000)
          throw new Error(`gateway did not start:\n${text}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.match(text, /\(math\/correct×1, math\/format×0\.25\)/);
      const u = /(http:\/\/\S+\/get_reward)/.exec(text)![1]!;
      const r = await post(u, { query: ["Q: 2+2? \\boxed{4}"], prompts: ["Q: 2+2? "], labels: ["4"] });
      assert.deepEqual(r.json, {
        rewards: [1.25],
        scores: [1],
        extra_logs: {
          "math/correct": [1],
          "math/correct/applicable": [1],
          "math/format": [1],
          "math/format/applicable": [1],
        },
      });
    } finally {
      g.kill("SIGTERM");
      assert.equal(await exited, 0, text);
      rmSync(dir, { recursive: true, force: true });
    }
    // A child process, not spawnSync: the services answer from this test's event loop.
    const bad = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
      const c = spawn(
        process.execPath,
        [
          BIN,
          "gateway",
          "--components",
          "math/speed=1",
          "--services",
          `math=${math.grpc.address}`,
          "--port",
          "0",
        ],
        { stdio: ["ignore", "ignore", "pipe"] },
      );
      let stderr = "";
      c.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
      c.once("exit", (status) => resolve({ status, stderr }));
    });
    assert.equal(bad.status, 2, bad.stderr);
    assert.match(
      bad.stderr,
      /component 'math\/speed' is not offered by 'math' \(its components: correct, format\)/,
    );
    // Plaintext without a token on all interfaces only when asked for (fails before any service is called).
    const open = spawnSync(
      process.execPath,
      [BIN, "gateway", "--components", "math/correct=1", "--host", "0.0.0.0"],
      {
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    assert.equal(open.status, 2);
    assert.match(open.stderr, /'--host 0\.0\.0\.0' is not a loopback address: .* add --insecure/);
  });

  it("the services answer HTTP/JSON themselves (math on MATH_HTTP_PORT)", async () => {
    assert.ok(math.grpc.httpUrl);
    const r = await post(`${math.grpc.httpUrl}/rewardmesh.v1.RewardService/Score`, {
      rollout: {
        id: "r1",
        runId: "http",
        groupId: "g",
        groupSize: 1,
        task: { id: "t", math: { answers: ["\\frac{1}{2}"] } },
        response: "So x = \\boxed{0.5}",
      },
    });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    const comps = r.json["components"] as { name: string; value: number; status: string }[];
    assert.deepEqual(
      comps.map((c) => [c.name, c.value, c.status]),
      [
        ["correct", 1, "COMPONENT_STATUS_OK"],
        ["format", 1, "COMPONENT_STATUS_OK"],
      ],
    );
    const bad = await post(`${math.grpc.httpUrl}/rewardmesh.v1.RewardService/Score`, {
      rollout: {
        id: "r1",
        runId: "http",
        groupId: "g",
        groupSize: 1,
        task: { id: "t", math: {} },
        response: "1",
      },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.json["code"], "invalid_argument");
    assert.match(String(bad.json["message"]), /answers/);
  });
});
