/**
 * `reward-mesh advantages serve` off loopback (a real process): plaintext is refused unless --insecure; with
 * --tls-cert/--tls-key both ports serve TLS (HTTP/JSON over https) and --token-file requires the bearer token.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createTestPki } from "@reward-mesh/sdk/testing";

const BIN = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));
const BODY = JSON.stringify({
  estimator: "grpo",
  groups: [{ rollouts: [{ values: [1] }, { values: [0] }] }],
});

async function started(args: readonly string[]): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, [BIN, "advantages", "serve", ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const t0 = Date.now();
  while (!/Ctrl-C to stop/.test(out)) {
    if (child.exitCode !== null || Date.now() - t0 > 60_000) {
      child.kill("SIGTERM");
      throw new Error(`advantages serve did not start:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, line: out };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

function postHttps(url: string, ca: Buffer, headers: Record<string, string>) {
  return new Promise<number>((resolve, reject) => {
    const req = httpsRequest(
      `${url}/rewardmesh.v1.Trainer/ComputeAdvantages`,
      { method: "POST", ca, headers: { "content-type": "application/json", ...headers } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end(BODY);
  });
}

describe("reward-mesh advantages serve: security off loopback", { timeout: 120_000 }, () => {
  it("refuses plaintext on 0.0.0.0 naming how to secure it; --insecure accepts it", async () => {
    const r = spawnSync(process.execPath, [BIN, "advantages", "serve", "--host", "0.0.0.0", "--port", "0"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /refusing a plaintext gRPC server on '0\.0\.0\.0'.*Set --tls-cert and --tls-key/);
    const s = await started(["--host", "0.0.0.0", "--port", "0", "--insecure"]);
    await stop(s.child);
  });

  it("--tls-cert/--tls-key: HTTP/JSON over https; --token-file requires the bearer token", async () => {
    const pki = createTestPki();
    const dir = mkdtempSync(join(tmpdir(), "adv-serve-"));
    const tokenFile = join(dir, "token");
    writeFileSync(tokenFile, "advantages-token-0123456789\n");
    const s = await started([
      "--host",
      "0.0.0.0",
      "--port",
      "0",
      "--http-port",
      "0",
      "--tls-cert",
      pki.serverCert,
      "--tls-key",
      pki.serverKey,
      "--token-file",
      tokenFile,
    ]);
    try {
      const url = /HTTP\/JSON on (https:\/\/\S+?);/.exec(s.line)?.[1];
      assert.ok(url, s.line);
      const ca = readFileSync(pki.caCert);
      assert.equal(await postHttps(url, ca, {}), 401);
      assert.equal(await postHttps(url, ca, { authorization: "Bearer advantages-token-0123456789" }), 200);
    } finally {
      await stop(s.child);
      pki.remove();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
