/**
 * `up` starts each service on port 0 and reads the bound address from its `<name> ready` line; a user's
 * LOG_LEVEL above info (which would hide that line) still gives a log file at that level. Real nats-server,
 * real service processes.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { text } from "node:stream/consumers";
import { after, before, describe, it } from "node:test";
import { createGrpcClient, health } from "@reward-mesh/proto";
import { freePort } from "@reward-mesh/sdk";
import { logLevelFilter, serviceLogLevel } from "../src/commands/up.js";
import { loadCliConfig, startMesh } from "../src/index.js";

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "rm-up-ports-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** The JSON records of a log file. */
function records(file: string): Record<string, unknown>[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function meshConfig(name: string, env: Record<string, string> = {}) {
  const port = await freePort(); // NATS's own address: `up` starts nats-server there
  return loadCliConfig({
    NATS_URL: `nats://127.0.0.1:${port}`,
    REWARD_MESH_NATS_STORE: join(dir, name, "js"),
    REWARD_MESH_NATS_AUTH_DIR: join(dir, name, "auth"),
    REWARD_MESH_LOG_DIR: join(dir, name, "logs"),
    PATH: process.env.PATH,
    ...env,
  });
}

async function assertServing(address: string): Promise<void> {
  const h = createGrpcClient(health.Health, address);
  try {
    const st = await h.check({ service: "" }, { timeoutMs: 5_000 });
    assert.equal(st.status, health.HealthCheckResponse_ServingStatus.SERVING);
  } finally {
    h.close();
  }
}

describe("up: services on port 0, the address from the ready line", () => {
  it("hands on the address the service logged in its ready line, SERVING there", async () => {
    const mesh = await startMesh(await meshConfig("info"), { services: ["length", "tool-call"] });
    let logs: string[];
    try {
      assert.deepEqual(
        mesh.services.map((s) => s.name),
        ["length", "tool-call"],
      );
      for (const s of mesh.services) {
        assert.match(s.address, /^127\.0\.0\.1:\d+$/);
        assert.equal(s.metricsUrl, undefined);
        await assertServing(s.address);
      }
      assert.notEqual(mesh.services[0]!.address, mesh.services[1]!.address);
      logs = mesh.services.map((s) => s.logFile);
    } finally {
      await mesh.stop();
    }
    for (const [i, s] of mesh.services.entries()) {
      const ready = records(logs[i]!).find((r) => r["msg"] === `${s.name} ready`);
      assert.ok(ready, `${s.name}: its ready line is in ${logs[i]}`);
      assert.equal(ready["address"], s.address);
      assert.equal(ready["level"], 30);
    }
  });

  it("LOG_LEVEL=warn: still learns the address, and the log file holds no info records", async () => {
    const mesh = await startMesh(await meshConfig("warn", { LOG_LEVEL: "warn" }), { services: ["length"] });
    const s = mesh.services[0]!;
    try {
      assert.match(s.address, /^127\.0\.0\.1:\d+$/);
      await assertServing(s.address);
    } finally {
      await mesh.stop();
    }
    const recs = records(s.logFile);
    const below = recs.filter((r) => typeof r["level"] === "number" && r["level"] < 40);
    assert.deepEqual(below, [], `no records under warn in ${s.logFile}`);
  });

  it("an unknown LOG_LEVEL: up fails naming the service, the variable and the log file", async () => {
    const config = await meshConfig("bad", { LOG_LEVEL: "verbose" });
    await assert.rejects(
      startMesh(config, { services: ["length"], readyTimeoutMs: 30_000 }),
      (err: Error) => {
        assert.match(err.message, /^service 'length': /);
        assert.match(err.message, /ready" line/);
        assert.match(err.message, /LOG_LEVEL/);
        assert.match(err.message, /length\.log/);
        return true;
      },
    );
  });
});

describe("serviceLogLevel and logLevelFilter", () => {
  it("runs services at info at least, dropping what the user's level hides", () => {
    assert.deepEqual(serviceLogLevel(undefined), { childLevel: undefined, dropBelow: undefined });
    for (const l of ["trace", "debug", "info"])
      assert.deepEqual(serviceLogLevel(l), { childLevel: l, dropBelow: undefined });
    assert.deepEqual(serviceLogLevel("warn"), { childLevel: "info", dropBelow: 40 });
    assert.deepEqual(serviceLogLevel("error"), { childLevel: "info", dropBelow: 50 });
    assert.deepEqual(serviceLogLevel("fatal"), { childLevel: "info", dropBelow: 60 });
    assert.deepEqual(serviceLogLevel("silent"), { childLevel: "info", dropBelow: Number.POSITIVE_INFINITY });
    // The service refuses it and says so.
    assert.deepEqual(serviceLogLevel("verbose"), { childLevel: "verbose", dropBelow: undefined });
  });

  it("drops records under the level, keeps the others and every non-JSON line, across chunk boundaries", async () => {
    const src = new PassThrough();
    const out = src.pipe(logLevelFilter(40));
    const collected = text(out);
    const input =
      '{"level":30,"msg":"length ready","address":"127.0.0.1:1"}\n' +
      '{"level":40,"msg":"slow"}\n' +
      "Error: boom\n    at x (y.ts:1:1)\n" +
      '{"level":50,"msg":"failed","note":"é"}\n' +
      '{"msg":"no level"}\n' +
      "{not json\n" +
      '{"level":20,"msg":"debug, no newline at the end"}';
    const bytes = Buffer.from(input);
    for (let i = 0; i < bytes.length; i += 7) src.write(bytes.subarray(i, i + 7)); // splits 'é' too
    src.end();
    assert.equal(
      await collected,
      '{"level":40,"msg":"slow"}\n' +
        "Error: boom\n    at x (y.ts:1:1)\n" +
        '{"level":50,"msg":"failed","note":"é"}\n' +
        '{"msg":"no level"}\n' +
        "{not json\n",
    );
  });
});
