/**
 * Least-privilege NATS users for a local mesh (`reward-mesh up`, the demo, tests): one NKEY user per
 * role in one JetStream account, each allowed exactly the subjects its role needs, and a `nats-server`
 * configuration that refuses anonymous clients.
 *
 * | role | may publish | may read |
 * |---|---|---|
 * | `admin` (provisioning) | everything | everything |
 * | `trainer` | `mesh.rollouts.>`, `mesh.advantages.>`, Describe requests `mesh.describe.*` | `MESH_REWARDS` (its consumers); the list of `MESH_ROLLOUTS`' consumers |
 * | service `<name>` with domains `D` | `mesh.rewards.*.<name>.*`, `mesh.dlq.<name>`, replies to Describe requests (`allow_responses`) | its consumers `<name>--<d>` on `mesh.rollouts.<d>.>`, `d ∈ D`; `mesh.describe.<name>` |
 *
 * Every role may read stream info and its account's JetStream info, and receives replies only under its
 * own inbox prefix (`_INBOX_<user>`), so no user can read another's publish acks or pulled messages.
 * A service's consumer create request carries its filter in the subject
 * (`$JS.API.CONSUMER.CREATE.<stream>.<consumer>.<filter>`, NATS ≥ 2.9), and the server checks the two
 * agree, so a service cannot widen its consumer to other domains.
 * @module
 */
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { createUser } from "@nats-io/nkeys";
import type { NatsAuthOptions } from "./config.js";
import { checkSubjectToken, consumerName, describeSubject, Streams } from "./subjects.js";

/** Publish and subscribe allow-lists of one user (everything else is denied). */
export interface NatsPermissions {
  readonly publish: readonly string[];
  readonly subscribe: readonly string[];
  /** May publish a reply to a request it received (NATS `allow_responses`): services answer Describe. */
  readonly allowResponses?: boolean;
}

/** A reward service as the bus sees it: its name and the rollout domains it consumes. */
export interface ServiceIdentity {
  readonly name: string;
  readonly domains: readonly string[];
}

/** The JetStream account the mesh's users live in. */
export const MESH_ACCOUNT = "MESH";

/** The inbox prefix of `user` (replies to it arrive under `<prefix>.>`). */
export function inboxPrefixOf(user: string): string {
  return `_INBOX_${checkSubjectToken("user", user)}`;
}

const streamInfo = Object.values(Streams).map((s) => `$JS.API.STREAM.INFO.${s}`);

/** What the trainer may do: publish rollouts and advantages; consume and replay rewards. */
export function trainerPermissions(user = "trainer"): NatsPermissions {
  const r = Streams.rewards;
  return {
    publish: [
      "mesh.rollouts.>",
      "mesh.advantages.>",
      "mesh.describe.*", // Describe requests at run start (replies come to its own inbox)
      "$JS.API.INFO",
      ...streamInfo,
      `$JS.API.CONSUMER.CREATE.${r}`, // ephemeral replay consumers
      `$JS.API.CONSUMER.CREATE.${r}.>`, // the durable trainer-<run> (with its filter)
      `$JS.API.CONSUMER.INFO.${r}.*`,
      // Who consumes which domain (the orphan-domain check before step 1, `reward-mesh check`).
      `$JS.API.CONSUMER.LIST.${Streams.rollouts}`,
      `$JS.API.CONSUMER.NAMES.${Streams.rollouts}`,
      `$JS.API.CONSUMER.MSG.NEXT.${r}.*`,
      `$JS.API.CONSUMER.DELETE.${r}.*`,
      `$JS.ACK.${r}.>`,
    ],
    subscribe: [`${inboxPrefixOf(user)}.>`],
  };
}

/** What service `s` may do: consume its domains' rollouts; publish its own rewards and dead letters. */
export function servicePermissions(s: ServiceIdentity, user = serviceUser(s.name)): NatsPermissions {
  const name = checkSubjectToken("service", s.name);
  const r = Streams.rollouts;
  const consumers = s.domains.flatMap((d) => {
    const c = consumerName(name, d);
    return [
      `$JS.API.CONSUMER.CREATE.${r}.${c}.mesh.rollouts.${d}.>`,
      `$JS.API.CONSUMER.INFO.${r}.${c}`,
      `$JS.API.CONSUMER.MSG.NEXT.${r}.${c}`,
      `$JS.ACK.${r}.${c}.>`,
    ];
  });
  return {
    publish: [`mesh.rewards.*.${name}.*`, `mesh.dlq.${name}`, "$JS.API.INFO", ...streamInfo, ...consumers],
    subscribe: [`${inboxPrefixOf(user)}.>`, describeSubject(name)],
    allowResponses: true,
  };
}

/** The provisioning user: everything in the mesh account (creates streams; operator tools, tests). */
export function adminPermissions(): NatsPermissions {
  return { publish: [">"], subscribe: [">"] };
}

/** The NATS user name of service `name`. */
export function serviceUser(name: string): string {
  return `service-${checkSubjectToken("service", name)}`;
}

/** The generated users and server configuration of a local mesh. */
export interface MeshAuth {
  /** The `nats-server` configuration file (mode 0600) to start the server with. */
  readonly configFile: string;
  /** Provisioning credentials (streams); never handed to a service or the trainer. */
  readonly admin: NatsAuthOptions;
  readonly trainer: NatsAuthOptions;
  /** Each service's credentials, by service name. */
  readonly services: Readonly<Record<string, NatsAuthOptions>>;
}

interface GeneratedUser {
  readonly auth: NatsAuthOptions;
  readonly nkey: string;
  readonly permissions: NatsPermissions;
}

async function generateUser(dir: string, user: string, permissions: NatsPermissions): Promise<GeneratedUser> {
  const kp = createUser();
  const seedFile = join(dir, `${user}.nk`);
  await writeFile(seedFile, `${new TextDecoder().decode(kp.getSeed())}\n`, { mode: 0o600 });
  await chmod(seedFile, 0o600); // an existing file keeps its mode on write
  return {
    auth: { nkeySeedFile: seedFile, inboxPrefix: inboxPrefixOf(user) },
    nkey: kp.getPublicKey(),
    permissions,
  };
}

/**
 * Generates fresh NKEY users (random seeds, files mode 0600 in `dir`, itself mode 0700) for the admin,
 * the trainer and each of `services`, and writes the `nats-server` configuration that knows only their
 * public keys: one JetStream-enabled account, no anonymous user. Earlier seeds in `dir` are replaced,
 * so credentials of a previous mesh stop working.
 */
export async function writeMeshAuth(dir: string, services: readonly ServiceIdentity[]): Promise<MeshAuth> {
  const root = resolve(dir);
  await mkdir(root, { recursive: true, mode: 0o700 });
  await chmod(root, 0o700);
  const admin = await generateUser(root, "admin", adminPermissions());
  const trainer = await generateUser(root, "trainer", trainerPermissions());
  const svc: Record<string, GeneratedUser> = {};
  for (const s of services)
    svc[s.name] = await generateUser(root, serviceUser(s.name), servicePermissions(s));
  const users = [admin, trainer, ...Object.values(svc)].map((u) => ({
    nkey: u.nkey,
    permissions: {
      publish: { allow: u.permissions.publish },
      subscribe: { allow: u.permissions.subscribe },
      ...(u.permissions.allowResponses ? { allow_responses: true } : {}),
    },
  }));
  const configFile = join(root, "nats-server.conf");
  // The NATS configuration format accepts JSON values; quoted strings keep `$JS...` literal.
  const text = [
    "# Generated by reward-mesh: one NKEY user per role, least privilege by subject.",
    "# Anonymous clients are refused (there is no no_auth_user).",
    `accounts: ${JSON.stringify({ [MESH_ACCOUNT]: { jetstream: "enabled", users } }, null, 2)}`,
    "",
  ].join("\n");
  await writeFile(configFile, text, { mode: 0o600 });
  await chmod(configFile, 0o600);
  return {
    configFile,
    admin: admin.auth,
    trainer: trainer.auth,
    services: Object.fromEntries(Object.entries(svc).map(([k, v]) => [k, v.auth])),
  };
}
