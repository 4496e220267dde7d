/**
 * The images for real: built with `images/build.sh` (npm run images; offline Debian bases when Docker
 * Hub is unreachable), then run as Kubernetes would (non-root, read-only root filesystem, /tmp a tmpfs).
 * Skips with a printed reason only when Docker cannot exist here (not root and no daemon); otherwise
 * it starts the daemon (sandbox-images/dockerd.sh) like the sandbox's Docker tests.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { createRewardServiceClient, freePort, waitServing } from "@reward-mesh/sdk";
import { makeRollout } from "@reward-mesh/sdk/testing";

const root = fileURLToPath(new URL("../..", import.meta.url));
const run = promisify(execFile);
const version = (JSON.parse(readFileSync(`${root}package.json`, "utf8")) as { version: string }).version;
const MESH = `reward-mesh/mesh:${version}`;
const LEARNER = `reward-mesh/learner:${version}`;
const NATS = "reward-mesh/nats:debian";

/** Docker can be used, or why it cannot exist here. */
async function ensureDocker(): Promise<{ ok: true } | { ok: false; reason: string }> {
  const answers = () =>
    run("docker", ["version", "--format", "{{.Server.Version}}"], { timeout: 10_000 }).then(
      () => true,
      () => false,
    );
  if (await answers()) return { ok: true };
  if (process.getuid?.() !== 0)
    return { ok: false, reason: "no Docker daemon and not root (cannot start one)" };
  await run("bash", [`${root}sandbox-images/dockerd.sh`, "start"], { timeout: 120_000 });
  if (!(await answers()))
    throw new Error("sandbox-images/dockerd.sh start returned but docker does not answer");
  return { ok: true };
}

const docker = await ensureDocker();
if (!docker.ok) console.log(`# skipping image tests: ${docker.reason}`);

const dockerRun = (args: readonly string[], timeout = 120_000) =>
  run("docker", args, { timeout, maxBuffer: 16 << 20 });
const uniqueName = (what: string) =>
  `rm-images-test-${what}-${process.pid}-${randomBytes(3).toString("hex")}`;

/**
 * `docker run` arguments of a detached container on the host network with a read-only root and a
 * writable /tmp; json-file logs, since the daemon may default to none (sandbox-images/dockerd.sh).
 */
const detachedOnHost = (name: string) => [
  ...["run", "-d", "--name", name, "--log-driver", "json-file"],
  ...["--network", "host", "--read-only", "--tmpfs", "/tmp"],
];

/** Every workspace's package.json is copied into the deps stage (else `npm ci` there would fail). */
describe("images/mesh/Dockerfile", () => {
  it("copies the package.json of every workspace before `npm ci`", () => {
    const dockerfile = readFileSync(`${root}images/mesh/Dockerfile`, "utf8");
    const copied = [...dockerfile.matchAll(/^COPY (\S+)\/package\.json \1\/$/gm)].map((m) => m[1]);
    const lock = JSON.parse(readFileSync(`${root}package-lock.json`, "utf8")) as {
      packages: Record<string, { link?: boolean; resolved?: string }>;
    };
    const workspaces = Object.values(lock.packages)
      .filter((p) => p.link && p.resolved)
      .map((p) => p.resolved!)
      .sort();
    assert.deepEqual([...copied].sort(), workspaces);
  });
});

describe("images (Docker)", { skip: docker.ok ? false : docker.reason }, () => {
  const containers = new Set<string>();
  let summary: Array<{ ref: string; sizeBytes: number; seconds: number; base: string }> = [];

  before(
    async () => {
      const { stdout, stderr } = await run("bash", [`${root}images/build.sh`], {
        cwd: root,
        timeout: 1_800_000,
        maxBuffer: 64 << 20,
      });
      summary = JSON.parse(stdout);
      console.log(`# images/build.sh:\n${stderr.replace(/^/gm, "#   ")}\n# ${JSON.stringify(summary)}`);
    },
    { timeout: 1_800_000 },
  );

  after(async () => {
    for (const c of containers) await dockerRun(["rm", "-f", c]).catch(() => undefined);
  });

  it("builds all three and reports each one's size", () => {
    assert.deepEqual(summary.map((s) => s.ref).sort(), [LEARNER, MESH, NATS].sort());
    for (const s of summary) assert.ok(s.sizeBytes > 0 && s.seconds >= 0, JSON.stringify(s));
  });

  it("runs every image as a fixed numeric non-root user, with tini as PID 1 and OCI labels", async () => {
    for (const ref of [MESH, LEARNER, NATS]) {
      const { stdout } = await dockerRun(["image", "inspect", "-f", "{{json .Config}}", ref]);
      const config = JSON.parse(stdout) as {
        User: string;
        Entrypoint: string[];
        Labels: Record<string, string>;
        Env: string[];
      };
      assert.match(config.User, /^[1-9]\d*:[1-9]\d*$/, `${ref}: User ${config.User}`);
      assert.ok(config.Labels["org.opencontainers.image.title"], `${ref}: no OCI title`);
      assert.ok(config.Labels["org.opencontainers.image.version"], `${ref}: no OCI version`);
      if (ref !== NATS) {
        assert.deepEqual(config.Entrypoint.slice(0, 2), ["tini", "--"], ref);
        assert.ok(config.Env.includes("HOME=/tmp"), `${ref}: HOME is not /tmp`);
      }
    }
    const mesh = JSON.parse((await dockerRun(["image", "inspect", "-f", "{{json .Config}}", MESH])).stdout);
    assert.deepEqual(mesh.Entrypoint, ["tini", "--", "reward-mesh"]);
    assert.deepEqual(mesh.Cmd, ["--help"]);
    assert.equal(mesh.WorkingDir, "/opt/reward-mesh");
  });

  it("mesh: `--help` on a read-only root filesystem prints the CLI's help; no dev dependency inside", async () => {
    const { stdout } = await dockerRun(["run", "--rm", "--read-only", "--tmpfs", "/tmp", MESH, "--help"]);
    assert.match(stdout, /^usage: reward-mesh <command>/m);
    assert.match(
      stdout,
      /^services: agentdojo, ast, code-exec, efficiency, length, math, reward-model, tool-call$/m,
    );
    const probe = await dockerRun([
      "run",
      "--rm",
      "--entrypoint",
      "sh",
      MESH,
      "-c",
      "id -u; tini --version; python3 --version; bwrap --version; test ! -e node_modules/typescript && test ! -e node_modules/@biomejs && echo no-dev",
    ]);
    assert.match(probe.stdout, /^65532\ntini version .*\nPython 3\.\d+.*\nbubblewrap .*\nno-dev$/m);
  });

  it("mesh: `serve length` comes up SERVING, scores, and `docker stop` ends it at once with status 0", async () => {
    const port = await freePort();
    const name = uniqueName("length");
    containers.add(name);
    await dockerRun([
      ...detachedOnHost(name),
      "--cap-drop",
      "ALL",
      "--security-opt",
      "no-new-privileges",
      "-e",
      "LENGTH_WORKER=0",
      "-e",
      `LENGTH_GRPC_PORT=${port}`,
      MESH,
      "serve",
      "length",
    ]);
    const logs = async () => {
      const l = await dockerRun(["logs", name]).catch((e: Error) => ({ stdout: "", stderr: e.message }));
      return l.stdout + l.stderr;
    };
    let lastLogs = "";
    try {
      await waitServing(`127.0.0.1:${port}`, { timeoutMs: 60_000, describe: () => lastLogs });
    } catch (err) {
      lastLogs = await logs();
      throw new Error(`${(err as Error).message}\n${lastLogs}`);
    }
    const client = createRewardServiceClient(`127.0.0.1:${port}`, { timeoutMs: 10_000 });
    const res = await client.score({ rollout: makeRollout({ response: "hello" }) });
    assert.equal(res.service, "length");

    const pid1 = await dockerRun(["exec", name, "cat", "/proc/1/comm"]);
    assert.equal(pid1.stdout.trim(), "tini");

    const t0 = Date.now();
    await dockerRun(["stop", "-t", "30", name]);
    const elapsed = Date.now() - t0;
    const { stdout: code } = await dockerRun(["wait", name]);
    assert.equal(code.trim(), "0", await logs());
    // Docker kills after 30 s (exit 137): exit 0 well under that means SIGTERM reached node.
    assert.ok(elapsed < 25_000, `docker stop took ${elapsed} ms (SIGTERM not handled?)`);
    assert.match(await logs(), /"msg":"draining"/);
  });

  it("learner: imports torch and grpc, `--help` works, and `serve` reports SERVING and stops on SIGTERM", async () => {
    const imports = await dockerRun([
      "run",
      "--rm",
      "--read-only",
      "--tmpfs",
      "/tmp",
      "--entrypoint",
      "python3",
      LEARNER,
      "-c",
      "import torch, grpc, google.protobuf, reward_mesh_learner; print('ok', torch.__version__)",
    ]);
    assert.match(imports.stdout, /^ok \d+\.\d+/m);
    const help = await dockerRun(["run", "--rm", "--read-only", "--tmpfs", "/tmp", LEARNER, "--help"]);
    assert.match(help.stdout, /usage: python -m reward_mesh_learner/);

    const port = await freePort();
    const name = uniqueName("learner");
    containers.add(name);
    await dockerRun([
      ...detachedOnHost(name),
      LEARNER,
      "serve",
      "--port",
      String(port),
      "--model",
      "builtin:tiny",
      "--device",
      "cpu",
    ]);
    let lastLogs = "";
    try {
      await waitServing(`127.0.0.1:${port}`, { timeoutMs: 120_000 });
    } catch (err) {
      const l = await dockerRun(["logs", name]).catch(() => ({ stdout: "", stderr: "" }));
      lastLogs = l.stdout + l.stderr;
      throw new Error(`${(err as Error).message}\n${lastLogs}`);
    }
    const t0 = Date.now();
    await dockerRun(["stop", "-t", "30", name]);
    const elapsed = Date.now() - t0;
    const { stdout: code } = await dockerRun(["wait", name]);
    assert.equal(code.trim(), "0");
    assert.ok(elapsed < 25_000, `docker stop took ${elapsed} ms`);
  });

  it("nats: `nats-server -js` answers and has JetStream", async () => {
    const port = await freePort();
    const name = uniqueName("nats");
    containers.add(name);
    await dockerRun([...detachedOnHost(name), NATS, "-js", "-a", "127.0.0.1", "-p", String(port)]);
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        const nc = await connect({ servers: `127.0.0.1:${port}`, timeout: 1_000 });
        try {
          const info = await (await jetstreamManager(nc)).getAccountInfo();
          assert.ok(info.limits !== undefined);
        } finally {
          await nc.close();
        }
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const t0 = Date.now();
    await dockerRun(["stop", "-t", "30", name]);
    assert.ok(Date.now() - t0 < 25_000);
    const { stdout: code } = await dockerRun(["wait", name]);
    assert.equal(code.trim(), "0", "STOPSIGNAL SIGINT: nats-server exits 0");
  });
});
