/**
 * The NATS of a local mesh (`reward-mesh up`, `demo`, `train --with-mesh`, `experiment`), with
 * authentication on by default. Whatever `NATS_*` holds, what listens at `NATS_URL` (nothing listening is
 * known at once, without a probe) is first asked as an anonymous client, since a server without
 * authentication accepts any NKEY or password; that probe gets the server's CA (`NATS_TLS_CA_FILE`), not
 * the client certificate. Each probe waits up to 10 s, as a loaded machine is slow:
 *
 * - it accepts anonymous clients: never used with authentication on, as anyone could forge rewards.
 *   `NATS_URL` set → refused, unless `REWARD_MESH_NATS_AUTH=off` (the explicit development opt-out: no users,
 *   no permissions; it needs `NATS_URL`, so the default address is never used without authentication); `NATS_URL` unset (a default address such as the service Debian's `nats-server` package
 *   starts on 127.0.0.1:4222) → our own server on a free port, as below, said in one line.
 * - it requires credentials: with `NATS_*` credentials (yours, e.g. a production cluster) it is used when it
 *   accepts them, every process gets them, and that server's configuration decides what they may do;
 *   without, `NATS_URL` set → refused, naming the variables; unset → our own server on a free port.
 * - it neither accepts nor refuses anonymous clients (mutual TLS: no handshake without a certificate;
 *   or not NATS at all): with `NATS_*` credentials they are tried as above; otherwise, or when they get no
 *   answer either, `NATS_URL` set → refused, naming the cure (TLS settings, or stopping what listens),
 *   never a server of ours started there; unset → our own server on a free port.
 * - nothing listens: generate one NKEY user per role (admin, trainer, each service; random seeds, files
 *   mode 0600), start `nats-server` with a configuration that knows only their public keys and grants each
 *   role its subjects, provision the streams as admin, and hand every process its own credentials through
 *   the environment. Anonymous clients are refused.
 *
 * A server started at the `NATS_URL` address keeps its users in the auth directory and its JetStream
 * store in the store directory, both held by the lock file `<auth dir>/up.lock` (created exclusively,
 * naming the process; a lock whose process is gone is broken under the exclusive `up.lock.break` and
 * taken over) from before the seeds are written until
 * the server is stopped, so seeds are never rewritten under a running server. A server on a free port, or
 * one started while another live process holds that lock, gets directories of its own,
 * `<auth dir>/<id>` and `<store dir>/<id>` (created fresh, mode 0700, `<id>` = `mesh-<pid>-<random>`),
 * removed when it stops, or by the next start once that process is gone (killed); it never
 * touches another mesh's seeds or store. A second `up` never joins a running mesh: joining one is explicit
 * (`NATS_URL` and the `NATS_*` credentials the first `up` prints).
 * @module
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { connect as tcpConnect } from "node:net";
import { randomBytes } from "node:crypto";
import { join, resolve } from "node:path";
import {
  ensureNats,
  isJetStreamReachable,
  type LocalNats,
  NatsAuthEnv,
  type NatsAuthOptions,
  NatsAuthRefusedError,
  natsAuthEnv,
  provisionMeshStreams,
  type ServiceIdentity,
  startNatsServer,
  writeMeshAuth,
} from "@reward-mesh/sdk";
import type { CliConfig } from "../config.js";
import { SERVICES } from "../services.js";

/** The NATS a mesh runs on, and the credentials each of its processes gets. */
export interface MeshNats {
  readonly nats: LocalNats;
  /** What the trainer connects with (undefined: anonymous). */
  readonly trainerAuth: NatsAuthOptions | undefined;
  /** Where the generated users are (undefined when none were generated). */
  readonly credentialsDir: string | undefined;
  /** Whose users the NATS has (see `mesh-record.ts`'s `MeshUsers`). */
  readonly users: "generated" | "yours" | "none";
  /** Each service's generated credentials, by name (empty unless `users` is `generated`). */
  readonly serviceAuth: Readonly<Record<string, NatsAuthOptions>>;
  /**
   * One line for people when the mesh's NATS is not at the `NATS_URL` address (or not in the shared
   * directories): what was found, and the URL used instead.
   */
  readonly notice: string | undefined;
  /**
   * Environment for service `name`'s process on top of the inherited one: its own credentials, with
   * the inherited `NATS_*` credential variables blanked (blank counts as unset) so none leak into it.
   */
  envFor(name: string): Record<string, string>;
}

/** The lock file in the auth directory held while a server started with that directory's users runs. */
export const LOCK_FILE = "up.lock";

/** True when `auth` holds a credential: the server's CA (`tlsCaFile`) and the inbox prefix are none. */
function hasCredentials(auth: NatsAuthOptions | undefined): boolean {
  return Object.entries(auth ?? {}).some(
    ([k, v]) => k !== "inboxPrefix" && k !== "tlsCaFile" && v !== undefined,
  );
}

/** Service names and the domains each consumes, from their manifests. */
async function serviceIdentities(): Promise<ServiceIdentity[]> {
  // The configured domains (a manifest's, or its `domainsEnv` variable's list): the same list discovery
  // checks each loaded definition against, so a widened service may subscribe to what it consumes.
  return Promise.all(SERVICES.map(async (e) => ({ name: e.name, domains: e.domains })));
}

/** Host (`localhost` as 127.0.0.1) and port of each server of a NATS URL (comma-separated), in order. */
function hostPorts(url: string): Array<{ host: string; port: number }> {
  return url.split(",").map((one) => {
    const u = new URL(one.trim());
    const host = u.hostname === "localhost" ? "127.0.0.1" : u.hostname.replace(/^\[(.*)\]$/, "$1");
    return { host, port: Number(u.port || 4222) };
  });
}

/** Where a server for `url` can be started here (throws for a remote one). */
function localHostPort(url: string): { host: string; port: number } {
  const at = hostPorts(url)[0]!;
  if (at.host !== "127.0.0.1" && at.host !== "::1")
    throw new Error(`NATS at ${url} is not reachable, and it is not local, so it cannot be started here`);
  return at;
}

/** True when something accepts TCP connections at host:port (whatever it speaks). */
function listening(host: string, port: number, timeoutMs = 5000): Promise<boolean> {
  return new Promise((done) => {
    const socket = tcpConnect({ host, port });
    const finish = (v: boolean) => {
      socket.destroy();
      done(v);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once("connect", () => finish(true));
    socket.once("error", () => finish(false));
  });
}

/**
 * How long a server that listens gets to answer as NATS JetStream: generous, as a loaded machine is slow,
 * and only paid when something listens (nothing listening is known at once, without a probe).
 */
const PROBE_MS = 10_000;

const BLANK_CREDENTIALS = Object.fromEntries(Object.values(NatsAuthEnv).map((k) => [k, ""]));

/** True while process `pid` exists (EPERM: it exists, and belongs to someone else). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** A held {@link LOCK_FILE}, or the process holding it (-1: unreadable). */
export type DirLock = { readonly release: () => void } | { readonly holder: number };

/** A break file (`up.lock.break`) older than this whose process is gone is itself removed. */
export const STALE_BREAK_MS = 30_000;

/**
 * Removes the lock `file` if it still holds `judged` (the content of a lock whose process is gone), under
 * the exclusive break file `<file>.break`: of several processes that judged the same lock dead, only
 * one removes it, and never a lock taken meanwhile by another. A break file left by a process that died
 * while breaking (older than {@link STALE_BREAK_MS}, its process gone) is removed, for a next attempt.
 * @returns whether this call removed the lock
 */
export function breakStaleLock(file: string, judged: string): boolean {
  const brk = `${file}.break`;
  try {
    writeFileSync(brk, `${process.pid} ${randomBytes(8).toString("hex")}\n`, { flag: "wx", mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    try {
      const pid = Number(readFileSync(brk, "utf8").split(" ")[0]);
      if (Date.now() - statSync(brk).mtimeMs > STALE_BREAK_MS && !(pid > 0 && alive(pid)))
        rmSync(brk, { force: true });
    } catch {
      // removed meanwhile by its owner
    }
    return false;
  }
  try {
    let now: string;
    try {
      now = readFileSync(file, "utf8");
    } catch {
      return false; // released meanwhile
    }
    if (now !== judged) return false; // taken meanwhile: not the lock judged dead
    rmSync(file, { force: true });
    return true;
  } finally {
    rmSync(brk, { force: true });
  }
}

/**
 * Takes `<dir>/up.lock` (created exclusively, naming this process and a token of this call). A lock whose
 * process is gone (a crashed `up`) is broken ({@link breakStaleLock}) and taken once more; a lock held by
 * a live process, or one that cannot be read (being written), is left alone.
 */
export function lockDir(dir: string): DirLock {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, LOCK_FILE);
  const mine = `${process.pid} ${randomBytes(8).toString("hex")}\n`;
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, mine, { flag: "wx", mode: 0o600 });
      return {
        release: () => {
          try {
            // Only our own lock (never one taken over after ours was judged stale).
            if (readFileSync(file, "utf8") === mine) rmSync(file, { force: true });
          } catch {
            // gone already
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT" && attempt < 2) continue; // released meanwhile
      throw err;
    }
    const pid = Number(text.split(" ")[0]);
    if (!Number.isInteger(pid) || pid <= 0) return { holder: -1 };
    if (alive(pid)) return { holder: pid };
    if (attempt >= 2) return { holder: -1 }; // being broken by another process, or taken meanwhile
    breakStaleLock(file, text); // its process is gone; whoever breaks it, the next attempt sees the result
  }
}

/** The name of a server's own directories: `mesh-<pid>-<random>`. */
const INSTANCE_DIR = /^mesh-(\d+)-[0-9a-f]+$/;

/** Fresh directories of one server's own: `<authDir>/<id>` and `<storeDir>/<id>`, mode 0700. */
function instanceDirs(authDir: string, storeDir: string): { auth: string; store: string } {
  const id = `mesh-${process.pid}-${randomBytes(4).toString("hex")}`;
  const made: string[] = [];
  try {
    for (const parent of [authDir, storeDir]) {
      mkdirSync(parent, { recursive: true, mode: 0o700 });
      mkdirSync(join(parent, id), { mode: 0o700 }); // fails if it exists: never someone else's
      made.push(join(parent, id));
    }
  } catch (err) {
    for (const d of made) rmSync(d, { recursive: true, force: true });
    throw err;
  }
  return { auth: join(authDir, id), store: join(storeDir, id) };
}

/**
 * Removes the `mesh-<pid>-*` directories under `parents` whose process is gone (a killed `up`, which
 * could not remove its own). Best effort: one that cannot be read or removed is left.
 */
function removeOrphanDirs(...parents: string[]): void {
  for (const parent of parents) {
    let names: string[];
    try {
      names = readdirSync(parent);
    } catch {
      continue; // not there yet
    }
    for (const name of names) {
      const pid = Number(INSTANCE_DIR.exec(name)?.[1] ?? 0);
      if (pid > 0 && pid !== process.pid && !alive(pid))
        try {
          rmSync(join(parent, name), { recursive: true, force: true });
        } catch {
          // left for the next start
        }
    }
  }
}

/** A server this mesh does not own: stopping the mesh leaves it running. */
const external = (url: string): LocalNats => ({ url, started: false, stop: async () => {}, kill: () => {} });

const CREDENTIAL_VARIABLES = "NATS_NKEY_SEED_FILE, NATS_CREDS_FILE, NATS_USER/NATS_PASSWORD or NATS_TOKEN";

/**
 * Finds or starts the mesh's NATS as described in the module comment; `remotes` are services served
 * elsewhere (`up --remote`) that get a generated user too.
 */
export async function startMeshNats(
  config: CliConfig,
  remotes: readonly ServiceIdentity[] = [],
): Promise<MeshNats> {
  const url = config.bus.natsUrl;
  const storeDir = resolve(config.natsStoreDir);
  const authDir = resolve(config.natsAuthDir);
  const userAuth = config.bus.auth;
  const inherit = {
    trainerAuth: userAuth,
    credentialsDir: undefined,
    notice: undefined,
    users: hasCredentials(userAuth) ? ("yours" as const) : ("none" as const),
    serviceAuth: {},
    envFor: () => ({}),
  };
  if (config.natsAuth === "off") {
    // An anonymous server only where the user points: never the default address (Debian's nats-server).
    if (!config.natsUrlExplicit)
      throw new Error(
        `REWARD_MESH_NATS_AUTH=off runs the mesh on a NATS without users, which needs NATS_URL naming that server (e.g. NATS_URL=nats://127.0.0.1:<port>: one there is used, or started when nothing listens); NATS_URL is not set, and the default ${url} is never used without authentication`,
      );
    return { ...inherit, nats: await ensureNats(url, { storeDir, ...(userAuth ? { auth: userAuth } : {}) }) };
  }
  removeOrphanDirs(authDir, storeDir);
  const unset = `NATS_URL is not set, and the server at the default ${url}`;
  /** Why the mesh does not run at `url` with the shared directories (undefined: it does). */
  let elsewhere: string | undefined;
  // Nothing listening is known at once: no probe (and no server to mistake for a dead one). Whatever
  // listens is asked as an anonymous client first, whatever NATS_* holds: a server without
  // authentication accepts any credentials. It gets the server's CA (NATS_TLS_CA_FILE) to verify the
  // server with, but not the client certificate, itself a credential.
  const occupied = (await Promise.all(hostPorts(url).map((a) => listening(a.host, a.port)))).includes(true);
  let anonymous = false;
  let refusal: NatsAuthRefusedError | undefined;
  if (occupied) {
    try {
      anonymous = await isJetStreamReachable(
        url,
        PROBE_MS,
        userAuth?.tlsCaFile ? { tlsCaFile: userAuth.tlsCaFile } : undefined,
      );
    } catch (err) {
      if (!(err instanceof NatsAuthRefusedError)) throw err;
      refusal = err;
    }
  }
  const inconclusive = occupied && !anonymous && !refusal; // e.g. mutual TLS: no handshake without a certificate
  if (anonymous) {
    if (config.natsUrlExplicit)
      throw new Error(
        `NATS at ${url} accepts anonymous clients, who could forge rewards${hasCredentials(userAuth) ? " (so it would accept any credentials, the NATS_* ones too)" : ""}; reward-mesh runs NATS with authentication on: stop that server (reward-mesh then starts its own with generated users), name a server with authentication in NATS_URL and its credentials in NATS_*, or set REWARD_MESH_NATS_AUTH=off to use it without (development only)`,
      );
    elsewhere = `${unset} accepts anonymous clients, who could forge rewards`;
  } else if ((refusal || inconclusive) && hasCredentials(userAuth)) {
    let accepted: boolean;
    try {
      accepted = await isJetStreamReachable(url, PROBE_MS, userAuth);
    } catch (err) {
      if (!(err instanceof NatsAuthRefusedError)) throw err;
      throw new Error(`${err.message}: check the NATS_* credential variables`, { cause: err });
    }
    if (accepted) return { ...inherit, nats: external(url) };
    if (refusal)
      throw new Error(
        `NATS at ${url} refuses anonymous clients, and JetStream did not answer with the credentials in NATS_* within ${PROBE_MS / 1000} s`,
      );
  } else if (refusal) {
    if (config.natsUrlExplicit)
      throw new Error(
        `${refusal.message}: it requires credentials — set ${CREDENTIAL_VARIABLES} (a running 'reward-mesh up' prints its trainer's), or stop it so that 'reward-mesh up' starts its own`,
        { cause: refusal },
      );
    elsewhere = `${unset} requires credentials reward-mesh does not have`;
  }
  if (inconclusive) {
    // Never a server of ours at an address something holds: its seeds or store could be a live mesh's.
    if (config.natsUrlExplicit)
      throw new Error(
        `something listens at ${url} but did not answer as NATS JetStream within ${PROBE_MS / 1000} s${hasCredentials(userAuth) ? " (anonymously, nor with the credentials in NATS_*)" : ""}: TLS? set NATS_TLS_CA_FILE (and NATS_TLS_CERT_FILE/NATS_TLS_KEY_FILE for mutual TLS); or stop it, so that reward-mesh starts its own there`,
      );
    elsewhere = `NATS_URL is not set, and what listens at the default ${url} does not answer as NATS JetStream`;
  }
  const at = localHostPort(url);
  // A server at the URL's address uses the shared directories, under their lock; one on a free port (the
  // address is someone else's), or one started while the lock is held, gets directories of its own.
  let lock: DirLock | undefined;
  if (elsewhere === undefined) {
    lock = lockDir(authDir);
    if ("holder" in lock)
      elsewhere = `${join(authDir, LOCK_FILE)} is held by ${lock.holder > 0 ? `running process ${lock.holder}` : "another process"}, whose NATS uses the users in ${authDir}`;
  }
  const shared = lock !== undefined && "release" in lock ? lock : undefined;
  // The free port: the address is taken, or about to be by the lock's holder (unless the user named it).
  const port = elsewhere === undefined || config.natsUrlExplicit ? at.port : -1;
  let dirs: { auth: string; store: string } | undefined;
  const cleanup = () => {
    if (shared) shared.release();
    else if (dirs) for (const d of [dirs.auth, dirs.store]) rmSync(d, { recursive: true, force: true });
  };
  let started: LocalNats;
  let auth: Awaited<ReturnType<typeof writeMeshAuth>>;
  try {
    dirs = shared ? { auth: authDir, store: storeDir } : instanceDirs(authDir, storeDir);
    auth = await writeMeshAuth(dirs.auth, [...(await serviceIdentities()), ...remotes]);
    started = await startNatsServer({
      host: at.host,
      port,
      storeDir: dirs.store,
      configFile: auth.configFile,
      auth: auth.admin,
    });
  } catch (err) {
    cleanup();
    throw err;
  }
  const nats: LocalNats = {
    ...started,
    stop: async () => {
      try {
        await started.stop();
      } finally {
        cleanup();
      }
    },
  };
  try {
    // Only the admin may create streams: provision them before any service or trainer connects.
    await provisionMeshStreams(
      { ...config.bus, natsUrl: nats.url, auth: auth.admin },
      "reward-mesh-provision",
    );
  } catch (err) {
    await nats.stop();
    throw err;
  }
  return {
    nats,
    trainerAuth: auth.trainer,
    credentialsDir: dirs.auth,
    users: "generated",
    serviceAuth: auth.services,
    notice:
      elsewhere === undefined
        ? undefined
        : `${elsewhere}: this mesh runs its own NATS, with its own users and store, at ${nats.url}`,
    envFor: (name) => {
      const own = auth.services[name];
      if (!own) throw new Error(`no NATS user was generated for service '${name}'`);
      return { ...BLANK_CREDENTIALS, ...natsAuthEnv(own) };
    },
  };
}
