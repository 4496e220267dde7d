/**
 * `reward-mesh provision` against real nats-servers on free ports: it creates the four mesh streams (one
 * JSON line each) and updates them to new settings when run again; with the mesh's generated users it
 * works as the admin and is refused, naming the admin, as a service user; it keeps polling until a
 * late NATS comes up, and gives up at `--timeout` naming the URL and the last error.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import {
  freePort,
  type LocalNats,
  NatsAuthEnv,
  natsAuthEnv,
  Streams,
  startNatsServer,
} from "@reward-mesh/sdk";
import { type SecuredTestNats, startSecuredTestNats, startTestNats } from "@reward-mesh/sdk/testing";

const bin = fileURLToPath(new URL("../bin/reward-mesh.mjs", import.meta.url));

interface Result {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** Starts `reward-mesh provision` with `env` on top of this environment without its NATS_* credentials. */
function startProvision(
  args: string[],
  env: Record<string, string>,
): { stderr: () => string; done: Promise<Result> } {
  const blank = Object.fromEntries(Object.values(NatsAuthEnv).map((k) => [k, ""]));
  const t0 = Date.now();
  const child = spawn(process.execPath, [bin, "provision", ...args], {
    env: { ...process.env, ...blank, LOG_LEVEL: "silent", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 60_000,
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const done = new Promise<Result>((resolve) =>
    child.once("close", (code) => resolve({ code: code ?? 1, stdout, stderr, ms: Date.now() - t0 })),
  );
  return { stderr: () => stderr, done };
}

const provision = (args: string[], env: Record<string, string>) => startProvision(args, env).done;

interface Line {
  name: string;
  action: string;
  subjects: string[];
  replicas: number;
  storage: string;
  maxAgeSeconds: number;
  maxBytes: number;
  duplicateWindowMs: number;
  messages: number;
}

const lines = (stdout: string): Line[] =>
  stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Line);

describe("reward-mesh provision", () => {
  describe("on an open server", () => {
    let nats: LocalNats;
    before(async () => {
      nats = await startTestNats();
    });
    after(() => nats.stop());

    it("creates the streams, one JSON line each, then updates them to new settings", async () => {
      const first = await provision([], { NATS_URL: nats.url });
      assert.equal(first.code, 0, first.stderr);
      const created = lines(first.stdout);
      assert.deepEqual(
        created.map((s) => s.name),
        Object.values(Streams),
      );
      for (const s of created) {
        assert.equal(s.action, "created");
        assert.equal(s.replicas, 1);
        assert.equal(s.storage, "file");
        assert.equal(s.maxAgeSeconds, 604_800);
        assert.equal(s.duplicateWindowMs, 120_000);
        assert.equal(s.subjects.length, 1);
      }
      const again = await provision(["--timeout", "30"], {
        NATS_URL: nats.url,
        MESH_STREAM_MAX_AGE_SECONDS: "3600",
        MESH_STREAM_MAX_BYTES: "1048576",
        MESH_DUPLICATE_WINDOW_MS: "60000",
      });
      assert.equal(again.code, 0, again.stderr);
      for (const s of lines(again.stdout)) {
        assert.deepEqual(
          [s.action, s.maxAgeSeconds, s.maxBytes, s.duplicateWindowMs],
          ["updated", 3600, 1_048_576, 60_000],
          s.name,
        );
      }
    });

    it("a bad --timeout is a usage error", async () => {
      const r = await provision(["--timeout", "soon"], { NATS_URL: nats.url });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /option '--timeout' must be a number of seconds > 0, got 'soon'/);
    });
  });

  describe("with the mesh's generated users", () => {
    let nats: SecuredTestNats;
    before(async () => {
      nats = await startSecuredTestNats([{ name: "length", domains: ["length"] }]);
    });
    after(() => nats.stop());

    it("a service user is refused at once, naming the admin, whether the streams exist or not", async () => {
      const env = { NATS_URL: nats.url, ...natsAuthEnv(nats.auth.services["length"]!) };
      const missing = await provision([], env);
      assert.equal(missing.code, 1, missing.stdout);
      assert.equal(missing.stdout, "");
      assert.match(missing.stderr, /may not create or update stream MESH_\w+ .*needs the mesh's admin user/);
      assert.ok(missing.ms < 20_000, `took ${missing.ms} ms: a refusal must not be retried`);

      const admin = await provision([], { NATS_URL: nats.url, ...natsAuthEnv(nats.auth.admin) });
      assert.equal(admin.code, 0, admin.stderr);
      assert.equal(lines(admin.stdout).length, Object.values(Streams).length);

      const existing = await provision([], env);
      assert.equal(existing.code, 1, existing.stdout);
      assert.match(existing.stderr, /may not create or update stream MESH_\w+ .*needs the mesh's admin user/);
    });

    it("the admin creates or updates them", async () => {
      const r = await provision([], { NATS_URL: nats.url, ...natsAuthEnv(nats.auth.admin) });
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(
        lines(r.stdout).map((s) => s.name),
        Object.values(Streams),
      );
    });

    it("anonymous credentials are refused at once", async () => {
      const r = await provision(["--timeout", "60"], { NATS_URL: nats.url });
      assert.equal(r.code, 1);
      assert.match(r.stderr, /refused the connection/);
      assert.ok(r.ms < 20_000, `took ${r.ms} ms: refused credentials must not be retried`);
    });
  });

  describe("waiting for NATS", () => {
    it("keeps polling until a late server comes up", async () => {
      const port = await freePort();
      const running = startProvision(["--timeout", "60"], { NATS_URL: `nats://127.0.0.1:${port}` });
      // Start the server only once provision has found nothing there and is polling.
      const deadline = Date.now() + 30_000;
      while (!running.stderr().includes("is not ready") && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      const nats = await startNatsServer({ port });
      try {
        const r = await running.done;
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stderr, /is not ready .*retrying for up to 60s/);
        assert.equal(lines(r.stdout).length, Object.values(Streams).length);
      } finally {
        await nats.stop();
      }
    });

    it("gives up at --timeout naming the URL and the last error", async () => {
      const url = `nats://127.0.0.1:${await freePort()}`;
      const r = await provision(["--timeout", "1"], { NATS_URL: url });
      assert.equal(r.code, 1);
      assert.ok(r.ms >= 1_000, `gave up after ${r.ms} ms`);
      assert.match(
        r.stderr,
        new RegExp(
          `could not provision the streams on NATS at ${url} within 1s \\(\\d+ attempts?\\); last error: `,
        ),
      );
    });
  });
});
