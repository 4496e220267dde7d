/**
 * How `reward-mesh up` finds the mesh's NATS when the address is not simply free or simply NATS: a server
 * with TLS named by `NATS_URL` (its CA in `NATS_TLS_CA_FILE`, as the Helm chart sets) is used with the
 * `NATS_*` credentials, mutual TLS included; something that listens at `NATS_URL` but does not answer
 * as NATS JetStream is refused with the cure named, never replaced by a server of ours (whose seeds
 * would overwrite a live mesh's); the lock on the shared directories is broken by one process only; the
 * directories of a killed `up` are removed by the next start. Real nats-server, real certificates
 * (openssl), real processes.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { freePort, type LocalNats, loadNatsAuthOptions, startNatsServer } from "@reward-mesh/sdk";
import { createTestPki, type TestPki } from "@reward-mesh/sdk/testing";
import { breakStaleLock, LOCK_FILE, lockDir, startMeshNats } from "../src/commands/mesh-nats.js";
import { meshTestConfig } from "./mesh-config.js";

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "rm-mesh-probe-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const cliConfig = (sub: string, env: Record<string, string | undefined>, defaultNatsUrl?: string) =>
  meshTestConfig(dir, sub, env, defaultNatsUrl);

/** A pid whose process has exited. */
const deadPid = () => spawnSync(process.execPath, ["-e", "0"]).pid!;

/** Starts nats-server (JetStream on) with `config`, waiting until it answers to `env`'s credentials. */
async function natsWith(name: string, config: string, env: Record<string, string>): Promise<LocalNats> {
  const file = join(dir, `${name}.conf`);
  writeFileSync(file, config);
  return startNatsServer({
    configFile: file,
    storeDir: join(dir, `${name}-js`),
    auth: loadNatsAuthOptions(env),
  });
}

describe("a NATS with TLS named by NATS_URL", () => {
  let tls: TestPki;
  before(() => {
    tls = createTestPki();
  });
  after(() => tls.remove());

  it("is used with the CA and the token in NATS_* (no seeds written, no server started); without the CA, the cure is named", async () => {
    const env = { NATS_TLS_CA_FILE: tls.caCert, NATS_TOKEN: "over-tls" };
    const server = await natsWith(
      "tls",
      `tls { cert_file: "${tls.serverCert}", key_file: "${tls.serverKey}" }\nauthorization { token: "over-tls" }`,
      env,
    );
    try {
      const config = cliConfig("tls", { NATS_URL: server.url, ...env });
      const mesh = await startMeshNats(config);
      try {
        assert.equal(mesh.nats.started, false, "the server at NATS_URL is used");
        assert.equal(mesh.nats.url, server.url);
        assert.equal(mesh.credentialsDir, undefined);
        assert.equal(mesh.notice, undefined);
        assert.deepEqual(mesh.trainerAuth, config.bus.auth, "every process gets the NATS_* credentials");
        assert.equal(existsSync(config.natsAuthDir), false, "no seeds written, no lock taken");
      } finally {
        await mesh.nats.stop();
      }
      await assert.rejects(
        startMeshNats(cliConfig("tls", { NATS_URL: server.url, ...env, NATS_TOKEN: "wrong" })),
        /refused the connection.*check the NATS_\* credential variables/,
      );
      // No CA: the TLS handshake fails, which is no answer from NATS. Refused, naming the cure; nothing
      // started at an address something holds.
      await assert.rejects(
        startMeshNats(cliConfig("tls", { NATS_URL: server.url })),
        new RegExp(
          `^Error: something listens at ${server.url.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} but did not answer as NATS JetStream within 10 s: TLS\\? set NATS_TLS_CA_FILE.*or stop it`,
        ),
      );
      assert.equal(existsSync(config.natsAuthDir), false);
    } finally {
      await server.stop();
    }
  });

  it("with mutual TLS: the anonymous probe (CA only, no client certificate) gets no handshake, the NATS_* credentials are tried and used", async () => {
    const env = {
      NATS_TLS_CA_FILE: tls.caCert,
      NATS_TLS_CERT_FILE: tls.clientCert,
      NATS_TLS_KEY_FILE: tls.clientKey,
      NATS_TOKEN: "over-mtls",
    };
    const server = await natsWith(
      "mtls",
      `tls { cert_file: "${tls.serverCert}", key_file: "${tls.serverKey}", ca_file: "${tls.caCert}", verify: true }\nauthorization { token: "over-mtls" }`,
      env,
    );
    try {
      const config = cliConfig("mtls", { NATS_URL: server.url, ...env });
      const mesh = await startMeshNats(config);
      assert.equal(mesh.nats.started, false);
      assert.equal(mesh.nats.url, server.url);
      assert.deepEqual(mesh.trainerAuth, config.bus.auth);
      assert.equal(existsSync(config.natsAuthDir), false, "no seeds written");
      await mesh.nats.stop();
    } finally {
      await server.stop();
    }
  });
});

describe("something at the address that does not answer as NATS JetStream", () => {
  it("NATS_URL set: refused with the cure named; a stale lock and the shared seeds are left alone", async () => {
    // Stands for a server of a SIGKILLed up too slow to answer: it accepts connections and says nothing.
    const sockets: Socket[] = [];
    const silent = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const url = `nats://127.0.0.1:${(silent.address() as { port: number }).port}`;
    try {
      const config = cliConfig("silent", { NATS_URL: url });
      mkdirSync(config.natsAuthDir, { recursive: true });
      const lock = join(config.natsAuthDir, LOCK_FILE);
      const stale = `${deadPid()} 0123\n`;
      writeFileSync(lock, stale);
      writeFileSync(join(config.natsAuthDir, "admin.nk"), "the live mesh's seed");
      await assert.rejects(
        startMeshNats(config),
        /something listens at .* but did not answer as NATS JetStream within 10 s: TLS\? set NATS_TLS_CA_FILE.*or stop it/,
      );
      assert.equal(readFileSync(lock, "utf8"), stale, "the lock is not taken over");
      assert.equal(readFileSync(join(config.natsAuthDir, "admin.nk"), "utf8"), "the live mesh's seed");
      assert.deepEqual(readdirSync(config.natsAuthDir).sort(), ["admin.nk", LOCK_FILE]);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });
});

describe("the lock on the shared directories", () => {
  it("a stale lock is broken only under the break file, and only while it still holds what was judged dead", () => {
    const d = join(dir, "break");
    mkdirSync(d, { recursive: true });
    const lock = join(d, LOCK_FILE);
    const brk = `${lock}.break`;
    const stale = `${deadPid()} aaaa\n`;

    // Another process judged the lock dead and took it meanwhile: its lock is not removed.
    writeFileSync(lock, `${process.pid} bbbb\n`);
    assert.equal(breakStaleLock(lock, stale), false);
    assert.equal(readFileSync(lock, "utf8"), `${process.pid} bbbb\n`);
    assert.equal(existsSync(brk), false, "the break file is removed");

    // Another process is breaking it (a fresh break file): left to it, the lock is not taken here.
    writeFileSync(lock, stale);
    writeFileSync(brk, `${process.pid} cccc\n`);
    assert.equal(breakStaleLock(lock, stale), false);
    const held = lockDir(d);
    assert.ok("holder" in held, "not taken while another process breaks it");
    assert.equal(readFileSync(lock, "utf8"), stale);
    assert.equal(existsSync(brk), true, "a live breaker's file stays, however old");
    const old = new Date(Date.now() - 60_000);
    utimesSync(brk, old, old);
    assert.ok("holder" in lockDir(d));
    assert.equal(existsSync(brk), true);

    // A break file left by a process that died while breaking, older than 30 s: removed, the lock taken.
    writeFileSync(brk, `${deadPid()} dddd\n`);
    utimesSync(brk, old, old);
    const mine = lockDir(d);
    assert.ok("release" in mine, "taken");
    assert.equal(existsSync(brk), false);
    assert.match(readFileSync(lock, "utf8"), new RegExp(`^${process.pid} `));
    mine.release();
    assert.equal(existsSync(lock), false);

    // A fresh break file of a dead process: not yet removed (it may still be in use by a reused pid).
    writeFileSync(lock, stale);
    writeFileSync(brk, `${deadPid()} eeee\n`);
    assert.ok("holder" in lockDir(d));
    rmSync(brk);
    const taken = lockDir(d);
    assert.ok("release" in taken);
    taken.release();
  });

  it("of several processes that find the same stale lock at once, exactly one takes it", async () => {
    const d = join(dir, "race");
    const script = join(dir, "take-lock.ts");
    const module = fileURLToPath(new URL("../src/commands/mesh-nats.ts", import.meta.url));
    writeFileSync(
      script,
      [
        `import { lockDir } from ${JSON.stringify(module)};`,
        // Each child says it is ready and waits, idle, for "go": all three call lockDir within milliseconds
        // of one another however long each took to start. The holder releases when stdin ends.
        'console.log("ready");',
        'process.stdin.once("data", () => {',
        "  const l = lockDir(process.argv[2]);",
        '  console.log(JSON.stringify("release" in l ? { pid: process.pid, held: true } : { pid: process.pid, holder: l.holder }));',
        '  process.stdin.once("end", () => "release" in l && l.release());',
        "  process.stdin.resume();",
        "});",
      ].join("\n"),
    );
    const tsx = fileURLToPath(new URL("../../node_modules/tsx/dist/cli.mjs", import.meta.url));
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, LOCK_FILE), `${deadPid()} 0123\n`);
    const children = [0, 1, 2].map(() => {
      const child = spawn(process.execPath, [tsx, script, d], { stdio: ["pipe", "pipe", "pipe"] });
      const io = { out: "", err: "" };
      child.stdout.on("data", (b: Buffer) => {
        io.out += b.toString();
      });
      child.stderr.on("data", (b: Buffer) => {
        io.err += b.toString();
      });
      child.stdin.on("error", () => {}); // a child that died: its stderr is reported below, not an EPIPE
      const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
      return { child, io, exited };
    });
    try {
      // Until each child has printed `want` lines (a child that exits meanwhile fails the test).
      const lines = async (want: number) => {
        const t0 = Date.now();
        while (children.some((c) => c.io.out.split("\n").length <= want)) {
          const dead = children.find((c) => c.child.exitCode !== null || c.child.signalCode !== null);
          if (dead)
            throw new Error(
              `a child exited (${dead.child.exitCode ?? dead.child.signalCode}): ${dead.io.err}`,
            );
          assert.ok(
            Date.now() - t0 < 60_000,
            `children's output: ${children.map((c) => c.io.out).join(" | ")}`,
          );
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      await lines(1); // "ready" from all three
      for (const c of children) c.child.stdin.write("go\n");
      await lines(2); // each one's result
    } finally {
      for (const c of children) c.child.stdin.end();
    }
    const runs = children.map(
      (c) => JSON.parse(c.io.out.split("\n")[1]!) as { pid: number; held?: boolean; holder?: number },
    );
    const exitLimit = setTimeout(() => {
      for (const c of children) c.child.kill("SIGKILL");
    }, 60_000);
    const codes = await Promise.all(children.map((c) => c.exited));
    clearTimeout(exitLimit);
    assert.deepEqual(codes, [0, 0, 0], children.map((c) => c.io.err).join("\n"));
    const holders = runs.filter((r) => r.held);
    assert.equal(holders.length, 1, JSON.stringify(runs));
    for (const r of runs.filter((x) => !x.held)) assert.ok(r.holder !== undefined, JSON.stringify(runs));
    assert.equal(existsSync(join(d, `${LOCK_FILE}.break`)), false);
    assert.equal(existsSync(join(d, LOCK_FILE)), false, "released by its holder");
  });
});

describe("directories of a killed up", () => {
  it("are removed by the next start once their process is gone; a live process's and others stay", async () => {
    const config = cliConfig("orphans", {}, `nats://127.0.0.1:${await freePort()}`);
    const dead = `mesh-${deadPid()}-0a1b2c3d`;
    const live = `mesh-${process.ppid}-0a1b2c3d`;
    for (const parent of [config.natsAuthDir, config.natsStoreDir])
      for (const name of [dead, live, "keep"]) {
        mkdirSync(join(parent, name), { recursive: true });
        writeFileSync(join(parent, name, "f"), "x");
      }
    const mesh = await startMeshNats(config);
    try {
      for (const parent of [config.natsAuthDir, config.natsStoreDir]) {
        assert.equal(existsSync(join(parent, dead)), false, `${parent}/${dead} removed`);
        assert.ok(existsSync(join(parent, live)), "a live process's directories stay");
        assert.ok(existsSync(join(parent, "keep")));
      }
    } finally {
      await mesh.nats.stop();
    }
  });
});
