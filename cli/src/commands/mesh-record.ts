/**
 * How every command finds the mesh: `reward-mesh up` records its NATS in `<auth dir>/mesh.json` (default
 * `.nats/auth/mesh.json` under the current directory; `REWARD_MESH_NATS_AUTH_DIR` moves it) — the URL, whose
 * users it runs with, the credential files of each role (the trainer, every service, every `--remote`
 * service), and its pid — and every command that joins a running mesh (`train` without `--with-mesh`,
 * `serve --remote`, `check`) reads it when `NATS_URL` is not set. The rule, the same for all of them:
 *
 * - `NATS_URL` set: that server, with the `NATS_*` credentials (naming it is the choice);
 * - `NATS_URL` unset: the mesh `up` recorded, with the credentials of the command's role, and nothing
 *   else: the default address (`nats://127.0.0.1:4222`, where Debian's anonymous `nats-server` service
 *   listens) is never dialled. No live record: an error saying to start `reward-mesh up` or to set
 *   `NATS_URL`.
 *
 * The record is created exclusively when `up` starts (`state: "starting"`, so a command started right
 * after `reward-mesh up &` waits for it), completed once the mesh is ready, and removed when `up` stops; a
 * record whose process is gone (a killed `up`) counts as none and is replaced by the next `up`. A second
 * `up` while one runs is not recorded (it says so and prints its `NATS_URL`/`NATS_*` instead). The file
 * holds paths of credential files (mode 0600), never a secret.
 * @module
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { BusOptions, NatsAuthOptions } from "@reward-mesh/sdk";
import type { CliConfig } from "../config.js";
import { alive, breakStaleLock } from "./mesh-nats.js";

/** The record's file name in the auth directory. */
export const MESH_RECORD = "mesh.json";

/**
 * Whose users the recorded NATS has: `generated` (each role's credential files are in the record),
 * `yours` (a NATS you named in `NATS_URL`, with your `NATS_*` credentials: each command uses its own
 * `NATS_*`), `none` (`REWARD_MESH_NATS_AUTH=off` on a `NATS_URL` you named: anonymous).
 */
export type MeshUsers = "generated" | "yours" | "none";

/** What `up` records. */
export interface MeshRecord {
  readonly pid: number;
  /** Tells this `up`'s record from a later one's. */
  readonly token: string;
  readonly state: "starting" | "ready";
  readonly natsUrl?: string;
  readonly users?: MeshUsers;
  readonly trainer?: NatsAuthOptions;
  /** Each service's credentials (with `users: generated`), `--remote` ones included. */
  readonly services?: Readonly<Record<string, NatsAuthOptions>>;
}

/** Where the record of `config`'s mesh is. */
export function meshRecordFile(config: CliConfig): string {
  return join(resolve(config.natsAuthDir), MESH_RECORD);
}

/** The mesh a running `up` is ready with. */
export interface ReadyMesh {
  readonly natsUrl: string;
  readonly users: MeshUsers;
  readonly trainer: NatsAuthOptions | undefined;
  readonly services: Readonly<Record<string, NatsAuthOptions>>;
}

/** The record this process holds: completed with {@link ready}, removed with {@link release}. */
export interface HeldRecord {
  readonly file: string;
  ready(mesh: ReadyMesh): void;
  release(): void;
}

function parse(text: string): MeshRecord | undefined {
  try {
    const r = JSON.parse(text) as MeshRecord;
    return Number.isInteger(r.pid) && r.pid > 0 && typeof r.token === "string" ? r : undefined;
  } catch {
    return undefined; // being written
  }
}

/**
 * Creates the record (exclusively; one whose process is gone is broken and replaced) naming this process
 * as a starting mesh, or returns the live process that holds it.
 */
export function claimMeshRecord(config: CliConfig): HeldRecord | { readonly holder: number } {
  const file = meshRecordFile(config);
  mkdirSync(resolve(config.natsAuthDir), { recursive: true, mode: 0o700 });
  const token = randomBytes(8).toString("hex");
  const write = (r: MeshRecord, flag: "wx" | "w", to = file) =>
    writeFileSync(to, `${JSON.stringify(r, null, 2)}\n`, { flag, mode: 0o600 });
  const mine = () => parse(readText(file) ?? "")?.token === token;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      write({ pid: process.pid, token, state: "starting" }, "wx");
      return {
        file,
        ready: (m) => {
          if (!mine()) return;
          // Whole or not at all for readers: written beside it, then renamed over it.
          const tmp = `${file}.${token}`;
          write({ pid: process.pid, token, state: "ready", ...m }, "w", tmp);
          renameSync(tmp, file);
        },
        release: () => {
          if (mine()) rmSync(file, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const text = readText(file);
    if (text === undefined) continue; // removed meanwhile
    const held = parse(text);
    if (held && alive(held.pid)) return { holder: held.pid };
    if (!held) return { holder: -1 }; // being written by another process
    breakStaleLock(file, text); // a killed up's: whoever breaks it, the next attempt sees the result
  }
  return { holder: -1 };
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** No running mesh was found, or it has no user for the role asked. */
export class NoMeshError extends Error {
  override readonly name = "NoMeshError";
}

/** How long {@link findMesh} waits. */
export interface FindMeshOptions {
  /** For a record to appear (a `reward-mesh up &` started just before). */
  readonly appearMs: number;
  /** For a starting `up` to be ready (it fails by itself when its services do not start). */
  readonly readyMs: number;
}

/**
 * The ready mesh of a live `up` from the record, waiting `appearMs` for one to appear and, while its
 * process lives, up to `readyMs` for a starting one to be ready.
 */
export async function findMesh(
  config: CliConfig,
  o: FindMeshOptions = { appearMs: config.meshAppearMs, readyMs: 300_000 },
): Promise<MeshRecord & ReadyMesh> {
  const file = meshRecordFile(config);
  const t0 = Date.now();
  let seenStarting: number | undefined;
  for (;;) {
    const r = parse(readText(file) ?? "");
    const live = r !== undefined && alive(r.pid);
    if (live && r.state === "ready" && r.natsUrl !== undefined && r.users !== undefined)
      return { ...r, natsUrl: r.natsUrl, users: r.users, trainer: r.trainer, services: r.services ?? {} };
    if (live) seenStarting = r.pid;
    const waited = Date.now() - t0;
    if (live ? waited >= o.readyMs : waited >= o.appearMs) {
      const why = live
        ? `the reward-mesh up of process ${r.pid} (${file}) was not ready within ${o.readyMs / 1000} s`
        : seenStarting !== undefined
          ? `the reward-mesh up of process ${seenStarting} stopped before its mesh was ready (see its output)`
          : `no reward-mesh up runs here (${r ? `${file} names process ${r.pid}, which is gone` : `none is recorded in ${file}`})`;
      throw new NoMeshError(
        `NATS_URL is not set, and ${why}: start the mesh with 'reward-mesh up' in this directory (it records its NATS and credentials there; REWARD_MESH_NATS_AUTH_DIR moves the record), or set NATS_URL (and the NATS_* credentials) to use another NATS; a NATS nobody named, such as one at the default ${config.bus.natsUrl}, is never used`,
      );
    }
    await sleep(100);
  }
}

/** Who is connecting: the trainer (`train`, `check`) or a reward service (`serve --remote`). */
export type MeshRole = { readonly kind: "trainer" } | { readonly kind: "service"; readonly name: string };

/**
 * The bus options of `role` on the mesh: `config.bus` when `NATS_URL` is set; otherwise the recorded
 * mesh's URL with the role's credentials (see the module comment).
 */
export async function meshBusOptions(config: CliConfig, role: MeshRole): Promise<BusOptions> {
  if (config.natsUrlExplicit) return config.bus;
  const mesh = await findMesh(config);
  const { auth: yours, ...rest } = config.bus;
  let auth: NatsAuthOptions | undefined;
  if (mesh.users === "yours") auth = yours;
  else if (mesh.users === "generated") {
    auth = role.kind === "trainer" ? mesh.trainer : mesh.services[role.name];
    if (!auth)
      throw new NoMeshError(
        role.kind === "service"
          ? `the mesh of reward-mesh up (process ${mesh.pid}, ${meshRecordFile(config)}) has no NATS user for service '${role.name}': restart it with 'reward-mesh up --remote ${role.name}=<host:port>', which generates that service's user (allowed only its own domains' rollouts and its own results)`
          : `the record of reward-mesh up (process ${mesh.pid}, ${meshRecordFile(config)}) names no trainer credentials`,
      );
  }
  return { ...rest, natsUrl: mesh.natsUrl, ...(auth ? { auth } : {}) };
}
