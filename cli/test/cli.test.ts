/** The `reward-mesh` binary and its commands, as a user runs them. */
import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createLengthService } from "@reward-mesh/length";
import { createGrpcClient, grpc, health } from "@reward-mesh/proto";
import {
  createLimiter,
  createSecureGrpcClient,
  freePort,
  loadGrpcServerSecurity,
  type RunningGrpcServer,
  silentLogger,
  startGrpcServer,
} from "@reward-mesh/sdk";
import { createTestPki, type TestPki } from "@reward-mesh/sdk/testing";
import { listEnvironmentTasks } from "@reward-mesh/trainer";
import { loadCliConfig, startMesh } from "../src/index.js";
import { defaultServiceNames } from "../src/services.js";

const bin = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));

function runBin(
  args: string[],
  stdin: string | Buffer,
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [bin, ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }),
    );
    child.stdin!.end(stdin);
  });
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });

const rollout = (id: string, response: string, extra = "") =>
  `{"id":"${id}","runId":"cli","groupId":"g","groupSize":1,"response":"${response}"${extra}}`;

describe("reward-mesh score", () => {
  it("scores JSONL in order and reports bad lines by number without losing the good ones", async () => {
    const input = [
      rollout("a", "x".repeat(5)),
      "",
      "{not json",
      rollout("b", "yy", `,"metadata":{"overlong.max_length":"2","overlong.cache_length":"1"}`),
      `{"id":"c","runId":"bad.run","groupId":"g","groupSize":1}`,
      `{"id":"d","runId":"cli","groupId":"g","groupSize":1,"unknownField":1}`,
      rollout("e", "zzz"),
    ].join("\n");
    const r = await runBin(["score", "length"], input);
    assert.equal(r.code, 2);
    const out = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { rolloutId: string; components: Array<{ name: string; value: number }> });
    assert.deepEqual(
      out.map((o) => o.rolloutId),
      ["a", "b", "e"],
    );
    assert.deepEqual(out[1]!.components, [
      { name: "length", value: 2, status: "COMPONENT_STATUS_OK", details: "characters" },
      {
        name: "overlong",
        value: -1,
        status: "COMPONENT_STATUS_OK",
        details: "length 2 characters; soft zone (1, 2]",
      },
    ]);
    const errs = r.stderr.trim().split("\n");
    assert.equal(errs.length, 3);
    assert.match(errs[0]!, /^line 3: not valid JSON/);
    assert.match(errs[1]!, /^line 5: 'rollout\.run_id' must match/);
    assert.match(errs[2]!, /^line 6: .*unknownField/);
  });

  it("reports a line that is not valid UTF-8 by number (never repaired) and scores the others", async () => {
    const bad = Buffer.concat([
      Buffer.from(`{"id":"b","runId":"cli","groupId":"g","groupSize":1,"response":"caf`),
      Buffer.from([0xc3, 0x28]), // a lead byte without its continuation
      Buffer.from(`"}`),
    ]);
    const input = Buffer.concat([
      Buffer.from(`${rollout("a", "é")}\r\n`),
      bad,
      Buffer.from(`\n${rollout("c", "xyz")}\n`),
    ]);
    const r = await runBin(["score", "length"], input);
    assert.equal(r.code, 2);
    const out = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { rolloutId: string; components: Array<{ value: number }> });
    assert.deepEqual(
      out.map((o) => o.rolloutId),
      ["a", "c"],
    );
    assert.equal(out[0]!.components[0]!.value, 1, "'é' is one character, decoded as UTF-8");
    assert.equal(r.stderr.trim(), "line 2: not valid UTF-8 (byte 68 of the line)");
  });

  describe("--addr", () => {
    let server: RunningGrpcServer;
    before(async () => {
      server = await startGrpcServer(
        createLengthService({ maxLength: 4, cacheLength: 2, penaltyFactor: 1 }),
        {
          port: 0,
          limiter: createLimiter(2),
          logger: silentLogger,
        },
      );
    });
    after(() => server.close(100));

    it("scores against a running service and maps gRPC errors to line errors", async () => {
      const r = await runBin(
        ["score", "length", "--addr", server.address],
        [rollout("a", "xxx"), rollout("b", "x", `,"groupSize":0`)].join("\n"),
      );
      assert.equal(r.code, 2);
      const [a] = r.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { components: Array<{ value: number }> });
      assert.equal(a!.components[1]!.value, -0.5); // server's own limits (4, 2), not the defaults
      assert.match(r.stderr, /^line 2: gRPC 3: 'rollout\.group_size' must be >= 1/m);
    });
  });

  describe("--addr with mutual TLS and a token", () => {
    const TOKEN = "cli-test-token-0123456789";
    let pki: TestPki;
    let server: RunningGrpcServer;
    let clientEnv: Record<string, string>;
    before(async () => {
      pki = createTestPki();
      server = await startGrpcServer(
        createLengthService({ maxLength: 4, cacheLength: 2, penaltyFactor: 1 }),
        {
          port: 0,
          limiter: createLimiter(2),
          logger: silentLogger,
          security: loadGrpcServerSecurity("LENGTH", {
            LENGTH_GRPC_TLS_CERT_FILE: pki.serverCert,
            LENGTH_GRPC_TLS_KEY_FILE: pki.serverKey,
            LENGTH_GRPC_TLS_CLIENT_CA_FILE: pki.caCert,
            LENGTH_GRPC_TOKEN: TOKEN,
          }),
        },
      );
      clientEnv = {
        REWARD_MESH_GRPC_TLS_CA_FILE: pki.caCert,
        REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE: pki.clientCert,
        REWARD_MESH_GRPC_TLS_CLIENT_KEY_FILE: pki.clientKey,
      };
    });
    after(async () => {
      await server.close(100);
      pki.remove();
    });

    it("scores with the REWARD_MESH_GRPC_* client settings; without the token each line is UNAUTHENTICATED", async () => {
      const ok = await runBin(["score", "length", "--addr", server.address], rollout("a", "xxx"), {
        ...clientEnv,
        REWARD_MESH_GRPC_TOKEN: TOKEN,
      });
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal((JSON.parse(ok.stdout) as { rolloutId: string }).rolloutId, "a");
      const noToken = await runBin(
        ["score", "length", "--addr", server.address],
        rollout("a", "xxx"),
        clientEnv,
      );
      assert.equal(noToken.code, 2);
      assert.match(noToken.stderr, /^line 1: gRPC 16: missing bearer token/m);
    });

    it("serve refuses a plaintext bind to all interfaces and names the variables that fix it", async () => {
      const r = await runBin(["serve", "length"], "", {
        LENGTH_GRPC_HOST: "0.0.0.0",
        LENGTH_GRPC_PORT: "0",
        LENGTH_WORKER: "false",
        OTEL_TRACES_EXPORTER: "none",
        OTEL_METRICS_EXPORTER: "none",
        OTEL_LOGS_EXPORTER: "none",
      });
      assert.equal(r.code, 2, r.stderr);
      assert.match(
        r.stderr,
        /^reward-mesh: 'LENGTH_GRPC_INSECURE' is not set and TLS is not configured: refusing a plaintext gRPC server on '0\.0\.0\.0'.*Set LENGTH_GRPC_TLS_CERT_FILE and LENGTH_GRPC_TLS_KEY_FILE for TLS, or LENGTH_GRPC_INSECURE=1/m,
      );
    });

    it("refuses plaintext to a non-loopback address unless REWARD_MESH_GRPC_INSECURE is set", async () => {
      const r = await runBin(["score", "length", "--addr", "192.0.2.1:50061"], rollout("a", "x"));
      assert.equal(r.code, 2);
      assert.match(
        r.stderr,
        /'REWARD_MESH_GRPC_INSECURE' is not set .*refusing plaintext gRPC to '192\.0\.2\.1:50061'/,
      );
      const bad = await runBin(["score", "length", "--addr", server.address], "", {
        REWARD_MESH_GRPC_TLS_CA_FILE: "/nonexistent/ca.pem",
      });
      assert.equal(bad.code, 2);
      assert.match(
        bad.stderr,
        /'REWARD_MESH_GRPC_TLS_CA_FILE' cannot read '\/nonexistent\/ca\.pem' \(ENOENT\)/,
      );
    });
  });

  it("unknown service and usage errors exit 2 with one line", async () => {
    const r = await runBin(["score", "nope"], "");
    assert.equal(r.code, 2);
    // The discovered services, by name.
    assert.match(r.stderr, /unknown service 'nope'; available: agentdojo, ast, [a-z, -]*\blength\b/);
    const u = await runBin(["frobnicate"], "");
    assert.equal(u.code, 2);
    assert.equal(u.stderr.trim().split("\n").length, 1);
  });
});

describe("reward-mesh advantages", () => {
  it("computes CorrGRPO for the README's example", async () => {
    const r = await runBin(
      ["advantages", "--estimator", "corr_grpo"],
      `{"groups":[{"rewards":[[1,1],[0,1],[1,0],[0,0]]}],"weights":[1,0.5]}`,
    );
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { groups: Array<{ advantages: number[] }> };
    assert.ok(Math.abs(out.groups[0]!.advantages[0]! - 0.5303299533074388) < 1e-12);
  });
  it("rejects an unknown estimator with one line and exit 2", async () => {
    const r = await runBin(["advantages", "--estimator", "ppo"], `{"groups":[]}`);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim().split("\n").length, 1);
    assert.match(r.stderr, /ppo/);
  });
});

describe("reward-mesh train", () => {
  it("rejects a bad run configuration with one line naming the key, exit 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rm-train-cfg-"));
    try {
      const cfg = join(dir, "bad.yaml");
      writeFileSync(cfg, "components: overlong\nloss: { type: ppo }\n");
      const r = await runBin(["train", "--config", cfg], "");
      assert.equal(r.code, 2);
      assert.equal(
        r.stderr.trim(),
        `reward-mesh: 'loss.type' must be one of grpo, dr_grpo, dapo, cispo, bnpo, got "ppo"`,
      );
      const missing = await runBin(["train", "--config", join(dir, "nope.yaml")], "");
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /'--config' cannot be read/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("reward-mesh experiment", () => {
  it("trains every arm and seed on one mesh and writes the comparison report", async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "rm-exp-"));
    try {
      const cfg = join(dir, "base.yaml");
      writeFileSync(
        cfg,
        [
          `run: { outputDir: ${JSON.stringify(join(dir, "runs"))} }`,
          "tasks: { sets: [tool_call] }",
          "groupSize: 4",
          "promptsPerStep: 2",
          "steps: 3",
          "components: [rlla-tool, { service: tool-call, component: exact_match, weight: 0 }]",
        ].join("\n"),
      );
      const env = {
        NATS_URL: `nats://127.0.0.1:${port}`,
        REWARD_MESH_NATS_STORE: join(dir, "js"),
        REWARD_MESH_LOG_DIR: join(dir, "logs"),
      };
      const r = await runBin(
        [
          "experiment",
          "--config",
          cfg,
          "--estimators",
          "grpo,s_grpo",
          "--seeds",
          "2",
          "--reward-noise",
          "0.1",
          "--noise-components",
          "tool-call/exact_match",
          "--id",
          "exp1",
        ],
        "",
        env,
      );
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /experiment exp1: 4 runs/);
      assert.doesNotMatch(r.stderr, /^\{/m, "no JSON log line between the progress lines");
      for (const run of ["exp1-grpo-s1", "exp1-s_grpo-s2"])
        assert.match(
          readFileSync(join(dir, "runs", "exp1", run, "logs", "trainer.jsonl"), "utf8"),
          /"msg":"learner ready"/,
          `${run} logs to its own logs/trainer.jsonl`,
        );
      const html = readFileSync(join(dir, "runs", "exp1", "experiment.html"), "utf8");
      assert.match(html, /<tr><th>grpo<\/th>/);
      assert.match(html, /<tr><th>s_grpo<\/th>/);
      const sg = JSON.parse(
        readFileSync(join(dir, "runs", "exp1", "exp1-s_grpo-s2", "resolved-config.json"), "utf8"),
      ) as {
        sgrpo: { p: number; component: string };
        rewardNoise: { p: number };
        seed: number;
      };
      assert.deepEqual(
        [sg.sgrpo.p, sg.sgrpo.component, sg.rewardNoise.p, sg.seed],
        [0.1, "tool-call/exact_match", 0.1, 2],
      );
      const bad = await runBin(["experiment", "--estimators", "grpo", "--reward-noise", "0.7"], "", env);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /'--reward-noise' must be in \[0, 0\.5\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("reward-mesh up", () => {
  it("startMesh starts NATS when nothing answers, brings every service to SERVING, and stops it all", async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "rm-up-"));
    try {
      const config = loadCliConfig({
        NATS_URL: `nats://127.0.0.1:${port}`,
        REWARD_MESH_NATS_STORE: join(dir, "js"),
        REWARD_MESH_LOG_DIR: join(dir, "logs"),
        PATH: process.env.PATH,
      });
      const mesh = await startMesh(config);
      try {
        assert.equal(mesh.natsStarted, true);
        assert.equal(mesh.natsUrl, `nats://127.0.0.1:${port}`);
        assert.deepEqual(
          mesh.services.map((s) => s.name),
          defaultServiceNames(),
        );
        for (const s of mesh.services) {
          const h = createGrpcClient(health.Health, s.address);
          assert.equal(
            (await h.check({ service: "" })).status,
            health.HealthCheckResponse_ServingStatus.SERVING,
          );
          h.close();
        }
      } finally {
        await mesh.stop();
      }
      assert.equal(await portOpen(port), false, "NATS stopped");
      for (const s of mesh.services) {
        assert.throws(() => process.kill(s.pid, 0), "service process exited");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("brings services up with mutual TLS and a token from the mesh-wide variables", async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "rm-up-tls-"));
    const pki = createTestPki();
    try {
      const config = loadCliConfig({
        NATS_URL: `nats://127.0.0.1:${port}`,
        REWARD_MESH_NATS_STORE: join(dir, "js"),
        REWARD_MESH_LOG_DIR: join(dir, "logs"),
        PATH: process.env.PATH,
        // servers
        REWARD_MESH_GRPC_TLS_CERT_FILE: pki.serverCert,
        REWARD_MESH_GRPC_TLS_KEY_FILE: pki.serverKey,
        REWARD_MESH_GRPC_TLS_CLIENT_CA_FILE: pki.caCert,
        REWARD_MESH_GRPC_TOKEN: "up-test-token-0123456789",
        // clients (up's readiness checks)
        REWARD_MESH_GRPC_TLS_CA_FILE: pki.caCert,
        REWARD_MESH_GRPC_TLS_CLIENT_CERT_FILE: pki.clientCert,
        REWARD_MESH_GRPC_TLS_CLIENT_KEY_FILE: pki.clientKey,
      });
      const mesh = await startMesh(config, { services: ["length"] });
      try {
        const address = mesh.services[0]!.address;
        const secure = createSecureGrpcClient(health.Health, address, config.grpc);
        const plain = createGrpcClient(health.Health, address);
        try {
          const st = await secure.check({ service: "" }, { timeoutMs: 5_000 });
          assert.equal(st.status, health.HealthCheckResponse_ServingStatus.SERVING);
          await assert.rejects(plain.check({ service: "" }, { timeoutMs: 5_000 }), (e: grpc.ServiceError) => {
            assert.equal(e.code, grpc.status.UNAVAILABLE);
            return true;
          });
        } finally {
          secure.close();
          plain.close();
        }
      } finally {
        await mesh.stop();
      }
    } finally {
      pki.remove();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the binary prints the addresses and stops cleanly on SIGINT", async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "rm-up-"));
    let child: ChildProcess | undefined;
    try {
      const up = spawn(process.execPath, [bin, "up"], {
        env: {
          ...process.env,
          NATS_URL: `nats://127.0.0.1:${port}`,
          REWARD_MESH_NATS_STORE: join(dir, "js"),
          REWARD_MESH_LOG_DIR: join(dir, "logs"),
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child = up;
      let out = "";
      await new Promise<void>((resolve, reject) => {
        up.stdout!.on("data", (d: Buffer) => {
          out += d.toString();
          if (out.includes("mesh is up")) resolve();
        });
        up.once("exit", (code) => reject(new Error(`up exited early (${code}): ${out}`)));
      });
      assert.match(out, /^length\s+127\.0\.0\.1:\d+/m);
      // The agentdojo process is on a free port: `up` prints the line `train` needs to list the agent set
      // there, and the address it names answers ListTasks.
      const agentdojo = /^agentdojo\s+(127\.0\.0\.1:\d+)/m.exec(out);
      assert.ok(agentdojo, out);
      const exported = /^export REWARD_MESH_AGENT_ENV_ADDR=(\S+)/m.exec(out);
      assert.equal(exported?.[1], agentdojo[1], out);
      const listing = await listEnvironmentTasks({ address: exported[1]! }, { suites: ["banking"] });
      assert.deepEqual(
        listing.suites.map((x) => x.name),
        ["banking"],
        "the printed address lists the banking suite",
      );
      assert.ok(listing.suites[0]!.userTasks.length > 0);
      const exited = new Promise<number | null>((r) => up.once("exit", (c) => r(c)));
      up.kill("SIGINT");
      assert.equal(await exited, 0);
      assert.equal(await portOpen(port), false);
    } finally {
      // A failed assertion above still stops the mesh (up stops its services and NATS on SIGINT).
      if (child && child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((r) => child!.once("exit", r));
        child.kill("SIGINT");
        await gone;
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
