/**
 * The NATS of a local mesh (`reward-mesh up`, `demo`, `train --with-mesh`, `experiment`), with
 * authentication on by default:
 *
 * - a server this state directory's `up` started is still running (`<auth dir>/server.json` names it, and
 *   it accepts the generated admin): re-used, with the users already generated — a second `up`/`demo`
 *   in the same directory joins the first instead of starting yet another server;
 * - nothing answers at `NATS_URL`: generate one NKEY user per role (admin, trainer, each service;
 *   random seeds, files mode 0600 under the data directory), start `nats-server` with a configuration
 *   that knows only their public keys and grants each role its subjects, provision the streams as admin,
 *   and hand every process its own credentials through the environment. Anonymous clients are refused.
 * - a server answers and accepts the credentials in `NATS_*` (yours, e.g. a production cluster): use it;
 *   every process gets those credentials, and that server's configuration decides what they may do.
 * - `NATS_URL` is not set, and the default address is held by a server reward-mesh did not start (one open
 *   to anonymous clients, like the service Debian's `nats-server` package starts on 127.0.0.1:4222; one that
 *   refuses anonymous clients; anything else listening there): start our own, as above, on a free local
 *   port, say so in one line, and hand every process that URL.
 * - `NATS_URL` names a server that answers to anonymous clients: refused, since it would let anyone forge
 *   rewards — unless `REWARD_MESH_NATS_AUTH=off`, the explicit development opt-out (no users, no permissions).
 * @module
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect as tcpConnect } from "node:net";
import { join, resolve } from "node:path";
import {
  ensureNats,
  inboxPrefixOf,
  isJetStreamReachable,
  type LocalNats,
  NatsAuthEnv,
  type NatsAuthOptions,
  NatsAuthRefusedError,
  natsAuthEnv,
  provisionMeshStreams,
  type ServiceIdentity,
  serviceUser,
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
  /**
   * One line for people when the mesh's NATS is not where `NATS_URL` points by default: the server found
   * there and the URL chosen instead, or the server of an earlier `up` that is re-used.
   */
  readonly notice: string | undefined;
  /**
   * Environment for service `name`'s process on top of the inherited one: its own credentials, with
   * the inherited `NATS_*` credential variables blanked (blank counts as unset) so none leak into it.
   */
  envFor(name: string): Record<string, string>;
}

/** The file in the auth directory naming the server started with its users: `{"url", "pid"}`. */
export const SERVER_FILE = "server.json";

function hasCredentials(auth: NatsAuthOptions | undefined): boolean {
  return Object.entries(auth ?? {}).some(([k, v]) => k !== "inboxPrefix" && v !== undefined);
}

/** Service names and the domains each consumes, from their manifests. */
async function serviceIdentities(): Promise<ServiceIdentity[]> {
  // The configured domains (a manifest's, or its `domainsEnv` variable's list): the same list discovery
  // checks each loaded definition against, so a widened service may subscribe to what it consumes.
  return Promise.all(SERVICES.map(async (e) => ({ name: e.name, domains: e.domains })));
}

function localHostPort(url: string): { host: string; port: number } {
  const u = new URL(url.split(",")[0]!.trim());
  const host = u.hostname === "localhost" ? "127.0.0.1" : u.hostname;
  if (host !== "127.0.0.1" && host !== "::1")
    throw new Error(`NATS at ${url} is not reachable, and it is not local, so it cannot be started here`);
  return { host, port: Number(u.port || 4222) };
}

/** `nats://localhost:4222` and `nats://127.0.0.1:4222/` are the same address. */
function sameAddress(a: string, b: string): boolean {
  try {
    const x = localHostPort(a);
    const y = localHostPort(b);
    return x.host === y.host && x.port === y.port;
  } catch {
    return a === b;
  }
}

/** True when something accepts TCP connections at host:port (whatever it speaks). */
function listening(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
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

/** The generated users of `dir` (written by `writeMeshAuth`), without generating new ones. */
function generatedUsers(dir: string): {
  admin: NatsAuthOptions;
  trainer: NatsAuthOptions;
  service(name: string): NatsAuthOptions;
} {
  const user = (name: string): NatsAuthOptions => ({
    nkeySeedFile: join(dir, `${name}.nk`),
    inboxPrefix: inboxPrefixOf(name),
  });
  return { admin: user("admin"), trainer: user("trainer"), service: (name) => user(serviceUser(name)) };
}

/**
 * The server an earlier `up` of this state directory started and still runs, if it answers at the URL in
 * `<auth dir>/server.json` and accepts that directory's admin: its URL, else undefined.
 */
async function runningOwnServer(dir: string): Promise<{ url: string; pid: number } | undefined> {
  const file = join(dir, SERVER_FILE);
  if (!existsSync(file) || !existsSync(join(dir, "admin.nk"))) return undefined;
  let record: { url?: unknown; pid?: unknown };
  try {
    record = JSON.parse(readFileSync(file, "utf8")) as typeof record;
  } catch {
    return undefined; // a torn or foreign file: not a server we can vouch for
  }
  if (typeof record.url !== "string") return undefined;
  try {
    if (!(await isJetStreamReachable(record.url, 1500, generatedUsers(dir).admin))) return undefined;
  } catch (err) {
    if (err instanceof NatsAuthRefusedError) return undefined; // another server took the port since
    throw err;
  }
  return { url: record.url, pid: typeof record.pid === "number" ? record.pid : -1 };
}

const BLANK_CREDENTIALS = Object.fromEntries(Object.values(NatsAuthEnv).map((k) => [k, ""]));

function envOfUsers(users: ReturnType<typeof generatedUsers>): (name: string) => Record<string, string> {
  return (name) => {
    const own = users.service(name);
    if (!existsSync(own.nkeySeedFile!)) throw new Error(`no NATS user was generated for service '${name}'`);
    return { ...BLANK_CREDENTIALS, ...natsAuthEnv(own) };
  };
}

/** Why the default address is not usable as the mesh's NATS, or undefined when nothing holds it. */
type Foreign = string | undefined;

/** Finds or starts the mesh's NATS as described in the module comment. */
export async function startMeshNats(config: CliConfig): Promise<MeshNats> {
  const url = config.bus.natsUrl;
  const storeDir = resolve(config.natsStoreDir);
  const authDir = resolve(config.natsAuthDir);
  const userAuth = config.bus.auth;
  const inherit = { trainerAuth: userAuth, credentialsDir: undefined, notice: undefined, envFor: () => ({}) };
  if (config.natsAuth === "off") {
    return { ...inherit, nats: await ensureNats(url, { storeDir, ...(userAuth ? { auth: userAuth } : {}) }) };
  }
  // The user's own credentials name their server: then no server of ours is looked for.
  if (!hasCredentials(userAuth)) {
    const own = await runningOwnServer(authDir);
    if (own && (!config.natsUrlExplicit || sameAddress(own.url, url))) {
      const users = generatedUsers(authDir);
      return {
        nats: { url: own.url, started: false, stop: async () => {}, kill: () => {} },
        trainerAuth: users.trainer,
        credentialsDir: authDir,
        notice: `re-using reward-mesh's NATS at ${own.url} (started for ${authDir}${own.pid > 0 ? ` by pid ${own.pid}` : ""}), with its users`,
        envFor: envOfUsers(users),
      };
    }
  }
  let reachable: boolean;
  let foreign: Foreign;
  try {
    reachable = await isJetStreamReachable(url, 1500, userAuth);
  } catch (err) {
    if (!(err instanceof NatsAuthRefusedError)) throw err;
    if (config.natsUrlExplicit || hasCredentials(userAuth))
      throw new Error(
        hasCredentials(userAuth)
          ? `${err.message}: check the NATS_* credential variables`
          : `${err.message}: it requires credentials — set NATS_NKEY_SEED_FILE (a running 'reward-mesh up' keeps its users in ${authDir}), NATS_CREDS_FILE, NATS_USER/NATS_PASSWORD or NATS_TOKEN, or stop it so that 'reward-mesh up' starts its own`,
        { cause: err },
      );
    reachable = false;
    foreign = "it requires credentials reward-mesh does not have";
  }
  if (reachable) {
    if (hasCredentials(userAuth))
      return { ...inherit, nats: { url, started: false, stop: async () => {}, kill: () => {} } };
    if (config.natsUrlExplicit)
      throw new Error(
        `NATS at ${url} accepts anonymous clients, who could forge rewards; reward-mesh runs NATS with authentication on: stop that server (reward-mesh then starts its own with generated users), give credentials for a server with authentication in NATS_*, or set REWARD_MESH_NATS_AUTH=off to use it without (development only)`,
      );
    foreign = "it is open to anonymous clients, who could forge rewards";
  }
  const at = localHostPort(url);
  if (foreign === undefined && !config.natsUrlExplicit && (await listening(at.host, at.port)))
    foreign = "it does not answer as NATS JetStream";
  // The default address is someone else's: a free port on the same local interface (the server picks it).
  const { host, port } = foreign === undefined ? at : { host: at.host, port: -1 };
  const auth = await writeMeshAuth(authDir, await serviceIdentities());
  const started = await startNatsServer({
    host,
    port,
    storeDir,
    configFile: auth.configFile,
    auth: auth.admin,
  });
  const serverFile = join(authDir, SERVER_FILE);
  const nats: LocalNats = {
    ...started,
    stop: async () => {
      // Only while the file still names this server (a later `up` may have replaced it).
      try {
        if ((JSON.parse(readFileSync(serverFile, "utf8")) as { url?: unknown }).url === started.url)
          rmSync(serverFile, { force: true });
      } catch {
        // gone already
      }
      await started.stop();
    },
  };
  try {
    // Only the admin may create streams: provision them before any service or trainer connects.
    await provisionMeshStreams(
      { ...config.bus, natsUrl: nats.url, auth: auth.admin },
      "reward-mesh-provision",
    );
    writeFileSync(serverFile, `${JSON.stringify({ url: nats.url, pid: process.pid })}\n`, { mode: 0o600 });
  } catch (err) {
    await nats.stop();
    throw err;
  }
  return {
    nats,
    trainerAuth: auth.trainer,
    credentialsDir: authDir,
    notice:
      foreign === undefined
        ? undefined
        : `NATS at ${url} (the default; NATS_URL is not set) is a server reward-mesh did not start (${foreign}): started reward-mesh's own on free port ${new URL(nats.url).port}, ${nats.url}, for every process of this mesh`,
    envFor: (name) => {
      const own = auth.services[name];
      if (!own) throw new Error(`no NATS user was generated for service '${name}'`);
      return { ...BLANK_CREDENTIALS, ...natsAuthEnv(own) };
    },
  };
}
