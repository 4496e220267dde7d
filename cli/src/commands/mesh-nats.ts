/**
 * The NATS of a local mesh (`reward-mesh up`, `demo`, `train --with-mesh`, `experiment`), with
 * authentication on by default:
 *
 * - nothing answers at `NATS_URL`: generate one NKEY user per role (admin, trainer, each service;
 *   random seeds, files mode 0600 under the data directory), start `nats-server` with a configuration
 *   that knows only their public keys and grants each role its subjects, provision the streams as admin,
 *   and hand every process its own credentials through the environment. Anonymous clients are refused.
 * - a server answers and accepts the credentials in `NATS_*` (yours, e.g. a production cluster): use it;
 *   every process gets those credentials, and that server's configuration decides what they may do.
 * - a server answers to anonymous clients: refused, since it would let anyone forge rewards —
 *   unless `REWARD_MESH_NATS_AUTH=off`, the explicit development opt-out (no users, no permissions).
 * @module
 */
import { resolve } from "node:path";
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
  /**
   * Environment for service `name`'s process on top of the inherited one: its own credentials, with
   * the inherited `NATS_*` credential variables blanked (blank counts as unset) so none leak into it.
   */
  envFor(name: string): Record<string, string>;
}

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

/** Finds or starts the mesh's NATS as described in the module comment. */
export async function startMeshNats(config: CliConfig): Promise<MeshNats> {
  const url = config.bus.natsUrl;
  const storeDir = resolve(config.natsStoreDir);
  const userAuth = config.bus.auth;
  const inherit = { trainerAuth: userAuth, credentialsDir: undefined, envFor: () => ({}) };
  if (config.natsAuth === "off") {
    return { ...inherit, nats: await ensureNats(url, { storeDir, ...(userAuth ? { auth: userAuth } : {}) }) };
  }
  let reachable: boolean;
  try {
    reachable = await isJetStreamReachable(url, 1500, userAuth);
  } catch (err) {
    if (!(err instanceof NatsAuthRefusedError)) throw err;
    throw new Error(
      hasCredentials(userAuth)
        ? `${err.message}: check the NATS_* credential variables`
        : `${err.message}: it requires credentials — set NATS_NKEY_SEED_FILE (a running 'reward-mesh up' keeps its users in ${resolve(config.natsAuthDir)}), NATS_CREDS_FILE, NATS_USER/NATS_PASSWORD or NATS_TOKEN, or stop it so that 'reward-mesh up' starts its own`,
      { cause: err },
    );
  }
  if (reachable) {
    if (!hasCredentials(userAuth)) {
      throw new Error(
        `NATS at ${url} accepts anonymous clients, who could forge rewards; reward-mesh runs NATS with authentication on: stop that server (reward-mesh then starts its own with generated users), give credentials for a server with authentication in NATS_*, or set REWARD_MESH_NATS_AUTH=off to use it without (development only)`,
      );
    }
    return { ...inherit, nats: { url, started: false, stop: async () => {}, kill: () => {} } };
  }
  const { host, port } = localHostPort(url);
  const auth = await writeMeshAuth(config.natsAuthDir, await serviceIdentities());
  const nats = await startNatsServer({ host, port, storeDir, configFile: auth.configFile, auth: auth.admin });
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
  const blank = Object.fromEntries(Object.values(NatsAuthEnv).map((k) => [k, ""]));
  return {
    nats,
    trainerAuth: auth.trainer,
    credentialsDir: resolve(config.natsAuthDir),
    envFor: (name) => {
      const own = auth.services[name];
      if (!own) throw new Error(`no NATS user was generated for service '${name}'`);
      return { ...blank, ...natsAuthEnv(own) };
    },
  };
}
