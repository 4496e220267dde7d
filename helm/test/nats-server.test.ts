/**
 * The rendered nats.conf on a real nats-server (>= 2.9: Debian's 2.9 is the oldest the chart supports),
 * started the way the StatefulSet starts it: `nats-server --config`, each password in the environment
 * from the generated Secret. Anonymous and wrong credentials are refused; the admin creates the streams;
 * a service may create its own durable consumers and no other service's. Skips when nats-server is not
 * on PATH (`scripts/bootstrap.sh` installs it).
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { AckPolicy, jetstreamManager } from "@nats-io/jetstream";
import {
  connectBus,
  ensureStreams,
  inboxPrefixOf,
  isPermissionViolation,
  loadBusOptions,
  serviceUser,
} from "@reward-mesh/sdk";
import { type Any, container, find, natsConf, renderChart } from "./helm.js";

const FULL = "rm-reward-mesh";
const natsServer = spawnSync("nats-server", ["--version"], { encoding: "utf8" });
const skip = natsServer.error ? "nats-server is not on PATH (scripts/bootstrap.sh installs it)" : false;

/** `n` distinct free ports: every socket is bound before any is closed, so no two answers are the same. */
async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const s = createServer();
          s.once("error", reject);
          s.listen(0, "127.0.0.1", () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

describe(`rendered nats.conf on ${skip ? "nats-server" : natsServer.stdout.trim()}`, { skip }, () => {
  let dir = "";
  let proc: ChildProcess | undefined;
  let url = "";
  const passwords = new Map<string, string>();

  before(async () => {
    const objs = await renderChart({ nats: { replicas: 1 } });
    const secret = find(objs, "Secret", `${FULL}-nats-auth`)["data"] as Record<string, string>;
    for (const [user, b64] of Object.entries(secret))
      passwords.set(user, Buffer.from(b64, "base64").toString());
    dir = mkdtempSync(join(tmpdir(), "rm-helm-nats-"));
    const [port, http] = await freePorts(2);
    url = `nats://127.0.0.1:${port}`;
    const conf = natsConf(objs)
      .replace(/^port: \d+$/m, `port: ${port}\nhost: "127.0.0.1"`)
      .replace(/^http_port: \d+$/m, `http_port: ${http}`)
      .replace('store_dir: "/data/jetstream"', `store_dir: ${JSON.stringify(join(dir, "js"))}`)
      .replace('pid_file: "/tmp/nats.pid"', `pid_file: ${JSON.stringify(join(dir, "nats.pid"))}`);
    writeFileSync(join(dir, "nats.conf"), conf);
    // The container's environment, as the StatefulSet gives it (POD_NAME + each password from the Secret).
    const c = container(find(objs, "StatefulSet", `${FULL}-nats`), "nats");
    const env: Record<string, string> = { PATH: process.env["PATH"] ?? "", POD_NAME: `${FULL}-nats-0` };
    for (const e of c.env as Any[]) {
      if (e.valueFrom?.secretKeyRef) env[e.name] = passwords.get(e.valueFrom.secretKeyRef.key)!;
      // The kubelet's dependent-variable expansion: $(NAME) of an earlier variable.
      else if (typeof e.value === "string")
        env[e.name] = e.value.replace(
          /\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g,
          (m: string, n: string) => env[n] ?? m,
        );
    }
    const p = spawn("nats-server", ["--config", join(dir, "nats.conf")], {
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    proc = p;
    let log = "";
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`nats-server did not start:\n${log}`)), 15_000);
      p.stderr!.on("data", (d: Buffer) => {
        log += d.toString();
        if (log.includes("Server is ready")) {
          clearTimeout(t);
          resolve();
        }
      });
      p.on("exit", (code) => {
        clearTimeout(t);
        reject(new Error(`nats-server exited ${code}:\n${log}`));
      });
    });
  });

  after(() => {
    proc?.kill("SIGTERM");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const auth = (user: string) => ({ user, password: passwords.get(user)!, inboxPrefix: inboxPrefixOf(user) });

  it("refuses anonymous clients and wrong passwords", async () => {
    await assert.rejects(connectBus(url, "anonymous"), /requires credentials/);
    await assert.rejects(
      connectBus(url, "wrong", { user: "trainer", password: "not-the-password" }),
      /refused the connection/,
    );
  });

  it("lets the admin create the mesh streams", async () => {
    const nc = await connectBus(url, "provision", auth("admin"));
    try {
      const jsm = await jetstreamManager(nc);
      await ensureStreams(jsm, loadBusOptions({}));
      const names: string[] = [];
      for await (const s of jsm.streams.list()) names.push(s.config.name);
      assert.deepEqual(names.sort(), ["MESH_ADVANTAGES", "MESH_DLQ", "MESH_REWARDS", "MESH_ROLLOUTS"]);
    } finally {
      await nc.close();
    }
  });

  it("lets a service create its own durable consumer and no other service's", async () => {
    const user = serviceUser("ast");
    const nc = await connectBus(url, user, auth(user));
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.info("MESH_ROLLOUTS");
      const mine = await jsm.consumers.add("MESH_ROLLOUTS", {
        durable_name: "ast--code",
        filter_subject: "mesh.rollouts.code.>",
        ack_policy: AckPolicy.Explicit,
      });
      assert.equal(mine.name, "ast--code");
      await assert.rejects(
        jsm.consumers.add("MESH_ROLLOUTS", {
          durable_name: "length--code",
          filter_subject: "mesh.rollouts.code.>",
          ack_policy: AckPolicy.Explicit,
        }),
        (err) => isPermissionViolation(err),
      );
      await assert.rejects(
        jsm.consumers.add("MESH_ROLLOUTS", {
          durable_name: "ast--code",
          filter_subject: "mesh.rollouts.agent.>",
          ack_policy: AckPolicy.Explicit,
        }),
        (err) => isPermissionViolation(err),
      );
    } finally {
      await nc.close();
    }
  });

  it("accepts the 3-server cluster configuration", async () => {
    const objs = await renderChart({ nats: { replicas: 3 } });
    const file = join(dir, "cluster.conf");
    writeFileSync(file, natsConf(objs));
    const env: Record<string, string> = { PATH: process.env["PATH"] ?? "", POD_NAME: "nats-0" };
    for (const u of passwords.keys()) env[`NATS_PASSWORD_${u.toUpperCase().replaceAll("-", "_")}`] = '"1x"';
    const r = spawnSync("nats-server", ["-t", "--config", file], { env, encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr + r.stdout);
  });
});
