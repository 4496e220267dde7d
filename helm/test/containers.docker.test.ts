/**
 * The chart's wiring, proven with the real images and without Kubernetes: render the chart, take the
 * NATS StatefulSet, the provisioning Job, the `length` and `tool-call` Deployments and the `helm test`
 * Pod exactly as rendered (image, command, args, env from Secrets, Secret/ConfigMap volumes, security
 * context), run them with Docker on one network where each answers to its Services' DNS names, run the
 * chart's own readiness probes against them, and score rollouts through NATS end to end with the
 * trainer's credentials from the chart's Secret. Skipped (with the reason) only when Docker cannot exist
 * here: not root and no daemon.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { fromBinary } from "@bufbuild/protobuf";
import { RewardResultSchema } from "@reward-mesh/proto";
import { ensureDockerForTests } from "@reward-mesh/sandbox/testing";
import { type MeshBus, openBus, publishRollout, readStream, Streams, waitServing } from "@reward-mesh/sdk";
import { makeRollout, testBusOptions } from "@reward-mesh/sdk/testing";
import { podNetwork, runPod, type StartedPod, secretValue } from "./docker-pod.js";
import { find, type K8sObject, podSpec, renderChart, repoRoot } from "./helm.js";

const run = promisify(execFile);
const docker = await ensureDockerForTests();
if (!docker.ok) console.log(`# skipping the chart's container wiring test: ${docker.reason}`);

const NS = "mesh";
const FULL = "rm-reward-mesh";
const VERSION = "0.1.0";

/** Builds the images this test runs (`npm run images`; the layer cache makes a rebuild quick). */
async function buildImages(): Promise<void> {
  await run("bash", ["images/build.sh", "mesh", "nats"], {
    cwd: repoRoot,
    timeout: 1_500_000,
    maxBuffer: 64 << 20,
  });
}

// biome-ignore lint/suspicious/noExplicitAny: probe specs are rendered YAML
type Probe = any;

/** The named or numbered container port a probe refers to. */
function probePort(workload: K8sObject, port: number | string): number {
  if (typeof port === "number") return port;
  for (const c of podSpec(workload).containers ?? [])
    for (const p of c.ports ?? []) if (p.name === port) return p.containerPort as number;
  throw new Error(`${workload.metadata.name}: no container port named ${port}`);
}

function tcpOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port, timeout: 1000 });
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
    s.once("timeout", () => {
      s.destroy();
      resolve(false);
    });
  });
}

/** Runs the container's own readiness probe against it until it passes (polling, 90 s at most). */
async function waitReady(workload: K8sObject, pod: StartedPod): Promise<string> {
  const probe: Probe = podSpec(workload).containers[0].readinessProbe;
  assert.ok(probe, `${workload.metadata.name} has a readiness probe`);
  const deadline = Date.now() + 90_000;
  if (probe.grpc) {
    const port = probePort(workload, probe.grpc.port);
    // Plaintext, as kubelet's gRPC probe speaks it: the health port serves only grpc.health.v1.
    await waitServing(`${pod.ip}:${port}`, {
      timeoutMs: 90_000,
      security: { insecure: true },
      describe: () => workload.metadata.name,
    });
    return `grpc ${port}`;
  }
  if (probe.httpGet) {
    const port = probePort(workload, probe.httpGet.port);
    const url = `http://${pod.ip}:${port}${probe.httpGet.path}`;
    let last = "";
    while (Date.now() < deadline) {
      const r = await fetch(url, { signal: AbortSignal.timeout(2000) }).catch((e: Error) => e);
      if (!(r instanceof Error) && r.status >= 200 && r.status < 400) return `http ${url}`;
      last = r instanceof Error ? r.message : `HTTP ${r.status}`;
      await new Promise((res) => setTimeout(res, 200));
    }
    throw new Error(`${workload.metadata.name}: ${url} not ready (${last}); logs:\n${await pod.logs()}`);
  }
  if (probe.tcpSocket) {
    const port = probePort(workload, probe.tcpSocket.port);
    while (Date.now() < deadline) {
      if (await tcpOpen(pod.ip, port)) return `tcp ${port}`;
      await new Promise((res) => setTimeout(res, 200));
    }
    throw new Error(`${workload.metadata.name}: port ${port} never opened; logs:\n${await pod.logs()}`);
  }
  throw new Error(`${workload.metadata.name}: unsupported probe ${JSON.stringify(probe)}`);
}

describe("the chart's containers, run with Docker as rendered", {
  skip: docker.ok ? false : docker.reason,
}, () => {
  let docs: K8sObject[];
  let net: Awaited<ReturnType<typeof podNetwork>>;
  let natsIp: string;
  let trainer: MeshBus | undefined;
  const services = new Map<string, StartedPod>();

  const start = async (kind: string, name: string, podName?: string): Promise<StartedPod> => {
    const pod = await runPod({
      docs,
      workload: find(docs, kind, name),
      namespace: NS,
      network: net.network,
      workDir: net.workDir,
      ...(podName ? { podName } : {}),
    });
    net.pods.push(pod);
    return pod;
  };

  before(async () => {
    if (!docker.ok) return;
    await buildImages();
    docs = await renderChart(
      {
        image: { repository: "reward-mesh/mesh", tag: VERSION },
        nats: { image: { repository: "reward-mesh/nats", tag: "debian" } },
        trainer: { enabled: false },
        learner: { enabled: false },
        services: {
          agentdojo: { enabled: false },
          ast: { enabled: false },
          "code-exec": { enabled: true }, // off by default: it runs untrusted code (bwrap mode here)
          efficiency: { enabled: false },
        },
      },
      { release: "rm", namespace: NS },
    );
    net = await podNetwork("rm-wiring");
  });

  after(async () => {
    await trainer?.close().catch(() => undefined);
    await net?.close();
  });

  it("NATS from the StatefulSet passes its readiness probe", async () => {
    const sts = find(docs, "StatefulSet", `${FULL}-nats`);
    const pod = await start("StatefulSet", `${FULL}-nats`, `${FULL}-nats-0`);
    natsIp = pod.ip;
    assert.match(await waitReady(sts, pod), /^http /);
  });

  it("the provisioning Job creates the streams as the admin user", async () => {
    const pod = await start("Job", `${FULL}-provision-1`);
    const code = await pod.wait(150_000);
    const logs = await pod.logs();
    assert.equal(code, 0, `provision exited ${code}:\n${logs}`);
    for (const s of Object.values(Streams))
      assert.match(logs, new RegExp(`"name":"${s}"`), `${s} provisioned`);
  });

  it("length, tool-call and code-exec come up and pass their gRPC readiness probes (plaintext health port)", async () => {
    for (const name of ["length", "tool-call", "code-exec"]) {
      const d = find(docs, "Deployment", `${FULL}-${name}`);
      const pod = await start("Deployment", `${FULL}-${name}`);
      services.set(name, pod);
      assert.match(await waitReady(d, pod), /^grpc /, name);
    }
  });

  it("scores rollouts through NATS end to end, with the trainer's credentials from the chart's Secret", async () => {
    const password = secretValue(docs, `${FULL}-nats-auth`, "trainer");
    trainer = await openBus(
      {
        ...testBusOptions(`nats://${natsIp}:4222`),
        auth: { user: "trainer", password, inboxPrefix: "_INBOX_trainer" },
      },
      "wiring-trainer",
    );
    const runId = "helm-wiring";
    // The tool-call case of that service's own end-to-end test: the exact call, and garbage.
    const task = {
      id: "t",
      kind: {
        case: "toolCall" as const,
        value: { format: "rlla", groundTruth: [{ name: "GetNews", argumentsJson: '{"page": "1"}' }] },
      },
    };
    const exactCall =
      '<think>x</think>\n<tool_call>\n{"name": "GetNews", "parameters": {"page": "1"}}\n</tool_call>';
    const rollouts = [
      makeRollout({ runId, groupSize: 2, index: 0, response: exactCall, task }),
      makeRollout({ runId, groupSize: 2, index: 1, response: "garbage", task }),
    ];
    for (const r of rollouts) await publishRollout(trainer.js, r);
    const got = await readStream(
      trainer,
      Streams.rewards,
      `mesh.rewards.${runId}.>`,
      (d) => fromBinary(RewardResultSchema, d),
      4,
      60_000,
    );
    const values = new Map(
      got.map((m) => [`${m.value.service}/${m.value.rolloutId}`, m.value.components.map((c) => c.value)]),
    );
    if (values.size !== 4) {
      const logs = await Promise.all([...services].map(async ([n, p]) => `--- ${n}\n${await p.logs()}`));
      assert.fail(
        `one result per service and rollout, got ${[...values.keys()].join(", ")}\n${logs.join("\n")}`,
      );
    }
    assert.deepEqual(values.get(`tool-call/${rollouts[0]!.id}`), [1, 0.5, 1, 1.5, 1]);
    assert.deepEqual(values.get(`tool-call/${rollouts[1]!.id}`), [0, -0.5, -1, -1.5, 0]);
    assert.equal(values.get(`length/${rollouts[1]!.id}`)?.[0], "garbage".length);
  });

  it("code-exec runs a program in its rootless sandbox, as the chart's bwrap mode configures the pod", async () => {
    assert.ok(trainer, "the previous test opened the trainer's bus");
    const runId = "helm-wiring-code";
    const task = {
      id: "add",
      kind: {
        case: "code" as const,
        value: {
          language: "python",
          test: "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n",
          entryPoint: "add",
          timeLimitMs: 5_000,
        },
      },
    };
    const rollouts = [
      makeRollout({
        runId,
        groupSize: 2,
        index: 0,
        task,
        response: "```python\ndef add(a, b):\n    return a + b\n```",
      }),
      makeRollout({
        runId,
        groupSize: 2,
        index: 1,
        task,
        response: "```python\ndef add(a, b):\n    return a - b\n```",
      }),
    ];
    for (const r of rollouts) await publishRollout(trainer.js, r);
    const got = await readStream(
      trainer,
      Streams.rewards,
      `mesh.rewards.${runId}.code-exec.*`,
      (d) => fromBinary(RewardResultSchema, d),
      2,
      120_000,
    );
    const pass = new Map(
      got.map((m) => [
        m.value.rolloutId,
        Object.fromEntries(m.value.components.map((c) => [c.name, c.value])),
      ]),
    );
    if (pass.size !== 2)
      assert.fail(`two code-exec results, got ${pass.size}:\n${await services.get("code-exec")?.logs()}`);
    assert.deepEqual(pass.get(rollouts[0]!.id), {
      format: 1,
      syntax: 1,
      compile: 1,
      runtime: 1,
      pass: 1,
      pass_rate: 1,
    });
    assert.equal(pass.get(rollouts[1]!.id)?.["pass"], 0, "the wrong solution fails");
    assert.equal(pass.get(rollouts[1]!.id)?.["runtime"], 1, "it ran");
  });

  it("the `helm test` Pod scores one rollout through length over TLS with the token", async () => {
    const pod = await start("Pod", `${FULL}-test-score-length`);
    const code = await pod.wait(120_000);
    const logs = await pod.logs();
    assert.equal(code, 0, `helm test pod exited ${code}:\n${logs}`);
    assert.match(logs, /"service":"length"/);
  });
});
