/**
 * `Trainer.ComputeAdvantages` over a real gRPC server against `reward-mesh advantages` (the CLI's function and
 * the binary): the same batch and configuration give the same advantages and diagnostics to the last bit, for
 * every estimator, option, S-GRPO variant and the DAPO filter; bad requests are INVALID_ARGUMENT naming the field.
 */
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { create, toJson } from "@bufbuild/protobuf";
import {
  type Client,
  type ComputeAdvantagesRequest,
  ComputeAdvantagesRequestSchema,
  createGrpcClient,
  grpc,
  Trainer,
} from "@reward-mesh/proto";
import { computeAdvantages, runAdvantagesCli, serveTrainer } from "../src/index.js";
import {
  advantageConfigOf,
  COMPUTE_ADVANTAGES_LIMITS,
  computeAdvantagesMessage,
} from "../src/run/advantages-service.js";

type Row = (number | null)[];

/** A deterministic batch: K=3 components, groups of several sizes, binary and graded values, N/A cells, lengths. */
function batch(seed: number) {
  let s = seed;
  const rnd = () => {
    s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
    return s / 2_147_483_648;
  };
  const sizes = [4, 1, 6, 3, 5, 2];
  return sizes.map((G, g) => {
    const rewards: Row[] = [];
    for (let i = 0; i < G; i++) {
      rewards.push([
        rnd() < 0.5 ? 1 : 0,
        g === 3 ? 0.5 : Math.round(rnd() * 1000) / 1000, // group 3: a constant component
        g === 2 && i % 2 === 0 ? null : rnd() * 2 - 1, // group 2: N/A for some rollouts
      ]);
    }
    return { rewards, lengths: Array.from({ length: G }, () => 1 + Math.floor(rnd() * 300)) };
  });
}

const COMPONENTS = ["math/correct", "length/overlong", "code/tests"];
const WEIGHTS = [1, 0.5, 0.25];

/** CLI flags and the matching request configuration (proto JSON shape). */
const CASES: { readonly name: string; readonly argv: string[]; readonly req: Record<string, unknown> }[] = [
  { name: "grpo", argv: ["--estimator", "grpo"], req: { estimator: "grpo" } },
  {
    name: "grpo batch population verl ε",
    argv: [
      "--estimator",
      "grpo",
      "--scale",
      "batch",
      "--std-mode",
      "population",
      "--singleton",
      "verl",
      "--epsilon",
      "1e-4",
    ],
    req: {
      estimator: "grpo",
      options: { scale: "batch", stdMode: "population", singleton: "verl", epsilon: 1e-4 },
    },
  },
  { name: "dr_grpo", argv: ["--estimator", "dr_grpo"], req: { estimator: "dr_grpo" } },
  { name: "corr_grpo", argv: ["--estimator", "corr_grpo"], req: { estimator: "corr_grpo" } },
  {
    name: "corr_grpo outside floor",
    argv: [
      "--estimator",
      "corrgrpo",
      "--epsilon-placement",
      "outside",
      "--coefficient-sum-floor",
      "1",
      "--epsilon",
      "1e-3",
    ],
    req: {
      estimator: "corrgrpo",
      options: { epsilonPlacement: "outside", coefficientSumFloor: 1, epsilon: 1e-3 },
    },
  },
  {
    name: "corr_grpo no std",
    argv: ["--estimator", "grpo_covariance_coefficient", "--norm-by-std", "false"],
    req: { estimator: "grpo_covariance_coefficient", options: { normByStd: false } },
  },
  { name: "gdpo", argv: ["--estimator", "gdpo"], req: { estimator: "gdpo" } },
  {
    name: "gdpo token",
    argv: [
      "--estimator",
      "gdpo",
      "--batch-norm",
      "token",
      "--batch-epsilon",
      "1e-6",
      "--std-mode",
      "population",
    ],
    req: { estimator: "gdpo", options: { batchNorm: "token", batchEpsilon: 1e-6, stdMode: "population" } },
  },
  {
    name: "gdpo_covariance_coefficient",
    argv: ["--estimator", "gdpo_covariance_coefficient", "--epsilon-placement", "outside"],
    req: { estimator: "gdpo_covariance_coefficient", options: { epsilonPlacement: "outside" } },
  },
  {
    name: "mo_grpo",
    argv: ["--estimator", "mo_grpo", "--epsilon", "1e-5"],
    req: { estimator: "mo_grpo", options: { epsilon: 1e-5 } },
  },
  {
    name: "grpo + S-GRPO code + DAPO",
    argv: ["--estimator", "grpo", "--p", "0.15", "--dynamic-sampling"],
    req: { estimator: "grpo", sgrpo: { p: 0.15 }, dynamicSampling: {} },
  },
  {
    name: "corr_grpo + S-GRPO dr_grpo on a component + DAPO on a component",
    argv: [
      "--estimator",
      "corr_grpo",
      "--p",
      "0.1",
      "--sgrpo-variant",
      "dr_grpo",
      "--sgrpo-component",
      "math/correct",
      "--sgrpo-threshold",
      "0.5",
      "--dynamic-sampling-component",
      "1",
    ],
    req: {
      estimator: "corr_grpo",
      sgrpo: {
        p: 0.1,
        variant: "dr_grpo",
        component: { case: "componentName", value: "math/correct" },
        successThreshold: 0.5,
      },
      dynamicSampling: { component: { case: "componentIndex", value: 1 } },
    },
  },
];

function requestOf(
  groups: ReturnType<typeof batch>,
  config: Record<string, unknown>,
): ComputeAdvantagesRequest {
  return create(ComputeAdvantagesRequestSchema, {
    ...(config as object),
    components: COMPONENTS,
    weights: WEIGHTS,
    diagnostics: true,
    groups: groups.map((g, gi) => ({
      groupId: `g${gi}`,
      rollouts: g.rewards.map((row, i) => ({
        rolloutId: `g${gi}-r${i}`,
        values: row.map((v) => v ?? 0),
        notApplicable: row.some((v) => v === null) ? row.map((v) => v === null) : [],
        length: g.lengths[i]!,
      })),
    })),
  } as Parameters<typeof create<typeof ComputeAdvantagesRequestSchema>>[1]);
}

/** Bitwise equality; the CLI's JSON prints −0 as 0, so a CLI 0 matches either zero. */
function sameBits(rpc: number, cli: number, what: string): void {
  if (cli === 0 && rpc === 0) return;
  const a = new Float64Array([rpc]);
  const b = new Float64Array([cli]);
  assert.deepEqual(new Uint32Array(a.buffer), new Uint32Array(b.buffer), `${what}: rpc ${rpc} ≠ cli ${cli}`);
}

function sameArrayBits(rpc: readonly number[], cli: readonly number[], what: string): void {
  assert.equal(rpc.length, cli.length, `${what}: length`);
  for (const [i, v] of rpc.entries()) sameBits(v, cli[i]!, `${what}[${i}]`);
}

describe("Trainer.ComputeAdvantages", () => {
  let server: Awaited<ReturnType<typeof serveTrainer>>;
  let client: Client<typeof Trainer>;
  before(async () => {
    server = await serveTrainer({ outputDir: "runs-that-do-not-exist" });
    client = createGrpcClient(Trainer, server.address);
  });
  after(async () => {
    client.close();
    await server.close();
  });

  it("equals `reward-mesh advantages` to the last bit for every estimator, option and step", async () => {
    for (const [c, kase] of CASES.entries()) {
      const groups = batch(7 + c);
      const cliInput = JSON.stringify({ components: COMPONENTS, weights: WEIGHTS, groups });
      const r = await runAdvantagesCli([...kase.argv, "--diagnostics"], cliInput);
      assert.equal(r.exitCode, 0, `${kase.name}: ${r.stderr}`);
      // biome-ignore lint/suspicious/noExplicitAny: parsed CLI JSON.
      const cli = JSON.parse(r.stdout) as any;
      const req = requestOf(groups, kase.req);
      const res = await client.computeAdvantages(req, { timeoutMs: 10_000 });
      assert.equal(res.estimator, cli.estimator, kase.name);
      assert.deepEqual(res.components, COMPONENTS);
      assert.equal(res.groups.length, groups.length);
      // The engine itself (no JSON in between): bitwise, the sign of zero included.
      const direct = computeAdvantages(
        { components: COMPONENTS, weights: WEIGHTS, groups },
        // biome-ignore lint/suspicious/noExplicitAny: the untyped config, as the CLI compiles it.
        advantageConfigOf(req) as any,
      );
      res.groups.forEach((g, gi) => {
        const what = `${kase.name} group ${gi}`;
        const cg = cli.groups[gi];
        assert.equal(g.groupId, `g${gi}`);
        assert.deepEqual(
          g.rolloutIds,
          groups[gi]!.rewards.map((_, i) => `g${gi}-r${i}`),
        );
        sameArrayBits(g.advantages, cg.advantages, `${what} advantages`);
        assert.deepEqual(
          new Uint32Array(new Float64Array(g.advantages).buffer),
          new Uint32Array(new Float64Array(direct.groups[gi]!.advantages).buffer),
          `${what}: rpc = engine bit for bit`,
        );
        assert.equal(g.degenerate, cg.degenerate === true, `${what} degenerate`);
        assert.equal(g.kept, cg.kept ?? true, `${what} kept`);
        const d = g.diagnostics!;
        const cd = cg.diagnostics;
        assert.equal(d.groupSize, cd.groupSize);
        sameArrayBits(d.weights, cd.weights, `${what} weights`);
        assert.deepEqual(d.constantComponents, cd.constantComponents);
        sameArrayBits(d.centeredTotal, cd.centeredTotal, `${what} centeredTotal`);
        sameArrayBits(d.covariance, cd.covariance.flat(), `${what} covariance`);
        sameArrayBits(d.correlation, cd.correlation.flat(), `${what} correlation`);
        sameBits(d.coefficientSum, cd.coefficientSum, `${what} coefficientSum`);
        if (cd.denominator === null) assert.equal(d.denominator, undefined, `${what} denominator unset`);
        else sameBits(d.denominator!, cd.denominator, `${what} denominator`);
        sameArrayBits(d.grpoShares!.rowShare, cd.grpoShares.rowShare, `${what} grpoShares`);
        sameArrayBits(d.corrGrpoShares!.diagonalShare, cd.corrGrpoShares.diagonalShare, `${what} corrShares`);
        if (cd.sgrpo === null) assert.equal(d.sgrpo, undefined);
        else {
          sameBits(d.sgrpo!.weight, cd.sgrpo.weight, `${what} sgrpo weight`);
          assert.equal(d.sgrpo!.successes, cd.sgrpo.successes);
          assert.equal(d.sgrpo!.gated, cd.sgrpo.gated);
          assert.equal(d.sgrpo!.variant, cd.sgrpo.variant);
        }
        assert.deepEqual(d.notApplicableDroppedComponents, cd.notApplicable.droppedComponents);
        assert.deepEqual(d.notApplicablePartialCounts, cd.notApplicable.partialCounts);
        assert.deepEqual(d.unscorableRollouts, cd.notApplicable.unscorableRollouts);
      });
    }
  });

  it("equals the reward-mesh binary's output (a real process) for CorrGRPO with S-GRPO", async () => {
    const groups = batch(99);
    const bin = fileURLToPath(new URL("../../cli/bin/reward-mesh.mjs", import.meta.url));
    const stdout = await new Promise<string>((resolve, reject) => {
      const child = execFile(
        process.execPath,
        [bin, "advantages", "--estimator", "corr_grpo", "--p", "0.15", "--weights", WEIGHTS.join(",")],
        { timeout: 60_000 },
        (err, out, errText) => (err ? reject(new Error(`${err.message}\n${errText}`)) : resolve(out)),
      );
      child.stdin!.end(JSON.stringify({ groups }));
    });
    const cli = JSON.parse(stdout) as { groups: { advantages: number[] }[] };
    const res = await client.computeAdvantages(
      requestOf(groups, { estimator: "corr_grpo", sgrpo: { p: 0.15 } }),
      { timeoutMs: 10_000 },
    );
    for (const [gi, g] of res.groups.entries())
      sameArrayBits(g.advantages, cli.groups[gi]!.advantages, `group ${gi}`);
    assert.ok(
      res.groups.some((g) => g.advantages.some((a) => a !== 0)),
      "some advantage is not 0",
    );
  });

  it("`reward-mesh advantages serve` answers HTTP/JSON (Connect) with the CLI's numbers, and 400 naming the field", async () => {
    const bin = fileURLToPath(new URL("../../cli/bin/reward-mesh.mjs", import.meta.url));
    const child = spawn(process.execPath, [bin, "advantages", "serve", "--port", "0", "--http-port", "0"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      const t0 = Date.now();
      const started = /on (\S+:\d+); HTTP\/JSON on (http:\/\/\S+);/;
      for (;;) {
        if (started.test(out)) break;
        if (child.exitCode !== null) throw new Error(`advantages serve exited ${child.exitCode}:\n${out}`);
        if (Date.now() - t0 > 60_000) throw new Error(`advantages serve did not start:\n${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const m = started.exec(out)!;
      const groups = batch(3);
      const cli = JSON.parse(
        (
          await runAdvantagesCli(
            ["--estimator", "gdpo", "--batch-norm", "token", "--p", "0.2", "--dynamic-sampling"],
            JSON.stringify({ components: COMPONENTS, weights: WEIGHTS, groups }),
          )
        ).stdout,
      ) as { groups: { advantages: number[]; kept: boolean }[] };
      const req = requestOf(groups, {
        estimator: "gdpo",
        options: { batchNorm: "token" },
        sgrpo: { p: 0.2 },
        dynamicSampling: {},
      });
      const post = (body: unknown) =>
        fetch(`${m[2]}/rewardmesh.v1.Trainer/ComputeAdvantages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const res = await post(toJson(ComputeAdvantagesRequestSchema, req));
      assert.equal(res.status, 200);
      const json = (await res.json()) as {
        estimator: string;
        groups: { advantages: number[]; kept: boolean }[];
      };
      assert.equal(json.estimator, "gdpo");
      for (const [gi, g] of json.groups.entries()) {
        sameArrayBits(g.advantages, cli.groups[gi]!.advantages, `http group ${gi}`);
        assert.equal(g.kept, cli.groups[gi]!.kept);
      }
      // The same request over gRPC on the printed port.
      const grpcClient = createGrpcClient(Trainer, m[1]!);
      try {
        const viaGrpc = await grpcClient.computeAdvantages(req, { timeoutMs: 10_000 });
        for (const [gi, g] of viaGrpc.groups.entries())
          sameArrayBits(g.advantages, json.groups[gi]!.advantages, `grpc group ${gi}`);
      } finally {
        grpcClient.close();
      }
      const bad = await post({
        estimator: "grpo",
        options: { epsilon_placement: "inside" },
        groups: [{ rollouts: [{ values: [1] }, { values: [0] }] }],
      });
      assert.equal(bad.status, 400);
      const err = (await bad.json()) as { code: string; message: string };
      assert.equal(err.code, "invalid_argument");
      assert.match(err.message, /^'options\.epsilon_placement' is not an option of grpo/);
    } finally {
      child.kill("SIGTERM");
      assert.equal(await exited, 0, out);
    }
  });

  it("refuses requests past its size caps as INVALID_ARGUMENT naming the limit", async () => {
    const sized = (K: number, groups: number, G: number, diagnostics: boolean) =>
      create(ComputeAdvantagesRequestSchema, {
        estimator: "corr_grpo",
        diagnostics,
        groups: Array.from({ length: groups }, (_, g) => ({
          groupId: `g${g}`,
          rollouts: Array.from({ length: G }, (_, i) => ({
            rolloutId: `r${i}`,
            values: Array.from({ length: K }, (_, k) => ((i * 7 + k * 3 + g) % 5) / 4),
          })),
        })),
      });
    // Over the wire: K = 1000 with diagnostics (4 groups × 2 K×K matrices of 10⁶ cells) is refused up front.
    await assert.rejects(
      client.computeAdvantages(sized(1000, 4, 3, true), { timeoutMs: 10_000 }),
      (err: grpc.ServiceError) => {
        assert.equal(err.code, grpc.status.INVALID_ARGUMENT, err.details);
        assert.match(
          err.details,
          /^'groups\[0\]\.rollouts\[0\]\.values' has K = 1000, over the components limit of 256 per request/,
        );
        return true;
      },
    );
    const L = COMPUTE_ADVANTAGES_LIMITS;
    const refused = (req: ComputeAdvantagesRequest, re: RegExp) =>
      assert.throws(
        () => computeAdvantagesMessage(req),
        (err: Error) => {
          assert.equal(err.name, "InvalidArgumentError");
          assert.match(err.message, re);
          return true;
        },
      );
    refused(
      sized(256, 1, 2049, false),
      /'groups' has covariance work \(Σ rollouts·K²\) = 134283264, over the covarianceWork limit of 134217728/,
    );
    refused(sized(64, 1025, 2, true), /'diagnostics' would answer .*over the diagnosticsCells limit/);
    refused(sized(1, L.groups + 1, 1, false), /'groups' has 65537, over the groups limit of 65536/);
    // At the caps the engine still answers: K = 256 with diagnostics.
    const ok = computeAdvantagesMessage(sized(256, 16, 4, true));
    assert.equal(ok.groups.length, 16);
    assert.equal(ok.groups[0]!.diagnostics!.covariance.length, 256 * 256);
  });

  it("answers INVALID_ARGUMENT naming the request field", async () => {
    const good = batch(1).slice(0, 1);
    const bad = async (
      config: Record<string, unknown>,
      edit: (r: ComputeAdvantagesRequest) => void,
      details: RegExp,
    ) => {
      const req = requestOf(good, config);
      edit(req);
      await assert.rejects(client.computeAdvantages(req, { timeoutMs: 10_000 }), (err: grpc.ServiceError) => {
        assert.equal(err.code, grpc.status.INVALID_ARGUMENT, err.details);
        assert.match(err.details, details);
        return true;
      });
    };
    const none = () => {};
    await bad({ estimator: "" }, none, /^'estimator' is required/);
    await bad(
      { estimator: "ppo" },
      none,
      /^'estimator' unknown advantage estimator 'ppo'; supported: grpo, /,
    );
    await bad(
      { estimator: "grpo", options: { epsilonPlacement: "inside" } },
      none,
      /^'options\.epsilon_placement' is not an option of grpo/,
    );
    await bad(
      { estimator: "corr_grpo", options: { epsilonPlacement: "middle" } },
      none,
      /^'options\.epsilon_placement' must be one of inside \| outside, got "middle"/,
    );
    await bad({ estimator: "grpo", sgrpo: {} }, none, /^'sgrpo\.p' is required: S-GRPO needs/);
    await bad(
      { estimator: "grpo", sgrpo: { p: 0.7 } },
      none,
      /^'sgrpo\.p' must be a number in \[0, 0\.5\), got 0\.7/,
    );
    await bad(
      { estimator: "grpo", sgrpo: { p: 0.1, component: { case: "componentIndex", value: 9 } } },
      none,
      /^'sgrpo\.component_index' .*out of range/,
    );
    await bad(
      { estimator: "grpo", dynamicSampling: { component: { case: "componentName", value: "nope" } } },
      none,
      /^'dynamic_sampling\.component_name' /,
    );
    await bad(
      { estimator: "grpo" },
      (r) => {
        r.groups[0]!.rollouts[2]!.values[1] = Number.NaN;
      },
      /^'groups\[0\]\.rollouts\[2\]\.values\[1\]' .*NaN/,
    );
    await bad(
      { estimator: "grpo" },
      (r) => {
        r.groups[0]!.rollouts[1]!.values.pop();
      },
      /^'groups\[0\]\.rollouts\[1\]\.values' /,
    );
    await bad(
      { estimator: "grpo" },
      (r) => {
        r.groups[0]!.rollouts[1]!.notApplicable = [true];
      },
      /^'groups\[0\]\.rollouts\[1\]\.not_applicable' /,
    );
    await bad(
      { estimator: "grpo" },
      (r) => {
        r.groups[0]!.rollouts[3]!.length = undefined;
      },
      /^'groups\[0\]\.rollouts\[3\]\.length' is unset/,
    );
    await bad(
      { estimator: "gdpo" },
      (r) => {
        r.groups[0]!.rollouts[0]!.length = -1;
      },
      /^'groups\[0\]\.rollouts\[0\]\.length' /,
    );
    await bad(
      { estimator: "grpo" },
      (r) => {
        r.weights = [1, 2];
      },
      /^'weights' /,
    );
    await bad(
      { estimator: "grpo" },
      (r) => {
        r.components = ["a", "a", "b"];
      },
      /^'components\[1\]' /,
    );
  });
});
